"""A goal thread draining the sensor inbox while the node closes under it (issue 32: a SIGINT run exited 1 with a
RuntimeError traceback from sensor_inbox._take_all): a destroyed inbox or a shut-down context yields no samples,
never an exception. In-process, no traffic: only the handles' lifetime matters."""

import rclpy
from rclpy.node import Node

from payload_id_ros.sensor_inbox import SensorInbox

JOINTS = ["a", "b"]


def _inbox():
    context = rclpy.Context()
    rclpy.init(context=context)
    owner = Node("inbox_owner", context=context, start_parameter_services=False)
    inbox = SensorInbox(owner, JOINTS, "/inbox_test/joint_states", "/inbox_test/wrench")
    inbox.want_wrench(True)
    return context, owner, inbox


def test_draining_a_destroyed_inbox_yields_nothing():
    context, owner, inbox = _inbox()
    assert inbox.drain_joint_states() is None and inbox.drain_wrenches() is None
    inbox.destroy()
    assert inbox.drain_joint_states() is None
    assert inbox.drain_wrenches() is None
    owner.destroy_node()
    rclpy.shutdown(context=context)


def test_draining_after_the_context_is_shut_down_yields_nothing():
    context, owner, inbox = _inbox()
    rclpy.shutdown(context=context)
    assert inbox.drain_joint_states() is None
    assert inbox.drain_wrenches() is None
