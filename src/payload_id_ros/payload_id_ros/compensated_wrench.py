"""~/wrench_compensated: the F/T sensor's wrenches with the payload (and the sensor's own load) taken out
(payload_id_core.ft.CompensationStream), published batch by batch as the estimator drains them, and only while somebody
subscribes and the compensation has its parameters."""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from payload_id_core.ft import CompensationStream
from payload_id_ros import conversions as conv

# The compensated wrench leaves in bursts of one drain period (10 samples at 500 Hz): a history of the
# sensor-data depth (5) would drop half of each. Subscribers that want every sample need a depth of
# >= 2 bursts too (rviz, which draws only the newest, does not).
WRENCH_OUT_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


class CompensatedWrenchOutput:
    def __init__(self, node: Node, compensation: CompensationStream) -> None:
        self.compensation = compensation
        self.publisher = node.create_publisher(WrenchStamped, "~/wrench_compensated", WRENCH_OUT_QOS)
        self.wanted = False          # at the last drain: parameters known and somebody subscribed

    def want(self) -> bool:
        """Asked at each drain: whether this drain's wrenches are to be compensated and published."""
        self.wanted = self.compensation.params is not None and self.publisher.get_subscription_count() > 0
        return self.wanted

    def publish(self, wrenches: tuple[np.ndarray, np.ndarray]) -> None:
        """A drained batch (stamps, wrenches), if `want()` said so."""
        if not self.wanted:
            return
        out = self.compensation.compensate(*wrenches)
        for msg in [] if out is None else conv.wrench_msgs(out.t, out.frame, out.wrench):
            self.publisher.publish(msg)
