"""Sends one Identify goal and prints, as JSON lines, the feedback and the final status/result.

argv[1] = 'run' (wait for the result) or 'cancel' (cancel after the third feedback).
"""
import json
import sys
from typing import Any

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.node import Node

from payload_id_msgs.action import Identify


def main() -> int:
    mode = sys.argv[1]
    rclpy.init()
    node = Node("plumbing_identify_client")
    client: ActionClient[Any, Any, Any] = ActionClient(node, Identify, "/payload_estimator/identify")  # untyped msgs
    if not client.wait_for_server(timeout_sec=20.0):
        print(json.dumps({"error": "no server"}), flush=True)
        return 1
    feedbacks = []

    def on_feedback(msg):
        feedbacks.append(msg.feedback.elapsed)
        print(json.dumps({"feedback": msg.feedback.elapsed, "mass": msg.feedback.estimate.payload.mass}), flush=True)

    goal = Identify.Goal(method="direct-rls", trajectory="ur10_payload", max_duration=10.0)
    send = client.send_goal_async(goal, feedback_callback=on_feedback)
    rclpy.spin_until_future_complete(node, send, timeout_sec=10.0)
    handle = send.result()
    if handle is None or not handle.accepted:
        print(json.dumps({"error": "rejected"}), flush=True)
        return 1
    if mode == "cancel":
        while len(feedbacks) < 3:
            rclpy.spin_once(node, timeout_sec=0.1)
        cancel = handle.cancel_goal_async()
        rclpy.spin_until_future_complete(node, cancel, timeout_sec=10.0)
    result = handle.get_result_async()
    rclpy.spin_until_future_complete(node, result, timeout_sec=20.0)
    res = result.result()
    if res is None:
        print(json.dumps({"error": "no result within 20 s"}), flush=True)
        return 1
    status = {GoalStatus.STATUS_SUCCEEDED: "succeeded", GoalStatus.STATUS_CANCELED: "canceled",
              GoalStatus.STATUS_ABORTED: "aborted"}.get(res.status, str(res.status))
    print(json.dumps({"status": status, "mass": res.result.estimate.payload.mass,
                      "message": res.result.message}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
