"""`mock_hardware`: the MuJoCo-simulated robot cell behind ros2_control's topics, in real time.

Stands in for the robot and its joint_trajectory_controller: subscribes
`/<controller>/joint_trajectory` (trajectory_msgs/JointTrajectory), publishes `/joint_states`
(effort = motor torque with friction, rotor inertia and noise, divided by the drive gain) at
`rate_hz` and `/ft_sensor/wrench` (geometry_msgs/WrenchStamped in the sensor frame). A trajectory
the real controller would refuse (unknown joints, time_from_start not increasing, positions outside
the limits) is refused with a logged reason and the robot holds still.

The payload is set by the parameters payload_mass / payload_com / payload_inertia / payload_frame
(changeable at run time) or the service `~/set_payload` (payload_id_msgs/srv/SetPayload; mass 0
removes it). Physics runs in a thread on an absolute schedule of the node clock: each tick
advances the simulation to "now" one control period at a time and publishes every sample.

    python -m payload_id_ros.mock_hardware --ros-args -p urdf:=ur10 -p profile:=ur10
"""

from __future__ import annotations

import threading
import time

import numpy as np
import rclpy
from geometry_msgs.msg import WrenchStamped
from payload_id_msgs.srv import SetPayload
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_core.errors import PayloadIdError
from payload_id_core.inertia import from_mass_com_inertia
from payload_id_core.model import RobotModel
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.sim import SimulatedCell, load_profile
from payload_id_ros.conversions import msg_to_commanded, sec_to_time

_PAYLOAD_PARAMS = ("payload_mass", "payload_com", "payload_inertia", "payload_frame")


def payload_from(mass: float, com, inertia6, frame: str) -> PayloadEstimate | None:
    """PayloadEstimate from mass, CoM and inertia about the CoM [ixx, ixy, ixz, iyy, iyz, izz]; None for mass 0."""
    if not np.isfinite(mass) or mass < 0:
        raise PayloadIdError(f"payload mass {mass} kg", "give a mass >= 0 (0 removes the payload)")
    if mass == 0:
        return None
    com = np.asarray(com, float).reshape(-1)
    i6 = np.asarray(inertia6, float).reshape(-1)
    if com.size != 3 or i6.size != 6 or not (np.all(np.isfinite(com)) and np.all(np.isfinite(i6))):
        raise PayloadIdError("payload com needs 3 values and inertia 6 (ixx, ixy, ixz, iyy, iyz, izz)",
                             "give finite numbers")
    ixx, ixy, ixz, iyy, iyz, izz = i6
    ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return PayloadEstimate(frame=frame, phi=from_mass_com_inertia(float(mass), com, ic),
                           covariance=np.full((10, 10), np.nan), method="given")


class MockHardware(Node):
    def __init__(self):
        super().__init__("mock_hardware")
        self.declare_parameter("urdf", "ur10")
        self.declare_parameter("joint_names", [""])
        self.declare_parameter("profile", "clean")
        self.declare_parameter("controller", "joint_trajectory_controller")
        self.declare_parameter("rate_hz", 500.0)
        self.declare_parameter("seed", 0)
        self.declare_parameter("initial_positions", [0.0])
        self.declare_parameter("joint_states_topic", "/joint_states")
        self.declare_parameter("wrench_topic", "/ft_sensor/wrench")
        self.declare_parameter("payload_mass", 0.0)
        self.declare_parameter("payload_com", [0.0, 0.0, 0.0])
        self.declare_parameter("payload_inertia", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        self.declare_parameter("payload_frame", "")
        gp = lambda name: self.get_parameter(name).value  # noqa: E731

        names = [j for j in gp("joint_names") if j]
        self.model = RobotModel.from_urdf(gp("urdf"), joint_names=names or None)
        profile = load_profile(gp("profile"), self.model.n)
        self.rate_hz = float(gp("rate_hz"))
        q0 = np.asarray(gp("initial_positions"), float)
        if q0.size != self.model.n:
            q0 = np.clip(np.zeros(self.model.n), self.model.limits.lower, self.model.limits.upper)
        payload = self._payload_from_parameters()
        self.cell = SimulatedCell(self.model, profile, payload, seed=int(gp("seed")), rate_hz=self.rate_hz, q0=q0)
        self._lock = threading.Lock()
        self._t0 = self._now()
        self.cell.reset(q0, t=self._t0)
        self._produced = 0

        self.js_pub = self.create_publisher(JointState, gp("joint_states_topic"), 50)
        self.wrench_pub = self.create_publisher(WrenchStamped, gp("wrench_topic"), 50)
        topic = f"/{gp('controller').strip('/')}/joint_trajectory"
        self.create_subscription(JointTrajectory, topic, self._on_trajectory, 10)
        self.create_service(SetPayload, "~/set_payload", self._on_set_payload)
        self.add_on_set_parameters_callback(self._on_parameters)
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="mock_hardware_physics", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"simulating {self.model.urdf_path.name} ({self.model.n} joints, profile {profile.name}) at "
            f"{self.rate_hz:g} Hz; listening on {topic}")

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- payload ----------------------------------------------------------------------------------
    def _payload_from_parameters(self, overrides: dict | None = None) -> PayloadEstimate | None:
        values = {k: self.get_parameter(k).value for k in _PAYLOAD_PARAMS}
        values.update(overrides or {})
        frame = values["payload_frame"] or self.model.default_payload_frame
        self.model.frame_id(frame)
        return payload_from(float(values["payload_mass"]), values["payload_com"], values["payload_inertia"], frame)

    def _on_parameters(self, params) -> SetParametersResult:
        changed = {p.name: p.value for p in params if p.name in _PAYLOAD_PARAMS}
        if not changed:
            return SetParametersResult(successful=True)
        try:
            payload = self._payload_from_parameters(changed)
            with self._lock:
                self.cell.set_payload(payload)
        except PayloadIdError as err:
            return SetParametersResult(successful=False, reason=str(err))
        self.get_logger().info(f"payload now {'none' if payload is None else f'{payload.mass:g} kg at {payload.frame}'}")
        return SetParametersResult(successful=True)

    def _on_set_payload(self, request, response):
        p = request.payload
        try:
            frame = p.frame_id or self.model.default_payload_frame
            self.model.frame_id(frame)
            payload = payload_from(p.mass, [p.com.x, p.com.y, p.com.z], [p.ixx, p.ixy, p.ixz, p.iyy, p.iyz, p.izz], frame)
            with self._lock:
                self.cell.set_payload(payload)
        except PayloadIdError as err:
            response.success, response.message = False, str(err)
            self.get_logger().error(f"set_payload refused: {err}")
            return response
        response.success = True
        response.message = "payload removed" if payload is None else f"payload {payload.mass:g} kg at {payload.frame}"
        self.get_logger().info(response.message)
        return response

    # -- commands -------------------------------------------------------------------------------
    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            with self._lock:
                cmd = msg_to_commanded(msg, self.cell.time)
                self.cell.send(cmd)
        except (PayloadIdError, ValueError) as err:
            self.get_logger().error(f"trajectory rejected: {err}")
            return
        self.get_logger().info(f"trajectory accepted: {len(msg.points)} points, "
                               f"{cmd.time_from_start[-1]:.2f} s from t = {cmd.start_time:.3f}")

    # -- physics loop -----------------------------------------------------------------------------
    def _loop(self) -> None:
        period = 1.0 / self.rate_hz
        next_wake = time.monotonic()
        while self._running and rclpy.ok():
            due = int((self._now() - self._t0) * self.rate_hz) + 1 - self._produced
            if due > 0:
                # Far behind (a stall): skip ahead rather than publish a burst of stale samples.
                with self._lock:
                    if due > 50:
                        self.cell.advance(due - 1)
                        self._produced += due - 1
                        due = 1
                    s = self.cell.advance(due)
                    frame = getattr(self.cell, "sensor_frame", "")
                self._produced += due
                self._publish(s, frame)
            next_wake += period
            delay = next_wake - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_wake = time.monotonic()

    def _publish(self, s, frame: str) -> None:
        names = list(self.model.joint_names)
        for k in range(s.t.size):
            stamp = sec_to_time(float(s.t[k]))
            js = JointState()
            js.header.stamp = stamp
            js.name = names
            js.position = s.q[k].tolist()
            js.velocity = s.qd[k].tolist()
            js.effort = s.effort[k].tolist()
            self.js_pub.publish(js)
            if s.wrench is not None:
                w = WrenchStamped()
                w.header.stamp = stamp
                w.header.frame_id = frame
                (w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
                 w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z) = (float(v) for v in s.wrench[k])
                self.wrench_pub.publish(w)

    def stop(self) -> None:
        self._running = False
        self._thread.join(timeout=1.0)


def main(args=None) -> int:
    rclpy.init(args=args)
    try:
        node = MockHardware()
    except PayloadIdError as err:
        print(f"mock_hardware: error: {err}", flush=True)
        rclpy.try_shutdown()
        return 2
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
