"""The payload-id entry point: subcommands listed (the ROS one when payload_id_ros is installed, else a line
saying what to install), usage errors exit 2, platform check refuses in one line and agrees with the lock."""

import ast
import importlib
import importlib.metadata
import re
import runpy
import subprocess
import sys
from pathlib import Path

from packaging.specifiers import SpecifierSet

from payload_id_core.cli import main as cli
from payload_id_core.cli.main import SUBCOMMANDS
from payload_id_core.dynamics.model import known_robots

REPO = Path(__file__).resolve().parents[1]
PAYLOAD_ID = str(Path(sys.executable).parent / "payload-id")
LISTED_IDENTIFY = re.compile(r"^ +identify +ask", re.MULTILINE)   # its line in --help's list of subcommands


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PAYLOAD_ID, *args], capture_output=True, text=True, timeout=120)


def test_help_lists_every_subcommand_of_the_design():
    proc = run("--help")
    assert proc.returncode == 0
    for name in ["identify-robot", "identify-payload", "excite", "simulate", "report"]:
        assert name in proc.stdout
    assert set(SUBCOMMANDS) >= {"identify-robot", "identify-payload", "excite", "simulate", "report"}


def test_help_lists_identify_when_the_ros_package_is_installed():
    # payload_id_ros adds it (entry-point group payload_id.commands); the core never imports it.
    assert cli.plugin_modules()["identify"] == "payload_id_ros.cli.identify"
    proc = run("--help")
    assert proc.returncode == 0 and LISTED_IDENTIFY.search(proc.stdout) and "--ros action client" in proc.stdout
    assert run("identify", "--help").returncode == 0


def test_identify_without_the_ros_package_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(cli, "entry_points", lambda group: [])
    assert cli.main(["identify", "--ros"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("payload-id identify: error:") and "payload_id_ros" in err[0], err
    assert cli.main(["--help"]) == 0
    assert not LISTED_IDENTIFY.search(capsys.readouterr().out)
    assert cli.main(["simulate", "--help"]) == 0   # the offline commands need no plugin


def test_unknown_subcommand_prints_usage_and_exits_2():
    proc = run("frobnicate")
    assert proc.returncode == 2
    assert "usage: payload-id" in proc.stderr
    assert "invalid choice" in proc.stderr


def test_missing_subcommand_exits_2():
    proc = run()
    assert proc.returncode == 2
    assert "usage:" in proc.stderr


def _check_platform(machine: str, version: tuple) -> subprocess.CompletedProcess:
    code = (
        "import platform, runpy, sys\n"
        f"platform.machine = lambda: {machine!r}\n"
        f"sys.version_info = type('V', (tuple,), {{}})({version!r})\n"
        f"platform.python_version = lambda: {'.'.join(map(str, version))!r}\n"
        f"runpy.run_path({str(REPO / 'tools' / 'check_platform.py')!r})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_setup_refuses_other_architectures_in_one_line():
    proc = _check_platform("aarch64", (3, 11, 7))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsupported machine aarch64" in lines[0] and "x86_64" in lines[0]


def test_setup_refuses_unsupported_python_in_one_line():
    proc = _check_platform("x86_64", (3, 9, 18))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsupported Python 3.9.18" in lines[0]


def test_setup_accepts_this_machine():
    assert _check_platform("x86_64", (3, 11, 7)).returncode == 0


def test_setup_refuses_python_3_10_in_one_line():
    # requirements.lock's cvxpy, mujoco, numpy and scipy need 3.11+: pip would fail after minutes with
    # "No matching distribution found for cvxpy==..." (issue 33 item 3).
    proc = _check_platform("x86_64", (3, 10, 12))
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsupported Python 3.10.12" in lines[0] and "3.11" in lines[0], lines


def _supported_pythons() -> tuple[tuple[int, int], tuple[int, int]]:
    names = runpy.run_path(str(REPO / "tools" / "check_platform.py"))   # this machine passes it
    return names["OLDEST_PYTHON"], names["NEWEST_PYTHON"]


def _locked_requires_python() -> dict[str, SpecifierSet]:
    """Requires-Python of every requirements.lock pin, from the venv that make setup installed from the lock."""
    found = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        name, version = line.strip().split("==")
        dist = importlib.metadata.distribution(name)
        assert dist.version == version, f"{name}: the venv has {dist.version}, the lock pins {version}: make setup"
        found[name] = SpecifierSet((dist.metadata.get_all("Requires-Python") or [""])[0])
    return found


def test_check_platform_accepts_exactly_the_pythons_the_lock_installs_on():
    oldest, newest = _supported_pythons()
    locked = _locked_requires_python()
    for bound in (oldest, newest):
        refusing = {name: str(spec) for name, spec in locked.items() if not spec.contains(f"{bound[0]}.{bound[1]}.0")}
        assert refusing == {}, f"check_platform accepts {bound}, which these pins refuse"
    # ...and no wider than that: the Python just outside each bound is one some pin refuses.
    below, above = f"{oldest[0]}.{oldest[1] - 1}.0", f"{newest[0]}.{newest[1] + 1}.0"
    assert any(not spec.contains(below) for spec in locked.values()), f"the lock installs on {below}: support it"
    assert any(not spec.contains(above) for spec in locked.values()), f"the lock installs on {above}: support it"


def test_every_place_that_names_the_python_says_what_check_platform_accepts():
    oldest, newest = _supported_pythons()
    floor = f">={oldest[0]}.{oldest[1]}"
    for package in ("payload_id_core", "payload_id_ros"):
        setup = ast.parse((REPO / "src" / package / "setup.py").read_text())
        requires = [kw.value.value for node in ast.walk(setup) if isinstance(node, ast.Call)
                    for kw in node.keywords if kw.arg == "python_requires" and isinstance(kw.value, ast.Constant)]
        assert requires == [floor], (package, requires)
        # The installed metadata (make setup re-installs when setup.py changes).
        assert importlib.metadata.distribution(package).metadata["Requires-Python"] == floor
    span = f"{oldest[0]}.{oldest[1]}-{newest[0]}.{newest[1]}"
    assert span in (REPO / "Makefile").read_text().splitlines()[0]
    readme = (REPO / "README.md").read_text()
    assert span.replace("-", "–") in readme and "3.10–" not in readme


def test_every_subcommand_names_the_same_bundled_robots():
    # Issue 33 item 5: simulate listed ur10, ur5, ur3, ur10e, panda and identify-robot ur10, ur10e, panda, planar_2r.
    _, subparsers = cli.build_parser()
    helps = {}
    for name, sub in subparsers.items():
        importlib.import_module(sub.get_default("_module")).add_arguments(sub)   # as main() does for the one run
        for action in sub._actions:
            if "--urdf" in action.option_strings:
                helps[name] = action.help
    assert set(SUBCOMMANDS) <= set(helps)
    for name, text in helps.items():
        assert ", ".join(known_robots()) in text, (name, text)
