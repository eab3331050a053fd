"""The test-only controller message packages (test/interfaces: ur_msgs, franka_msgs), built for a test session.

Built with tools/build_interfaces.sh (cmake + rosidl against the venv's ROS wheels) into a prefix under
build/test_interfaces/<hash of the sources>/, so a rerun with unchanged sources reuses it (a build takes
~25 s per package) and the user's venv never holds them. A lock lets parallel sessions share one build.
`environment` gives a child process what rosidl's Python type support needs to load them: the generated
package on PYTHONPATH, its C libraries on LD_LIBRARY_PATH, the prefix on AMENT_PREFIX_PATH.
"""
import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "test" / "interfaces"
PACKAGES = ("ur_msgs", "franka_msgs")


def sources_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCES.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(SOURCES)).encode())
        digest.update(path.read_bytes())
    digest.update((REPO / "tools" / "build_interfaces.sh").read_bytes())
    return digest.hexdigest()[:16]


def build_prefix() -> Path:
    """The install prefix holding both packages, built unless a build of these sources exists."""
    root = REPO / "build" / "test_interfaces"
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / sources_hash()
    done = prefix / ".complete"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            venv = Path(sys.prefix)
            for package in PACKAGES:
                subprocess.run(["bash", str(REPO / "tools" / "build_interfaces.sh"), str(venv),
                                str(SOURCES / package), str(prefix), str(root / f"build_{package}")],
                               check=True, capture_output=True, text=True)
            done.write_text("built\n")
    return prefix


def site_packages(prefix: Path) -> Path:
    """Where cmake installed the generated Python packages (lib/pythonX.Y/site-packages)."""
    rel = Path(sysconfig.get_paths()["purelib"]).relative_to(sys.prefix)
    return prefix / rel


def environment(prefix: Path, base: dict) -> dict:
    env = dict(base)

    def prepend(name: str, value: Path) -> None:
        env[name] = f"{value}{os.pathsep}{env[name]}" if env.get(name) else str(value)

    prepend("PYTHONPATH", site_packages(prefix))
    prepend("LD_LIBRARY_PATH", prefix / "lib")
    prepend("AMENT_PREFIX_PATH", prefix)
    return env
