"""The drive gains' σ from held-out loaded runs of known mass (issue 29 item 5, h101): identify-robot
--gain-check-bag / --gain-check-csv-ur, robot.yaml effort.gain_check (robot_id/gain_spread.py).

The simulated UR10 of test_drive_gains (`simulate --profile ur10`, efforts in A, 100 Hz, 3.75 kg calibration run).
Each check run is a loaded run of another seed whose drives' gains are drawn off the calibration's by a known
relative change: its efforts are the simulated ones divided by (1 + δ_hj), as a drive whose torque per ampere is
k_j (1 + δ_hj) reports them. The elbow and wrist 1 vary between runs (VARIATION), the others do not: their σ must
not grow."""

import numpy as np
import pytest
import yaml
from cli_fixtures import run_cli
from test_drive_gains import TRUTH, TRUTH_MASS, UR10_GAINS

from payload_id_core import robot_identification
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.notes import NoteCode
from payload_id_core.payload import gain_check_runs
from payload_id_core.payload.gain_uncertainty import (
    gain_calibration_relative_std,
    gain_load_only_covariance,
    gain_relative_covariance,
)
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.gain_spread import GainSpread
from payload_id_core.robot_id.offset_spread import predictive_factor
from payload_id_core.signals.recording import JointSamples

VARIATION = 0.03        # relative std of the elbow's and wrist 1's gain between runs
VARYING = np.array([False, False, True, True, False, False])
CHECK_SEEDS = (5, 6, 7)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("gain_check")
    (d / "payload.yaml").write_text(yaml.safe_dump(TRUTH))
    common = ["simulate", "--urdf", "ur10", "--trajectory", "ur10_payload", "--rate", "100", "--profile", "ur10"]
    assert cli_main([*common, "--seed", "1", "--out", str(d / "unloaded")]) == 0
    loaded = [*common, "--payload", str(d / "payload.yaml")]
    assert cli_main([*loaded, "--seed", "3", "--out", str(d / "loaded")]) == 0
    rng = np.random.default_rng(0)
    deltas = np.where(VARYING, rng.normal(0.0, VARIATION, (len(CHECK_SEEDS), 6)), 0.0)
    checks = []
    for seed, delta in zip(CHECK_SEEDS, deltas):
        assert cli_main([*loaded, "--seed", str(seed), "--out", str(d / f"sim_{seed}")]) == 0
        rec = read_bag(d / f"sim_{seed}")
        rec.joints.tau = rec.joints.tau / (1.0 + delta)
        checks.append(write_bag(d / f"check_{seed}", rec))
    return d, checks, deltas


def _identify(capsys, d, out, *extra):
    return run_cli(capsys, "identify-robot", "--urdf", "ur10", "--bag", d / "unloaded", "--loaded-bag", d / "loaded",
                   "--known-payload-mass", TRUTH_MASS, *extra, "--out", out)


@pytest.fixture(scope="module")
def identified(runs, tmp_path_factory):
    """robot.yaml without and with the check runs."""
    d, checks, deltas = runs
    out = tmp_path_factory.mktemp("gain_check_out")
    plain, checked = out / "plain.yaml", out / "checked.yaml"
    assert cli_main(["identify-robot", "--urdf", "ur10", "--bag", str(d / "unloaded"), "--loaded-bag",
                     str(d / "loaded"), "--known-payload-mass", str(TRUTH_MASS), "--out", str(plain)]) == 0
    argv = [a for c in checks for a in ("--gain-check-bag", str(c))]
    assert cli_main(["identify-robot", "--urdf", "ur10", "--bag", str(d / "unloaded"), "--loaded-bag",
                     str(d / "loaded"), "--known-payload-mass", str(TRUTH_MASS), *argv, "--out", str(checked)]) == 0
    model = RobotModel.from_urdf("ur10")
    return RobotIdentification.load(plain, model), RobotIdentification.load(checked, model), deltas


def test_the_check_runs_measure_their_gains_and_the_sigma_covers_the_between_run_spread(identified):
    plain, checked, deltas = identified
    check = checked.gain_check
    assert check is not None and len(check.runs) == len(CHECK_SEEDS)
    np.testing.assert_array_equal(checked.effort_scale, plain.effort_scale)    # the gains themselves do not move
    k = checked.effort_scale
    det = check.determined.all(axis=0)
    assert det[1:4].all()                      # the load's weight torques shoulder lift, elbow, wrist 1
    assert not det[0]                          # the shoulder pan under gravity: no run determines it
    # Each run's gains are the drawn ones k_j (1 + δ_hj) where the run determines them, to within the calibration's
    # own error (robot.yaml's θ, held fixed, is in the calibration gains' units: the robot's own torque pulls the
    # check's gain towards them) and 0.75 %: the 5-8 % the elbow and wrist 1 were drawn off are measured.
    truth = UR10_GAINS * (1.0 + deltas)
    err = np.abs(check.gains / truth - 1.0)
    allowed = np.abs(k / UR10_GAINS - 1.0) + 0.0075
    assert np.all((err <= allowed)[check.determined]), (err, allowed)
    # The σ: where the runs' RMS change exceeds the calibration's σ (the elbow: 2.85 % against 0.81 %), the larger of
    # the calibration's and the Student-t_3 predictive width of the runs' change (1.62× its RMS); elsewhere the
    # calibration's, unchanged: wrist 1's 3.1 % already holds its runs' 2.3 %, the others did not vary.
    before, after = plain.effort_scale_std, checked.effort_scale_std
    assert before is not None and after is not None
    rms = np.sqrt(np.mean((check.gains / k - 1.0) ** 2, axis=0))
    widened = rms > before / k
    np.testing.assert_array_equal(check.spread_beyond_calibration, widened)
    assert widened[2] and not widened[[0, 1, 4, 5]].any(), (rms, before / k)
    np.testing.assert_allclose(after[widened], np.maximum(before, rms * predictive_factor(3) * k)[widened],
                               rtol=1e-9)
    np.testing.assert_array_equal(after[~widened], before[~widened])
    # Before, the calibration's σ did not cover a run's gain on the varying joints; now every run's gain is within 3σ
    # and so is a new run's drawn from the same spread at its 2σ (6 %).
    z_before = np.abs(truth - k) / before
    z_after = np.abs(truth - k) / after
    assert np.max(z_before[:, VARYING]) > 3.0, z_before
    assert np.all(z_after[:, det] <= 3.0), z_after
    assert np.all(np.abs(UR10_GAINS * (1 + 2 * VARIATION) - k)[VARYING] <= 3.0 * after[VARYING])
    # Where the gains do not vary the σ does not grow (h101: up to 1.5×, the runs' own error taken as spread).
    assert after[0] == before[0]
    # The payloads take the widened σ: the relative covariance's diagonal is (std / gain)² again.
    assert checked.gain_covariance is not None
    np.testing.assert_allclose(np.sqrt(np.diag(checked.gain_covariance.relative)), after / k, rtol=1e-9)
    # The payloads' share of the gains is the calibration's, as without the runs (payload/gain_uncertainty.py: the
    # runs' spread is largely the model error the payloads' model-error term counts).
    assert after[2] > before[2]
    np.testing.assert_allclose(gain_relative_covariance(checked), gain_relative_covariance(plain), rtol=1e-9,
                               atol=1e-15)
    np.testing.assert_allclose(gain_load_only_covariance(checked), gain_load_only_covariance(plain), rtol=1e-9,
                               atol=1e-15)
    assert plain.gain_check is None


def test_the_output_names_the_joints_no_run_determines(runs, tmp_path, capsys):
    d, checks, _ = runs
    rc, out, err = _identify(capsys, d, tmp_path / "robot.yaml", "--gain-check-bag", checks[0])
    assert rc == 0, err
    line = next(x for x in out.splitlines() if x.strip().startswith("shoulder_pan_joint") and "runs" in x)
    assert "undetermined" in line and "no check run determines it" in line, line
    assert "drive gains checked on 1 held-out loaded run(s)" in out


def test_the_record_round_trips_and_a_damaged_one_is_refused(identified, tmp_path):
    _, checked, _ = identified
    path = tmp_path / "robot.yaml"
    checked.save(path)
    model = RobotModel.from_urdf("ur10")
    back = RobotIdentification.load(path, model).gain_check
    assert back is not None and checked.gain_check is not None
    np.testing.assert_array_equal(back.gains, checked.gain_check.gains)
    np.testing.assert_array_equal(back.determined, checked.gain_check.determined)
    d = yaml.safe_load(path.read_text())
    d["effort"]["scale_std"] = [s / 10 for s in d["effort"]["scale_std"]]   # the σ narrowed by hand
    d["effort"]["gain_covariance"] = None
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(Exception, match="gain_check"):
        RobotIdentification.load(path, model)
    with pytest.raises(Exception, match="drive gain check"):
        GainSpread(["a", "b"], ["r"], np.array([1.0]), np.ones(2), np.array([[1.0, np.nan]]), np.ones((1, 2)),
                   np.ones((1, 2), bool), np.ones(2))


def _no_identification(*_args, **_kwargs):
    raise AssertionError("the identification started before the bad check run was refused")


@pytest.mark.parametrize("case", ["another robot", "nan", "mass not positive", "masses do not pair", "no gains",
                                  "another load", "the calibration run", "cut short", "too short once decimated"])
def test_a_bad_check_run_exits_2_without_output(case, runs, tmp_path, capsys, monkeypatch):
    """Exit 2, one line, nothing written; every refusal but the mass's (which needs robot.yaml's model: 'another
    load') before any fit starts, in seconds (h114: the whole identification ran first, 60-150 s on real data)."""
    d, checks, _ = runs
    out = tmp_path / "robot.yaml"
    extra = ["--gain-check-bag", checks[0]]
    if case != "another load":
        monkeypatch.setattr(robot_identification, "identify_drive_gains", _no_identification)
        monkeypatch.setattr(robot_identification, "fit_given_model", _no_identification)
    if case == "another robot":
        model = RobotModel.from_urdf("planar_2r")
        from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording  # noqa: PLC0415
        extra, expect = ["--gain-check-bag", write_bag(tmp_path / "planar", synthetic_recording(
            model, *sum_of_sines(model, 3.0, 100.0, seed=1), noise_std=0.1, seed=1))], "shoulder_pan_joint"
    elif case == "nan":
        rec = read_bag(checks[0])
        rec.joints.tau[40, 2] = np.nan
        extra, expect = ["--gain-check-bag", write_bag(tmp_path / "nan", rec)], "NaN"
    elif case == "mass not positive":
        extra, expect = [*extra, "--gain-check-mass", "0"], "--gain-check-mass"
    elif case == "masses do not pair":
        extra, expect = [*extra, "--gain-check-mass", "3.75", "--gain-check-mass", "2"], "2 --gain-check-mass values"
    elif case == "another load":
        extra, expect = [*extra, "--gain-check-mass", "1.5"], "another load"
    elif case == "the calibration run":
        extra, expect = ["--gain-check-bag", d / "loaded"], "a run the robot is fitted to"
    elif case == "cut short":      # the bag stopped a third of the way through the excitation
        rec = read_bag(checks[0])
        j, keep = rec.joints, slice(0, rec.joints.t.size // 3)
        rec.joints = JointSamples(j.t[keep], j.joint_names, j.q[keep], None if j.qd is None else j.qd[keep],
                                  j.tau[keep], None, j.effort_unit, j.effort_scale)
        extra, expect = ["--gain-check-bag", write_bag(tmp_path / "short", rec)], "covers only"
    elif case == "too short once decimated":   # the calibration's --decimate applies to the check run too
        extra, expect = [*extra, "--decimate", "20"], "samples after conditioning"
    if case == "no gains":
        rc, _, err = run_cli(capsys, "identify-robot", "--urdf", "ur10", "--bag", d / "unloaded", "--effort-scale",
                             ",".join(map(str, UR10_GAINS)), *extra, "--out", out)
        expect = "none are identified"
    else:
        rc, _, err = _identify(capsys, d, out, *extra)
    assert rc == 2, err
    assert expect in err and err.strip().count("\n") == 0, err
    assert not out.exists()
    if case == "the calibration run":  # h126: it named the held-out runs' problem and fix (an unloaded run)
        assert "gain check run" in err and "--gain-check-csv-ur/--gain-check-bag" in err, err
        assert "held-out" not in err and "unloaded" not in err, err


def test_the_check_runs_are_conditioned_as_the_calibration_run(runs, tmp_path, capsys, monkeypatch):
    """--cutoff-hz, --decimate and --delay reach the check runs' signals (h101 read them with the payload fits'
    defaults whatever the calibration ran with): every conditioning of a check run, before the identification and in
    the check, gets the calibration's options, and the check still measures the gains."""
    d, checks, _ = runs
    seen = []
    real = gain_check_runs.method_signals

    def spy(run, model, options, robot):
        seen.append((run.source, options.cutoff_hz, options.decimate, options.delay, robot is None))
        return real(run, model, options, robot)

    monkeypatch.setattr(gain_check_runs, "method_signals", spy)
    out = tmp_path / "robot.yaml"
    rc, _, err = _identify(capsys, d, out, "--gain-check-bag", checks[0], "--cutoff-hz", 8, "--decimate", 2,
                           "--delay", 0.0)
    assert rc == 0, err
    assert seen == [(str(checks[0]), 8.0, 2, 0.0, True), (str(checks[0]), 8.0, 2, 0.0, False)], seen
    check = RobotIdentification.load(out, RobotModel.from_urdf("ur10")).gain_check
    assert check is not None and check.determined[0, 1:4].all()


@pytest.mark.parametrize(("found", "std", "given", "refused"), [
    ([3.75], [0.04], [3.75 + 4.9 * 0.04], None),                   # 4.9 σ: the drift allowed
    ([3.75], [0.04], [3.75 + 5.1 * 0.04], "gain check run r1"),    # one run past 5 σ
    ([3.75], [1.5], [5.2], "gain check run r1"),                   # within σ, the load 28 % lighter: another
    ([3.75, 3.70], [0.04, 0.04], [3.92, 3.87], "together"),         # each 4.25 σ, one mass error common to both: 6 σ
    ([3.75, 3.70], [0.04, 0.04], [3.92, 3.53], None),               # ±4.25 σ: the gains' drift, not the mass
])
def test_a_mass_the_runs_contradict_is_refused(found, std, given, refused):
    """refuse_contradicted_masses, per run and over the runs together (a mass error is common to runs of one load,
    the gains' drift is not): MAX_MASS_SIGMAS 5."""
    sources = [f"r{i + 1}" for i in range(len(found))]
    if refused is None:
        gain_check_runs.refuse_contradicted_masses(np.array(found), np.array(std), given, sources)
        return
    with pytest.raises(PayloadIdError, match=refused) as err:
        gain_check_runs.refuse_contradicted_masses(np.array(found), np.array(std), given, sources)
    assert f"--gain-check-mass {given[0]:g}" in str(err.value.problem)


# h120 (red team): one check run given a mass 6 % high passes the per-run 5 σ test (its load weighs 3.771 ± 0.041 kg
# with robot.yaml's gains: 4.95 σ; a single run has no "together" test); its elbow gain reads +1.07 %, beyond the
# calibration's 0.81 %, and one run's Student-t_1 width widens robot.yaml's elbow σ to 6.96 %. The per-joint gain
# witness (payload/gain_drift.py) judged against that whole σ, so a later payload run whose elbow drive reads 3.5 % low
# and shoulder lift 1.5 % high (the common-factor witness sees 0.99: inside its 1.5 %) was ok and converged, khalil-1's
# mass −3.19 % at 3.6σ (seed 9; seed 8 −2.78 % at 2.9σ); with the calibration's σ the witness flags it ("elbow_joint
# read 4.0 % low"), and since h126 it judges against that σ whatever the check runs said.
WRONG_CHECK_MASS = TRUTH_MASS * 1.06
DRIFT = np.array([1.0, 1 / 1.015, 1.035, 1.0, 1.0, 1.0])   # efforts divided: elbow 3.5 % low, shoulder lift high


@pytest.fixture(scope="module")
def drifted(runs, identified, tmp_path_factory):
    d = runs[0]
    out = tmp_path_factory.mktemp("gain_check_drift")
    assert cli_main(["simulate", "--urdf", "ur10", "--trajectory", "ur10_payload", "--rate", "100", "--profile", "ur10",
                     "--payload", str(d / "payload.yaml"), "--seed", "9", "--out", str(out / "sim")]) == 0
    rec = read_bag(out / "sim")
    rec.joints.tau = rec.joints.tau / DRIFT
    bag = write_bag(out / "drifted", rec)
    honest = out / "sim"
    plain = out / "plain.yaml"
    identified[0].save(plain)
    widened = out / "widened.yaml"
    assert cli_main(["identify-robot", "--urdf", "ur10", "--bag", str(d / "unloaded"), "--loaded-bag",
                     str(d / "loaded"), "--known-payload-mass", str(TRUTH_MASS), "--gain-check-bag", str(d / "sim_6"),
                     "--gain-check-mass", str(WRONG_CHECK_MASS), "--out", str(widened)]) == 0
    return bag, plain, widened, honest


def _khalil_1(bag, robot, out) -> dict:
    assert cli_main(["identify-payload", "--urdf", "ur10", "--robot", str(robot), "--bag", str(bag), "--method",
                     "khalil-1", "--out", str(out)]) == 0
    return yaml.safe_load(out.read_text())


def test_an_elbow_drift_is_flagged_with_the_calibrations_gain_sigma(drifted, tmp_path):
    bag, plain, _, _ = drifted
    p = _khalil_1(bag, plain, tmp_path / "payload.yaml")
    assert p["mass"] < 0.98 * TRUTH_MASS                     # the drift moved the mass: −3.19 %
    assert p["quality"]["status"] == "suspect" and not p["converged"], p["quality"]
    assert any("elbow_joint read" in r for r in p["quality"]["reasons"]), p["quality"]["reasons"]


def test_a_wrong_check_mass_does_not_blind_the_gain_witness(drifted, tmp_path):
    """h126: the witness judges against the calibration's gain σ (gain_calibration_relative_std), the σ the payload's
    covariance holds; the check run's widening stays in robot.yaml and is said in a note. Before (h120's strict xfail):
    the elbow's 6.96 % passed the drift, khalil-1 −3.19 % at 3.6σ, ok and converged."""
    bag, plain, widened, honest = drifted
    model = RobotModel.from_urdf("ur10")
    ident = RobotIdentification.load(widened, model)
    calibration = RobotIdentification.load(plain, model)
    assert ident.gain_check is not None and ident.effort_scale_std is not None
    assert calibration.effort_scale_std is not None
    rel, before = (r.effort_scale_std / r.effort_scale for r in (ident, calibration))
    assert rel[2] > 5 * before[2]                         # the one run's t_1 width: the elbow 0.81 → 6.96 %
    np.testing.assert_allclose(gain_calibration_relative_std(ident), before, rtol=1e-9)
    p = _khalil_1(bag, widened, tmp_path / "payload.yaml")
    assert p["mass"] < 0.98 * TRUTH_MASS
    assert p["quality"]["status"] == "suspect" and not p["converged"], (p["mass"], p["std"]["mass"], p["quality"])
    assert any("elbow_joint read" in r for r in p["quality"]["reasons"]), p["quality"]["reasons"]
    widening = [n["text"] for n in p["notes"] if n["code"] == NoteCode.PAYLOAD_GAIN_CHECK_WIDENING.value]
    # the calibration's σ as robot.yaml holds it (h174's load-friction spread in it: 0.812 → 0.828 %)
    said = f"elbow_joint {100 * before[2]:.3g} → 6.96 % (1 run(s))"
    assert len(widening) == 1 and said in widening[0], (said, widening)
    # The same estimate with the calibration's robot.yaml: one witness, one verdict, whatever the check runs said.
    q = _khalil_1(bag, plain, tmp_path / "plain_payload.yaml")
    # The same mass and σ to rounding: the payload's gain share is (C + E) − E, so the two robot.yaml can leave σ an
    # ulp apart (h160); 1e-12 relative is 10⁴ ulp, and the check runs' widening it must not take (the elbow 0.81 →
    # 6.96 %) would move σ by whole percent.
    assert q["mass"] == pytest.approx(p["mass"], rel=1e-12, abs=0.0)
    assert q["std"]["mass"] == pytest.approx(p["std"]["mass"], rel=1e-12, abs=0.0)
    assert q["quality"]["reasons"] == p["quality"]["reasons"]
    assert not any(n["code"] == NoteCode.PAYLOAD_GAIN_CHECK_WIDENING.value for n in q["notes"])
    # The run before its drives drifted: ok and converged against the calibration's σ, the mass within it.
    h = _khalil_1(honest, widened, tmp_path / "honest_payload.yaml")
    assert h["quality"]["status"] == "ok" and h["converged"], h["quality"]
    assert abs(h["mass"] - TRUTH_MASS) <= 3 * h["std"]["mass"], (h["mass"], h["std"]["mass"])
