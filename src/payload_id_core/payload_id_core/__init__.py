"""payload_id_core: identification of robot and payload dynamics from joint torques and F/T sensors.

Pure Python (numpy, scipy, pinocchio, cvxpy); never imports rclpy, so it can be used, tested and
benchmarked without ROS. See docs/design.md for the layers and the data flow.
"""

from payload_id_core.errors import PayloadIdError

__all__ = ["PayloadIdError"]
__version__ = "0.1.0"
