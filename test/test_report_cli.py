"""`payload-id report`: the PNG shows what the payload explains, and the printed RMSE drop is real."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.robot_id import identify_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

PAYLOAD_ID = str(Path(sys.executable).parent / "payload-id")


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, duration=10.0, rate_hz=100.0, seed=3)
    unloaded = synthetic_recording(model, t, q, qd, qdd, friction="linear",
                                   friction_params=np.tile([3.0, 2.0, 0.0], 6), noise_std=0.2, seed=1)
    robot = identify_robot(model, unloaded, friction="linear", estimator="ols")
    robot.save(tmp / "robot.yaml")
    truth = PayloadEstimate("wrist_3_link", from_mass_com_inertia(4.0, [0.0, 0.02, 0.08], np.diag([0.02, 0.02, 0.01])),
                            np.zeros((10, 10)), "truth")
    loaded = synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=np.tile([3.0, 2.0, 0.0], 6),
                                 noise_std=0.2, payload=truth, seed=2)
    write_bag(tmp / "loaded", loaded)
    atomic_write_yaml(tmp / "truth.yaml", truth.to_dict())
    return tmp


def _report(cell, payload_yaml: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([PAYLOAD_ID, "report", "--urdf", "ur10", "--robot", str(cell / "robot.yaml"),
                           "--payload", str(payload_yaml), "--bag", str(cell / "loaded"), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=300)


def _rmse(stdout: str, label: str) -> np.ndarray:
    line = next(line for line in stdout.splitlines() if label in line)
    return np.array([float(v) for v in re.findall(r"-?\d+\.\d+", line.split(":", 1)[1])])


def test_report_shows_the_payload_removing_the_torque_error(cell):
    out = cell / "report.png"
    proc = _report(cell, cell / "truth.yaml", out, "--truth", str(cell / "truth.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    before = _rmse(proc.stdout, "unloaded model")
    after = _rmse(proc.stdout, "with payload")
    # A 4 kg payload shows as several N·m on the shoulder and elbow; the true payload brings every
    # joint back to the noise (0.2 N·m) plus the robot model's own identification error.
    assert before[1] > 10 * after[1] and before[1] > 5.0
    assert np.all(after < 0.5)


def test_report_refuses_a_non_png_output_and_writes_nothing(cell):
    out = cell / "report.txt"
    proc = _report(cell, cell / "truth.yaml", out)
    assert proc.returncode == 2
    assert "not a .png" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_report_refuses_a_missing_payload_file(cell):
    out = cell / "r2.png"
    proc = _report(cell, cell / "nope.yaml", out)
    assert proc.returncode == 2 and "payload file" in proc.stderr and "does not exist" in proc.stderr
    assert not out.exists()


def test_report_draws_the_payload_where_rviz_shows_it(cell):
    """The printed CoM is the truth's CoM carried by forward kinematics at the recording's first pose."""
    out = cell / "scene.png"
    proc = _report(cell, cell / "truth.yaml", out)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("payload CoM drawn at"))
    drawn, sides = (np.array([float(v) for v in part.split("]")[0].split(",")]) for part in line.split("[")[1:])
    model = RobotModel.from_urdf("ur10")
    q0 = read_bag(cell / "loaded").joints.q[0]
    data = model.model.createData()
    pin.framesForwardKinematics(model.model, data, q0)
    expected = data.oMf[model.model.getFrameId("wrist_3_link")].act(np.array([0.0, 0.02, 0.08]))
    np.testing.assert_allclose(drawn, expected, atol=2e-3)
    # diag(0.02, 0.02, 0.01) for 4 kg: the uniform box with those moments has sides sqrt(6 (I_j + I_l - I_k) / m).
    np.testing.assert_allclose(sorted(sides), sorted(np.sqrt(6 * np.array([0.01, 0.01, 0.03]) / 4.0)), atol=2e-4)
