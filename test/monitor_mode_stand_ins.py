"""Stand-ins for what MonitorMode (payload_id_ros.monitor_mode) is given by the estimator node: a node whose
logger and publishers record, and a controller that records each payload applied. Shared by the tests that drive
MonitorMode without ROS traffic (test_monitor_toggle, test_redteam_h143)."""

from __future__ import annotations

import numpy as np

from payload_id_core.payload_estimate import PayloadEstimate


class Logger:
    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def info(self, text):
        self.lines.append(("info", text))

    def warn(self, text):
        self.lines.append(("warn", text))


class Publisher:
    def __init__(self):
        self.sent: list = []

    def publish(self, msg):
        self.sent.append(msg)

    def get_subscription_count(self):
        return 0


class Node:
    """Stands in for the estimator node: publishers that record, a service that is never called over ROS."""

    def __init__(self):
        self.logger = Logger()
        self.publishers: dict[str, Publisher] = {}

    def get_logger(self):
        return self.logger

    def create_publisher(self, _type, topic, _qos):
        return self.publishers.setdefault(topic, Publisher())

    def create_service(self, *args, **kwargs):
        return None

    def sent(self, topic: str) -> list:
        """What was published on `topic` so far (nothing yet: [])."""
        return self.publishers[topic].sent if topic in self.publishers else []


class Controller:
    """Records what it is given (mass; 0.0 for the empty payload); `refuse` makes every apply fail."""

    def __init__(self, refuse: bool = False):
        self.applied: list[float] = []
        self.refuse = refuse

    def apply(self, est: PayloadEstimate, even_if_suspect: bool = False, empty_ok: bool = False):
        from payload_id_ros.controller_payload import ApplyOutcome, ApplyStatus  # noqa: PLC0415 - ROS only here

        if self.refuse:
            return ApplyOutcome.of(ApplyStatus.TIMEOUT, "not applied: the controller did not answer")
        self.applied.append(0.0 if not np.any(est.phi) else float(est.phi[0]))
        return ApplyOutcome.of(ApplyStatus.APPLIED, "applied")
