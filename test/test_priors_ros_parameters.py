"""The estimator's parameters as the prior (issue 30 item 2: "the estimator's parameters take the same priors"), across
processes: payload_estimator started with `bounding_box` and `known_mass` set, as a launch file's config would, a
kinematic fake robot carrying a 2 kg part (test/ros_cell/fake_hardware.py, CoM [20, -10, 60] mm on tool0), a probe
client. Until h179 only the goal's own fields were tested across processes (test_priors_ros) and the node's fallback
ROS-free (test_payload_priors::test_a_goal_prior_takes_each_field_not_given_from_the_node). Its own module: two cells
in one module would share the node names while both live.
"""

from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines

HERE = Path(__file__).parent / "ros_cell"
pytestmark = pytest.mark.slow

PART_KG = 2.0                                   # the fake hardware's part
NODE_BOX = [-0.08, -0.1, -0.02, 0.1, 0.1, 0.16]   # m: holds the part, not centred on its CoM
NODE_MASS_STD = 0.004                           # kg, the node's known_mass_std (not the 0.5 % default: 0.01)


@pytest.fixture(scope="module")
def nodes(ros_env, tmp_path_factory):
    d = tmp_path_factory.mktemp("prior_parameters_assets")
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml")
    with identify_nodes(ros_env, tmp_path_factory.mktemp("prior_parameters_logs"), d,
                        estimator_parameters={"bounding_box": NODE_BOX, "known_mass": PART_KG,
                                              "known_mass_std": NODE_MASS_STD}) as sup:
        yield sup


def _identify(spawn, *extra):
    fake = spawn(str(HERE / "fake_hardware.py"), "normal", "ur10", str(PART_KG))
    assert "fake hardware ready" in fake.stdout.readline()
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2", *extra)
    out, err = probe.communicate(timeout=60)
    final = next((d for d in json_lines(out) if "status" in d), None)
    assert final is not None, (out, err)
    fake.terminate()
    return final


def test_a_goal_without_priors_takes_the_node_parameters_and_its_own_fields_override_them(nodes, spawn):
    plain = _identify(spawn)
    assert plain["status"] == "succeeded" and plain["quality"] == "ok", plain
    assert plain["bounding_box"] == pytest.approx(NODE_BOX) and plain["known_mass"] == PART_KG
    assert plain["known_mass_std"] == pytest.approx(NODE_MASS_STD)
    assert plain["prior_not_applied"] == {}, plain          # applied: neither part contradicted nor unsettled
    # Conditioned on the weighed mass, the mass σ is at most the node's 4 g (the kinematic fake's data are sharper:
    # the prior does not pin it, prior_pinned stays empty here).
    assert abs(plain["mass"] - PART_KG) < 0.01 and plain["mass_std"] <= NODE_MASS_STD, plain
    # A goal's own known mass replaces the node's (with its own default σ, 0.5 % of it); the box stays the node's.
    own = _identify(spawn, "--known-mass", "2.01")
    assert own["status"] == "succeeded" and own["prior_not_applied"] == {}, own
    assert own["known_mass"] == 2.01 and own["known_mass_std"] == pytest.approx(0.005 * 2.01)
    assert own["bounding_box"] == pytest.approx(NODE_BOX)
