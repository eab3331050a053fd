"""The payload_estimator's drain timer (h187): 50 Hz while a goal, the monitor or a subscriber to the compensated
wrench takes every sample, 4 Hz otherwise (payload_estimator.IDLE_DRAIN_PERIOD: the idle node's wake-ups and
per-drain work were about half of its CPU), switched and restarted at once when that changes. PayloadEstimator's
pacing rule on a stand-in of its parts, without a ROS graph."""

from types import SimpleNamespace

import pytest

from payload_id_ros.payload_estimator import DRAIN_PERIOD, IDLE_DRAIN_PERIOD, PayloadEstimator


class _Timer:
    def __init__(self) -> None:
        self.timer_period_ns = round(DRAIN_PERIOD * 1e9)
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1


def _node(busy=False, monitor=False, wrench=False):
    return SimpleNamespace(identify=SimpleNamespace(busy=busy), monitor=SimpleNamespace(on=monitor),
                           _publishing_wrench=wrench, _drain_period=DRAIN_PERIOD, _drain_timer=_Timer())


def test_idle_drains_at_4_hz_and_anything_that_takes_every_sample_at_50():
    node = _node()
    PayloadEstimator.pace_drain(node)
    assert IDLE_DRAIN_PERIOD == pytest.approx(0.25) and DRAIN_PERIOD == pytest.approx(0.02)
    assert node._drain_timer.timer_period_ns == 250_000_000 and node._drain_timer.resets == 1
    PayloadEstimator.pace_drain(node)                      # no change: the timer is left alone
    assert node._drain_timer.resets == 1
    for wants in ({"busy": True}, {"monitor": True}, {"wrench": True}):
        node = _node(**wants)
        node._drain_period, node._drain_timer.timer_period_ns = IDLE_DRAIN_PERIOD, 250_000_000
        PayloadEstimator.pace_drain(node)
        assert node._drain_timer.timer_period_ns == 20_000_000 and node._drain_timer.resets == 1, wants
