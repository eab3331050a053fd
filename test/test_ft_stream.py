"""The compensated wrench as a stream (ft/stream.py), without ROS: which parameters it compensates with, and that
each batch is ft.compensate's answer on the joint state at each stamp."""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft.compensate import compensate_batch
from payload_id_core.ft.storage import ft_parameters_from_payload
from payload_id_core.ft.stream import RECENT, CompensationStream, RecentJointStates
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.testing.ft_data import synthetic_wrench

FRAME = "tool0"


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf("ur10")


def _estimate(mass: float = 2.0) -> PayloadEstimate:
    phi = from_mass_com_inertia(mass, [0.0, 0.01, 0.06], np.diag([0.01, 0.01, 0.008]))
    return PayloadEstimate(FRAME, phi, np.zeros((10, 10)), "direct-rls")


def _joint_states(model, t):
    q = np.tile(np.array([0.1, -1.2, 1.0, -0.5, 1.4, 0.2]), (t.size, 1)) + 0.1 * np.sin(t)[:, None]
    qd = 0.1 * np.tile(np.cos(t)[:, None], (1, model.n))
    return q, qd


def test_recent_joint_states_keep_the_last_ones_and_interpolate(model):
    t = np.arange(300) * 0.002
    q, qd = _joint_states(model, t)
    recent = RecentJointStates.empty(model.n).extended(t[:100], q[:100], qd[:100]).extended(t[100:], q[100:], qd[100:])
    assert recent.t.size == RECENT and recent.t[-1] == t[-1]
    qi, _ = recent.at(np.array([t[-10] + 0.001, 99.0]))
    np.testing.assert_allclose(qi[0], 0.5 * (q[-10] + q[-9]))
    np.testing.assert_array_equal(qi[1], q[-1])            # held at the end


def test_parameters_follow_the_payload_and_keep_the_calibrations_offsets(model):
    stream = CompensationStream(model)
    assert stream.sensor is None and stream.follow(_estimate()) == "" and stream.params is None   # no sensor yet
    stream.hear_sensor(FRAME)
    assert stream.sensor == FRAME
    warning = stream.follow(_estimate())
    assert "without sensor offsets or base tilt" in warning and stream.params is not None
    np.testing.assert_array_equal(stream.params.offset, np.zeros(6))
    calibration = ft_parameters_from_payload(model, _estimate(), FRAME, offset=np.arange(6.0), tilt=(0.01, 0.02))
    calibration.gravity_norm = 9.79
    assert stream.follow(_estimate(), calibration) == "" and stream.params is calibration
    assert stream.follow(_estimate(3.0)) == ""              # a joint-torque estimate: the calibration's offsets stay
    np.testing.assert_array_equal(stream.params.offset, np.arange(6.0))
    assert stream.params.tilt == (0.01, 0.02) and stream.params.gravity_norm == 9.79
    assert stream.params.phi_sensor[0] == pytest.approx(3.0)


def test_the_sensor_is_the_given_frame_else_the_heard_one_and_a_restored_one_wins(model):
    given = CompensationStream(model, sensor_frame="wrist_3_link")
    given.hear_sensor(FRAME)
    assert given.sensor == "wrist_3_link"
    restored = CompensationStream(model, sensor_frame="wrist_3_link")
    params = ft_parameters_from_payload(model, _estimate(), FRAME)
    restored.restore(params)
    restored.hear_sensor("other")
    assert restored.sensor == FRAME and restored.params is params
    bad = CompensationStream(model, sensor_frame="no_such_frame")
    assert bad.follow(_estimate()).startswith("no wrench compensation: ") and bad.params is None


def test_each_batch_is_compensated_on_the_joint_state_at_its_stamps(model):
    truth = ft_parameters_from_payload(model, _estimate(), FRAME, offset=np.array([1.0, -1.0, 0.5, 0.1, 0.0, -0.1]))
    stream = CompensationStream(model, inertial=True)
    assert stream.compensate(np.zeros(1), np.zeros((1, 6))) is None      # nothing to compensate with yet
    stream.restore(truth)
    assert stream.compensate(np.zeros(1), np.zeros((1, 6))) is None      # no joint states yet
    t = np.arange(200) * 0.002
    q, qd = _joint_states(model, t)
    stream.add_joint_states(t, q, qd)
    tw = t[50:150] + 0.001
    qw, qdw = RecentJointStates.empty(model.n).extended(t, q, qd).at(tw)
    measured = np.hstack(synthetic_wrench(model, truth, qw, qdw, np.zeros_like(qw), noise_std=0.0))
    measured[3] = np.nan
    out = stream.compensate(tw, measured)
    assert out.frame == FRAME and out.t.size == tw.size - 1 and 3 not in np.flatnonzero(np.isin(tw, out.t))
    expected = compensate_batch(model, truth, qw, qdw, np.zeros_like(qw), measured)
    np.testing.assert_allclose(out.wrench, np.delete(expected, 3, axis=0))
    np.testing.assert_allclose(out.wrench, 0.0, atol=1e-9)              # the payload's own wrench, removed


def test_while_a_trajectory_plays_its_velocity_and_acceleration_are_used(model):
    truth = ft_parameters_from_payload(model, _estimate(), FRAME)
    stream = CompensationStream(model)
    stream.restore(truth)
    t = np.arange(100) * 0.01
    q, _ = _joint_states(model, t)
    stream.add_joint_states(t, q, np.zeros_like(q))
    tf = np.linspace(0.0, 2.0, 21)
    cmd = CommandedTrajectory(0.5, list(model.joint_names), tf, np.tile(q[50], (tf.size, 1)),
                              np.full((tf.size, model.n), 0.3), np.full((tf.size, model.n), 0.7))
    stream.add_commanded(cmd)
    tw = np.array([0.2, 0.7])                                             # before and inside the command
    out = stream.compensate(tw, np.zeros((2, 6)))
    qw, _ = RecentJointStates.empty(model.n).extended(t, q, np.zeros_like(q)).at(tw)
    qd = np.vstack([np.zeros(model.n), np.full(model.n, 0.3)])
    qdd = np.vstack([np.zeros(model.n), np.full(model.n, 0.7)])
    np.testing.assert_allclose(out.wrench, compensate_batch(model, truth, qw, qd, qdd, np.zeros((2, 6))))
