"""The end of an identify goal without ROS (IdentificationRun.finish, payload/goal_outcome.py): the final estimate,
its residuals, the F/T sensor calibrated on the excitation window's wrenches, and the sentence the goal answers."""

import numpy as np
import pytest
from session_cell import FRAME, PHI, session_cell

from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.storage import ft_parameters_from_payload
from payload_id_core.notes import Note, NoteCode, has_note
from payload_id_core.payload.goal_outcome import FinishedGoal, GoalOutcome
from payload_id_core.payload.session import IdentificationRun
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.testing.ft_data import synthetic_wrench

SENSOR = "tool0"
OFFSET = np.array([1.5, -2.0, 0.8, 0.05, -0.03, 0.02])


@pytest.fixture(scope="module")
def cell():
    return session_cell()


def _run(cell, until: float | None = None) -> IdentificationRun:
    model, robot, loaded = cell
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, "direct-rls", float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    keep = np.ones(j.t.size, dtype=bool) if until is None else j.t <= until
    run.feed(j.t[keep], j.q[keep], j.tau[keep])
    return run


def _wrenches(cell, t: np.ndarray) -> np.ndarray:
    """What a tool0 sensor with OFFSET reads of the payload PHI at the stamps t (the commanded motion)."""
    model, _, loaded = cell
    truth = ft_parameters_from_payload(model, PayloadEstimate(FRAME, PHI, np.zeros((10, 10)), "truth"), SENSOR,
                                       offset=OFFSET)
    q, qd, qdd = sample_commanded(loaded.commanded, t, model.joint_names)
    return np.hstack(synthetic_wrench(model, truth, q, qd, qdd, seed=4))


def test_a_finished_goal_delivers_the_final_estimate_its_residuals_and_the_calibrated_sensor(cell):
    run = _run(cell)
    t_w = np.arange(-1.0, 7.0, 0.005)             # the sensor streams before and after the excitation too
    w = _wrenches(cell, t_w)
    for part in np.array_split(np.arange(t_w.size), 4):
        run.add_wrenches(t_w[part], w[part])
    done = run.finish(7.0, GoalOutcome.FINISHED, SENSOR, "dropped 2 joint state messages as malformed")
    assert isinstance(done, FinishedGoal) and not done.cancelled
    est = done.estimate
    assert est.mass == pytest.approx(3.0, abs=0.05) and est.quality is Quality.OK
    assert has_note([Note.from_any(n) for n in est.notes], NoteCode.NODE_INPUTS_DROPPED)
    assert done.converged == (run.converged and est.converged)
    before, after = run.torque_rmse(est)
    np.testing.assert_array_equal(done.torque_rmse_before, before)
    np.testing.assert_array_equal(done.torque_rmse_after, after)
    assert done.played == pytest.approx(run.window[1] - run.window[0])
    # Calibrated on the window's wrenches alone: the offsets and the payload in the sensor frame come back.
    assert done.ft_problem == "" and done.ft_calibration is not None
    assert done.ft_calibration.sensor.name == SENSOR
    np.testing.assert_allclose(done.ft_calibration.offset, OFFSET, atol=0.1)
    assert done.ft_calibration.phi_sensor[0] == pytest.approx(3.0, abs=0.05)
    assert done.summary() == f"excitation finished: {est.mass:.4f} kg with direct-rls"
    assert done.result_message("applied", "the estimate was not persisted: full") == (
        f"excitation finished: {est.mass:.4f} kg with direct-rls; applied; "
        "dropped 2 joint state messages as malformed; the estimate was not persisted: full")


def test_too_few_wrenches_leave_the_calibration_out_with_the_reason(cell):
    run = _run(cell)
    t_w = np.linspace(0.0, 1.0, 20)
    run.add_wrenches(t_w, _wrenches(cell, t_w))
    done = run.finish(7.0, GoalOutcome.CONVERGED, SENSOR)
    assert done.ft_calibration is None and "too few F/T readings" in done.ft_problem
    assert done.summary("").startswith("converged; motion stopped early: ")
    # Without a sensor, or without wrenches, nothing is tried.
    for sensor, wrenches in ((None, True), (SENSOR, False)):
        other = _run(cell)
        if wrenches:
            other.add_wrenches(t_w, _wrenches(cell, t_w))
        done = other.finish(7.0, GoalOutcome.FINISHED, sensor)
        assert done.ft_calibration is None and done.ft_problem == ""


def test_a_cancelled_goal_is_partial_and_never_calibrates(cell):
    run = _run(cell, until=3.0)
    run.end_window(3.0)
    t_w = np.arange(0.0, 3.0, 0.005)
    run.add_wrenches(t_w, _wrenches(cell, t_w))
    done = run.finish(3.5, GoalOutcome.CANCELLED, SENSOR)
    assert done.cancelled and done.ft_calibration is None and done.ft_problem == ""
    assert done.played == pytest.approx(3.0)
    notes = [Note.from_any(n) for n in done.estimate.notes]
    assert [n.text for n in notes if n.code is NoteCode.GOAL_CANCELLED] == [
        "partial: the goal was cancelled after 3.00 s of motion"]
    assert done.summary("ignored") == "cancelled after 3.00 s of motion: partial estimate"


def test_an_interrupted_goal_is_partial_says_why_and_never_calibrates(cell):
    """The cell ended the goal (the estimator shutting down, the player lost): the estimate is kept, partial, with
    the reason in its note and the goal's summary (issue 32: a player dead 3 s in was "excitation finished")."""
    run = _run(cell, until=3.0)
    run.end_window(3.0)
    t_w = np.arange(0.0, 3.0, 0.005)
    run.add_wrenches(t_w, _wrenches(cell, t_w))
    why = "the excitation player fell silent (no feedback for 2.1 s: dead or hung)"
    done = run.finish(3.5, GoalOutcome.INTERRUPTED, SENSOR, interruption=why)
    assert done.partial and not done.cancelled
    assert done.ft_calibration is None and done.ft_problem == ""
    notes = [Note.from_any(n) for n in done.estimate.notes]
    assert [n.text for n in notes if n.code is NoteCode.GOAL_INTERRUPTED] == [f"partial: {why} after 3.00 s of motion"]
    assert done.summary() == f"aborted: {why}; partial estimate after 3.00 s of motion: {done.estimate.mass:.4f} kg"
    assert done.estimate.mass == pytest.approx(PHI[0], rel=0.05)     # 3 s of a 6 s run: still the payload
    assert IdentificationRun(cell[0], cell[1], FRAME, "direct-rls", 6.0).finish(
        1.0, GoalOutcome.INTERRUPTED, interruption=why) is None


def test_a_goal_without_samples_is_cancelled_empty_or_refused(cell):
    model, robot, _ = cell
    assert IdentificationRun(model, robot, FRAME, "direct-rls", 6.0).finish(1.0, GoalOutcome.CANCELLED) is None
    with pytest.raises(PayloadIdError, match="no samples were identified"):
        IdentificationRun(model, robot, FRAME, "direct-rls", 6.0).finish(1.0, GoalOutcome.FINISHED)


def test_a_suspect_estimate_says_why_in_the_summary(cell):
    done = _run(cell).finish(7.0, GoalOutcome.FINISHED)
    done.estimate.mark(Quality.SUSPECT, "the CoM is outside the tool")
    assert done.summary() == (f"excitation finished: {done.estimate.mass:.4f} kg with direct-rls "
                              "(SUSPECT: the CoM is outside the tool)")
