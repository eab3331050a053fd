"""High-rate sensor topics read in batches, outside the executor.

rclpy's executor pays ~0.3 ms of Python per message (wait-set rebuild, task, callback): 500 Hz joint
states + 500 Hz wrenches alone kept a node at ~34 % of a core with empty callbacks. Here the
subscriptions live on a side node that no executor spins; a timer of the owning node drains the
middleware queues (`take_message` until empty) a few tens of times per second, merges the joint states
(joint_state_merge: other drivers' joints ignored, partial messages merged, malformed ones dropped) and
turns each batch into numpy arrays: ~7 % of a core for both streams. The queues are deep enough for the
samples that arrive between two drains.
"""

from __future__ import annotations

import math
import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy._rclpy_pybind11 import InvalidHandle  # rclpy's destroyed-handle error (no public name)
from rclpy.context import Context
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from payload_id_core.monitor import PUBLISHER_SILENCE_S
from payload_id_ros.input_drops import DropCounter
from payload_id_ros.joint_state_merge import (
    UNKNOWN_NODE_NAME,
    DropReason,
    JointSample,
    JointStateMerger,
    SharedJointWatch,
    publisher_label,
)

# Best effort talks to reliable and best-effort publishers alike. 1000 samples = 2 s at 500 Hz: a goal thread that
# stalls (0.9 s measured under load while it fed its first second) loses nothing; a longer stall overwrites the
# oldest samples without a word, which the goal then finds in the stamps (payload_id_core.signals.stamp_holes).
INBOX_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


def _take_all(sub: Subscription, context: Context, sources: list | None = None) -> list:
    """Every message queued on `sub`; none once the subscription is destroyed or its context shut down (a goal
    thread draining while the node closed under it raised RuntimeError: issue 32). With `sources`, each message's
    (publisher id, names) is appended to it."""
    out: list = []
    try:
        handle = sub.handle
        with handle:
            while True:
                got = handle.take_message(sub.msg_type, sub.raw)
                if got is None:
                    return out
                out.append(got[0])
                if sources is not None:
                    sources.append((_publisher_key(got[1]), tuple(got[0].name)))
    except InvalidHandle:       # destroyed: the node is closing
        return out
    except RuntimeError:        # rclpy's RCLError after the context was shut down; anything else is a bug: raised
        if context.ok():
            raise
        return out


def _publisher_key(info) -> object:
    """A hashable id of the message's publisher (None: the middleware gives none)."""
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    if not gid:
        return None
    data = gid.get("data") if isinstance(gid, dict) else gid
    return bytes(data) if data is not None else None


class JointStateBatch:
    """Joint states of one drain in model order: t (N,) header stamps, q, qd, effort (N, n); `second_source`: why
    they may be two drivers' samples of the same joints ('' when not; joint_state_merge.shared_joint_publishers)."""

    __slots__ = ("t", "q", "qd", "effort", "second_source")

    def __init__(self, t, q, qd, effort, second_source: str = ""):
        self.t, self.q, self.qd, self.effort, self.second_source = t, q, qd, effort, second_source


class SensorInbox:
    """Joint states merged by name into samples of `joint_names` (joint_state_merge), and wrenches, taken in
    batches by drain_*(). Malformed, out-of-order and non-finite messages are dropped and counted
    (`joint_drops`, `wrench_drops`) with a throttled warning; none ever raises."""

    def __init__(self, owner: Node, joint_names, joint_topic: str, wrench_topic: str,
                 future_tolerance: float = math.inf, publisher_silence_s: float = PUBLISHER_SILENCE_S):
        # A node of its own (not spun by any executor); global --ros-args remaps (__node) must not rename it.
        self.node = Node(f"{owner.get_name()}_inbox", namespace=owner.get_namespace(), context=owner.context,
                         use_global_arguments=False, start_parameter_services=False)
        self.joint_names = list(joint_names)
        self.merger = JointStateMerger(joint_names, future_tolerance)
        # Who publishes the model's joints, over time (a second publisher named in every drain while it lives).
        self.publishers = SharedJointWatch(joint_names, publisher_silence_s)
        self._labels: dict[object, str] = {}       # publisher id -> its node's name (the graph's)
        self._joint_topic = joint_topic
        logger = owner.get_logger()
        self.joint_drops = DropCounter(logger, joint_topic, "check the robot driver publishing it")
        self.wrench_drops = DropCounter(logger, wrench_topic, "check the F/T sensor's driver")
        self._joints = self.node.create_subscription(JointState, joint_topic, _ignore, INBOX_QOS)
        self._wrench_topic = wrench_topic
        self._wrench: Subscription | None = None
        self.problem: str | None = None            # why the last drain that took joint states made no sample
        self.last_receipt: float | None = None     # monotonic time of the last drain that took a joint state
        self.last_sample_receipt: float | None = None   # ... that made a complete sample of it
        self.wrench_frame: str | None = None

    # -- wrench subscription on demand: 500 Hz costs CPU only while someone needs the wrench ----------
    def want_wrench(self, wanted: bool) -> None:
        if wanted and self._wrench is None:
            self._wrench = self.node.create_subscription(WrenchStamped, self._wrench_topic, _ignore, INBOX_QOS)
        elif not wanted and self._wrench is not None:
            self.node.destroy_subscription(self._wrench)
            self._wrench = None

    @property
    def wrench_subscribed(self) -> bool:
        return self._wrench is not None

    def drain_joint_states(self, now: float | None = None) -> JointStateBatch | None:
        """The complete samples received since the last drain (None if none). `now`: the node's clock, to drop
        samples stamped in the future. Any message taken sets `last_receipt`, a sample `last_sample_receipt`
        (the samples arrived at or before it: a drain every 20 ms makes it at most that late); a drain that
        took messages but made no sample says why in `problem`."""
        sources: list = []
        msgs = _take_all(self._joints, self.node.context, sources)
        if not msgs:
            return None
        self.last_receipt = time.monotonic()
        self.publishers.add(sources, self.last_receipt)
        samples: list[JointSample] = []
        last_drop: DropReason | None = None
        for m in msgs:
            got = self.merger.add(m, now)
            if isinstance(got, JointSample):
                samples.append(got)
            elif got is not None:
                self.joint_drops.count(got)
                last_drop = got
        if not samples:
            self.problem = (f"the joint states are dropped: {last_drop.description}" if last_drop is not None
                            else f"the joint states lack joints {self.merger.missing()} of the URDF")
            return None
        self.problem = None
        self.last_sample_receipt = self.last_receipt
        return JointStateBatch(np.array([s.t for s in samples]), np.array([s.q for s in samples]),
                               np.array([s.qd for s in samples]), np.array([s.effort for s in samples]),
                               self._second_source())

    def _second_source(self) -> str:
        """SharedJointWatch.shared, the publishers named by their nodes (looked up in the graph while one is not
        named yet: one the graph lists without its node, or not at all, is named by its GID, publisher_label, and
        looked up again on the next drain)."""
        why = self.publishers.shared()
        if why and any(p not in self._labels for p in self.publishers.publishers):
            labels = dict(self._labels)
            for info in self.node.get_publishers_info_by_topic(self._joint_topic):
                key = _publisher_key({"publisher_gid": info.endpoint_gid})
                labels[key] = publisher_label(key, info.node_namespace, info.node_name)
                if info.node_name != UNKNOWN_NODE_NAME:
                    self._labels[key] = labels[key]
            return self.publishers.shared(labels)
        return self.publishers.shared(self._labels)

    def drain_wrenches(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(t (N,), wrench (N, 6) [F, T]) received since the last drain, or None. Non-finite readings are
        dropped: they must never reach the compensated wrench or the F/T calibration."""
        if self._wrench is None:
            return None
        msgs = _take_all(self._wrench, self.node.context)
        if not msgs:
            return None
        if self.wrench_frame is None:
            self.wrench_frame = msgs[0].header.frame_id
        t = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])
        w = np.array([(m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                       m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z) for m in msgs])
        finite = np.isfinite(w).all(axis=1)
        if not finite.all():
            for _ in range(int(np.count_nonzero(~finite))):
                self.wrench_drops.count(DropReason.NON_FINITE)
            t, w = t[finite], w[finite]
            if t.size == 0:
                return None
        return t, w

    def destroy(self) -> None:
        self.node.destroy_node()


def _ignore(_msg) -> None:
    """Subscription callback never called: the inbox's node is not spun."""
