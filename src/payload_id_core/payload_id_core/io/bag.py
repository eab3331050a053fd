"""rosbag2 directories (mcap or sqlite3) <-> Recording, with `rosbags` (no ROS installation needed).

The bag contract is in DESIGN.md: /joint_states (sensor_msgs/JointState), the commanded
trajectory topic (trajectory_msgs/JointTrajectory) and an optional /ft_sensor/wrench
(geometry_msgs/WrenchStamped). Every check on the content raises PayloadIdError naming the
problem and the fix, so `payload-id` can print one line and exit 2.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rosbags.highlevel import AnyReader
from rosbags.interfaces import Connection
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_directory
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.effort import EffortUnit, check_drive_gains
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples

JOINT_TOPIC = "/joint_states"
TRAJECTORY_TOPIC = "/joint_trajectory_controller/joint_trajectory"
WRENCH_TOPIC = "/ft_sensor/wrench"

JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"

# Recording.notes travel in the bag's metadata custom_data (rosbag2 format 9) as a JSON list of
# {code, text}; bags written before codes existed hold the texts joined by newlines.
_NOTES_KEY = "payload_id.notes"
# The unit of the efforts on the joint-state topic (EffortUnit value); bags without it (e.g. from
# `ros2 bag record`) read as EffortUnit.UNKNOWN and take robot.yaml's drive gains.
_EFFORT_UNIT_KEY = "payload_id.effort_unit"


def _typestore():
    return get_typestore(Stores.ROS2_KILTED)


def _stamp(header, log_ns: int) -> float:
    """header.stamp in seconds; a zero stamp means "now" to ROS, i.e. the log time."""
    sec, nsec = int(header.stamp.sec), int(header.stamp.nanosec)
    if sec == 0 and nsec == 0:
        return log_ns * 1e-9
    return sec + nsec * 1e-9


def _duration(d) -> float:
    return int(d.sec) + int(d.nanosec) * 1e-9


def _check_finite(what: str, t: np.ndarray, arrays: Mapping[str, np.ndarray | None], columns: Sequence[str],
                  source: str) -> None:
    """Refuse NaN/inf samples, saying how many and where (first time, which fields/columns)."""
    bad_rows = ~np.isfinite(t)
    where = []
    for field, arr in arrays.items():
        if arr is None:
            continue
        bad = ~np.isfinite(arr)
        if bad.any():
            bad_rows |= bad.any(axis=1)
            cols = [columns[j] if j < len(columns) else str(j) for j in np.flatnonzero(bad.any(axis=0)).tolist()]
            where.append(f"{field} of {', '.join(cols)}")
    if bad_rows.any():
        k = int(np.flatnonzero(bad_rows)[0])
        t_first = t[k] if np.isfinite(t[k]) else float("nan")
        raise PayloadIdError(
            f"{source}: {int(bad_rows.sum())} of {t.size} {what} samples hold NaN or inf "
            f"({'; '.join(where) or 'time stamps'}), the first at sample {k} (t = {t_first:.6f} s)",
            "fix or re-record the data, or cut the bad stretch out of the bag "
            "(e.g. `ros2 bag convert` with a time range)",
        )


def _check_increasing(what: str, t: np.ndarray, source: str, topic: str) -> None:
    dt = np.diff(t)
    bad = np.flatnonzero(dt <= 0)
    if bad.size:
        k = int(bad[0])
        raise PayloadIdError(
            f"{source}: time stamps of {topic} do not increase at {bad.size} of {t.size} {what} samples, "
            f"first at sample {k + 1} (t = {t[k + 1]:.9f} s after {t[k]:.9f} s)",
            "record with header stamps from one monotonic clock (or zero stamps so the log time is used)",
        )


def _scale_vector(effort_scale, names: list[str], source: str) -> np.ndarray:
    """effort_scale: None, a scalar, a sequence in the order of `names`, or a mapping name -> gain."""
    n = len(names)
    if effort_scale is None:
        return np.ones(n)
    if isinstance(effort_scale, Mapping):
        unknown = [k for k in effort_scale if k not in names]
        if unknown:
            raise PayloadIdError(f"{source}: effort_scale names joints {unknown} that the joint states do not have",
                                 f"use names among {names}")
        return np.array([float(effort_scale.get(j, 1.0)) for j in names])
    return check_drive_gains(effort_scale, n, f"{source}: effort_scale")


def _open_reader(path: Path):
    if not path.exists():
        raise PayloadIdError(f"bag {path} does not exist", "check the --bag path")
    is_bag_dir = path.is_dir() and (path / "metadata.yaml").is_file()
    is_storage_file = path.is_file() and path.suffix in (".mcap", ".db3")
    if not (is_bag_dir or is_storage_file):
        what = "directory without metadata.yaml" if path.is_dir() else "file"
        raise PayloadIdError(f"{path} is not a rosbag2 bag (a {what})",
                             "give a rosbag2 directory (mcap or sqlite3 storage) as written by `ros2 bag record`")
    try:
        reader = AnyReader([path], default_typestore=_typestore())
        reader.open()
    except Exception as err:  # noqa: BLE001 - rosbags raises several error types for unreadable bags
        raise _damaged(str(path), err) from err
    return reader


def _damaged(source: str, err: Exception, where: str = "") -> PayloadIdError:
    """A bag whose bytes do not decode (flipped bits, a half-copied chunk, another format inside)."""
    detail = " ".join(str(err).split()) or type(err).__name__
    return PayloadIdError(f"cannot read bag {source}{where}: it is damaged ({detail})",
                          "give an intact rosbag2 directory (mcap or sqlite3 storage); re-copy or re-record it")


def _messages(reader, conns, source: str, topic: str) -> Iterator[tuple[int, int, Any]]:
    """(index, log time ns, deserialized message) of `conns`; damage anywhere becomes PayloadIdError.

    rosbags reports corrupt records and CDR payloads with its own errors, but also with OverflowError,
    UnicodeDecodeError or sqlite3 errors from deeper down: every failure of the reader is the bag's."""
    iterator = iter(reader.messages(connections=conns))
    k = 0
    while True:
        try:
            item = next(iterator, None)
            if item is None:
                return
            conn, log_ns, raw = item
            msg = reader.deserialize(raw, conn.msgtype)
        except Exception as err:  # noqa: BLE001 - see the docstring
            raise _damaged(source, err, f" ({topic} message {k})") from err
        yield k, log_ns, msg
        k += 1


def _topic_connections(reader, topic: str, msgtype: str, source: str, required: bool, flag: str):
    conns = [c for c in reader.connections if c.topic == topic]
    if not conns:
        if not required:
            return []
        have = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
        raise PayloadIdError(f"{source} has no topic {topic}; it has: {', '.join(have) or 'no topics'}",
                             f"record {topic} or name the right topic with {flag}")
    wrong = sorted({c.msgtype for c in conns if c.msgtype != msgtype})
    if wrong:
        raise PayloadIdError(f"{source}: topic {topic} carries {', '.join(wrong)}, expected {msgtype}",
                             f"name a {msgtype} topic with {flag}")
    return conns


def _read_joint_states(reader, conns, source: str, topic: str) -> JointSamples:
    names: list[str] | None = None
    t, q, qd, eff = [], [], [], []
    has_velocity: bool | None = None
    for k, log_ns, msg in _messages(reader, conns, source, topic):
        stamp = _stamp(msg.header, log_ns)
        msg_names = list(msg.name)
        if names is None:
            names = msg_names
            if not names:
                raise PayloadIdError(f"{source}: the first {topic} message names no joints",
                                     "record joint states of the robot's joints (sensor_msgs/JointState.name)")
            if len(set(names)) != len(names):
                raise PayloadIdError(f"{source}: {topic} names a joint twice: {names}",
                                     "record each joint once per JointState message")
        elif msg_names != names:
            if set(msg_names) == set(names) and len(msg_names) == len(names):
                # Same joints in another order: reorder by name (DESIGN: entries matched by name).
                perm = [msg_names.index(j) for j in names]
            else:
                lacking = [j for j in names if j not in msg_names]
                detail = f"lacks {lacking}" if lacking else f"names {msg_names} instead of {names}"
                raise PayloadIdError(
                    f"{source}: {topic} message {k} (t = {stamp:.6f} s) {detail}; "
                    "the joint list changes within the bag",
                    "record every joint in every JointState message (one joint_state_broadcaster for the arm), "
                    "or give another --joint-states-topic",
                )
        pos, vel = np.asarray(msg.position, float), np.asarray(msg.velocity, float)
        effort = np.asarray(msg.effort, float)
        if pos.size != len(msg_names) or effort.size != len(msg_names):
            missing = "position" if pos.size != len(msg_names) else "effort"
            raise PayloadIdError(
                f"{source}: {topic} message {k} (t = {stamp:.6f} s) has {pos.size} positions and {effort.size} efforts "
                f"for {len(msg_names)} joints ({missing} missing)",
                "identification needs position and effort of every joint: enable the effort state interface",
            )
        vel_ok = vel.size == len(msg_names)
        if has_velocity is None:
            has_velocity = vel_ok
        elif has_velocity != vel_ok:
            raise PayloadIdError(f"{source}: {topic} message {k} (t = {stamp:.6f} s) has {vel.size} velocities, "
                                 f"unlike the earlier messages",
                                 "record velocities in all JointState messages or in none")
        if msg_names != names:
            pos, effort = pos[perm], effort[perm]
            vel = vel[perm] if vel_ok else vel
        t.append(stamp)
        q.append(pos)
        eff.append(effort)
        if vel_ok:
            qd.append(vel)
    if names is None:
        raise PayloadIdError(f"{source}: topic {topic} holds no messages", "record the joint states during the motion")
    t_arr = np.array(t)
    q_arr, eff_arr = np.array(q), np.array(eff)
    qd_arr = np.array(qd) if has_velocity else None
    _check_finite("joint state", t_arr, {"position": q_arr, "velocity": qd_arr, "effort": eff_arr}, names,
                  f"{source} {topic}")
    _check_increasing("joint state", t_arr, source, topic)
    return JointSamples(t_arr, names, q_arr, qd_arr, eff_arr)


def _read_trajectories(reader, conns, source: str, topic: str, notes: list[Note]) -> list[CommandedTrajectory]:
    trajectories = []
    for k, log_ns, msg in _messages(reader, conns, source, topic):
        start = _stamp(msg.header, log_ns)
        names = list(msg.joint_names)
        if not msg.points:
            notes.append(Note(NoteCode.IO_EMPTY_TRAJECTORY_IGNORED,
                              f"{topic} message {k} at t = {start:.3f} s has no points (a stop request) "
                              "and was ignored"))
            continue
        n = len(names)
        tfs = np.array([_duration(p.time_from_start) for p in msg.points])
        pos = [np.asarray(p.positions, float) for p in msg.points]
        if n == 0 or any(p.size != n for p in pos):
            raise PayloadIdError(
                f"{source}: {topic} message {k} (start {start:.6f} s) has points whose positions do not match "
                f"its {n} joint names", "send one position per joint in every trajectory point")
        vel = [np.asarray(p.velocities, float) for p in msg.points]
        acc = [np.asarray(p.accelerations, float) for p in msg.points]
        # The controller interpolates with velocities/accelerations only where both ends carry them.
        vel_arr = np.array(vel) if all(v.size == n for v in vel) else None
        acc_arr = np.array(acc) if vel_arr is not None and all(a.size == n for a in acc) else None
        if vel_arr is None and any(v.size for v in vel):
            notes.append(Note(NoteCode.IO_PARTIAL_DERIVATIVES_IGNORED,
                              f"{topic} message {k}: velocities on only some points were ignored "
                              "(linear interpolation)"))
        if acc_arr is None and any(a.size for a in acc):
            notes.append(Note(NoteCode.IO_PARTIAL_DERIVATIVES_IGNORED,
                              f"{topic} message {k}: accelerations on only some points were ignored "
                              "(cubic/linear interpolation)"))
        pos_arr = np.array(pos)
        _check_finite("trajectory point", tfs, {"positions": pos_arr, "velocities": vel_arr,
                                                "accelerations": acc_arr}, names, f"{source} {topic} message {k}")
        if np.any(tfs < 0):
            raise PayloadIdError(f"{source}: {topic} message {k} has a negative time_from_start",
                                 "time_from_start must be >= 0")
        _check_increasing("trajectory point", tfs, source, f"{topic} message {k} (time_from_start)")
        trajectories.append(CommandedTrajectory(start, names, tfs, pos_arr, vel_arr, acc_arr))
    if not trajectories:
        raise PayloadIdError(f"{source}: topic {topic} holds no trajectory with points",
                             "record the commanded trajectory while the excitation plays, or use measured signals")
    return trajectories


def _read_wrench(reader, conns, source: str, topic: str) -> WrenchSamples:
    t: list[float] = []
    force: list[tuple[float, float, float]] = []
    torque: list[tuple[float, float, float]] = []
    frame_id = ""
    for _, log_ns, msg in _messages(reader, conns, source, topic):
        if not t:
            frame_id = msg.header.frame_id
        t.append(_stamp(msg.header, log_ns))
        f, m = msg.wrench.force, msg.wrench.torque
        force.append((f.x, f.y, f.z))
        torque.append((m.x, m.y, m.z))
    if not t:
        raise PayloadIdError(f"{source}: topic {topic} holds no messages",
                             "record the F/T sensor during the motion, or do not ask for the sensor")
    t_arr, f_arr, m_arr = np.array(t), np.array(force, float), np.array(torque, float)
    _check_finite("wrench", t_arr, {"force": f_arr, "torque": m_arr}, ["x", "y", "z"], f"{source} {topic}")
    _check_increasing("wrench", t_arr, source, topic)
    return WrenchSamples(t_arr, frame_id, f_arr, m_arr)


def _custom_data(path: Path) -> dict:
    """The bag's metadata custom_data (write_bag's notes and effort unit); {} for other bags."""
    meta = path / "metadata.yaml" if path.is_dir() else None
    if meta is None or not meta.is_file():
        return {}
    try:
        info = yaml.safe_load(meta.read_text()).get("rosbag2_bagfile_information", {})
        return dict(info.get("custom_data") or {})
    except Exception:  # noqa: BLE001 - an odd metadata file only loses the extras; the reader reports real damage
        return {}


def _read_notes(custom: dict) -> list[Note]:
    text = custom.get(_NOTES_KEY)
    return _notes_from_custom_data(text) if text else []


def read_effort_unit(path: str | os.PathLike) -> EffortUnit:
    """The effort unit a bag declares (write_bag, `payload-id simulate`); UNKNOWN when it declares none."""
    value = _custom_data(Path(path)).get(_EFFORT_UNIT_KEY)
    try:
        return EffortUnit.parse(value)
    except PayloadIdError as err:
        raise PayloadIdError(f"{path}: {err.problem}", err.fix) from None


def _notes_to_custom_data(notes) -> str:
    return json.dumps([Note.from_any(n).to_dict() for n in notes], ensure_ascii=False)


def _notes_from_custom_data(text: str) -> list[Note]:
    try:
        items = json.loads(text)
    except ValueError:
        items = None
    if not isinstance(items, list):     # written before codes existed: one note per line
        items = [line for line in text.split("\n") if line]
    return [Note.from_any(item) for item in items]


def read_bag(path: str | os.PathLike, *, joint_topic: str = JOINT_TOPIC, trajectory_topic: str = TRAJECTORY_TOPIC,
             wrench_topic: str = WRENCH_TOPIC, effort_scale=None, require_trajectory: bool = False,
             require_wrench: bool = False, joint_names: Sequence[str] | None = None) -> Recording:
    """Read a rosbag2 bag (directory, or a bare .mcap/.db3 file) into a Recording.

    Args:
        joint_topic, trajectory_topic, wrench_topic: topic names (DESIGN.md bag contract).
        effort_scale: drive gains, tau = effort * scale: scalar, sequence (in the order of
            `joint_names` when given, else of the JointState names) or mapping joint -> gain.
        require_trajectory, require_wrench: a missing topic is an error (else it is left out).
        joint_names: keep only these joints, in this order (e.g. model.joint_names); the bag must
            have them all.
    """
    path = Path(path)
    source = str(path)
    reader = _open_reader(path)
    custom = _custom_data(path)
    notes = _read_notes(custom)
    unit = read_effort_unit(path)
    try:
        jconns = _topic_connections(reader, joint_topic, JOINT_STATE, source, True, "--joint-states-topic")
        joints = _read_joint_states(reader, jconns, source, joint_topic)
        if joint_names is not None:
            joint_names = list(joint_names)
            lacking = [j for j in joint_names if j not in joints.joint_names]
            if lacking:
                raise PayloadIdError(f"{source}: {joint_topic} lacks joints {lacking} (it has {joints.joint_names})",
                                     "record all the robot's joints or pass the URDF of the recorded robot")
            joints = joints.reordered(np.array([joints.joint_names.index(j) for j in joint_names]), joint_names)
        scale = _scale_vector(effort_scale, joints.joint_names, source)
        joints = JointSamples(joints.t, joints.joint_names, joints.q, joints.qd, joints.tau * scale,
                              joints.temperature, unit, scale)
        tconns = _topic_connections(reader, trajectory_topic, JOINT_TRAJECTORY, source, require_trajectory,
                                    "--trajectory-topic")
        commanded = _read_trajectories(reader, tconns, source, trajectory_topic, notes) if tconns else []
        wconns = _topic_connections(reader, wrench_topic, WRENCH_STAMPED, source, require_wrench, "--wrench-topic")
        wrench = _read_wrench(reader, wconns, source, wrench_topic) if wconns else None
    finally:
        reader.close()
    return Recording(joints=joints, commanded=commanded, wrench=wrench, source=source, notes=notes)


# -- writing ------------------------------------------------------------------------------------

def _ns(t: float) -> int:
    return int(round(float(t) * 1e9))


def _time_msg(types, t_ns: int):
    sec, nsec = divmod(t_ns, 1_000_000_000)
    return types["builtin_interfaces/msg/Time"](sec=int(sec), nanosec=int(nsec))


def write_bag(path: str | os.PathLike, recording: Recording, storage: str = "mcap", *,
              joint_topic: str = JOINT_TOPIC, trajectory_topic: str = TRAJECTORY_TOPIC,
              wrench_topic: str = WRENCH_TOPIC, effort_scale=None, effort_unit: EffortUnit | str | None = None) -> Path:
    """Write `recording` as a rosbag2 directory at `path` (replacing it), all or nothing.

    Effort written = tau / effort_scale (the inverse of read_bag). `effort_unit` declares what the
    written efforts are (metadata custom_data, read back by read_bag); None: CURRENT when gains other
    than 1 divide the torques, else the recording's own unit (undeclared when UNKNOWN). Log time of each message =
    its header stamp, so the bag is a deterministic function of the recording (same bytes every
    time). `storage`: 'mcap' or 'sqlite3'.
    """
    plugins = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
    if storage not in plugins:
        raise PayloadIdError(f"unknown bag storage '{storage}'", "use mcap or sqlite3")
    ts = _typestore()
    types = ts.types
    joints = recording.joints
    names = list(joints.joint_names)
    scale = _scale_vector(effort_scale, names, "write_bag")
    effort = joints.tau / scale
    if effort_unit is None:
        unit = EffortUnit.CURRENT if not np.all(scale == 1.0) else joints.effort_unit
    else:
        unit = EffortUnit.parse(effort_unit)

    # (log time ns, connection index, payload); sorted by time, stable across topics by index.
    messages: list[tuple[int, int, bytes]] = []
    JointState, Header = types[JOINT_STATE], types["std_msgs/msg/Header"]
    empty = np.zeros(0)
    for k in range(len(joints)):
        t_ns = _ns(joints.t[k])
        msg = JointState(header=Header(stamp=_time_msg(types, t_ns), frame_id=""), name=names,
                         position=np.ascontiguousarray(joints.q[k]),
                         velocity=empty if joints.qd is None else np.ascontiguousarray(joints.qd[k]),
                         effort=np.ascontiguousarray(effort[k]))
        messages.append((t_ns, 0, bytes(ts.serialize_cdr(msg, JOINT_STATE))))

    Traj, Point = types[JOINT_TRAJECTORY], types["trajectory_msgs/msg/JointTrajectoryPoint"]
    Duration = types["builtin_interfaces/msg/Duration"]
    for traj in recording.commanded:
        m, n_traj = traj.time_from_start.size, len(traj.joint_names)
        for field in ("positions", "velocities", "accelerations"):
            arr = getattr(traj, field)
            if arr is not None and arr.shape != (m, n_traj):
                raise PayloadIdError(f"write_bag: a commanded trajectory has {field} of shape {arr.shape}, "
                                     f"expected {(m, n_traj)}", "give one value per joint and point")
        t_ns = _ns(traj.start_time)
        points = []
        for i, tfs in enumerate(traj.time_from_start):
            sec, nsec = divmod(_ns(tfs), 1_000_000_000)
            points.append(Point(
                positions=np.ascontiguousarray(traj.positions[i]),
                velocities=empty if traj.velocities is None else np.ascontiguousarray(traj.velocities[i]),
                accelerations=empty if traj.accelerations is None else np.ascontiguousarray(traj.accelerations[i]),
                effort=empty, time_from_start=Duration(sec=int(sec), nanosec=int(nsec))))
        msg = Traj(header=Header(stamp=_time_msg(types, t_ns), frame_id=""), joint_names=list(traj.joint_names),
                   points=points)
        messages.append((t_ns, 1, bytes(ts.serialize_cdr(msg, JOINT_TRAJECTORY))))

    if recording.wrench is not None:
        w = recording.wrench
        WS, Wrench, Vec = types[WRENCH_STAMPED], types["geometry_msgs/msg/Wrench"], types["geometry_msgs/msg/Vector3"]
        for k in range(w.t.size):
            t_ns = _ns(w.t[k])
            f, m = w.force[k], w.torque[k]
            msg = WS(header=Header(stamp=_time_msg(types, t_ns), frame_id=w.frame_id),
                     wrench=Wrench(force=Vec(x=float(f[0]), y=float(f[1]), z=float(f[2])),
                                   torque=Vec(x=float(m[0]), y=float(m[1]), z=float(m[2]))))
            messages.append((t_ns, 2, bytes(ts.serialize_cdr(msg, WRENCH_STAMPED))))
    messages.sort(key=lambda item: (item[0], item[1]))

    path = Path(path)
    with atomic_directory(path) as tmp:
        writer = Writer(tmp, version=9, storage_plugin=plugins[storage])
        if recording.notes:
            writer.set_custom_data(_NOTES_KEY, _notes_to_custom_data(recording.notes))
        if unit is not EffortUnit.UNKNOWN:
            writer.set_custom_data(_EFFORT_UNIT_KEY, unit.value)
        writer.open()
        try:
            # By the messages' topic index (0 joints, 1 trajectory, 2 wrench), for the topics the recording has.
            conns: dict[int, Connection] = {0: writer.add_connection(joint_topic, JOINT_STATE, typestore=ts)}
            if recording.commanded:
                conns[1] = writer.add_connection(trajectory_topic, JOINT_TRAJECTORY, typestore=ts)
            if recording.wrench is not None:
                conns[2] = writer.add_connection(wrench_topic, WRENCH_STAMPED, typestore=ts)
            for t_ns, idx, data in messages:
                writer.write(conns[idx], t_ns, data)
        finally:
            writer.close()
    return path
