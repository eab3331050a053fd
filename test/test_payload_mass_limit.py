"""The heaviest known mass a robot takes (issue 30), whatever its URDF is called: the rated payload where the name
says it, and what the URDF's joints hold at full reach (dynamics.holding_capacity) for every robot."""

import numpy as np
import pinocchio as pin
import pytest
from cli_fixtures import run_cli

import payload_id_core.dynamics.holding_capacity as capacity_search
from payload_id_core.dynamics.holding_capacity import _torques, holding_capacity
from payload_id_core.dynamics.model import RobotModel, bundled_urdf
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload import mass_limit
from payload_id_core.payload.mass_limit import known_mass_limit, monitor_max_mass, rated_payload
from payload_id_core.payload.session import goal_prior


@pytest.fixture(scope="module")
def ur10e():
    return RobotModel.from_urdf("ur10e")


@pytest.fixture(scope="module")
def capacity(ur10e):
    return holding_capacity(ur10e)


@pytest.fixture(scope="module")
def named_ur(tmp_path_factory):
    """ur10e's URDF under ur_description's default robot name, "ur" (before: only the 10 t sanity limit applied)."""
    path = tmp_path_factory.mktemp("ur") / "ur.urdf"
    path.write_text(bundled_urdf("ur10e").read_text().replace('<robot name="ur10e"', '<robot name="ur"'))
    return path


def _gravity_with_mass_at_flange(model: RobotModel, mass: float, q: np.ndarray) -> np.ndarray:
    """The torque holding `mass` at the flange's origin in pose q, from a copy of the model with it added."""
    jid, placement = model.frame_in_joint(model.default_payload_frame)
    loaded = model.model.copy()
    loaded.inertias[jid] = loaded.inertias[jid] + placement.act(pin.Inertia(mass, np.zeros(3), np.zeros((3, 3))))
    return np.array(pin.computeGeneralizedGravity(loaded, loaded.createData(), q))


def test_the_ur10e_holds_16_kg_at_full_reach_and_not_more(ur10e, capacity):
    """Hand check: the stretched UR10e (upper arm, forearm and wrist horizontal) levers a flange mass 1.30 m from the
    shoulder lift (0.6127 + 0.5716 + 0.1174 m), whose 330 N·m less the arm's own 123 N·m hold 16.1 kg. Just above it
    that joint exceeds its limit in that pose (a model with the mass added); just below it no joint does."""
    cap = capacity
    assert cap.joint == "shoulder_lift_joint" and cap.effort_limit == 330.0
    assert 15.5 < cap.mass < 16.8
    assert cap.per_kg == pytest.approx(9.81 * (0.6127 + 0.5716 + 0.1174), rel=0.01)
    q = np.array(cap.pose)
    assert abs(_gravity_with_mass_at_flange(ur10e, 1.01 * cap.mass, q)[1]) > 330.0
    assert np.all(np.abs(_gravity_with_mass_at_flange(ur10e, 0.99 * cap.mass, q)) < ur10e.limits.effort)
    g, u = _torques(ur10e, ur10e.frame_id(ur10e.default_payload_frame), q)
    assert np.allclose(g + u, _gravity_with_mass_at_flange(ur10e, 1.0, q), atol=1e-9)


def test_the_capacity_bounds_a_robot_the_name_does_not_say(capacity, named_ur):
    """A URDF named "ur" has no rated payload by name; its joints still bound the known mass at 16.1 kg."""
    model = RobotModel.from_urdf(named_ur)
    assert rated_payload(model.model.name) is None
    limit = known_mass_limit(model)
    assert limit is not None and limit.kg == pytest.approx(capacity.mass)
    assert "what the arm can hold" in limit.what and "shoulder_lift_joint" in limit.what
    with pytest.raises(PayloadIdError, match="above what the arm can hold by its URDF's effort limits: 16.1 kg"):
        goal_prior((), 20.0, rated_payload=limit)
    assert goal_prior((), 15.0, rated_payload=limit).known_mass == 15.0


def test_where_the_name_gives_the_rated_payload_above_it_is_refused_saying_what_the_arm_could_hold(ur10e):
    limit = known_mass_limit(ur10e)
    assert limit.kg == 12.5
    with pytest.raises(PayloadIdError, match=r"rated payload 12.5 kg \(its joints could hold 16.1 kg at full reach"):
        goal_prior((), 13.0, rated_payload=limit)
    # ROS 1's ur_description names the robot "<type>_robot"; a configured rated payload (the node's parameter) wins.
    assert rated_payload("ur10_robot") == 10.0 and rated_payload("UR5e") == 5.0 and rated_payload("ur") is None
    assert known_mass_limit(ur10e, rated_kg=8.0).kg == 8.0


def test_a_name_that_promises_more_than_the_joints_hold_is_bounded_by_the_joints(tmp_path):
    """planar_2r's URDF under the name "ur30" (rated 30 kg): its joints hold 16.6 kg at full reach, and bind."""
    path = tmp_path / "ur30.urdf"
    path.write_text(bundled_urdf("planar_2r").read_text().replace('<robot name="planar_2r"', '<robot name="ur30"'))
    limit = known_mass_limit(RobotModel.from_urdf(path))
    assert 16.0 < limit.kg < 17.0 and "below its rated 30 kg" in limit.what


def test_a_known_mass_the_arm_cannot_hold_exits_2_in_one_line_with_nothing_written(named_ur, tmp_path, capsys):
    out = tmp_path / "payload.yaml"
    code, stdout, stderr = run_cli(capsys, "identify-payload", "--urdf", named_ur, "--robot", tmp_path / "robot.yaml",
                                   "--bag", tmp_path / "bag", "--known-mass", "20", "--out", out)
    assert code == 2 and not out.exists() and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "the known mass 20 kg is above what the arm can hold" in lines[0]


def test_the_node_s_limit_is_found_once_and_only_when_a_known_mass_is_given(ur10e, monkeypatch):
    """KnownMassLimit (the node's): no search while no known mass is given (0), the configured rated payload binding,
    and the capacity searched once however many goals give one."""
    calls = []
    monkeypatch.setattr(mass_limit, "holding_capacity", lambda model: calls.append(model) or holding_capacity(model))
    limit = mass_limit.KnownMassLimit(ur10e, rated_kg=8.0)
    assert limit(0.0) is None and calls == []
    assert limit(3.0).kg == 8.0 and limit(5.0).kg == 8.0
    assert len(calls) == 1
    with pytest.raises(PayloadIdError, match="rated payload 8 kg"):
        goal_prior((), 9.0, rated_payload=limit(9.0))


def test_the_monitor_s_bound_without_a_rated_payload_is_the_urdf_s(ur10e, capacity, named_ur):
    """The payload monitor's heaviest load (1.5 × the limit, as over a configured rated payload): with none configured,
    the URDF name's rated payload, else its joints' holding capacity (before: no bound at all, and the real UR10e's
    jointwise-joint_6 named `picked` +12197 kg)."""
    assert monitor_max_mass(ur10e, 10.0) == 15.0                       # configured: as before
    assert monitor_max_mass(ur10e) == 1.5 * 12.5                        # "ur10e": its rated 12.5 kg
    assert monitor_max_mass(RobotModel.from_urdf(named_ur)) == pytest.approx(1.5 * capacity.mass)   # "ur": 24.2 kg


def test_the_capacity_is_searched_once_per_arm_in_a_process(named_ur, monkeypatch):
    """The search takes 0.5-1 s and every monitor and replay needs it: a model loaded again from the same URDF finds
    it without searching; one whose links were changed (a heavier forearm) is another arm and is searched."""
    searched = []
    real = capacity_search._search
    monkeypatch.setattr(capacity_search, "_search", lambda model, frame: searched.append(frame) or real(model, frame))
    monkeypatch.setattr(capacity_search, "_FOUND", {})
    first = holding_capacity(RobotModel.from_urdf(named_ur))
    again = RobotModel.from_urdf(named_ur)
    assert holding_capacity(again) is first and monitor_max_mass(again) == pytest.approx(1.5 * first.mass)
    assert len(searched) == 1
    jid = again.model.getJointId("elbow_joint")
    forearm_load = pin.Inertia(5.0, np.array([0.3, 0.0, 0.0]), np.zeros((3, 3)))
    again.model.inertias[jid] = again.model.inertias[jid] + forearm_load
    heavier = holding_capacity(again)
    assert len(searched) == 2 and heavier.mass < first.mass - 1.0, (heavier.mass, first.mass)
