"""Child process of test_joint_state_publishers: the estimator's SensorInbox on /joint_states while publishers send
joint states; prints one JSON line per drain case with the batch's `second_source`.

argv[1]: 'arm' (one driver of the arm's joints, and a gripper's own joints), 'two' (the arm's driver and a
second node publishing the same six joints frozen, as the red team's) or 'slow' (that second node at a few Hz: one
message every four drains, h143)."""

import json
import sys
import time

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState

from payload_id_ros.sensor_inbox import SensorInbox

ARM = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]


def _msg(node: Node, names, value: float) -> JointState:
    msg = JointState()
    msg.header.stamp = node.get_clock().now().to_msg()
    msg.name = list(names)
    msg.position = [value] * len(names)
    msg.velocity = [0.0] * len(names)
    msg.effort = [value] * len(names)
    return msg


def main() -> None:
    rclpy.init()
    owner = Node("payload_estimator")
    inbox = SensorInbox(owner, ARM, "/joint_states", "/ft_sensor/wrench")
    arm = Node("arm_driver")
    pub_arm = arm.create_publisher(JointState, "/joint_states", 10)
    other = Node("other_driver")
    pub_other = other.create_publisher(JointState, "/joint_states", 10)
    names_other = ["gripper_finger_joint"] if sys.argv[1] == "arm" else ARM
    other_every, messages = (40, 160) if sys.argv[1] == "slow" else (2, 60)
    deadline = time.monotonic() + 15.0   # discovery: both publishers matched by the inbox's subscription
    while inbox.node.count_publishers("/joint_states") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    found = []
    for k in range(messages):
        pub_arm.publish(_msg(arm, ARM, 0.01 * k))
        if k % other_every == 0:
            pub_other.publish(_msg(other, names_other, 0.0))
        time.sleep(0.005)
        if k % 10 == 9:
            batch = inbox.drain_joint_states()
            if batch is not None:
                found.append(batch.second_source)
    print(json.dumps({"second_source": found}), flush=True)
    inbox.destroy()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
