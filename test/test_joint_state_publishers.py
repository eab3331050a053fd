"""Issue 31 item 4: two publishers of the same joints on the joint states topic are told apart from a cell's other
drivers (joint_state_merge.shared_joint_publishers), and the monitor pauses on them instead of feeding two robots'
samples into one residual (LiveMonitor.feed's second_source), said once."""

import json
from pathlib import Path

import numpy as np
import pytest
from monitor_fixtures import live_cell
from test_redteam_issue31_h87 import PART, _check, _unwatched_pick

from payload_id_core.monitor.live import LiveMonitor
from payload_id_ros.joint_state_merge import (
    UNKNOWN_NODE_NAME,
    SharedJointWatch,
    publisher_label,
    shared_joint_publishers,
)

ARM = ("j1", "j2", "j3")
HERE = Path(__file__).parent / "ros_cell"


def test_a_second_publisher_of_the_same_joints_is_named_and_other_drivers_are_not():
    assert shared_joint_publishers([(b"a", ARM), (b"a", ARM)], ARM) == ""
    assert shared_joint_publishers([(b"a", ARM), (b"grip", ("finger",))], ARM) == ""     # a gripper's own joints
    assert shared_joint_publishers([(b"a", ARM[:2]), (b"b", ARM[2:])], ARM) == ""        # split drivers, merged
    assert shared_joint_publishers([(None, ARM), (None, ARM)], ARM) == ""                # no ids: cannot tell
    why = shared_joint_publishers([(b"a", ARM), (b"frozen", ARM), (b"a", ARM)], ARM)
    assert why.startswith("2 publishers send joint states of the same joints (j1, j2, j3)")
    assert "stop the other publisher" in why


@pytest.fixture(scope="module")
def cell():
    return live_cell()


def test_the_monitor_pauses_on_a_second_source_says_so_once_and_resumes(cell):
    """Named in 20 ms blocks 5-14 (0.10-0.30 s): paused from the first until the other publisher has been silent for
    max(0.1 s, 3 × 20 ms) of stamps (h144: it resumed on the first block without it, the pause said at each message)."""
    model, robot, task = cell
    j = task.joints
    live = LiveMonitor(model, robot, "wrist_3_link", None, publisher_silence_s=0.1)
    blocks = [slice(k, k + 10) for k in range(0, 500, 10)]
    second = "2 publishers send joint states of the same joints (shoulder_pan_joint)"
    said, resumed, fed = [], [], []
    for i, b in enumerate(blocks):
        source = second if 5 <= i < 15 else ""
        step = live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, source)
        said += [step.update.paused] if step.update.paused else []
        resumed += step.resumed
        if step.update.residual is not None:
            fed.append(i)
        else:
            assert not step.update.events                                   # nothing fed, nothing made
    last_named = float(j.t[blocks[14]][-1])
    first_fed_after = next(i for i in fed if i > 5)
    assert fed[:5] == [0, 1, 2, 3, 4] and first_fed_after == 19, fed        # 0.1 s of silence after block 14
    assert float(j.t[blocks[first_fed_after]][-1]) - last_named >= 0.1 - 1e-9
    assert fed[5:] == list(range(19, 50))
    assert said == [f"monitor paused: {second}; it resumes once the other publisher has been silent for max(0.1 s, "
                    "3 of its periods) (0.3 s until its period is known), no event meanwhile"]
    assert len(resumed) == 1 and resumed[0].startswith("monitor resumed: the other publisher of these joints has "
                                                       "been silent for 0.1"), resumed
    assert live.monitor is not None and live.monitor.paused is None and live.monitor.state.determined
    np.testing.assert_array_equal(live.monitor.state.phi, np.zeros(10))


@pytest.mark.slow
@pytest.mark.wall_clock     # DDS discovery and delivery of the two publishers' messages within the drains
def test_a_silence_ending_with_the_other_publishers_wait_says_both_resumes(cell):
    """A second source named in blocks 5-14 (to 0.30 s), then no joint states at all for 0.5 s (the node's silence,
    said at 0.90 s of its clock), then block 40 (from 0.80 s): one batch ends both pauses, and both are said (h215:
    the other publisher's line replaced the silence's)."""
    model, robot, task = cell
    j = task.joints
    live = LiveMonitor(model, robot, "wrist_3_link", None, publisher_silence_s=0.1)
    second = "2 publishers send joint states of the same joints (shoulder_pan_joint)"
    for i in range(15):
        b = slice(10 * i, 10 * i + 10)
        step = live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, second if i >= 5 else "")
        assert not step.resumed
    last = float(j.t[149])
    assert live.silence(last + 0.6, last).startswith("monitor paused: no joint states for 0.60 s")
    b = slice(400, 410)
    step = live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, "")
    assert step.update.residual is not None                     # fed: the other publisher silent for 0.5 s ≥ 0.1 s
    assert len(step.resumed) == 2, step.resumed
    assert step.resumed[0].startswith("monitor resumed: the other publisher of these joints has been silent for "
                                      "0.5"), step.resumed
    assert step.resumed[1] == (f"monitor resumed: joint states arrive again (stamped from {float(j.t[400]):.3f} s), "
                               "watched from there"), step.resumed
    b = slice(410, 420)
    assert not live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, "").resumed     # each said once


def test_the_inbox_names_a_second_publisher_of_the_arms_joints_over_ros(spawn):
    """Across processes' middleware (one child: publishers on their own nodes, the estimator's SensorInbox): a
    second node publishing the same six joints frozen is named in the batch; a gripper's joints are not."""
    out = {}
    for case in ("two", "arm"):
        proc = spawn(str(HERE / "two_publishers.py"), case)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        out[case] = json.loads([x for x in stdout.splitlines() if x.startswith("{")][-1])["second_source"]
    assert out["two"] and any(s.startswith("2 publishers send joint states of the same joints") for s in out["two"])
    assert out["arm"] and all(s == "" for s in out["arm"])


def test_the_inbox_keeps_a_publisher_until_it_has_been_silent_for_several_of_its_periods():
    """SharedJointWatch: a second publisher heard in one drain of four is named in every drain while it lives (h143:
    only in the drains its messages landed in), with both publishers' names, and forgotten once silent for max(1 s, 3 ×
    its interval)."""
    watch = SharedJointWatch(ARM, silence_s=1.0)
    labels = {b"a": "/arm_driver", b"b": "/other_driver"}
    named = []
    for k in range(44):                                         # 50 ms drains; the other heard every 0.2 s until 1 s
        now = k / 20
        watch.add([(b"a", ARM)] + ([(b"b", ARM)] if k % 4 == 0 and now <= 1.0 else []), now)
        named.append(watch.shared(labels))
    assert all(s.startswith("2 publishers send joint states of the same joints (j1, j2, j3): /arm_driver and "
                            "/other_driver;") for s in named[:40]), named
    # Last heard at 1.0 s, every 0.2 s: gone 1.0 s later (max(1 s, 0.6 s)), at 2.0 s.
    assert "(it counts as gone once silent for 1 s)" in named[20]
    assert named[39] and named[40:] == ["", "", "", ""], named[36:]
    # Heard once, its period unknown: taken as 1 s, so 3 s of silence.
    once = SharedJointWatch(ARM, silence_s=1.0)
    once.add([(b"a", ARM), (b"b", ARM)], 0.0)
    once.add([(b"a", ARM)], 2.9)
    assert once.shared().endswith("(it counts as gone once silent for 3 s)")
    once.add([(b"a", ARM)], 3.0)
    assert once.shared() == ""


def test_a_driver_restarted_within_its_old_publishers_wait_pauses_until_that_wait_ends():
    """A driver restarting (its old publisher's last message at 2.0 s, its new publisher's first `gap` s later, both
    every 20 ms drain) is two publishers of the same joints until the old one has been silent for its wait, max(1 s,
    3 × 20 ms) = 1 s: not only within one drain (h186's guess), any restart faster than 1 s pauses the monitor, from
    the new publisher's first drain to 1 s after the old one's last message (1 s − gap). A restart slower than that
    is never paused. The pause names each by its GID, neither being in the graph (h186: "_NODE_NAMESPACE_UNKNOWN_/
    _NODE_NAME_UNKNOWN_" and "?")."""
    old, new = bytes([1, 15, 0xAB, 0xCD]), bytes([1, 15, 0xEF, 0x01])
    paused_for = {}
    for gap in (0.02, 0.5, 0.96, 1.04):
        watch = SharedJointWatch(ARM, silence_s=1.0)
        named = []
        for k in range(201):                                    # 20 ms drains over 4 s
            now = round(k * 0.02, 6)
            heard = [(old, ARM)] if now <= 2.0 else []
            heard += [(new, ARM)] if now >= 2.0 + gap - 1e-9 else []
            watch.add(heard, now)
            why = watch.shared({})
            if why:
                named.append((now, why))
        paused_for[gap] = (named[0][0], named[-1][0]) if named else None
        if named:
            assert "a publisher not in the ROS graph (GID 01.0f.ab.cd: gone, or not discovered yet)" in named[0][1]
            assert "GID 01.0f.ef.01" in named[0][1] and "?" not in named[0][1], named[0][1]
    # Paused from the new publisher's first drain until the drain before the old one's 1 s of silence (3.0 s).
    assert paused_for[0.02] == pytest.approx((2.02, 2.98))
    assert paused_for[0.5] == pytest.approx((2.5, 2.98))
    assert paused_for[0.96] == pytest.approx((2.96, 2.98))
    assert paused_for[1.04] is None


def test_a_publisher_is_named_by_its_node_or_by_its_gid():
    """publisher_label: the graph's node name; for an endpoint the graph lists without its node (a restarted driver's
    old publisher) or not at all, what it likely is and its GID as `ros2 topic info --verbose` prints it."""
    gid = bytes([1, 15, 0x9A, 0, 0x14, 3])
    assert publisher_label(gid, "/", "ur_driver") == "/ur_driver"
    assert publisher_label(gid, "/cell", "ur_driver") == "/cell/ur_driver"
    assert publisher_label(gid, "_NODE_NAMESPACE_UNKNOWN_", UNKNOWN_NODE_NAME) == (
        "a publisher without a node name (GID 01.0f.9a.00.14.03: its node has left, e.g. a driver that restarted, "
        "or it is no ROS node)")
    assert publisher_label(gid) == "a publisher not in the ROS graph (GID 01.0f.9a.00.14.03: gone, or not discovered "\
        "yet)"


@pytest.mark.slow
def test_a_pick_while_a_second_publisher_paused_the_monitor_is_named_not_located(ur10_cell_robot):
    """A 3 kg pick while a second publisher of the same joints sends at 5 Hz for 1 s (LiveMonitor paused from its
    first message to 1 s after its last): named `picked` once after the resume, the part's mass within 2σ, its time not
    located (the span from before the pause contains it); the place after it dated as before; the pause and the resume
    each said once."""
    model, robot = ur10_cell_robot
    task, t_off, t_on = _unwatched_pick(model, 3, -0.4, 1.0)
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    live = LiveMonitor(model, robot, "wrist_3_link", None, rated_payload_kg=10.0)
    events, said, resumed, last_named = [], [], [], None
    for i, k in enumerate(range(0, t.size, 10)):                          # 20 ms blocks of the 500 Hz joint states
        named = t_off <= t[k] < t_on and i % 10 == 0
        last_named = float(t[min(k + 9, t.size - 1)]) if named else last_named
        step = live.feed(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10], None,
                         "2 publishers send joint states of the same joints (shoulder_pan_joint)" if named else "")
        events += step.update.events
        said += [step.update.paused] if step.update.paused else []
        resumed += step.resumed
    assert len(said) == 1 and len(resumed) == 1, (said, resumed)
    assert last_named is not None
    _check(events, task, t_off, last_named + 1.0)
    assert abs(live.monitor.state.phi[0] - live.monitor.state.tare_mass) < 0.1 * PART     # the place: nothing carried
