"""The payload_estimator's ~/identify action (payload_id_msgs/action/Identify): one goal at a time (a second
is rejected while one runs), on a worker thread (action_thread).

A goal: the request checked into an IdentificationRun (payload_id_core.payload.session) before anything moves,
live joint states awaited, the excitation player asked to play (player_client), the samples fed every
FEEDBACK_PERIOD with feedback and ~/payload, until the excitation ends, the run converges (when the goal asks to
stop then), max_duration passes or the client cancels; then IdentificationRun.finish makes the final estimate,
which is published, saved, optionally applied to the controller, and answered. Cancel stops the motion and
answers the partial estimate; bad input stops the motion and aborts with the reason. The cell ending the goal
mid-motion (GoalOutcome.INTERRUPTED: the node shutting down on SIGINT/SIGTERM, the excitation player dead, silent
for PLAYER_SILENCE s or ending the motion itself, the joint states stopping) stops the motion, saves the partial
estimate marked partial, and aborts the goal with the reason and that estimate.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from action_msgs.msg import GoalStatus
from rclpy.action import GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.publisher import Publisher

from payload_id_core.errors import PayloadIdError
from payload_id_core.ft import CompensationStream, FtParameters
from payload_id_core.payload import FinishedGoal, GoalOutcome, IdentificationRun
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals import CommandedTrajectory, WindowCoverage
from payload_id_msgs.action import Identify
from payload_id_ros import conversions as conv
from payload_id_ros.controller_payload import ControllerPayload
from payload_id_ros.estimator_parameters import EstimatorParameters
from payload_id_ros.input_drops import describe as describe_drops
from payload_id_ros.joint_state_watch import JointStateWatch
from payload_id_ros.monitor_mode import MonitorMode
from payload_id_ros.player_client import ExcitationPlayerClient, PlayerGoal
from payload_id_ros.sensor_inbox import JointStateBatch, SensorInbox

FEEDBACK_PERIOD = 0.2        # s: feedback (and batch processing) at 5 Hz
# s the goal's thread sleeps between two feedbacks however long the last one's work took: the node's subscription
# callbacks (joint states at 500 Hz) need the GIL too.
FEEDBACK_MIN_PAUSE = 0.05
PLAYED_SETTLE = 0.5          # s after the excitation's end before a played goal counts as finished
# s without feedback from the excitation player (it sends some every 0.1 s) before it counts as dead or hung: long
# enough for a loaded machine's scheduling gaps, short enough that a killed player's arm is at rest within ~2 s of its
# death (this, then the estimator's own stop: bench/signal_faults.py).
PLAYER_SILENCE = 1.5
# Before its first feedback the player checks the trajectory and waits (up to its joint_states_wait, 3 s) for a joint
# state: its first word may come later.
PLAYER_FIRST_WORD = 6.0


def _sleep_until_next(tick: float) -> float:
    """Sleep until FEEDBACK_PERIOD after `tick` (at least FEEDBACK_MIN_PAUSE), and return when it woke. The period
    counts from the last feedback's start, not its end: a fixed sleep after the work made every period the sleep plus
    the work, and while the convergence rule's batch check grew with the motion the cell's 10 s goal sent feedback
    every 0.5-1.6 s instead of 0.2 (bench/cell_feedback.py)."""
    time.sleep(max(tick + FEEDBACK_PERIOD - time.monotonic(), FEEDBACK_MIN_PAUSE))
    return time.monotonic()


class GoalInterrupted(Exception):
    """The cell ended the goal mid-motion (shutdown, player lost, joint states stopped): abort with the reason
    and the partial estimate."""


class EstimatorNode(Protocol):
    """What a goal uses of the payload_estimator node."""

    params: EstimatorParameters
    inbox: SensorInbox
    joint_states: JointStateWatch
    compensation: CompensationStream
    controller: ControllerPayload
    monitor: MonitorMode
    pub_payload: Publisher

    def get_logger(self): ...
    def now(self) -> float: ...
    def new_run(self, request: Identify.Goal) -> IdentificationRun: ...
    def set_estimate(self, est: PayloadEstimate, measure: float | None = None,
                     ft_params: FtParameters | None = None) -> None: ...
    def save_result(self, est: PayloadEstimate, outcome: GoalOutcome,
                    joint_states: WindowCoverage | None = None) -> str: ...
    def pace_drain(self) -> None: ...


@dataclass
class IdentifyGoal:
    """One identify goal while it runs."""

    handle: ServerGoalHandle[Identify.Goal, Identify.Result, Identify.Feedback]
    request: Identify.Goal
    run: IdentificationRun | None = None
    player: PlayerGoal | None = None
    interruption: str = ""                     # why the cell ended it (GoalOutcome.INTERRUPTED)


class IdentifyAction:
    """The action server's callbacks (`on_goal`, `execute` on a worker thread: action_thread.threaded) and the
    samples a goal collects: the node hands every joint-state batch, wrench batch and commanded trajectory to
    `collect_*`, which keep them while a goal collects."""

    def __init__(self, node: EstimatorNode, player: ExcitationPlayerClient) -> None:
        self.node, self.player = node, player
        self._lock = threading.Lock()
        self.busy = False                          # a goal was accepted and has not ended
        self._collecting = False
        self._buffer: deque = deque()              # JointStateBatch while a goal collects
        self._wrench_buf: deque = deque()          # (t, wrench) while a goal collects
        self._commanded: list[CommandedTrajectory] = []    # heard while a goal runs
        self._drops_at_start = (node.inbox.joint_drops.snapshot(), node.inbox.wrench_drops.snapshot())
        self._interruption = ""                    # set once the node is shutting down: every goal ends

    def interrupt(self, reason: str) -> None:
        """The node is going away (SIGINT / SIGTERM): the running goal stops the motion, saves its partial
        estimate and is aborted with `reason`; goals sent from now on are rejected."""
        self._interruption = reason

    @property
    def collecting(self) -> bool:
        return self._collecting

    def collect_joint_states(self, js: JointStateBatch) -> bool:
        """True when a goal took the batch (the monitor must not have it then)."""
        if self._collecting:
            self._buffer.append(js)
        return self._collecting

    def collect_wrenches(self, wr: tuple[np.ndarray, np.ndarray]) -> None:
        if self._collecting:
            self._wrench_buf.append(wr)

    def collect_commanded(self, cmd: CommandedTrajectory) -> None:
        if self._collecting:
            self._commanded.append(cmd)

    # -- admission and the outcome of every goal --------------------------------------------------
    def on_goal(self, _goal) -> GoalResponse:
        with self._lock:
            if self.busy:
                self.node.get_logger().warn("identify goal rejected: an identification is already running")
                return GoalResponse.REJECT
            if self._interruption:
                self.node.get_logger().warn(f"identify goal rejected: {self._interruption}")
                return GoalResponse.REJECT
            self.busy = True
        self.node.pace_drain()          # the sensor queues drained at 50 Hz again from now on
        return GoalResponse.ACCEPT

    def execute(self, gh):
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
                self.busy = False
                self.node.monitor.restart()        # the monitor restarts on this goal's estimate

    def _abort(self, goal: IdentifyGoal, message: str, details: str = "") -> Identify.Result:
        """Stop the motion first, then abort the goal with the reason."""
        self.player.stop(goal.player, self._commanded, self.node.now)
        self.node.get_logger().error(f"{message}\n{details}" if details else message)
        goal.handle.abort()
        return conv.identify_result(message)

    def _identify(self, goal: IdentifyGoal) -> Identify.Result:
        """Check the request, start the excitation, follow it until it ends, and answer the goal."""
        run = goal.run = self.node.new_run(goal.request)
        player = goal.player = self._start_motion(goal.request)
        try:
            outcome = self._follow(goal, run, player)
        except GoalInterrupted as why:
            goal.interruption = str(why)
            outcome = GoalOutcome.INTERRUPTED
        return self._finish(goal, run, outcome)

    # -- the steps of a goal ----------------------------------------------------------------------
    def _start_motion(self, request: Identify.Goal) -> PlayerGoal:
        """With live joint states only: collect from now on and ask the player to play the excitation."""
        self.node.joint_states.drain()     # the idle node drained at 4 Hz: the newest sample judged, not one 0.25 s old
        self.node.joint_states.check(wait=self.node.params.joint_states_wait)
        self._commanded.clear()
        self._buffer.clear()
        self._wrench_buf.clear()
        self._drops_at_start = (self.node.inbox.joint_drops.snapshot(), self.node.inbox.wrench_drops.snapshot())
        self._collecting = True
        if self._interruption:                   # the signal came while this goal waited for joint states
            raise PayloadIdError(self._interruption, "restart the payload_estimator and send the goal again")
        return self.player.play(request.trajectory or self.node.params.trajectory)

    def _follow(self, goal: IdentifyGoal, run: IdentificationRun, player: PlayerGoal) -> GoalOutcome:
        """Every FEEDBACK_PERIOD: feed the samples, check the inputs, publish feedback, until the motion ends.
        Bad joint states or a motion the controller does not follow raise (the goal aborts)."""
        tick = time.monotonic()
        while True:
            tick = _sleep_until_next(tick)
            now = self.node.now()
            self._feed(run)
            if goal.handle.is_cancel_requested:
                return GoalOutcome.CANCELLED
            if self._interruption:
                raise GoalInterrupted(self._interruption)
            try:
                self.node.joint_states.check()
            except PayloadIdError as err:           # the driver died or went bad mid-motion: keep what came
                raise GoalInterrupted(str(err)) from None
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
        self.node.pub_payload.publish(estimate_msg)

    def _motion_outcome(self, goal: IdentifyGoal, run: IdentificationRun, player: PlayerGoal,
                        now: float) -> GoalOutcome | None:
        """How the motion has ended by `now` (None: still under way); the player ending it badly raises."""
        if goal.request.stop_when_converged and run.converged:
            return GoalOutcome.CONVERGED
        if not player.ended and player.silent_for() > (PLAYER_SILENCE if player.heard_any else PLAYER_FIRST_WORD):
            # Killed or hung: its excitation, if it ever started, must not count as played to its end.
            raise GoalInterrupted(f"the excitation player fell silent (no feedback for {player.silent_for():.1f} s: "
                                  "dead or hung); see the excitation_player log")
        if player.ended and player.status != GoalStatus.STATUS_SUCCEEDED:
            reason = (player.result.message if player.result is not None else "") or player.status
            raise GoalInterrupted(f"the excitation player ended the motion: {reason}; see the excitation_player log")
        if run.finished(now) and 0.0 < run.max_duration < run.excitation_duration:
            return GoalOutcome.FINISHED        # max_duration ends it; the player is stopped (_finish)
        if not player.ended:
            # The excitation's end counts once the player says it played it: a player killed in the last
            # PLAYER_SILENCE s of it must not pass for one that finished (issue 32).
            return None
        if run.window is None:
            raise PayloadIdError(
                "the excitation was played but no matching trajectory was heard on the trajectory topic",
                "check the estimator's trajectory_topic against the player's controller")
        return GoalOutcome.FINISHED if now > run.window[1] + PLAYED_SETTLE else None

    def _finish(self, goal: IdentifyGoal, run: IdentificationRun, outcome: GoalOutcome) -> Identify.Result:
        """The final estimate from every sample (IdentificationRun.finish), published, saved, optionally applied,
        and the goal answered."""
        # max_duration ends the goal (FINISHED) while the player may still be playing: the arm must stop
        # then too, or it plays the rest of the excitation with nobody watching and blocks the next goal.
        if outcome is not GoalOutcome.FINISHED or (goal.player is not None and not goal.player.ended):
            run.end_window(self.node.now())
            self.player.stop(goal.player, self._commanded, self.node.now)
        self._feed(run)
        done = run.finish(self.node.now(), outcome, self.node.compensation.sensor, self._input_drops(),
                          goal.interruption)
        if done is None and outcome is GoalOutcome.INTERRUPTED:
            goal.handle.abort()
            message = f"aborted: {goal.interruption}; before the excitation started: no estimate"
            self.node.get_logger().error(message)
            return conv.identify_result(message)
        if done is None:
            goal.handle.canceled()
            return conv.identify_result("cancelled before the excitation started: no estimate")
        est = done.estimate
        if done.ft_problem:
            # Without a calibration the last one's offsets and tilt stay (CompensationStream.follow).
            self.node.get_logger().warn(f"F/T calibration on the run failed ({done.ft_problem}); compensating with "
                                        "the joint-torque estimate and the last calibration's offsets")
        measure = conv.relative_mass_std(est)
        estimate_msg = conv.estimate_to_msg(est, self.node.now(), measure)
        self.node.set_estimate(est, ft_params=done.ft_calibration, measure=measure)
        not_persisted = self.node.save_result(est, outcome, done.joint_states)
        applied, note = self._apply(goal, done)
        summary = done.summary(note)
        # One severity per call site (rclpy refuses a call site whose severity changes).
        if outcome is GoalOutcome.INTERRUPTED:
            self.node.get_logger().error(f"{summary}; saved as partial")
        else:
            self.node.get_logger().info(f"{summary} ({est.mass:.4f} kg), saved as partial" if done.partial
                                        else summary)
        result = conv.identify_result(done.result_message(note, not_persisted), estimate_msg,
                                      converged=done.converged, convergence_time=est.convergence_time,
                                      torque_rmse_before=done.torque_rmse_before,
                                      torque_rmse_after=done.torque_rmse_after, applied_to_controller=applied)
        if done.cancelled:
            goal.handle.canceled()
        elif outcome is GoalOutcome.INTERRUPTED:
            goal.handle.abort()
        else:
            goal.handle.succeed()
        return result

    def _apply(self, goal: IdentifyGoal, done: FinishedGoal) -> tuple[bool, str]:
        """(applied, the controller's answer): a finished goal's estimate, when the goal or the node asks."""
        asked = bool(goal.request.apply_to_controller) or self.node.params.apply_to_controller
        if done.partial or not asked:
            return False, ""
        applied, note = self.node.controller.apply(done.estimate, bool(goal.request.apply_even_if_suspect))
        return applied, note

    def _feed(self, run: IdentificationRun) -> None:
        cmds = list(self._commanded)
        for cmd in cmds[len(run.commanded):]:
            run.add_commanded(cmd)
        for _ in range(len(self._wrench_buf)):
            run.add_wrenches(*self._wrench_buf.popleft())
        n = len(self._buffer)
        if n == 0:
            return
        batches = [self._buffer.popleft() for _ in range(n)]
        known = len(run.stamp_holes.holes)
        run.feed(np.concatenate([b.t for b in batches]), np.concatenate([b.q for b in batches]),
                 np.concatenate([b.effort for b in batches]))
        lost = run.lost_joint_states(run.stamp_holes.holes[known:])
        if lost:     # said as it happens; the result's message and notes say it again (IdentificationRun.finish)
            self.node.get_logger().warn(f"{lost}: the joint-state queue overflowed or the driver paused; the "
                                        "estimate goes on without them")

    def _input_drops(self) -> str:
        """What the goal's inputs lost since collection started ('' if nothing): for its result and notes."""
        joints = self.node.inbox.joint_drops.since(self._drops_at_start[0])
        wrenches = self.node.inbox.wrench_drops.since(self._drops_at_start[1])
        parts = ([f"{describe_drops(joints)} joint state messages"] if joints else []) + \
                ([f"{describe_drops(wrenches)} wrench messages"] if wrenches else [])
        return f"dropped {' and '.join(parts)} as malformed or out of order" if parts else ""
