"""The colcon install of the three packages works as `ros2 run` and `ros2 launch` use it (issue 14 item 1).

The packages are built with colcon (pinned in requirements.lock) against this venv's ROS wheels into a
temporary workspace. Then, resolving names as ros2run / launch_ros do (ament index resource of the
package -> its prefix -> prefix/lib/<package>/<executable>; FindPackageShare -> prefix/share/<package>):
every executable the launch files start is there, every file they name is in the installed share, the
URDFs, trajectories and simulator profiles the parameter files name resolve in the installed core, the
core's `payload-id` is on the PATH with the `identify` subcommand payload_id_ros adds, and the installed
estimator and player, started from the install space after `source install/setup.bash`, identify the
payload of the kinematic fake robot across processes.
"""

import json
import os
import re
import subprocess
import sys
import sysconfig
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from ros_cell.assets import make_robot_yaml, make_trajectory
from ros_cell.process_group import stop_group, stop_groups
from test_gz_cell import GZ_LAUNCH, gz_cell_launch, launch_context, launched_nodes, named_files
from test_launch_supervisor_sync import LAUNCH, SHARE_SOURCE, _arguments, launch_nodes

from payload_id_ros.cell import ROBOTS

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).parent / "ros_cell"
PACKAGES = ("payload_id_msgs", "payload_id_core", "payload_id_ros")
MASS = 2.0                      # the fake robot's payload (test/ros_cell/fake_hardware.py)
pytestmark = pytest.mark.slow


def _build_environment() -> dict:
    """What tools/build_interfaces.sh gives cmake, for colcon: the venv is the ROS underlay."""
    venv = Path(sys.prefix)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AMENT_", "COLCON_", "CMAKE_PREFIX"))}
    env.update(AMENT_PREFIX_PATH=str(venv), CMAKE_PREFIX_PATH=str(venv), PATH=f"{venv / 'bin'}:{env['PATH']}",
               PYTHONPATH=sysconfig.get_paths()["purelib"])
    return env


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("colcon_ws")
    venv_python = str(Path(sys.prefix) / "bin" / "python")
    cmd = [str(Path(sys.prefix) / "bin" / "colcon"), "--log-base", str(ws / "log"), "build",
           "--base-paths", str(REPO / "src"), "--build-base", str(ws / "build"), "--install-base", str(ws / "install"),
           "--event-handlers", "console_direct-", "status-",
           "--cmake-args", f"-DPython3_EXECUTABLE={venv_python}", "-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release"]
    proc = subprocess.run(cmd, cwd=ws, env=_build_environment(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"Summary: 3 packages finished", proc.stdout), proc.stdout[-2000:]
    return ws / "install"


def _prefix(install: Path, package: str) -> Path:
    """ament_index_python.get_package_prefix over the workspace's prefixes (isolated install: one per package)."""
    prefixes = [p for p in install.iterdir() if (p / "share" / "ament_index").is_dir()]
    found = [p for p in prefixes if (p / "share/ament_index/resource_index/packages" / package).is_file()]
    assert len(found) == 1, (package, prefixes)
    return found[0]


def test_every_package_is_in_the_ament_index(install):
    for package in PACKAGES:
        assert _prefix(install, package).name == package


def test_every_executable_of_the_launch_files_is_where_ros2_run_looks(install):
    for path in LAUNCH.values():
        for node in launch_nodes(path):
            assert node["package"] == "payload_id_ros", node
            exe = _prefix(install, node["package"]) / "lib" / node["package"] / node["executable"]
            assert exe.is_file() and os.access(exe, os.X_OK), exe
    # Nothing in bin/ where ros2 run does not look.
    ros = _prefix(install, "payload_id_ros")
    assert not (ros / "bin").exists()


def test_every_file_the_launch_files_name_is_installed(install):
    share = _prefix(install, "payload_id_ros") / "share" / "payload_id_ros"
    for path in LAUNCH.values():
        assert (share / "launch" / path.name).is_file()
        robots = _arguments(path)["robot"]["choices"]
        for node in launch_nodes(path):
            for pattern in node["files"]:
                assert pattern.startswith("<share:payload_id_ros>/"), pattern
                for robot in robots:
                    assert (share / pattern.split("/", 1)[1].format(robot=robot)).is_file(), (pattern, robot)
    assert (share / "config" / "payload_id.rviz").is_file()
    # Installed exactly what the package holds: a config file left out would only fail on a cell.
    installed = sorted(p.name for p in (share / "config").iterdir())
    assert installed == sorted(p.name for p in (SHARE_SOURCE / "config").iterdir())


def test_the_gazebo_cell_finds_its_files_in_the_installed_share(install):
    """gz_cell.launch.py (run against stand-ins of launch: test_gz_cell) names only installed files, and the
    URDF it spawns points gz_ros2_control at the installed controllers YAML."""
    share = _prefix(install, "payload_id_ros") / "share" / "payload_id_ros"
    assert (share / "launch" / GZ_LAUNCH.name).is_file()
    with gz_cell_launch() as (module, actions):
        for robot in ROBOTS:
            nodes = launched_nodes(module, actions, launch_context(actions, share=share, robot=robot))
            ours = [f for f in named_files(actions, nodes) if f.startswith("<share:payload_id_ros>/")]
            assert len(ours) == 4, ours
            for pattern in ours:
                assert (share / pattern.split("/", 1)[1].format(robot=robot)).is_file(), (pattern, robot)
            rsp = next(n for n in nodes if n["executable"] == "robot_state_publisher")
            urdf = ET.fromstring(rsp["parameters"][0]["robot_description"])
            assert urdf.find("gazebo/plugin/parameters").text == str(share / "config" / f"{robot}_controllers.yaml")


def _install_env(install: Path, ros_env: dict) -> dict:
    """The environment `source install/setup.bash` makes (on top of the venv, the ROS underlay here)."""
    out = subprocess.run(["bash", "-c", f"source {install / 'setup.bash'} && env -0"], env=ros_env,
                         capture_output=True, check=True).stdout.decode()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def test_the_installed_command_line_is_on_the_path_with_the_ros_subcommand(install, ros_env):
    """`payload-id` is the core's console script; payload_id_ros adds `identify` (entry points), from the install."""
    env = _install_env(install, ros_env)
    exe = _prefix(install, "payload_id_core") / "bin" / "payload-id"
    assert exe.is_file() and os.access(exe, os.X_OK), exe
    found = subprocess.run(["bash", "-c", "command -v payload-id"], env=env, capture_output=True, text=True)
    assert found.stdout.strip() == str(exe), found.stdout
    listed = subprocess.run([str(exe), "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "identify-payload" in listed.stdout, listed
    assert re.search(r"^ +identify +ask", listed.stdout, re.MULTILINE), listed.stdout
    script = ("import importlib\n"
              "from payload_id_core.cli.main import plugin_modules\n"
              "print(importlib.import_module(plugin_modules()['identify']).__file__)\n")
    plugin = subprocess.run([sys.executable, "-c", script], env=env, cwd=install, capture_output=True, text=True,
                            timeout=120)
    assert plugin.returncode == 0, plugin.stderr
    assert plugin.stdout.strip().startswith(str(install / "payload_id_ros")), plugin.stdout


def test_the_installed_core_finds_its_bundled_files_without_the_source_tree(install, ros_env):
    env = _install_env(install, ros_env)
    wanted = {}
    for robot in ("ur10", "ur10e", "panda"):
        params = yaml.safe_load((SHARE_SOURCE / "config" / f"{robot}.yaml").read_text())
        for section in params.values():
            p = section["ros__parameters"]
            for key in ("urdf", "trajectory", "profile"):
                if p.get(key):
                    wanted.setdefault(key, set()).add(str(p[key]))
    script = (
        "import json, sys, payload_id_core, payload_id_ros\n"
        "from payload_id_core.dynamics.model import resolve_urdf\n"
        "from payload_id_core.excitation.fourier import load_trajectory\n"
        "from payload_id_core.sim.profile import load_profile\n"
        "w = json.loads(sys.argv[1])\n"
        "print(json.dumps({'core': payload_id_core.__file__, 'ros': payload_id_ros.__file__,\n"
        "  'urdf': [str(resolve_urdf(u)) for u in w.get('urdf', [])],\n"
        "  'trajectory': [load_trajectory(t).joint_names[0] for t in w.get('trajectory', [])],\n"
        "  'profile': [load_profile(p, 6).name for p in w.get('profile', [])]}))\n")
    found = subprocess.run([sys.executable, "-c", script, json.dumps({k: sorted(v) for k, v in wanted.items()})],
                           env=env, cwd=install, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    got = json.loads(found.stdout.strip().splitlines()[-1])
    assert got["core"].startswith(str(install / "payload_id_core")), got["core"]
    assert got["ros"].startswith(str(install / "payload_id_ros")), got["ros"]
    assert wanted.get("trajectory") and len(got["trajectory"]) == len(wanted["trajectory"])
    assert len(got["profile"]) == len(wanted.get("profile", ()))
    for urdf in got["urdf"]:
        # Bundled with the installed core, or example-robot-data's (the venv's cmeel prefix).
        assert urdf.startswith(str(install / "payload_id_core")) or "example-robot-data" in urdf, urdf


def _start_installed(install: Path, env: dict, executable: str, params: list[Path], log: Path) -> subprocess.Popen:
    exe = _prefix(install, "payload_id_ros") / "lib" / "payload_id_ros" / executable
    args = ["--ros-args", "-r", f"__node:={executable}"] + [a for p in params for a in ("--params-file", str(p))]
    with open(log, "w") as out:
        return subprocess.Popen([str(exe), *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in log.read_text():
            return
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    raise AssertionError(f"'{text}' not in {log}:\n{log.read_text()[-3000:]}")


def test_the_installed_nodes_identify_the_payload_across_processes(install, ros_env, spawn, tmp_path):
    env = _install_env(install, ros_env)
    share = _prefix(install, "payload_id_ros") / "share" / "payload_id_ros"
    make_trajectory(tmp_path / "traj.yaml", duration=4.0)
    make_robot_yaml(tmp_path / "robot.yaml")
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(yaml.safe_dump({"/**/payload_estimator": {"ros__parameters": {
        "robot_yaml": str(tmp_path / "robot.yaml"), "trajectory": str(tmp_path / "traj.yaml"),
        "result_path": str(tmp_path / "last_payload.yaml")}}}))
    nodes = {name: _start_installed(install, env, name, [share / "config" / "ur10.yaml", overrides],
                                    tmp_path / f"{name}.log")
             for name in ("payload_estimator", "excitation_player")}
    try:
        _wait_for(tmp_path / "payload_estimator.log", "payload estimator ready", nodes["payload_estimator"])
        _wait_for(tmp_path / "excitation_player.log", "excitation player ready", nodes["excitation_player"])
        fake = spawn(str(HERE / "fake_hardware.py"), "normal", "ur10", str(MASS))
        assert "fake hardware ready" in fake.stdout.readline()
        probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2")
        out, err = probe.communicate(timeout=120)
        final = next((json.loads(x) for x in out.splitlines() if x.startswith("{") and '"status"' in x), None)
        assert final is not None, (out, err, (tmp_path / "payload_estimator.log").read_text()[-2000:])
        assert final["status"] == "succeeded", final
        assert abs(final["mass"] - MASS) < 0.05 * MASS, final
        assert (tmp_path / "last_payload.yaml").is_file()
        assert stop_group(fake, grace=10.0), "the fake hardware did not end within 10 s of SIGINT"
    finally:
        stop_groups(nodes.values(), grace=15.0, kill_wait=None)
    # Both ended cleanly on SIGINT; that this environment imports the install space's packages, not the
    # source tree's, is test_the_installed_core_finds_its_bundled_files_without_the_source_tree's check.
    assert all(proc.returncode == 0 for proc in nodes.values()), [p.returncode for p in nodes.values()]
