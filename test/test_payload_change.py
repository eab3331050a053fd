"""The payload changed during the run (payload/payload_change.py; issue 29, h133's red team): the witness locates
h133's two changes and names them first (before h146 the first reason named a gain drift, "warmer drives?"), names a
0.3 kg step on the 4 kg part, and reads runs with one payload, or whose drives drifted, within its limit (the MuJoCo
cell's gain drift: test_redteam_h120). Simulated 8 s UR10 runs (sim_runs, the robot cached per process)."""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.testing.sim_runs import (
    drift_run,
    given_gains_robot,
    goal_stopped_when_converged,
    linear_friction_run,
)

CHANGE_WORDS = "the payload changed during"
FIX_WORDS = "run the goal again with the part held still"


def _changed_at(model, t_change: float, mass: float = 4.5, seed: int = 2):
    """drift_run's run (4.0 kg) with `mass` kg from `t_change` s after its first sample (h133's cases: seed 2, 4.5)."""
    rec = drift_run(model, seed)
    payload = from_mass_com_inertia(mass, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015]))
    heavier = linear_friction_run(model, seed, payload=payload, frame=model.default_payload_frame)
    later = rec.joints.t - rec.joints.t[0] > t_change
    rec.joints.tau[later] = heavier.joints.tau[later]
    return rec


def _when(reason: str) -> float:
    return float(reason.split("near t = ")[1].split(" s")[0])


def _masses(reason: str) -> tuple[float, float]:
    part = reason.split("(mass ")[1]
    return float(part.split(" kg before")[0]), float(part.split("before, ")[1].split(" kg after")[0])


def _note(est):
    return next(n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_CHANGE)


def _note_when(note: str) -> float:
    return float(note.split("likeliest change time ")[1].split(" s")[0])


def test_the_witness_locates_both_h133_changes_within_half_a_second():
    """The note on h133's two cases: the step beyond its limit, the change time within 0.5 s of the truth."""
    model, robot = given_gains_robot("ur10")
    est = identify_payload("direct-rls", model, robot, _changed_at(model, 4.0), model.default_payload_frame)
    note = _note(est)
    chi2 = float(note.split("largest χ² ")[1].split(" ")[0])
    assert chi2 > float(note.split("(limit ")[1].split(" ")[0]), note
    assert abs(_note_when(note) - 4.0) < 0.5, note
    res = _goal(model, robot, _changed_at(model, 0.5))
    assert abs(_note_when(_note(res.estimate)) - (0.5 - 0.01)) < 0.5, _note(res.estimate)


def _goal(model, robot, rec):
    return goal_stopped_when_converged(model, robot, model.default_payload_frame, rec).finished


def test_a_change_at_half_the_run_is_named_first_with_its_time_and_masses():
    """h133: 4.0 then 4.5 kg from the 4th second, direct-rls (4.27 kg, a blend): on main the first reason named a
    gain drift ("every joint's factor free together ... warmer drives?")."""
    model, robot = given_gains_robot("ur10")
    rec = _changed_at(model, 4.0)
    est = identify_payload("direct-rls", model, robot, rec, model.default_payload_frame)
    assert est.quality is not Quality.OK and not est.converged
    first = est.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS) and FIX_WORDS in first, est.quality_reasons
    assert abs(_when(first) - 4.0) < 0.05
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.1) and after == pytest.approx(4.5, abs=0.1)
    # the gain witness's reading follows, as what it reads with one payload
    assert all(r.startswith("read with one payload") for r in est.quality_reasons[1:]
               if "factor" in r), est.quality_reasons


def test_an_early_change_in_a_goal_that_stops_when_converged_is_named_first():
    """h133: 4.5 kg from 0.5 s into a goal fed in 0.1 s batches that stops when converged (difference-rls declared
    at 3.09 s, 4.572 kg): the goal's result names the change at 0.5 s, not a gain drift."""
    model, robot = given_gains_robot("ur10")
    res = _goal(model, robot, _changed_at(model, 0.5))
    assert not res.converged
    first = res.estimate.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS + " the identify goal"), res.estimate.quality_reasons
    # the judged samples start at the goal's first joint state (0.01 s into the recording)
    assert abs(_when(first) - (0.5 - 0.01)) < 0.05
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.15) and after == pytest.approx(4.5, abs=0.15)


ALONE = ("h146: a change no other witness flags is not named: 0.3 kg at 5.7 s reads far beyond the step's limit but "
         "the estimate stays ok (naming it alone flagged test_gain_drift_witness's noise-free Panda run, 63.2 > 61.8)")


@pytest.mark.parametrize("t_change", [2.3, pytest.param(5.7, marks=pytest.mark.xfail(strict=True, reason=ALONE))])
def test_a_three_hundred_gram_step_on_a_four_kilogram_part_is_named(t_change):
    """The smallest change the issue asks to be seen (0.3 kg on 4 kg), between the splits (every 0.4 s of this run):
    difference-rls suspect, the change named first within 0.1 s, the masses within 0.1 kg."""
    model, robot = given_gains_robot("ur10")
    est = identify_payload("difference-rls", model, robot, _changed_at(model, t_change, 4.3, seed=3),
                           model.default_payload_frame, delay=0.0)
    assert est.quality is not Quality.OK and not est.converged
    first = est.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS), est.quality_reasons
    assert abs(_when(first) - t_change) < 0.1, first
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.1) and after == pytest.approx(4.3, abs=0.1)


@pytest.mark.parametrize("factor", [None, "two_joints"])
def test_one_payload_is_no_change_with_or_without_a_gain_drift(factor):
    """An honest run, and h86's shoulder lift and elbow × 1.03 (constant over the run: the free factors take it;
    without them the step read χ² 37.6 on 4, beyond 24.4): the step within its limit, no change named."""
    model, robot = given_gains_robot("ur10")
    scale = None
    if factor:
        scale = np.ones(model.n)
        scale[[1, 2]] = 1.03
    est = identify_payload("difference-rls", model, robot, drift_run(model, 4, scale), model.default_payload_frame,
                           delay=0.0)
    note = _note(est)
    chi2 = float(note.split("largest χ² ")[1].split(" ")[0])
    limit = float(note.split("(limit ")[1].split(" ")[0])
    assert chi2 < limit / 2, note
    assert not any(r.startswith(CHANGE_WORDS) for r in est.quality_reasons), est.quality_reasons
    if factor:
        assert est.quality is not Quality.OK and "factor" in est.quality_reasons[0]
    else:
        assert est.quality is Quality.OK, est.quality_reasons
