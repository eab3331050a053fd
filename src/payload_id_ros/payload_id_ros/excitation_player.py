"""excitation_player node: plays a Fourier excitation through a joint_trajectory_controller's topic.

Action `~/excite` (payload_id_msgs/action/Excite). On a goal it loads the trajectory (YAML path or
bundled name), checks it against the joint limits *before publishing anything*, moves the arm
smoothly (rest-to-rest quintic) from its current joint state to the start pose, then publishes the
excitation as one JointTrajectory stamped with its absolute start time, reporting progress. A
cancel sends a short trajectory that brings the commanded velocity to zero smoothly from the
current commanded state (a decelerating stop), never a jump to a held position. So does SIGINT
(Ctrl-C) or SIGTERM: the node handles them itself (rclpy's handler would shut the context down
before anything could be published), publishes the stop, and only then exits.

Parameters: urdf, controller, joint_states_topic, rate_hz (points per second), limit_margin,
acceleration_limits ([] = payload_id defaults), start_delay (s between publishing and the
excitation's start, so the controller has the message in time), joint_state_timeout, joint_states_wait.
"""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_msgs.action import Excite
from payload_id_core.signals.commanded import sample_commanded   # imported up front: a stop must not wait for it
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.blas import limit_blas_threads
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.excitation.limits import MotionLimits, check_trajectory
from payload_id_core.excitation.playback import move_to_start, stop_trajectory, time_scaled
from payload_id_ros.action_thread import threaded
from payload_id_ros.conversions import commanded_to_msg

FEEDBACK_PERIOD = 0.1       # s
SETTLE = 0.1                # s waited after the last point before declaring the motion done
STOP_FLUSH = 0.3            # s the process stays up after a final stop so DDS delivers it


# -- the node ---------------------------------------------------------------------------------------
class ExcitationPlayer(Node):
    def __init__(self) -> None:
        super().__init__("excitation_player")
        self.declare_parameter("urdf", "ur10")
        self.declare_parameter("controller", "joint_trajectory_controller")
        self.declare_parameter("joint_states_topic", "/joint_states")
        self.declare_parameter("rate_hz", 100.0)
        self.declare_parameter("limit_margin", 0.05)
        self.declare_parameter("acceleration_limits", [0.0])
        self.declare_parameter("start_delay", 0.3)
        self.declare_parameter("joint_state_timeout", 2.0)
        # A goal waits this long for a live joint state: a driver (or this node) that has just started may
        # take a few seconds of discovery before its samples arrive.
        self.declare_parameter("joint_states_wait", 3.0)
        self.declare_parameter("start_pose_tolerance", 0.05)

        from payload_id_core.dynamics.model import RobotModel  # noqa: PLC0415

        p = self.get_parameter
        self.model = RobotModel.from_urdf(p("urdf").value)
        acc = [a for a in p("acceleration_limits").value if a > 0]
        self.limits = MotionLimits.from_model(self.model, margin=float(p("limit_margin").value),
                                              acceleration=acc or None)
        self.rate_hz = float(p("rate_hz").value)
        self.start_delay = float(p("start_delay").value)
        self.joint_state_timeout = float(p("joint_state_timeout").value)
        self.joint_states_wait = float(p("joint_states_wait").value)
        self.start_tol = float(p("start_pose_tolerance").value)
        topic = f"/{p('controller').value.strip('/')}/joint_trajectory"
        self.pub = self.create_publisher(JointTrajectory, topic, 10)
        self._lock = threading.Lock()
        self._joint_state: tuple[float, np.ndarray] | None = None   # (receipt time, q in model order)
        self._busy = False
        # What the controller is executing: (absolute start, CommandedTrajectory), for the stop.
        self._active: tuple[float, CommandedTrajectory] | None = None
        self._closing = False       # after the final stop (exit): nothing else is published
        self.create_subscription(JointState, p("joint_states_topic").value, self._on_joint_state, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self._server = ActionServer(self, Excite, "~/excite", execute_callback=threaded(self._execute),
                                    goal_callback=self._on_goal, cancel_callback=lambda _h: CancelResponse.ACCEPT,
                                    callback_group=ReentrantCallbackGroup())
        self.get_logger().info(f"excitation player ready: {self.model.n} joints, publishing to {topic}")

    # -- inputs ------------------------------------------------------------------------------------
    def _on_joint_state(self, msg: JointState) -> None:
        try:
            idx = [list(msg.name).index(j) for j in self.model.joint_names]
        except ValueError:
            return                          # a partial JointState (e.g. a gripper's): not ours
        q = np.array(msg.position, dtype=float)[idx]
        with self._lock:
            self._joint_state = (time.monotonic(), q)

    def _current_q(self) -> np.ndarray:
        wait = max(self.joint_states_wait, self.joint_state_timeout)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self._lock:
                js = self._joint_state
            if js is not None and time.monotonic() - js[0] < self.joint_state_timeout:
                if not np.all(np.isfinite(js[1])):
                    raise PayloadIdError("the joint states carry NaN positions", "check the robot driver")
                return js[1]
            time.sleep(0.02)
        raise PayloadIdError(f"no joint states with all of {self.model.joint_names} for "
                             f"{wait:g} s", "start the robot driver (or mock_hardware)")

    def _on_goal(self, _goal) -> GoalResponse:
        with self._lock:
            if self._busy:
                self.get_logger().warn("excite goal rejected: a trajectory is already playing")
                return GoalResponse.REJECT
            self._busy = True
        return GoalResponse.ACCEPT

    # -- commanded state and the decelerating stop ------------------------------------------------
    def _commanded_state(self, t: float):
        start, cmd = self._active
        shifted = CommandedTrajectory(start, cmd.joint_names, cmd.time_from_start, cmd.positions, cmd.velocities,
                                      cmd.accelerations)
        q, qd, qdd = sample_commanded([shifted], np.array([t]))
        return q[0], qd[0], qdd[0]

    def stop_motion(self, final: bool = False) -> float:
        """Publish a decelerating stop from the current commanded state; returns when the arm is at rest (s).
        `final` (the node exits): a goal thread still running publishes nothing after it."""
        with self._lock:
            if self._closing:
                return 0.0
            self._closing = final
        if self._active is None:
            return 0.0
        start, cmd = self._active
        now = self._now() + 0.02          # the state when the controller receives the stop
        if now >= start + float(cmd.time_from_start[-1]):
            self._active = None
            return 0.0
        if now <= start:                  # not started yet: replace it by holding where the arm is
            q, qd, qdd = cmd.positions[0], np.zeros(self.model.n), np.zeros(self.model.n)
        else:
            q, qd, qdd = self._commanded_state(now)
        stop = stop_trajectory(cmd.joint_names, q, qd, qdd, self.limits.acceleration, self.rate_hz)
        self._active = (now, stop)
        self.pub.publish(commanded_to_msg(stop, stamp=now))
        return float(stop.time_from_start[-1])

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _publish(self, cmd: CommandedTrajectory, start: float) -> None:
        with self._lock:
            if self._closing:
                raise PayloadIdError("the player is shutting down", "restart it")
            self._active = (start, cmd)
            self.pub.publish(commanded_to_msg(cmd, stamp=start))

    # -- the action -------------------------------------------------------------------------------
    def _execute(self, goal_handle):
        result = Excite.Result()
        try:
            return self._play(goal_handle, result)
        except PayloadIdError as err:
            self.get_logger().error(f"excite aborted: {err}")
            self.stop_motion()
            result.success, result.message = False, str(err)
            goal_handle.abort()
            return result
        except Exception as err:  # noqa: BLE001 - never leave a goal hanging or the arm moving
            self.get_logger().error(f"excite failed: {err!r}")
            self.stop_motion()
            result.success, result.message = False, f"internal error: {err!r}"
            goal_handle.abort()
            return result
        finally:
            with self._lock:
                self._busy = False

    def _play(self, goal_handle, result):
        goal = goal_handle.request
        traj = load_trajectory(goal.trajectory).for_model(self.model.joint_names)
        traj = time_scaled(traj, goal.speed_scale)
        check_trajectory(traj, self.model, self.limits)     # joint limits and the design's Cartesian limits
        q_now = self._current_q()
        excitation = traj.to_commanded(self.rate_hz)
        fb = Excite.Feedback()
        t_motion = self._now()

        if goal.skip_move_to_start:
            far = np.max(np.abs(q_now - traj.offsets))
            if far > self.start_tol:
                raise PayloadIdError(f"the arm is {far:.3f} rad from the start pose but skip_move_to_start is set",
                                     "clear skip_move_to_start so the player moves there first")
        else:
            move = move_to_start(q_now, traj, self.limits, self.rate_hz)
            if np.max(np.abs(q_now - traj.offsets)) > 1e-4:
                start = self._now() + self.start_delay
                self._publish(move, start)
                end = start + float(move.time_from_start[-1])
                fb.phase = "move_to_start"
                if self._wait_until(goal_handle, end + SETTLE, fb, lambda now: (0.0, now - t_motion)):
                    return self._cancelled(goal_handle, result, 0.0)

        start = self._now() + self.start_delay
        self._publish(excitation, start)
        end = start + traj.duration
        self.get_logger().info(f"excitation '{goal.trajectory}' starts at {start:.3f} for {traj.duration:.2f} s")
        fb.phase = "excitation"

        def progress(now):
            return min(max((now - start) / traj.duration, 0.0), 1.0), max(now - start, 0.0)

        if self._wait_until(goal_handle, end + SETTLE, fb, progress):
            return self._cancelled(goal_handle, result, max(0.0, self._now() - start))
        self._active = None
        result.success, result.message, result.duration = True, "excitation played", float(traj.duration)
        goal_handle.succeed()
        return result

    def _wait_until(self, goal_handle, t_end: float, fb, progress) -> bool:
        """Publish feedback until t_end; True when a cancel was requested (the stop is then under way)."""
        while True:
            now = self._now()
            if goal_handle.is_cancel_requested:
                return True
            if not rclpy.ok() or self._closing:
                raise PayloadIdError("the node is shutting down", "restart it")
            fb.progress, fb.elapsed = progress(now)
            goal_handle.publish_feedback(fb)
            if now >= t_end:
                return False
            time.sleep(min(FEEDBACK_PERIOD, max(t_end - now, 0.005)))

    def _cancelled(self, goal_handle, result, played: float):
        duration = self.stop_motion()
        fb = Excite.Feedback(phase="stopping", progress=0.0, elapsed=played)
        goal_handle.publish_feedback(fb)
        time.sleep(duration + SETTLE)
        self._active = None
        result.success, result.message, result.duration = False, "cancelled: decelerating stop sent", played
        self.get_logger().info(f"excitation cancelled after {played:.2f} s; stopped in {duration:.2f} s")
        goal_handle.canceled()
        return result


def main(args=None) -> None:
    limit_blas_threads()
    # Our own SIGINT/SIGTERM handling: rclpy's would shut the context down first, and a player killed
    # mid-trajectory could no longer publish the stop.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop_requested = threading.Event()

    def on_signal(signum, _frame):
        if stop_requested.is_set():          # a second Ctrl-C: leave now
            raise KeyboardInterrupt
        stop_requested.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = None
    code = 0
    try:
        node = ExcitationPlayer()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        # Short waits so the main thread returns to Python and sees the signal flag.
        while rclpy.ok() and not stop_requested.is_set():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PayloadIdError as err:
        print(f"excitation_player: error: {err}", flush=True)
        code = 2
    finally:
        if node is not None and rclpy.ok():
            if node.stop_motion(final=True) > 0.0:       # a player that dies mid-trajectory still stops the arm
                node.get_logger().info("stopping: decelerating stop sent")
                time.sleep(STOP_FLUSH)
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
