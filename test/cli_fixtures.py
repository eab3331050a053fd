"""Small valid inputs for every `payload-id` command (the two-joint planar robot: fast), and the checks
every refusal must pass: exit 2, one or two lines on stderr, no traceback, no output created or touched.

Imported by test_cli_bad_input.py and test_cli_fuzz.py (the fixture is module-scoped in each); the simulated ur10
cell (ur10_cell: its robot.yaml and loaded runs) by test_payload_cli.py and test_payload_priors_cli.py; run_cli by
every test that runs the command line in-process.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.friction import FrictionModel
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import FourierTrajectory, rest_basis
from payload_id_core.io.bag import write_bag
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

PAYLOAD = {"frame": "tool0", "mass": 0.5, "com": [0.01, 0.0, 0.02],
           "inertia": {"ixx": 0.001, "ixy": 0.0, "ixz": 0.0, "iyy": 0.001, "iyz": 0.0, "izz": 0.001}}


def run_cli(capture, *argv) -> tuple[int, str, str]:
    """`payload-id *argv` in this process (each argument str()-ed): its exit code, stdout and stderr, read from
    `capture` (pytest's capsys, or capfd where a library writes to the file descriptors)."""
    code = cli_main([str(a) for a in argv])
    captured = capture.readouterr()
    return code, captured.out, captured.err


@dataclass
class CliFiles:
    root: Path
    bag: Path            # planar_2r run with its commanded trajectory
    robot: Path          # robot.yaml identified from it
    payload: Path        # a valid payload.yaml on tool0
    trajectory: Path     # a short Fourier trajectory for planar_2r


def make_cli_files(root: Path) -> CliFiles:
    model = RobotModel.from_urdf("planar_2r")
    t, q, qd, qdd = sum_of_sines(model, 4.0, 100.0, seed=1)
    bag = write_bag(root / "bag", synthetic_recording(model, t, q, qd, qdd, noise_std=0.02, seed=1))
    robot = root / "robot.yaml"
    assert cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(bag), "--friction", "linear",
                     "--out", str(robot)]) == 0
    payload = root / "payload.yaml"
    payload.write_text(yaml.safe_dump(PAYLOAD))
    harmonics = 3
    z = np.random.default_rng(0).normal(size=(model.n, rest_basis(harmonics).shape[1])) * 0.05
    trajectory = root / "trajectory.yaml"
    FourierTrajectory.from_rest_coordinates(model.joint_names, 0.5, np.zeros(model.n), z, harmonics,
                                            2.0).save(trajectory)
    return CliFiles(root, bag, robot, payload, trajectory)


@dataclass
class Snapshot:
    """What an output path held before a command: a failed command must leave it exactly so."""
    path: Path
    existed: bool
    data: bytes | None
    mtime_ns: int | None

    @classmethod
    def of(cls, path: Path) -> Snapshot:
        if path.is_file():
            return cls(path, True, path.read_bytes(), path.stat().st_mtime_ns)
        return cls(path, path.exists(), None, None)

    def unchanged(self) -> bool:
        if self.data is None:
            return path_state(self.path) == ("dir" if self.existed else "absent")
        return (self.path.is_file() and self.path.read_bytes() == self.data
                and self.path.stat().st_mtime_ns == self.mtime_ns)


def path_state(path: Path) -> str:
    return "dir" if path.is_dir() else "file" if path.exists() else "absent"


def stray_temporaries(directory: Path) -> list[str]:
    """Temporary files or directories an atomic write left behind (names start with '.')."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".")) if directory.is_dir() else []


def assert_refused(code: int, err: str, before: Snapshot | None = None) -> None:
    """Exit 2, one or two stderr lines without a traceback, the output as it was."""
    assert code == 2, err
    assert "Traceback" not in err, err
    assert 1 <= len(err.strip().splitlines()) <= 2, err
    if before is not None:
        assert before.unchanged(), f"{before.path} was created or touched by a failed command"


def assert_clean_exit(code: int, err: str, before: Snapshot | None = None) -> None:
    """A command given odd input either works (0) or refuses it as assert_refused says."""
    assert code in (0, 2), err
    assert "Traceback" not in err, err
    if code == 2:
        assert_refused(code, err, before)


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody (root included) can create files in: immutable (chattr +i) where the file
    system allows it, else mode 0555 for an ordinary user; /sys as a last resort (root in a container)."""
    d = tmp_path / "read_only"
    d.mkdir()
    immutable = subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode == 0
    if not immutable:
        d.chmod(0o555)
    if not immutable and os.geteuid() == 0:
        d = Path("/sys")   # sysfs refuses new files even to root
    try:
        yield d
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(tmp_path / "read_only")], check=False)
        (tmp_path / "read_only").chmod(0o755)


@dataclass
class Ur10Cell:
    """The simulated ur10 of the identify-payload command-line tests: nonlinear friction, its robot.yaml identified
    from a noise-free 6 s sum of sines (ordinary least squares)."""
    model: RobotModel
    friction: FrictionModel
    friction_params: np.ndarray

    def recording(self, phi, motion, *, noise_std: float, seed: int, delay: float = 0.0):
        """A run of `motion` (t, q, q̇, q̈) carrying φ `phi` on wrist_3_link (None: unloaded)."""
        return synthetic_recording(self.model, *motion, friction=self.friction, friction_params=self.friction_params,
                                   payload=None if phi is None else (phi, "wrist_3_link"), noise_std=noise_std,
                                   delay=delay, seed=seed)


def ur10_cell(root: Path) -> Ur10Cell:
    """The ur10 cell, its robot.yaml written to root / robot.yaml."""
    from payload_id_core.dynamics.friction import make_friction_model  # noqa: PLC0415 - ur10 tests only
    from payload_id_core.dynamics.regressor import rigid_body_regressor  # noqa: PLC0415
    from payload_id_core.robot_id import identify_from_signals  # noqa: PLC0415

    m = RobotModel.from_urdf("ur10")
    fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
    fp = np.tile([2.0, 1.5, 0.2], m.n)
    t, q, qd, qdd = sum_of_sines(m, 6.0, 100.0, seed=7)
    tau = rigid_body_regressor(m, q, qd, qdd) @ m.standard_parameters() + fm.torque(fp, qd)
    identify_from_signals(m, q, qd, qdd, tau, friction="nonlinear", alpha=0.6, estimator="ols").save(
        root / "robot.yaml")
    return Ur10Cell(m, fm, fp)


def cli_calibration(root: Path, urdf: str, payload: dict, *, trajectory: str = "ur10_payload_inertia",
                    profile: str = "ur10", seeds: tuple[int, int] = (2, 102), rate: int | None = 100,
                    payload_frame: bool = True) -> Path:
    """robot.yaml identified through the command line as the README calibrates a robot's gains: `simulate` an
    unloaded and a loaded run (root/unloaded, root/loaded; `seeds` theirs, `payload` the loaded run's payload.yaml
    content), then identify-robot with --loaded-bag and --known-payload-mass (and --payload-frame the payload's
    frame when payload_frame). Every command must exit 0. Returns root/robot.yaml."""
    (root / "payload.yaml").write_text(yaml.safe_dump(payload))
    common = ["simulate", "--urdf", urdf, "--trajectory", trajectory, "--profile", profile,
              *([] if rate is None else ["--rate", str(rate)])]
    assert cli_main([*common, "--seed", str(seeds[0]), "--out", str(root / "unloaded")]) == 0
    assert cli_main([*common, "--seed", str(seeds[1]), "--payload", str(root / "payload.yaml"),
                     "--out", str(root / "loaded")]) == 0
    out = root / "robot.yaml"
    assert cli_main(["identify-robot", "--urdf", urdf, "--bag", str(root / "unloaded"), "--loaded-bag",
                     str(root / "loaded"), "--known-payload-mass", str(payload["mass"]),
                     *(["--payload-frame", payload["frame"]] if payload_frame else []), "--out", str(out)]) == 0
    return out
