"""A stretch of joint states lost between the driver and the estimator is never silent (signals/stamp_holes.py,
payload/session.py): found from the stamps, named in the goal's result with its length, samples and place, and
the estimate made from the rows on each side of it, with no fit across it."""

import numpy as np
import pytest
from session_cell import FRAME, PHI, session_cell

from payload_id_core.notes import Note, NoteCode, notes_with
from payload_id_core.payload.goal_outcome import GoalOutcome
from payload_id_core.payload.session import IdentificationRun
from payload_id_core.signals.stamp_holes import StampHoles, describe_holes
from payload_id_core.signals.tracking import tracking_error_motion


def _stamps(seconds: float, rate: float, jitter: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.arange(0.0, seconds, 1.0 / rate) + rng.uniform(-jitter, jitter, int(round(seconds * rate)))


def test_a_driver_s_jitter_and_single_dropped_samples_are_no_hole_a_stall_is():
    t = _stamps(6.0, 500.0, 0.3e-3, seed=1)
    keep = np.ones(t.size, dtype=bool)
    keep[[40, 41, 900, 2000]] = False                      # one or two samples missing: within the period spacing
    lost = (t > 3.1) & (t < 3.72)                          # a 0.62 s stall the queue could not hold
    keep &= ~lost
    holes = StampHoles()
    for part in np.array_split(t[keep], 150):              # the node's 20 ms drains
        holes.push(part)
    assert holes.period == pytest.approx(2e-3, rel=0.01)
    assert len(holes.holes) == 1
    hole = holes.holes[0]
    assert hole.start == pytest.approx(3.1, abs=3e-3) and hole.end == pytest.approx(3.72, abs=3e-3)
    assert abs(hole.samples - int(lost.sum())) <= 1        # the stamps' jitter: the period is a median
    assert describe_holes(holes.holes, 0.0, 6.0) == f"lost 0.62 s of joint states ({hole.samples} samples) at 3.10 s " \
                                                    "of motion"


def test_a_hole_before_the_period_is_known_is_judged_once_it_is_and_clipped_to_the_window():
    t = np.concatenate([np.arange(0.0, 0.01, 2e-3), np.arange(0.5, 1.0, 2e-3)])   # 5 samples, 245 lost, more
    holes = StampHoles()
    assert holes.push(t[:5]) == []                         # 4 steps: no period yet
    found = holes.push(t[5:])
    assert len(found) == 1 and found[0].samples == 245
    # Only the part inside the excitation window counts, placed in it.
    assert describe_holes(found, 0.25, 2.0) == "lost 0.25 s of joint states (124 samples) at 0.00 s of motion"
    assert describe_holes(found, 0.6, 2.0) == ""


@pytest.fixture(scope="module")
def cell():
    return session_cell()


def _finished(cell, drop) -> tuple[IdentificationRun, object]:
    model, robot, loaded = cell
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, "difference-rls", float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    keep = ~drop(j.t)
    for part in np.array_split(np.flatnonzero(keep), 30):   # batches, as the node drains its queue
        run.feed(j.t[part], j.q[part], j.tau[part])
    return run, run.finish(7.0, GoalOutcome.FINISHED)


def test_a_goal_that_lost_a_stretch_says_so_and_estimates_from_the_rows_on_each_side(cell):
    """The cell's 6 s at 100 Hz with 0.62 s lost at 3.1 s: the result names it (it was silent), the rows on each
    side identify the payload within its σ, that σ is larger than with every row (precision lost, not accuracy),
    and the tracking error is smoothed on each side alone, as identify-payload smooths a recording with that
    hole."""
    model, robot, loaded = cell
    t0 = loaded.commanded[0].start_time
    whole_run, whole = _finished(cell, lambda t: np.zeros(t.size, dtype=bool))
    holed_run, holed = _finished(cell, lambda t: (t > t0 + 3.1) & (t < t0 + 3.72))
    lost = int(np.sum((loaded.joints.t > t0 + 3.1) & (loaded.joints.t < t0 + 3.72)))
    said = f"lost 0.62 s of joint states ({lost} samples) at 3.10 s of motion"
    assert whole.input_drops == "" and not notes_with(whole.estimate.notes, NoteCode.NODE_JOINT_STATES_LOST)
    assert holed.input_drops == said
    assert said in holed.result_message()
    assert [Note.from_any(n).text for n in notes_with(holed.estimate.notes, NoteCode.NODE_JOINT_STATES_LOST)] == [said]
    assert not notes_with(holed.estimate.notes, NoteCode.NODE_INPUTS_DROPPED)     # no message was malformed
    # The same in numbers, for the result file (bench/cell.py tells the runs apart by them).
    assert whole.joint_states is not None and holed.joint_states is not None
    assert whole.joint_states.complete and whole.joint_states.lost_s == 0.0
    assert whole.joint_states.received == whole_run.online.samples
    assert not holed.joint_states.complete and holed.joint_states.stretches == 1
    assert holed.joint_states.received == whole.joint_states.received - lost
    assert holed.joint_states.lost_s == holed.joint_states.longest_lost_s == pytest.approx(0.62, abs=0.011)
    window = loaded.commanded[0].time_from_start[-1]
    assert holed.joint_states.covered_share == pytest.approx(1.0 - 0.62 / window, abs=0.011 / window)
    # The estimate: the rows that arrived, honestly.
    mass, std = holed.estimate.mass, float(np.sqrt(holed.estimate.covariance[0, 0]))
    assert abs(mass - PHI[0]) < 3 * std and abs(mass - PHI[0]) < 0.02 * PHI[0], (mass, std)
    assert std > np.sqrt(whole.estimate.covariance[0, 0])
    assert holed_run.online.samples == whole_run.online.samples - lost
    # No fit spans the hole: the regressor's q̈ is the command's plus the tracking error fitted on each side alone.
    t, _, _, qdd, _ = holed_run.arrays()
    ref_t, ref_qm = np.concatenate(holed_run._t), np.concatenate(holed_run._qm)
    from payload_id_core.signals.commanded import sample_commanded  # noqa: PLC0415
    q_c, _, qdd_c = sample_commanded(loaded.commanded, ref_t - holed_run.delay, model.joint_names)
    _, _, edd = tracking_error_motion(ref_t, ref_qm - q_c)
    np.testing.assert_allclose(qdd, qdd_c + edd, atol=1e-9)
