"""Shared fixtures. Every test process (each xdist worker) gets its own ROS domain and loopback-only discovery."""

import fcntl
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from payload_id_core.blas import limit_blas_threads
from payload_id_core.cli.main import main as cli_main

REPO = Path(__file__).resolve().parents[1]

# Dataset helpers that are not part of the installed packages (tools/ur10e_data.py) import by bare name.
sys.path.insert(0, str(REPO / "tools"))

from ros_cell.process_group import stop_groups  # noqa: E402 - test/ is on sys.path (pytest's rootdir conftest)

import ur10e_data  # noqa: E402 - found through the sys.path entry above

# The real UR10e recordings (../shared/data/ur10e, or PAYLOAD_ID_UR10E_DATA): a user's clone has none, so
# the tests that need them skip, saying where to get them; here they are present and run.
UR10E_DATA = ur10e_data.default_data_dir()
UR10E_DATA_MISSING = ur10e_data.data_missing_reason(UR10E_DATA)
requires_ur10e_data = pytest.mark.skipif(UR10E_DATA_MISSING is not None, reason=UR10E_DATA_MISSING or "")

# Set before any rclpy import: Fast DDS would otherwise multicast on the LAN.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
# Like every entry point: single-threaded BLAS for this process and the nodes and commands it starts.
limit_blas_threads()

# ROS domains 1-101: Fast DDS derives its ports from the id and 101 is the last whose ports stay below
# Linux's ephemeral range; 0 is every ROS install's default, where other nodes of the machine may live.
FIRST_DOMAIN, LAST_DOMAIN = 1, 101
_claimed_domains: list = []   # the lock files of this process's domain, held open until it exits


def _domain_base() -> int:
    """The first domain this run may use: the caller's ROS_DOMAIN_ID, else one drawn per run (from xdist's
    run id, the same in all of a run's workers; from the pid without xdist)."""
    given = os.environ.get("ROS_DOMAIN_ID")
    if given:
        return int(given)
    return random.Random(os.environ.get("PYTEST_XDIST_TESTRUNUID") or os.getpid()).randint(FIRST_DOMAIN, LAST_DOMAIN)


def _claim_domain(first: int) -> int:
    """The first domain from `first` on (wrapping within 1-101) that no other test process on this machine
    holds, held by an flock until this process exits: two runs at once, each with its workers, never share
    one, whatever their bases."""
    lock_dir = Path(tempfile.gettempdir()) / "payload_id_ros_domains"
    lock_dir.mkdir(exist_ok=True)
    span = LAST_DOMAIN - FIRST_DOMAIN + 1
    for k in range(span):
        domain = FIRST_DOMAIN + (first - FIRST_DOMAIN + k) % span
        lock = open(lock_dir / f"{domain}.lock", "w")  # noqa: SIM115 - held open for the process's life
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        _claimed_domains.append(lock)
        return domain
    raise RuntimeError(f"every ROS domain {FIRST_DOMAIN}-{LAST_DOMAIN} is held by another test process")


def pytest_configure(config: pytest.Config) -> None:
    """A ROS domain per test process, before any test imports rclpy: the run's base, plus the xdist worker's
    number (gw0, gw1, ...), so parallel workers never see each other's nodes. Child processes inherit it
    (ros_env). The xdist controller runs no test and claims none; its workers inherit the caller's id."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None and config.getoption("numprocesses", None):
        return
    offset = int(worker.removeprefix("gw")) if worker else 0
    os.environ["ROS_DOMAIN_ID"] = str(_claim_domain(_domain_base() + offset))


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
    stop_groups(procs, grace=5.0, kill_wait=5.0)



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
def ur10e_held_out_robot_yaml(run_shared_dir: Path) -> Path:
    """robot.yaml as bench/ur10e.py's user path makes it (ur10e_data.user_path_robot_yaml): ur10e_robot_yaml's, with
    the model error measured on the 15harm and 01_31 unloaded runs held out (robot.yaml model_error, its running
    record included) and the offsets' drift recorded on them. Made once per run, by whichever worker asks first."""
    if UR10E_DATA_MISSING is not None:
        pytest.skip(UR10E_DATA_MISSING)
    out = run_shared_dir / "ur10e_held_out_robot" / "robot.yaml"
    out.parent.mkdir(exist_ok=True)
    with open(out.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_file():
            ur10e_data.user_path_robot_yaml(UR10E_DATA, out)
    return out


@pytest.fixture(scope="module")
def ur10():
    """The bundled UR10 model, one per test module (a test may change its gravity, as RobotIdentification.load does).
    A module that needs more under the name (a robot.yaml, recordings) defines its own ur10."""
    from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415 - only the tests that ask pay for it

    return RobotModel.from_urdf("ur10")


@pytest.fixture(scope="session")
def ur10_cell_robot():
    """(model, robot) of the simulated cell's UR10 (MuJoCo, `ur10` profile), identified once on the bundled
    ur10_payload excitation without payload, as the monitor's tests and bench/monitor.py watch it and
    test_accuracy_cell identifies payloads on it."""
    from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415 - only the tests that ask pay for it
    from payload_id_core.excitation.fourier import load_trajectory  # noqa: PLC0415
    from payload_id_core.robot_id import fit_given_model  # noqa: PLC0415
    from payload_id_core.sim import simulate  # noqa: PLC0415

    model = RobotModel.from_urdf("ur10")
    robot = fit_given_model(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1),
                           friction="nonlinear", estimator="wls")
    return model, robot


# Each test file's seconds in the last run that ran it (set-up, call and tear-down of its tests), in pytest's cache.
FILE_SECONDS_KEY = "payload_id/file_seconds"


def _file_of(nodeid: str) -> str:
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest test files first (each file's tests in their order): under `--dist loadfile` (make test) the
    longest work is handed out while the other worker still has short work to end on. How long a file takes is
    what it took in the last run (pytest's cache); a file never timed yet goes with the slow ones if it has a
    slow test, else with the fast ones. Every xdist worker reads the same cache, so all collect the same order."""
    cache = getattr(config, "cache", None)
    seconds: dict = cache.get(FILE_SECONDS_KEY, {}) if cache is not None else {}
    heavy = {_file_of(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def cost(item: pytest.Item) -> float:
        path = _file_of(item.nodeid)
        if path in seconds:
            return float(seconds[path])
        return float("inf") if path in heavy else 0.0

    items.sort(key=lambda item: -cost(item))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up each file's seconds (in the xdist controller, which gets every worker's reports)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        _file_seconds[_file_of(report.nodeid)] = _file_seconds.get(_file_of(report.nodeid), 0.0) + report.duration


_file_seconds: dict[str, float] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keeps this run's file times for the next run's order (the files it did not run keep theirs)."""
    cache = getattr(session.config, "cache", None)
    if cache is None or not _file_seconds or os.environ.get("PYTEST_XDIST_WORKER") is not None:
        return
    cache.set(FILE_SECONDS_KEY, {**cache.get(FILE_SECONDS_KEY, {}),
                                 **{path: round(t, 1) for path, t in _file_seconds.items()}})


@pytest.fixture(scope="session")
def run_shared_dir(tmp_path_factory) -> Path:
    """A directory shared by all of this run's xdist workers (each has its own basetemp below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def unloaded_sim_robot_yaml(run_shared_dir: Path) -> Callable[[str], Path]:
    """demo.unloaded_robot_yaml (payload-id simulate + identify-robot, two child processes) with one cache for
    the run: each excitation's robot.yaml is made once, by whichever worker asks first, under a lock."""
    from payload_id_ros.demo import unloaded_robot_yaml  # noqa: PLC0415 - only the cell tests pay for it

    cache = run_shared_dir / "unloaded_robot_cache"
    cache.mkdir(exist_ok=True)

    def _robot_yaml(robot_trajectory: str) -> Path:
        with open(cache / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return unloaded_robot_yaml(cache, robot_trajectory)

    return _robot_yaml
