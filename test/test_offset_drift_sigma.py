"""robot.yaml's measured drift of the constant friction offsets in the σ of the methods that hold them at robot.yaml's
values (issue 29 item 4, h106, h124; payload/covariance_extra.offset_drift_covariance): khalil-1, direct-rls, khalil-2
(whose conversion of the re-identified θ_b holds them) and gaz-dtau without an unloaded run (ε̂ on the base parameters
against robot.yaml's prediction).

The UR10 identified on one 8 s motion without load, gains given (sim_runs.given_gains_robot, test_redteam_issue29_h86's
robot), and its drift record from three unloaded 8 s runs of other motions whose offsets each moved by a draw of
N(0, 0.2 N·m) per joint (real drives move 0.1-0.3 N·m between days; the UR10e's unloaded recordings −0.30..+0.55 N·m
against its calibration run). The loaded run (4 kg) has the shoulder lift's offset moved +0.3 N·m: a draw of the same
drift, and on this motion nearly collinear with the payload's parameters, so no witness can see it (the offsets'
witness: χ² 7.8 / 11.3 on 6 against its 22.5 limit); σ must carry it. Without a record khalil-1 fits robot.yaml's
error (C_a) and the offsets' drift the run shows with the run (h184, payload/robot_prior.py); `_holding` gives the
fit that holds them, as every method did before. Simulated, seconds each."""

import re
from dataclasses import replace

import numpy as np
import pytest

from payload_id_core.notes import NoteCode
from payload_id_core.payload import covariance_extra
from payload_id_core.payload.held_out_error import measure_offset_spread
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id.model_error import HeldOutModelError
from payload_id_core.robot_id.offset_spread import OffsetSpread, predictive_factor
from payload_id_core.testing.sim_runs import DRIFT_MASS, drift_run, given_gains_robot

DRIFT_STD = 0.2     # N·m: each drift run's offsets about robot.yaml's, per joint (real drives: 0.1-0.3 N·m)
MOVED = 0.3         # N·m: the loaded run's shoulder-lift offset against robot.yaml's
DRIFT_SEEDS = (20, 21, 22)


@pytest.fixture(scope="module")
def ur10():
    """(model, robot without a drift record, the same robot with one from DRIFT_SEEDS' unloaded runs)."""
    model, robot = given_gains_robot("ur10")
    rng = np.random.default_rng(2906)
    runs = [drift_run(model, s, payload=False, offsets=rng.normal(0.0, DRIFT_STD, model.n)) for s in DRIFT_SEEDS]
    return model, robot, replace(robot, offset_drift=measure_offset_spread(model, robot, runs))


def _holding(model, robot):
    """The robot with a drift record that shows none: the methods hold its offsets at its values and add nothing
    (khalil-1 without a record before h184, which now fits robot.yaml's error with the run: payload/robot_prior.py;
    khalil-1 with a record since h195 too, so its held fit is `_estimate(..., hold=True)`)."""
    still = OffsetSpread(list(model.joint_names), ["still"], np.zeros((1, model.n)), np.full((1, model.n), 1e-3))
    assert np.all(still.drift_std == 0)
    return replace(robot, offset_drift=still)


def _moved_lift(model, seed: int, moved: float = MOVED):
    offsets = np.zeros(model.n)
    offsets[1] = moved
    return drift_run(model, seed, offsets=offsets)


def _estimate(model, robot, method, run, hold: bool = False, **options):
    """`hold`: khalil-1 holds robot.yaml's parameters (robot_prior off; its default with a record) even where it has
    no record (where it fits them with the run by default, h184)."""
    if hold and method == "khalil-1":
        options["robot_prior"] = False
    return identify_payload(method, model, robot, run, model.default_payload_frame, delay=0.0, **options)


def _drift_note(est):
    return next((n.text for n in est.notes if n.code is NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA), "")


@pytest.mark.parametrize("method, rel", [("khalil-1", 0.05), ("khalil-2", 0.01), ("gaz-dtau", 0.01)])
def test_the_drift_term_is_the_fits_response_to_a_moved_offset(ur10, method, rel):
    """The term's mass σ is |∂m/∂B_lift| × the lift's recorded prior std when only the lift has one: a record whose
    prior is 1 N·m on the shoulder lift (one run at 1/t-factor N·m, the others' std tiny) against the method's actual
    mass change for the lift's offset moved 0.3 N·m on seed 3. khalil-1: 0.1067 kg per N·m, the note's term 0.1069 kg,
    the σ's 0.1099 kg (its σ is its fit with the friction change's, common.friction_change_spread, whose response is
    that fit's); khalil-2 (the re-identification's response through its conversion) 0.05441 kg, σ's and note's the
    same; gaz-dtau 0.05259 kg, σ's and note's 0.05272 (its load-friction columns are linearised about the run)."""
    model, robot, _ = ur10
    offsets = np.zeros((1, model.n))
    offsets[0, 1] = 1.0 / predictive_factor(1)                           # one run: prior std = |ΔB| × t-factor
    lift_only = OffsetSpread(list(model.joint_names), ["lift"], offsets, np.full((1, model.n), 1e-9))
    assert lift_only.prior_std[1] == pytest.approx(1.0) and lift_only.prior_std[[0, 2, 3, 4, 5]].max() < 1e-8
    est = _estimate(model, replace(robot, offset_drift=lift_only), method, drift_run(model, 3), hold=True)
    plain = _estimate(model, _holding(model, robot), method, drift_run(model, 3), hold=True)
    moved = _estimate(model, _holding(model, robot), method, _moved_lift(model, 3), hold=True)
    per_nm = abs(moved.mass - plain.mass) / MOVED
    assert per_nm > 0.04                                                 # the premise: the lift moves the mass
    term = np.sqrt(est.covariance[0, 0] - plain.covariance[0, 0])
    assert term == pytest.approx(per_nm, rel=rel), (term, per_nm)
    assert est.mass == plain.mass                                        # σ only: the estimate is the method's own
    # The note gives the estimate's own fit's term: 0.1069 kg per N·m.
    noted = float(re.search(r"mass by σ ([0-9.e-]+) kg", _drift_note(est)).group(1))
    assert noted == pytest.approx(per_nm, rel=0.01), (noted, per_nm)


@pytest.mark.parametrize("method, seed", [(m, s) for m in ("khalil-1", "direct-rls", "khalil-2", "gaz-dtau")
                                          for s in (3, 4)])
def test_a_shoulder_lift_offset_moved_within_the_recorded_drift_is_within_three_sigma(ur10, method, seed):
    """h86's strict xfail, with robot.yaml's drift record: before, σ left the drift out and the moved offset was a
    confident wrong answer (khalil-1 −0.93 % at 3.5σ / −0.31 % at 3.8σ, direct-rls −0.95 % at 3.6σ / −0.30 % at
    3.9σ, khalil-2 −0.58 % at 5.0σ / −0.31 % at 4.8σ, gaz-dtau −0.60 % at 5.5σ / −0.31 % at 5.2σ, seeds 3 / 4,
    converged and ok). Now the recorded drift (drift_std 0.26-0.38 N·m per joint) through the fit's response to the
    offsets is in σ: khalil-1 ± 1.23 % / 0.39 % (0.75σ / 0.79σ), direct-rls ± 1.23 % / 0.39 % (0.77σ, not converged
    at that σ / 0.76σ), khalil-2 ± 0.96 % / 0.53 % (0.61σ / 0.58σ), gaz-dtau ± 1.02 % / 0.49 % (0.59σ / 0.64σ)."""
    model, robot, with_drift = ur10
    run = _moved_lift(model, seed)
    before = _estimate(model, _holding(model, robot), method, run, hold=True)
    est = _estimate(model, with_drift, method, run, hold=True)
    err, std = est.mass - DRIFT_MASS, np.sqrt(est.covariance[0, 0])
    assert abs(before.mass - DRIFT_MASS) > 3 * np.sqrt(before.covariance[0, 0])     # the premise, without the record
    assert est.mass == pytest.approx(before.mass, rel=1e-9)                          # σ only
    assert abs(err) <= 3.0 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    # ... and σ no wider than the drift makes it: the mass error the lift's 0.3 N·m alone makes is ≥ 0.75σ.
    assert abs(err) >= 0.5 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert "robot.yaml's offsets drift between runs" in _drift_note(est)
    if method != "khalil-1":       # khalil-1 without a record fits the offsets with the run (tests below)
        no_record = _drift_note(_estimate(model, robot, method, run))    # within chance (WITHIN_CHANCE): main's
        assert "σ leaves out how far the constant friction offsets move" in no_record, no_record


def test_gaz_dtau_against_an_unloaded_twin_adds_no_drift_term(ur10):
    """With the unloaded run of the same motion as its reference, gaz-dtau's Δτ holds that run's offsets, not
    robot.yaml's: the record changes nothing and no note names it (the moved lift, seed 3)."""
    model, robot, with_drift = ur10
    run, twin = _moved_lift(model, 3), drift_run(model, 3, payload=False, offsets=np.eye(model.n)[1] * MOVED)
    plain, est = (identify_payload("gaz-dtau", model, r, run, model.default_payload_frame, unloaded=twin, delay=0.0)
                  for r in (robot, with_drift))
    assert est.mass == plain.mass and np.array_equal(est.covariance, plain.covariance, equal_nan=True)
    assert _drift_note(est) == "" and _drift_note(plain) == ""
    assert abs(est.mass - DRIFT_MASS) < 0.002 * DRIFT_MASS           # the twin's offsets are the loaded run's


@pytest.mark.parametrize("method, says", [("khalil-1", "that error, in σ, holds the offsets"),
                                          ("khalil-2", "which this method's σ (its own fit's) does not use")])
def test_the_note_says_whether_the_methods_sigma_holds_the_measured_error_the_drift_was_measured_in(ur10, method, says):
    """Drift runs that are robot.yaml's held-out runs (the real UR10e's command line): the term is not added, for
    khalil-1 because its σ takes the measured model error, which holds the offsets as they moved there; khalil-2 keeps
    its own fit's σ and its note says so, not that the error is in its σ (h127's review finding)."""
    model, robot, with_drift = ur10
    measured = HeldOutModelError(model.default_payload_frame, list(with_drift.offset_drift.runs),
                                 np.full((len(with_drift.offset_drift.runs), 10), 1e-3))
    est = _estimate(model, replace(with_drift, model_error=measured), method, drift_run(model, 3))
    plain = _estimate(model, replace(robot, model_error=measured), method, drift_run(model, 3))
    assert says in _drift_note(est), _drift_note(est)
    assert np.sqrt(est.covariance[0, 0]) == pytest.approx(np.sqrt(plain.covariance[0, 0]), rel=1e-9)   # not added


def test_the_drift_term_leaves_out_robot_yamls_own_identification_error(ur10):
    """Drift runs whose offsets do not move (h127): what they show beyond their noise is mostly θ̂_a's error seen
    along the offset columns, which σ carries through C_a already (robot_sensitivity_cov). The record measures it
    (identification_std, √(g C_a gᵀ) per run and joint: 0.002-0.038 N·m here against rms 0.003-0.022) and drift_std
    leaves it out ([0.021, 0, 0, 0.012, 0.002, 0.004] → [0, 0, 0, 0.009, 0, 0.002] N·m); the offsets that did move
    (the fixture's record, N(0, 0.2 N·m)) are still carried (the three-sigma test above)."""
    model, robot, with_drift = ur10
    still = measure_offset_spread(model, robot, [drift_run(model, s, payload=False) for s in DRIFT_SEEDS])
    before = replace(still, identification_std=None)                      # the record as h106 read it
    assert np.all(still.identification > 0)
    # What the runs show is what C_a and their noise predict, not a drift: rms² ≈ resolution² + identification².
    predicted = np.sqrt(still.resolution**2 + still.identification**2)
    assert np.all(still.rms < 2.0 * predicted), (still.rms, predicted)
    assert np.all(still.drift_std <= before.drift_std) and still.drift_std.sum() < 0.8 * before.drift_std.sum()
    # On an honest loaded run the term (khalil-1's mass variance beyond the no-record one) shrinks with it: 5.6e-5 →
    # 3.2e-5 kg (the UR10's offsets are well apart from the payload: either is a trace of σ's 3.0e-3 kg).
    run = drift_run(model, 4)
    none, old, new = (_estimate(model, r, "khalil-1", run, hold=True).covariance[0, 0]
                      for r in (_holding(model, robot), replace(robot, offset_drift=before),
                                replace(robot, offset_drift=still)))
    assert np.sqrt(max(new - none, 0.0)) < 0.7 * np.sqrt(old - none), (none, old, new)
    # The fixture's record (offsets moved N(0, 0.2 N·m)): C_a's share is small beside a real drift.
    assert np.all(with_drift.offset_drift.drift_std >= 0.9 * replace(with_drift.offset_drift,
                                                                     identification_std=None).drift_std)


def _robot_prior_note(est):
    return next((n.text for n in est.notes if n.code is NoteCode.PAYLOAD_ROBOT_PRIOR), "")


@pytest.mark.parametrize("seed", [3, 4])
def test_without_a_drift_record_the_moved_offset_is_measured_not_read_as_payload(ur10, seed):
    """h86's moved shoulder lift (+0.3 N·m) without a drift record (h127's strict xfail): robot.yaml's offsets held
    at its values gave khalil-1 −0.93 % at 3.5σ / −0.31 % at 3.8σ (seeds 3 / 4), converged and ok, the witness blind.
    Its shoulder-lift offset is known only to 0.18 N·m (C_a: one 8 s calibration motion) while the loaded run
    resolves it to 0.03 N·m: fitted with robot.yaml's error under C_a and the lift's drift under the width the run
    shows beyond it (payload/robot_prior.py), −0.22 % at 1.4σ / −0.04 % at 0.5σ."""
    model, robot, _ = ur10
    run = _moved_lift(model, seed)
    held = _estimate(model, _holding(model, robot), "khalil-1", run, hold=True)
    assert abs(held.mass - DRIFT_MASS) > 3 * np.sqrt(held.covariance[0, 0])         # the premise: held, wrong
    est = _estimate(model, robot, "khalil-1", run)
    err, std = est.mass - DRIFT_MASS, np.sqrt(est.covariance[0, 0])
    assert abs(err) <= 2.0 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert abs(err) < 0.5 * abs(held.mass - DRIFT_MASS)                               # measured, not only widened
    assert est.converged and est.quality is Quality.OK, est.quality_reasons          # not withheld either
    note = _robot_prior_note(est)
    assert "shoulder_lift_joint +0.2" in note, note                                        # the drift it saw, named


WITHIN_CHANCE = pytest.mark.xfail(strict=True, reason=(
    "seeds 3 / 4: the lift's free change +0.26 ± 0.14 / +0.28 ± 0.11 N·m (1.9σ / 2.5σ of 'not moved'); over the "
    "offsets the run resolves better than C_a, χ² 7.18 on 3 / 11.36 on 6, p 0.066 / 0.078 > the 0.01 false-alarm rate, "
    "no more "
    "than the Panda's honest cross-motion runs show by chance (χ² 6.82 on 3, p 0.078; 10.41 on 3, p 0.015): the width "
    "stays shut and the "
    "methods stay confidently wrong, direct-rls −0.95 % at 3.55σ / −0.30 % at 3.86σ, khalil-2 −0.58 % at 5.0σ / "
    "−0.30 % at 4.8σ, gaz-dtau −0.60 % at 5.5σ / −0.31 % at 5.2σ (khalil-1 fits the offsets, −0.22 % / −0.04 %)"))


@pytest.mark.parametrize("method", ["direct-rls", "khalil-2", "gaz-dtau"])
@pytest.mark.parametrize("seed", [pytest.param(3, marks=WITHIN_CHANCE), pytest.param(4, marks=WITHIN_CHANCE), 9])
def test_without_a_drift_record_no_method_holding_the_offsets_is_confidently_wrong(ur10, method, seed):
    """The issue's rule for every method (h127's and h184's strict xfail, h192, h202): these methods hold robot.yaml's
    offsets and cannot fit them, so where the drift the run shows of the offsets it resolves better than robot.yaml
    (robot_prior.run_offset_drift) is beyond chance over those offsets together (covariance_extra.
    _run_drift_covariance: seed 9, χ² 11.94 on 3, p 0.0076), the width khalil-1 fits it with is in σ through each
    method's own response. Seed 9, mass error ± σ main → h202 (the estimate unchanged, converged and ok both):
    direct-rls −0.57 % ± 0.131 % (4.3σ) → ± 0.497 % (1.14σ), khalil-2 −0.44 % ± 0.074 % (6.0σ) → ± 0.315 % (1.40σ),
    gaz-dtau −0.45 % ± 0.065 % (6.8σ) → ± 0.316 % (1.41σ). Seeds 3 / 4: WITHIN_CHANCE."""
    model, robot, _ = ur10
    run = _moved_lift(model, seed)
    held = _estimate(model, _holding(model, robot), method, run)
    assert abs(held.mass - DRIFT_MASS) > 3 * np.sqrt(held.covariance[0, 0])       # the premise: held, wrong
    assert held.converged and held.quality is Quality.OK                          # ... and confident
    est = _estimate(model, robot, method, run)
    err, std = est.mass - DRIFT_MASS, np.sqrt(est.covariance[0, 0])
    assert est.mass == pytest.approx(held.mass, rel=1e-9)                          # σ only: the method's own estimate
    assert abs(err) <= 3.0 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert abs(err) >= 0.3 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)  # σ no wider than the drift makes it
    note = _drift_note(est)
    assert "shoulder_lift_joint +0." in note and "--drift-bag" in note, note       # the drift named, and the fix


@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6, 7])
def test_without_a_drift_record_the_holding_methods_sigma_is_unchanged_on_honest_runs(ur10, seed):
    """The same on runs whose offsets did not move: the run shows its offsets moved by chance on an offset or two
    (h192's per-offset widths opened on seeds 2 / 4 / 6, σ 0.051 → 0.052 %, 0.069 → 0.070 %), but together their
    changes are within chance (χ² p ≥ 0.27 over seeds 2-13), so σ is main's to the bit:
    the covariance equal to the held fit's, the same estimate, converged and quality, and the note main gives."""
    model, robot, _ = ur10
    run = drift_run(model, seed)
    for method in ("direct-rls", "khalil-2", "gaz-dtau"):
        held = _estimate(model, _holding(model, robot), method, run)
        est = _estimate(model, robot, method, run)
        assert est.mass == pytest.approx(held.mass, rel=1e-9)
        np.testing.assert_allclose(est.covariance, held.covariance, rtol=1e-12, atol=0, err_msg=method)
        assert est.converged == held.converged and est.quality is held.quality, (method, est.quality_reasons)
        assert "σ leaves out how far the constant friction offsets move" in _drift_note(est), _drift_note(est)


@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6, 7])
def test_without_a_drift_record_sigma_is_no_wider_on_honest_runs(ur10, seed):
    """The same fit on runs whose offsets did not move: σ no wider than with robot.yaml's offsets held (C_a's share
    along the offsets, most of σ where the calibration left them loose, is what the run measures), and the error
    within 2.5σ. Seeds 2-7, held → fitted, mass σ 0.066 → 0.062, 0.262 → 0.115, 0.074 → 0.065, 0.059 → 0.058,
    0.088 → 0.074, 0.075 → 0.071 % (|err|/σ RMS 0.96 → 1.07, largest 1.47 → 1.75σ, seed 3)."""
    model, robot, _ = ur10
    run = drift_run(model, seed)
    held = _estimate(model, _holding(model, robot), "khalil-1", run, hold=True)
    est = _estimate(model, robot, "khalil-1", run)
    std, std_held = np.sqrt(est.covariance[0, 0]), np.sqrt(held.covariance[0, 0])
    assert std <= 1.02 * std_held, (100 * std / DRIFT_MASS, 100 * std_held / DRIFT_MASS)
    assert abs(est.mass - DRIFT_MASS) <= 2.5 * std, (100 * (est.mass - DRIFT_MASS) / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert est.converged and est.quality is Quality.OK, est.quality_reasons


JOINT_Z = 0.9          # each offset's change over its own std: within 1σ, no per-offset width opens
JOINT_RHO = 0.95       # their correlation under "not moved" (h207's probe): together far beyond chance


@pytest.mark.xfail(strict=True, reason=(
    "h214's width along the drift's joint direction, (1 − 1/χ²) ΔB̂ΔB̂ᵀ, passed this, but taken back after CI34: on "
    "test_goal_witnesses' run with every offset moved 0.3 N·m it widened direct-rls's mass σ 0.058 → 0.083 kg (error "
    "+0.084 kg, z 1.44 → 1.01), so direct-rls's offset witness (payload/offset_drift.py, the shift against the "
    "estimate's σ) no longer made it suspect with its fix ('use difference-rls') while khalil-2 and gaz-dtau, at the "
    "same z, still were. The width and the witness must be reconciled before the joint width can land"))
@pytest.mark.parametrize("method, rel", [("direct-rls", 0.2), ("khalil-2", 0.02), ("gaz-dtau", 0.02)])
def test_a_drift_beyond_chance_only_jointly_is_given_its_joint_width(ur10, monkeypatch, method, rel):
    """h207's probe (h214): the shoulder lift's and the elbow's free changes +0.9σ and −0.9σ of "not moved", their
    correlation there 0.95 (robot_prior.run_offset_drift's answer on the honest seed 2 with those values put in): χ²
    32.4 on the two (33.5 on the five offsets the run resolves better than C_a, p 2.9e-6), yet each under 1σ, so the
    per-offset widths opened none and σ added nothing (main; h202's gate let it through to no width). The width now
    lies along the drift's joint direction, D = (1 − 1/χ²) ΔB̂ ΔB̂ᵀ (the marginal maximum-likelihood rank-one drift
    from the one draw), so the mass variance gains (1 − 1/χ²) × (the method's mass change for exactly that joint
    change of the two offsets)², the change measured by moving them so in the simulated run (same noise seed):
    khalil-2 and gaz-dtau within 2 %; direct-rls 1.17× (its term is the batch fit's response, online_covariance_extra,
    not the recursion's own). The estimate is the method's own; mass σ direct-rls / khalil-2 / gaz-dtau 0.067 / 0.060 /
    0.051 % → 0.072 / 0.063 / 0.055 % (errors −0.010 / +0.030 / +0.019 %: this run's offsets did not really move)."""
    model, robot, _ = ur10
    real = covariance_extra.run_offset_drift
    given = {}

    def jointly_moved(*args, **kwargs):
        shown = real(*args, **kwargs)
        if shown is None or not shown.loose[[1, 2]].all():                  # a quick check's prefix of the run
            return shown
        std = shown.offsets_std
        offsets = np.zeros_like(shown.offsets)
        offsets[[1, 2]] = JOINT_Z * std[1], -JOINT_Z * std[2]
        cov = shown.cov.copy()
        cov[1, 2] = cov[2, 1] = JOINT_RHO * std[1] * std[2]
        given["offsets"] = offsets                                            # the last: the final estimate's
        return replace(shown, offsets=offsets, cov=cov, drift_std=np.zeros_like(std))

    monkeypatch.setattr(covariance_extra, "run_offset_drift", jointly_moved)
    run = drift_run(model, 2)
    held = _estimate(model, _holding(model, robot), method, run)
    est = _estimate(model, robot, method, run)
    note = _drift_note(est)
    chi2 = float(re.search(r"χ² ([0-9.]+) on", note).group(1))
    assert chi2 > 30, note                                                  # beyond chance together ...
    assert est.mass == pytest.approx(held.mass, rel=1e-9)                    # σ only
    # ... and the change those two offsets made, as the method reads it (the run with them moved, same noise)
    moved = given["offsets"]                                                # offsets' order is the joints'
    shift = _estimate(model, _holding(model, robot), method, drift_run(model, 2, offsets=moved)).mass - held.mass
    added = est.covariance[0, 0] - held.covariance[0, 0]
    assert added == pytest.approx((1 - 1 / chi2) * shift**2, rel=rel), (added, shift**2, chi2)
    assert "shoulder_lift_joint" in note and "elbow_joint" in note and "--drift-bag" in note, note


def test_offsets_the_calibration_knows_better_than_the_run_are_held(ur10):
    """h191: where robot.yaml knows every offset better than the loaded run resolves it, the run's free ΔB̂_j is the
    robot model's error on that motion, not a drift the run measures (the real UR10e's 15harm run: ΔB̂_j 1.4-1.9 × its
    std on every joint, C_a 0.01-0.14 N·m against the run's 0.09-0.48; fitting them moved khalil-1 −0.34 → −2.40 %):
    robot.yaml's parameters are held, as with a record that shows no drift. Here the h86 robot's C_a × 1e-4 (the
    shoulder lift's 0.18 → 0.0018 N·m against the run's 0.03) on the moved lift: no robot_prior note, the held fit's
    mass and σ to 1e-9."""
    model, robot, _ = ur10
    tight = replace(robot, cov=1e-4 * np.asarray(robot.cov, dtype=float))
    run = _moved_lift(model, 3)
    est = _estimate(model, tight, "khalil-1", run)
    held = _estimate(model, _holding(model, tight), "khalil-1", run, hold=True)
    assert not _robot_prior_note(est)
    assert est.mass == pytest.approx(held.mass, rel=1e-9)
    assert est.covariance[0, 0] == pytest.approx(held.covariance[0, 0], rel=1e-9)


def test_with_a_drift_record_khalil_1_fits_robot_yamls_parameters_under_it_narrower_and_covering(ur10):
    """h195, robot_prior on: with the record, khalil-1 does not hold robot.yaml's parameters and add C_a's and the
    recorded drift's response to σ afterwards (its default); it fits them with the run under that prior (C_a + the
    offsets' drift_std², generalised least squares, payload/robot_prior.py), so the run's own data shrink the
    calibration's error and the offsets' drift. Honest runs (offsets as at the calibration), seeds 2-7, held → fitted,
    mass σ %: 0.773 → 0.106, 1.221 → 0.152, 0.396 → 0.082, 0.610 → 0.082, 0.892 → 0.151, 0.946 → 0.108 (median
    0.83 → 0.11); |err|/σ RMS 0.10 → 0.76, largest 1.20σ; every one converged and ok."""
    model, _, with_drift = ur10
    ratios = []
    for seed in range(2, 8):
        run = drift_run(model, seed)
        held = _estimate(model, with_drift, "khalil-1", run)
        est = _estimate(model, with_drift, "khalil-1", run, robot_prior=True)
        std, std_held = np.sqrt(est.covariance[0, 0]), np.sqrt(held.covariance[0, 0])
        assert std <= 0.3 * std_held, (seed, 100 * std / DRIFT_MASS, 100 * std_held / DRIFT_MASS)
        assert std <= 0.004 * DRIFT_MASS, (seed, 100 * std / DRIFT_MASS)            # main: 0.40-1.22 %
        ratios.append(abs(est.mass - DRIFT_MASS) / std)
        assert ratios[-1] <= 2.5, (seed, 100 * (est.mass - DRIFT_MASS) / DRIFT_MASS, 100 * std / DRIFT_MASS)
        assert est.converged and est.quality is Quality.OK, (seed, est.quality_reasons)
        assert "recorded drift between runs" in _robot_prior_note(est), _robot_prior_note(est)
    assert 0.4 <= np.sqrt(np.mean(np.square(ratios))) <= 1.2, ratios


@pytest.mark.parametrize("seed", [3, 4])
def test_with_a_drift_record_the_moved_lift_fitted_under_it_is_within_three_sigma(ur10, seed):
    """The moved shoulder lift (+0.3 N·m, a draw of the recorded drift) with the record, khalil-1 fitting robot.yaml's
    parameters under it (robot_prior on, h195): the run measures the lift's drift instead of reading it as payload."""
    model, _, with_drift = ur10
    est = _estimate(model, with_drift, "khalil-1", _moved_lift(model, seed), robot_prior=True)
    err, std = est.mass - DRIFT_MASS, np.sqrt(est.covariance[0, 0])
    assert abs(err) <= 3.0 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert std <= 0.004 * DRIFT_MASS, 100 * std / DRIFT_MASS
