"""An unwritable result_path never costs a goal its estimate (issue 16): the node warns at start-up, the goal
succeeds with the payload's mass, and its result message says the estimate was not persisted and why.
Across processes: the real payload_estimator and excitation_player (config/ur10.yaml through the supervisor)
and the kinematic fake robot carrying 2 kg (test/ros_cell/fake_hardware.py). The result path lies under a
regular file, which no user (root included) can create a directory in."""

import json
from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.process_group import stop_group

HERE = Path(__file__).parent / "ros_cell"
MASS = 2.0


@pytest.fixture(scope="module")
def unwritable(ros_env, tmp_path_factory):
    d = tmp_path_factory.mktemp("persist")
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml")
    (d / "a_file").write_text("not a directory\n")
    with identify_nodes(ros_env, d / "logs", d, d / "a_file" / "last_payload.yaml") as sup:
        yield sup, d


@pytest.mark.slow
def test_unwritable_result_path_warns_at_start_and_still_delivers_the_estimate(unwritable, spawn):
    sup, d = unwritable
    assert "estimates will be delivered and published but not persisted" in sup.log_text("payload_estimator")
    fake = spawn(str(HERE / "fake_hardware.py"), "normal", "ur10", str(MASS))
    assert "fake hardware ready" in fake.stdout.readline()
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2")
    out, err = probe.communicate(timeout=90)
    final = next((json.loads(x) for x in out.splitlines() if x.startswith("{") and '"status"' in x), None)
    assert final is not None, (out, err, sup.log_text("payload_estimator")[-2000:])
    assert final["status"] == "succeeded", final
    assert abs(final["mass"] - MASS) < 0.05 * MASS, final
    assert "the estimate was not persisted" in final["message"] and "a_file" in final["message"], final
    assert (d / "a_file").read_text() == "not a directory\n"
    assert sup.dead() == []
    assert stop_group(fake, grace=10.0), "the fake hardware did not end within 10 s of SIGINT"
