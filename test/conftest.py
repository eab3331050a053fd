"""Shared fixtures. Every test run gets its own ROS domain and loopback-only discovery."""

import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from payload_id_core.blas import limit_blas_threads
from payload_id_core.cli.main import main as cli_main

REPO = Path(__file__).resolve().parents[1]

# Dataset helpers that are not part of the installed packages (tools/ur10e_data.py) import by bare name.
sys.path.insert(0, str(REPO / "tools"))

import ur10e_data  # noqa: E402 - found through the sys.path entry above

# The real UR10e recordings (../shared/data/ur10e, or PAYLOAD_ID_UR10E_DATA): a user's clone has none, so
# the tests that need them skip, saying where to get them; here they are present and run.
UR10E_DATA = ur10e_data.default_data_dir()
UR10E_DATA_MISSING = ur10e_data.data_missing_reason(UR10E_DATA)
requires_ur10e_data = pytest.mark.skipif(UR10E_DATA_MISSING is not None, reason=UR10E_DATA_MISSING or "")

# Set before any rclpy import: Fast DDS would otherwise multicast on the LAN, and parallel runs
# on one machine would see each other's nodes.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 100)))
# Like every entry point: single-threaded BLAS for this process and the nodes and commands it starts.
limit_blas_threads()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_python() -> str:
    """The venv's own interpreter: child processes must start with it (see DESIGN.md)."""
    return sys.executable


@pytest.fixture(scope="session")
def ros_env() -> dict:
    """Environment for child processes: this run's domain, loopback only."""
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env


@pytest.fixture
def spawn(ros_env: dict) -> Iterator[Callable[..., subprocess.Popen]]:
    """Start child processes with the venv's python; every one is ended by PID at teardown."""
    procs: list[subprocess.Popen] = []

    def _spawn(*args: str, env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, *args], env=env or ros_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(proc)
        return proc

    yield _spawn
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)



@pytest.fixture(scope="session")
def ur10e_robot_yaml(tmp_path_factory) -> Path:
    """robot.yaml as a UR10e user makes it: identify-robot on the 14harm pair, the drive gains identified
    with the known 2.805 kg load (they travel in robot.yaml)."""
    out = tmp_path_factory.mktemp("ur10e_robot") / "robot.yaml"
    unloaded, loaded = (str(UR10E_DATA / f) for f in ur10e_data.PAIRS[ur10e_data.GAIN_PAIR])
    code = cli_main(["identify-robot", "--urdf", str(UR10E_DATA / "ur10e.urdf"), "--csv-ur", unloaded,
                     "--loaded-csv-ur", loaded, "--known-payload-mass", str(ur10e_data.LOAD_MASS_KG),
                     "--out", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="session")
def ur10_cell_robot():
    """(model, robot) of the simulated cell's UR10 (MuJoCo, `ur10` profile), identified once on the bundled
    ur10_payload excitation without payload, as the monitor's tests and bench/monitor.py watch it."""
    from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415 - only the tests that ask pay for it
    from payload_id_core.excitation.fourier import load_trajectory  # noqa: PLC0415
    from payload_id_core.robot_id import identify_robot  # noqa: PLC0415
    from payload_id_core.sim import simulate  # noqa: PLC0415

    model = RobotModel.from_urdf("ur10")
    robot = identify_robot(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1),
                           friction="nonlinear", estimator="wls")
    return model, robot
