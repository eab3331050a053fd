"""robot.yaml's measured drift of the constant friction offsets in the σ of the methods that hold them at robot.yaml's
values (issue 29 item 4, h106; payload/covariance_extra.offset_drift_covariance): khalil-1 and direct-rls.

The UR10 identified on one 8 s motion without load, gains given (sim_runs.given_gains_robot, test_redteam_issue29_h86's
robot), and its drift record from three unloaded 8 s runs of other motions whose offsets each moved by a draw of
N(0, 0.2 N·m) per joint (real drives move 0.1-0.3 N·m between days; the UR10e's unloaded recordings −0.30..+0.55 N·m
against its calibration run). The loaded run (4 kg) has the shoulder lift's offset moved +0.3 N·m: a draw of the same
drift, and on this motion nearly collinear with the payload's parameters, so no witness can see it (the offsets'
witness: χ² 7.8 / 11.3 on 6 against its 22.5 limit); σ must carry it. Simulated, seconds each."""

import re
from dataclasses import replace

import numpy as np
import pytest
from sim_runs import DRIFT_MASS, drift_run, given_gains_robot

from payload_id_core.notes import NoteCode
from payload_id_core.payload.held_out_error import measure_offset_spread
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id.offset_spread import OffsetSpread, predictive_factor

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


def _moved_lift(model, seed: int, moved: float = MOVED):
    offsets = np.zeros(model.n)
    offsets[1] = moved
    return drift_run(model, seed, offsets=offsets)


def _estimate(model, robot, method, run):
    return identify_payload(method, model, robot, run, model.default_payload_frame, delay=0.0)


def _drift_note(est):
    return next((n.text for n in est.notes if n.code is NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA), "")


def test_the_drift_term_is_the_fits_response_to_a_moved_offset(ur10):
    """The term's mass σ is |∂m/∂B_lift| × the lift's recorded prior std when only the lift has one: a record whose
    prior is 1 N·m on the shoulder lift (one run at 1/t-factor N·m, the others' std tiny) against khalil-1's actual
    mass change for the lift's offset moved 0.3 N·m on seed 3: 0.1067 kg per N·m, the note's term 0.1069 kg, the σ's
    0.1099 kg (khalil-1's σ is its fit with the friction change's, common.friction_change_spread, whose response is
    that fit's)."""
    model, robot, _ = ur10
    offsets = np.zeros((1, model.n))
    offsets[0, 1] = 1.0 / predictive_factor(1)                           # one run: prior std = |ΔB| × t-factor
    lift_only = OffsetSpread(list(model.joint_names), ["lift"], offsets, np.full((1, model.n), 1e-9))
    assert lift_only.prior_std[1] == pytest.approx(1.0) and lift_only.prior_std[[0, 2, 3, 4, 5]].max() < 1e-8
    est = _estimate(model, replace(robot, offset_drift=lift_only), "khalil-1", drift_run(model, 3))
    plain = _estimate(model, robot, "khalil-1", drift_run(model, 3))
    moved = _estimate(model, robot, "khalil-1", _moved_lift(model, 3))
    per_nm = abs(moved.mass - plain.mass) / MOVED
    assert per_nm > 0.05                                                 # the premise: the lift moves the mass
    term = np.sqrt(est.covariance[0, 0] - plain.covariance[0, 0])
    assert term == pytest.approx(per_nm, rel=0.05), (term, per_nm)
    assert est.mass == plain.mass                                        # σ only: the estimate is the method's own
    # The note gives the estimate's own fit's term: 0.1069 kg per N·m.
    noted = float(re.search(r"mass by σ ([0-9.e-]+) kg", _drift_note(est)).group(1))
    assert noted == pytest.approx(per_nm, rel=0.01), (noted, per_nm)


@pytest.mark.parametrize("method, seed", [("khalil-1", 3), ("khalil-1", 4), ("direct-rls", 3), ("direct-rls", 4)])
def test_a_shoulder_lift_offset_moved_within_the_recorded_drift_is_within_three_sigma(ur10, method, seed):
    """h86's strict xfail, with robot.yaml's drift record: before, σ left the drift out and the moved offset was a
    confident wrong answer (khalil-1 −0.93 % at 3.5σ / −0.31 % at 3.8σ, direct-rls −0.95 % at 3.6σ / −0.30 % at
    3.9σ, seeds 3 / 4, converged and ok). Now the recorded drift (drift_std 0.26-0.38 N·m per joint) through the fit's
    response to the offsets is in σ: khalil-1 ± 1.23 % / 0.39 % (0.75σ / 0.79σ), direct-rls ± 1.23 % / 0.39 %
    (0.77σ, not converged at that σ / 0.76σ)."""
    model, robot, with_drift = ur10
    run = _moved_lift(model, seed)
    before = _estimate(model, robot, method, run)
    est = _estimate(model, with_drift, method, run)
    err, std = est.mass - DRIFT_MASS, np.sqrt(est.covariance[0, 0])
    assert abs(before.mass - DRIFT_MASS) > 3 * np.sqrt(before.covariance[0, 0])     # the premise, without the record
    assert est.mass == pytest.approx(before.mass, rel=1e-9)                          # σ only
    assert abs(err) <= 3.0 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    # ... and σ no wider than the drift makes it: the mass error the lift's 0.3 N·m alone makes is ≥ 0.75σ.
    assert abs(err) >= 0.5 * std, (100 * err / DRIFT_MASS, 100 * std / DRIFT_MASS)
    assert "robot.yaml's offsets drift between runs" in _drift_note(est)
    assert "σ leaves out how far the constant friction offsets move" in _drift_note(before)     # no record: said


@pytest.mark.xfail(strict=True, reason=(
    "without a drift record robot.yaml says nothing of how far its offsets move between runs, and σ adds nothing for "
    "it (the offsets' identification σ, already in σ through robot.yaml's C_a, is how well the calibration fixed them "
    "beside the gravity parameters, not their change between runs): khalil-1 −0.93 % at 3.5σ, converged and ok, the "
    "witness blind (χ² 7.8 on 6). Fix: give identify-robot --drift-bag/--drift-csv-ur (the estimate's note says so)"))
def test_without_a_drift_record_the_moved_offset_is_not_written_confidently(ur10):
    model, robot, _ = ur10
    est = _estimate(model, robot, "khalil-1", _moved_lift(model, 3))
    assert not (est.converged and est.quality is Quality.OK and abs(est.mass - DRIFT_MASS) > 3 * np.sqrt(
        est.covariance[0, 0]))
