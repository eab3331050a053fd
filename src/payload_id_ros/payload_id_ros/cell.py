"""The robot cells: which executables run with which parameter files.

launch/identify.launch.py and launch/sim_cell.launch.py (for cells with ROS 2 installed) and the
supervisor (make demo, the end-to-end tests, where `launch` cannot be installed) both start these.
The launch files cannot import this module and stay plain launch_ros; test_launch_supervisor_sync
parses them and checks that they declare the same executables, node names and parameter files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from payload_id_core.errors import PayloadIdError

PACKAGE = "payload_id_ros"
ROBOTS = ("ur10", "ur10e", "panda")


@dataclass(frozen=True)
class NodeSpec:
    executable: str                    # console script of payload_id_ros (setup.py entry point)
    name: str                          # node name
    parameter_files: tuple[str, ...]   # relative to the package share dir; "{robot}" = the robot argument


ESTIMATOR = NodeSpec("payload_estimator", "payload_estimator", ("config/{robot}.yaml",))
PLAYER = NodeSpec("excitation_player", "excitation_player", ("config/{robot}.yaml",))
MOCK_HARDWARE = NodeSpec("mock_hardware", "mock_hardware", ("config/{robot}.yaml",))

CELLS: dict[str, tuple[NodeSpec, ...]] = {
    "identify": (ESTIMATOR, PLAYER),
    # The simulated robot first, so the others find joint states when they come up.
    "sim_cell": (MOCK_HARDWARE, ESTIMATOR, PLAYER),
}


# The simulated cell's clock owner on simulated time: mock_hardware publishes /clock (at most real time: it slows down
# when the machine cannot keep up, where on the wall clock it skips the periods it missed after a 0.1 s stall) and
# every other node runs with use_sim_time. A real cell stays on the wall clock: use_sim_time is rclpy's, false unless
# a launch sets it (config/*.yaml never do).
CLOCK_OWNER = MOCK_HARDWARE.name


def clock_parameters(cell: str, spec: NodeSpec, sim_time: bool) -> dict:
    """The parameters that put `spec` of `cell` on simulated time (none on the wall clock): the clock owner's
    sim_time at real_time_factor 1, use_sim_time for the others. A cell without the owner has no clock to run on."""
    if not sim_time:
        return {}
    if all(s.name != CLOCK_OWNER for s in CELLS[cell]):
        raise PayloadIdError(f"cell '{cell}' has no {CLOCK_OWNER} to publish /clock on simulated time",
                             "use the sim_cell, or the wall clock")
    return {"sim_time": True, "real_time_factor": 1.0} if spec.name == CLOCK_OWNER else {"use_sim_time": True}


def share_dir() -> Path:
    """Where config/ and launch/ are: the package's source directory (a checkout, an editable install: its
    config/ and launch/ link to the repository root's), or share/payload_id_ros when installed."""
    source = Path(__file__).resolve().parents[1]
    if (source / "package.xml").is_file() and (source / "launch").is_dir():
        return source
    # Installed (colcon) only: ament_index_python comes with ROS, which a source checkout may run without.
    from ament_index_python.packages import get_package_share_directory  # noqa: PLC0415 - ROS-only, see above

    return Path(get_package_share_directory(PACKAGE))


def parameter_files(spec: NodeSpec, robot: str) -> list[Path]:
    files = [share_dir() / f.format(robot=robot) for f in spec.parameter_files]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise PayloadIdError(f"no parameter file {', '.join(missing)} for robot '{robot}'",
                             f"use one of: {', '.join(ROBOTS)}")
    return files
