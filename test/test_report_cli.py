"""`payload-id report`: the PNG shows what the payload explains, and the printed RMSE drop is real."""

import re
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pinocchio as pin
import pytest
import yaml

from payload_id_core.cli import report as report_cli
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.payload_estimate import PayloadEstimate, millimetres
from payload_id_core.report import report_figure
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

PAYLOAD_ID = str(Path(sys.executable).parent / "payload-id")


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, duration=10.0, rate_hz=100.0, seed=3)
    unloaded = synthetic_recording(model, t, q, qd, qdd, friction="linear",
                                   friction_params=np.tile([3.0, 2.0, 0.0], 6), noise_std=0.2, seed=1)
    robot = fit_given_model(model, unloaded, friction="linear", estimator="ols")
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


@pytest.fixture(scope="module")
def identified(cell):
    """payload.yaml from identify-payload: khalil-1 (offline: no history) and difference-rls (online: its history)."""
    for method in ("khalil-1", "difference-rls"):
        assert cli_main(["identify-payload", "--urdf", "ur10", "--robot", str(cell / "robot.yaml"), "--bag",
                         str(cell / "loaded"), "--frame", "wrist_3_link", "--method", method,
                         "--out", str(cell / f"{method}.yaml")]) == 0
    return cell


def _estimate_line(stdout: str, name: str) -> tuple[float, float, float | None]:
    """(value, σ, truth) of `name`'s line in the printed estimate (CoM in mm)."""
    line = next(line for line in stdout.splitlines() if re.match(rf"\s+{name}\s", line))
    value, sigma = (float(v) for v in re.findall(r"(-?\d+\.\d+)\s+±\s+(-?\d+\.\d+)", line)[0])
    truth = re.findall(r"truth\s+(-?\d+\.\d+)", line)
    return value, sigma, float(truth[0]) if truth else None


def test_report_prints_the_sigma_payload_yaml_holds(identified):
    """Was: payload.yaml read back without its covariance, every σ 0 (`payload 2.504 ± 0.000 kg`)."""
    d = yaml.safe_load((identified / "khalil-1.yaml").read_text())
    written = np.array([d["std"]["mass"], *d["std"]["com"]])
    assert np.all(written > 0)
    np.testing.assert_allclose(PayloadEstimate.from_dict(d).readable_std()[:4], written, rtol=1e-9)
    # A file written before the covariance was stored gives back its σ too.
    older = {k: v for k, v in d.items() if k != "covariance_about_frame_origin"}
    np.testing.assert_allclose(PayloadEstimate.from_dict(older).readable_std()[:4], written, rtol=1e-6)
    proc = _report(identified, identified / "khalil-1.yaml", identified / "k1.png")
    assert proc.returncode == 0, proc.stderr
    assert "truth" not in proc.stdout
    assert _estimate_line(proc.stdout, "mass")[1] == pytest.approx(round(written[0], 4), abs=1e-12)
    for k, axis in enumerate("xyz"):       # in mm, σ to two significant digits, as identify-payload prints it
        line = next(line for line in proc.stdout.splitlines() if line.strip().startswith(f"CoM {axis} "))
        assert f" {millimetres(d['com'][k], written[1 + k])} mm" in line


def test_truth_is_printed_beside_the_estimate(identified):
    """Was: --truth had no visible effect on an offline payload file."""
    proc = _report(identified, identified / "khalil-1.yaml", identified / "k1t.png",
                   "--truth", str(identified / "truth.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert _estimate_line(proc.stdout, "mass")[2] == 4.0
    assert [_estimate_line(proc.stdout, f"CoM {axis}")[2] for axis in "xyz"] == [0.0, 20.0, 80.0]   # mm
    error = next(line for line in proc.stdout.splitlines() if line.startswith("error against the truth"))
    mass = _estimate_line(proc.stdout, "mass")[0]
    assert f"mass {mass - 4.0:+.4f} kg" in error and "CoM" in error and " mm" in error


def test_the_convergence_panels_are_drawn_from_an_online_method_s_payload_file(identified, monkeypatch):
    """Was: identify-payload wrote no history, so the convergence panel the help promises never appeared."""
    online = yaml.safe_load((identified / "difference-rls.yaml").read_text())
    assert "history" not in yaml.safe_load((identified / "khalil-1.yaml").read_text())
    assert 10 <= len(online["history"]["t"]) <= 100
    drawn = {}

    def spy(out_path, *args, **kwargs):
        drawn.update(args=args, kwargs=kwargs)
        return report_cli.plot_report_unspied(out_path, *args, **kwargs)

    monkeypatch.setattr(report_cli, "plot_report_unspied", report_cli.plot_report, raising=False)
    monkeypatch.setattr(report_cli, "plot_report", spy)
    assert cli_main(["report", "--urdf", "ur10", "--robot", str(identified / "robot.yaml"),
                     "--payload", str(identified / "difference-rls.yaml"), "--bag", str(identified / "loaded"),
                     "--truth", str(identified / "truth.yaml"), "--out", str(identified / "online.png")]) == 0
    convergence = drawn["kwargs"]["convergence"]
    assert convergence is not None and convergence.t.size == len(online["history"]["t"])
    fig, _ = report_figure(*drawn["args"], **drawn["kwargs"])
    try:
        axes = {ax.get_title().split(":")[0].split(",")[0]: ax for ax in fig.axes if ax.get_visible()}
        assert {"mass", "centre of mass", "inertia", "torque prediction error per joint"} <= set(axes)
        mass = axes["mass"]
        assert any(line.get_label() == "truth 4.000 kg" for line in mass.get_lines())
        assert any(np.shape(y) == convergence.mass.shape and np.allclose(y, convergence.mass, equal_nan=True)
                   for y in (line.get_ydata() for line in mass.get_lines()))
        com = axes["centre of mass"]
        assert "estimate − truth" in com.get_title()
        low, high = com.get_ylim()
        # The CoM error and its band, not ±150 mm of CoM: the converged error ± 2σ fills the panel.
        settled = convergence.settled()
        error = 1e3 * (convergence.com[settled] - [0.0, 0.02, 0.08])
        band = 2e3 * convergence.com_std[settled]
        assert low <= np.min(error - band) and np.max(error + band) <= high
        assert high - low <= 1.5 * max(np.ptp(np.concatenate([error - band, error + band, [[0.0] * 3]])), 1.0)
    finally:
        plt.close(fig)
