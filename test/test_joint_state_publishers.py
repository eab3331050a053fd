"""Issue 31 item 4: two publishers of the same joints on the joint states topic are told apart from a cell's other
drivers (joint_state_merge.shared_joint_publishers), and the monitor pauses on them instead of feeding two robots'
samples into one residual (LiveMonitor.feed's second_source), said once."""

import json
from pathlib import Path

import numpy as np
import pytest
from monitor_fixtures import live_cell

from payload_id_core.monitor.live import LiveMonitor
from payload_id_ros.joint_state_merge import shared_joint_publishers

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
    model, robot, task = cell
    j = task.joints
    live = LiveMonitor(model, robot, "wrist_3_link", None)
    blocks = [slice(k, k + 10) for k in range(0, 300, 10)]
    second = "2 publishers send joint states of the same joints (shoulder_pan_joint)"
    said = []
    for i, b in enumerate(blocks):
        source = second if 5 <= i < 15 else ""
        step = live.feed(j.t[b], j.q[b], j.qd[b], j.tau[b], None, source)
        said += [step.update.paused] if step.update.paused else []
        if source:
            assert step.update.residual is None and not step.update.events      # nothing fed
        else:
            assert step.update.residual is not None
    assert said == [f"monitor paused: {second}; it resumes when only one driver publishes these joints, no event "
                    "meanwhile"]
    assert live.monitor is not None and live.monitor.paused is None
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
