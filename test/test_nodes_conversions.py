"""In-process checks of the node helpers: message conversions, markers, the decelerating stop, time scaling."""
import numpy as np
import pytest

from payload_id_core.dynamics.inertia import equivalent_box, from_mass_com_inertia
from payload_id_core.excitation import stop_from_commanded
from payload_id_core.excitation.fourier import FourierTrajectory
from payload_id_core.excitation.playback import _eval_poly, quintic_coefficients, stop_trajectory, time_scaled
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_ros import conversions as conv


def _estimate():
    ic = np.array([[0.02, 0.001, 0.0], [0.001, 0.025, 0.002], [0.0, 0.002, 0.015]])   # a realisable body
    phi = from_mass_com_inertia(3.5, [0.03, -0.02, 0.08], ic)
    return PayloadEstimate("tool0", phi, np.diag(np.full(10, 1e-6)), "direct-rls", convergence_time=2.5)


def test_estimate_message_round_trip():
    est = _estimate()
    msg = conv.estimate_to_msg(est, 12.25)
    assert msg.header.frame_id == "tool0" and conv.time_to_sec(msg.header.stamp) == pytest.approx(12.25)
    assert msg.payload.mass == pytest.approx(3.5) and msg.payload.com.z == pytest.approx(0.08)
    assert msg.payload.iyz == pytest.approx(0.002) and msg.payload.mass_std == pytest.approx(1e-3, rel=1e-6)
    assert msg.convergence_measure == pytest.approx(1e-3 / 3.5, rel=1e-6)
    back = conv.msg_to_estimate(msg)
    np.testing.assert_allclose(back.phi, est.phi, atol=1e-12)


def test_the_published_estimate_says_which_priors_were_given_used_and_not_applied_and_why():
    """~/payload carried no prior (only the goal's result message said, in its text, what was not applied): the
    message now has the goal's bounding_box / known_mass / known_mass_std as given, and what became of them."""
    plain = conv.estimate_to_msg(_estimate(), 1.0)
    assert (list(plain.bounding_box), plain.known_mass, plain.known_mass_std) == ([], 0.0, 0.0)
    assert not (plain.prior_pinned or plain.prior_bounded or plain.prior_not_applied or plain.prior_not_applied_reasons)
    est = _estimate()
    est.prior = {"bounding_box": {"min": [-0.05, -0.1, 0.0], "max": [0.15, 0.1, 0.2]}, "known_mass": 3.5,
                 "known_mass_std": 0.0175}
    est.prior_pinned, est.prior_bounded = ["mass"], ["inertia ixx", "inertia iyy"]
    est.prior_not_applied = {"bounding_box": "the box's sampler did not settle (split R 1.4)"}
    msg = conv.estimate_to_msg(est, 1.0)
    assert list(msg.bounding_box) == [-0.05, -0.1, 0.0, 0.15, 0.1, 0.2]
    assert (msg.known_mass, msg.known_mass_std) == (3.5, 0.0175)
    assert list(msg.prior_pinned) == ["mass"] and list(msg.prior_bounded) == ["inertia ixx", "inertia iyy"]
    assert list(msg.prior_not_applied) == ["bounding_box"]
    assert list(msg.prior_not_applied_reasons) == ["the box's sampler did not settle (split R 1.4)"]
    back = conv.msg_to_estimate(msg)
    assert (back.prior, back.prior_pinned, back.prior_bounded, back.prior_not_applied) == \
        (est.prior, est.prior_pinned, est.prior_bounded, est.prior_not_applied)
    assert back.prior_not_applied_text() == est.prior_not_applied_text()
    assert conv.payload_yaml_context(msg)["prior"] == est.to_dict()["prior"]   # identify --ros --out's prior:


def test_the_published_estimate_says_what_physical_consistency_narrowed_and_the_notes_as_payload_yaml_does():
    """payload.yaml names the inertia entries J ⪰ 0 narrowed (σ over the motion's) and carries the notes; ~/payload and
    the Identify result carried neither (h194): a ROS user read a σ the restriction to bodies had halved as the
    motion's own, and never saw why a CoM was undetermined. The message now carries both, and reads back the same."""
    plain = conv.estimate_to_msg(_estimate(), 1.0)
    assert not (plain.physically_narrowed or plain.physically_narrowed_ratio or plain.note_codes or plain.notes)
    est = _estimate()
    est.physically_narrowed = {"inertia ixx": 0.62, "inertia izz": 0.41}
    est.notes = [Note(NoteCode.PAYLOAD_PHYSICALLY_NARROWED, "narrowed by physical consistency: inertia ixx 0.62, "
                      "inertia izz 0.41; pinned by it rather than the motion (below 0.5): inertia izz"),
                 Note(NoteCode.PAYLOAD_UNDETERMINED, "undetermined by this motion: inertia"), "a plain remark"]
    msg = conv.estimate_to_msg(est, 1.0)
    assert list(msg.physically_narrowed) == ["inertia ixx", "inertia izz"]
    assert list(msg.physically_narrowed_ratio) == [0.62, 0.41]
    assert list(msg.note_codes) == ["payload.physically_narrowed", "payload.undetermined", "info"]
    assert list(msg.notes)[2] == "a plain remark"
    back = conv.msg_to_estimate(msg)
    assert back.physically_narrowed == est.physically_narrowed
    written, read = est.to_dict(), back.to_dict()
    assert (read["notes"], read["physically_narrowed"]) == (written["notes"], written["physically_narrowed"])
    # `identify --ros --out` writes these entries as payload.yaml does.
    context = conv.payload_yaml_context(msg)
    assert (context["physically_narrowed"], context["notes"]) == (written["physically_narrowed"], written["notes"])
    assert "prior" not in context and "prior" not in written
    # A code from a newer sender reads as info with its sentence kept, as payload.yaml's notes do.
    msg.note_codes[0] = "payload.some_future_code"
    assert conv.msg_to_estimate(msg).notes[0] == Note(NoteCode.INFO, est.notes[0].text)


def test_the_identify_client_reads_a_message_as_payload_yaml_reads_the_estimate():
    """`identify --ros` writes the result's numbers with PayloadEstimate.to_dict's rule: one conversion."""
    est = _estimate()
    keys = ("frame", "mass", "com", "inertia", "std")
    assert conv.parameters_to_dict(conv.parameters_msg(est)) == {k: est.to_dict()[k] for k in keys}
    est.determined = np.array([True, True, False])           # the inertia not determined: None, and its σ
    readable = conv.parameters_to_dict(conv.parameters_msg(est))
    assert readable == {k: est.to_dict()[k] for k in keys}
    assert set(readable["inertia"].values()) == {None} and set(readable["std"]["inertia"].values()) == {None}
    assert readable["mass"] == pytest.approx(3.5) and readable["std"]["mass"] == pytest.approx(1e-3, rel=1e-6)


def test_trajectory_message_round_trip_and_zero_stamp():
    t = np.linspace(0, 1, 5)
    cmd = CommandedTrajectory(0.0, ["a", "b"], t, np.c_[t, -t], np.ones((5, 2)), np.zeros((5, 2)))
    back = conv.msg_to_commanded(conv.commanded_to_msg(cmd), receive_time=100.0)
    assert back.start_time == 100.0                     # zero stamp: starts on receipt, as the controller reads it
    np.testing.assert_allclose(back.positions, cmd.positions)
    stamped = conv.msg_to_commanded(conv.commanded_to_msg(cmd, stamp=42.5), receive_time=100.0)
    assert stamped.start_time == pytest.approx(42.5)


def test_inertia_box_reproduces_the_principal_moments():
    est = _estimate()
    dims, axes = equivalent_box(est.mass, est.inertia_about_com)
    a, b, c = dims
    box = est.mass / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    np.testing.assert_allclose(axes @ box @ axes.T, est.inertia_about_com, atol=1e-12)
    markers = conv.markers_msg(est, 1.0).markers
    assert [m.header.frame_id for m in markers] == ["tool0"] * 3
    assert markers[2].text == "3.500 ± 0.001 kg"


def test_stop_trajectory_decelerates_smoothly_within_limits():
    q0, v0, a0 = np.array([0.1, -1.0]), np.array([0.8, -0.5]), np.array([1.0, 0.0])
    acc = np.array([3.0, 3.0])
    stop = stop_trajectory(["a", "b"], q0, v0, a0, acc, rate_hz=200)
    T = stop.time_from_start[-1]
    c = quintic_coefficients(q0, v0, a0, stop.positions[-1], 0 * v0, 0 * v0, T)
    q, qd, qdd = _eval_poly(c, np.array([0.0]))
    np.testing.assert_allclose(np.r_[q[0], qd[0], qdd[0]], np.r_[q0, v0, a0], atol=1e-12)  # continuous: no jump
    np.testing.assert_allclose(stop.velocities[-1], 0, atol=1e-12)
    np.testing.assert_allclose(stop.accelerations[-1], 0, atol=1e-12)
    assert np.all(np.abs(stop.accelerations) <= acc + 1e-9)
    assert 0.2 <= T < 2.0


def test_a_stop_near_a_joint_limit_stays_inside_it():
    """The cell's cancel test caught this: the elbow at 3.05 rad moving at 3 rad/s towards its 3.1416 limit
    (the excitation was turning round), the gentle stop ran to 3.1471 rad, the controller refused it, and the
    arm went on with the excitation. The stop now brakes harder and stays inside; away from limits it is the
    gentle one, unchanged."""
    lower, upper = np.array([-np.pi, -np.pi]), np.array([np.pi, np.pi])
    q0, v0, a0 = np.array([3.05, 0.0]), np.array([3.0, 1.0]), np.array([-8.0, 0.0])
    acc = np.array([10.0, 10.0])
    gentle = stop_trajectory(["a", "b"], q0, v0, a0, acc, rate_hz=200)
    assert gentle.positions[:, 0].max() > upper[0]              # what the controller refused
    stop = stop_trajectory(["a", "b"], q0, v0, a0, acc, rate_hz=200, position_limits=(lower, upper))
    assert np.all(stop.positions <= upper) and np.all(stop.positions >= lower)
    np.testing.assert_allclose(stop.velocities[-1], 0, atol=1e-12)
    assert stop.time_from_start[-1] < gentle.time_from_start[-1]
    free = stop_trajectory(["a", "b"], np.zeros(2), v0, a0, acc, rate_hz=200, position_limits=(lower, upper))
    np.testing.assert_allclose(free.positions, stop_trajectory(["a", "b"], np.zeros(2), v0, a0, acc,
                                                               rate_hz=200).positions, atol=0)


def test_time_scaling_keeps_the_path():
    traj = FourierTrajectory.from_rest_coordinates(["a"], 0.5, [0.2], np.array([[0.3, -0.1, 0.2]]), 3)
    slow = time_scaled(traj, 0.5)
    assert slow.duration == pytest.approx(2 * traj.duration)
    t = np.linspace(0, traj.duration, 7)
    q, qd, _ = traj.evaluate(t)
    qs, qds, _ = slow.evaluate(2 * t)
    np.testing.assert_allclose(qs, q, atol=1e-12)
    np.testing.assert_allclose(qds, 0.5 * qd, atol=1e-12)


def test_a_stop_from_the_trajectories_heard_starts_from_the_commanded_state_and_ends_at_rest():
    """What the estimator sends when the excitation player is gone (issue 32): the stop starts at t from the state
    the controller is commanded then (the later trajectory replacing the earlier), and ends at rest; nothing once
    the last trajectory has ended."""
    tt = np.linspace(0.0, 4.0, 401)
    w = 2 * np.pi / 4.0
    q = np.column_stack([0.5 * np.sin(w * tt), 0.2 * (1 - np.cos(w * tt))])
    qd = np.column_stack([0.5 * w * np.cos(w * tt), 0.2 * w * np.sin(w * tt)])
    qdd = np.column_stack([-0.5 * w * w * np.sin(w * tt), 0.2 * w * w * np.cos(w * tt)])
    hold = CommandedTrajectory(10.0, ["a", "b"], np.array([0.0, 1.0]), np.zeros((2, 2)), np.zeros((2, 2)),
                               np.zeros((2, 2)))
    excitation = CommandedTrajectory(11.0, ["a", "b"], tt, q, qd, qdd)
    acc = np.array([3.0, 3.0])
    stop = stop_from_commanded([hold, excitation], 12.3, acc, rate_hz=200)
    assert stop is not None and stop.start_time == 12.3
    q0, qd0, _ = sample_commanded([hold, excitation], np.array([12.3]))
    assert np.max(np.abs(stop.velocities[0] - qd0[0])) < 0.05 and np.max(np.abs(qd0)) > 0.3   # moving
    assert np.max(np.abs(stop.positions[0] - q0[0])) < 0.02
    assert np.max(np.abs(stop.velocities[-1])) < 1e-9 and np.max(np.abs(stop.accelerations[-1])) < 1e-9
    assert np.max(np.abs(stop.accelerations)) <= 3.0 + 1e-6
    assert stop_from_commanded([hold, excitation], 15.5, acc) is None
    assert stop_from_commanded([], 12.0, acc) is None
