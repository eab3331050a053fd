"""The identify goal's ROS-free data path (payload/session.py), the torque residuals it and the report share
(payload/residuals.py), and the online estimator factory (payload/online/)."""

import copy

import numpy as np
import pytest
from session_cell import FRAME, FRICTION, PHI, session_cell

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode, has_note
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods import SPECS, online_spec, prepared_options
from payload_id_core.payload.methods.online import online_estimator
from payload_id_core.payload.online import ONLINE_METHODS, DifferenceRLS, DirectRLS, OnlinePayloadEstimator
from payload_id_core.payload.online.base import ConvergenceRule
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload.residuals import rmse_per_joint, torque_residuals
from payload_id_core.payload.session import IdentificationRun, goal_options
from payload_id_core.robot_id.result import IDENTIFIED_GAINS_SOURCE
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording


@pytest.fixture(scope="module")
def cell():
    return session_cell()


def test_factory_returns_one_class_per_method_and_refuses_others(cell):
    model, robot, _ = cell
    assert ONLINE_METHODS == ("direct-rls", "difference-rls")
    assert type(OnlinePayloadEstimator(model, robot, FRAME, "direct-rls")) is DirectRLS
    assert type(OnlinePayloadEstimator(model, robot, FRAME, "difference-rls")) is DifferenceRLS
    with pytest.raises(PayloadIdError, match="not an online method"):
        OnlinePayloadEstimator(model, robot, FRAME, "khalil-1")
    with pytest.raises(PayloadIdError, match="unknown convergence rule"):
        OnlinePayloadEstimator(model, robot, FRAME, "direct-rls", convergence="never")


def test_methods_are_checked_before_a_goal_moves_the_arm(cell):
    model, robot, _ = cell
    assert IdentificationRun(model, robot, FRAME, "difference-rls", 6.0).online.method == "difference-rls"
    assert {"direct-rls", "difference-rls", "khalil-1"} <= {spec.name for spec in SPECS}
    with pytest.raises(PayloadIdError, match="needs a whole recording"):
        IdentificationRun(model, robot, FRAME, "khalil-1", 6.0)
    with pytest.raises(PayloadIdError, match="unknown method"):
        IdentificationRun(model, robot, FRAME, "magic", 6.0)


def test_residuals_of_the_true_payload_fall_to_the_noise(cell):
    model, robot, loaded = cell
    j = loaded.joints
    q, qd, qdd = (getattr(loaded.commanded[0], a)[:j.t.size] for a in ("positions", "velocities", "accelerations"))
    res = torque_residuals(model, robot, FRAME, PHI, j.t, q, qd, qdd, j.tau)
    assert res.rmse_before[1] > 5.0 and np.all(res.rmse_after < 0.5)
    np.testing.assert_array_equal(res.rmse_before, rmse_per_joint(j.tau - robot.predict(q, qd, qdd)))
    np.testing.assert_allclose(res.after, res.measured - res.residual_after, atol=1e-9)
    unknown = torque_residuals(model, robot, FRAME, None, j.t, q, qd, qdd, j.tau)
    assert np.all(np.isnan(unknown.rmse_after))
    np.testing.assert_array_equal(unknown.rmse_before, res.rmse_before)


@pytest.mark.parametrize("method", ONLINE_METHODS)
def test_session_identifies_the_payload_from_batches_of_joint_states(cell, method):
    model, robot, loaded = cell
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, method, float(cmd.time_from_start[-1]))
    assert run.estimate() is None
    run.add_commanded(cmd)
    for part in np.array_split(np.arange(j.t.size), 7):      # batches, as the node drains its queue
        run.feed(j.t[part], j.q[part], j.tau[part])
    assert run.samples == j.t.size
    est = run.estimate()
    assert est.mass == pytest.approx(3.0, abs=0.05), method
    assert has_note([Note.from_any(n) for n in est.notes], NoteCode.PAYLOAD_ONLINE_PROGRESS)
    before, after = run.torque_rmse(est)
    t, q, qd, qdd, tau = run.arrays()
    same = torque_residuals(model, robot, FRAME, est.phi, t, q, qd, qdd, tau)
    np.testing.assert_array_equal(before, same.rmse_before)
    np.testing.assert_array_equal(after, same.rmse_after)
    assert after[1] < 0.2 * before[1]


def test_session_refuses_nan_joint_states(cell):
    model, robot, loaded = cell
    run = IdentificationRun(model, robot, FRAME, "direct-rls", 6.0)
    q = loaded.joints.q[:5].copy()
    q[2, 1] = np.nan
    with pytest.raises(PayloadIdError, match="NaN"):
        run.feed(loaded.joints.t[:5], q, loaded.joints.tau[:5])


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_max_duration_is_refused_with_the_valid_range(cell, bad):
    model, robot, _ = cell
    with pytest.raises(PayloadIdError, match="max_duration") as err:
        IdentificationRun(model, robot, FRAME, "direct-rls", 6.0, max_duration=bad)
    assert "positive number of seconds" in str(err.value)


def test_session_pairs_each_torque_with_the_command_the_arm_was_executing(cell):
    """The command-to-motion delay is estimated from the first DELAY_FROM s of joint states (nothing is fed
    before) and every torque is paired with the command that delay earlier, as conditioned_signals does for
    recordings; paired at its own stamp, an 8 ms lag on this motion put difference-rls's mass 1.0 % off."""
    from payload_id_core.payload.session import DELAY_FROM  # noqa: PLC0415
    from payload_id_core.signals.tracking import window_samples  # noqa: PLC0415

    model, robot, _ = cell
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    loaded = synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=FRICTION, noise_std=0.2,
                                 payload=(PHI, FRAME), seed=2, delay=0.008)
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, "difference-rls", float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    first = j.t < j.t[0] + 0.5 * DELAY_FROM
    run.feed(j.t[first], j.q[first], j.tau[first])
    assert run.delay is None and run.estimate() is None and run.samples == first.sum()
    for part in np.array_split(np.flatnonzero(~first), 5):
        run.feed(j.t[part], j.q[part], j.tau[part])
    assert run.delay == pytest.approx(0.008, abs=0.001)
    est = run.estimate()
    assert has_note([Note.from_any(n) for n in est.notes], NoteCode.SIGNALS_DELAY_ESTIMATED)
    assert est.mass == pytest.approx(3.0, abs=0.01), est.mass      # paired at its own stamp: 3.030
    # The samples whose delayed stamp falls before the command started are left out, the others all fed: the
    # last half window of the tracking error's smoothing (signals/tracking.py) once the data end.
    held = window_samples(j.t)
    assert robot.tracking_error and held == 5
    assert held < j.t.size - run.online.samples <= 2 + held
    run.flush()
    assert 0 < j.t.size - run.online.samples <= 2


def test_a_window_shorter_than_the_delay_estimate_is_fed_when_the_goal_ends(cell):
    model, robot, loaded = cell
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, "direct-rls", float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    part = j.t < j.t[0] + 0.6
    run.feed(j.t[part], j.q[part], j.tau[part])
    assert run.estimate() is None
    run.end_window(float(j.t[part][-1]))          # cancelled: what there is gets fed, delay from it
    assert run.delay is not None and run.online.samples > 0 and run.estimate() is not None


@pytest.mark.parametrize("method", ONLINE_METHODS)
def test_the_session_fits_the_payload_model_identify_payload_fits(cell, method):
    """The ROS goal's estimator is set up as the command line's (methods/online.py): the robot identification's
    covariance in σ, and no load-dependent friction columns when robot.yaml's gains were identified with a load
    (they absorbed that friction: with the columns the real UR10e pairs' difference-rls mass is +3.0 / +4.7 %,
    which the session gave while the command line gave ~0)."""
    model, robot, _ = cell
    plain = IdentificationRun(model, robot, FRAME, method, 6.0)
    assert plain.online.include_robot_uncertainty and plain.online.n_lf == model.n
    assert plain._model_notes == []
    with_gains = copy.deepcopy(robot)
    with_gains.effort_scale_source = IDENTIFIED_GAINS_SOURCE + "the 14harm pair and the known load mass"
    run = IdentificationRun(model, with_gains, FRAME, method, 6.0)
    assert run.online.n_lf == 0
    assert [Note.from_any(n).code for n in run._model_notes] == [NoteCode.PAYLOAD_LOAD_FRICTION_OFF]


@pytest.mark.parametrize("method", ONLINE_METHODS)
def test_a_goals_convergence_rule_forgetting_and_noise_reach_the_estimator(cell, method):
    """The goal's fields (empty / 0: the default) become PayloadOptions once, at acceptance (goal_options), and the
    session builds its estimator from them as identify-payload does (methods/online.online_estimator)."""
    model, robot, loaded = cell
    default = IdentificationRun(model, robot, FRAME, method, 6.0, options=goal_options())
    assert default.online.convergence_rule is ConvergenceRule.COVARIANCE and default.online.forgetting == 1.0
    options = goal_options("xu", 0.999, [2.0, 2.0, 2.0, 1.0, 1.0, 1.0], model.n)
    run = IdentificationRun(model, robot, FRAME, method, 6.0, options=options)
    assert run.online.convergence_rule is ConvergenceRule.XU and run.online.forgetting == 0.999
    assert run.online.rls.forgetting == 0.999
    np.testing.assert_array_equal(run.online.noise_std, [2.0, 2.0, 2.0, 1.0, 1.0, 1.0])
    assert run.online.history_every == 0          # the node samples the estimate itself
    # The same options give identify-payload's estimator over the same samples: the same estimate.
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, method, float(cmd.time_from_start[-1]),
                            options=goal_options("xu", 0.0, [3.0], model.n))
    run.add_commanded(cmd)
    run.feed(j.t, j.q, j.tau)
    run.flush()
    offline = online_estimator(PayloadMethod.parse(method), model, robot, FRAME,
                               prepared_options(online_spec(method), PayloadOptions(convergence="xu", noise_std=3.0,
                                                                                    history_every=0), robot)[0])
    t, q, qd, qdd, tau = run.arrays()
    offline.update_batch(t, q, qd, qdd, tau)
    np.testing.assert_allclose(run.online.estimate().phi, offline.estimate().phi, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("fields", "problem"), [
    ({"convergence": "never"}, "unknown convergence rule 'never'"),
    ({"forgetting": 1.5}, "forgetting 1.5 is not a forgetting factor"),
    ({"forgetting": float("nan")}, "is not a forgetting factor"),
    ({"noise_std": [1.0, 2.0]}, r"noise_std \[1.0, 2.0\] is not one positive"),
    ({"noise_std": [0.0]}, "is not one positive"),
])
def test_bad_goal_options_are_refused_before_the_arm_moves(fields, problem):
    with pytest.raises(PayloadIdError, match=problem):
        goal_options(**fields, n_joints=6)


def test_an_option_the_online_method_does_not_read_is_refused_by_the_session(cell):
    model, robot, _ = cell
    with pytest.raises(PayloadIdError, match="moment_noise_std is not read by direct-rls: only difference-rls"):
        IdentificationRun(model, robot, FRAME, "direct-rls", 6.0, options=PayloadOptions(moment_noise_std=1.0))
