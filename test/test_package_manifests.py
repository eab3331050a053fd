"""package.xml declares what the code imports, with keys rosdep resolves (issue 14 item 6).

On a cell, `rosdep install --from-paths src` installs each package's dependencies from its package.xml:
an import without a declared key fails at run time there, never here (the venv has everything). So every
third-party module a package imports (or an executable its launch files start) must map to a declared
key, and every declared key must be used. The keys were checked against ros/rosdistro at
8468e88ccd523427f9131e39d2af0938f1c298b2 (2026-08-22): rosdep/python.yaml for python3-*, rosdep/base.yaml
and kilted/distribution.yaml for ROS packages (pinocchio is a ROS package; cvxpy, mujoco and rosbags are
pip keys there).
"""

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from payload_id_core.dynamics.gazebo_urdf import HARDWARE_PLUGIN

REPO = Path(__file__).resolve().parents[1]
SHARE_SOURCE = REPO   # launch/ and config/: at the repository root, installed into share/payload_id_ros

# Python module -> the rosdep key (or ROS package) that provides it.
MODULE_KEYS = {
    "numpy": "python3-numpy", "scipy": "python3-scipy", "yaml": "python3-yaml",
    "matplotlib": "python3-matplotlib", "mpl_toolkits": "python3-matplotlib",
    "pinocchio": "pinocchio", "cvxpy": "python3-cvxpy-pip", "mujoco": "python3-mujoco-pip",
    "rosbags": "python3-rosbags-pip",
    "rclpy": "rclpy", "launch": "launch", "launch_ros": "launch_ros",
    "ament_index_python": "ament_index_python",
    "rcl_interfaces": "rcl_interfaces", "builtin_interfaces": "builtin_interfaces",
    "action_msgs": "action_msgs", "sensor_msgs": "sensor_msgs", "geometry_msgs": "geometry_msgs",
    "trajectory_msgs": "trajectory_msgs", "visualization_msgs": "visualization_msgs",
    "rosgraph_msgs": "rosgraph_msgs", "std_srvs": "std_srvs", "std_msgs": "std_msgs",
    "unique_identifier_msgs": "unique_identifier_msgs",
    "payload_id_core": "payload_id_core", "payload_id_msgs": "payload_id_msgs",
}
# Imported only when present, never a dependency: the robot drivers' messages come with the driver
# (controller_payload skips the apply step without them); example-robot-data's URDFs (cmeel's prefix)
# are optional, and have no rosdep key (README: pip install example-robot-data).
OPTIONAL = {"ur_msgs", "franka_msgs", "cmeel"}
# Every key a package.xml may use, as checked in rosdistro (see the docstring).
KNOWN_KEYS = set(MODULE_KEYS.values()) | {"rviz2", "robot_state_publisher", "python3-pytest", "ament_cmake",
                                          "rosidl_default_generators", "rosidl_default_runtime", "std_msgs",
                                          "ros_gz_sim", "ros_gz_bridge", "gz_ros2_control", "controller_manager",
                                          "joint_state_broadcaster", "joint_trajectory_controller"}
# The Gazebo cell's packages are declared under this condition only: rosdep installs them when it holds.
GAZEBO_CONDITION = "$PAYLOAD_ID_GAZEBO == 1"
GAZEBO_LAUNCH = SHARE_SOURCE / "launch" / "gz_cell.launch.py"


def _declared(package: str) -> dict[str, set[str]]:
    root = ET.parse(REPO / "src" / package / "package.xml").getroot()
    tags = ("depend", "exec_depend", "build_depend", "buildtool_depend", "test_depend")
    return {tag: {(el.text or "").strip() for el in root.findall(tag)} for tag in tags}


def _imported_modules(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"_typeshed", "__future__"}


def _conditional(package: str) -> dict[str, str]:
    """key -> condition of the dependencies declared with one."""
    root = ET.parse(REPO / "src" / package / "package.xml").getroot()
    return {(el.text or "").strip(): str(el.get("condition")) for el in root if el.get("condition") is not None}


def _launch_executables(paths: list[Path] | None = None) -> set[str]:
    """Packages whose executables the launch files start (Node(package=...))."""
    packages = set()
    for path in (SHARE_SOURCE / "launch").glob("*.launch.py") if paths is None else paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Node":
                for kw in node.keywords:
                    if kw.arg == "package" and isinstance(kw.value, ast.Constant):
                        packages.add(str(kw.value.value))
    return packages


def _needed(package: str) -> set[str]:
    sources = list((REPO / "src" / package / package).rglob("*.py"))
    if package == "payload_id_ros":
        sources += list((SHARE_SOURCE / "launch").glob("*.launch.py"))
    modules = _imported_modules(sources) - {package} - OPTIONAL
    unknown = modules - set(MODULE_KEYS)
    assert not unknown, f"{package} imports {sorted(unknown)}: add them to MODULE_KEYS (rosdep key) or OPTIONAL"
    needed = {MODULE_KEYS[m] for m in modules}
    if package == "payload_id_ros":
        needed |= _launch_executables() - {"payload_id_ros"}
        needed |= _gazebo_plugins()
    return needed


def _gazebo_plugins() -> set[str]:
    """Packages of the plugins the Gazebo cell loads without starting them: the URDF's hardware system, the
    controllers' types (config/<robot>_controllers.yaml)."""
    packages = {HARDWARE_PLUGIN.split("/")[0]}
    for path in (SHARE_SOURCE / "config").glob("*_controllers.yaml"):
        manager = yaml.safe_load(path.read_text())["controller_manager"]["ros__parameters"]
        packages |= {spec["type"].split("/")[0] for spec in manager.values() if isinstance(spec, dict)}
    return packages


def test_the_gazebo_cells_packages_are_declared_only_under_the_gazebo_condition():
    """A real cell's `rosdep install` must not pull Gazebo in: what only gz_cell.launch.py needs carries the
    condition, nothing else does."""
    others = [p for p in (SHARE_SOURCE / "launch").glob("*.launch.py") if p != GAZEBO_LAUNCH]
    gazebo_only = (_launch_executables([GAZEBO_LAUNCH]) - _launch_executables(others)) | _gazebo_plugins()
    assert gazebo_only == {"ros_gz_sim", "ros_gz_bridge", "gz_ros2_control", "controller_manager",
                           "joint_state_broadcaster", "joint_trajectory_controller"}
    assert _conditional("payload_id_ros") == {key: GAZEBO_CONDITION for key in gazebo_only}
    assert _conditional("payload_id_core") == {} and _conditional("payload_id_msgs") == {}


@pytest.mark.parametrize("package", ["payload_id_core", "payload_id_ros"])
def test_every_import_has_a_declared_dependency_and_every_dependency_is_used(package):
    declared = _declared(package)
    run_deps = declared["depend"] | declared["exec_depend"]
    needed = _needed(package)
    assert needed - run_deps == set(), f"{package}/package.xml lacks {sorted(needed - run_deps)}"
    assert run_deps - needed == set(), f"{package}/package.xml declares unused {sorted(run_deps - needed)}"


@pytest.mark.parametrize("package", ["payload_id_core", "payload_id_ros", "payload_id_msgs"])
def test_every_key_is_one_rosdep_resolves(package):
    keys = set().union(*_declared(package).values())
    assert keys - KNOWN_KEYS - {"payload_id_core", "payload_id_msgs"} == set()


def test_the_core_declares_no_ros_package():
    # The core never needs ROS (test_architecture): its manifest must not pull ROS in either.
    ros = {"rclpy", "launch", "launch_ros", "ament_index_python", "payload_id_msgs"}
    declared = _declared("payload_id_core")
    assert (declared["depend"] | declared["exec_depend"]) & ros == set()


def test_the_launch_files_viewers_are_declared():
    assert {"rviz2", "robot_state_publisher"} <= _launch_executables()
