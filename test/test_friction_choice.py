"""The friction model is chosen on recordings the robot was not fitted to (issue 29 item 1): each candidate
predicts held-out torques, the simplest one not beaten beyond the noise is kept, and robot.yaml records it."""

import numpy as np
import pytest
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import write_bag
from payload_id_core.payload.methods import payload_request
from payload_id_core.robot_id import IDENTIFIED_GAINS_SOURCE, RobotIdentification, fit_given_model
from payload_id_core.robot_id.friction_choice import (
    FRICTION_CANDIDATES,
    LOAD_FRICTION_CRITERION,
    LoadFrictionChoices,
    choose_friction,
    choose_load_friction,
)
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.8, 0.8, 0.5, 0.2, 0.2, 0.1])  # N·m per joint
TRUE_FRICTION = {  # θ_f per joint and the shape the simulated robot has
    "stribeck": (np.tile([2.0, 4.0, 6.0, 0.1], 6), [[0.08]] * 6),
    "linear": (np.tile([3.0, 6.0, 0.1], 6), None),
}


def _run(model, kind, seed, duration):
    theta_f, shape = TRUE_FRICTION[kind]
    fm = make_friction_model(kind, model.joint_names, shape=shape)
    t, q, qd, qdd = sum_of_sines(model, duration, 200.0, seed=seed)
    return synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=theta_f, noise_std=NOISE,
                               seed=seed)


@pytest.mark.parametrize("truth", ["stribeck", "linear"])
def test_the_robots_own_friction_is_chosen_on_held_out_motions(ur10, truth):
    fits = {k: fit_given_model(ur10, _run(ur10, truth, 1, 12.0), friction=k, delay=0.0) for k in FRICTION_CANDIDATES}
    held_out = [conditioned_signals(_run(ur10, truth, s, 8.0), ur10.joint_names, delay=0.0) for s in (2, 3)]
    choice = choose_friction(fits, held_out, ["seed 2", "seed 3"], ur10)
    assert choice.chosen == truth, choice.note().text
    score = {c.kind: c for c in choice.candidates}
    assert [c.kind for c in choice.candidates] == list(FRICTION_CANDIDATES)
    if truth == "stribeck":
        # the simpler models mispredict the low-speed friction, far beyond the paired difference's noise
        for k in ("linear", "nonlinear"):
            assert score[k].excess > 5 * score[k].excess_std, (k, score[k])
        np.testing.assert_allclose(score["stribeck"].rmse, NOISE, rtol=0.05)
    else:
        # the richer models contain the linear one: they can only fit noise, so the simplest is kept
        assert all(score[k].excess < 0.01 for k in FRICTION_CANDIDATES)
        np.testing.assert_allclose(score["linear"].rmse, NOISE, rtol=0.05)


@pytest.fixture(scope="module")
def planar_bags(tmp_path_factory):
    """A planar_2r run with Stribeck friction, and two held-out runs of other motions."""
    root = tmp_path_factory.mktemp("friction_choice")
    model = RobotModel.from_urdf("planar_2r")
    fm = make_friction_model("stribeck", model.joint_names, shape=[[0.08], [0.08]])
    bags = []
    for seed in (1, 2, 3):
        t, q, qd, qdd = sum_of_sines(model, 12.0, 100.0, seed=seed)
        rec = synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=np.tile([2.0, 3.5, 6.0, 0.1], 2),
                                  noise_std=np.array([0.1, 0.05]), seed=seed)
        bags.append(str(write_bag(root / f"run{seed}", rec)))
    return root, bags


def _identify(root, bags, *extra):
    out = root / "robot.yaml"
    assert cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", bags[0], *extra, "--out", str(out)]) == 0
    return out


def test_identify_robot_records_the_candidates_scores_criterion_and_choice(planar_bags):
    root, bags = planar_bags
    out = _identify(root, bags, "--friction-cv-bag", bags[1], "--friction-cv-bag", bags[2])
    d = yaml.safe_load(out.read_text())
    choice = d["friction_choice"]
    assert choice["chosen"] == "stribeck" == d["friction"]["model"]
    assert choice["held_out"] == bags[1:]
    assert "held-out torque prediction" in choice["criterion"]
    assert [c["kind"] for c in choice["candidates"]] == list(FRICTION_CANDIDATES)
    best = min(choice["candidates"], key=lambda c: c["score"])
    assert best["kind"] == "stribeck" and best["excess"] == 0.0
    for c in choice["candidates"]:
        if c["kind"] != "stribeck":
            assert c["excess"] > 2 * c["excess_std"] > 0
    robot = RobotIdentification.load(out, RobotModel.from_urdf("planar_2r"))
    assert robot.friction_choice is not None and robot.friction_choice.chosen == "stribeck"
    assert any(n.code.value == "robot.friction_chosen" for n in robot.notes)


def test_without_held_out_runs_the_default_is_recorded_as_not_chosen(planar_bags):
    root, bags = planar_bags
    choice = yaml.safe_load(_identify(root, bags).read_text())["friction_choice"]
    assert choice["chosen"] == "nonlinear" and choice["candidates"] == []
    assert "not chosen from data" in choice["reason"]
    given = yaml.safe_load(_identify(root, bags, "--friction", "linear",
                                     "--friction-cv-bag", bags[1]).read_text())["friction_choice"]
    assert given["chosen"] == "linear" and "given" in given["criterion"] and given["candidates"] == []


def test_a_robot_yaml_whose_friction_is_not_the_recorded_choice_is_refused(planar_bags, capsys):
    root, bags = planar_bags
    out = _identify(root, bags, "--friction-cv-bag", bags[1])
    d = yaml.safe_load(out.read_text())
    d["friction_choice"]["chosen"] = "linear"
    out.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="friction_choice"):
        RobotIdentification.load(out, RobotModel.from_urdf("planar_2r"))
    assert cli_main(["identify-payload", "--urdf", "planar_2r", "--robot", str(out), "--bag", bags[2],
                     "--method", "khalil-1", "--out", str(root / "p.yaml")]) == 2
    assert "friction_choice" in capsys.readouterr().err


def test_load_friction_is_on_only_when_it_beats_off_beyond_the_noise():
    # off: 0.5 % of 2.8 kg; on: 3 % (the real difference-rls case) -> off, on is worse
    worse = choose_load_friction({False: [0.014, -0.010], True: [0.085, 0.13]}, {False: [0.02, 0.02],
                                                                               True: [0.025, 0.025]})
    assert not worse.on and "on is worse" in worse.reason
    # on better by 0.1 kg (the issue's −3.6 % → −0.5 % on another day's recording), σ 0.03 kg -> on
    better = choose_load_friction({False: [-0.10, -0.11], True: [0.0, -0.01]}, {False: [0.02, 0.02],
                                                                               True: [0.03, 0.03]})
    assert better.on
    # the real difference-rls case: on better by 0.0096 kg, 2.0 × the Hausman std but a third of the estimates' σ
    # (0.023 kg): on then gave +3.3 % at 3.8σ on the next motion -> off, the model with fewer unknowns
    tied = choose_load_friction({False: [0.0139], True: [0.0043]}, {False: [0.023], True: [0.0235]})
    assert not tied.on and "not better by more than" in tied.reason


@pytest.mark.parametrize("recorded", ["on", "off"])
def test_the_payload_path_uses_the_load_friction_robot_yaml_records(planar_bags, recorded):
    root, bags = planar_bags
    model = RobotModel.from_urdf("planar_2r")
    d = yaml.safe_load(_identify(root, bags, "--friction-cv-bag", bags[1]).read_text())
    # gains identified with a load: the rule without a recorded choice is off for every method
    d["effort"]["source"] = IDENTIFIED_GAINS_SOURCE + "calibration run with a known 1 kg payload"
    robot = RobotIdentification.from_dict(d, model)
    assert not payload_request("khalil-1", model, robot).options.load_friction
    d["load_friction_choice"] = LoadFrictionChoices(
        LOAD_FRICTION_CRITERION, ["held-out loaded"], 1.0,
        {"khalil-1": choose_load_friction({False: [0.0], True: [0.0]}, {False: [0.1], True: [0.1]})}).to_dict()
    d["load_friction_choice"]["methods"]["khalil-1"]["chosen"] = recorded
    robot = RobotIdentification.from_dict(d, model)
    req = payload_request("khalil-1", model, robot)
    assert req.options.load_friction is (recorded == "on")
    assert [n.code.value for n in req.notes] == ["payload.load_friction_chosen"]
    # a method robot.yaml records nothing for keeps its rule; a flag still overrules the record
    assert not payload_request("direct-rls", model, robot).options.load_friction
    assert payload_request("khalil-1", model, robot, load_friction=recorded == "off").options.load_friction is (
        recorded == "off")
    d["load_friction_choice"]["methods"]["khalil-1"]["chosen"] = "maybe"
    with pytest.raises(PayloadIdError, match="load_friction_choice"):
        RobotIdentification.from_dict(d, model)


def test_held_out_loaded_runs_need_the_known_mass(planar_bags, capsys):
    root, bags = planar_bags
    assert cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", bags[0], "--held-out-loaded-bag", bags[1],
                     "--out", str(root / "never.yaml")]) == 2
    assert "--known-payload-mass" in capsys.readouterr().err
    assert not (root / "never.yaml").exists()
