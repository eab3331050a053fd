"""Publishes sensor_msgs/JointState at 100 Hz with a recognisable ramp until killed (plumbing test)."""
import sys

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState


def main() -> None:
    rclpy.init()
    node = Node("plumbing_talker")
    pub = node.create_publisher(JointState, "/joint_states", 10)
    count = [0]

    def tick() -> None:
        msg = JointState()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.name = ["j1", "j2"]
        msg.position = [float(count[0]), -float(count[0])]
        msg.velocity = [0.5, 0.25]
        msg.effort = [1.5, 2.5]
        pub.publish(msg)
        count[0] += 1

    node.create_timer(0.01, tick)
    print("talker ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
