"""The excitation player's claim on a goal (excitation_player.ExcitationPlayer._on_goal / _on_accepted): rclpy calls
the goal callback, sends the acceptance, then starts the goal; where the send fails ("Failed to send goal response",
a client a restarted player has not discovered yet, h200) it never starts it. Before, the claim taken in the goal
callback stayed, and every later goal was rejected "already playing" until the player was restarted."""
import pytest
from rclpy.action import GoalResponse
from test_player_client_claim_race import _Player  # the player's claim state, as ExcitationPlayer.__init__ sets it

from payload_id_ros import excitation_player
from payload_id_ros.excitation_player import CLAIM_TIMEOUT, ExcitationPlayer


class _Handle:
    def __init__(self) -> None:
        self.executed = 0

    def execute(self) -> None:
        self.executed += 1


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(excitation_player.time, "monotonic", lambda: now[0])
    return now


def test_a_goal_that_started_keeps_the_player_busy(clock):
    player, handle = _Player(), _Handle()
    assert player._on_goal(None) == GoalResponse.ACCEPT
    player._on_accepted(handle)
    assert handle.executed == 1
    clock[0] += 10 * CLAIM_TIMEOUT                 # a long excitation: still playing
    assert player._on_goal(None) == GoalResponse.REJECT
    assert player.logger.warnings == ["excite goal rejected: a trajectory is already playing"]


def test_a_goal_whose_acceptance_never_reached_its_client_does_not_block_the_next(clock):
    player = _Player()
    assert player._on_goal(None) == GoalResponse.ACCEPT      # ...and the acceptance's send fails: never started
    clock[0] += 0.5 * CLAIM_TIMEOUT
    assert player._on_goal(None) == GoalResponse.REJECT       # within the claim's time: could still start
    clock[0] += CLAIM_TIMEOUT
    assert player._on_goal(None) == GoalResponse.ACCEPT
    assert "never started" in player.logger.warnings[-1], player.logger.warnings
    handle = _Handle()
    player._on_accepted(handle)
    assert handle.executed == 1 and player._busy and player._claimed_at is None


def test_a_claim_that_never_started_does_not_hold_up_the_wind_down(clock):
    """A SIGTERM waits for the running goal to end (node_main's wind-down, up to its limit): a claim whose start never
    came is no running goal once CLAIM_TIMEOUT has passed."""
    player = _Player()
    player._idle = ExcitationPlayer._idle.__get__(player)
    assert player._idle()
    assert player._on_goal(None) == GoalResponse.ACCEPT
    assert not player._idle()                                # it may still start
    clock[0] += 2 * CLAIM_TIMEOUT
    assert player._idle()                                    # it never will
    player2 = _Player()
    player2._idle = ExcitationPlayer._idle.__get__(player2)
    player2._on_goal(None)
    player2._on_accepted(_Handle())
    clock[0] += 10 * CLAIM_TIMEOUT
    assert not player2._idle()                               # a running goal holds the wind-down
