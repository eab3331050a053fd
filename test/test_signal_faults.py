"""Signals across processes mid-goal (issue 32 items 1, 2, 4): SIGINT / SIGTERM / SIGKILL to the estimator, the
excitation player, the robot's driver and the `payload-id identify --ros` client during a goal. Each time the arm
ends at rest within 2 s, the goal is answered (by a live estimator) with the reason, a goal cut short is saved and
answered as partial, and no process prints a traceback or exits with an error on a signal.

One shared cell (test/ros_cell/signal_cell.py: estimator, player, the kinematic fake robot, a watcher), the
signalled process restarted before the next case. CI runs the cases below; bench/signal_faults.py runs the whole
matrix (4 processes x 3 signals x 5 points of a goal). Wall-clock: "at rest within 2 s" is timed across processes.
"""

import pytest
import yaml
from ros_cell.signal_cell import SignalCell

pytestmark = [pytest.mark.slow, pytest.mark.wall_clock]


@pytest.fixture(scope="module")
def cell(ros_env, tmp_path_factory):
    c = SignalCell(ros_env, tmp_path_factory.mktemp("signal_cell"))
    try:
        yield c
    finally:
        c.close()


def _clean(case) -> None:
    assert case.reached, case.summary()
    assert case.defects() == [], case.summary()


@pytest.mark.parametrize("signame, point", [("SIGINT", "middle"), ("SIGTERM", "to_start")])
def test_estimator_signalled_mid_goal_stops_the_arm_answers_and_saves_the_partial_estimate(cell, signame, point):
    """It was: the arm played on, the goal was never answered, nothing saved, sometimes a traceback and exit 1."""
    case = cell.run("payload_estimator", signame, point)
    _clean(case)
    assert case.exit_code == 0
    assert case.status == "aborted" and f"payload_estimator node is shutting down ({signame})" in case.message
    if point == "middle":
        assert "partial estimate after" in case.message
        assert case.result_changed and case.result is not None
        assert case.result["status"] == "interrupted" and case.result["partial"] is True
        assert "node.goal_interrupted" in {n["code"] for n in case.result["notes"]}
        assert case.result["mass"] == pytest.approx(2.0, rel=0.1)     # 1.5 s of motion, the fake's 2 kg


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGKILL"])
def test_player_lost_mid_excitation_aborts_the_goal_with_the_reason_and_keeps_a_partial_estimate(cell, signame):
    """It was: SUCCEEDED "excitation finished" after the player had died. SIGTERM: the player stops the arm and
    aborts its goal; SIGKILL: the estimator hears the silence and sends the stop itself."""
    case = cell.run("excitation_player", signame, "middle")
    _clean(case)
    assert case.status == "aborted", case.summary()
    if signame == "SIGTERM":
        assert case.exit_code == 0
        assert "the excitation player ended the motion: the excitation_player node is shutting down (SIGTERM)" \
            in case.message
    else:
        assert "the excitation player fell silent" in case.message
        # PLAYER_SILENCE, then the estimator's own stop: at rest within 2 s of the kill (it was 2.3 s with 2 s).
        assert case.summary()["moving_after_signal_s"] <= 2.0, case.summary()
    assert case.result is not None and case.result["partial"] is True and case.result["status"] == "interrupted"
    assert case.trajectories >= 2           # the excitation and a stop (the player's, or the estimator's)


def test_driver_stopping_mid_excitation_keeps_the_partial_estimate(cell):
    case = cell.run("hardware", "SIGTERM", "middle")
    _clean(case)
    assert case.status == "aborted" and "the last joint state arrived" in case.message
    assert case.result is not None and case.result["partial"] is True


@pytest.mark.parametrize("signame, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_cli_signalled_cancels_prints_and_writes_the_partial_estimate(cell, signame, code):
    """It was: SIGTERM -> ExternalShutdownException traceback, exit 1, goal not cancelled, arm moving; Ctrl-C ->
    "no result within 300 s" after 1 s, exit 2, no --out, no partial estimate printed."""
    case = cell.run("cli", signame, "middle")
    _clean(case)
    assert case.exit_code == code, case.cli_stdout
    assert case.status == "canceled" and case.cli_out is not None
    assert case.cli_out["partial"] is True and case.cli_out["interrupted_by"] == signame
    assert case.cli_out["estimate"]["mass"] == pytest.approx(2.0, rel=0.1)
    assert "partial estimate" in case.cli_stdout and "no result within" not in case.cli_stdout
    assert case.result is not None and case.result["status"] == "cancelled" and case.result["partial"] is True


def test_cli_killed_leaves_a_goal_that_is_still_answered_and_persisted_whole(cell):
    """SIGKILL cannot be caught: the goal plays to its end with nobody listening, and the node still ends it."""
    case = cell.run("cli", "SIGKILL", "early")
    _clean(case)
    assert case.result is not None and yaml.safe_dump(case.result)
    assert case.result["status"] == "finished" and case.result["partial"] is False


def test_cli_whose_estimator_is_killed_says_so_and_the_arm_stops(cell):
    """SIGKILL to the estimator: nobody can answer the goal; the client sees the server leave the graph and ends
    with exit 2 and the reason (it waited its whole --timeout, 300 s). The player hears the estimator's heartbeat
    stop and brings the arm to rest within 2 s (it played the rest of the excitation, 2.4 s from this point: DDS
    noticed the dead estimator only after its lease)."""
    case = cell.run("payload_estimator", "SIGKILL", "early", client_kind="cli")
    assert case.reached, case.summary()
    assert case.summary()["moving_after_signal_s"] <= 2.0, case.summary()
    assert "arm_moving" not in case.defects(), case.summary()
    assert "the goal's supervisor fell silent" in cell.player_log_since_case(), cell.player_log_since_case()[-2000:]
    assert case.client_exit == 2, (case.client_exit, case.client_stderr[-2000:])
    assert "the payload_estimator left during the goal" in case.client_stderr
    assert "Traceback" not in case.client_stderr
