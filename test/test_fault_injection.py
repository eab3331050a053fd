"""Fault injection: the nodes survive bad joint-state and wrench traffic, a killed estimator, goal bursts.

The merge rules (payload_id_ros.joint_state_merge) are tested in-process first; the rest drives the real
payload_estimator and excitation_player (started by the supervisor with config/ur10.yaml, as the launch
file does) across processes, with a kinematic fake robot carrying a 2 kg payload (test/ros_cell/
fake_hardware.py) that misbehaves on purpose, or a second publisher beside it (test/ros_cell/injector.py).
Every goal must still be answered with the payload's mass, and neither node may die. The driver dying
mid-goal (abort within a bounded time, the motion stopped) is tested in test_nodes_bad_inputs.py
(test_driver_dying_mid_excitation_aborts_with_the_stale_reason_and_stops_the_motion).
"""

import json
import math
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines
from ros_cell.process_group import stop_group
from sensor_msgs.msg import JointState

from payload_id_core.notes import NoteCode
from payload_id_ros.joint_state_merge import DropReason, JointSample, JointStateMerger

HERE = Path(__file__).parent / "ros_cell"
ARM = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
MASS = 2.0                  # kg on tool0, the fake hardware's payload
TRAJECTORY_S = 4.0


# -- the merge rules, in-process ---------------------------------------------------------------------
def _js(t: float, names, position, velocity=None, effort=None) -> JointState:
    sec = math.floor(t)
    msg = JointState(name=list(names), position=[float(x) for x in position],
                     velocity=[float(x) for x in (velocity if velocity is not None else [0.0] * len(position))],
                     effort=[float(x) for x in (effort if effort is not None else [1.0] * len(position))])
    msg.header.stamp = Time(sec=int(sec), nanosec=int(round((t - sec) * 1e9)))
    return msg


def test_merger_reorders_by_name_and_ignores_other_drivers_joints():
    m = JointStateMerger(ARM)
    assert m.add(_js(1.0, ["gripper_finger_joint"], [0.01])) is None
    got = m.add(_js(1.01, ["gripper_finger_joint", *reversed(ARM)], [9.0, 6, 5, 4, 3, 2, 1]))
    assert isinstance(got, JointSample)
    np.testing.assert_array_equal(got.q, [1, 2, 3, 4, 5, 6])
    assert got.t == pytest.approx(1.01)


def test_a_whole_message_gives_the_sample_its_parts_give():
    """The usual message (every joint, any order, velocities and efforts, another driver's joint beside them) takes
    the merger's one-conversion path (h187); its sample is the one the same values give through the general path
    (two partial messages), and a NaN in any of the three arrays is dropped as there."""
    rng = np.random.default_rng(4)
    order = [ARM[k] for k in rng.permutation(len(ARM))]
    q, qd, eff = (rng.standard_normal(len(ARM)) for _ in range(3))
    whole = JointStateMerger(ARM).add(_js(2.0, ["gripper_finger_joint", *order], [9.0, *q], [0.0, *qd],
                                          [0.0, *eff]))
    parts = JointStateMerger(ARM)
    assert parts.add(_js(1.999, order[:2], q[:2], qd[:2], eff[:2])) is None
    split = parts.add(_js(2.0, order[2:], q[2:], qd[2:], eff[2:]))
    assert isinstance(whole, JointSample) and isinstance(split, JointSample)
    assert whole.t == split.t
    for name in ("q", "qd", "effort"):
        assert np.array_equal(getattr(whole, name), getattr(split, name)), name
    for bad in range(3):
        arrays = [list(q), list(qd), list(eff)]
        arrays[bad][3] = math.nan
        assert JointStateMerger(ARM).add(_js(2.0, order, *arrays)) == DropReason.NON_FINITE


def test_merger_joins_partial_messages_into_one_sample_stamped_with_the_newest_part():
    m = JointStateMerger(ARM)
    assert m.add(_js(1.0, ARM[:3], [1, 2, 3], effort=[10, 20, 30])) is None
    assert m.missing() == ARM[3:]
    got = m.add(_js(1.002, ARM[3:], [4, 5, 6], effort=[40, 50, 60]))
    assert isinstance(got, JointSample)
    np.testing.assert_array_equal(got.q, [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(got.effort, [10, 20, 30, 40, 50, 60])
    assert got.t == pytest.approx(1.002)
    assert m.missing() == ARM                      # the next sample needs every joint again
    assert m.add(_js(1.01, ARM[:3], [0, 0, 0])) is None      # a subset alone never makes a sample


@pytest.mark.parametrize("fields, reason", [
    ({"position": [0.0] * 5}, DropReason.RAGGED),
    ({"position": [0.0] * 7}, DropReason.RAGGED),
    ({"velocity": [0.0] * 4}, DropReason.RAGGED),
    ({"effort": [0.0] * 8}, DropReason.RAGGED),
    ({"position": [0, 0, math.nan, 0, 0, 0]}, DropReason.NON_FINITE),
    ({"effort": [0, 0, 0, 0, math.inf, 0]}, DropReason.NON_FINITE),
    ({"velocity": [0, -math.inf, 0, 0, 0, 0]}, DropReason.NON_FINITE),
    ({"name": ARM[:5] + ARM[:1]}, DropReason.REPEATED_NAME),
])
def test_merger_drops_malformed_messages_with_the_reason(fields, reason):
    m = JointStateMerger(ARM)
    msg = _js(1.0, ARM, [0.0] * 6)
    for key, value in fields.items():
        setattr(msg, key, value)
    assert m.add(msg) is reason
    assert isinstance(m.add(_js(1.01, ARM, [0.0] * 6)), JointSample)    # the next good one is taken


def test_merger_keeps_time_order_and_drops_duplicates_reordered_and_future_stamps():
    m = JointStateMerger(ARM, future_tolerance=0.5)
    assert isinstance(m.add(_js(10.0, ARM, [0.0] * 6), now=10.0), JointSample)
    assert m.add(_js(10.0, ARM, [0.0] * 6), now=10.0) is DropReason.DUPLICATE
    assert m.add(_js(9.5, ARM, [0.0] * 6), now=10.0) is DropReason.OUT_OF_ORDER
    assert m.add(_js(1e6, ARM, [0.0] * 6), now=10.0) is DropReason.FUTURE
    assert m.add(_js(9.9, ARM[:3], [0.0] * 3), now=10.0) is None     # an old part: ignored, not an error
    assert m.missing() == ARM
    got = m.add(_js(10.01, ARM, [0.0] * 6), now=10.0)
    assert isinstance(got, JointSample) and got.t == pytest.approx(10.01)
    assert m.last_stamp == pytest.approx(10.01)


def test_merger_starts_the_time_order_anew_when_the_receivers_clock_goes_back():
    """A restarted simulation: /clock and the stamps restart near zero; the samples must not all be dropped."""
    m = JointStateMerger(ARM, future_tolerance=0.5)
    assert isinstance(m.add(_js(500.0, ARM, [0.0] * 6), now=500.0), JointSample)
    assert isinstance(m.add(_js(0.02, ARM, [0.0] * 6), now=0.03), JointSample)
    assert m.add(_js(0.01, ARM, [0.0] * 6), now=0.03) is DropReason.OUT_OF_ORDER


# -- across processes ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("assets")
    make_trajectory(d / "traj.yaml", duration=TRAJECTORY_S)
    make_robot_yaml(d / "robot.yaml")
    return d


@pytest.fixture(scope="module")
def nodes(assets, ros_env, tmp_path_factory):
    with identify_nodes(ros_env, tmp_path_factory.mktemp("logs"), assets, assets / "result.yaml") as sup:
        yield sup


def _start(spawn, script: str, *args: str, ready: str):
    proc = spawn(str(HERE / script), *args)
    assert ready in proc.stdout.readline()
    return proc


def _identify(spawn, timeout: float = 90.0) -> dict:
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2")
    out, err = probe.communicate(timeout=timeout)
    final = next((d for d in json_lines(out) if "status" in d), None)
    assert final is not None, (out, err)
    return final


def _result_note_codes(assets: Path) -> set[str]:
    d = yaml.safe_load((assets / "result.yaml").read_text())
    return {n["code"] for n in d["notes"]}


def _stop(proc) -> None:
    assert stop_group(proc, grace=10.0), f"{proc.args} did not end within 10 s of SIGINT"


@pytest.mark.slow
@pytest.mark.parametrize("fake_mode, injector_mode, drops_noted", [
    ("duplicate", None, True),         # every message twice
    ("nan_some", None, True),          # a NaN position or Inf effort now and then
    ("jumpy", None, True),             # stamps out of order, jumping 1e6 s forward and back
    ("split", None, False),            # two drivers' halves of the arm: merged, nothing lost
    ("normal", "ragged", True),        # position / velocity / effort shorter or longer than name, a repeated name
    ("normal", "gripper", False),      # a one-joint gripper driver on the same topic: ignored
    ("normal", "subset", False),       # a publisher naming three of the arm's joints: never makes a sample
])
def test_goal_under_bad_joint_state_traffic_is_answered_with_the_payload_mass(
        nodes, spawn, assets, fake_mode, injector_mode, drops_noted):
    fake = _start(spawn, "fake_hardware.py", fake_mode, "ur10", str(MASS), ready="fake hardware ready")
    injector = _start(spawn, "injector.py", injector_mode, ready="injector ready") if injector_mode else None
    final = _identify(spawn)
    assert nodes.dead() == [], {n: nodes.log_text(n)[-3000:] for n in nodes.dead()}
    assert final["status"] == "succeeded", final
    assert abs(final["mass"] - MASS) < 0.05 * MASS, final
    assert (NoteCode.NODE_INPUTS_DROPPED.value in _result_note_codes(assets)) is drops_noted
    if injector is not None:
        _stop(injector)
    _stop(fake)


@pytest.mark.slow
@pytest.mark.wall_clock      # the driver's 0.3 s pause must stay under the estimator's 0.5 s stale_timeout
def test_a_stretch_of_joint_states_that_never_arrived_is_named_in_the_result(nodes, spawn, assets):
    """The driver publishes nothing for 0.3 s, 1.5 s into the excitation (fake_hardware "pause", the trace a
    subscriber queue overwritten in a stall leaves): the goal still answers with the payload's mass, and its
    result message and notes say how much was lost and where; no message was malformed. Before: silent."""
    fake = _start(spawn, "fake_hardware.py", "pause", "ur10", str(MASS), ready="fake hardware ready")
    final = _identify(spawn)
    assert final["status"] == "succeeded", final
    assert abs(final["mass"] - MASS) < 0.05 * MASS, final
    notes = {n["code"]: n["text"] for n in yaml.safe_load((assets / "result.yaml").read_text())["notes"]}
    lost = notes.get(NoteCode.NODE_JOINT_STATES_LOST.value, "")
    # 0.3 s (60 samples at 200 Hz) 1.5 s in; the fake driver's own late ticks under load are holes too (true:
    # those samples were never published), listed beside it ("... in 3 stretches: 0.08 s at 0.00 s, 0.31 s at
    # 1.50 s of motion"), and may widen it by a few ticks.
    assert lost.startswith("lost "), notes
    found = re.search(r"\b(0\.(?:29|3\d)) s(?: of joint states \((\d+) samples\))? at (1\.(?:4[5-9]|5[0-2])) s", lost)
    assert found, lost
    # Samples counted at the stream's own median period: 5 ms nominal, up to ~7 ms from a loaded fake (53 seen).
    assert found[2] is None or 40 <= int(found[2]) <= 80, lost
    assert lost in final["message"], final
    assert NoteCode.NODE_INPUTS_DROPPED.value not in notes
    _stop(fake)


@pytest.mark.slow
def test_non_finite_wrenches_are_dropped_never_published_compensated(nodes, spawn, assets):
    """A sensor sending NaN / Inf readings between good ones during a goal: the readings are dropped (the goal
    says so), and afterwards ~/wrench_compensated carries only finite wrenches."""
    fake = _start(spawn, "fake_hardware.py", "normal", "ur10", str(MASS), ready="fake hardware ready")
    sensor = _start(spawn, "injector.py", "wrench_nan", ready="injector ready")
    final = _identify(spawn)
    assert final["status"] == "succeeded", final
    assert abs(final["mass"] - MASS) < 0.05 * MASS, final
    assert NoteCode.NODE_INPUTS_DROPPED.value in _result_note_codes(assets)
    probe = spawn(str(HERE / "probe.py"), "wrench", "--count", "100", "--timeout", "30")
    out, err = probe.communicate(timeout=60)
    stats = json_lines(out)[-1]
    assert stats["n"] >= 100, (stats, err)
    assert stats["non_finite"] == 0, stats
    assert nodes.dead() == []
    _stop(sensor)
    _stop(fake)


@pytest.mark.slow
def test_goal_burst_one_accepted_the_others_rejected_with_the_reason(nodes, spawn):
    fake = _start(spawn, "fake_hardware.py", "normal", "ur10", str(MASS), ready="fake hardware ready")
    rejections_before = nodes.log_text("payload_estimator").count("identify goal rejected")
    probe = spawn(str(HERE / "probe.py"), "burst", "--count", "5", "--method", "direct-rls")
    out, err = probe.communicate(timeout=120)
    lines = json_lines(out)
    answers = next(d for d in lines if "accepted" in d)
    assert (answers["answered"], answers["accepted"], answers["rejected"]) == (5, 1, 4), (lines, err)
    final = next(d for d in lines if "status" in d)
    assert final["status"] == "succeeded" and abs(final["mass"] - MASS) < 0.05 * MASS, final
    log = nodes.log_text("payload_estimator")
    assert log.count("identify goal rejected: an identification is already running") - rejections_before == 4
    assert nodes.dead() == []
    _stop(fake)


@pytest.mark.slow
def test_estimator_killed_mid_goal_keeps_its_result_file_and_serves_after_restart(nodes, spawn, assets):
    """kill -9 of the estimator during a goal: the persisted result stays as it was (parseable, unchanged), and
    a new estimator loads it and serves the next goal."""
    fake = _start(spawn, "fake_hardware.py", "normal", "ur10", str(MASS), ready="fake hardware ready")
    result = assets / "result.yaml"
    if not result.exists():
        assert _identify(spawn)["status"] == "succeeded"
    before = result.read_bytes()
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls")
    killed_at = None
    for raw in probe.stdout:
        if raw.startswith("{") and json.loads(raw).get("feedback", 0.0) > 0.5:
            os.killpg(nodes.pid("payload_estimator"), signal.SIGKILL)
            killed_at = time.monotonic()
            break
    assert killed_at is not None, "the excitation never started"
    _stop(probe)
    nodes.stop(only=["payload_estimator"])
    assert result.read_bytes() == before
    assert yaml.safe_load(before)["mass"] == pytest.approx(MASS, rel=0.05)
    log = nodes.log_dir / "payload_estimator.log"
    starts = log.read_text().count("payload estimator ready")
    nodes.start(only=["payload_estimator"])      # its log is appended to: count the ready lines
    deadline = time.monotonic() + 60
    while nodes.log_text("payload_estimator").count("payload estimator ready") == starts:
        assert time.monotonic() < deadline and not nodes.dead(), nodes.log_text("payload_estimator")[-3000:]
        time.sleep(0.2)
    restarted = nodes.log_text("payload_estimator").rsplit("payload estimator ready", 2)[-2]
    assert "loaded the last result" in restarted
    # The player, left alone, plays the excitation to its end (nobody cancelled it): wait that out.
    time.sleep(max(0.0, killed_at + TRAJECTORY_S + 1.0 - time.monotonic()))
    final = _identify(spawn)
    assert final["status"] == "succeeded", final
    assert abs(final["mass"] - MASS) < 0.05 * MASS, final
    assert nodes.dead() == []
    _stop(fake)
