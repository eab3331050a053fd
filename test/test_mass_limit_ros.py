"""The known mass's limit across processes (issue 30's bad input; h148): a node without a rated payload
(rated_payload_kg 0, not configured) on a URDF named "ur" (ur_description's default, no name the rated table knows),
started by the supervisor as the launch file does, a kinematic fake robot, a probe client. A known mass above what the
URDF's joints hold at full reach is an aborted goal naming the joint's limit, before any motion (tested in the core
and the CLI before: test_payload_mass_limit; not across processes).
"""

from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines

from payload_id_core.dynamics.model import bundled_urdf

HERE = Path(__file__).parent / "ros_cell"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def unrated_nodes(ros_env, tmp_path_factory):
    """ur10's URDF under ur_description's default name "ur", the node's rated_payload_kg 0 (not configured), and a
    robot.yaml made for that URDF (so nothing but the known mass can refuse the goal)."""
    d = tmp_path_factory.mktemp("unrated_assets")
    urdf = d / "ur10.urdf"
    text = bundled_urdf("ur10").read_text()
    assert '<robot name="ur10"' in text
    urdf.write_text(text.replace('<robot name="ur10"', '<robot name="ur"'))
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml", robot=str(urdf))
    with identify_nodes(ros_env, tmp_path_factory.mktemp("unrated_logs"), d,
                        estimator_parameters={"urdf": str(urdf), "rated_payload_kg": 0.0}) as sup:
        yield sup


def test_a_known_mass_the_arm_cannot_hold_aborts_the_goal_naming_the_joint_without_a_rated_payload(unrated_nodes,
                                                                                                     spawn):
    fake = spawn(str(HERE / "fake_hardware.py"), "normal", "ur10")
    assert "fake hardware ready" in fake.stdout.readline()
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2",
                  "--known-mass", "20")
    out, err = probe.communicate(timeout=60)
    lines = json_lines(out)
    final = next((d for d in lines if "status" in d), None)
    assert final is not None, (out, err)
    assert final["status"] == "aborted", final
    assert "the known mass 20 kg is above what the arm can hold by its URDF's effort limits: 16.4 kg at full reach " \
           "(shoulder_lift_joint's effort limit 330 N·m" in final["message"], final["message"]
    assert "rated" not in final["message"]           # no rated payload is known here: the joints alone bound it
    watch = next(d for d in lines if "trajectories" in d)
    assert watch["trajectories"] == []               # nothing was ever sent to the controller
    fake.terminate()
