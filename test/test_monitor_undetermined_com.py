"""A CoM published as not identified carries its σ (h190, h198): the monitor's first re-estimate after a pick, made
from the first seconds of motion, can have the mass sharp and the CoM not yet determined (a σ beyond
finish.COM_STD_LIMIT, 5 mm). ~/payload carries the CoM's numbers all the same; with σ NaN beside them (main) they were
a claim nobody could check, with quality ok. Published now: com_identified false and the σ that made it undetermined
(PayloadEstimate.published_std); the rviz label and the monitor's log say "CoM undetermined by this motion (σ ...)";
the result file withholds the CoM (null) and its note gives the σ, as before."""
import sys
from pathlib import Path

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.monitor.state import PayloadState
from payload_id_core.payload.markers import marker_geometry
from payload_id_core.payload_estimate import Quality

MASS, COM = 2.0, np.array([0.02, -0.01, 0.06])
PHI = from_mass_com_inertia(MASS, COM, np.diag([0.004, 0.005, 0.003]))


def _state(com_std_m) -> PayloadState:
    """A monitor re-estimate of the 2 kg part: mass σ 1 g, CoM σ `com_std_m` per axis (m), inertia held by its prior."""
    cov = np.diag(np.r_[0.001**2, (MASS * np.asarray(com_std_m)) ** 2, np.full(6, 1e-6)])
    return PayloadState(phi=PHI.copy(), cov=cov, determined=True, since=1.0, seconds_of_motion=3.3)


def test_a_com_not_determined_yet_is_published_with_its_sigma():
    """CoM z σ 8.4 mm (the first re-estimate of test_monitor_priors_ros's cell, in-process): not identified, quality
    ok (the mass is), and its σ published: [0.6, 0.65, 8.4] mm, not NaN."""
    est = _state([0.0006, 0.00065, 0.0084]).to_estimate("tool0")
    assert est.quality is Quality.OK and not est.readable_identifiable()[1:4].any()
    assert np.all(np.isnan(est.readable_std()[1:4]))                        # what main published
    np.testing.assert_allclose(est.published_std()[1:4], [0.0006, 0.00065, 0.0084], rtol=0.02)
    assert est.published_std()[0] == est.readable_std()[0]
    assert est.undetermined_com_text() == "CoM undetermined by this motion (σ 0.6, 0.7, 8.4 mm)"
    assert marker_geometry(est).label == "2.000 ± 0.001 kg, CoM undetermined by this motion (σ 0.6, 0.7, 8.4 mm), " \
        "inertia undetermined"
    # The result file still withholds it: null CoM, null σ, the note naming the σ.
    d = est.to_dict()
    assert d["com"] == [None, None, None] and d["std"]["com"] == [None, None, None]
    assert any("undetermined by this motion: CoM (σ [0.6, 0.7, 8.4] mm" in n["text"] for n in d["notes"])


def test_a_determined_com_and_nothing_carried_are_published_as_before():
    est = _state([0.0004, 0.0004, 0.0049]).to_estimate("tool0")
    assert est.readable_identifiable()[1:4].all() and est.undetermined_com_text() == ""
    np.testing.assert_array_equal(est.published_std(), est.readable_std())
    assert marker_geometry(est).label == "2.000 ± 0.001 kg, inertia undetermined"
    empty = PayloadState(phi=np.zeros(10), cov=np.diag(np.full(10, 1e-6)), determined=True, since=1.0,
                         seconds_of_motion=3.0).to_estimate("tool0")
    assert empty.undetermined_com_text() == "" and np.all(np.isnan(empty.published_std()[1:4]))


def test_the_message_carries_the_undetermined_coms_sigma():
    """~/payload's PayloadParameters: com_identified false, com_std the σ (main: NaN)."""
    conv = pytest.importorskip("payload_id_ros.conversions", reason="the ROS messages are not built")
    p = conv.parameters_msg(_state([0.0006, 0.00065, 0.0084]).to_estimate("tool0"))
    assert not p.com_identified and p.mass_identified
    np.testing.assert_allclose([p.com_std.x, p.com_std.y, p.com_std.z], [0.0006, 0.00065, 0.0084], rtol=0.02)
    determined = conv.parameters_msg(_state([0.0004, 0.0004, 0.0049]).to_estimate("tool0"))
    assert determined.com_identified and determined.com_std.z == pytest.approx(0.0049, rel=0.02)


@pytest.mark.slow
def test_the_monitors_first_re_estimate_after_a_pick_publishes_the_coms_sigma():
    """LiveMonitor on test_monitor_priors_ros's cell in-process: the 2 kg part picked at rest (1 s), a 1.5 s transfer
    to the Excite motion's start, its 8 s motion; the node's known mass and box. The first re-estimate (3.3 s after
    the pick) has the mass to 1 g and the CoM not determined (z σ 8.4 mm > 5 mm): published with that σ, which covers
    the CoM's error (5.8 mm in z), quality ok; later ones determine it."""
    sys.path.insert(0, str(Path(__file__).parent))
    from ros_cell.assets import make_robot_yaml, make_trajectory  # noqa: PLC0415

    from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415
    from payload_id_core.dynamics.regressor import payload_regressor  # noqa: PLC0415
    from payload_id_core.monitor.live import LiveMonitor  # noqa: PLC0415
    from payload_id_core.payload.priors import PayloadPrior  # noqa: PLC0415
    from payload_id_core.robot_id.result import RobotIdentification  # noqa: PLC0415

    published = _first_seconds_after_a_pick(make_robot_yaml, make_trajectory, RobotModel, payload_regressor,
                                            LiveMonitor, PayloadPrior, RobotIdentification)
    assert published, "nothing published for the part"
    first = published[0]
    assert first.quality is Quality.OK and not first.readable_identifiable()[1:4].any()
    std = first.published_std()[1:4]
    assert np.all(np.isfinite(std)) and std.max() > 0.005
    assert np.all(np.abs(first.com - COM) <= 3 * std), (first.com, std)
    assert any(est.readable_identifiable()[1:4].all() for est in published[1:])
    for est in published:
        assert np.all(np.isfinite(est.published_std()[:4]))


def _first_seconds_after_a_pick(make_robot_yaml, make_trajectory, RobotModel, payload_regressor, LiveMonitor,
                                PayloadPrior, RobotIdentification, tmp=None):
    """The re-estimates ~/payload would publish for the part over the first 1.5 s of the Excite motion."""
    import tempfile  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="h198_"))
    model = RobotModel.from_urdf("ur10")
    make_robot_yaml(tmp / "robot.yaml")
    traj = make_trajectory(tmp / "traj.yaml", duration=8.0)
    robot = RobotIdentification.load(tmp / "robot.yaml", model)
    rest, transfer, dt = 2.5, 1.5, 0.005
    t = np.arange(0.0, rest + transfer + 1.5, dt)
    q, qd, qdd = traj.evaluate(np.clip(t - rest - transfer, 0.0, None))
    q0, q1 = np.array([0.0, -1.2, 1.2, -1.5, -1.5, 0.0]), traj.evaluate(np.zeros(1))[0][0]
    s = np.clip((t - rest) / transfer, 0.0, 1.0)              # a quintic rest-to-rest transfer, as the player's
    h = 10 * s**3 - 15 * s**4 + 6 * s**5
    hd = (30 * s**2 - 60 * s**3 + 30 * s**4) / transfer
    hdd = (60 * s - 180 * s**2 + 120 * s**3) / transfer**2
    before = t < rest + transfer
    q[before] = q0 + h[before, None] * (q1 - q0)
    qd[before] = hd[before, None] * (q1 - q0)
    qdd[before] = hdd[before, None] * (q1 - q0)
    tau = np.array([model.rnea(q[k], qd[k], qdd[k]) for k in range(t.size)])
    on = t >= 1.0
    tau[on] += np.einsum("tjk,k->tj", payload_regressor(model, "tool0", q[on], qd[on], qdd[on]), PHI)
    live = LiveMonitor(model, robot, "tool0", None,
                       prior=PayloadPrior.checked([-0.08, -0.1, -0.02, 0.1, 0.1, 0.16], MASS, 0.004))
    out = []
    for k in range(0, t.size, 4):                              # the node's 20 ms drains of 200 Hz joint states
        b = slice(k, k + 4)
        est = live.feed(t[b], q[b], qd[b], tau[b], None).estimate
        if est is not None and est.mass > 0:
            out.append(est)
    return out
