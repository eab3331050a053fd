"""A second publisher that misbehaves beside the robot driver, for the fault-injection tests.

  injector.py MODE [ROBOT]      publishes until killed; prints "injector ready" first
    ragged      /joint_states with the arm's names whose position, velocity or effort is shorter or longer
                than name, or a name given twice (100 Hz)
    gripper     /joint_states of a one-joint gripper driver (a joint the arm's URDF lacks, 100 Hz)
    subset      /joint_states naming the arm's first three joints only, all zero (100 Hz)
    wrench_nan  /ft_sensor/wrench in frame tool0 at 500 Hz: a constant wrench, every other reading NaN or Inf
"""
import sys

import numpy as np
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from sensor_msgs.msg import JointState

from payload_id_core.dynamics.model import RobotModel


def main() -> None:
    mode = sys.argv[1]
    robot = sys.argv[2] if len(sys.argv) > 2 else "ur10"
    names = list(RobotModel.from_urdf(robot).joint_names)
    n = len(names)
    rclpy.init()
    node = Node(f"injector_{mode}")
    count = [0]

    def stamped(msg):
        msg.header.stamp = node.get_clock().now().to_msg()
        return msg

    if mode == "wrench_nan":
        wpub = node.create_publisher(WrenchStamped, "/ft_sensor/wrench", 10)

        def wrench_tick() -> None:
            count[0] += 1
            msg = stamped(WrenchStamped())
            msg.header.frame_id = "tool0"
            bad = [np.nan, np.inf, -np.inf][count[0] % 3] if count[0] % 2 else None
            f, tq = msg.wrench.force, msg.wrench.torque
            f.x, f.y, f.z, tq.x, tq.y, tq.z = 1.0, -2.0, -20.0, 0.1, 0.2, 0.0
            if bad is not None:
                f.z = tq.y = float(bad)
            wpub.publish(msg)

        node.create_timer(0.002, wrench_tick)
    else:
        pub = node.create_publisher(JointState, "/joint_states", 10)
        ragged = [
            {"name": names, "position": [0.0] * (n - 1), "velocity": [0.0] * n, "effort": [0.0] * n},
            {"name": names, "position": [0.0] * (n + 1), "velocity": [0.0] * n, "effort": [0.0] * n},
            {"name": names, "position": [0.0] * n, "velocity": [0.0] * (n - 2), "effort": [0.0] * n},
            {"name": names, "position": [0.0] * n, "velocity": [], "effort": [0.0] * (n + 3)},
            {"name": names[:2] + names[:1], "position": [0.0] * 3, "velocity": [], "effort": [0.0] * 3},
        ]

        def tick() -> None:
            count[0] += 1
            if mode == "ragged":
                fields = ragged[count[0] % len(ragged)]
            elif mode == "gripper":
                fields = {"name": ["gripper_finger_joint"], "position": [0.01], "velocity": [0.0], "effort": [1.0]}
            elif mode == "subset":
                fields = {"name": names[:3], "position": [0.0] * 3, "velocity": [0.0] * 3, "effort": [0.0] * 3}
            else:
                raise SystemExit(f"injector: unknown mode {mode}")
            pub.publish(stamped(JointState(**fields)))

        node.create_timer(0.01, tick)
    print("injector ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
