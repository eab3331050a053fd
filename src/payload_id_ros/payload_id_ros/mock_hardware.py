"""`mock_hardware`: the MuJoCo-simulated robot cell behind ros2_control's topics, in real time.

Stands in for the robot and its joint_trajectory_controller: subscribes
`/<controller>/joint_trajectory` (trajectory_msgs/JointTrajectory), publishes `/joint_states`
(effort = motor torque with friction, rotor inertia and noise, divided by the drive gain) at
`rate_hz` and `/ft_sensor/wrench` (geometry_msgs/WrenchStamped in the sensor frame). A trajectory
the real controller would refuse (unknown joints, time_from_start not increasing, positions outside
the limits) is refused with a logged reason and the robot holds still.

The payload is set by the parameters payload_mass / payload_com / payload_inertia / payload_frame
(changeable at run time) or the service `~/set_payload` (payload_id_msgs/srv/SetPayload; mass 0
removes it). `external_torque` (one value per joint, changeable at run time) is a push from the
environment: it moves the arm but, as on a real robot, is not in the reported efforts (the payload
monitor's contact distractor; `make demo-monitor`).

Timing. Physics runs in its own thread on an absolute schedule (deadlines k·period from one
monotonic start, so lateness never accumulates): the sample of period k is computed one period
ahead and published at its deadline, so the computation's own duration does not move the
publication. Real time (default): stamps are the node clock at the schedule; after a stall of more
than 100 ms the simulation skips ahead (silently) instead of publishing a burst of stale samples.
Simulated time (`sim_time:=true`): the node owns the clock, starting at 0: it publishes `/clock`
(rosgraph_msgs/Clock) and stamps everything on it, stepping `real_time_factor` times faster than
the wall clock (0: as fast as it can); the other nodes run with `use_sim_time:=true`. `/clock` ticks every
`clock_period` of simulated time (10 ms; its sample is published after the tick), so a subscriber's clock trails
the newest stamp by up to that much.
`publish_log:=<path>` (debug) writes one line per joint-state publication, "wall_monotonic_s stamp_s",
to measure the publisher's own timing (bench/sim.py).

    python -m payload_id_ros.mock_hardware --ros-args -p urdf:=ur10 -p profile:=ur10
    python -m payload_id_ros.mock_hardware --ros-args -p sim_time:=true -p real_time_factor:=5.0
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_core.dynamics import RobotModel, from_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.sim import SimulatedCell, SimulationDiverged, load_profile
from payload_id_msgs.srv import SetPayload
from payload_id_ros import conversions as conv
from payload_id_ros.node_main import run_node
from payload_id_ros.parameters import Range, declare_parameters, parameter
from payload_id_ros.sim_clock import ClockPublisher

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


@dataclass(frozen=True)
class MockHardwareParameters:
    """mock_hardware's ROS parameters (config/<robot>.yaml, section /**/mock_hardware). The payload_*
    parameters may also change while the node runs."""

    urdf: str = parameter("ur10", "bundled robot name or a URDF path")
    joint_names: tuple[str, ...] = parameter(("",), "joints to simulate, in order; empty = every moving joint "
                                             "of the URDF")
    profile: str = parameter("clean", "data/sim/<profile>.yaml (or a path): friction, noise, drive gains, "
                             "F/T sensor")
    controller: str = parameter("joint_trajectory_controller", "listens on /<controller>/joint_trajectory")
    rate_hz: float = parameter(500.0, "joint states and wrenches per second",
                               valid=Range(low=0.0, low_open=True, hint="give a positive rate, e.g. 500.0"))
    seed: int = parameter(0, "seed of the simulated noise")
    initial_positions: tuple[float, ...] = parameter((0.0,), "rad per joint at start; another length = zeros "
                                                     "(clipped to the limits)")
    joint_states_topic: str = parameter("/joint_states", "where the joint states are published")
    wrench_topic: str = parameter("/ft_sensor/wrench", "where the F/T sensor's WrenchStamped is published")
    payload_mass: float = parameter(0.0, "kg carried on payload_frame; 0 = no payload")
    payload_com: tuple[float, ...] = parameter((0.0, 0.0, 0.0), "m, payload centre of mass in payload_frame")
    payload_inertia: tuple[float, ...] = parameter((0.0,) * 6, "kg m^2 about the CoM: ixx, ixy, ixz, iyy, iyz, izz")
    payload_frame: str = parameter("", "URDF frame carrying the payload; '' = the robot's flange frame")
    external_torque: tuple[float, ...] = parameter((0.0,), "N m per joint the environment applies (a contact, a "
                                                   "push), not reported in the efforts; another length = none "
                                                   "(changeable at run time)")
    sim_time: bool = parameter(False, "own the clock: publish /clock from 0 and stamp everything on it")
    clock_period: float = parameter(0.01, "s of simulated time between /clock messages with sim_time (at least "
                                    "one sample period: 0 = with every joint state)", dynamic_typing=True,
                                    valid=Range(low=0.0, hint="give seconds >= 0, e.g. 0.01"))
    real_time_factor: float = parameter(1.0, "simulated seconds per wall second with sim_time; 0 = as fast as "
                                        "possible", dynamic_typing=True,     # 4 or 4.0
                                        valid=Range(low=0.0, hint="give a factor > 0, or 0 for as fast as possible"))
    publish_log: str = parameter("", "debug: file of 'wall_monotonic_s stamp_s' per joint state published")


class MockHardware(Node):
    def __init__(self) -> None:
        super().__init__("mock_hardware")
        params = declare_parameters(self, MockHardwareParameters)
        self.params = params
        names = [j for j in params.joint_names if j]
        self.model = RobotModel.from_urdf(params.urdf, joint_names=names or None)
        profile = load_profile(params.profile, self.model.n)
        self.rate_hz = params.rate_hz
        self.sim_time = params.sim_time
        self.real_time_factor = params.real_time_factor
        if not self.sim_time and self.real_time_factor != 1.0:
            raise PayloadIdError(f"real_time_factor {self.real_time_factor:g} without simulated time",
                                 "add -p sim_time:=true (the node then publishes /clock), or use factor 1")
        q0 = np.asarray(params.initial_positions, float)
        if q0.size != self.model.n:
            q0 = np.clip(np.zeros(self.model.n), self.model.limits.lower, self.model.limits.upper)
        payload = self._payload_from_parameters()
        self.cell = SimulatedCell(self.model, profile, payload, seed=params.seed, rate_hz=self.rate_hz, q0=q0)
        self.cell.set_external_torque(self._external_torque(params.external_torque))
        self._lock = threading.Lock()
        # One anchor for stamps and schedule: sample k is stamped t_start + k·period and due then.
        self._start = time.monotonic()
        self.cell.reset(q0, t=0.0 if self.sim_time else self._now())
        self._log_path = params.publish_log
        self._log: list[tuple[float, float]] = []
        if self._log_path:
            open(self._log_path, "w", encoding="utf-8").close()

        self.js_pub = self.create_publisher(JointState, params.joint_states_topic, 50)
        self.wrench_pub = self.create_publisher(WrenchStamped, params.wrench_topic, 50)
        # /clock at its own period, not with each sample (sim_clock.ClockPublisher). Suspected of ~10 points of the
        # estimator's CPU on simulated time (h170); py-spy did not confirm it at load 27 (0 of 7035 samples in
        # TimeSource.clock_callback, docs/design.md).
        self.clock = ClockPublisher(self, params.clock_period, 1.0 / self.rate_hz) if self.sim_time else None
        topic = f"/{params.controller.strip('/')}/joint_trajectory"
        self.create_subscription(JointTrajectory, topic, self._on_trajectory, 10)
        self.create_service(SetPayload, "~/set_payload", self._on_set_payload)
        self.add_on_set_parameters_callback(self._on_parameters)
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="mock_hardware_physics", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"simulating {self.model.urdf_path.name} ({self.model.n} joints, profile {profile.name}) at "
            f"{self.rate_hz:g} Hz ({self._timing()}); listening on {topic}")

    def _timing(self) -> str:
        if not self.sim_time:
            return "real time"
        pace = "as fast as possible" if self.real_time_factor == 0 else f"{self.real_time_factor:g}x real time"
        assert self.clock is not None
        return f"simulated time on /clock, {pace}, the clock ticking every {self.clock.period * 1e3:g} ms"

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- payload ----------------------------------------------------------------------------------
    def _payload_from_parameters(self, overrides: dict | None = None) -> PayloadEstimate | None:
        values = {k: self.get_parameter(k).value for k in _PAYLOAD_PARAMS}
        values.update(overrides or {})
        frame = self.model.payload_frame(values["payload_frame"])
        return payload_from(float(values["payload_mass"]), values["payload_com"], values["payload_inertia"], frame)

    def _external_torque(self, values) -> np.ndarray | None:
        tau = np.asarray(values, dtype=float).reshape(-1)
        if tau.size != self.model.n or not np.any(tau):
            return None
        if not np.all(np.isfinite(tau)):
            raise PayloadIdError(f"external_torque {tau.tolist()} holds NaN or infinite values",
                                 f"give {self.model.n} finite values in N m (zeros: none)")
        return tau

    def _on_parameters(self, params) -> SetParametersResult:
        pushes = [p.value for p in params if p.name == "external_torque"]
        changed = {p.name: p.value for p in params if p.name in _PAYLOAD_PARAMS}
        try:
            # Both checked before either is applied: a refused change leaves the cell as it was.
            tau = self._external_torque(pushes[-1]) if pushes else None
            payload = self._payload_from_parameters(changed) if changed else None
        except PayloadIdError as err:
            return SetParametersResult(successful=False, reason=str(err))
        with self._lock:
            if pushes:
                self.cell.set_external_torque(tau)
            if changed:
                self.cell.set_payload(payload)
        if changed:
            carried = "none" if payload is None else f"{payload.mass:g} kg at {payload.frame}"
            self.get_logger().info(f"payload now {carried}")
        return SetParametersResult(successful=True)

    def _on_set_payload(self, request, response):
        mass, com, inertia6, frame = conv.payload_request_values(request.payload)
        try:
            frame = self.model.payload_frame(frame)
            payload = payload_from(mass, com, inertia6, frame)
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
                cmd = conv.msg_to_commanded(msg, self.cell.time)
                self.cell.send(cmd)
        except (PayloadIdError, ValueError) as err:
            self.get_logger().error(f"trajectory rejected: {err}")
            return
        self.get_logger().info(f"trajectory accepted: {len(msg.points)} points, "
                               f"{cmd.time_from_start[-1]:.2f} s from t = {cmd.start_time:.3f}")

    # -- physics loop -----------------------------------------------------------------------------
    def _advance(self, samples: int):
        with self._lock:
            return self.cell.advance(samples), getattr(self.cell, "sensor_frame", "")

    def _loop(self) -> None:
        try:
            self._run()
        except SimulationDiverged as err:
            # The physics is gone (an absurd payload or command): publishing on would feed the cell made-up
            # joint states, so the simulated robot falls silent like a faulted drive and says why once.
            self.get_logger().error(f"{err}; joint states stopped, restart mock_hardware")
        except Exception:
            if self._running and rclpy.ok():
                raise
            # Shutdown (Ctrl-C invalidates the context before spin returns): the last publish may fail.

    def _run(self) -> None:
        period = 1.0 / self.rate_hz
        # Wall seconds per sample; 0: no pacing. Simulated time computes a few ms of wall time per
        # chunk (fewer Python calls per sample); real time exactly one period ahead.
        pace = period / self.real_time_factor if self.real_time_factor > 0 else 0.0
        chunk = 1 if not self.sim_time else (10 if pace == 0 else max(1, int(round(0.004 / pace))))
        stall = max(int(round(0.1 / period)), 2 * chunk)      # samples behind that count as a stall
        queue: list = []                                      # computed samples not yet published
        start = self._start
        k = 0                                                 # index of the next sample to publish
        while self._running and rclpy.ok():
            if not queue:
                s, frame = self._advance(chunk)
                queue = [(s, i, frame) for i in range(s.t.size)]
            if pace > 0:
                late = (time.monotonic() - start) / pace - k
                if late > stall:
                    if self.sim_time:
                        start += late * pace                  # slower than asked: stretch, no burst
                    else:                                     # real time: drop the missed periods
                        skip = int(late) - len(queue)
                        if skip > 0:
                            self._advance(skip)
                        k += int(late)
                        queue = queue[int(late):]
                        continue
                delay = start + k * pace - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            s, i, frame = queue.pop(0)
            self._publish(s, i, frame)
            k += 1

    def _publish(self, s, k: int, frame: str) -> None:
        stamp = conv.sec_to_time(float(s.t[k]))
        if self.clock is not None:
            self.clock.tick(stamp)
        self.js_pub.publish(conv.joint_state_msg(stamp, self.model.joint_names, s.q[k], s.qd[k], s.effort[k]))
        if self._log_path:
            self._log.append((time.monotonic(), float(s.t[k])))
            if len(self._log) >= 500:
                self._flush_log()
        if s.wrench is not None:
            self.wrench_pub.publish(conv.wrench_msg(stamp, frame, s.wrench[k]))

    def _flush_log(self) -> None:
        if self._log:
            with open(self._log_path, "a", encoding="utf-8") as f:
                f.writelines(f"{a:.9f} {b:.9f}\n" for a, b in self._log)
            self._log = []

    def stop(self) -> None:
        self._running = False
        self._thread.join(timeout=1.0)
        if self._log_path:
            self._flush_log()


def main(args=None) -> int:
    return run_node("mock_hardware", MockHardware, args, close=MockHardware.stop)


if __name__ == "__main__":
    raise SystemExit(main())
