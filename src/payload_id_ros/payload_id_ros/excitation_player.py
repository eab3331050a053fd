"""excitation_player node: plays a Fourier excitation through a joint_trajectory_controller's topic.

Action `~/excite` (payload_id_msgs/action/Excite). On a goal it loads the trajectory (YAML path or
bundled name), checks it against the joint limits *before publishing anything*, moves the arm
smoothly (rest-to-rest quintic) from its current joint state to the start pose, then publishes the
excitation as one JointTrajectory stamped with its absolute start time, reporting progress. A
cancel sends a short trajectory that brings the commanded velocity to zero smoothly from the
current commanded state (a decelerating stop), never a jump to a held position. So does SIGINT
(Ctrl-C) or SIGTERM: the node handles them itself (rclpy's handler would shut the context down
before anything could be published), publishes the stop, aborts the running goal with the reason once
the arm is at rest (its client, the estimator, hears it), and only then exits. So does a client that leaves
mid-goal: one that supervises its goal (the estimator: heartbeat.py) and falls silent for SUPERVISOR_SILENCE s,
or one gone from the graph for CLIENT_GONE s (DDS notices a killed process late: its lease).

Parameters: PlayerParameters (config/<robot>.yaml, section /**/excitation_player).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory

from payload_id_core.dynamics import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation import (
    MotionLimits,
    check_trajectory,
    load_trajectory,
    move_to_start,
    stop_trajectory,
    time_scaled,
)
from payload_id_core.signals import (
    CommandedTrajectory,
    sample_commanded,  # imported up front: a stop must not wait for it
)
from payload_id_msgs.action import Excite
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import threaded
from payload_id_ros.heartbeat import SupervisorBeats, goal_key
from payload_id_ros.input_drops import DropCounter
from payload_id_ros.joint_state_merge import DropReason, JointStateMerger
from payload_id_ros.node_main import run_node
from payload_id_ros.parameters import Range, declare_parameters, parameter

FEEDBACK_PERIOD = 0.1       # s
SETTLE = 0.1                # s waited after the last point before declaring the motion done
STOP_FLUSH = 0.3            # s the process stays up after a final stop so DDS delivers it
# s the goal's client may be missing from the graph (nobody subscribed to the action's feedback) before the player
# stops the arm: a killed estimator cannot cancel, and its excitation must not play on with nobody watching.
CLIENT_GONE = 1.0
# s an accepted goal may take to start executing before its claim on the player is given up: rclpy sends the
# acceptance and then starts the goal, and where the send fails ("Failed to send goal response", a client a restarted
# player has not discovered yet) it never starts it, so a claim taken in the goal callback would reject every later
# goal "already playing" until a restart (h200). Within one executor the start follows the acceptance at once.
CLAIM_TIMEOUT = 1.0


# -- the node ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlayerParameters:
    """The excitation_player's ROS parameters (config/<robot>.yaml, section /**/excitation_player)."""

    urdf: str = parameter("ur10", "bundled robot name or a URDF path")
    controller: str = parameter("joint_trajectory_controller", "joint_trajectory_controller to command: "
                                "publishes /<controller>/joint_trajectory")
    joint_states_topic: str = parameter("/joint_states", "sensor_msgs/JointState topic of the robot driver")
    rate_hz: float = parameter(100.0, "trajectory points per second", valid=Range(low=0.0, low_open=True))
    limit_margin: float = parameter(0.05, "fraction of the URDF joint limits kept free",
                                    valid=Range(low=0.0, high=1.0, high_open=True))
    acceleration_limits: tuple[float, ...] = parameter((0.0,), "rad/s^2 per joint; zeros = payload_id's "
                                                       "defaults for the robot", valid=Range(low=0.0))
    start_delay: float = parameter(0.3, "s between publishing a trajectory and its start, so the controller "
                                   "has it in time", valid=Range(low=0.0))
    joint_state_timeout: float = parameter(2.0, "s: an older joint state is not the arm's current position",
                                           valid=Range(low=0.0, low_open=True))
    # A driver (or this node) that has just started may take a few seconds of discovery before its samples arrive.
    joint_states_wait: float = parameter(3.0, "s a goal waits for a live joint state", valid=Range(low=0.0))
    start_pose_tolerance: float = parameter(0.05, "rad the arm may be from the start pose when a goal skips the "
                                            "move to it", valid=Range(low=0.0))

    @property
    def trajectory_topic(self) -> str:
        return f"/{self.controller.strip('/')}/joint_trajectory"


class ExcitationPlayer(Node):
    def __init__(self) -> None:
        super().__init__("excitation_player")
        params = declare_parameters(self, PlayerParameters)
        self.params = params
        self.model = RobotModel.from_urdf(params.urdf)
        acc = [a for a in params.acceleration_limits if a > 0]
        self.limits = MotionLimits.from_model(self.model, margin=params.limit_margin, acceleration=acc or None)
        self.rate_hz = params.rate_hz
        topic = params.trajectory_topic
        self.pub = self.create_publisher(JointTrajectory, topic, 10)
        self._lock = threading.Lock()
        self._joint_state: tuple[float, np.ndarray] | None = None   # (receipt time, q in model order)
        self._busy = False
        self._claimed_at: float | None = None   # monotonic s a goal was accepted that has not started yet
        # What the controller is executing: (absolute start, CommandedTrajectory), for the stop.
        self._active: tuple[float, CommandedTrajectory] | None = None
        self._closing = False       # after the final stop (exit): nothing else is published
        self._closing_reason = "the excitation player is shutting down"
        self._stop_end = 0.0        # monotonic time the last decelerating stop brings the arm to rest
        self._merger = JointStateMerger(self.model.joint_names, future_tolerance=params.joint_state_timeout)
        self._joint_drops = DropCounter(self.get_logger(), params.joint_states_topic,
                                        "check the robot driver publishing it")
        self.create_subscription(JointState, params.joint_states_topic, self._on_joint_state, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self._server = ActionServer(self, Excite, "~/excite", execute_callback=threaded(self._execute),
                                    goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
                                    cancel_callback=lambda _h: CancelResponse.ACCEPT,
                                    callback_group=ReentrantCallbackGroup())
        self._feedback_topic = f"{self.get_fully_qualified_name()}/excite/_action/feedback"
        self._supervisors = SupervisorBeats()
        self.create_subscription(Header, "~/excite/heartbeat", lambda m: self._supervisors.beat(m.frame_id), 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"excitation player ready: {self.model.n} joints, publishing to {topic}")

    # -- inputs ------------------------------------------------------------------------------------
    def _on_joint_state(self, msg: JointState) -> None:
        """Other drivers' joints ignored, partial messages merged, malformed or out-of-order ones dropped
        (joint_state_merge) with a throttled warning: no message can stop the node."""
        got = self._merger.add(msg, self._now())
        if isinstance(got, DropReason):
            self._joint_drops.count(got)
        elif got is not None:
            with self._lock:
                self._joint_state = (time.monotonic(), got.q)

    def _current_q(self) -> np.ndarray:
        timeout = self.params.joint_state_timeout
        wait = max(self.params.joint_states_wait, timeout)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self._lock:
                js = self._joint_state
            if js is not None and time.monotonic() - js[0] < timeout:
                return js[1]
            time.sleep(0.02)
        raise PayloadIdError(f"no joint states with all of {self.model.joint_names} for "
                             f"{wait:g} s", "start the robot driver (or mock_hardware)")

    def _on_goal(self, _goal) -> GoalResponse:
        with self._lock:
            now = time.monotonic()
            if self._busy:
                claimed = self._claimed_at
                if claimed is None or now - claimed <= CLAIM_TIMEOUT:
                    self.get_logger().warn("excite goal rejected: a trajectory is already playing")
                    return GoalResponse.REJECT
                self.get_logger().warn(f"a goal accepted {now - claimed:.1f} s ago never started (its acceptance did "
                                       "not reach its client): the player takes this one")
            self._busy = True
            self._claimed_at = now
        return GoalResponse.ACCEPT

    def _on_accepted(self, goal_handle) -> None:
        """The acceptance reached the client: the goal starts, and the claim is the running goal's."""
        with self._lock:
            self._claimed_at = None
        goal_handle.execute()

    # -- commanded state and the decelerating stop ------------------------------------------------
    @staticmethod
    def _commanded_state(start: float, cmd: CommandedTrajectory, t: float):
        """(q, q̇, q̈) the controller is commanded at `t` by `cmd`, which started at `start`."""
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
        active = self._active
        if active is None:
            return 0.0
        start, cmd = active
        now = self._now() + 0.02          # the state when the controller receives the stop
        if now >= start + float(cmd.time_from_start[-1]):
            self._active = None
            return 0.0
        if now <= start:                  # not started yet: replace it by holding where the arm is
            q, qd, qdd = cmd.positions[0], np.zeros(self.model.n), np.zeros(self.model.n)
        else:
            q, qd, qdd = self._commanded_state(start, cmd, now)
        stop = stop_trajectory(cmd.joint_names, q, qd, qdd, self.limits.acceleration, self.rate_hz,
                               position_limits=(self.model.limits.lower, self.model.limits.upper))
        self._active = (now, stop)
        self.pub.publish(conv.commanded_to_msg(stop, stamp=now))
        duration = float(stop.time_from_start[-1])
        self._stop_end = time.monotonic() + duration + 0.02
        return duration

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _publish(self, cmd: CommandedTrajectory, start: float) -> None:
        with self._lock:
            if self._closing:
                raise PayloadIdError(self._closing_reason, "restart it")
            self._active = (start, cmd)
            self.pub.publish(conv.commanded_to_msg(cmd, stamp=start))

    # -- the action -------------------------------------------------------------------------------
    def _execute(self, goal_handle):
        key = goal_key(goal_handle.goal_id)
        self._supervisors.running(key)
        try:
            return self._play(goal_handle)
        except PayloadIdError as err:
            self.get_logger().error(f"excite aborted: {err}")
            return self._abort(goal_handle, str(err))
        except Exception as err:  # noqa: BLE001 - never leave a goal hanging or the arm moving
            self.get_logger().error(f"excite failed: {err!r}")
            return self._abort(goal_handle, f"internal error: {err!r}")
        finally:
            self._supervisors.forget(key)
            with self._lock:
                self._busy = False

    def _abort(self, goal_handle, message: str) -> Excite.Result:
        self.stop_motion()
        if self._closing:
            # Shutting down: the goal ends when the arm is at rest, as a cancelled one does.
            time.sleep(max(0.0, min(self._stop_end - time.monotonic(), 5.0)) + SETTLE)
        goal_handle.abort()
        return conv.excite_result(False, message)

    def _play(self, goal_handle) -> Excite.Result:
        goal = goal_handle.request
        traj = load_trajectory(goal.trajectory).for_model(self.model.joint_names)
        traj = time_scaled(traj, goal.speed_scale)
        duration = traj.duration
        if duration is None:    # never: FourierTrajectory.__post_init__ fills in the Optional field
            raise PayloadIdError("the trajectory has no duration", "report this")
        check_trajectory(traj, self.model, self.limits)     # joint limits and the design's Cartesian limits
        q_now = self._current_q()
        excitation = traj.to_commanded(self.rate_hz)
        t_motion = self._now()

        if goal.skip_move_to_start:
            far = np.max(np.abs(q_now - traj.offsets))
            if far > self.params.start_pose_tolerance:
                raise PayloadIdError(f"the arm is {far:.3f} rad from the start pose but skip_move_to_start is set",
                                     "clear skip_move_to_start so the player moves there first")
        else:
            move = move_to_start(q_now, traj, self.limits, self.rate_hz)
            if np.max(np.abs(q_now - traj.offsets)) > 1e-4:
                start = self._now() + self.params.start_delay
                self._publish(move, start)
                end = start + float(move.time_from_start[-1])
                if self._wait_until(goal_handle, end + SETTLE, "move_to_start", lambda now: (0.0, now - t_motion)):
                    return self._cancelled(goal_handle, 0.0)

        start = self._now() + self.params.start_delay
        self._publish(excitation, start)
        end = start + duration
        self.get_logger().info(f"excitation '{goal.trajectory}' starts at {start:.3f} for {duration:.2f} s")

        def progress(now):
            return min(max((now - start) / duration, 0.0), 1.0), max(now - start, 0.0)

        if self._wait_until(goal_handle, end + SETTLE, "excitation", progress):
            return self._cancelled(goal_handle, max(0.0, self._now() - start))
        self._active = None
        goal_handle.succeed()
        return conv.excite_result(True, "excitation played", duration)

    def _wait_until(self, goal_handle, t_end: float, phase: str, progress) -> bool:
        """Publish feedback (`progress(now)` -> (fraction, elapsed s)) until t_end; True when a cancel was
        requested (the stop is then under way)."""
        heard, gone_since = False, None      # the client's feedback subscription: seen once, missing since
        key = goal_key(goal_handle.goal_id)
        while True:
            now = self._now()
            if goal_handle.is_cancel_requested:
                return True
            if not rclpy.ok() or self._closing:
                raise PayloadIdError(f"{self._closing_reason}; decelerating stop sent", "restart it")
            silent = self._supervisors.lost(key)
            if silent is not None:
                raise PayloadIdError(f"the goal's supervisor fell silent (no heartbeat for {silent:.1f} s: killed or "
                                     "hung): stopping the arm", "see the client's (payload_estimator's) log")
            listening = self.count_subscribers(self._feedback_topic) > 0
            heard = heard or listening
            gone_since = None if listening or not heard else (gone_since or time.monotonic())
            if gone_since is not None and time.monotonic() - gone_since > CLIENT_GONE:
                raise PayloadIdError("the goal's client left (nobody hears the excitation's feedback): stopping the "
                                     "arm", "see the client's (payload_estimator's) log")
            goal_handle.publish_feedback(conv.excite_feedback(phase, *progress(now)))
            if now >= t_end:
                return False
            time.sleep(min(FEEDBACK_PERIOD, max(t_end - now, 0.005)))

    def _cancelled(self, goal_handle, played: float) -> Excite.Result:
        duration = self.stop_motion()
        goal_handle.publish_feedback(conv.excite_feedback("stopping", 0.0, played))
        time.sleep(duration + SETTLE)
        self._active = None
        self.get_logger().info(f"excitation cancelled after {played:.2f} s; stopped in {duration:.2f} s")
        goal_handle.canceled()
        return conv.excite_result(False, "cancelled: decelerating stop sent", played)

    def wind_down(self, reason: str):
        """First SIGINT / SIGTERM (node_main): the decelerating stop now; the running goal (if any) then ends
        aborted with `reason` once the arm is at rest, while the executor still delivers its result. Returns
        the predicate "wound down"."""
        self._closing_reason = reason
        if self.stop_motion(final=True) > 0.0:
            self.get_logger().info(f"{reason}: decelerating stop sent")
        return self._idle

    def _idle(self) -> bool:
        """No goal running, nor one accepted that may still start: a claim whose start never came within
        CLAIM_TIMEOUT is no goal (a SIGTERM would otherwise wait node_main's whole wind-down limit for it, h207)."""
        with self._lock:
            claimed = self._claimed_at
            return not self._busy or (claimed is not None and time.monotonic() - claimed > CLAIM_TIMEOUT)

    def close(self) -> None:
        """On exit (Ctrl-C, SIGTERM): a player that dies mid-trajectory still stops the arm."""
        if rclpy.ok() and self.stop_motion(final=True) > 0.0:
            self.get_logger().info("stopping: decelerating stop sent")
            time.sleep(STOP_FLUSH)


def main(args=None) -> int:
    # Our own SIGINT/SIGTERM handling: rclpy's would shut the context down first, and a player killed
    # mid-trajectory could no longer publish the stop.
    return run_node("excitation_player", ExcitationPlayer, args, close=ExcitationPlayer.close, own_signals=True,
                    wind_down=ExcitationPlayer.wind_down)


if __name__ == "__main__":
    raise SystemExit(main())
