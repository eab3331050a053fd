"""Simulated time, both sides of it: the owner's /clock (ClockPublisher: mock_hardware, and the tests' kinematic fake
robot, test/ros_cell/fake_hardware.py) and a subscriber's watch for a clock that stopped (ClockStall: the
payload_estimator's monitor, whose timers run on that clock and stop with it).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from builtin_interfaces.msg import Time
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from payload_id_ros import conversions as conv

# rclcpp's ClockQoS (what Gazebo publishes /clock with); rclpy's time source subscribes best effort.
CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


class ClockPublisher:
    """/clock of a node that owns simulated time and stamps its samples on it, one message every `clock_period` s of
    simulated time (whole samples of `sample_period`; 0: with each), not with each sample: a clock that ticks at its
    own coarser rate is what a simulator gives (gazebo_ros publishes /clock at 10 Hz by default), and every
    subscriber's time source takes each message in Python. `tick(stamp)` before each sample is published, so a
    subscriber's clock trails the newest stamp by at most one clock period."""

    def __init__(self, node: Node, clock_period: float, sample_period: float) -> None:
        self.publisher = node.create_publisher(Clock, "/clock", CLOCK_QOS)
        self.every = max(1, int(round(clock_period / sample_period)))
        self.period = self.every * sample_period        # s of simulated time between two /clock messages
        self._count = 0

    def tick(self, stamp: Time) -> None:
        if self._count % self.every == 0:
            self.publisher.publish(conv.clock_msg(stamp))
        self._count += 1


class ClockStall:
    """Wall seconds since a node's ROS time last moved. On simulated time a node's timers run on /clock: when the
    clock's owner stalls or dies they stop with it, and nothing judged on that time (a silence, a timeout) can ever be
    said. Read from a timer on the steady clock; `stalled_for()` is 0 while the time moves, on the wall clock, and
    before the first /clock (time 0: no owner yet, and samples drained against it would all be dropped as ahead)."""

    def __init__(self, now: Callable[[], float], simulated: Callable[[], bool],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._now, self._simulated, self._monotonic = now, simulated, monotonic
        self._last: float | None = None           # the ROS time last read
        self._moved = monotonic()                  # the monotonic time it was last seen to move

    def stalled_for(self) -> float:
        wall = self._monotonic()
        t = self._now()
        if not self._simulated() or t != self._last or t == 0.0:
            self._last, self._moved = t, wall
            return 0.0
        return wall - self._moved
