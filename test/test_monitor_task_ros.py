"""The payload monitor across processes on the simulated cell (issue 17 items 1, 2 and 4), as `make demo-monitor`
runs it: mock_hardware (MuJoCo, `ur10` profile: friction, rotor inertia, noise, lag) and payload_estimator with
`monitor:=true` (config/ur10.yaml) under the supervisor; this process drives a pick-and-place task over ROS
(JointTrajectory moves, mock_hardware's ~/set_payload for the part, its `external_torque` for a push) and
hears ~/payload_event, ~/payload and ~/monitor_residual; test/ros_cell/fake_controller.py serves UR's
set_payload (the test-only ur_msgs) and records what the monitor applied.

On simulated time (mock_hardware's /clock, at most real time; the task paced and dated on it): in real time a
loaded machine made mock_hardware skip the periods it missed (>100 ms late), the monitor paused on each gap and a pick
made in one was rightly "not located" (h167: 1 run of 1 at load 20 failed so). Slowed down instead, the simulation
feeds the monitor every sample whatever the load, so what is asserted is the monitor's, not the machine's.

Each event type once, at its true time: picked, contact, changed (a regrasp of the same part at rest), placed;
nothing else. The re-estimates are published with σ that covers their error, and reach the controller: the
part while carried, the empty payload once it is put down.
"""
import json
from pathlib import Path

import numpy as np
import pytest
from ros_cell.controller_interfaces import build_prefix, environment

from payload_id_ros.demo import MONITOR_ROBOT_TRAJECTORY
from payload_id_ros.demo_monitor import PART, REGRASPED, run_cell, summarise

pytestmark = [pytest.mark.slow, pytest.mark.wall_clock]
HERE = Path(__file__).parent / "ros_cell"
# 5 s of motion after the pick and the regrasp: a re-estimate is published once determined (1 s of motion, then
# 6 blocks of 0.5 s), and with 4 s one fresh-clone CI run of 7 in stop 24 had none in time (KeyError 'estimate').
TASK = [("move", 2), ("pick",), ("move", 5), ("push",), ("move", 2), ("regrasp",), ("move", 5), ("place",),
        ("move", 4)]
MATCH_S = 0.2


@pytest.fixture(scope="module")
def run(ros_env, tmp_path_factory, unloaded_sim_robot_yaml):
    """The task once; (record, summary, controller requests)."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    out = tmp_path_factory.mktemp("monitor_task")
    robot_yaml = unloaded_sim_robot_yaml(MONITOR_ROBOT_TRAJECTORY)
    env = environment(build_prefix(), ros_env)
    requests = out / "requests.jsonl"
    controller = subprocess.Popen([sys.executable, str(HERE / "fake_controller.py"), "ur", "accept", str(requests)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
    try:
        assert "ready" in controller.stdout.readline()
        record = run_cell(out, robot_yaml, TASK, env=env,
                          estimator={"monitor_apply_to_controller": True, "controller": "ur"}, sim_time=True)
    finally:
        controller.terminate()
        try:
            controller.wait(timeout=10)
        except subprocess.TimeoutExpired:      # rclpy's shutdown now and then hangs on SIGTERM: by PID, for sure
            controller.kill()
            controller.wait(timeout=10)
    lines = requests.read_text().splitlines() if requests.exists() else []
    return record, summarise(record), [json.loads(x) for x in lines], out


def test_each_change_is_one_event_of_its_kind_at_its_time(run):
    record, summary, _, out = run
    kinds = [row["truth"]["kind"] for row in summary["changes"]]
    assert kinds == ["picked", "contact", "changed", "placed"], record.truth
    for row in summary["changes"]:
        event, truth = row["event"], row["truth"]
        assert event is not None, (truth, record.events, out)
        assert event["kind"] == truth["kind"], (truth, event)
        assert abs(event["t_change"] - truth["t"]) < MATCH_S
        # PayloadEvent.t_change_located, heard across processes (the message's default is false): dated, so its
        # alarm_delay below is a latency, not a span.
        assert event["t_change_located"] is True, event
    picked, _, _, placed = (row["event"] for row in summary["changes"])
    # The detector's own Δm from 0.1 s of rest: within 3σ and 10 % of the part.
    for event, dm in ((picked, PART["mass"]), (placed, -PART["mass"])):
        assert abs(event["delta_mass"] - dm) < max(3 * event["delta_mass_std"], 0.1 * PART["mass"]), event
    assert picked["alarm_delay_ms"] < 50 and placed["alarm_delay_ms"] < 50


def test_nothing_is_reported_without_a_change(run):
    _, summary, _, _ = run
    assert summary["false_events"] == [], summary["false_events"]


def test_re_estimates_cover_their_error_and_find_the_regrasped_com(run):
    record, summary, _, _ = run
    picked, _, changed, placed = summary["changes"]
    for row in (picked, changed):
        est = row["estimate"]
        err = est["mass"] - PART["mass"]
        assert abs(err) <= 3 * est["mass_std"], est           # never a confident wrong mass
        assert abs(err) < 0.05 * PART["mass"], est
    com = np.array(changed["estimate"]["com"])
    assert np.linalg.norm(com - REGRASPED["com"]) < 0.015, com
    assert np.linalg.norm(com - PART["com"]) > 0.04, com          # the new grasp, not the old one
    assert placed["estimate"]["mass"] == 0.0, placed            # nothing carried, said as nothing
    # The residual is published while the monitor runs (50 Hz).
    t = np.array([r[0] for r in record.residual])
    assert t.size > 20 * (t[-1] - t[0]), t.size


def test_the_controller_gets_the_part_and_then_the_empty_payload(run):
    record, summary, requests, _ = run
    assert requests, "the monitor applied nothing"
    carried = [r for r in requests if r["mass"] > 0]
    assert carried and all(abs(r["mass"] - PART["mass"]) < 0.05 * PART["mass"] for r in carried), requests
    assert requests[-1]["mass"] == 0.0 and requests[-1]["com"] == [0.0, 0.0, 0.0], requests

