"""The estimator's Excite client (player_client.ExcitationPlayerClient.play) against the player's claim on a goal
(excitation_player.ExcitationPlayer._on_goal, CLAIM_TIMEOUT): a request the player accepted but whose acceptance was
lost ("Failed to send goal response") holds the player for CLAIM_TIMEOUT; the client's next request (RESEND_AFTER
later) that reaches the player within that time is rejected "already playing" by an idle player. Before h207 the
client sent nothing more once any request was answered and failed at answer_timeout with "rejected the goal (already
playing?)" (request 1 handled 1.2 s late: failed at 8 s, the player idle with a stale claim); it now asks again while a
request is unanswered, and the player, its claim expired, takes it. In process: the real play() and _on_goal /
_on_accepted, the action transport replaced by threads that deliver each request after a delay."""
import threading
import time
from types import SimpleNamespace

import pytest
from rclpy.action import GoalResponse

from payload_id_core.errors import PayloadIdError
from payload_id_ros import excitation_player, player_client
from payload_id_ros.excitation_player import ExcitationPlayer

RESEND_AFTER, CLAIM_TIMEOUT = 0.4, 0.2      # s: main's 2.0 and 1.0 scaled by 1/5 (the test runs in ~1 s)


class _Logger:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        self.warnings.append(text)


class _Player:
    """The state _on_goal and _on_accepted use, as ExcitationPlayer.__init__ sets it."""
    _on_goal = ExcitationPlayer._on_goal
    _on_accepted = ExcitationPlayer._on_accepted

    def __init__(self, busy_playing: bool = False) -> None:
        self._lock = threading.Lock()
        self._busy = busy_playing           # True: another goal is playing (started, no claim)
        self._claimed_at = None
        self.logger = _Logger()
        self.started = 0

    def get_logger(self) -> _Logger:
        return self.logger


class _Future:
    def __init__(self) -> None:
        self._result, self._done = None, False
        self._callbacks: list = []

    def done(self) -> bool:
        return self._done

    def result(self):
        return self._result

    def set(self, result) -> None:
        self._result, self._done = result, True
        for callback in self._callbacks:
            callback(self)

    def add_done_callback(self, callback) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


class _GoalHandle:
    def __init__(self, player: _Player, goal_id, accepted: bool) -> None:
        self.player, self.goal_id, self.accepted = player, goal_id, accepted
        self.cancelled = False

    def execute(self) -> None:
        self.player.started += 1

    def cancel_goal_async(self) -> None:
        self.cancelled = True

    def get_result_async(self) -> _Future:
        return _Future()


def _client(player, held_first, lost):
    """A client whose requests reach `player` at once, each in its own thread; with `held_first`, request 1 reaches it
    only when request 2 is sent (a request the player's executor took late), just before request 2. An accepted
    request in `lost` never has its acceptance delivered (and so never starts, as rclpy does)."""
    sent: list[int] = []
    held: list[threading.Event] = []

    def send_goal_async(goal, feedback_callback=None, goal_uuid=None):
        sent.append(len(sent) + 1)
        k, future, go = sent[-1], _Future(), threading.Event()
        held.append(go)
        if k == 2 and held_first:
            held[0].set()
            time.sleep(0.05)                 # request 1 served first
        if k != 1 or not held_first:
            go.set()

        def serve():
            go.wait()
            accepted = player._on_goal(goal) == GoalResponse.ACCEPT
            if accepted and k in lost:
                return
            handle = _GoalHandle(player, goal_uuid, accepted)
            if accepted:
                player._on_accepted(handle)
            future.set(handle)

        threading.Thread(target=serve, daemon=True).start()
        return future

    client = player_client.ExcitationPlayerClient.__new__(player_client.ExcitationPlayerClient)
    log = _Logger()
    client._node = SimpleNamespace(get_logger=lambda: log)
    client.action, client.server_timeout, client.answer_timeout = "/excite", 1.0, 1.6
    client.client = SimpleNamespace(wait_for_server=lambda timeout_sec: True, send_goal_async=send_goal_async)
    client._supervised, client._supervised_lock, client._beat = {}, threading.Lock(), lambda: None
    return client, sent, log


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    monkeypatch.setattr(player_client, "RESEND_AFTER", RESEND_AFTER)
    monkeypatch.setattr(excitation_player, "CLAIM_TIMEOUT", CLAIM_TIMEOUT)


def test_a_resend_rejected_within_a_lost_acceptances_claim_is_sent_again_and_played():
    """Request 1 reaches the player late, when request 2 is sent (0.4 s), is accepted and its acceptance lost; request 2
    follows it by ~0.05 s, within that claim (CLAIM_TIMEOUT 0.2 s): rejected. Request 3 (0.8 s) is taken: the goal
    plays, started once, and the client holds its handle (before h207: PayloadIdError 'rejected' at answer_timeout)."""
    player = _Player()
    client, sent, log = _client(player, held_first=True, lost={1})
    t0 = time.monotonic()
    goal = client.play("khalil")
    assert goal.handle.accepted and player.started == 1
    assert sent == [1, 2, 3] and time.monotonic() - t0 < 1.4
    assert any("1 of 2 rejected while the others are unanswered" in w for w in log.warnings), log.warnings
    assert any("never started" in w for w in player.logger.warnings)


def test_a_busy_player_still_rejects_at_once_when_every_request_is_answered():
    """A player playing another goal answers every request 'rejected': play() raises at the first answer, well before
    answer_timeout (1.6 s), having sent one request."""
    player = _Player(busy_playing=True)
    client, sent, _ = _client(player, held_first=False, lost=set())
    t0 = time.monotonic()
    with pytest.raises(PayloadIdError, match="rejected"):
        client.play("khalil")
    assert sent == [1] and time.monotonic() - t0 < 0.3 and player.started == 0
