"""Issue 31: the monitor's carried payload survives a node restart whole, robot.yaml's held-out model error in its σ
included (PayloadState.held_out_var, monitor/held_out.py), through the result file as the node writes and reads it.

The real UR10e's 15harm runs joined (2.805 kg picked at 56.26 s, test_redteam_h143), fed through the node's wiring
(MonitorMode) with robot.yaml's model error measured on held-out unloaded runs; the node dies 100 s in, carrying, and a
second starts on its payload.yaml. Before, the file
kept only the published covariance: the restarted monitor decided with it (the held-out error, the extras and the
tare's variance in the alarm's F Σ Fᵀ), counted the tare's variance twice in what it published, and held_out_var was
0 until the next change's re-estimate."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data
from monitor_mode_stand_ins import Controller, Node
from test_redteam_h143 import _joined

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.payload.result_file import read_result, write_result
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_ros.monitor_mode import MonitorMode
from payload_id_ros.sensor_inbox import JointStateBatch

pytestmark = [requires_ur10e_data, pytest.mark.slow]
RESTART_S = 100.0       # s into the joined run: mid-carry, its re-estimate published ok with the held-out error in it


class _Node:
    """MonitorMode on a stand-in node, persisting each re-estimate as payload_estimator does (write_result)."""

    def __init__(self, model, robot, frame, path, saved=None):
        self.model, self.path, self.estimate = model, path, None if saved is None else saved.estimate
        self.node = Node()

        def new_monitor():
            live = LiveMonitor(model, robot, frame, None, rated_payload_kg=12.5)
            if saved is not None:
                live.saved_tare, live.saved_unloaded = saved.monitor_tare, saved.monitor_unloaded
                live.saved_unconfirmed = saved.monitor_unconfirmed
                live.saved_watched_until = saved.monitor_watched_until
                live.saved_carried = saved.monitor_carried
            return live

        self.mode = MonitorMode(self.node, new_monitor, lambda: "", lambda: self.estimate, self._publish,
                                Controller(), lambda: False, None, persist=self._persist)
        self.mode.switch(True)

    def _publish(self, est):
        self.estimate = est

    def _persist(self, est, tare, unloaded, unconfirmed, watched_until, carried):
        live = self.mode.live
        # What ~/payload said of the state saved (before the node's floor): what the restarted monitor must say again.
        self.said = live.monitor.state.to_estimate(live.frame)
        write_result(self.path, self.model, est, None, None, 1.0, monitor_tare=tare, monitor_unloaded=unloaded,
                     monitor_unconfirmed=unconfirmed, monitor_watched_until=watched_until, monitor_carried=carried)

    def feed(self, joints, keep) -> None:
        idx = np.flatnonzero(keep)
        for k in range(idx[0], idx[-1] + 1, 10):
            end = min(k + 10, idx[-1] + 1)
            self.mode.feed(JointStateBatch(joints.t[k:end], joints.q[k:end], joints.qd[k:end], joints.tau[k:end]))
        thread = self.mode._apply_thread
        if thread is not None:
            thread.join(10)


@pytest.fixture(scope="module")
def restarted(ur10e_held_out_robot_yaml, tmp_path_factory):
    """(first node, second node, robot, joints, the file read back): the first fed up to RESTART_S, the second from
    there on its file, one batch."""
    model = RobotModel.from_urdf(DATA / "ur10e.urdf")
    robot = RobotIdentification.load(ur10e_held_out_robot_yaml, model)
    frame = model.payload_frame(None)
    where = tmp_path_factory.mktemp("restart")
    csv, _ = _joined(where)
    joints = read_ur_csv(csv, robot.effort_scale, joint_names=model.joint_names).joints
    path = where / "payload.yaml"
    first = _Node(model, robot, frame, path)
    t = joints.t - joints.t[0]
    first.feed(joints, t < RESTART_S)
    saved = read_result(path, model, robot.fingerprint())
    second = _Node(model, robot, frame, path, saved)
    second.feed(joints, (t >= RESTART_S) & (t < RESTART_S + 0.02))
    return first, second, robot, joints, saved, path, model


def test_a_restart_mid_carry_publishes_decides_and_names_with_the_sigma_it_had(restarted):
    first, second, _, _, saved, _, _ = restarted
    carried, after = saved.monitor_carried, second.mode.live.monitor.state
    # The case: carrying the part, its re-estimate published ok with robot.yaml's held-out error in its σ.
    assert carried is not None and carried.held_out_var > 1e-4 and abs(first.said.mass - 2.805) < 0.3
    assert saved.estimate.quality.value == "ok"
    # Whole: the covariance decided with, what publishing adds, the held-out error and the tare.
    np.testing.assert_array_equal(after.cov, carried.cov)
    np.testing.assert_array_equal(after.published_extra, carried.published_extra)
    assert after.held_out_var == carried.held_out_var
    assert (after.tare_mass, after.tare_var) == saved.monitor_tare
    # What ~/payload says of the carried payload (PayloadState.to_estimate, before the node's floor): the same σ.
    # Before: the published covariance taken as decided with and the tare's variance added again on top.
    was, now = first.said, after.to_estimate(second.mode.live.frame)
    ident = was.identifiable
    np.testing.assert_allclose(now.covariance[np.ix_(ident, ident)], was.covariance[np.ix_(ident, ident)],
                               rtol=1e-12, atol=0.0)
    assert abs(now.mass - was.mass) < 1e-12
    # A change named against it carries the held-out error once: the σ it would be named with is the same.
    judge = second.mode.live.monitor.judge
    assert judge.named_std(after.cov[0, 0], after.held_out_var) == judge.named_std(carried.cov[0, 0],
                                                                                   carried.held_out_var)


def test_a_file_without_the_carried_covariance_still_loads(restarted, tmp_path):
    """Older files: the published covariance is decided with and held_out_var is 0 (it is in that covariance's mass
    already: taken again, it would count twice in a named change's σ)."""
    _, _, robot, _, _, path, model = restarted
    d = yaml.safe_load(open(path))
    del d["monitor_carried"]
    old = tmp_path / "old.yaml"
    yaml.safe_dump(d, open(old, "w"))
    saved = read_result(old, model, robot.fingerprint())
    assert saved is not None and saved.monitor_carried is None and saved.monitor_tare is not None
    live = LiveMonitor(model, robot, model.payload_frame(None), None, rated_payload_kg=12.5)
    live.saved_tare = saved.monitor_tare
    monitor = live.new_monitor(saved.estimate)
    assert monitor.state.held_out_var == 0.0 and monitor.state.published_extra is None
    np.testing.assert_array_equal(monitor.state.cov[0, 0], saved.estimate.covariance[0, 0])


@pytest.mark.parametrize("damage,said", [
    (lambda c: c.update(held_out_variance=-1.0), "held_out_variance"),
    (lambda c: c.update(held_out_variance="big"), "held_out_variance"),
    (lambda c: c.update(covariance=[[1.0, 2.0]]), "covariance is not 10 × 10"),
    (lambda c: c.update(published_extra=[[float("nan")] * 10] * 10), "published_extra is not 10 × 10"),
    (lambda c: c.pop("robot_yaml_sha256"), "robot_yaml_sha256"),
    (lambda c: c.update(robot_yaml_sha256="0" * 64), "another robot.yaml")])
def test_a_malformed_or_foreign_carried_covariance_is_refused_with_one_reason(restarted, tmp_path, damage, said):
    _, _, robot, _, _, path, model = restarted
    d = yaml.safe_load(open(path))
    damage(d["monitor_carried"])
    bad = tmp_path / "bad.yaml"
    yaml.safe_dump(d, open(bad, "w"))
    with pytest.raises(PayloadIdError, match=said) as err:
        read_result(bad, model, robot.fingerprint())
    assert "monitor_carried" in str(err.value) or "another robot.yaml" in str(err.value)
