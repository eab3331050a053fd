"""ROS messages <-> core types. The nodes stay thin: every field mapping lives here.

Nothing in this module keeps state; it needs the generated message packages (sensor_msgs,
trajectory_msgs, geometry_msgs, visualization_msgs, rosgraph_msgs, payload_id_msgs) but no running ROS
graph, so it is unit-tested in-process. The controllers' optional service types (ur_msgs, franka_msgs)
are not imported here: their fills take the request the caller made.
"""

from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Vector3, WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from payload_id_core.dynamics import from_mass_com_inertia
from payload_id_core.monitor import Event
from payload_id_core.notes import Note
from payload_id_core.payload import COM_SPHERE_DIAMETER, LABEL_SIZE, marker_geometry, mass_label
from payload_id_core.payload_estimate import INERTIA_KEYS, PayloadEstimate, Quality, readable_dict, readable_vector
from payload_id_core.signals import CommandedTrajectory
from payload_id_msgs.action import Excite, Identify
from payload_id_msgs.msg import PayloadEstimate as PayloadEstimateMsg
from payload_id_msgs.msg import PayloadEvent, PayloadParameters

NAN = float("nan")


# -- time -----------------------------------------------------------------------------------------
def time_to_sec(stamp: Time) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def sec_to_time(t: float) -> Time:
    sec = math.floor(t)
    return Time(sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def sec_to_duration(t: float) -> Duration:
    sec = math.floor(t)
    return Duration(sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def duration_to_sec(d: Duration) -> float:
    return d.sec + 1e-9 * d.nanosec


# -- trajectories ---------------------------------------------------------------------------------
def commanded_to_msg(cmd: CommandedTrajectory, stamp: float | None = None) -> JointTrajectory:
    """JointTrajectory with positions/velocities/accelerations. `stamp` None -> zero stamp ("start now",
    as joint_trajectory_controller reads it); else the absolute start time in seconds."""
    msg = JointTrajectory()
    msg.joint_names = list(cmd.joint_names)
    if stamp is not None:
        msg.header.stamp = sec_to_time(stamp)
    for k, tk in enumerate(cmd.time_from_start):
        p = JointTrajectoryPoint()
        p.positions = cmd.positions[k].tolist()
        if cmd.velocities is not None:
            p.velocities = cmd.velocities[k].tolist()
        if cmd.accelerations is not None:
            p.accelerations = cmd.accelerations[k].tolist()
        p.time_from_start = sec_to_duration(float(tk))
        msg.points.append(p)
    return msg


def msg_to_commanded(msg: JointTrajectory, receive_time: float) -> CommandedTrajectory:
    """The controller's reading of a JointTrajectory: a zero header stamp means it starts on receipt."""
    start = time_to_sec(msg.header.stamp)
    if start == 0.0:
        start = receive_time
    pts = msg.points
    tfs = np.array([duration_to_sec(p.time_from_start) for p in pts])
    pos = np.array([list(p.positions) for p in pts], dtype=float)

    def column(field: str):
        rows = [list(getattr(p, field)) for p in pts]
        return np.array(rows, dtype=float) if rows and all(len(r) == len(msg.joint_names) for r in rows) else None

    return CommandedTrajectory(start, list(msg.joint_names), tfs, pos, column("velocities"), column("accelerations"))


# -- sensor streams -------------------------------------------------------------------------------
def joint_state_msg(stamp: Time, names, q: np.ndarray, qd: np.ndarray, effort: np.ndarray) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = q.tolist()
    msg.velocity = qd.tolist()
    msg.effort = effort.tolist()
    return msg


def wrench_msg(stamp: Time, frame: str, wrench: np.ndarray) -> WrenchStamped:
    """WrenchStamped from [Fx, Fy, Fz, Tx, Ty, Tz]."""
    msg = WrenchStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    f, tq = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, tq.x, tq.y, tq.z = (float(v) for v in wrench)
    return msg


def wrench_msgs(t: np.ndarray, frame: str, wrenches: np.ndarray) -> list[WrenchStamped]:
    """One WrenchStamped per row of `wrenches` (N, 6), stamped t (N,) s."""
    return [wrench_msg(sec_to_time(float(t[k])), frame, wrenches[k]) for k in range(t.size)]


def clock_msg(stamp: Time) -> Clock:
    return Clock(clock=stamp)


# -- payload estimates ----------------------------------------------------------------------------
def parameters_msg(est: PayloadEstimate) -> PayloadParameters:
    val = readable_vector(est.phi)
    std = est.published_std()
    known = est.readable_identifiable()
    p = PayloadParameters()
    p.frame_id = est.frame
    p.mass = float(val[0])
    p.com = Vector3(x=float(val[1]), y=float(val[2]), z=float(val[3]))
    for k, key in enumerate(INERTIA_KEYS):
        setattr(p, key, float(val[4 + k]))
        setattr(p, f"{key}_std", float(std[4 + k]))
    p.mass_std = float(std[0])
    p.com_std = Vector3(x=float(std[1]), y=float(std[2]), z=float(std[3]))
    p.mass_identified = bool(known[0])
    p.com_identified = bool(all(known[1:4]))
    p.inertia_identified = bool(known[4])
    return p


def parameters_to_dict(p: PayloadParameters) -> dict:
    """payload.yaml's frame, mass, com, inertia and std (as PayloadEstimate.to_dict writes them) of a message."""
    value = [p.mass, p.com.x, p.com.y, p.com.z, *(getattr(p, k) for k in INERTIA_KEYS)]
    std = [p.mass_std, p.com_std.x, p.com_std.y, p.com_std.z, *(getattr(p, f"{k}_std") for k in INERTIA_KEYS)]
    known = [bool(p.mass_identified), *[bool(p.com_identified)] * 3, *[bool(p.inertia_identified)] * 6]
    return readable_dict(p.frame_id, value, std, known)


def estimate_to_msg(est: PayloadEstimate, stamp: float, convergence_measure: float | None = None) -> PayloadEstimateMsg:
    msg = PayloadEstimateMsg()
    msg.header.stamp = sec_to_time(stamp)
    msg.header.frame_id = est.frame
    msg.payload = parameters_msg(est)
    msg.method = est.method
    msg.converged = bool(est.converged)
    msg.convergence_measure = float(relative_mass_std(est) if convergence_measure is None else convergence_measure)
    msg.convergence_time = float(est.convergence_time)
    msg.physically_consistent = bool(est.physically_consistent)
    msg.quality = est.quality.value
    msg.quality_reasons = [str(r) for r in est.quality_reasons]
    fill_prior(msg, est)
    fill_narrowed_and_notes(msg, est)
    return msg


def fill_prior(msg: PayloadEstimateMsg, est: PayloadEstimate) -> None:
    """The estimate's priors (PayloadEstimate.prior: what was given, as PayloadPrior.to_dict writes it) and what became
    of them (pinned, bounded, not applied and why) into the message, under the Identify goal's names."""
    prior = est.prior or {}
    box = prior.get("bounding_box")
    msg.bounding_box = [float(v) for v in (*box["min"], *box["max"])] if box else []
    msg.known_mass = float(prior.get("known_mass") or 0.0)
    msg.known_mass_std = float(prior.get("known_mass_std") or 0.0)
    msg.prior_pinned = [str(p) for p in est.prior_pinned]
    msg.prior_bounded = [str(p) for p in est.prior_bounded]
    msg.prior_not_applied = [str(part) for part in est.prior_not_applied]
    msg.prior_not_applied_reasons = [str(why) for why in est.prior_not_applied.values()]


def fill_narrowed_and_notes(msg: PayloadEstimateMsg, est: PayloadEstimate) -> None:
    """What payload.yaml says beyond the numbers and the priors: the entries physical consistency narrowed (σ ratio)
    and the notes (code, sentence). Without them a ROS user read an inertia σ that J ⪰ 0, not the motion, had narrowed
    as the motion's own (h194), and never saw why a CoM was undetermined or a prior pinned what it did."""
    msg.physically_narrowed = [str(k) for k in est.physically_narrowed]
    msg.physically_narrowed_ratio = [float(r) for r in est.physically_narrowed.values()]
    notes = [Note.from_any(n) for n in est.notes]
    msg.note_codes = [n.code.value for n in notes]
    msg.notes = [n.text for n in notes]


def narrowed_and_notes_of_msg(msg: PayloadEstimateMsg) -> dict:
    """PayloadEstimate's physically_narrowed and notes of a message (a code this release does not know reads as info,
    as payload.yaml's do)."""
    return {"physically_narrowed": dict(zip(msg.physically_narrowed, map(float, msg.physically_narrowed_ratio),
                                            strict=True)),
            "notes": [Note.from_any({"code": c, "text": t}) for c, t in zip(msg.note_codes, msg.notes, strict=True)]}


def payload_yaml_context(msg: PayloadEstimateMsg) -> dict:
    """payload.yaml's prior:, physically_narrowed: and notes: entries (PayloadEstimate.to_dict's, those present) as a
    message carries them: what `identify --ros --out` writes beside the numbers."""
    d = msg_to_estimate(msg).to_dict()
    return {k: d[k] for k in ("prior", "physically_narrowed", "notes") if k in d}


def prior_of_msg(msg: PayloadEstimateMsg) -> dict:
    """PayloadEstimate's prior fields (prior, prior_pinned, prior_bounded, prior_not_applied) of a message."""
    prior: dict = {}
    if len(msg.bounding_box) == 6:
        box = [float(v) for v in msg.bounding_box]
        prior["bounding_box"] = {"min": box[:3], "max": box[3:]}
    if msg.known_mass > 0:
        prior["known_mass"] = float(msg.known_mass)
        prior["known_mass_std"] = float(msg.known_mass_std)
    return {"prior": prior or None, "prior_pinned": list(msg.prior_pinned), "prior_bounded": list(msg.prior_bounded),
            "prior_not_applied": dict(zip(msg.prior_not_applied, msg.prior_not_applied_reasons, strict=True))}


def payload_event_msg(event: Event, frame: str) -> PayloadEvent:
    msg = PayloadEvent()
    msg.header.stamp = sec_to_time(event.t_change)
    msg.header.frame_id = frame
    msg.kind = event.kind.value
    msg.t_change_located = bool(event.t_change_located)
    msg.alarm_delay = float(event.t_alarm - event.t_change)
    msg.decision_delay = float(event.t_verdict - event.t_change)
    msg.delta_mass = float(event.delta_mass)
    msg.delta_mass_std = float(event.delta_mass_std)
    msg.delta_first_moment = Vector3(x=float(event.delta_phi[1]), y=float(event.delta_phi[2]),
                                     z=float(event.delta_phi[3]))
    msg.reason = event.reason
    return msg


def msg_to_estimate(msg: PayloadEstimateMsg) -> PayloadEstimate:
    """Back to the core type (covariance: diagonal in the readable parameters is not invertible to φ; NaN)."""
    p = msg.payload
    ic = np.array([[p.ixx, p.ixy, p.ixz], [p.ixy, p.iyy, p.iyz], [p.ixz, p.iyz, p.izz]])
    phi = from_mass_com_inertia(p.mass, [p.com.x, p.com.y, p.com.z], ic)
    ident = np.array([p.mass_identified] + [p.com_identified] * 3 + [p.inertia_identified] * 6)
    return PayloadEstimate(frame=p.frame_id or msg.header.frame_id, phi=phi, covariance=np.full((10, 10), np.nan),
                           method=msg.method, identifiable=ident, converged=msg.converged,
                           convergence_time=msg.convergence_time, physically_consistent=msg.physically_consistent,
                           quality=Quality(msg.quality or Quality.OK.value),   # empty: a sender without the field
                           quality_reasons=list(msg.quality_reasons), **prior_of_msg(msg),
                           **narrowed_and_notes_of_msg(msg))


def payload_request_values(p: PayloadParameters) -> tuple[float, list[float], list[float], str]:
    """(mass, CoM, inertia about the CoM [ixx, ixy, ixz, iyy, iyz, izz], frame) of a SetPayload request."""
    return (float(p.mass), [p.com.x, p.com.y, p.com.z], [p.ixx, p.ixy, p.ixz, p.iyy, p.iyz, p.izz], p.frame_id)


def relative_mass_std(est: PayloadEstimate) -> float:
    """The convergence measure of PayloadEstimate.msg: σ(mass) / |mass| (inf while the mass is ~0)."""
    std = est.readable_std()[0]
    m = abs(est.mass)
    if not np.isfinite(std):
        return NAN
    return float(std / m) if m > 1e-9 else math.inf


# -- action feedback and results ------------------------------------------------------------------
def identify_feedback(elapsed: float, estimate: PayloadEstimateMsg | None = None,
                      convergence_measure: float = 0.0) -> Identify.Feedback:
    """Feedback of the Identify action; without an estimate (moving to the start pose) only the time."""
    fb = Identify.Feedback()
    fb.elapsed = float(elapsed)
    if estimate is not None:
        fb.estimate = estimate
        fb.convergence_measure = float(convergence_measure)
    return fb


def identify_result(message: str, estimate: PayloadEstimateMsg | None = None, *, converged: bool = False,
                    convergence_time: float = NAN, torque_rmse_before=(), torque_rmse_after=(),
                    applied_to_controller: bool = False) -> Identify.Result:
    """Result of the Identify action; an aborted goal's carries only the message (convergence_time NaN)."""
    res = Identify.Result()
    res.message = message
    if estimate is not None:
        res.estimate = estimate
    res.converged = bool(converged)
    res.convergence_time = float(convergence_time)
    res.torque_rmse_before = [float(x) for x in torque_rmse_before]
    res.torque_rmse_after = [float(x) for x in torque_rmse_after]
    res.applied_to_controller = bool(applied_to_controller)
    return res


def excite_feedback(phase: str, progress: float, elapsed: float) -> Excite.Feedback:
    return Excite.Feedback(phase=phase, progress=float(progress), elapsed=float(elapsed))


def excite_result(success: bool, message: str, duration: float = 0.0) -> Excite.Result:
    return Excite.Result(success=bool(success), message=message, duration=float(duration))


# -- the controllers' payload services (request types of optional packages, made by the caller) ----
def fill_ur_set_payload(req, payload):
    """ur_msgs/srv/SetPayload from a controller_payload.PayloadForController (mass, CoM, inertia about the CoM,
    already in the tool flange frame). ur_controllers >= 7.0.0: `payload` is a geometry_msgs/Inertia
    (m, com, ixx..izz about the CoM), `transition_time` stays zero (the new payload at once); older ur_msgs:
    `mass` and `center_of_gravity` only, plus ixx..iyz where a release had them flat."""
    com = [float(c) for c in payload.com]
    inertia = np.asarray(payload.inertia, dtype=float)
    elements = {"ixx": inertia[0, 0], "ixy": inertia[0, 1], "ixz": inertia[0, 2],
                "iyy": inertia[1, 1], "iyz": inertia[1, 2], "izz": inertia[2, 2]}
    if hasattr(req, "payload"):
        target = req.payload
        target.m = float(payload.mass)
        target.com.x, target.com.y, target.com.z = com
    else:
        target = req
        req.mass = float(payload.mass)
        req.center_of_gravity.x, req.center_of_gravity.y, req.center_of_gravity.z = com
    for name, value in elements.items():
        if hasattr(target, name):
            setattr(target, name, float(value))
    return req


def fill_franka_set_load(req, payload):
    """franka_msgs/srv/SetLoad from a controller_payload.PayloadForController (in the flange frame): mass,
    centre of mass, inertia about it (3x3 column-major; the tensor is symmetric, so row-major is the same)."""
    req.mass = float(payload.mass)
    req.center_of_mass = [float(c) for c in payload.com]
    req.load_inertia = [float(x) for x in np.asarray(payload.inertia, dtype=float).reshape(-1, order="F")]
    return req


# -- rviz markers ---------------------------------------------------------------------------------
def markers_msg(est: PayloadEstimate, stamp: float, ns: str = "payload") -> MarkerArray:
    """CoM sphere, equivalent inertia box (principal axes), a "mass ± σ" text and, when the estimate carries one, the
    bounding box the user gave (a line-list wireframe), in the payload frame.

    The numbers come from payload_id_core.payload.markers.marker_geometry, which the report's drawing
    uses too (test_marker_drawing checks that both put the box in the same place)."""
    geo = marker_geometry(est)
    out = MarkerArray()

    def base(mid: int, kind: int, position) -> Marker:
        mk = Marker()
        mk.header.frame_id = geo.frame
        mk.header.stamp = sec_to_time(stamp)
        mk.ns = ns
        mk.id = mid
        mk.type = kind
        mk.action = Marker.ADD
        mk.pose.position.x, mk.pose.position.y, mk.pose.position.z = (float(v) for v in position)
        mk.pose.orientation.w = 1.0
        return mk

    sphere = base(0, Marker.SPHERE, geo.com)
    sphere.scale.x = sphere.scale.y = sphere.scale.z = COM_SPHERE_DIAMETER
    sphere.color.r, sphere.color.g, sphere.color.b, sphere.color.a = 1.0, 0.2, 0.1, 1.0
    out.markers.append(sphere)

    box = base(1, Marker.CUBE, geo.com)
    q = box.pose.orientation
    q.x, q.y, q.z, q.w = geo.box_quaternion_xyzw
    box.scale.x, box.scale.y, box.scale.z = (float(d) for d in geo.box_sides)
    # A suspect estimate's box is orange, an estimate the project stands behind blue.
    box.color.r, box.color.g, box.color.b, box.color.a = (1.0, 0.6, 0.0, 0.4) if geo.suspect else (0.2, 0.5, 1.0, 0.4)
    out.markers.append(box)

    text = base(2, Marker.TEXT_VIEW_FACING, geo.label_position)
    text.scale.z = LABEL_SIZE
    text.color.r = text.color.g = text.color.b = text.color.a = 1.0
    text.text = geo.label
    out.markers.append(text)

    corners = geo.prior_box_corners()
    if corners is not None:   # the bounding box the user gave (identify --bounding-box): a green wireframe
        wire = base(3, Marker.LINE_LIST, (0.0, 0.0, 0.0))
        wire.scale.x = 0.002
        wire.color.r, wire.color.g, wire.color.b, wire.color.a = 0.1, 0.8, 0.2, 0.8
        for i, j in geo.prior_box_edges():
            for k in (i, j):
                point = Point()
                point.x, point.y, point.z = (float(v) for v in corners[k])
                wire.points.append(point)
        out.markers.append(wire)
    return out


def mass_text(mass: float, std: float) -> str:
    return mass_label(mass, std)

