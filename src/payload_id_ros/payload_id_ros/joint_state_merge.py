"""JointState messages -> complete samples of the model's joints, in time order.

A robot cell often merges several drivers' joint states on one topic (the arm's, a gripper's, another
arm's). A message naming none of the model's joints is ignored. One naming some of them is merged:
its values are held, and a sample is made once every model joint has been heard since the last sample
(stamped with the newest part); a part no newer than the last sample is ignored. A malformed message
(position, velocity or effort of another length than `name`, a name given twice, a NaN or Inf value of a
model joint) or a complete one out of time order (stamped at or before the last sample: a duplicate, a
reordered delivery, a clock jumping back; or stamped far ahead of the receiver's clock) is dropped, and
the reason returned so the caller can count and report it. Time order starts anew when the receiver's
own clock goes back past the last sample (a restarted simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
from sensor_msgs.msg import JointState

from payload_id_core.monitor import PUBLISHER_SILENCE_S, publisher_wait


class DropReason(str, Enum):
    """Why an input message was dropped. The value names it in logs and counts."""

    RAGGED = "ragged"                  # position / velocity / effort length differs from name's
    REPEATED_NAME = "repeated_name"    # a joint named twice in one message
    NON_FINITE = "non_finite"          # NaN or Inf in a value the node uses
    DUPLICATE = "duplicate"            # stamped exactly as the last sample
    OUT_OF_ORDER = "out_of_order"      # stamped before the last sample (reordered, or the clock jumped back)
    FUTURE = "future"                  # stamped further ahead of the receiver's clock than the tolerance

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    DropReason.RAGGED: "position, velocity or effort of another length than name",
    DropReason.REPEATED_NAME: "a joint named twice",
    DropReason.NON_FINITE: "NaN or Inf values",
    DropReason.DUPLICATE: "a duplicate of the previous sample (same stamp)",
    DropReason.OUT_OF_ORDER: "stamped before the previous sample",
    DropReason.FUTURE: "stamped in the future (the driver's clock jumped ahead)",
}


@dataclass(frozen=True)
class JointSample:
    """One complete sample in model order: stamp t (s), q, q̇, effort (n,) (effort NaN if the driver sends none)."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray


def stamp_seconds(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


class JointStateMerger:
    """Feeds on JointState messages one by one (add) and gives complete, finite, time-ordered samples."""

    def __init__(self, joint_names, future_tolerance: float = math.inf):
        self.joint_names = list(joint_names)
        self.future_tolerance = future_tolerance
        n = len(self.joint_names)
        self._position = {name: k for k, name in enumerate(self.joint_names)}
        # names of a message -> (model indices, message indices) of the model joints it names and, where it names
        # every one, the message index of each model joint in model order (else None); None: a repeated name
        self._mappings: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, np.ndarray | None] | None] = {}
        self._q = np.full(n, np.nan)
        self._qd = np.zeros(n)
        self._effort = np.full(n, np.nan)
        self._heard = np.zeros(n, dtype=bool)     # joints given by partial messages since the last sample
        self._parts_stamp = -math.inf
        self.last_stamp = -math.inf                 # of the last sample made

    def missing(self) -> list[str]:
        """The model joints no message has given since the last sample."""
        return [name for name, heard in zip(self.joint_names, self._heard, strict=True) if not heard]

    def _mapping(self, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        if names not in self._mappings:
            mapping = None
            if len(set(names)) == len(names):
                pairs = [(self._position[name], k) for k, name in enumerate(names) if name in self._position]
                model_idx = np.array([p[0] for p in pairs], dtype=int)
                msg_idx = np.array([p[1] for p in pairs], dtype=int)
                in_model_order = None
                if model_idx.size == len(self.joint_names):
                    in_model_order = np.empty(model_idx.size, dtype=int)
                    in_model_order[model_idx] = msg_idx
                mapping = (model_idx, msg_idx, in_model_order)
            if len(self._mappings) > 64:            # a publisher renaming joints every message: keep memory flat
                self._mappings.clear()
            self._mappings[names] = mapping
        return self._mappings[names]

    def add(self, msg: JointState, now: float | None = None) -> JointSample | DropReason | None:
        """A complete sample, the reason the message was dropped, or None: it names none of the model's joints
        or only some (held until the others are heard). `now`: the receiver's clock (s), for the future check."""
        names = tuple(msg.name)
        mapping = self._mapping(names)
        if mapping is None:
            return DropReason.REPEATED_NAME
        model_idx, msg_idx, in_model_order = mapping
        if model_idx.size == 0:
            return None
        n_names = len(names)
        position, velocity, effort = msg.position, msg.velocity, msg.effort
        if len(position) != n_names or len(velocity) not in (0, n_names) or len(effort) not in (0, n_names):
            return DropReason.RAGGED
        if in_model_order is not None and len(velocity) and len(effort):
            # The usual driver's message (every joint, with velocities and efforts): one conversion, one index and
            # one finiteness test for the three, in model order already (the per-array ones were a third of the idle
            # node's CPU at 500 Hz); the same values and verdicts as below.
            values = np.array((position, velocity, effort), dtype=float)[:, in_model_order]
            if not np.isfinite(values).all():
                return DropReason.NON_FINITE
            q, qd, eff = values
        else:
            q = np.asarray(position, dtype=float)[msg_idx]
            qd = np.asarray(velocity, dtype=float)[msg_idx] if len(velocity) else np.zeros(model_idx.size)
            eff = np.asarray(effort, dtype=float)[msg_idx] if len(effort) else np.full(model_idx.size, np.nan)
            if not (np.isfinite(q).all() and np.isfinite(qd).all() and (len(effort) == 0 or np.isfinite(eff).all())):
                return DropReason.NON_FINITE
        t = stamp_seconds(msg)
        if now is not None and t > now + self.future_tolerance:
            return DropReason.FUTURE
        if now is not None and self.last_stamp > now + self.future_tolerance:
            # The receiver's clock went back past the last sample (a simulation restarted): start the order anew.
            self.last_stamp = -math.inf
        n = len(self.joint_names)
        if model_idx.size < n and t <= self.last_stamp:
            # A part no newer than the last sample adds nothing: ignored, not an error (another driver's clock
            # and delivery order need not match the one that made the last sample).
            return None
        if t < self.last_stamp:
            return DropReason.OUT_OF_ORDER
        if t == self.last_stamp:
            return DropReason.DUPLICATE
        if in_model_order is not None and len(velocity) and len(effort):
            return self._sample(t, q, qd, eff)
        if model_idx.size == n:
            order = np.empty(n, dtype=int)
            order[model_idx] = np.arange(n)
            return self._sample(t, q[order], qd[order], eff[order])
        self._q[model_idx], self._qd[model_idx], self._effort[model_idx] = q, qd, eff
        self._heard[model_idx] = True
        self._parts_stamp = max(self._parts_stamp, t)
        if self._heard.all():
            return self._sample(self._parts_stamp, self._q.copy(), self._qd.copy(), self._effort.copy())
        return None

    def _sample(self, t: float, q: np.ndarray, qd: np.ndarray, effort: np.ndarray) -> JointSample:
        self.last_stamp = t
        self._q, self._qd, self._effort = q.copy(), qd.copy(), effort.copy()
        self._heard[:] = False
        self._parts_stamp = -math.inf
        return JointSample(t, q, qd, effort)


# What the ROS graph gives for the node of an endpoint whose participant left or never said its nodes (rmw's
# graph cache): a restarted driver's old publisher, still matched for the DDS lease after its process ended, reads so.
UNKNOWN_NODE_NAME = "_NODE_NAME_UNKNOWN_"


def gid_text(pub: object) -> str:
    """A publisher id as `ros2 topic info --verbose` prints an endpoint's GID (dotted hex bytes)."""
    return ".".join(f"{b:02x}" for b in pub) if isinstance(pub, (bytes, bytearray)) else str(pub)


def publisher_label(pub: object, namespace: str | None = None, name: str | None = None) -> str:
    """How the pause names a publisher of the joints: its node (`namespace`/`name`, as the graph gives them), or,
    for one the graph lists without a node (name UNKNOWN_NODE_NAME) or not at all (name None), what it is likely to
    be and its GID, which `ros2 topic info --verbose` lists beside its node (h186: the pause named a restarted
    driver's old publisher "_NODE_NAMESPACE_UNKNOWN_/_NODE_NAME_UNKNOWN_" and its new one "?")."""
    if name is None:
        return f"a publisher not in the ROS graph (GID {gid_text(pub)}: gone, or not discovered yet)"
    if name == UNKNOWN_NODE_NAME:
        return (f"a publisher without a node name (GID {gid_text(pub)}: its node has left, e.g. a driver that "
                "restarted, or it is no ROS node)")
    return f"{namespace.rstrip('/') if namespace else ''}/{name}"


def shared_joint_publishers(sources: list[tuple[object, tuple[str, ...]]], joint_names,
                            labels: dict | None = None) -> str:
    """Why the messages `sources` ([(publisher id, names)], one drain's) are two drivers' samples of the same
    joints ('' when they are not): two publishers naming a model joint each. A cell's other drivers (a gripper)
    name other joints and are fine; a publisher id None (a middleware that gives none) counts as unknown. `labels`
    (publisher id -> publisher_label) names the publishers, one missing from it as not in the graph."""
    wanted = set(joint_names)
    joints_of: dict[object, set[str]] = {}
    for pub, names in sources:
        if pub is None:
            continue
        joints_of.setdefault(pub, set()).update(wanted.intersection(names))
    pubs = [p for p, joints in joints_of.items() if joints]
    for i, a in enumerate(pubs):
        for b in pubs[i + 1:]:
            shared = joints_of[a] & joints_of[b]
            if shared:
                named = f": {' and '.join(sorted(labels.get(p) or publisher_label(p) for p in pubs))}" \
                    if labels is not None else ""
                return (f"{len(pubs)} publishers send joint states of the same joints ({', '.join(sorted(shared))})"
                        f"{named}; two drivers' samples cannot be one robot's; stop the other publisher")
    return ""


class SharedJointWatch:
    """The publishers of the model's joints over time, not per drain: a publisher heard in one drain lives until it
    has been silent for publisher_wait (several of its periods, the periods measured between the drains it was heard
    in), so a second publisher of the same joints that sends once every few drains is named in every drain while it
    lives (h143: in 4 of 16, and the monitor resumed between them). Times are the caller's (monotonic s)."""

    def __init__(self, joint_names, silence_s: float = PUBLISHER_SILENCE_S) -> None:
        self.joint_names = list(joint_names)
        self.silence_s = silence_s
        # publisher id -> [model joints it named, last heard, largest interval between two drains it was heard in]
        self._seen: dict[object, list] = {}

    def add(self, sources: list[tuple[object, tuple[str, ...]]], now: float) -> None:
        """A drain's (publisher id, names) at `now`; publishers silent for their wait are forgotten."""
        wanted = set(self.joint_names)
        for pub, names in sources:
            joints = wanted.intersection(names)
            if pub is None or not joints:
                continue
            seen = self._seen.get(pub)
            if seen is None:
                self._seen[pub] = [set(joints), now, None]
                continue
            seen[0].update(joints)
            if now > seen[1]:
                seen[2] = max(seen[2] or 0.0, now - seen[1])
                seen[1] = now
        for pub in [p for p, (_, last, interval) in self._seen.items()
                    if now - last >= publisher_wait(self.silence_s, interval)]:
            del self._seen[pub]

    @property
    def publishers(self) -> list[object]:
        return list(self._seen)

    def shared(self, labels: dict | None = None) -> str:
        """shared_joint_publishers over the publishers alive ('' : one driver per joint)."""
        why = shared_joint_publishers([(p, tuple(j)) for p, (j, _, _) in self._seen.items()], self.joint_names,
                                      labels)
        if not why:
            return ""
        # The pause ends once either is gone: the shorter wait is the one said.
        wait = min(publisher_wait(self.silence_s, interval) for _, _, interval in self._seen.values())
        return f"{why} (it counts as gone once silent for {wait:.2g} s)"
