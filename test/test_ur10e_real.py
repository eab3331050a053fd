"""The whole pipeline on the real UR10e recordings of ../shared/data/ur10e (issue 9).

Nothing here is simulated: motor currents of a real UR10e with and without a 2.805 kg load.
Drive gains are identified from the 14-harmonic pair and the known mass (identify_effort_scale),
then the mass is identified on the two other pairs, which had no say in the gains.

Tolerances, from the data's own noise:
* mass within 2 % (the issue's target). The gains are the dominant uncertainty, not the torque
  noise: identified independently on each of the three pairs, the shoulder-lift and elbow gains
  (which carry the load's weight) spread by about ±1.5 % (12.17–12.55 and 9.96–10.10 N·m/A),
  while the estimators' own standard deviations are 0.1–0.4 %. A pipeline that is wrong by more
  than that spread (e.g. a wrong frame, acceleration ringing, the README gains: −13 %) fails.
* CoM: per pair it is known to a few mm (its std) plus the gain-scale uncertainty, which moves
  the first moments by up to 2 % of the CoM distance: bound = 3·√(σ₁² + σ₂²) + 2 % · |c|.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_fixtures import run_cli
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

import ur10e_data as rd  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import MEASURED_AS_COMMANDED_NOTE, read_ur_csv
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.robot_id import validate_robot

pytestmark = requires_ur10e_data
MASS_TOL = 0.02
GAIN_SCALE_TOL = 0.02


@pytest.fixture(scope="module")
def real():
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    raw = rd.load_pairs(DATA, effort_scale=None)          # efforts = motor currents (A)
    gains, gains_std = rd.identify_gains(model, raw[rd.GAIN_PAIR], decimate=4)
    pairs = {k: rd.PreparedPair(k, rd.rescaled(p.unloaded, gains), rd.rescaled(p.loaded, gains), p.offset_s,
                                p.max_mismatch_rad) for k, p in raw.items()}
    robots = {k: rd.identify_ur10e_robot(model, p, "linear")[0] for k, p in pairs.items()}
    return model, pairs, robots, gains, gains_std


def test_pairs_align_on_one_trajectory(real):
    _, pairs, _, _, _ = real
    for p in pairs.values():
        # Same commanded trajectory: the measured motions agree to the tracking error (a few mrad).
        assert p.max_mismatch_rad < 5e-3, p.notes
        assert len(p.unloaded.joints) == len(p.loaded.joints)


def test_drive_gains_identified_from_one_pair(real):
    _, _, _, gains, gains_std = real
    assert gains.shape == (6,)
    # UR10e drives: torque constant × gear ratio ~10 N·m/A; the fit itself is tight.
    assert np.all((gains > 8) & (gains < 14)), gains
    assert np.all(gains_std / gains < 0.05), gains_std


@pytest.mark.parametrize("pair", rd.JUDGED_PAIRS)
def test_mass_within_two_percent_on_independent_pairs(real, pair):
    model, pairs, robots, _, _ = real
    est = rd.identify_payloads(model, robots[pair], pairs[pair], rd.PAYLOAD_METHODS)   # every dynamic method
    for method, e in est.items():
        assert not isinstance(e, str), f"{method}: {e}"
        err = e.mass / rd.LOAD_MASS_KG - 1
        assert abs(err) < MASS_TOL, f"{pair} {method}: {e.mass:.4f} kg ({100 * err:+.2f} %)"
        # σ widened for the residuals' serial correlation (4–8× the independent-sample value): ≤ 2.1 % measured.
        assert 0 < e.readable_std()[0] < 0.03 * e.mass


def test_com_consistent_across_pairs(real):
    model, pairs, robots, _, _ = real
    est = {k: rd.identify_payloads(model, robots[k], pairs[k], ["khalil-3"])["khalil-3"] for k in pairs}
    com = {k: e.com for k, e in est.items()}
    std = {k: e.readable_std()[1:4] for k, e in est.items()}

    def bound(a, b, sa, sb, size):
        return 3 * np.sqrt(sa ** 2 + sb ** 2) + GAIN_SCALE_TOL * size

    # Invariant under a re-mounting of the load about the flange axis (wrist_3_link y): the axial
    # CoM distance and the radius around that axis. (In the 15-harmonic run the load sits rotated
    # by about 180° about that axis: x and z change sign; see docs/ur10e_report.md.)
    keys = list(pairs)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            ca, cb = com[a], com[b]
            size = float(np.linalg.norm(ca))
            assert abs(ca[1] - cb[1]) < bound(ca[1], cb[1], std[a][1], std[b][1], size), (a, b, ca, cb)
            ra, rb = np.hypot(ca[0], ca[2]), np.hypot(cb[0], cb[2])
            sr = lambda c, s: np.hypot(c[0] * s[0], c[2] * s[2]) / max(np.hypot(c[0], c[2]), 1e-9)  # noqa: E731
            assert abs(ra - rb) < bound(ra, rb, sr(ca, std[a]), sr(cb, std[b]), size), (a, b, ca, cb)
    # The two pairs recorded with the same mounting agree as full vectors.
    ca, cb = com["14harm"], com["01_31"]
    tol = 3 * np.sqrt(std["14harm"] ** 2 + std["01_31"] ** 2) + GAIN_SCALE_TOL * np.linalg.norm(ca)
    assert np.all(np.abs(ca - cb) < tol), (ca, cb, tol)


def test_robot_model_predicts_another_trajectory(real):
    """Cross-validation: the model identified on one unloaded run predicts another run's torques."""
    model, pairs, robots, _, _ = real
    other = pairs["15harm"].unloaded
    rmse = validate_robot(robots["14harm"], other, model, delay=0.0)
    spread = other.joints.tau.std(axis=0)
    # The three big joints (gravity and inertia): most of the torque explained on unseen motion.
    assert np.all(rmse[:3] < 0.15 * spread[:3]), (rmse, spread)
    assert np.all(rmse < 4.0), rmse


# -- the command line on UR CSV input ---------------------------------------------------------------

def _write_rows(path: Path, rows) -> Path:
    path.write_text("\n".join(",".join(f"{v:.6g}" for v in r) for r in rows) + "\n")
    return path


def _rows(n=50, cols=31):
    t = 100.0 + 0.01 * np.arange(n)
    rows = np.zeros((n, cols))
    rows[:, 0] = t
    rows[:, 1:7] = 0.1 * np.sin(t[:, None] + np.arange(6))
    return rows


@pytest.mark.parametrize("command", ["identify-robot", "identify-payload"])
def test_cli_rejects_wrong_column_count(tmp_path, capsys, command):
    bad = _write_rows(tmp_path / "bad.csv", _rows(cols=30))
    out = tmp_path / "out.yaml"
    # khalil-3 needs no robot.yaml: the CSV is the first thing read.
    extra = [] if command == "identify-robot" else ["--method", "khalil-3", "--unloaded-csv-ur", str(bad)]
    rc, _, err = run_cli(capsys, command, "--urdf", "ur10e", "--csv-ur", str(bad), *extra, "--out", str(out))
    assert rc == 2
    assert "30 columns, expected 31" in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_cli_rejects_time_going_back(tmp_path, capsys):
    rows = _rows()
    rows[[20, 21], 0] = rows[[21, 20], 0]          # two rows swapped: not logger garbage, out of order
    bad = _write_rows(tmp_path / "back.csv", rows)
    out = tmp_path / "robot.yaml"
    rc, _, err = run_cli(capsys, "identify-robot", "--urdf", "ur10e", "--csv-ur", str(bad), "--out", str(out))
    assert rc == 2
    assert "time does not increase" in err
    assert not out.exists()


def test_cli_identifies_from_ur_csv_and_says_motion_was_measured(tmp_path, capsys):
    out = tmp_path / "robot.yaml"
    gains = ",".join(str(k) for k in rd.README_DRIVE_GAINS)
    rc, stdout, err = run_cli(capsys, "identify-robot", "--urdf", str(DATA / "ur10e.urdf"), "--csv-ur",
                              str(DATA / rd.PAIRS["01_31"][0]), "--effort-scale", gains, "--friction", "linear",
                              "--decimate", "2", "--out", str(out))
    assert rc == 0, err
    assert str(MEASURED_AS_COMMANDED_NOTE) in stdout
    d = yaml.safe_load(out.read_text())
    assert d["effort_scale"] == pytest.approx(rd.README_DRIVE_GAINS)
    # Currents filtered at 5 Hz like the smoothed stand-in motion: the shoulder joints' RMSE stays
    # a few N·m (torques up to 150 N·m; 2-3.4 N·m measured).
    assert max(d["torque_rmse"].values()) < 5.0, d["torque_rmse"]


def test_cli_identification_predicts_another_pair_as_well_as_the_prepared_pipeline(tmp_path, capsys):
    """`identify-robot --csv-ur` (whole file, ~100 Hz irregular, stand-in command smoothed by
    read_ur_csv, torques filtered alike by conditioned_signals) against ur10e_data's own preparation
    (motion window only, 50 Hz grid): both models predict the 15-harmonic run's unloaded torques,
    through the same conditioned_signals, per joint within 15 %.

    Measured (README gains, linear friction): CLI 2.08, 3.30, 1.18, 0.39, 0.68, 0.53 N·m against
    2.03, 3.33, 1.39, 0.48, 0.72, 0.58 (ratios 0.83-1.02; 0.83-1.13 over the three train/test
    combinations of the pairs, the wrists varying most: the CLI also fits the rest segments, where
    Coulomb friction is ambiguous). Before the stand-in was smoothed and the currents filtered the CLI
    gave 2.72, 4.26, 1.57, 0.52, 0.80, 0.62 (ratios up to 1.34, from 50-100 rad/s² acceleration
    spikes between the points and unfiltered current ripple): 15 % separates the two.
    """
    train, test = DATA / rd.PAIRS["01_31"][0], DATA / rd.PAIRS["15harm"][0]
    out = tmp_path / "robot.yaml"
    gains = ",".join(str(k) for k in rd.README_DRIVE_GAINS)
    rc, _, err = run_cli(capsys, "identify-robot", "--urdf", str(DATA / "ur10e.urdf"), "--csv-ur", str(train),
                         "--validate-csv-ur", str(test), "--effort-scale", gains, "--friction", "linear",
                         "--out", str(out))
    assert rc == 0, err
    d = yaml.safe_load(out.read_text())
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    cli = np.array([d["validation_torque_rmse"][j] for j in model.joint_names])
    reference, _ = rd.identify_ur10e_robot(model, rd.prepared_run(train), "linear")
    other = read_ur_csv(test, rd.README_DRIVE_GAINS)
    ref = validate_robot(reference, other, model)
    assert np.all(cli < 1.15 * ref), (cli, ref, cli / ref)
    spread = other.joints.tau.std(axis=0)
    assert np.all(cli[:3] < 0.15 * spread[:3]), (cli, spread)


# -- issue 12: robot and gains from the 14harm pair, σ with the gains' uncertainty ---------------------

TARGET_METHODS = ("khalil-1", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")
# khalil-1 on 01_31 with the 14harm robot: +1.37 %. The robot model extrapolated to another
# trajectory is the error (with the 01_31 unloaded run's own robot: −0.51 %), and the estimate says so:
# its residual is over 1.5 × the robot's own (model-error check). Its σ, widened for the residuals'
# serial correlation, covers it (0.71 σ; 2.6 σ before).
MODEL_ERROR_FLAGGED = {("01_31", "khalil-1")}


@pytest.fixture(scope="module")
def robot_14harm(real):
    model, pairs, _, gains, gains_std = real
    robot, _ = rd.identify_ur10e_robot(model, pairs[rd.GAIN_PAIR], "linear", gains=gains, gains_std=gains_std)
    return robot


@pytest.mark.parametrize("pair", rd.JUDGED_PAIRS)
def test_every_dynamic_method_within_one_percent_and_two_sigma(real, robot_14harm, pair):
    model, pairs, _, _, _ = real
    est = rd.identify_payloads(model, robot_14harm, pairs[pair], TARGET_METHODS)
    for method, e in est.items():
        assert not isinstance(e, str), f"{method}: {e}"
        err = e.mass - rd.LOAD_MASS_KG
        ratio = abs(err) / e.readable_std()[0]
        assert ratio <= 2.0, f"{pair} {method}: |error| / σ = {ratio:.2f}"
        if (pair, method) in MODEL_ERROR_FLAGGED:
            assert has_note(e.notes, NoteCode.PAYLOAD_MODEL_ERROR_HIGH), (pair, method)
            continue
        assert abs(err) < 0.01 * rd.LOAD_MASS_KG, f"{pair} {method}: {100 * err / rd.LOAD_MASS_KG:+.2f} %"


def test_gain_std_widens_the_mass_std_by_the_gains_share(real, robot_14harm):
    """The same estimate without the gains' std: σ(mass) smaller by the gains' share, added in quadrature
    (measured 0.56 % of the mass with the gains fitted on every 4th sample; the load's torque sits on the
    shoulder-lift and elbow joints, whose gains are known to about 0.5-0.7 %)."""
    model, pairs, _, _, _ = real
    no_std = copy.copy(robot_14harm)
    no_std.effort_scale_std = None
    with_std = rd.identify_payloads(model, robot_14harm, pairs["15harm"], ["khalil-3"], project=False)["khalil-3"]
    without = rd.identify_payloads(model, no_std, pairs["15harm"], ["khalil-3"], project=False)["khalil-3"]
    assert with_std.mass == pytest.approx(without.mass, rel=1e-12)
    share = np.sqrt(with_std.readable_std()[0] ** 2 - without.readable_std()[0] ** 2) / rd.LOAD_MASS_KG
    assert 0.003 < share < 0.008, share
