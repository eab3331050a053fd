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

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Dataset helpers that are not part of the installed packages (tools/ur10e_data.py) import by bare name.
sys.path.insert(0, str(REPO / "tools"))

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
