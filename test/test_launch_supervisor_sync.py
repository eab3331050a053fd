"""The launch files (for cells with ROS 2) and the supervisor (make demo, e2e tests) start the same cell.

`launch` cannot be installed here, so the launch files are read as Python syntax trees: every
launch_ros Node(...) gives its executable, node name and parameter files; they must equal the
supervisor's table (payload_id_ros.cell.CELLS) in the same order, and the parameter files must
exist for every robot and hold a section for every node that reads them. The viewers (rviz2, and the
sim cell's robot_state_publisher) run only under `rviz:=true`, default false: the supervisor never
starts them, so they are checked apart.
"""

import ast
import os
import time
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from test_gz_cell import GZ_LAUNCH
from test_nodes_parameters import TABLES

from payload_id_core.errors import PayloadIdError
from payload_id_ros.cell import CELLS, ROBOTS, parameter_files, share_dir
from payload_id_ros.supervisor import Supervisor

pytestmark = pytest.mark.wall_clock   # the supervisor stops a node within 10 s

REPO = Path(__file__).resolve().parents[1]
SHARE_SOURCE = REPO   # launch/ and config/: at the repository root, installed into share/payload_id_ros
LAUNCH = {"identify": SHARE_SOURCE / "launch" / "identify.launch.py",
          "sim_cell": SHARE_SOURCE / "launch" / "sim_cell.launch.py"}
# Gazebo's cell starts Gazebo's nodes, not a supervisor cell: test_gz_cell.py checks it (names, files, parameters).
GAZEBO_LAUNCH = SHARE_SOURCE / "launch" / "gz_cell.launch.py"


def _literal(node: ast.expr | None) -> str:
    """A string literal of the launch file: a package, executable or node name, a configuration key."""
    assert isinstance(node, ast.Constant) and isinstance(node.value, str), \
        f"expected a string literal: {node and ast.dump(node)}"
    return node.value


def _elements(node: ast.expr) -> list[ast.expr]:
    """The items of a list literal."""
    assert isinstance(node, ast.List), f"expected a list literal: {ast.dump(node)}"
    return node.elts


def _callee(call: ast.Call) -> str:
    """The called name: Node(...) and launch_ros.actions.Node(...) are both 'Node'."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    assert isinstance(call.func, ast.Attribute), f"launch file calls an expression: {ast.dump(call)}"
    return call.func.attr


def _render(node: ast.expr, variables: dict[str, ast.expr]) -> str:
    """A substitution expression as a path pattern: LaunchConfiguration('robot') -> '{robot}'."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Name):
        return _render(variables[node.id], variables)
    if isinstance(node, ast.List):
        return "".join(_render(e, variables) for e in node.elts)
    if isinstance(node, ast.Call):
        name = _callee(node)
        if name == "LaunchConfiguration":
            return "{" + _literal(node.args[0]) + "}"
        if name == "FindPackageShare":
            return "<share:" + _literal(node.args[0]) + ">"
        if name == "PathJoinSubstitution":
            return "/".join(_render(e, variables) for e in _elements(node.args[0]))
    raise AssertionError(f"launch file uses a construct this test does not understand: {ast.dump(node)}")


def launch_nodes(path: Path) -> list[dict]:
    """The launch_ros Nodes a launch file starts, in order, following IncludeLaunchDescription of our own files."""
    tree = ast.parse(path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description")
    variables: dict[str, ast.expr] = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                assert isinstance(target, ast.Name), f"launch file assigns to an expression: {ast.dump(target)}"
                variables[target.id] = stmt.value
    description = next(c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                       and c.func.id == "LaunchDescription")
    nodes = []
    for call in _elements(description.args[0]):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        if call.func.id == "Node" and "condition" not in {k.arg for k in call.keywords}:
            kw = {k.arg: k.value for k in call.keywords}
            parameters = _elements(kw["parameters"])
            files = [_render(p, variables) for p in parameters if not isinstance(p, ast.Dict)]
            given = [_literal(k) for p in parameters if isinstance(p, ast.Dict) for k in p.keys]
            nodes.append({"package": _literal(kw["package"]), "executable": _literal(kw["executable"]),
                          "name": _literal(kw["name"]), "files": files, "given": given})
        elif call.func.id == "IncludeLaunchDescription":
            source_call = call.args[0]                                 # PythonLaunchDescriptionSource(path)
            assert isinstance(source_call, ast.Call), ast.dump(source_call)
            source = _render(source_call.args[0], variables)
            assert source.startswith("<share:payload_id_ros>/launch/"), source
            nodes += launch_nodes(SHARE_SOURCE / "launch" / source.rsplit("/", 1)[1])
    return nodes


def _arguments(path: Path) -> dict[str, dict]:
    """DeclareLaunchArgument(name, default_value=..., choices=[...]) of a launch file, by name."""
    out = {}
    for call in ast.walk(ast.parse(path.read_text())):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "DeclareLaunchArgument":
            kw = {k.arg: k.value for k in call.keywords}
            default = kw["default_value"]
            out[_literal(call.args[0])] = {"default": _literal(default) if isinstance(default, ast.Constant)
                                           else _render(default, _variables(path)),
                                           "choices": [_literal(c) for c in _elements(kw["choices"])]
                                           if "choices" in kw else None}
    return out


def _viewers(path: Path) -> list[ast.Call]:
    """The actions of a launch file's LaunchDescription that carry a condition."""
    tree = ast.parse(path.read_text())
    description = next(c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                       and c.func.id == "LaunchDescription")
    return [c for c in _elements(description.args[0]) if isinstance(c, ast.Call)
            and "condition" in {k.arg for k in c.keywords}]


def _variables(path: Path) -> dict[str, ast.expr]:
    """The assignments of generate_launch_description: name -> expression."""
    fn = next(n for n in ast.parse(path.read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description")
    return {t.id: a.value for a in fn.body if isinstance(a, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}


def _condition(call: ast.Call, variables: dict[str, ast.expr]) -> str:
    """condition=IfCondition(LaunchConfiguration('x')) -> 'if {x}'."""
    cond = next(k.value for k in call.keywords if k.arg == "condition")
    assert isinstance(cond, ast.Call) and _callee(cond) == "IfCondition", ast.dump(cond)
    return "if " + _render(cond.args[0], variables)


@pytest.mark.parametrize("cell", sorted(LAUNCH))
def test_rviz_is_off_by_default_and_opens_the_installed_config(cell):
    args = _arguments(LAUNCH[cell])
    assert args["rviz"] == {"default": "false", "choices": ["true", "false"]}
    assert args["rviz_fixed_frame"]["default"] == "base_link"
    viewers = _viewers(LAUNCH[cell])
    variables = _variables(LAUNCH[cell])
    assert viewers and all(_condition(v, variables) == "if {rviz}" for v in viewers)
    if cell == "identify":
        (rviz,) = viewers
        kw = {k.arg: k.value for k in rviz.keywords}
        assert (_literal(kw["package"]), _literal(kw["executable"])) == ("rviz2", "rviz2")
        rendered = [_render(a, variables) for a in _elements(kw["arguments"])]
        assert rendered == ["-d", "<share:payload_id_ros>/config/payload_id.rviz", "-f", "{rviz_fixed_frame}"]
        assert (SHARE_SOURCE / "config" / "payload_id.rviz").is_file()
    else:
        # The simulated robot publishes no TF: robot_state_publisher, only with rviz.
        (rsp,) = viewers
        assert _callee(rsp) == "OpaqueFunction"


def test_the_rviz_config_is_installed():
    setup = (REPO / "src" / "payload_id_ros" / "setup.py").read_text()
    assert '("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.rviz"))' in setup


def test_the_package_installs_the_root_launch_and_config_folders():
    """launch/ and config/ live at the repository root; the package's own are links to them (no copy to drift),
    which setup.py's data_files, colcon (with or without --symlink-install) and pip all follow."""
    for name in ("launch", "config"):
        link = REPO / "src" / "payload_id_ros" / name
        assert link.is_symlink() and link.resolve() == SHARE_SOURCE / name, link
        assert not (SHARE_SOURCE / name).is_symlink()


def test_sim_cell_passes_its_arguments_to_the_included_cell():
    tree = ast.parse(LAUNCH["sim_cell"].read_text())
    include = next(c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                   and c.func.id == "IncludeLaunchDescription")
    passed = include.keywords[0].value.func.value            # {...}.items()
    declared = {c.args[0].value for c in ast.walk(ast.parse(LAUNCH["identify"].read_text()))
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "DeclareLaunchArgument"}
    assert {k.value for k in passed.keys} == declared


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_launch_file_declares_the_supervisor_cell(cell):
    nodes = launch_nodes(LAUNCH[cell])
    specs = CELLS[cell]
    assert [n["executable"] for n in nodes] == [s.executable for s in specs]
    assert [n["name"] for n in nodes] == [s.name for s in specs]
    assert all(n["package"] == "payload_id_ros" for n in nodes)
    for n, s in zip(nodes, specs):
        assert n["files"] == [f"<share:payload_id_ros>/{f}" for f in s.parameter_files], n


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_launch_file_sets_only_declared_parameters(cell):
    for n in launch_nodes(LAUNCH[cell]):
        declared = {f.name for f in fields(TABLES[n["name"]])}
        assert set(n["given"]) <= declared, (n["name"], set(n["given"]) - declared)


def test_every_launch_file_is_covered():
    launch_files = (SHARE_SOURCE / "launch").glob("*.launch.py")
    assert sorted(p.name for p in launch_files) == sorted([p.name for p in LAUNCH.values()] + [GAZEBO_LAUNCH.name])
    assert GAZEBO_LAUNCH == GZ_LAUNCH


def test_executables_are_console_scripts():
    setup = (REPO / "src" / "payload_id_ros" / "setup.py").read_text()
    for specs in CELLS.values():
        for s in specs:
            assert f'"{s.executable} = payload_id_ros.{s.executable}:main"' in setup


@pytest.mark.parametrize("robot", ROBOTS)
def test_parameter_files_exist_with_a_section_per_node(robot):
    assert share_dir() == REPO / "src" / "payload_id_ros"   # in a checkout: the package, its links to the root
    names = {s.name for specs in CELLS.values() for s in specs}
    for specs in CELLS.values():
        for s in specs:
            for f in s.parameter_files:
                data = yaml.safe_load((SHARE_SOURCE / f.format(robot=robot)).read_text())
                for name in names & {s.name}:
                    assert "ros__parameters" in data[f"/**/{name}"], (robot, name)


def test_supervisor_command_uses_the_same_files_and_overrides(tmp_path):
    sup = Supervisor(cell="sim_cell", robot="ur10e", namespace="cellA", log_dir=tmp_path,
                     overrides={"payload_estimator": {"method": "direct-rls"}})
    for spec in CELLS["sim_cell"]:
        cmd = sup.command(spec)
        assert Path(cmd[0]).name == spec.executable
        files = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--params-file"]
        assert Path(files[0]).resolve() == SHARE_SOURCE / "config" / "ur10e.yaml"
        assert f"__node:={spec.name}" in cmd and "__ns:=/cellA" in cmd
        if spec.name == "payload_estimator":
            assert yaml.safe_load(Path(files[1]).read_text()) == {
                "/**/payload_estimator": {"ros__parameters": {"method": "direct-rls"}}}
    assert sup.env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert 0 <= int(sup.env["ROS_DOMAIN_ID"]) <= 232


def test_supervisor_on_simulated_time_gives_the_clock_to_mock_hardware(tmp_path):
    """sim_time: mock_hardware publishes /clock at real time, every other node runs on it; a caller's override of
    the same parameter wins; on the wall clock nothing is added (a real cell's use_sim_time stays rclpy's false)."""
    def extra(sup, name):
        cmd = sup.command(next(s for s in CELLS["sim_cell"] if s.name == name))
        files = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--params-file"]
        return yaml.safe_load(Path(files[1]).read_text())[f"/**/{name}"]["ros__parameters"] if len(files) > 1 else {}

    sup = Supervisor(cell="sim_cell", log_dir=tmp_path / "sim", sim_time=True,
                     overrides={"mock_hardware": {"real_time_factor": 0.5}, "payload_estimator": {"method": "x"}})
    assert extra(sup, "mock_hardware") == {"sim_time": True, "real_time_factor": 0.5}
    assert extra(sup, "payload_estimator") == {"use_sim_time": True, "method": "x"}
    assert extra(sup, "excitation_player") == {"use_sim_time": True}
    wall = Supervisor(cell="sim_cell", log_dir=tmp_path / "wall")
    assert all(extra(wall, s.name) == {} for s in CELLS["sim_cell"])
    for spec in CELLS["sim_cell"]:
        text = " ".join(Path(f).read_text() for f in parameter_files(spec, "ur10"))
        assert "use_sim_time" not in text and "sim_time" not in text
    with pytest.raises(PayloadIdError, match="no mock_hardware to publish /clock"):
        Supervisor(cell="identify", log_dir=tmp_path / "identify", sim_time=True)


def test_unknown_robot_or_cell_is_refused(tmp_path):
    with pytest.raises(PayloadIdError, match="unknown cell"):
        Supervisor(cell="nope", log_dir=tmp_path)
    sup = Supervisor(cell="identify", robot="kuka", log_dir=tmp_path)
    with pytest.raises(PayloadIdError, match="no parameter file"):
        sup.command(CELLS["identify"][0])


@pytest.mark.slow
def test_supervisor_starts_and_stops_by_pid(tmp_path, ros_env):
    """The player comes up with the robot's parameter file and ends on SIGINT (exit 0), leaving no process."""
    sup = Supervisor(cell="identify", robot="ur10", env=ros_env, log_dir=tmp_path)
    sup.start(only=["excitation_player"])
    try:
        sup.wait_for_log("excitation_player", "excitation player ready", timeout=40)
        assert ("6 joints, publishing to /joint_trajectory_controller/joint_trajectory"
                in sup.log_text("excitation_player"))
        pid = sup.pid("excitation_player")
    finally:
        t0 = time.monotonic()
        codes = sup.stop(timeout=10)
    assert codes == {"excitation_player": 0}
    assert time.monotonic() - t0 < 10
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_urdf_argument_defaults_to_the_robot_and_reaches_every_node(cell):
    # A cell's calibrated URDF (urdf:=/path) must reach every node that builds the robot model, or the
    # player would check limits on one robot while the estimator identifies on another.
    assert _arguments(LAUNCH[cell])["urdf"]["default"] == "{robot}"
    nodes = launch_nodes(LAUNCH[cell])
    assert nodes and all("urdf" in n["given"] for n in nodes), nodes
