"""A minimal Identify action server (plumbing test): 20 feedback messages over 2 s, then a result.

It only proves that goals, feedback, results and cancels cross processes with the generated
payload_id_msgs types; the real server is payload_estimator.
"""
import time

import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from payload_id_msgs.action import Identify


def main() -> None:
    rclpy.init()
    node = Node("plumbing_identify_server")

    def execute(goal_handle):
        feedback = Identify.Feedback()
        for k in range(20):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result = Identify.Result()
                result.message = "cancelled"
                return result
            feedback.elapsed = 0.1 * (k + 1)
            feedback.estimate.method = goal_handle.request.method
            feedback.estimate.payload.mass = 1.0 + 0.1 * k
            feedback.convergence_measure = 1.0 / (k + 1)
            goal_handle.publish_feedback(feedback)
            time.sleep(0.1)
        goal_handle.succeed()
        result = Identify.Result()
        result.converged = True
        result.estimate.payload.mass = 2.9
        result.message = f"done with {goal_handle.request.method}"
        return result

    ActionServer(node, Identify, "/payload_estimator/identify", execute_callback=execute,
                 goal_callback=lambda goal: GoalResponse.ACCEPT,
                 cancel_callback=lambda handle: CancelResponse.ACCEPT)
    print("server ready", flush=True)
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
