"""Shared fixtures. Every test run gets its own ROS domain and loopback-only discovery."""

import os
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Set before any rclpy import: Fast DDS would otherwise multicast on the LAN, and parallel runs
# on one machine would see each other's nodes.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 100)))


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
