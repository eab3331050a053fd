"""The payload_estimator's client of the excitation player (its Excite action): start the excitation, follow how
the player ends it, and stop it (the player's decelerating stop). Blocking calls, for a goal thread."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from payload_id_core.errors import PayloadIdError
from payload_id_msgs.action import Excite
from payload_id_ros.action_thread import wait_for_future


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


class ExcitationPlayerClient:
    def __init__(self, node: Node, action: str, server_timeout: float, callback_group: CallbackGroup) -> None:
        self._node, self.action, self.server_timeout = node, action, server_timeout
        self.client: ActionClient[Excite.Goal, Excite.Result, Excite.Feedback] = ActionClient(
            node, Excite, action, callback_group=callback_group)

    def play(self, trajectory: str) -> PlayerGoal:
        """Ask the player to play `trajectory`; raise when it is absent, silent or busy."""
        if not self.client.wait_for_server(timeout_sec=self.server_timeout):
            raise PayloadIdError(f"no excitation player answers on {self.action}", "start the excitation_player node")
        future = self.client.send_goal_async(Excite.Goal(trajectory=trajectory, speed_scale=1.0))
        handle = future.result() if wait_for_future(future, 5.0) else None    # None: no answer
        if handle is None:
            raise PayloadIdError("the excitation player did not answer the goal", "check the excitation_player node")
        if not handle.accepted:
            raise PayloadIdError("the excitation player rejected the goal (already playing?)",
                                 "wait for the running excitation to end")
        player = PlayerGoal(handle)
        handle.get_result_async().add_done_callback(player.on_result)
        return player

    def stop(self, player: PlayerGoal | None, timeout: float = 10.0) -> None:
        """Cancel the excite goal (the player brings the arm to rest) and wait until it has."""
        if player is None or player.ended:
            return
        player.handle.cancel_goal_async()
        deadline = time.monotonic() + timeout
        while not player.ended and time.monotonic() < deadline:
            time.sleep(0.02)
        if not player.ended:
            self._node.get_logger().error("the excitation player did not confirm the stop")
