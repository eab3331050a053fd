"""What the monitor publishes against what it decides with (issue 31, h152): refine.RefinedCovariance.

The re-estimate's covariance the monitor decides with (the cluster-robust sandwich taken whole when wider in mass) has
no variance in directions its few clusters do not span, so the published CoM's σ came up to 8.8σ short on the cell's
task. ~/payload (PayloadState.to_estimate) publishes the covering covariance; every decision keeps the other."""
from dataclasses import replace

import numpy as np

from payload_id_core.monitor import PayloadMonitor
from payload_id_core.monitor.state import MonitorUpdate, PayloadState

PART = np.array([3.0, 3.0 * 0.02, 3.0 * -0.01, 3.0 * 0.06, 0.01, 0.0, 0.0, 0.01, 0.0, 0.01])


def _covs() -> tuple[np.ndarray, np.ndarray]:
    """A deciding covariance whose CoM is known to 2 mm per axis, and the extra that publishes it at 8 mm."""
    m = PART[0]
    deciding = np.diag([0.02**2] + [(m * 0.002) ** 2] * 3 + [1e-4] * 6)
    extra = np.zeros((10, 10))
    extra[1:4, 1:4] = np.eye(3) * (m * 0.008) ** 2 - deciding[1:4, 1:4]
    return deciding, extra


def test_payload_is_published_with_the_covering_covariance_and_decided_with_the_other():
    deciding, extra = _covs()
    state = PayloadState(PART, deciding, True, 10.0, 4.0, published_extra=extra)
    est = state.to_estimate("tool0")
    np.testing.assert_allclose(est.covariance[1:4, 1:4], (deciding + extra)[1:4, 1:4])
    np.testing.assert_allclose(est.propagated_std()[1:4], 0.008, rtol=0.05)      # σ of c = (m c)/m, first order
    assert not est.readable_identifiable()[1:4].any()                           # 8 mm: not identified for a controller
    # What decides is untouched: the state's own covariance and its part.
    np.testing.assert_array_equal(state.part[1], deciding)
    np.testing.assert_array_equal(state.published_part[1], deciding + extra)
    # A state built on it (replace: an unconfirmed one) publishes it too; without the extra, the deciding one.
    assert replace(state, unconfirmed="x").published_extra is extra
    np.testing.assert_allclose(replace(state, published_extra=None).to_estimate("tool0").propagated_std()[1:4], 0.002,
                               rtol=0.05)


def test_a_payload_published_with_its_com_not_identified_is_published_again_once_it_is(ur10_cell_robot):
    """MonitorUpdate.estimate is set when a change's payload is first determined; with the covering σ above the 5 mm a
    controller needs, the same change's later re-estimate is published once its CoM is identified, and only then."""
    model, robot = ur10_cell_robot
    monitor = PayloadMonitor(model, robot, model.payload_frame(None))
    deciding, extra = _covs()
    wide = PayloadState(PART, deciding, True, 10.0, 4.0, published_extra=extra)
    first = MonitorUpdate(estimate=wide)
    monitor.state = wide
    monitor._republish_com(first)
    assert first.estimate is wide and monitor._com_unpublished_since == 10.0
    later = MonitorUpdate()
    monitor._republish_com(later)                                # still 8 mm: nothing new to publish
    assert later.estimate is None
    monitor.state = replace(wide, published_extra=extra * 0.3, seconds_of_motion=6.0)       # 4.6 mm
    other_change = replace(monitor.state, since=12.0)
    for state, published in ((other_change, False), (replace(monitor.state, doubt="d"), False),
                             (monitor.state, True)):
        monitor.state = state
        out = MonitorUpdate()
        monitor._republish_com(out)
        assert (out.estimate is state) is published, state
        assert out.estimate is None or out.estimate.to_estimate("tool0").readable_identifiable()[1:4].all()
    assert monitor._com_unpublished_since is None
    again = MonitorUpdate()
    monitor._republish_com(again)                                # published once
    assert again.estimate is None
