"""Refuse, in one line, a machine the pinned PyPI ROS 2 wheels cannot serve."""
import platform
import sys

machine = platform.machine()
if machine not in ("x86_64", "AMD64"):
    sys.exit(f"payload_id setup: unsupported machine {machine}: the PyPI ROS 2 Kilted wheels are x86_64 only; "
             "use an x86_64 machine or a ROS 2 install with colcon (see README).")
if not ((3, 10) <= sys.version_info[:2] <= (3, 13)):
    sys.exit(f"payload_id setup: unsupported Python {platform.python_version()}: need 3.10-3.13; "
             "run `make setup PYTHON=python3.11`.")
