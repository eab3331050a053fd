"""payload_estimator node: identifies the payload on the flange while the arm plays an excitation.

Subscribes /joint_states (matched by name), the commanded trajectory topic and /ft_sensor/wrench.
Action ~/identify (payload_id_msgs/action/Identify): asks the excitation player (its ~/excite
action) to play the trajectory, runs the online method on the samples (payload_id_core.payload.session), streams
feedback a few times a second, stops early when converged if the goal asks, and returns the result.
Cancel stops the motion (the player's decelerating stop) and returns the partial estimate; a
second goal while one runs is rejected; bad input aborts with the reason and stops the motion.

Monitor mode (parameter `monitor`, service ~/monitor std_srvs/SetBool to start and stop it): between goals,
the live joint states feed payload_id_core.monitor.PayloadMonitor on the robot identification and the last
estimate; its events go out on ~/payload_event (payload_id_msgs/PayloadEvent), its residual on
~/monitor_residual (sensor_msgs/JointState, effort = measured minus modelled joint torque, N m, once per 20 ms
batch), and a re-estimate from the task motion replaces ~/payload once its mass and CoM are determined (not
persisted). `monitor_apply_to_controller` applies those re-estimates to the controller on a worker thread,
under the identify action's refusals; a part put down (nothing carried, to 3σ) applies the empty payload.
A goal suspends it; it restarts on the goal's estimate.

Publishes ~/payload (transient-local: late subscribers get the last estimate), ~/markers (rviz),
~/wrench_compensated (sensor wrench minus offsets, payload gravity and inertia, every sensor sample,
computed in batches and only while someone subscribes). Every result (a cancelled goal's partial
estimate too, flagged `partial`) is written to `result_path` with the F/T compensation parameters
(ft.yaml format) and read back at start, so compensation survives a restart.

CPU: the 500 Hz joint states and wrenches are not executor callbacks; a 50 Hz timer drains them
in batches (sensor_inbox), and the goal thread feeds the online method block-wise (update_batch).
Joint states count as stale by the time their last one was taken; the goal thread drains the queue
itself before it says so, and a goal waits for a live sample first (a restarted driver's is not the
dead one's last).
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass
from enum import Enum

import numpy as np
import yaml
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.client import ClientGoalHandle
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError, parse_choice
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.ft.compensate import FtParameters, compensate_batch
from payload_id_core.ft.storage import ft_parameters_from_dict, ft_parameters_from_payload, ft_parameters_to_dict
from payload_id_core.io.files import OutputNotWritable, atomic_write_yaml, check_output_file
from payload_id_core.monitor import DetectorSettings, MonitorSettings, PayloadMonitor
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.estimate import PayloadEstimate, Quality
from payload_id_core.payload.session import IdentificationRun, finalize, ft_calibration, goal_options
from payload_id_core.robot_id import DriveGains, RobotIdentification, resolve_drive_gains
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.effort import EffortUnit, check_drive_gains
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_msgs.action import Excite, Identify
from payload_id_msgs.msg import PayloadEstimate as PayloadEstimateMsg
from payload_id_msgs.msg import PayloadEvent
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import threaded, wait_for_future
from payload_id_ros.controller_payload import ControllerKind, ControllerPayload, ControllerSettings
from payload_id_ros.input_drops import describe as describe_drops
from payload_id_ros.node_main import run_node
from payload_id_ros.parameters import Range, declare_parameters, parameter
from payload_id_ros.sensor_inbox import JointStateBatch, SensorInbox

FEEDBACK_PERIOD = 0.2        # s: feedback (and batch processing) at 5 Hz
DRAIN_PERIOD = 0.02          # s: sensor queues drained (and the wrench compensated) at 50 Hz
RECENT = 256                 # joint states kept to place each wrench sample in time
PLAYED_SETTLE = 0.5          # s after the excitation's end before a played goal counts as finished
# The compensated wrench leaves in bursts of one drain period (10 samples at 500 Hz): a history of the
# sensor-data depth (5) would drop half of each. Subscribers that want every sample need a depth of
# >= 2 bursts too (rviz, which draws only the newest, does not).
WRENCH_OUT_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
EVENTS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


@dataclass(frozen=True)
class EstimatorParameters:
    """The payload_estimator's ROS parameters (config/<robot>.yaml, section /**/payload_estimator)."""

    urdf: str = parameter("ur10", "bundled robot name or a URDF path")
    robot_yaml: str = parameter("", "robot.yaml of the unloaded robot (payload-id identify-robot); required "
                                "for a goal")
    payload_frame: str = parameter("", "URDF frame the payload is identified in; '' = the robot's flange frame")
    method: str = parameter("difference-rls", "online method when a goal leaves it empty: difference-rls | "
                            "direct-rls")
    trajectory: str = parameter("", "excitation when a goal leaves it empty: bundled name or trajectory YAML path")
    effort_scale: tuple[float, ...] = parameter((0.0,), "torque = effort x scale per joint; zeros = the "
                                                "robot.yaml's scale (given as well, they must agree with it)")
    effort_unit: str = parameter("unknown", "what the driver's joint_states.effort are: current (UR drivers: motor "
                                 "currents, converted with robot.yaml's drive gains) | torque | unknown")
    joint_states_topic: str = parameter("/joint_states", "sensor_msgs/JointState topic of the robot driver")
    trajectory_topic: str = parameter("/joint_trajectory_controller/joint_trajectory",
                                      "JointTrajectory topic the controller is commanded on (heard, not published)")
    wrench_topic: str = parameter("/ft_sensor/wrench", "geometry_msgs/WrenchStamped topic of the F/T sensor")
    sensor_frame: str = parameter("", "URDF frame of the F/T sensor; '' = the WrenchStamped frame_id")
    excite_action: str = parameter("excitation_player/excite", "the excitation player's Excite action")
    result_path: str = parameter("", "YAML the last result is written to and loaded from at start; '' = none")
    stale_timeout: float = parameter(0.5, "s: joint states older than this abort a goal",
                                     valid=Range(low=0.0, low_open=True))
    joint_states_wait: float = parameter(3.0, "s a goal waits for live joint states (a just started driver's "
                                         "discovery)", valid=Range(low=0.0))
    excite_timeout: float = parameter(5.0, "s to find the excitation player's action server",
                                      valid=Range(low=0.0, low_open=True))
    use_wrench_inertia: bool = parameter(True, "compensate the payload's inertial wrench too, not only its weight")
    monitor: bool = parameter(False, "watch the payload during task motion between goals (~/payload_event); "
                              "the service ~/monitor starts and stops it")
    monitor_apply_to_controller: bool = parameter(False, "apply the monitor's determined re-estimates to the "
                                                  "controller (the same refusals as a goal's; a part put down "
                                                  "applies the empty payload)")
    # -- applying the result to the robot controller (controller_payload.py) --
    apply_to_controller: bool = parameter(False, "apply every finished goal's estimate to the controller, also "
                                          "when the goal does not ask (apply_to_controller)")
    controller: str = parameter("auto", "the controller's payload service: ur (ur_msgs SetPayload) | franka "
                                "(franka_msgs SetLoad) | auto (whichever is installed, ur first)")
    controller_service: str = parameter("", "its service name; '' = /io_and_status_controller/set_payload (ur), "
                                        "/service_server/set_load (franka)")
    controller_frame: str = parameter("", "URDF frame the controller takes CoM and inertia in (its flange: UR tool0, "
                                      "Franka panda_link8); '' = the payload frame")
    rated_payload_kg: float = parameter(0.0, "the robot's rated payload: heavier estimates are never applied; "
                                        "0 = not configured, nothing is applied", valid=Range(low=0.0))
    controller_wait: float = parameter(2.0, "s to find the controller's service before the apply step is skipped",
                                       valid=Range(low=0.0))
    controller_timeout: float = parameter(5.0, "s for the controller's answer",
                                          valid=Range(low=0.0, low_open=True))

    @property
    def controller_settings(self) -> ControllerSettings:
        return ControllerSettings(parse_choice(ControllerKind, self.controller, "controller"),
                                  self.controller_service, self.controller_frame, self.rated_payload_kg,
                                  self.controller_wait, self.controller_timeout)

    @property
    def effort_scale_override(self) -> np.ndarray | None:
        """The per-joint effort scale given here, or None: use the robot.yaml's."""
        scale = [s for s in self.effort_scale if s != 0.0]
        return np.array(scale, dtype=float) if scale else None


class GoalOutcome(Enum):
    """How an identify goal's motion ended. The value is the result file's `status`."""

    CONVERGED = "converged"      # the goal asked to stop when converged, and it did: motion stopped early
    FINISHED = "finished"        # the excitation played to its end
    CANCELLED = "cancelled"      # the client cancelled: motion stopped, the estimate is partial


@dataclass
class PlayerGoal:
    """The Excite goal an identification sent to the excitation player; `status` is set when it ends."""

    handle: ClientGoalHandle[Excite.Goal, Excite.Result, Excite.Feedback]
    status: int | None = None                    # action_msgs GoalStatus once the player has ended the goal
    result: Excite.Result | None = None

    @property
    def ended(self) -> bool:
        return self.status is not None

    def on_result(self, future) -> None:
        response = future.result()
        self.result = response.result
        self.status = response.status           # last: `ended` must not see a status without its result


@dataclass
class IdentifyGoal:
    """One identify goal while it runs."""

    handle: ServerGoalHandle[Identify.Goal, Identify.Result, Identify.Feedback]
    request: Identify.Goal
    run: IdentificationRun | None = None
    player: PlayerGoal | None = None


@dataclass(frozen=True)
class LatestJointState:
    """The last complete joint state, in model order."""

    stamp: float
    q: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class RecentJointStates:
    """The last RECENT joint states (t (N,), q, qd (N, n)), to place each wrench sample in time."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray

    @classmethod
    def empty(cls, n: int) -> RecentJointStates:
        return cls(np.zeros(0), np.zeros((0, n)), np.zeros((0, n)))

    def extended(self, batch: JointStateBatch) -> RecentJointStates:
        return RecentJointStates(np.concatenate([self.t, batch.t])[-RECENT:],
                                 np.concatenate([self.q, batch.q])[-RECENT:],
                                 np.concatenate([self.qd, batch.qd])[-RECENT:])

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, q̇) at the stamps t, interpolated (held at the ends)."""
        tq = np.clip(t, self.t[0], self.t[-1])
        n = self.q.shape[1]
        q = np.column_stack([np.interp(tq, self.t, self.q[:, j]) for j in range(n)])
        qd = np.column_stack([np.interp(tq, self.t, self.qd[:, j]) for j in range(n)])
        return q, qd


class PayloadEstimator(Node):
    def __init__(self) -> None:
        super().__init__("payload_estimator")
        self.params = declare_parameters(self, EstimatorParameters)
        params = self.params
        self.model = RobotModel.from_urdf(params.urdf)
        self.frame = params.payload_frame or self.model.default_payload_frame
        self.model.frame_id(self.frame)          # a frame the URDF lacks fails at start, with the list
        self.effort_unit = EffortUnit.parse(params.effort_unit)
        override = params.effort_scale_override
        # Zero, negative, NaN or a wrong count stop the node at start, naming the parameter.
        self.effort_scale = None if override is None else check_drive_gains(override, self.model.n,
                                                                            "parameter effort_scale")
        self.robot: RobotIdentification | None = None
        self.robot_error: str | None = None
        self.gains: np.ndarray | None = None       # torque = effort × gains (None: the efforts are torques)
        self.drive_gains: DriveGains | None = None  # resolved once at start; every goal takes them as given
        self._load_robot()

        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()        # the timer and the goal thread both drain the joint states
        self._latest: LatestJointState | None = None
        self._recent = RecentJointStates.empty(self.model.n)
        self._buffer: deque = deque()              # JointStateBatch while a goal collects
        self._collecting = False
        self._busy = False
        self._commanded: list[CommandedTrajectory] = []    # heard while a goal runs
        self._last_cmd: CommandedTrajectory | None = None
        self._wrench_buf: deque = deque()
        self.estimate: PayloadEstimate | None = None
        self.ft_params: FtParameters | None = None
        self._sensor_name: str | None = None

        sensors = MutuallyExclusiveCallbackGroup()
        # Samples stamped further ahead than stale_timeout are a clock jump: dropped (a lag is judged per goal).
        self.inbox = SensorInbox(self, self.model.joint_names, params.joint_states_topic, params.wrench_topic,
                                 future_tolerance=params.stale_timeout)
        self._drops_at_start = (self.inbox.joint_drops.snapshot(), self.inbox.wrench_drops.snapshot())
        self.create_subscription(JointTrajectory, params.trajectory_topic, self._on_trajectory, 10,
                                 callback_group=sensors)
        self.create_timer(DRAIN_PERIOD, self._drain, callback_group=sensors)
        self.pub_payload = self.create_publisher(PayloadEstimateMsg, "~/payload", LATCHED)
        self.pub_markers = self.create_publisher(MarkerArray, "~/markers", LATCHED)
        self.pub_wrench = self.create_publisher(WrenchStamped, "~/wrench_compensated", WRENCH_OUT_QOS)
        actions = ReentrantCallbackGroup()
        self.excite: ActionClient[Excite.Goal, Excite.Result, Excite.Feedback] = ActionClient(
            self, Excite, params.excite_action, callback_group=actions)
        self.controller = ControllerPayload(self, self.model, self.frame, params.controller_settings)
        self._server = ActionServer(self, Identify, "~/identify", execute_callback=threaded(self._execute),
                                    goal_callback=self._on_goal, cancel_callback=lambda _h: CancelResponse.ACCEPT,
                                    callback_group=actions)
        self.pub_event = self.create_publisher(PayloadEvent, "~/payload_event", EVENTS)
        self.pub_residual = self.create_publisher(JointState, "~/monitor_residual", 10)
        self._apply_pending: PayloadEstimate | None = None     # the monitor's newest, for the apply thread
        self._apply_thread: threading.Thread | None = None
        self.monitor: PayloadMonitor | None = None
        self._monitor_on = False
        self._monitor_silent = False               # said once that the joint states stopped
        self.create_service(SetBool, "~/monitor", self._on_monitor_request, callback_group=sensors)
        self._load_last_result()
        self._warn_if_result_unwritable()
        if params.monitor:
            ok, why = self._set_monitoring(True)
            if not ok:
                self.get_logger().error(f"monitor not started: {why}")
        self.get_logger().info(f"payload estimator ready: {self.model.n} joints, payload frame {self.frame}, "
                               f"method {params.method}")

    def close(self) -> None:
        """Before the node is destroyed: the inbox's side node goes with it."""
        self.inbox.destroy()

    # -- configuration ----------------------------------------------------------------------------
    def _load_robot(self) -> None:
        robot_yaml = self.params.robot_yaml
        if not robot_yaml:
            self.robot_error = ("no robot.yaml of the unloaded robot (parameter robot_yaml is empty); "
                                "run payload-id identify-robot on a bag of the robot without payload and set "
                                "robot_yaml")
            self.get_logger().warn(self.robot_error)
            return
        try:
            self.robot = RobotIdentification.load(robot_yaml, self.model)
            # The gains a goal will use, decided now so a conflict with effort_scale is reported at start
            # (and every goal is refused with that reason) rather than after the arm has moved.
            gains = resolve_drive_gains(self.effort_unit, self.robot, self.effort_scale, self.model.n,
                                        recording_source="the driver's joint states", robot_source=robot_yaml,
                                        given_name="the effort_scale parameter")
        except PayloadIdError as err:
            self.robot = None
            self.robot_error = str(err)
            self.get_logger().error(f"robot_yaml {robot_yaml}: {err}")
            return
        self.drive_gains = gains
        if gains.source != "none":
            self.gains = np.asarray(gains.scale, dtype=float)
            self.get_logger().info(f"drive gains {np.round(gains.scale, 6).tolist()} from {gains.source}")

    def _load_last_result(self) -> None:
        path = self.params.result_path
        if not path:
            return
        try:
            with open(path) as f:
                d = yaml.safe_load(f)
        except FileNotFoundError:
            return
        except (OSError, yaml.YAMLError) as err:
            self.get_logger().warn(f"cannot read the last result {path}: {err}; starting without")
            return
        try:
            est = PayloadEstimate.from_dict(d)
            est.notes = [Note.from_any(n) for n in est.notes]     # older files hold plain strings
            if d.get("covariance_about_frame_origin"):
                est.covariance = np.array(d["covariance_about_frame_origin"], dtype=float)
            ft_params = None
            if d.get("ft_parameters"):
                ft_params = ft_parameters_from_dict(self.model, d["ft_parameters"], f"{path} ft_parameters")
                self._sensor_name = ft_params.sensor.name
            self._set_estimate(est, ft_params=ft_params)
            kind = " (partial: a cancelled identification)" if d.get("partial") else ""
            self.get_logger().info(f"loaded the last result from {path}{kind}: "
                                   f"{conv.mass_text(est.mass, float('nan'))}")
        except PayloadIdError as err:
            self.get_logger().warn(f"last result {path}: {err}; starting without")

    def _warn_if_result_unwritable(self) -> None:
        """Said once at start-up, so a cell learns before its first goal that results will not survive a restart."""
        if not self.params.result_path:
            return
        try:
            check_output_file(self.params.result_path)
        except OutputNotWritable as err:
            self.get_logger().warn(f"result_path: {err}; estimates will be delivered and published but not persisted")

    def _save_result(self, est: PayloadEstimate, outcome: GoalOutcome) -> str:
        """The result file: the estimate, its status (a cancelled goal's estimate is `partial`) and the F/T
        compensation parameters in the ft.yaml format. Returns why it could not be written ("" if it was):
        a full disk or a read-only directory must not cost the goal its estimate."""
        if not self.params.result_path:
            return ""
        d = est.to_dict()
        d["notes"] = [Note.from_any(n).to_dict() for n in est.notes]
        d["covariance_about_frame_origin"] = np.nan_to_num(est.covariance, nan=0.0).tolist()
        d["status"] = outcome.value
        d["partial"] = outcome is GoalOutcome.CANCELLED
        if self.ft_params is not None:
            d["ft_parameters"] = ft_parameters_to_dict(self.model, self.ft_params)
        d["stamp"] = self._now()
        try:
            atomic_write_yaml(self.params.result_path, d)
        except OSError as err:   # OutputNotWritable included
            problem = f"the estimate was not persisted: {err}"
            self.get_logger().error(problem)
            return problem
        return ""

    # -- subscriptions ----------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _drain(self) -> None:
        """50 Hz: take the queued joint states and wrenches; feed the goal's buffers or the monitor; compensate
        the wrench."""
        self._drain_joints()
        self._check_monitor_input()
        publish = self.ft_params is not None and self.pub_wrench.get_subscription_count() > 0
        self.inbox.want_wrench(self._collecting or publish)
        wr = self.inbox.drain_wrenches()
        if wr is None:
            return
        if self._sensor_name is None:
            self._sensor_name = self.params.sensor_frame or self.inbox.wrench_frame
        if self._collecting:
            self._wrench_buf.append(wr)
        if publish:
            self._publish_compensated(*wr)

    def _drain_joints(self) -> None:
        """Take the queued joint states. The 50 Hz timer does; so does the goal thread before it judges them
        stale, so a late timer (a busy executor) is never mistaken for a silent driver."""
        with self._drain_lock:
            js = self.inbox.drain_joint_states(self._now())
            if js is None:
                return
            self._latest = LatestJointState(float(js.t[-1]), js.q[-1], js.effort[-1])
            self._recent = self._recent.extended(js)
            if self._collecting:
                self._buffer.append(js)
            elif self._monitor_on and not self._busy:
                self._feed_monitor(js)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not msg.points:
            return
        cmd = conv.msg_to_commanded(msg, self._now())
        self._last_cmd = cmd
        if self._collecting:
            self._commanded.append(cmd)

    # -- monitor mode -------------------------------------------------------------------------------
    def _on_monitor_request(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.success, response.message = self._set_monitoring(bool(request.data))
        return response

    def _set_monitoring(self, on: bool) -> tuple[bool, str]:
        if not on:
            self._monitor_on, self.monitor = False, None
            return True, "monitor stopped"
        if self.robot is None:
            return False, f"no robot model to watch the payload with: {self.robot_error}"
        self._monitor_on, self.monitor = True, None       # built on the next joint states, on the last estimate
        self.get_logger().info("monitor started")
        return True, "monitor started"

    def _new_monitor(self) -> PayloadMonitor:
        assert self.robot is not None
        est = self.estimate
        phi = cov = None
        if est is not None and est.quality is Quality.OK:
            phi, cov = est.phi, np.nan_to_num(est.covariance, nan=0.0)
        rated = self.params.rated_payload_kg
        settings = MonitorSettings(detector=DetectorSettings(max_mass_kg=1.5 * rated if rated > 0 else math.inf))
        return PayloadMonitor(self.model, self.robot, self.frame, phi, cov, settings)

    def _feed_monitor(self, js: JointStateBatch) -> None:
        if self.monitor is None:
            self.monitor = self._new_monitor()
        tau = js.effort if self.gains is None else js.effort * self.gains[None, :]
        update = self.monitor.update(js.t, js.q, js.qd, tau)
        self._monitor_silent = False
        if update.paused:
            self.get_logger().warn(update.paused)
        for event in update.events:
            self.pub_event.publish(conv.payload_event_msg(event, self.frame))
            self.get_logger().info(f"payload event: {event.kind.value} at {event.t_change:.3f} s, Δm "
                                   f"{event.delta_mass:+.3f} ± {event.delta_mass_std:.3f} kg ({event.reason})")
        if update.residual is not None and self.pub_residual.get_subscription_count() > 0:
            t, r = update.residual
            self.pub_residual.publish(conv.joint_state_msg(conv.sec_to_time(t), self.model.joint_names,
                                                           np.zeros(0), np.zeros(0), r))
        if update.estimate is not None:
            est = update.estimate.to_estimate(self.frame)
            self._set_estimate(est)
            self.get_logger().info(f"monitor: payload re-estimated from task motion: "
                                   f"{conv.mass_text(est.mass, float(np.sqrt(est.covariance[0, 0])))}")
            if self.params.monitor_apply_to_controller:
                self._apply_in_background(est)

    def _apply_in_background(self, est: PayloadEstimate) -> None:
        """The service call blocks until the controller answers, and this executor is single-threaded (the
        answer would never be processed): a worker thread applies the newest re-estimate, one call at a time."""
        with self._lock:
            self._apply_pending = est
            if self._apply_thread is not None:
                return              # the running worker takes the newest when its call ends
            self._apply_thread = threading.Thread(target=self._apply_worker, name="monitor_apply", daemon=True)
            self._apply_thread.start()

    def _apply_worker(self) -> None:
        while True:
            with self._lock:
                est, self._apply_pending = self._apply_pending, None
                if est is None or self._busy:
                    # Nothing newer; or a goal runs, whose own result supersedes it. Cleared under the lock,
                    # so a re-estimate queued from now on starts a new worker.
                    self._apply_thread = None
                    return
            self.controller.apply(est, empty_ok=True)

    def _check_monitor_input(self) -> None:
        """Joint states that stop arriving feed nothing, so the monitor cannot notice: the node says so."""
        latest = self._latest
        if not self._monitor_on or self._busy or latest is None or self._monitor_silent:
            return
        age = self._now() - latest.stamp
        if age > self.params.stale_timeout:
            self._monitor_silent = True
            self.get_logger().warn(f"monitor paused: no joint states for {age:.2f} s; it restarts on the next "
                                   "good sample, no event meanwhile")

    def _publish_compensated(self, t: np.ndarray, w: np.ndarray) -> None:
        """External wrench for a batch of sensor samples: the joint state at each stamp (interpolated),
        q̇ and q̈ from the commanded trajectory while one plays (measured q̇, q̈ = 0 otherwise)."""
        recent, ft_params = self._recent, self.ft_params
        if recent.t.size == 0 or ft_params is None:
            return
        q, qd = recent.at(t)
        qdd = np.zeros_like(q)
        cmd = self._last_cmd
        if cmd is not None:
            inside = (t >= cmd.start_time) & (t <= cmd.end_time)
            if inside.any():
                _, qd_c, qdd_c = sample_commanded([cmd], t[inside], self.model.joint_names)
                qd[inside], qdd[inside] = qd_c, qdd_c
        ext = compensate_batch(self.model, ft_params, q, qd, qdd, w, inertial=self.params.use_wrench_inertia)
        finite = np.isfinite(ext).all(axis=1)     # the inbox drops non-finite readings; never publish one anyway
        for msg in conv.wrench_msgs(t[finite], ft_params.sensor.name, ext[finite]):
            self.pub_wrench.publish(msg)

    # -- estimate state ---------------------------------------------------------------------------
    def _set_estimate(self, est: PayloadEstimate, sensor: str | None = None, measure=None, ft_params=None) -> None:
        self.estimate = est
        now = self._now()
        self.pub_payload.publish(conv.estimate_to_msg(est, now, measure))
        self.pub_markers.publish(conv.markers_msg(est, now))
        if ft_params is None:
            ft_params = self._ft_from_payload(est, sensor)
        if ft_params is not None:
            self.ft_params = ft_params             # compensation is on from here

    def _sensor(self) -> str | None:
        """The F/T sensor's frame: the parameter, else the first WrenchStamped's frame_id (None: none heard)."""
        return self._sensor_name or self.params.sensor_frame or None

    def _ft_from_payload(self, est: PayloadEstimate, sensor: str | None = None) -> FtParameters | None:
        """Compensation parameters for a payload estimated from joint torques: the payload moved into the
        sensor frame (ft.ft_parameters_from_payload), keeping the offsets and base tilt of the last F/T
        calibration (identify_ft on a run's readings) when there is one, else none (zero)."""
        sensor = sensor or self._sensor()
        if not sensor:
            return None
        prev = self.ft_params if self.ft_params is not None and self.ft_params.sensor.name == sensor else None
        try:
            params = ft_parameters_from_payload(self.model, est, sensor,
                                                offset=None if prev is None else prev.offset,
                                                tilt=(0.0, 0.0) if prev is None else prev.tilt)
        except PayloadIdError as err:
            self.get_logger().warn(f"no wrench compensation: {err}")
            return None
        if prev is None:
            self.get_logger().warn(f"wrench compensation of {sensor} without sensor offsets or base tilt: no F/T "
                                   "calibration yet (an identification that runs to the end calibrates it)")
        else:
            params.gravity_norm = prev.gravity_norm
        return params

    # -- the action: admission and the outcome of every goal --------------------------------------
    def _on_goal(self, _goal) -> GoalResponse:
        with self._lock:
            if self._busy:
                self.get_logger().warn("identify goal rejected: an identification is already running")
                return GoalResponse.REJECT
            self._busy = True
        return GoalResponse.ACCEPT

    def _execute(self, gh):
        goal = IdentifyGoal(gh, gh.request)
        try:
            return self._identify(goal)
        except PayloadIdError as err:
            return self._abort(goal, f"aborted: {err}")
        except Exception as err:  # noqa: BLE001 - never leave a goal hanging or the arm moving
            return self._abort(goal, f"aborted: internal error {err!r}", traceback.format_exc())
        finally:
            self._collecting = False
            self._buffer.clear()
            self._wrench_buf.clear()
            with self._lock:
                self._busy = False
                self.monitor = None        # the monitor restarts on this goal's estimate

    def _abort(self, goal: IdentifyGoal, message: str, details: str = "") -> Identify.Result:
        """Stop the motion first, then abort the goal with the reason."""
        self._stop_motion(goal.player)
        self.get_logger().error(f"{message}\n{details}" if details else message)
        goal.handle.abort()
        return conv.identify_result(message)

    def _identify(self, goal: IdentifyGoal) -> Identify.Result:
        """Check the request, start the excitation, follow it until it ends, and answer the goal."""
        run = goal.run = self._new_run(goal.request)
        player = goal.player = self._start_motion(goal.request)
        outcome = self._follow(goal, run, player)
        return self._finish(goal, run, outcome)

    # -- the steps of a goal ----------------------------------------------------------------------
    def _new_run(self, request: Identify.Goal) -> IdentificationRun:
        """The online identification the goal asks for; bad requests fail here, before anything moves."""
        method = request.method or self.params.method
        options = goal_options(request.convergence, request.forgetting, request.noise_std, self.model.n)
        traj_name = request.trajectory or self.params.trajectory
        if not traj_name:
            raise PayloadIdError("no trajectory given and no default", "set the goal's trajectory or the "
                                 "node's trajectory parameter")
        traj = load_trajectory(traj_name).for_model(self.model.joint_names)
        if traj.duration is None:    # never: FourierTrajectory.__post_init__ fills in the Optional field
            raise PayloadIdError("the trajectory has no duration", "report this")
        if self.robot is None:
            raise PayloadIdError(self.robot_error or "no robot identification", "set robot_yaml")
        return IdentificationRun(self.model, self.robot, self.frame, method, traj.duration,
                                 float(request.max_duration), self.effort_scale, self.effort_unit, options=options,
                                 drive_gains=self.drive_gains)

    def _start_motion(self, request: Identify.Goal) -> PlayerGoal:
        """With live joint states only: collect from now on and ask the player to play the excitation."""
        self._check_joint_states(wait=self.params.joint_states_wait)
        self._commanded.clear()
        self._buffer.clear()
        self._wrench_buf.clear()
        self._drops_at_start = (self.inbox.joint_drops.snapshot(), self.inbox.wrench_drops.snapshot())
        self._collecting = True
        return self._send_excite(request.trajectory or self.params.trajectory)

    def _follow(self, goal: IdentifyGoal, run: IdentificationRun, player: PlayerGoal) -> GoalOutcome:
        """Every FEEDBACK_PERIOD: feed the samples, check the inputs, publish feedback, until the motion ends.
        Bad joint states or a motion the controller does not follow raise (the goal aborts)."""
        while True:
            time.sleep(FEEDBACK_PERIOD)
            now = self._now()
            self._feed(run)
            if goal.handle.is_cancel_requested:
                return GoalOutcome.CANCELLED
            self._check_joint_states()
            run.check_motion(now)
            self._publish_feedback(goal, run, now)
            outcome = self._motion_outcome(goal, run, player, now)
            if outcome is not None:
                return outcome

    def _publish_feedback(self, goal: IdentifyGoal, run: IdentificationRun, now: float) -> None:
        est = run.estimate()
        if est is None:                    # moving to the start pose: no estimate yet
            goal.handle.publish_feedback(conv.identify_feedback(0.0))
            return
        measure = conv.relative_mass_std(est)
        elapsed = run.elapsed(now)
        run.record_history(elapsed, est)
        estimate_msg = conv.estimate_to_msg(est, now, measure)
        goal.handle.publish_feedback(conv.identify_feedback(elapsed, estimate_msg, measure))
        self.pub_payload.publish(estimate_msg)

    def _motion_outcome(self, goal: IdentifyGoal, run: IdentificationRun, player: PlayerGoal,
                        now: float) -> GoalOutcome | None:
        """How the motion has ended by `now` (None: still under way); the player ending it badly raises."""
        if goal.request.stop_when_converged and run.converged:
            return GoalOutcome.CONVERGED
        if run.finished(now):
            return GoalOutcome.FINISHED
        if not player.ended:
            return None
        if player.status != GoalStatus.STATUS_SUCCEEDED:
            reason = (player.result.message if player.result is not None else "") or player.status
            raise PayloadIdError(f"the excitation player ended the motion: {reason}", "see the excitation_player log")
        if run.window is None:
            raise PayloadIdError(
                "the excitation was played but no matching trajectory was heard on the trajectory topic",
                "check the estimator's trajectory_topic against the player's controller")
        return GoalOutcome.FINISHED if now > run.window[1] + PLAYED_SETTLE else None

    def _finish(self, goal: IdentifyGoal, run: IdentificationRun, outcome: GoalOutcome) -> Identify.Result:
        """The final estimate from every sample, published, saved, optionally applied, and the goal answered."""
        cancelled = outcome is GoalOutcome.CANCELLED
        # max_duration ends the goal (FINISHED) while the player may still be playing: the arm must stop
        # then too, or it plays the rest of the excitation with nobody watching and blocks the next goal.
        if outcome is not GoalOutcome.FINISHED or (goal.player is not None and not goal.player.ended):
            run.end_window(self._now())
            self._stop_motion(goal.player)
        self._feed(run)
        run.flush()                        # joint states still waiting for the delay estimate (a short window)
        est = run.estimate()
        if est is None:
            if cancelled:
                goal.handle.canceled()
                return conv.identify_result("cancelled before the excitation started: no estimate")
            raise PayloadIdError("no samples were identified", "check the joint states and trajectory topics")
        est = finalize(run.with_online_covariance_extra(est), run.robot)
        drops = self._input_drops()
        if drops:
            est.notes.append(Note(NoteCode.NODE_INPUTS_DROPPED, drops))
        before, after = run.torque_rmse(est)
        # A cancelled run's wrenches cover only part of the excitation: too little to calibrate the sensor.
        ft_params = None if cancelled else self._calibrate_ft(run)
        measure = conv.relative_mass_std(est)
        played = run.elapsed(self._now())
        if cancelled:
            est.notes.append(Note(NoteCode.GOAL_CANCELLED,
                                  f"partial: the goal was cancelled after {played:.2f} s of motion"))
        estimate_msg = conv.estimate_to_msg(est, self._now(), measure)
        self._set_estimate(est, ft_params=ft_params, measure=measure)
        not_persisted = self._save_result(est, outcome)
        applied = False
        if cancelled:
            message = f"cancelled after {played:.2f} s of motion: partial estimate"
            self.get_logger().info(f"{message} ({est.mass:.4f} kg), saved as partial")
        else:
            asked = bool(goal.request.apply_to_controller) or self.params.apply_to_controller
            applied, note = (self.controller.apply(est, bool(goal.request.apply_even_if_suspect))
                             if asked else (False, ""))
            why = ("converged; motion stopped early" if outcome is GoalOutcome.CONVERGED
                   else "excitation finished")
            quality = ("" if est.quality is Quality.OK
                       else f" ({est.quality.value.upper()}: {'; '.join(est.quality_reasons)})")
            message = f"{why}: {est.mass:.4f} kg with {est.method}{quality}" + (f"; {note}" if note else "")
            self.get_logger().info(message)
        message += f"; {drops}" if drops else ""
        message += f"; {not_persisted}" if not_persisted else ""
        # A suspect estimate is not converged whatever the online rule said (finish.judge_quality).
        result = conv.identify_result(message, estimate_msg, converged=run.converged and est.converged,
                                      convergence_time=est.convergence_time, torque_rmse_before=before,
                                      torque_rmse_after=after, applied_to_controller=applied)
        if cancelled:
            goal.handle.canceled()
        else:
            goal.handle.succeed()
        return result

    def _calibrate_ft(self, run: IdentificationRun) -> FtParameters | None:
        """F/T sensor parameters from the wrenches of the excitation window (None: no sensor, no window
        (then no estimate either) or it failed)."""
        sensor = self._sensor()
        if not (self._wrench_buf and sensor) or run.window is None:
            return None
        t0, t1 = run.window
        wr = list(self._wrench_buf)
        t_w = np.concatenate([w[0] for w in wr])
        w = np.concatenate([w[1] for w in wr])
        keep = (t_w >= t0) & (t_w <= t1)
        try:
            return ft_calibration(run, sensor, t_w[keep], w[keep])
        except PayloadIdError as err:
            # Without a calibration the last one's offsets and tilt stay (_ft_from_payload).
            self.get_logger().warn(f"F/T calibration on the run failed ({err}); compensating with the "
                                   "joint-torque estimate and the last calibration's offsets")
            return None

    def _feed(self, run: IdentificationRun) -> None:
        cmds = list(self._commanded)
        for cmd in cmds[len(run.commanded):]:
            run.add_commanded(cmd)
        n = len(self._buffer)
        if n == 0:
            return
        batches = [self._buffer.popleft() for _ in range(n)]
        run.feed(np.concatenate([b.t for b in batches]), np.concatenate([b.q for b in batches]),
                 np.concatenate([b.effort for b in batches]))

    # -- joint state checks -----------------------------------------------------------------------
    def _joint_states(self) -> tuple[float, str | None, LatestJointState | None]:
        """(s since the last complete sample was taken (inf: never), why the messages taken since made none, the
        last complete sample), drained first when the timer has not made any for `stale_timeout`."""
        if self._joint_state_age() > self.params.stale_timeout:
            self._drain_joints()
        with self._drain_lock:
            return self._joint_state_age(), self.inbox.problem, self._latest

    def _joint_state_age(self) -> float:
        receipt = self.inbox.last_sample_receipt
        return math.inf if receipt is None else time.monotonic() - receipt

    def _check_joint_states(self, wait: float = 0.0) -> None:
        """Raise unless live, complete, finite joint states arrive. A goal first waits up to `wait` s for live
        ones: a driver (re)started just before is discovered by DDS only after ~0.5-2.5 s (measured on the
        loaded test machine), and until then the last sample held is the dead publisher's, whose age
        says nothing about the new one. Messages of other drivers (other joints) never count as live."""
        stale_timeout = self.params.stale_timeout
        deadline = time.monotonic() + wait
        age, problem, latest = self._joint_states()
        while age > stale_timeout and time.monotonic() < deadline:
            time.sleep(0.02)
            age, problem, latest = self._joint_states()
        if age > stale_timeout and problem is not None:
            since = "" if age == math.inf else f" (the last complete one arrived {age:.2f} s ago)"
            raise PayloadIdError(f"{problem}{since}", "publish every joint of the URDF, with finite values and "
                                 "increasing stamps, on the joint states topic")
        if age == math.inf or latest is None:
            raise PayloadIdError("no joint states received", "start the robot driver (or mock_hardware) so "
                                 "/joint_states is published")
        if age > stale_timeout:
            raise PayloadIdError(f"the last joint state arrived {age:.2f} s ago", "the robot driver stopped "
                                 "publishing /joint_states; restart it")
        lag = self._now() - latest.stamp
        if abs(lag) > stale_timeout:
            raise PayloadIdError(f"joint states are stamped {lag:.2f} s away from now (stale)",
                                 "check the driver's clock (use_sim_time) and that it publishes live samples")
        if not np.all(np.isfinite(latest.effort)):
            raise PayloadIdError("the joint states carry no efforts (NaN)",
                                 "check the robot driver; the identification needs torques (effort) of every joint")

    def _input_drops(self) -> str:
        """What the goal's inputs lost since collection started ('' if nothing): for its result and notes."""
        joints = self.inbox.joint_drops.since(self._drops_at_start[0])
        wrenches = self.inbox.wrench_drops.since(self._drops_at_start[1])
        parts = ([f"{describe_drops(joints)} joint state messages"] if joints else []) + \
                ([f"{describe_drops(wrenches)} wrench messages"] if wrenches else [])
        return f"dropped {' and '.join(parts)} as malformed or out of order" if parts else ""

    # -- the excitation player --------------------------------------------------------------------
    def _send_excite(self, trajectory: str) -> PlayerGoal:
        if not self.excite.wait_for_server(timeout_sec=self.params.excite_timeout):
            raise PayloadIdError(f"no excitation player answers on {self.params.excite_action}",
                                 "start the excitation_player node")
        future = self.excite.send_goal_async(Excite.Goal(trajectory=trajectory, speed_scale=1.0))
        handle = future.result() if wait_for_future(future, 5.0) else None    # None: no answer
        if handle is None:
            raise PayloadIdError("the excitation player did not answer the goal", "check the excitation_player node")
        if not handle.accepted:
            raise PayloadIdError("the excitation player rejected the goal (already playing?)",
                                 "wait for the running excitation to end")
        player = PlayerGoal(handle)
        handle.get_result_async().add_done_callback(player.on_result)
        return player

    def _stop_motion(self, player: PlayerGoal | None, timeout: float = 10.0) -> None:
        """Cancel the excite goal (the player brings the arm to rest) and wait until it has."""
        if player is None or player.ended:
            return
        player.handle.cancel_goal_async()
        deadline = time.monotonic() + timeout
        while not player.ended and time.monotonic() < deadline:
            time.sleep(0.02)
        if not player.ended:
            self.get_logger().error("the excitation player did not confirm the stop")


def main(args=None) -> int:
    return run_node("payload_estimator", PayloadEstimator, args, close=PayloadEstimator.close)


if __name__ == "__main__":
    raise SystemExit(main())
