"""The middleware works across real processes: topics, and the Identify action with feedback and cancel.

Each test runs rclpy in child processes started with the venv's python, on this run's
ROS_DOMAIN_ID with loopback-only discovery (test/conftest.py).
"""

import os
import subprocess
from pathlib import Path

import pytest
from ros_cell.json_lines import json_lines

HERE = Path(__file__).parent / "ros_plumbing"

pytestmark = pytest.mark.slow

LISTENER = """
import json, sys, rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState
rclpy.init()
node = Node('plumbing_listener')
got = []
node.create_subscription(JointState, '/joint_states', lambda m: got.append(m), 10)
import time
deadline = time.monotonic() + 20.0
while len(got) < 5 and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.1)
print(json.dumps({'n': len(got), 'names': list(got[-1].name) if got else [],
                  'position': list(got[-1].position) if got else [],
                  'effort': list(got[-1].effort) if got else []}), flush=True)
"""


def _wait_line(proc: subprocess.Popen, text: str) -> None:
    assert proc.stdout is not None and proc.stderr is not None, "spawn pipes both streams"
    line = proc.stdout.readline()
    assert text in line, f"child did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"


def test_environment_is_loopback_only_with_own_domain():
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert 0 < int(os.environ["ROS_DOMAIN_ID"]) <= 101


def test_joint_state_crosses_processes(spawn):
    talker = spawn(str(HERE / "joint_state_talker.py"))
    _wait_line(talker, "talker ready")
    listener = spawn("-c", LISTENER)
    out, err = listener.communicate(timeout=40)
    received = json_lines(out)[-1]
    assert received["n"] >= 5, err
    assert received["names"] == ["j1", "j2"]
    # The talker publishes position = [k, -k] and fixed efforts: the values survive the trip intact.
    assert received["position"][0] == -received["position"][1] > 0
    assert received["effort"] == [1.5, 2.5]


def test_identify_action_feedback_and_result(spawn):
    server = spawn(str(HERE / "identify_server.py"))
    _wait_line(server, "server ready")
    client = spawn(str(HERE / "identify_client.py"), "run")
    out, err = client.communicate(timeout=60)
    lines = json_lines(out)
    feedback = [d["feedback"] for d in lines if "feedback" in d]
    final = lines[-1]
    assert final.get("status") == "succeeded", (out, err)
    assert final["mass"] == pytest.approx(2.9)
    assert final["message"] == "done with direct-rls"
    assert len(feedback) >= 15  # 20 sent; a few may be lost before the client's subscription matches
    assert feedback == sorted(feedback)


def test_identify_action_cancel(spawn):
    server = spawn(str(HERE / "identify_server.py"))
    _wait_line(server, "server ready")
    client = spawn(str(HERE / "identify_client.py"), "cancel")
    out, err = client.communicate(timeout=60)
    lines = json_lines(out)
    final = lines[-1]
    assert final.get("status") == "canceled", (out, err)
    assert final["message"] == "cancelled"
    assert len([d for d in lines if "feedback" in d]) < 20
