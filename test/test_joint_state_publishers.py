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
from payload_id_ros.joint_state_merge import SharedJointWatch, shared_joint_publishers

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
        resumed += [step.resumed] if step.resumed else []
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
        resumed += [step.resumed] if step.resumed else []
    assert len(said) == 1 and len(resumed) == 1, (said, resumed)
    assert last_named is not None
    _check(events, task, t_off, last_named + 1.0)
    assert abs(live.monitor.state.phi[0] - live.monitor.state.tare_mass) < 0.1 * PART     # the place: nothing carried
