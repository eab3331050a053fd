"""payload_estimator node: identifies the payload on the flange while the arm plays an excitation.

Subscribes /joint_states (matched by name), the commanded trajectory topic and /ft_sensor/wrench.
Action ~/identify (payload_id_msgs/action/Identify): asks the excitation player (its ~/excite
action) to play the trajectory, runs the online method on the samples (payload_id_core.payload.session), streams
feedback a few times a second, stops early when converged if the goal asks, and returns the result.
Cancel stops the motion (the player's decelerating stop) and returns the partial estimate; a
second goal while one runs is rejected; bad input aborts with the reason and stops the motion.

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

import numpy as np
import rclpy
import yaml
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from action_msgs.msg import GoalStatus
from payload_id_msgs.action import Excite, Identify
from payload_id_msgs.msg import PayloadEstimate as PayloadEstimateMsg
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.blas import limit_blas_threads
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.session import IdentificationRun, finalize, ft_calibration
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import threaded
from payload_id_ros.sensor_inbox import SensorInbox

FEEDBACK_PERIOD = 0.2        # s: feedback (and batch processing) at 5 Hz
DRAIN_PERIOD = 0.02          # s: sensor queues drained (and the wrench compensated) at 50 Hz
RECENT = 256                 # joint states kept to place each wrench sample in time
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


class PayloadEstimator(Node):
    def __init__(self) -> None:
        super().__init__("payload_estimator")
        d = self.declare_parameter
        d("urdf", "ur10")
        d("robot_yaml", "")
        d("payload_frame", "")
        d("method", "difference-rls")
        d("trajectory", "")
        d("effort_scale", [0.0])                 # [] / [0] -> the robot.yaml's
        d("joint_states_topic", "/joint_states")
        d("trajectory_topic", "/joint_trajectory_controller/joint_trajectory")
        d("wrench_topic", "/ft_sensor/wrench")
        d("sensor_frame", "")                     # "" -> the WrenchStamped frame_id
        d("excite_action", "excitation_player/excite")
        d("result_path", "")
        d("stale_timeout", 0.5)                   # s: older joint states are stale
        d("joint_states_wait", 3.0)               # s a goal waits for live joint states (a new driver's discovery)
        d("excite_timeout", 5.0)                  # s to find the player's action server
        d("use_wrench_inertia", True)
        p = lambda name: self.get_parameter(name).value  # noqa: E731

        from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415

        self.model = RobotModel.from_urdf(p("urdf"))
        self.frame = p("payload_frame") or self.model.default_payload_frame
        self.model.frame_id(self.frame)          # a frame the URDF lacks fails at start, with the list
        self.default_method = p("method")
        self.default_trajectory = p("trajectory")
        scale = [s for s in p("effort_scale") if s != 0.0]
        self.effort_scale = np.array(scale, dtype=float) if scale else None
        self.robot_yaml = p("robot_yaml")
        self.result_path = p("result_path")
        self.sensor_frame_param = p("sensor_frame")
        self.stale_timeout = float(p("stale_timeout"))
        self.joint_states_wait = float(p("joint_states_wait"))
        self.excite_timeout = float(p("excite_timeout"))
        self.use_wrench_inertia = bool(p("use_wrench_inertia"))
        self.robot = None
        self.robot_error: str | None = None
        self._load_robot()

        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()        # the timer and the goal thread both drain the joint states
        self._latest: tuple | None = None          # (receipt, stamp, q, qd, effort) in model order
        self._recent = (np.zeros(0), np.zeros((0, self.model.n)), np.zeros((0, self.model.n)))   # t, q, qd
        self._buffer: deque = deque()              # JointStateBatch while a goal collects
        self._collecting = False
        self._busy = False
        self._commanded: list = []                 # CommandedTrajectory heard while a goal runs
        self._last_cmd = None
        self._wrench_buf: deque = deque()
        self.estimate: PayloadEstimate | None = None
        self.ft_params = None
        self._sensor_name: str | None = None

        sensors = MutuallyExclusiveCallbackGroup()
        self.inbox = SensorInbox(self, self.model.joint_names, p("joint_states_topic"), p("wrench_topic"))
        self.create_subscription(JointTrajectory, p("trajectory_topic"), self._on_trajectory, 10,
                                 callback_group=sensors)
        self.create_timer(DRAIN_PERIOD, self._drain, callback_group=sensors)
        self.pub_payload = self.create_publisher(PayloadEstimateMsg, "~/payload", LATCHED)
        self.pub_markers = self.create_publisher(MarkerArray, "~/markers", LATCHED)
        self.pub_wrench = self.create_publisher(WrenchStamped, "~/wrench_compensated", qos_profile_sensor_data)
        actions = ReentrantCallbackGroup()
        self.excite = ActionClient(self, Excite, p("excite_action"), callback_group=actions)
        self._server = ActionServer(self, Identify, "~/identify", execute_callback=threaded(self._execute),
                                    goal_callback=self._on_goal, cancel_callback=lambda _h: CancelResponse.ACCEPT,
                                    callback_group=actions)
        self._load_last_result()
        self.get_logger().info(f"payload estimator ready: {self.model.n} joints, payload frame {self.frame}, "
                               f"method {self.default_method}")

    # -- configuration ----------------------------------------------------------------------------
    def _load_robot(self) -> None:
        if not self.robot_yaml:
            self.robot_error = ("no robot.yaml of the unloaded robot (parameter robot_yaml is empty); "
                                "run payload-id identify-robot on a bag of the robot without payload and set robot_yaml")
            self.get_logger().warn(self.robot_error)
            return
        try:
            from payload_id_core.robot_id import RobotIdentification  # noqa: PLC0415

            self.robot = RobotIdentification.load(self.robot_yaml, self.model)
        except PayloadIdError as err:
            self.robot_error = str(err)
            self.get_logger().error(f"robot_yaml {self.robot_yaml}: {err}")

    def _load_last_result(self) -> None:
        if not self.result_path:
            return
        try:
            with open(self.result_path) as f:
                d = yaml.safe_load(f)
        except FileNotFoundError:
            return
        except (OSError, yaml.YAMLError) as err:
            self.get_logger().warn(f"cannot read the last result {self.result_path}: {err}; starting without")
            return
        try:
            est = PayloadEstimate.from_dict(d)
            if d.get("covariance_about_frame_origin"):
                est.covariance = np.array(d["covariance_about_frame_origin"], dtype=float)
            ft_params = None
            if d.get("ft_parameters"):
                from payload_id_core.ft.storage import ft_parameters_from_dict  # noqa: PLC0415

                ft_params = ft_parameters_from_dict(self.model, d["ft_parameters"], f"{self.result_path} ft_parameters")
                self._sensor_name = ft_params.sensor.name
            self._set_estimate(est, ft_params=ft_params)
            kind = " (partial: a cancelled identification)" if d.get("partial") else ""
            self.get_logger().info(f"loaded the last result from {self.result_path}{kind}: "
                                   f"{conv.mass_text(est.mass, float('nan'))}")
        except PayloadIdError as err:
            self.get_logger().warn(f"last result {self.result_path}: {err}; starting without")

    def _save_result(self, est: PayloadEstimate, status: str) -> None:
        """The result file: the estimate, its status ('converged' | 'finished' | 'cancelled'; a cancelled
        goal's estimate is `partial`) and the F/T compensation parameters in the ft.yaml format."""
        if not self.result_path:
            return
        from payload_id_core.ft.storage import ft_parameters_to_dict  # noqa: PLC0415

        d = est.to_dict()
        d["covariance_about_frame_origin"] = np.nan_to_num(est.covariance, nan=0.0).tolist()
        d["status"] = status
        d["partial"] = status == "cancelled"
        if self.ft_params is not None:
            d["ft_parameters"] = ft_parameters_to_dict(self.model, self.ft_params)
        d["stamp"] = self._now()
        atomic_write_yaml(self.result_path, d)

    # -- subscriptions ----------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _drain(self) -> None:
        """50 Hz: take the queued joint states and wrenches; feed the goal's buffers; compensate the wrench."""
        self._drain_joints()
        publish = self.ft_params is not None and self.pub_wrench.get_subscription_count() > 0
        self.inbox.want_wrench(self._collecting or publish)
        wr = self.inbox.drain_wrenches()
        if wr is None:
            return
        if self._sensor_name is None:
            self._sensor_name = self.sensor_frame_param or self.inbox.wrench_frame
        if self._collecting:
            self._wrench_buf.append(wr)
        if publish:
            self._publish_compensated(*wr)

    def _drain_joints(self) -> None:
        """Take the queued joint states. The 50 Hz timer does; so does the goal thread before it judges them
        stale, so a late timer (a busy executor) is never mistaken for a silent driver."""
        with self._drain_lock:
            js = self.inbox.drain_joint_states()
            if js is None:
                return
            self._latest = (time.monotonic(), float(js.t[-1]), js.q[-1], js.qd[-1], js.effort[-1])
            rt, rq, rqd = self._recent
            self._recent = (np.concatenate([rt, js.t])[-RECENT:], np.concatenate([rq, js.q])[-RECENT:],
                            np.concatenate([rqd, js.qd])[-RECENT:])
            if self._collecting:
                self._buffer.append(js)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not msg.points:
            return
        cmd = conv.msg_to_commanded(msg, self._now())
        self._last_cmd = cmd
        if self._collecting:
            self._commanded.append(cmd)

    def _publish_compensated(self, t: np.ndarray, w: np.ndarray) -> None:
        """External wrench for a batch of sensor samples: the joint state at each stamp (interpolated),
        q̇ and q̈ from the commanded trajectory while one plays (measured q̇, q̈ = 0 otherwise)."""
        from payload_id_core.ft.compensate import compensate_batch  # noqa: PLC0415

        rt, rq, rqd = self._recent
        if rt.size == 0:
            return
        tq = np.clip(t, rt[0], rt[-1])
        q = np.column_stack([np.interp(tq, rt, rq[:, j]) for j in range(self.model.n)])
        qd = np.column_stack([np.interp(tq, rt, rqd[:, j]) for j in range(self.model.n)])
        qdd = np.zeros_like(q)
        cmd = self._last_cmd
        if cmd is not None:
            inside = (t >= cmd.start_time) & (t <= cmd.end_time)
            if inside.any():
                _, qd_c, qdd_c = sample_commanded([cmd], t[inside], self.model.joint_names)
                qd[inside], qdd[inside] = qd_c, qdd_c
        ext = compensate_batch(self.model, self.ft_params, q, qd, qdd, w, inertial=self.use_wrench_inertia)
        for k in range(t.size):
            out = WrenchStamped()
            out.header.stamp = conv.sec_to_time(float(t[k]))
            out.header.frame_id = self.ft_params.sensor.name
            f, tq_ = out.wrench.force, out.wrench.torque
            f.x, f.y, f.z, tq_.x, tq_.y, tq_.z = (float(v) for v in ext[k])
            self.pub_wrench.publish(out)

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

    def _ft_from_payload(self, est: PayloadEstimate, sensor: str | None = None):
        """Compensation parameters for a payload estimated from joint torques: the payload moved into the
        sensor frame (ft.ft_parameters_from_payload), keeping the offsets and base tilt of the last F/T
        calibration (identify_ft on a run's readings) when there is one, else none (zero)."""
        from payload_id_core.ft.storage import ft_parameters_from_payload  # noqa: PLC0415

        sensor = sensor or self._sensor_name or self.sensor_frame_param
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

    # -- the action -------------------------------------------------------------------------------
    def _on_goal(self, _goal) -> GoalResponse:
        with self._lock:
            if self._busy:
                self.get_logger().warn("identify goal rejected: an identification is already running")
                return GoalResponse.REJECT
            self._busy = True
        return GoalResponse.ACCEPT

    def _execute(self, gh):
        result = Identify.Result()
        result.convergence_time = float("nan")
        state = {"excite": None}
        try:
            return self._identify(gh, result, state)
        except PayloadIdError as err:
            self._stop_motion(state)
            result.message = f"aborted: {err}"
            self.get_logger().error(result.message)
            gh.abort()
            return result
        except Exception as err:  # noqa: BLE001 - never leave a goal hanging or the arm moving
            self._stop_motion(state)
            result.message = f"aborted: internal error {err!r}"
            self.get_logger().error(f"{result.message}\n{traceback.format_exc()}")
            gh.abort()
            return result
        finally:
            self._collecting = False
            self._buffer.clear()
            self._wrench_buf.clear()
            with self._lock:
                self._busy = False

    def _joint_states(self) -> tuple[float, str | None, tuple | None]:
        """(s since the last joint state was taken (inf: never), its joint-names error, the last complete one),
        drained first when the timer has not taken any for `stale_timeout`."""
        if self._joint_state_age() > self.stale_timeout:
            self._drain_joints()
        with self._drain_lock:
            return self._joint_state_age(), self.inbox.names_error, self._latest

    def _joint_state_age(self) -> float:
        receipt = self.inbox.last_receipt
        return math.inf if receipt is None else time.monotonic() - receipt

    def _check_joint_states(self, wait: float = 0.0) -> None:
        """Raise unless live, complete, finite joint states arrive. A goal first waits up to `wait` s for live
        ones: a driver (re)started just before is discovered by DDS only after ~0.5-2.5 s (measured on the
        loaded test machine), and until then the last sample held is the dead publisher's, whose age and
        joint names say nothing about the new one."""
        deadline = time.monotonic() + wait
        age, names_error, latest = self._joint_states()
        while age > self.stale_timeout and time.monotonic() < deadline:
            time.sleep(0.02)
            age, names_error, latest = self._joint_states()
        if age == math.inf:
            raise PayloadIdError("no joint states received", "start the robot driver (or mock_hardware) so "
                                 "/joint_states is published")
        if age > self.stale_timeout:
            raise PayloadIdError(f"the last joint state arrived {age:.2f} s ago", "the robot driver stopped "
                                 "publishing /joint_states; restart it")
        if names_error or latest is None:
            raise PayloadIdError(names_error or "no complete joint state received",
                                 "publish every joint of the URDF on the joint states topic")
        lag = self._now() - latest[1]
        if abs(lag) > self.stale_timeout:
            raise PayloadIdError(f"joint states are stamped {lag:.2f} s away from now (stale)",
                                 "check the driver's clock (use_sim_time) and that it publishes live samples")
        if not (np.all(np.isfinite(latest[2])) and np.all(np.isfinite(latest[4]))):
            raise PayloadIdError("the joint states carry NaN positions or efforts",
                                 "check the robot driver; the identification needs torques (effort) of every joint")

    def _identify(self, gh, result, state):
        goal = gh.request
        method = goal.method or self.default_method
        traj_name = goal.trajectory or self.default_trajectory
        if not traj_name:
            raise PayloadIdError("no trajectory given and no default", "set the goal's trajectory or the "
                                 "node's trajectory parameter")
        traj = load_trajectory(traj_name).for_model(self.model.joint_names)
        if self.robot is None:
            raise PayloadIdError(self.robot_error or "no robot identification", "set robot_yaml")
        run = IdentificationRun(self.model, self.robot, self.frame, method, traj.duration,
                                float(goal.max_duration), self.effort_scale)
        self._check_joint_states(wait=self.joint_states_wait)
        self._commanded.clear()
        self._buffer.clear()
        self._wrench_buf.clear()
        self._collecting = True
        self._send_excite(traj_name, state)

        feedback = Identify.Feedback()
        status = "running"
        while True:
            time.sleep(FEEDBACK_PERIOD)
            now = self._now()
            self._feed(run)
            if gh.is_cancel_requested:
                status = "cancelled"
                break
            self._check_joint_states()
            run.check_motion(now)
            est = run.estimate()
            if est is not None:
                measure = conv.relative_mass_std(est)
                run.record_history(run.elapsed(now), est)
                feedback.elapsed = run.elapsed(now)
                feedback.estimate = conv.estimate_to_msg(est, now, measure)
                feedback.convergence_measure = measure
                gh.publish_feedback(feedback)
                self.pub_payload.publish(feedback.estimate)
            else:                       # moving to the start pose: no estimate yet
                feedback.elapsed = 0.0
                gh.publish_feedback(feedback)
            if goal.stop_when_converged and run.converged:
                status = "converged"
                break
            if run.finished(now):
                status = "finished"
                break
            ex = state["excite"]
            if ex["result"] is not None:
                code, res = ex["result"]
                if code != GoalStatus.STATUS_SUCCEEDED:
                    raise PayloadIdError(f"the excitation player ended the motion: {res.message or code}",
                                         "see the excitation_player log")
                if run.window is None:
                    raise PayloadIdError(
                        "the excitation was played but no matching trajectory was heard on the trajectory topic",
                        "check the estimator's trajectory_topic against the player's controller")
                if now > run.window[1] + 0.5:
                    status = "finished"
                    break

        if status != "finished":
            run.end_window(self._now())
            self._stop_motion(state)
        self._feed(run)
        est = run.estimate()
        if est is None:
            if status == "cancelled":
                result.message = "cancelled before the excitation started: no estimate"
                gh.canceled()
                return result
            raise PayloadIdError("no samples were identified", "check the joint states and trajectory topics")
        est = finalize(est)
        before, after = run.torque_rmse(est)
        result.torque_rmse_before = [float(x) for x in before]
        result.torque_rmse_after = [float(x) for x in after]
        result.converged = bool(run.converged)
        result.convergence_time = float(est.convergence_time)
        ft_params = None
        sensor = self._sensor_name or self.sensor_frame_param
        if self._wrench_buf and sensor and status != "cancelled":
            wr = list(self._wrench_buf)
            t_w = np.concatenate([w[0] for w in wr])
            w = np.concatenate([w[1] for w in wr])
            keep = (t_w >= run.window[0]) & (t_w <= run.window[1])
            try:
                ft_params = ft_calibration(run, sensor, t_w[keep], w[keep])
            except PayloadIdError as err:
                # Without a calibration the last one's offsets and tilt stay (_ft_from_payload).
                self.get_logger().warn(f"F/T calibration on the run failed ({err}); compensating with the "
                                       "joint-torque estimate and the last calibration's offsets")
        measure = conv.relative_mass_std(est)
        if status == "cancelled":
            est.notes.append(f"partial: the goal was cancelled after {run.elapsed(self._now()):.2f} s of motion")
        result.estimate = conv.estimate_to_msg(est, self._now(), measure)
        self._set_estimate(est, ft_params=ft_params, measure=measure)
        self._save_result(est, status)
        if status == "cancelled":
            result.message = f"cancelled after {run.elapsed(self._now()):.2f} s of motion: partial estimate"
            self.get_logger().info(f"{result.message} ({est.mass:.4f} kg), saved as partial")
            gh.canceled()
            return result
        applied, note = (self._apply_to_controller(est) if goal.apply_to_controller else (False, ""))
        result.applied_to_controller = applied
        why = {"converged": "converged; motion stopped early", "finished": "excitation finished"}[status]
        result.message = f"{why}: {est.mass:.4f} kg with {est.method}" + (f"; {note}" if note else "")
        self.get_logger().info(result.message)
        gh.succeed()
        return result

    def _feed(self, run) -> None:
        cmds = list(self._commanded)
        for cmd in cmds[len(run.commanded):]:
            run.add_commanded(cmd)
        n = len(self._buffer)
        if n == 0:
            return
        batches = [self._buffer.popleft() for _ in range(n)]
        run.feed(np.concatenate([b.t for b in batches]), np.concatenate([b.q for b in batches]),
                 np.concatenate([b.effort for b in batches]))

    # -- the excitation player --------------------------------------------------------------------
    def _send_excite(self, trajectory: str, state: dict) -> None:
        if not self.excite.wait_for_server(timeout_sec=self.excite_timeout):
            raise PayloadIdError(f"no excitation player answers on {self.excite._action_name}",
                                 "start the excitation_player node")
        entry = {"handle": None, "result": None}
        state["excite"] = entry
        fut = self.excite.send_goal_async(Excite.Goal(trajectory=trajectory, speed_scale=1.0))
        if not _wait(fut, 5.0):
            raise PayloadIdError("the excitation player did not answer the goal", "check the excitation_player node")
        handle = fut.result()
        if not handle.accepted:
            raise PayloadIdError("the excitation player rejected the goal (already playing?)",
                                 "wait for the running excitation to end")
        entry["handle"] = handle

        def done(f):
            r = f.result()
            entry["result"] = (r.status, r.result)

        handle.get_result_async().add_done_callback(done)

    def _stop_motion(self, state: dict, timeout: float = 10.0) -> None:
        """Cancel the excite goal (the player brings the arm to rest) and wait until it has."""
        entry = state.get("excite")
        if not entry or entry["handle"] is None or entry["result"] is not None:
            return
        entry["handle"].cancel_goal_async()
        deadline = time.monotonic() + timeout
        while entry["result"] is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if entry["result"] is None:
            self.get_logger().error("the excitation player did not confirm the stop")

    # -- applying the result to the controller ----------------------------------------------------
    def _apply_to_controller(self, est: PayloadEstimate) -> tuple[bool, str]:
        try:
            from ur_msgs.srv import SetPayload as UrSetPayload  # noqa: PLC0415
        except ImportError:
            UrSetPayload = None
        if UrSetPayload is not None:
            cli = self.create_client(UrSetPayload, "/io_and_status_controller/set_payload")
            if not cli.wait_for_service(timeout_sec=2.0):
                return False, "UR set_payload service /io_and_status_controller/set_payload is not available"
            req = UrSetPayload.Request()
            req.mass = float(est.mass)
            req.center_of_gravity.x, req.center_of_gravity.y, req.center_of_gravity.z = (float(c) for c in est.com)
            ok = _wait(fut := cli.call_async(req), 5.0) and fut.result().success
            return bool(ok), "applied to the UR controller" if ok else "UR set_payload failed"
        try:
            from franka_msgs.srv import SetLoad  # noqa: PLC0415
        except ImportError:
            msg = ("apply_to_controller: the controller interface is unavailable (neither ur_msgs nor franka_msgs "
                   "is installed); the result was not applied")
            self.get_logger().warn(msg)
            return False, msg
        cli = self.create_client(SetLoad, "/service_server/set_load")
        if not cli.wait_for_service(timeout_sec=2.0):
            return False, "Franka set_load service /service_server/set_load is not available"
        req = SetLoad.Request()
        req.mass = float(est.mass)
        req.center_of_mass = [float(c) for c in est.com]
        req.load_inertia = [float(x) for x in est.inertia_about_com.reshape(-1)]
        ok = _wait(fut := cli.call_async(req), 5.0) and fut.result().success
        return bool(ok), "applied to the Franka controller" if ok else "Franka set_load failed"


def _wait(future, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return future.done()


def main(args=None) -> None:
    limit_blas_threads()
    rclpy.init(args=args)
    node = None
    try:
        node = PayloadEstimator()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PayloadIdError as err:
        print(f"payload_estimator: error: {err}", flush=True)
        raise SystemExit(2) from err
    finally:
        if node is not None:
            node.inbox.destroy()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    main()
