"""The excitation player's rule for a supervised goal (payload_id_ros/heartbeat.py): stop when the supervisor's
heartbeat is older than SUPERVISOR_SILENCE, never for a goal nobody supervises (Excite called by hand), never on a
late beat of a goal that has ended. The same rule across processes: test_signal_faults (the estimator SIGKILLed)."""

import pytest

from payload_id_ros.heartbeat import FORGET_AFTER, SUPERVISOR_SILENCE, SupervisorBeats, goal_key, heartbeat_topic


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_supervised_goal_is_lost_once_its_heartbeat_is_older_than_the_bound():
    clock = Clock()
    beats = SupervisorBeats(clock=clock)
    beats.running("g")
    beats.beat("g")
    clock.t += SUPERVISOR_SILENCE - 0.01
    assert beats.lost("g") is None
    beats.beat("g")                                  # a beat renews it
    clock.t += SUPERVISOR_SILENCE + 0.01
    assert beats.lost("g") == pytest.approx(SUPERVISOR_SILENCE + 0.01)


def test_a_goal_never_named_by_a_supervisor_is_never_stopped_by_the_rule():
    clock = Clock()
    beats = SupervisorBeats(clock=clock)
    beats.running("by_hand")
    beats.beat("another_goal")                       # someone else's beats do not make it supervised
    clock.t += 3600.0
    assert beats.silent_for("by_hand") is None and beats.lost("by_hand") is None


def test_a_goal_named_before_the_player_runs_it_is_supervised():
    """The estimator beats from before it sends the goal: killed before the acceptance came back, still stopped."""
    clock = Clock()
    beats = SupervisorBeats(clock=clock)
    beats.beat("g")
    clock.t += 0.05
    beats.running("g")
    clock.t += SUPERVISOR_SILENCE
    assert beats.lost("g") is not None


def test_beats_of_goals_not_running_are_forgotten_but_a_running_goal_stays_supervised():
    clock = Clock()
    beats = SupervisorBeats(clock=clock)
    beats.running("g")
    beats.beat("g")
    beats.beat("ended")
    beats.forget("ended")
    beats.beat("ended")                              # a late beat of an ended goal
    clock.t += FORGET_AFTER + 1.0
    beats.beat("other")                              # any beat prunes
    assert beats.silent_for("ended") is None
    assert beats.lost("g") == pytest.approx(FORGET_AFTER + 1.0)    # however long its supervisor has been silent
    beats.forget("g")
    assert beats.silent_for("g") is None


def test_the_goal_key_and_topic_match_on_both_sides():
    class Uuid:
        uuid = bytes(range(16))

    assert goal_key(Uuid()) == goal_key(bytes(range(16))) == "000102030405060708090a0b0c0d0e0f"
    # the player subscribes to ~/excite/heartbeat
    assert heartbeat_topic("excitation_player/excite") == "excitation_player/excite/heartbeat"
    assert SUPERVISOR_SILENCE <= 1.0
