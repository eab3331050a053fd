"""Issue 31 item 4, h151: the "not watched" state of a monitor paused by a second publisher of the same joints lives in
monitor.py's PayloadState (PayloadMonitor.stop_watching / resume_watching), and ~/payload says it. Before (h144),
live.py set `determined=False` on the frozen state by `replace` and published nothing: ~/payload went on saying
the payload as if it were watched for the whole pause (a 5 Hz second publisher that never goes quiet: the whole run)."""

import numpy as np
import pytest
from monitor_fixtures import live_cell
from monitor_mode_stand_ins import Controller, Node

from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.payload_estimate import Quality

SECOND = "2 publishers send joint states of the same joints (shoulder_pan_joint)"


@pytest.fixture(scope="module")
def cell():
    return live_cell()


def test_the_payload_is_published_not_watched_during_the_pause_and_watched_after(cell):
    """Through the node's core (LiveMonitor), 20 ms blocks, the other publisher named in blocks 5-14: the pause
    publishes the kept payload once, suspect and not converged with why; the resume publishes it again, ok."""
    model, robot, task = cell
    j = task.joints
    live = LiveMonitor(model, robot, "wrist_3_link", None, publisher_silence_s=0.1)
    published = []
    for i, k in enumerate(range(0, 500, 10)):
        b = slice(k, k + 10)
        step = live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, SECOND if 5 <= i < 15 else "")
        if step.estimate is not None:
            published.append((i, step.estimate, step.update.estimate))
        if 5 <= i < 15:
            assert live.monitor is not None and live.monitor.state.unwatched == SECOND
            assert not live.monitor.state.determined
    assert [i for i, _, _ in published] == [5, 19], [i for i, _, _ in published]
    (_, paused, paused_state), (_, resumed, resumed_state) = published
    assert paused.quality is Quality.SUSPECT and not paused.converged
    assert any(r.startswith(f"not watched: {SECOND}") for r in paused.quality_reasons), paused.quality_reasons
    assert paused_state.unwatched == SECOND and paused.mass == 0.0
    assert resumed.quality is Quality.OK and resumed_state.unwatched == "" and resumed_state.determined
    assert live.monitor.state.determined and live.monitor.state.unwatched == ""


def test_the_controller_is_not_given_the_pause_and_keeps_what_it_holds(cell):
    """Through MonitorMode (the node's wiring, stand-ins for the node and the controller): ~/payload gets the pause's
    publication; the controller is given nothing for it (nothing new is known of the payload), and no refusal of a
    suspect payload is said for it."""
    from payload_id_ros.monitor_mode import MonitorMode  # noqa: PLC0415 - ROS only here
    from payload_id_ros.sensor_inbox import JointStateBatch  # noqa: PLC0415

    model, robot, task = cell
    j = task.joints
    node, controller, held = Node(), Controller(), {"est": None, "all": []}

    def publish(est):
        held["est"] = est
        held["all"].append(est)

    mode = MonitorMode(node, lambda: LiveMonitor(model, robot, "wrist_3_link", None, publisher_silence_s=0.1),
                       lambda: "", lambda: held["est"], publish, controller, lambda: False, None)
    mode.switch(True)
    for i, k in enumerate(range(0, 500, 10)):
        b = slice(k, k + 10)
        mode.feed(JointStateBatch(j.t[b], j.q[b], j.qd[b], j.tau[b], SECOND if 5 <= i < 15 else ""))
        if mode._apply_thread is not None:
            mode._apply_thread.join(10)
    unwatched = [e for e in held["all"] if any(r.startswith("not watched") for r in e.quality_reasons)]
    assert len(unwatched) == 1 and unwatched[0].quality is Quality.SUSPECT, [e.quality_reasons for e in held["all"]]
    assert held["all"][-1].quality is Quality.OK and np.all(held["all"][-1].phi == 0.0)
    warned = [text for level, text in node.logger.lines if level == "warn"]
    assert not [w for w in warned if "controller" in w], warned
    assert sum(w.startswith("monitor paused: 2 publishers") for w in warned) == 1, warned
