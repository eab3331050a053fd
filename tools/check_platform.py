"""Refuse, in one line, a machine the pinned PyPI ROS 2 wheels and requirements.lock cannot serve.

The supported Pythons are those every pin of requirements.lock installs on: cvxpy, mujoco, numpy and scipy
need 3.11 or later, backports.zstd (rosbags) is below 3.14 (test_cli_main checks these bounds against the
lock's metadata). Runs under the system python before any venv exists: the standard library only.
"""
import platform
import sys

OLDEST_PYTHON = (3, 11)
NEWEST_PYTHON = (3, 13)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


machine = platform.machine()
if machine not in ("x86_64", "AMD64"):
    sys.exit(f"payload_id setup: unsupported machine {machine}: the PyPI ROS 2 Kilted wheels are x86_64 only; "
             "use an x86_64 machine or a ROS 2 install with colcon (see README).")
if not (OLDEST_PYTHON <= tuple(sys.version_info[:2]) <= NEWEST_PYTHON):
    sys.exit(f"payload_id setup: unsupported Python {platform.python_version()}: requirements.lock needs "
             f"{_dotted(OLDEST_PYTHON)}-{_dotted(NEWEST_PYTHON)}; run `make setup PYTHON=python3.11` "
             "(or python3.12, python3.13).")
