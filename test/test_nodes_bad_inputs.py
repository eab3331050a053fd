"""Bad inputs abort the Identify goal with a reason and never leave the robot moving.

Real processes over Fast DDS on loopback: the estimator and the player (started by the supervisor
with config/ur10.yaml, as the launch file does) and a kinematic fake robot (test/ros_cell/
fake_hardware.py) that misbehaves on purpose: a missing joint, NaN efforts, stale stamps, or a
controller that ignores commands, or a driver that dies in the middle of the excitation.
Each test starts a new fake right after the previous one died, so every goal also checks that the
estimator judges the new driver's samples, not the dead one's last (DDS discovers a new publisher only
after ~0.5-2.5 s on a loaded machine).
"""

import json
import os
import signal
import time
from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines

HERE = Path(__file__).parent / "ros_cell"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("assets")
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml")
    return d


@pytest.fixture(scope="module")
def nodes(assets, ros_env, tmp_path_factory):
    with identify_nodes(ros_env, tmp_path_factory.mktemp("logs"), assets) as sup:
        yield sup


def _identify(spawn, *extra, timeout=60):
    probe = spawn(str(HERE / "probe.py"), "identify", *extra)
    out, err = probe.communicate(timeout=timeout)
    lines = json_lines(out)
    final = next(d for d in lines if "status" in d)
    watch = next((d for d in lines if "trajectories" in d), {})
    return final, watch, err


def _with_fake(spawn, mode):
    fake = spawn(str(HERE / "fake_hardware.py"), mode)
    assert "fake hardware ready" in fake.stdout.readline()
    return fake


@pytest.mark.parametrize("mode, reason", [
    ("missing_joint", "lack joints ['wrist_3_joint']"),
    ("nan", "NaN"),
    ("stale", "stale"),
])
def test_bad_joint_states_abort_before_any_motion(nodes, spawn, mode, reason):
    fake = _with_fake(spawn, mode)
    final, watch, err = _identify(spawn, "--method", "direct-rls", "--rest-window", "0.3")
    assert final["status"] == "aborted", (final, err)
    assert reason in final["message"]
    assert watch["trajectories"] == []          # nothing was ever sent to the controller
    fake.terminate()


def test_unknown_method_and_trajectory_abort_with_the_choices(nodes, spawn):
    fake = _with_fake(spawn, "normal")
    final, watch, _ = _identify(spawn, "--method", "magic-rls", "--rest-window", "0.2")
    assert final["status"] == "aborted"
    assert "unknown method 'magic-rls'" in final["message"] and "difference-rls" in final["message"]
    final, watch2, _ = _identify(spawn, "--method", "direct-rls", "--trajectory", "no_such_traj",
                                 "--rest-window", "0.2")
    assert final["status"] == "aborted"
    assert "unknown trajectory 'no_such_traj'" in final["message"]
    assert watch["trajectories"] == [] and watch2["trajectories"] == []
    fake.terminate()


@pytest.mark.parametrize("fields, reason", [
    (["--convergence", "never"], "unknown convergence rule 'never'; use one of: covariance, xu"),
    (["--forgetting", "1.5"], "forgetting 1.5 is not a forgetting factor"),
    (["--noise-std", "1", "2"], "noise_std [1.0, 2.0] is not one positive N·m value or one per joint"),
    (["--bounding-box", "0", "0.1", "0", "0.1", "0", "0.1"], "the bounding box's corners are swapped on y"),
    (["--known-mass", "-1"], "the known mass is -1 kg, not > 0"),
    (["--bounding-box", "0", "0", "0", "0", "0.1", "0.1"], "the bounding box has zero extent on x (0 to 0)"),
    (["--bounding-box", "0", "0", "0", "0.1", "nan", "0.1"], "holds a NaN or infinite corner"),
    (["--known-mass", "nan"], "the known mass is nan, not a number"),
    # The node's rated_payload_kg (10) binds; the reason says what the URDF's joints hold (h137).
    (["--known-mass", "12"], "above the robot's rated payload 10 kg (its joints could hold 16.4 kg at full reach"),
])
def test_bad_estimator_settings_abort_the_goal_before_any_motion(nodes, spawn, fields, reason):
    fake = _with_fake(spawn, "normal")
    final, watch, err = _identify(spawn, "--method", "direct-rls", "--rest-window", "0.2", *fields)
    assert final["status"] == "aborted", (final, err)
    assert reason in final["message"]
    assert watch["trajectories"] == []          # nothing was ever sent to the controller
    fake.terminate()


def test_controller_not_responding_aborts_and_stops_the_motion(nodes, spawn):
    """The fake ignores commands: the estimator sees no motion, aborts, and the player sends a stop."""
    fake = _with_fake(spawn, "static")
    final, watch, err = _identify(spawn, "--method", "direct-rls", "--rest-window", "0.3")
    assert final["status"] == "aborted", (final, err)
    assert "the controller does not" in final["message"]   # respond (no motion) or follow (tracking)
    sent = watch["trajectories"]
    # move to start, excitation, then the decelerating stop ending at zero velocity
    assert len(sent) == 3, sent
    stop = sent[-1]
    assert stop["t_end"] < 2.0 and max(abs(v) for v in stop["v_last"]) < 1e-9
    assert max(abs(v) for v in stop["v_first"]) > 1e-3    # it starts from the moving command: no jump to rest
    fake.terminate()


def test_driver_dying_mid_excitation_aborts_with_the_stale_reason_and_stops_the_motion(nodes, spawn):
    """The robot driver dies 0.5 s into the excitation: within ~1 s the goal is aborted because the joint
    states stopped (not for another reason), and the player brings the arm to rest without a jump."""
    fake = _with_fake(spawn, "normal")
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2")
    killed = final = watch = None
    for raw in probe.stdout:                 # the probe gives up by itself after 60 s
        if not raw.startswith("{"):
            continue
        d = json.loads(raw)
        if killed is None and d.get("feedback", 0.0) > 0.5:
            os.killpg(fake.pid, signal.SIGKILL)
            fake.wait(timeout=5)
            killed = time.time()
        final = d if "status" in d else final
        watch = d if "trajectories" in d else watch
    probe.wait(timeout=10)
    assert killed is not None, "the excitation never started"
    assert final["status"] == "aborted", (final, probe.stderr.read())
    assert "the last joint state arrived" in final["message"] and "stopped publishing" in final["message"]
    sent = watch["trajectories"]
    assert len(sent) == 3, sent               # move to start, excitation, the stop
    stop = sent[-1]
    # stale_timeout 0.5 s + one 0.2 s feedback period + the cancel round trip
    assert 0.3 < stop["received"] - killed < 1.5, stop["received"] - killed
    assert stop["t_end"] < 2.0 and max(abs(v) for v in stop["v_last"]) < 1e-9
    assert max(abs(v) for v in stop["v_first"]) > 1e-3    # from the moving command: no jump to rest
