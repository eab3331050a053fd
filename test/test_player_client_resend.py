"""The estimator's Excite client (player_client.ExcitationPlayerClient.play) when the player does not answer a goal
request: a player restarted after a SIGKILL is "available" at once (its dead predecessor stays in the DDS graph until
its lease ends), and a request sent before the new player has discovered the estimator is lost. Before h200 the goal
then aborted after excite_answer_timeout (15 s) with "the excitation player did not answer the goal"
(test_signal_faults, test_fault_injection, five goals in a row in stop 53); now the request is sent again every
RESEND_AFTER s.

In-process, the action client replaced by a stand-in whose requests are answered (or lost) as each test says: the
resend rule, the choice of the accepted request and the fate of the others are what is tested here; across processes
the same recovery is measured by h200's loop (docs/design.md, ROS interfaces)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from payload_id_core.dynamics import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_ros import player_client
from payload_id_ros.heartbeat import goal_key

RESEND = 0.05        # s: RESEND_AFTER for these tests


@dataclass
class Handle:
    """A ClientGoalHandle's part the client uses."""

    goal_id: object
    accepted: bool
    cancelled: int = 0

    def get_result_async(self) -> Future:
        return Future()

    def cancel_goal_async(self) -> Future:
        self.cancelled += 1
        return Future()


@dataclass
class StandInClient:
    """send_goal_async hands out futures the test answers (`answer`) or leaves unanswered (lost)."""

    sent: list[tuple[object, Future]] = field(default_factory=list)
    on_send: object = None          # called with the request's index as it is sent

    def wait_for_server(self, timeout_sec: float) -> bool:
        return True

    def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None) -> Future:
        future: Future = Future()
        self.sent.append((goal_uuid, future))
        if callable(self.on_send):
            self.on_send(len(self.sent) - 1)
        return future

    def answer(self, k: int, accepted: bool) -> Handle:
        handle = Handle(self.sent[k][0], accepted)
        self.sent[k][1].set_result(handle)
        return handle


class NodeSaying:
    """The node, its logger replaced by `said` (the client's only other use of it is its clock)."""

    def __init__(self, node: Node, said: Said) -> None:
        self._node, self._said = node, said

    def get_logger(self) -> Said:
        return self._said

    def get_clock(self):
        return self._node.get_clock()


class Said:
    """The node's logger, its warnings kept."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def error(self, text: str) -> None:
        self.warnings.append(text)


@pytest.fixture
def client(monkeypatch):
    monkeypatch.setattr(player_client, "RESEND_AFTER", RESEND)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("player_client_resend", context=context, start_parameter_services=False)
    said = Said()
    c = player_client.ExcitationPlayerClient(node, "/player_client_resend/excite", 1.0, ReentrantCallbackGroup(),
                                             "/player_client_resend/joint_trajectory", RobotModel.from_urdf("ur10"),
                                             answer_timeout=1.0)
    c.client = StandInClient()
    c._node = NodeSaying(node, said)
    c.said = said
    try:
        yield c
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def _supervised(c) -> set[str]:
    with c._supervised_lock:
        return set(c._supervised)


def test_a_lost_goal_request_is_sent_again_and_the_answered_one_is_the_goal(client):
    """The first request lost (never answered), the second accepted at once: the goal is the second, within a few
    RESEND_AFTER, the resend said in the log; the lost one is no longer supervised (a player that plays it after all
    stops it when its heartbeat ends) and is cancelled if it is accepted later. Before: 'did not answer' after
    answer_timeout."""
    stand_in = client.client
    stand_in.on_send = lambda k: stand_in.answer(k, True) if k == 1 else None
    t0 = time.monotonic()
    goal = client.play("traj")
    took = time.monotonic() - t0
    assert len(stand_in.sent) == 2 and goal.handle.goal_id is stand_in.sent[1][0]
    assert RESEND <= took < 10 * RESEND, took
    (warning,) = client.said.warnings
    assert "has not answered the goal in 0.05 s: sending it again (request 2;" in warning, warning
    lost_key, kept_key = (goal_key(uuid) for uuid, _ in stand_in.sent)
    assert _supervised(client) == {kept_key}
    late = stand_in.answer(0, True)           # the lost request reaches the player after all and is accepted
    assert late.cancelled == 1


def test_a_request_answered_late_is_the_goal_and_the_resent_one_rejected(client):
    """The player answers the first request only after the second was sent: it accepted the first and rejects the
    second (busy). The goal is the first; nothing is cancelled."""
    stand_in = client.client
    answers: list[Handle] = []

    def on_send(k: int) -> None:
        if k == 1:      # both answered by the player's executor, the first first
            threading.Timer(RESEND / 2, lambda: answers.extend([stand_in.answer(0, True),
                                                                 stand_in.answer(1, False)])).start()

    stand_in.on_send = on_send
    goal = client.play("traj")
    assert goal.handle.goal_id is stand_in.sent[0][0]
    assert len(stand_in.sent) == 2
    time.sleep(2 * RESEND)
    assert [h.cancelled for h in answers] == [0, 0]
    assert _supervised(client) == {goal_key(stand_in.sent[0][0])}


def test_a_player_that_never_answers_aborts_after_the_answer_timeout_with_the_reason(client):
    t0 = time.monotonic()
    with pytest.raises(PayloadIdError, match="the excitation player did not answer the goal"):
        client.play("traj")
    took = time.monotonic() - t0
    assert 1.0 <= took < 1.5, took
    # One request every RESEND_AFTER s over the 1 s answer_timeout, none of them supervised afterwards.
    assert 1.0 / RESEND - 3 <= len(client.client.sent) <= 1.0 / RESEND + 1, len(client.client.sent)
    assert _supervised(client) == set()


def test_a_rejected_goal_is_not_sent_again(client):
    """An answer proves the player hears us: a rejection (already playing) is said at once, one request sent."""
    stand_in = client.client
    stand_in.on_send = lambda k: stand_in.answer(k, False)
    with pytest.raises(PayloadIdError, match="rejected the goal"):
        client.play("traj")
    assert len(stand_in.sent) == 1 and client.said.warnings == []
    assert _supervised(client) == set()
