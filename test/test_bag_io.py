"""rosbag2 reading/writing: round trip, contract details (zero stamps, effort scale, name order) and bad input."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import StoragePlugin, Writer

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io import bag as bag_io
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples

NAMES = ["shoulder", "elbow", "wrist"]
# A coded note and a plain string: the bag must keep both kinds.
NOTES = (Note(NoteCode.TESTING_SYNTHETIC, "synthetic"), "a plain remark")


def make_recording(n_samples=400, rate=500.0, t0=3.25, seed=1, wrench=True, notes=NOTES):
    rng = np.random.default_rng(seed)
    t = t0 + np.arange(n_samples) / rate
    n = len(NAMES)
    joints = JointSamples(t, NAMES, rng.normal(size=(n_samples, n)), rng.normal(size=(n_samples, n)),
                          rng.normal(size=(n_samples, n)))
    tfs = np.arange(40) * 0.02
    traj1 = CommandedTrajectory(t0, NAMES, tfs, rng.normal(size=(40, n)), rng.normal(size=(40, n)),
                                rng.normal(size=(40, n)))
    traj2 = CommandedTrajectory(t0 + 0.5, NAMES[::-1], tfs[:10] + 0.1, rng.normal(size=(10, n)))  # positions only
    w = WrenchSamples(t[::2], "ft_sensor_link", rng.normal(size=(t[::2].size, 3)), rng.normal(size=(t[::2].size, 3))) \
        if wrench else None
    return Recording(joints, [traj1, traj2], w, notes=list(notes))


def assert_same_recording(a: Recording, b: Recording):
    assert a.joints.joint_names == b.joints.joint_names
    np.testing.assert_allclose(a.joints.t, b.joints.t, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(a.joints.q, b.joints.q)
    np.testing.assert_array_equal(a.joints.qd, b.joints.qd)
    np.testing.assert_allclose(a.joints.tau, b.joints.tau, rtol=1e-15, atol=0)
    assert len(a.commanded) == len(b.commanded)
    for x, y in zip(a.commanded, b.commanded):
        assert x.joint_names == y.joint_names
        assert x.start_time == pytest.approx(y.start_time, abs=1e-9)
        np.testing.assert_allclose(x.time_from_start, y.time_from_start, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(x.positions, y.positions)
        for f in ("velocities", "accelerations"):
            if getattr(x, f) is None:
                assert getattr(y, f) is None
            else:
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
    if a.wrench is None:
        assert b.wrench is None
    else:
        assert b.wrench is not None
        assert a.wrench.frame_id == b.wrench.frame_id
        np.testing.assert_allclose(a.wrench.t, b.wrench.t, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(a.wrench.force, b.wrench.force)
        np.testing.assert_array_equal(a.wrench.torque, b.wrench.torque)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip(tmp_path, storage):
    rec = make_recording()
    bag_io.write_bag(tmp_path / "bag", rec, storage=storage)
    back = bag_io.read_bag(tmp_path / "bag", require_trajectory=True, require_wrench=True)
    assert_same_recording(rec, back)
    assert back.notes == [Note(NoteCode.TESTING_SYNTHETIC, "synthetic"), Note(NoteCode.INFO, "a plain remark")]
    assert back.source == str(tmp_path / "bag")


def test_notes_of_a_bag_written_before_note_codes_still_read(tmp_path):
    """Older bags hold the notes' texts joined by newlines: each line reads as an INFO note."""
    bag_io.write_bag(tmp_path / "bag", make_recording(wrench=False))
    meta = tmp_path / "bag" / "metadata.yaml"
    info = yaml.safe_load(meta.read_text())
    info["rosbag2_bagfile_information"]["custom_data"]["payload_id.notes"] = "synthetic\nsecond remark"
    meta.write_text(yaml.safe_dump(info))
    back = bag_io.read_bag(tmp_path / "bag")
    assert back.notes == [Note(NoteCode.INFO, "synthetic"), Note(NoteCode.INFO, "second remark")]


def test_write_is_deterministic_and_replaces(tmp_path):
    rec = make_recording()

    def digest(path: Path) -> str:
        h = hashlib.sha256()
        for f in sorted(path.iterdir()):
            h.update(f.name.encode() + f.read_bytes())
        return h.hexdigest()

    # The storage file is named after the bag directory, so compare bags of the same name.
    bag_io.write_bag(tmp_path / "1" / "bag", rec)
    bag_io.write_bag(tmp_path / "2" / "bag", rec)
    assert digest(tmp_path / "1" / "bag") == digest(tmp_path / "2" / "bag")
    # Writing over an existing bag replaces it, and nothing is left beside it.
    bag_io.write_bag(tmp_path / "1" / "bag", make_recording(n_samples=50))
    assert len(bag_io.read_bag(tmp_path / "1" / "bag").joints) == 50
    assert [p.name for p in (tmp_path / "1").iterdir()] == ["bag"]


def test_failed_write_leaves_no_bag_and_keeps_the_old_one(tmp_path, monkeypatch):
    bag_io.write_bag(tmp_path / "old", make_recording(n_samples=30))
    real_write, calls = Writer.write, []

    def failing_write(self, *args):
        calls.append(1)
        if len(calls) == 100:
            raise OSError("disk full")
        return real_write(self, *args)

    monkeypatch.setattr(Writer, "write", failing_write)
    for name in ("new", "old"):
        calls.clear()
        with pytest.raises(OSError, match="disk full"):
            bag_io.write_bag(tmp_path / name, make_recording())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]
    monkeypatch.undo()
    assert len(bag_io.read_bag(tmp_path / "old").joints) == 30


def test_write_refuses_inconsistent_trajectory(tmp_path):
    rec = make_recording()
    rec.commanded[0].positions = rec.commanded[0].positions[:, :2]
    with pytest.raises(PayloadIdError, match="positions of shape"):
        bag_io.write_bag(tmp_path / "bag", rec)
    assert list(tmp_path.iterdir()) == []


def test_effort_scale_and_joint_order(tmp_path):
    rec = make_recording(wrench=False)
    bag_io.write_bag(tmp_path / "bag", rec, storage="sqlite3")
    gains = [10.0, 10.7, 8.5]
    back = bag_io.read_bag(tmp_path / "bag", effort_scale=gains)
    np.testing.assert_allclose(back.joints.tau, rec.joints.tau * gains, rtol=1e-15)
    back = bag_io.read_bag(tmp_path / "bag", effort_scale={"elbow": 2.0})
    np.testing.assert_allclose(back.joints.tau[:, 1], 2.0 * rec.joints.tau[:, 1], rtol=1e-15)
    np.testing.assert_allclose(back.joints.tau[:, [0, 2]], rec.joints.tau[:, [0, 2]], rtol=1e-15)
    # joint_names reorders (and selects) by name; effort_scale follows that order.
    back = bag_io.read_bag(tmp_path / "bag", joint_names=["wrist", "shoulder"], effort_scale=[3.0, 5.0])
    assert back.joints.joint_names == ["wrist", "shoulder"]
    np.testing.assert_array_equal(back.joints.q, rec.joints.q[:, [2, 0]])
    np.testing.assert_allclose(back.joints.tau, rec.joints.tau[:, [2, 0]] * [3.0, 5.0], rtol=1e-15)
    assert back.wrench is None


def _write_raw(path, messages, storage="mcap"):
    """messages: (topic, msgtype, log_ns, msg) written as they are, for malformed bags."""
    ts = bag_io._typestore()
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conns = {}
        for topic, msgtype, log_ns, msg in messages:
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=ts)
            w.write(conns[topic], log_ns, ts.serialize_cdr(msg, msgtype))


def _joint_state(stamp_ns, names, pos, vel, eff):
    ts = bag_io._typestore().types
    return ts["sensor_msgs/msg/JointState"](
        header=ts["std_msgs/msg/Header"](stamp=ts["builtin_interfaces/msg/Time"](sec=stamp_ns // 10**9,
                                                                                   nanosec=stamp_ns % 10**9),
                                         frame_id=""),
        name=list(names), position=np.array(pos, float), velocity=np.array(vel, float), effort=np.array(eff, float))


def test_zero_stamps_use_log_time_and_name_order_is_matched(tmp_path):
    ts = bag_io._typestore().types
    msgs = [("/joint_states", bag_io.JOINT_STATE, 1_000_000_000 + k * 2_000_000,
             _joint_state(0, ["a", "b"] if k % 2 == 0 else ["b", "a"],
                          [k, -k] if k % 2 == 0 else [-k, k], [], [2 * k, 3 * k] if k % 2 == 0 else [3 * k, 2 * k]))
            for k in range(5)]
    point = ts["trajectory_msgs/msg/JointTrajectoryPoint"]
    dur = ts["builtin_interfaces/msg/Duration"]
    traj = ts[bag_io.JOINT_TRAJECTORY](
        header=ts["std_msgs/msg/Header"](stamp=ts["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id=""),
        joint_names=["a", "b"],
        points=[point(positions=np.array([0.0, 1.0]), velocities=np.zeros(0), accelerations=np.zeros(0),
                      effort=np.zeros(0), time_from_start=dur(sec=0, nanosec=500_000_000))])
    msgs.append(("/joint_trajectory_controller/joint_trajectory", bag_io.JOINT_TRAJECTORY, 1_004_000_000, traj))
    _write_raw(tmp_path / "bag", msgs)
    rec = bag_io.read_bag(tmp_path / "bag")
    np.testing.assert_allclose(rec.joints.t, 1.0 + np.arange(5) * 0.002, atol=1e-12)
    np.testing.assert_array_equal(rec.joints.q, np.column_stack([np.arange(5), -np.arange(5)]))
    np.testing.assert_array_equal(rec.joints.tau, np.column_stack([2 * np.arange(5), 3 * np.arange(5)]))
    assert rec.joints.qd is None
    assert rec.commanded[0].start_time == pytest.approx(1.004)
    assert rec.commanded[0].velocities is None


def _expect_error(path, match, **kw):
    with pytest.raises(PayloadIdError, match=match) as err:
        bag_io.read_bag(path, **kw)
    assert err.value.fix, "every bad-input message must say what to do"
    return str(err.value)


def test_not_a_bag(tmp_path):
    (tmp_path / "plain").mkdir()
    _expect_error(tmp_path / "plain", "not a rosbag2 bag")
    (tmp_path / "x.csv").write_text("1,2,3\n")
    _expect_error(tmp_path / "x.csv", "not a rosbag2 bag")
    _expect_error(tmp_path / "nothing", "does not exist")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metadata.yaml").write_text("not: [a, bag")
    _expect_error(tmp_path / "broken", "cannot read bag")


def test_missing_topics_are_listed(tmp_path):
    bag_io.write_bag(tmp_path / "bag", make_recording(wrench=False))
    msg = _expect_error(tmp_path / "bag", "no topic /ft_sensor/wrench", require_wrench=True)
    assert "/joint_states (sensor_msgs/msg/JointState)" in msg
    assert "/joint_trajectory_controller/joint_trajectory" in msg
    _expect_error(tmp_path / "bag", "no topic /my_states", joint_topic="/my_states")
    _expect_error(tmp_path / "bag", "carries sensor_msgs/msg/JointState",
                  trajectory_topic="/joint_states", require_trajectory=True)
    # Optional topics that are absent are simply left out.
    assert bag_io.read_bag(tmp_path / "bag").wrench is None


def test_nan_samples_are_counted_and_located(tmp_path):
    rec = make_recording()
    rec.joints.tau[[7, 9, 11], 1] = np.nan
    rec.joints.q[9, 2] = np.inf
    bag_io.write_bag(tmp_path / "bag", rec)
    msg = _expect_error(tmp_path / "bag", "3 of 400 joint state samples hold NaN or inf")
    assert "effort of elbow" in msg and "position of wrist" in msg
    assert f"t = {rec.joints.t[7]:.6f} s" in msg
    rec = make_recording()
    rec.wrench.force[4, 0] = np.nan
    bag_io.write_bag(tmp_path / "bag2", rec)
    _expect_error(tmp_path / "bag2", "1 of 200 wrench samples hold NaN or inf", require_wrench=True)


def test_time_must_increase(tmp_path):
    rec = make_recording()
    rec.joints.t[100] = rec.joints.t[99]
    bag_io.write_bag(tmp_path / "bag", rec)
    _expect_error(tmp_path / "bag", "do not increase at 1 of 400 joint state samples, first at sample 100")


def test_changing_or_lacking_joint_names(tmp_path):
    msgs = [("/joint_states", bag_io.JOINT_STATE, (k + 1) * 10**7, _joint_state((k + 1) * 10**7, ["a", "b"],
                                                                                 [0, 0], [0, 0], [0, 0]))
            for k in range(3)]
    msgs.append(("/joint_states", bag_io.JOINT_STATE, 5 * 10**7, _joint_state(5 * 10**7, ["a"], [0], [0], [0])))
    _write_raw(tmp_path / "bag", msgs)
    _expect_error(tmp_path / "bag", r"message 3 .* lacks \['b'\]; the joint list changes")
    msgs[-1] = ("/joint_states", bag_io.JOINT_STATE, 5 * 10**7, _joint_state(5 * 10**7, ["a", "b"], [0, 0], [0, 0], []))
    _write_raw(tmp_path / "bag2", msgs, storage="sqlite3")
    _expect_error(tmp_path / "bag2", "effort missing")
    bag_io.write_bag(tmp_path / "bag3", make_recording())
    _expect_error(tmp_path / "bag3", r"lacks joints \['elbow_2'\]", joint_names=["shoulder", "elbow_2"])


def test_empty_topic(tmp_path):
    ts = bag_io._typestore()
    with Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.MCAP) as w:
        w.add_connection("/joint_states", bag_io.JOINT_STATE, typestore=ts)
    _expect_error(tmp_path / "bag", "topic /joint_states holds no messages")


def test_recording_for_model_reorders_by_name(tmp_path):
    model = RobotModel.from_urdf("ur10")
    n, N = model.n, 20
    rng = np.random.default_rng(2)
    names = list(model.joint_names)[::-1] + ["gripper_finger"]
    q = rng.normal(size=(N, n + 1))
    rec = Recording(JointSamples(np.arange(N) * 0.002, names, q, None, 2 * q))
    bag_io.write_bag(tmp_path / "bag", rec)
    mine = bag_io.read_bag(tmp_path / "bag").for_model(model)
    assert mine.joints.joint_names == list(model.joint_names)
    np.testing.assert_array_equal(mine.joints.q, q[:, :n][:, ::-1])
    np.testing.assert_array_equal(mine.joints.tau, 2 * q[:, :n][:, ::-1])
    rec.joints = rec.joints.reordered(np.arange(1, n + 1), names[1:])   # drop the last URDF joint
    with pytest.raises(PayloadIdError, match=f"lack joints \\['{model.joint_names[-1]}'\\]"):
        rec.for_model(model)
