"""The payload_estimator's two sensor timers: the drain of its sensor queues (50 Hz while a goal, the monitor or a
subscriber to the compensated wrench takes every sample, 4 Hz otherwise) and a watch on the steady clock for
simulated time that stopped (on simulated time the drain runs on /clock and would stop with it)."""

from __future__ import annotations

from collections.abc import Callable

from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock, ClockType, ROSClock
from rclpy.node import Node

from payload_id_ros.sim_clock import ClockStall

DRAIN_PERIOD = 0.02          # s: sensor queues drained (and the wrench compensated) at 50 Hz
# s: ... at 4 Hz while nothing takes every sample (no goal, monitor off, no compensated wrench asked for). Each drain
# woke the executor and rebuilt its wait set, and with its fixed work (the batch's arrays, the publishers' watch, the
# clock) that was about half of the idle node's 10 % of a core (py-spy, `make demo`'s cell). 125 joint states wait
# in the 1000-deep queue (sensor_inbox.INBOX_QOS), the last one taken is at most this old (a goal's start drains
# first), and a goal, the monitor or a subscriber to the compensated wrench puts the 50 Hz back at once or at the
# next drain.
IDLE_DRAIN_PERIOD = 0.25
CLOCK_WATCH_PERIOD = 0.1     # s (steady): how often simulated time is checked for having stopped


class SensorTimers:
    """`drain` on the node's clock at DRAIN_PERIOD (IDLE_DRAIN_PERIOD while `pace(False)`), and
    `on_clock_stalled(seconds)` from a steady 10 Hz watch while the node's simulated time has not moved
    (sim_clock.ClockStall: never on the wall clock)."""

    def __init__(self, node: Node, now: Callable[[], float], drain: Callable[[], None],
                 on_clock_stalled: Callable[[float], None], group: CallbackGroup) -> None:
        self.drain_timer = node.create_timer(DRAIN_PERIOD, drain, callback_group=group)
        self.drain_period = DRAIN_PERIOD
        self._on_clock_stalled = on_clock_stalled
        self._clock_stall = ClockStall(now, lambda: _on_simulated_time(node))
        node.create_timer(CLOCK_WATCH_PERIOD, self._watch_clock, callback_group=group,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def pace(self, every_sample: bool) -> None:
        """The drain at DRAIN_PERIOD while something takes every sample, else at IDLE_DRAIN_PERIOD; the timer is
        restarted when that changes, so that a goal accepted now is drained from now on."""
        period = DRAIN_PERIOD if every_sample else IDLE_DRAIN_PERIOD
        if period != self.drain_period:
            self.drain_period = period
            self.drain_timer.timer_period_ns = round(period * 1e9)
            self.drain_timer.reset()

    def _watch_clock(self) -> None:
        stalled = self._clock_stall.stalled_for()
        if stalled > 0.0:
            self._on_clock_stalled(stalled)


def _on_simulated_time(node: Node) -> bool:
    clock = node.get_clock()
    return isinstance(clock, ROSClock) and clock.ros_time_is_active
