"""The payload_estimator's client of the excitation player (its Excite action): start the excitation, follow how
the player ends it, hear that it is alive (its feedback), and stop it (the player's decelerating stop). Blocking
calls, for a goal thread."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory
from unique_identifier_msgs.msg import UUID

from payload_id_core.dynamics import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation import MotionLimits, stop_from_commanded
from payload_id_core.signals import CommandedTrajectory
from payload_id_msgs.action import Excite
from payload_id_ros.conversions import commanded_to_msg
from payload_id_ros.heartbeat import HEARTBEAT_PERIOD, goal_key, heartbeat_topic

STOP_CONFIRM = 5.0     # s the player has to confirm a stop (its stop lasts up to ~3 s): then we send one ourselves
SILENT = 1.0           # s without the player's feedback (sent every 0.1 s) after which it is not asked to stop
# s without the player's accept/reject before the goal is sent again (a fresh goal id), until answer_timeout. A player
# restarted after a SIGKILL is "available" at once (its dead predecessor's endpoints stay in the graph until the DDS
# lease ends), and a request sent before the new player has discovered this node is lost, never answered: a fresh
# ActionClient does not help, a second request once discovery has caught up does (h200: a restarted server's first
# goal 1 s after its start unanswered in 2 of 5, 1 of 6, 3 of 6 runs; after 6 s, 0 of 5).
RESEND_AFTER = 2.0


@dataclass
class PlayerGoal:
    """The Excite goal an identification sent to the excitation player; `status` is set when it ends."""

    handle: ClientGoalHandle[Excite.Goal, Excite.Result, Excite.Feedback]
    status: int | None = None                    # action_msgs GoalStatus once the player has ended the goal
    result: Excite.Result | None = None
    last_heard: float = field(default_factory=time.monotonic)   # monotonic: the goal's acceptance, then feedback
    heard_any: bool = False                      # feedback came: the player has checked the goal and is moving

    @property
    def ended(self) -> bool:
        return self.status is not None

    def heard(self) -> None:
        """The player's feedback arrived: it is alive and playing (it sends some every 0.1 s)."""
        self.last_heard = time.monotonic()
        self.heard_any = True

    def silent_for(self) -> float:
        """s since the player was last heard from on this goal."""
        return time.monotonic() - self.last_heard

    def on_result(self, future) -> None:
        response = future.result()
        self.result = response.result
        self.status = response.status           # last: `ended` must not see a status without its result


class ExcitationPlayerClient:
    """`play`, then `stop`. When the player cannot stop the arm (dead, hung, or not confirming), the client sends
    the decelerating stop itself on the controller's topic (`stop_topic`), from the trajectories it heard there:
    an arm whose player was killed must not play the rest of its excitation. While a goal runs, the client beats
    (heartbeat.py) so that the player stops the arm itself when this process dies without a word (SIGKILL)."""

    def __init__(self, node: Node, action: str, server_timeout: float, callback_group: CallbackGroup,
                 stop_topic: str, model: RobotModel, answer_timeout: float = 15.0) -> None:
        self._node, self.action, self.server_timeout = node, action, server_timeout
        self.answer_timeout = answer_timeout      # s for the player's accept/reject once its server is found
        self.client: ActionClient[Excite.Goal, Excite.Result, Excite.Feedback] = ActionClient(
            node, Excite, action, callback_group=callback_group)
        self._stop_pub = node.create_publisher(JointTrajectory, stop_topic, 10)
        self._acceleration = MotionLimits.from_model(model).acceleration
        self._position_limits = (model.limits.lower, model.limits.upper)
        self._heartbeat_pub = node.create_publisher(Header, heartbeat_topic(action), 10)
        self._supervised: dict[str, Callable[[], bool]] = {}   # goal id (hex) -> "the player has ended it"
        self._supervised_lock = threading.Lock()                # the goal thread adds, the timer beats
        node.create_timer(HEARTBEAT_PERIOD, self._beat, callback_group=callback_group)

    def _supervise(self, key: str, ended: Callable[[], bool] | None) -> None:
        """Beat for goal `key` until `ended()` (None: no more)."""
        with self._supervised_lock:
            if ended is None:
                self._supervised.pop(key, None)
            else:
                self._supervised[key] = ended
        if ended is not None:
            self._beat()

    def _beat(self) -> None:
        """Name every goal of ours the player has not ended: we supervise it."""
        with self._supervised_lock:
            self._supervised = {k: ended for k, ended in self._supervised.items() if not ended()}
            keys = list(self._supervised)
        stamp = self._node.get_clock().now().to_msg()
        for key in keys:
            self._heartbeat_pub.publish(Header(stamp=stamp, frame_id=key))

    def play(self, trajectory: str) -> PlayerGoal:
        """Ask the player to play `trajectory`; raise when it is absent, silent or busy. A request the player has not
        answered within RESEND_AFTER s is sent again (lost: RESEND_AFTER above), the reason logged; the first
        acceptance is the goal, whichever request it answers."""
        if not self.client.wait_for_server(timeout_sec=self.server_timeout):
            raise PayloadIdError(f"no excitation player answers on {self.action}", "start the excitation_player node")
        heard: list[PlayerGoal] = []          # the feedback callback may run before the handle is back

        def on_feedback(_fb) -> None:
            for p in heard:
                p.heard()

        sent: list[tuple[str, Future]] = []   # (goal key, the answer's future), one per request
        deadline = time.monotonic() + self.answer_timeout
        try:
            handle = None
            while handle is None:
                # Sent again while a request is unanswered (_await_answer returns here only then): besides a request
                # lost on its way, an unanswered one may have been accepted with its acceptance lost, its claim on the
                # player given up CLAIM_TIMEOUT (1 s) later (excitation_player); a request that reached the player
                # within that second was rejected "already playing" by an idle player, so a rejection alone does not
                # end the requests while an earlier one is unanswered (h207). Every request answered and none
                # accepted: the player is busy (the loop ends below).
                if sent:
                    rejected = sum(f.done() for _, f in sent)
                    why = (f"{rejected} of {len(sent)} rejected while the others are unanswered: an unanswered one "
                           "may hold the player's claim, lost with its acceptance" if rejected else
                           "a request sent before a restarted player has discovered this node is lost")
                    self._node.get_logger().warn(
                        f"the excitation player has not {'accepted' if rejected else 'answered'} the goal in "
                        f"{RESEND_AFTER:g} s: sending it again (request {len(sent) + 1}; {why})")
                sent.append(self._send(trajectory, on_feedback))
                handle, answered = self._await_answer(sent, min(time.monotonic() + RESEND_AFTER, deadline))
                if handle is None and (answered or time.monotonic() >= deadline):
                    break
        except BaseException:
            self._forsake(sent, None)
            raise
        self._forsake(sent, handle)
        if handle is None:
            if any(f.done() for _, f in sent):
                raise PayloadIdError("the excitation player rejected the goal (already playing?)",
                                     "wait for the running excitation to end")
            raise PayloadIdError("the excitation player did not answer the goal", "check the excitation_player node")
        player = PlayerGoal(handle)
        heard.append(player)
        handle.get_result_async().add_done_callback(player.on_result)
        self._supervise(goal_key(handle.goal_id), lambda: player.ended)
        return player

    def _send(self, trajectory: str, on_feedback: Callable) -> tuple[str, Future]:
        """One Excite request, named (heartbeat) before it is sent: killed before the player's acceptance arrives, we
        still supervise it."""
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        key = goal_key(goal_id)
        self._supervise(key, lambda: False)
        future = self.client.send_goal_async(Excite.Goal(trajectory=trajectory, speed_scale=1.0),
                                             feedback_callback=on_feedback, goal_uuid=goal_id)
        return key, future

    @staticmethod
    def _await_answer(sent: list[tuple[str, Future]], until: float) -> tuple[ClientGoalHandle | None, bool]:
        """(the accepted goal's handle or None, every request answered) once one is accepted, every one is answered,
        or at `until` (monotonic s)."""
        while True:
            handles = [f.result() for _, f in sent if f.done()]
            accepted = next((h for h in handles if h is not None and h.accepted), None)
            if accepted is not None or len(handles) == len(sent) or time.monotonic() >= until:
                return accepted, len(handles) == len(sent)
            time.sleep(0.01)

    def _forsake(self, sent: list[tuple[str, Future]], kept: ClientGoalHandle | None) -> None:
        """Every request but `kept`'s is no longer supervised, and cancelled if the player accepts it after all: a goal
        nobody follows stops (the player hears its heartbeat end)."""
        for key, future in sent:
            if kept is not None and goal_key(kept.goal_id) == key:
                continue
            self._supervise(key, None)
            future.add_done_callback(_cancel_if_accepted)

    def stop(self, player: PlayerGoal | None, commanded: list[CommandedTrajectory], now: Callable[[], float],
             timeout: float = STOP_CONFIRM) -> None:
        """Cancel the excite goal (the player brings the arm to rest) and wait until it has; a player silent for
        SILENT s (dead or hung), or not confirming within `timeout`, gets no more time: the stop is sent from here
        (`commanded`: the trajectories heard on the controller's topic; `now`: the node's clock)."""
        if player is None or player.ended:
            return
        # Always cancelled: a player still checking the goal (no feedback yet) would otherwise play it later.
        player.handle.cancel_goal_async()
        if not (player.heard_any and player.silent_for() > SILENT):
            deadline = time.monotonic() + timeout
            while not player.ended and time.monotonic() < deadline:
                time.sleep(0.02)
            if player.ended:
                return
            self._node.get_logger().error("the excitation player did not confirm the stop")
        self.send_stop(commanded, now())

    def send_stop(self, commanded: list[CommandedTrajectory], t: float) -> None:
        """The decelerating stop from the state `commanded` puts the arm in at `t`, published for the controller
        (nothing when the last trajectory has ended: the arm holds its last point)."""
        stop = stop_from_commanded(list(commanded), t + 0.02, self._acceleration, position_limits=self._position_limits)
        if stop is None:
            return
        self._stop_pub.publish(commanded_to_msg(stop, stamp=stop.start_time))
        self._node.get_logger().warn(f"sent the decelerating stop in place of the excitation player "
                                     f"({float(stop.time_from_start[-1]):.2f} s)")


def _cancel_if_accepted(future: Future) -> None:
    """A request given up on (ExcitationPlayerClient._forsake) that the player accepted all the same: cancelled."""
    handle = future.result()
    if handle is not None and handle.accepted:
        handle.cancel_goal_async()
