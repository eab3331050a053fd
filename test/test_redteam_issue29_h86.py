"""Red team of the session's merges on issue 29 (h81: identify-robot chooses the drive gains' friction model and
records it in robot.yaml effort.gain_model).

effort.gain_model decides whether the payload methods model the load-dependent friction
(RobotIdentification.gains_absorbed_load_friction): gains fitted without it have absorbed it, and modelling it again
moved the real UR10e's difference-rls mass by +3.0 / +4.7 % (payload.methods.common.load_friction_on). A hand edit of
`chosen` alone (the gains unchanged) was read as it stood: the file then said load friction on for gains that
absorbed it, or off for gains that did not, and nothing noticed. So were candidates missing, `eligible: "no"` (read
as true), a NaN score and `determined` naming joints the robot does not have.

Also here: the gains' σ where the criterion keeps the linear model and on a Panda-sized profile (covered since the
model choice joins it, h90; the UR3's wrist 1 since its collinearity with its load friction joins it, h174) and
the recorded choice weight; a light (1 kg) calibration load that was refused on the gain fit's starting point
(fixed); and the robot.yaml witnesses (h79's per-joint gain witness, h80's gear witness, h85's goal judgment)
against drifts beyond 3σ: what they now catch, and the drifts still written converged and ok (strict xfails,
numbers in each reason). Simulated, seconds each."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from cli_fixtures import cli_calibration
from session_cell import FRAME as CELL_FRAME
from session_cell import FRICTION as CELL_FRICTION
from session_cell import PHI as CELL_PHI
from session_cell import session_cell
from test_goal_witnesses import _goal

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag
from payload_id_core.notes import NoteCode
from payload_id_core.payload.gain_uncertainty import (
    gain_load_only_covariance,
    gain_relative_covariance,
    gain_relative_std,
    model_choice_shift,
)
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.methods.common import load_friction_on
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.robot_id.drive_gains import identify_drive_gains, weakly_determined
from payload_id_core.testing.sim_runs import DRIFT_MASS as STOP40_MASS
from payload_id_core.testing.sim_runs import drift_run, given_gains_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

TRUTH_MASS = 3.75
TRUTH = {"frame": "tool0", "mass": TRUTH_MASS, "com": [0.02, -0.01, 0.06],
         "inertia": {"ixx": 0.01, "ixy": 0.0, "ixz": 0.0, "iyy": 0.012, "iyz": 0.0, "izz": 0.008}}


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """Unloaded and 3.75 kg runs of the current-unit simulated UR10 (100 Hz to stay cheap), and robot.yaml with the
    gains identified from the known 3.75 kg run."""
    d = tmp_path_factory.mktemp("h86_gain_model")
    cli_calibration(d, "ur10", TRUTH, trajectory="ur10_payload", seeds=(1, 3), payload_frame=False)
    return d


@pytest.fixture(scope="module")
def calibrated(bags):
    """bags' robot.yaml (at 100 Hz the linear friction model is chosen, both candidates recorded)."""
    data = yaml.safe_load((bags / "robot.yaml").read_text())
    assert data["effort"]["gain_model"]["chosen"] == "linear"                      # the premise
    assert set(data["effort"]["gain_model"]["candidates"]) == {"linear", "shaped_load_friction"}
    return data


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf("ur10")


def _edited(calibrated, edit):
    d = copy.deepcopy(calibrated)
    edit(d["effort"]["gain_model"])
    return d


def test_the_recorded_gain_model_reads_back_and_sets_the_load_friction(calibrated, model):
    robot = RobotIdentification.from_dict(copy.deepcopy(calibrated), model)
    assert robot.gain_model is not None and robot.gain_model.chosen == "linear"
    assert robot.gains_absorbed_load_friction
    on, _ = load_friction_on(True, PayloadOptions(), robot, "khalil-1")
    assert not on


def test_a_chosen_model_edited_by_hand_is_refused_by_name(calibrated, model):
    """Before: `chosen: shaped_load_friction` written over the linear fit's gains was read, and khalil-1 then
    modelled the load friction those gains had absorbed (load_friction_on → True)."""
    flipped = _edited(calibrated, lambda g: g.update(chosen="shaped_load_friction"))
    with pytest.raises(PayloadIdError, match=r"effort.gain_model: chosen is shaped_load_friction but its candidates"
                                             r"' numbers give linear") as err:
        RobotIdentification.from_dict(flipped, model)
    assert "edited after identification" in str(err.value) and "identify-robot" in str(err.value)


@pytest.mark.parametrize("what, edit", [
    ("no candidates", lambda g: g.pop("candidates")),
    ("no linear candidate", lambda g: g["candidates"].pop("linear")),
    ("eligible a string", lambda g: g["candidates"]["shaped_load_friction"].update(eligible="no")),
    ("NaN score", lambda g: g["candidates"]["linear"].update(score_pct=float("nan"))),
    ("negative gain", lambda g: g["candidates"]["linear"]["scale"].update(elbow_joint=-8.4)),
    ("unknown joint", lambda g: g.update(determined=["elbow_joint", "joint_7"])),
    ("negative load friction spread", lambda g: g["load_friction_spread"].update(wrist_1_joint=-0.01)),
])
def test_a_damaged_gain_model_is_refused_by_name(calibrated, model, what, edit):
    with pytest.raises(PayloadIdError, match="effort.gain_model is damaged"):
        RobotIdentification.from_dict(_edited(calibrated, edit), model)


def test_a_damaged_gain_model_exits_2_with_one_line_and_writes_nothing(bags, calibrated, tmp_path, capsys):
    """The command line: identify-payload with the hand-edited robot.yaml."""
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(_edited(calibrated, lambda g: g.update(chosen="shaped_load_friction"))))
    out = tmp_path / "payload.yaml"
    rc = cli_main(["identify-payload", "--urdf", "ur10", "--robot", str(robot), "--bag", str(bags / "loaded"),
                   "--unloaded-bag", str(bags / "unloaded"), "--method", "khalil-1", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "effort.gain_model" in err and "identify-robot" in err, err
    assert not out.exists()


# -- the gains' σ when the linear model is chosen -------------------------------------------------------------------

UR10_GAINS = np.array([10.0, 10.6956, 8.4566, 9.0029, 9.48, 10.1232])   # data/sim/ur10.yaml effort_scale


def test_the_linear_gain_models_sigma_covers_its_gains_at_100_hz(tmp_path):
    """When the criterion keeps the linear model, robot.yaml's gain σ was that fit's textbook σ, which does not
    cover the linear model's own friction error: the README's calibration motion at 100 Hz, 4 kg (seeds 2/102)
    scores linear 1.72 %, load friction 1.49 % (13 % narrower, under the 20 % margin), so linear stays and wrist_1
    was −4.75 % at 8.7σ, elbow +1.28 % at 4.3σ, wrist_2 −3.0 % at 3.6σ. Now the other candidate's distance with its
    weight (0.57) joins each determined gain's σ (choice_record.GAIN_CHOICE_SPREAD): wrist_1 ± 2.7 %, 1.9σ."""
    d = yaml.safe_load(cli_calibration(tmp_path, "ur10", {**TRUTH, "mass": 4.0}).read_text())
    z = (np.array(d["effort_scale"]) - UR10_GAINS) / np.array(d["effort"]["scale_std"])
    assert np.all(np.abs(z) <= 3.0), (d["effort"]["gain_model"]["chosen"], np.round(z, 2).tolist())


@pytest.fixture(scope="module")
def ur3_calibration(tmp_path_factory):
    """The UR3 with the ur10 drive profile, README's calibration motion at 100 Hz, 4 kg, seeds 2/102: the run
    directory (unloaded/, loaded/) and its robot.yaml."""
    d = tmp_path_factory.mktemp("h115_ur3")
    return d, yaml.safe_load(cli_calibration(d, "ur3", {**TRUTH, "mass": 4.0}).read_text())


def test_the_ur3_gains_are_within_three_sigma(ur3_calibration):
    """Was a strict xfail: the UR3 with the ur10 drive profile (README's calibration motion, 100 Hz, 4 kg, seeds 2/102)
    keeps linear (Newey-West σ RMS 2.86 % against the load-friction model's 4.27 %), and both friction models put
    wrist_1 about 5 % low (linear −5.03 %, per-joint μ −4.08 %), so their distance did not size that error: wrist_1
    ± 1.1 % at 4.8σ (seeds 1-10: −4.7 to −5.9 %, 1.8-4.8σ). Cause (h115): wrist_1 is friction-dominated, its torque
    keeps the sign of its velocity, so its own load-Coulomb μ_j|τ| sgn(q̇) is nearly one column with its gain. Now
    (h174) the gain's σ holds what the run cannot separate of the two (drive_gains.load_friction_spread: its σ with
    μ_j freed, correlation 0.97): wrist_1 ± 3.6 %, 1.5σ; wrist_2 ± 3.6 → 7.5 % (ρ 0.99, its error −2.8 %), elbow
    2.6 → 2.9 %, shoulder lift 1.64 → 1.66 %; the identify-robot warning names wrist_1 and wrist_2 and the fix. One μ
    for the gears (below) would put wrist_1 right rather than widen it; it regresses the real UR10e's held-out
    payloads (h115, h128), so it stays opt-in."""
    _, d = ur3_calibration
    z = (np.array(d["effort_scale"]) - UR10_GAINS) / np.array(d["effort"]["scale_std"])
    assert np.all(np.abs(z) <= 3.0), (d["effort"]["gain_model"]["chosen"], np.round(z, 2).tolist())
    spread = d["effort"]["gain_model"]["load_friction_spread"]
    rel = dict(zip(d["joint_names"], np.array(d["effort"]["scale_std"]) / np.array(d["effort_scale"])))
    assert spread["wrist_1_joint"] > 0.9 * rel["wrist_1_joint"], (spread, rel)     # the σ is the collinearity's
    assert spread["shoulder_pan_joint"] == spread["wrist_3_joint"] == 0.0           # undetermined: with_model_error's
    named = " ".join(n["text"] for n in d["notes"] if n["code"] == NoteCode.ROBOT_GAIN_LOAD_FRICTION_COLLINEAR.value)
    assert "wrist_1_joint" in named and "shoulder_lift_joint" not in named, named


@pytest.fixture(scope="module")
def ur3_held_out(ur3_calibration):
    """ur3_calibration's runs identified with the gain model judged on held-out loaded runs (--gain-model held-out,
    h128: the loaded run's halves, no check run given): robot.yaml's content."""
    d, _ = ur3_calibration
    out = d / "robot_held_out.yaml"
    assert cli_main(["identify-robot", "--urdf", "ur3", "--bag", str(d / "unloaded"), "--loaded-bag", str(d / "loaded"),
                     "--known-payload-mass", "4.0", "--payload-frame", "tool0", "--gain-model", "held-out",
                     "--out", str(out)]) == 0
    return yaml.safe_load(out.read_text())


def test_the_ur3_gains_judged_on_held_out_halves_are_within_three_sigma(ur3_held_out):
    """The fix the xfail above names, opt-in (h128): each candidate (linear, one μ, a μ per joint) fitted without
    one half of the loaded run predicts it; one μ predicts best beyond the others' noise (seed 2: held-out scores
    linear 4.92, a μ per joint 1.44, one μ 1.00) and every gain is within 3σ (wrist 1 −0.58 %)."""
    g = ur3_held_out["effort"]["gain_model"]
    assert g["chosen"] == "shaped_shared_mu" and len(g["held_out"]) == 2, g
    held = {k: c["held_out"] for k, c in g["candidates"].items()}
    assert held["shaped_shared_mu"]["score"] == min(h["score"] for h in held.values()), held
    assert held["linear"]["score"] - held["shaped_shared_mu"]["score"] > 2 * held["linear"]["excess_std"], held
    assert g["criterion"].startswith("held-out")
    z = (np.array(ur3_held_out["effort_scale"]) - UR10_GAINS) / np.array(ur3_held_out["effort"]["scale_std"])
    assert np.all(np.abs(z) <= 3.0), np.round(z, 2).tolist()


def test_the_ur3_wrist_1_bias_is_its_own_load_coulomb_mu_and_one_mu_for_the_gears_removes_it(ur3_calibration):
    """Why the xfail above misses (h115): the unloaded run's friction shapes with a load-dependent Coulomb level μ_j
    per joint leave wrist_1 about 4 % low with μ_j of the wrong sign (its torque keeps the sign of its velocity, so μ_j
    and its gain are one column); one μ shared by the determined joints, fixed by the shoulder lift that lifts and
    lowers the load, finds the simulated 0.02 and puts every determined gain within 1.5 %."""
    d, _ = ur3_calibration
    model = RobotModel.from_urdf("ur3")
    unloaded, loaded = read_bag(d / "unloaded", joint_names=model.joint_names), \
        read_bag(d / "loaded", joint_names=model.joint_names)
    linear = identify_drive_gains(model, unloaded, loaded, 4.0, "tool0")
    determined = ~weakly_determined(linear)
    assert determined[1:5].all()                                        # shoulder lift .. wrist 2
    shapes = fit_given_model(model, unloaded.with_drive_gains(linear.scale), friction="nonlinear").friction
    per_joint, shared = (identify_drive_gains(model, unloaded, loaded, 4.0, "tool0", friction=shapes,
                                              sign_epsilon=shapes.sign_epsilon, load_friction=determined,
                                              shared_mu=one) for one in (False, True))
    assert per_joint.load_friction_mu is not None and shared.load_friction_mu is not None
    assert per_joint.scale[3] / UR10_GAINS[3] - 1 < -0.03 and per_joint.load_friction_mu[3] < 0   # the premise
    err = shared.scale / UR10_GAINS - 1
    assert np.all(np.abs(err[determined]) < 0.015), err
    mu = shared.load_friction_mu[determined]
    assert np.ptp(mu) == 0.0 and 0.01 < mu[0] < 0.03, mu                # one μ, the simulated drives' 0.02


def test_the_recorded_choice_weight_sets_the_gains_sigma(calibrated):
    """robot.yaml records the other candidate's weight in the gains' σ (choice_record.GAIN_CHOICE_SPREAD) and each
    determined gain's σ holds √w × its distance to that candidate's gain; before, the linear fit's σ alone (wrist_1
    ± 0.57 % for a candidate 3.5 % away)."""
    g = calibrated["effort"]["gain_model"]
    names = calibrated["joint_names"]
    assert 0.0 < g["choice_weight"] < 1.0 and "rank-one" in g["choice_spread"]
    lin, shaped = (np.array([g["candidates"][c]["scale"][j] for j in names])
                   for c in ("linear", "shaped_load_friction"))
    rel_std = np.array(calibrated["effort"]["scale_std"]) / np.array(calibrated["effort_scale"])
    det = np.array([j in g["determined"] for j in names])
    need = np.sqrt(g["choice_weight"]) * np.abs(shaped - lin) / lin
    assert np.all(rel_std[det] >= need[det] * (1 - 1e-9)), (rel_std, need)
    # one shift of all the determined gains together: the covariance carries it as a rank-one term
    # (what is left after taking it off is the fit's own covariance, positive semidefinite)
    rel = np.array(calibrated["effort"]["gain_covariance"]["relative"])
    shift = np.where(det, np.sqrt(g["choice_weight"]) * (shaped - lin) / lin, 0.0)
    assert np.linalg.eigvalsh(rel - np.outer(shift, shift)).min() >= -1e-12 * np.trace(rel)


def test_the_payloads_take_the_gains_share_without_the_model_choice(calibrated, model):
    """robot.yaml's gain σ holds the model choice (one shift of the determined gains together); the payloads' gain
    share leaves it out (payload/gain_uncertainty.py: on the real UR10e it took khalil-1's mass σ 0.93 → 1.20 % for
    unchanged errors), the per-joint witness and the --effort-scale agreement keep the whole σ."""
    robot = RobotIdentification.from_dict(copy.deepcopy(calibrated), model)
    shift = model_choice_shift(robot)
    assert shift is not None and np.abs(shift).max() > 0.01             # the premise: wrist_1's 3.5 % × √w
    whole = np.asarray(robot.gain_covariance.relative)
    fit = gain_relative_covariance(robot)
    collinear = robot.gain_model.load_friction_spread                 # left out as well (h174)
    np.testing.assert_allclose(fit + np.outer(shift, shift) + np.diag(collinear ** 2), whole, atol=1e-15)
    assert np.linalg.eigvalsh(fit).min() >= -1e-12 * np.trace(whole)
    rel = gain_relative_std(robot)
    np.testing.assert_allclose(np.diag(gain_load_only_covariance(robot)), rel ** 2 - shift ** 2 - collinear ** 2,
                               atol=1e-15)


def test_a_load_friction_spread_beyond_the_gains_sigma_is_refused_by_name(calibrated, model):
    """The payloads take the gains' σ less effort.gain_model.load_friction_spread (h174): one edited beyond the σ
    would take off more than the file holds."""
    edited = _edited(calibrated, lambda g: g["load_friction_spread"].update(wrist_1_joint=0.5))
    with pytest.raises(PayloadIdError, match=r"load_friction_spread .* exceeds the gains' relative σ") as err:
        RobotIdentification.from_dict(edited, model)
    assert "identify-robot" in str(err.value)


def test_a_choice_weight_edited_by_hand_is_refused_by_name(calibrated, model):
    """The weight sets the gains' σ: a file whose weight its candidates' scores do not give was edited."""
    with pytest.raises(PayloadIdError, match=r"choice_weight is 0.0 but its candidates' scores give") as err:
        RobotIdentification.from_dict(_edited(calibrated, lambda g: g.update(choice_weight=0.0)), model)
    assert "identify-robot" in str(err.value)


# -- one joint's drive gain drifted since identification -----------------------------------------------------------

@pytest.fixture(scope="module")
def ur10_identified():
    """The UR10 identified on one 8 s motion without load, gains given (test_redteam_stop40's robot)."""
    return given_gains_robot("ur10")


def _gain_drift_estimate(ur10_identified, joints, method, seed):
    model, robot = ur10_identified
    factor = np.ones(model.n)
    factor[list(joints)] = 1.03
    est = identify_payload(method, model, robot, drift_run(model, seed, factor),
                           model.default_payload_frame, delay=0.0)
    off_sigmas = abs(est.mass - STOP40_MASS) / np.sqrt(est.covariance[0, 0])
    assert off_sigmas > 3                                          # the premise: the drift is in the mass
    return est, off_sigmas


@pytest.mark.parametrize("joints, method, seed", [((2,), "difference-rls", 3), ((2,), "difference-rls", 4),
                                                  ((2,), "direct-rls", 4), ((1, 2), "difference-rls", 3)])
def test_a_gain_drift_of_three_percent_on_the_elbow_is_not_written_confidently(ur10_identified, joints, method, seed):
    """Before the per-joint gain witness (payload/gain_drift.py) no witness judged one joint's gain: elbow × 1.03 gave
    difference-rls +2.80 % at 6.8σ / +3.03 % at 5.9σ (seeds 3 / 4), direct-rls +2.57 % at 5.1σ (seed 4), shoulder
    lift and elbow × 1.03 difference-rls +6.42 % at 16.0σ (seed 3), each converged and ok. Now suspect (the two-joint
    drift named as wrist_1 0.9435 ± 0.0101: suspect, though the joint named is not one that drifted)."""
    est, off_sigmas = _gain_drift_estimate(ur10_identified, joints, method, seed)
    assert not (est.converged and est.quality is Quality.OK), (est.mass, off_sigmas, est.quality_reasons)


@pytest.mark.parametrize("seed", [4, 3, 5, 6])
def test_a_gain_drift_on_two_joints_is_not_written_confidently(ur10_identified, seed):
    """Was a strict xfail: the per-joint witness frees one joint's factor at a time, and with the shoulder lift and the
    elbow both × 1.03 (seed 4) each single-joint fit kept the other's drift in its residual (furthest out shoulder_pan
    0.9741 ± 0.0084, χ² 9.4, limit 14.2): difference-rls +6.75 % at 17.5σ, converged and ok. Now every factor free
    together is judged by the materiality rule (payload/gain_drift.py, "jointly"): shoulder lift 1.0297, elbow 1.0290
    ± 0.0050, χ² 132.7 on 6 beyond 22.5, moving the mass −0.278 kg, 16.8σ of the estimate's own. Seeds 3, 5, 6 (the
    single witness named the wrong joint there: wrist_1 0.9435, shoulder_pan 0.9753) read χ² 67-92 as well."""
    est, off_sigmas = _gain_drift_estimate(ur10_identified, (1, 2), "difference-rls", seed)
    assert not (est.converged and est.quality is Quality.OK), (est.mass, off_sigmas, est.quality_reasons)
    together = [r for r in est.quality_reasons if "every joint's factor free together" in r]
    assert together and "shoulder_lift_joint" in together[0] and "elbow_joint" in together[0], est.quality_reasons


def test_a_goal_on_an_elbow_gain_drift_is_not_converged_and_ok():
    """The session cell's loaded run (6 s at 100 Hz) with the elbow's efforts × 1.03: the per-joint witness read elbow
    1.0307 ± 0.0082, χ² 14.2 at its family-wise limit, and the goal's difference-rls, +2.35 % at 4.8σ, was converged
    and ok (a strict xfail). Now flagged by the materiality rule (payload/against_robot_fit.py): χ² 14.2 beyond the
    plain χ²₁ level 10.8 and the factor's payload shift, −2.10 %, 4.4σ of the estimate's own σ."""
    cell = session_cell()
    model = cell[0]
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    factor = np.ones(model.n)
    factor[2] = 1.03
    drifted = synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=CELL_FRICTION,
                                  noise_std=0.2, payload=(CELL_PHI, CELL_FRAME), seed=2, effort_scale=1.0 / factor)
    done = _goal(cell, drifted, "difference-rls")
    est = done.estimate
    off_sigmas = abs(est.mass - CELL_PHI[0]) / np.sqrt(est.covariance[0, 0])
    assert off_sigmas > 3                                          # the premise: the drift is in the mass
    assert not (done.converged and est.quality is Quality.OK), (est.mass, off_sigmas, est.quality_reasons)


# -- a light calibration load ---------------------------------------------------------------------------------------

def test_a_one_kilogram_calibration_run_gives_gains_within_their_sigma(tmp_path):
    """The README's calibration motion with a 1 kg load at 100 Hz: identify-robot refused the honest run (exit 2,
    "identified drive gains [5.3168, 7.2106, 5.7294, 3.915, 1.1655, -0.1611] are not all positive; check that the
    payload mass and frame are right") on the Gautier–Briot linear start, biased low and scattered where the load
    barely torques a joint, before the refinement that takes every gain to within its σ (UR10 and UR5 at 500 Hz, and
    0.2 kg, alike). Now: shoulder_lift 10.626 ± 0.055 for 10.696, elbow 8.426 ± 0.046 for 8.457, every joint within
    3σ, the joints the load barely torques named."""
    d = yaml.safe_load(cli_calibration(tmp_path, "ur10", {**TRUTH, "mass": 1.0}).read_text())
    k, std = np.array(d["effort_scale"]), np.array(d["effort"]["scale_std"])
    z = (k - UR10_GAINS) / std
    assert np.all(np.abs(z) <= 3.0), np.round(z, 2).tolist()
    assert np.all(np.abs(k[1:3] / UR10_GAINS[1:3] - 1) < 0.01), k / UR10_GAINS      # what the load determines
    determined = set(d["effort"]["gain_model"]["determined"])
    named = " ".join(n["text"] for n in d["notes"] if n["code"] == NoteCode.ROBOT_GAIN_UNDETERMINED.value)
    assert all(j in named for j in d["joint_names"] if j not in determined), named


# -- one joint's constant friction offset moved since identification -----------------------------------------------
# (h86's strict xfail: the shoulder lift's offset moved +0.3 N·m, khalil-1 and direct-rls at 3.5-3.9σ, converged and
# ok. With robot.yaml's drift record σ carries the drift and the four cases are within 0.8σ (h106); without one
# khalil-1 fits robot.yaml's error and the offsets' drift with the run, within 1.4σ (h184); both in
# test_offset_drift_sigma.py.)


# -- the gain model on another robot --------------------------------------------------------------------------------

# A Panda-sized drive profile for `simulate` (no bundled one): the ur10 profile's friction laws, smaller drives.
PANDA_PROFILE = {
    "name": "panda_redteam", "timestep": 0.002,
    "friction": {"coulomb": [0.3, 0.3, 0.3, 0.3, 0.15, 0.15, 0.15], "viscous": [5.0, 5.0, 5.0, 5.0, 2.0, 2.0, 2.0],
                 "alpha": [0.3] * 7, "offset": [0.02, 0.02, 0.02, 0.02, 0.01, 0.01, 0.01], "load_coulomb": 0.02,
                 "smoothing_velocity": 0.005},
    "rotor_inertia": [0.3, 0.3, 0.3, 0.3, 0.1, 0.1, 0.1],
    "effort_scale": [5.0, 5.2, 4.9, 5.1, 2.0, 2.1, 1.9],
    "torque_noise_std": [0.3, 0.3, 0.3, 0.3, 0.1, 0.1, 0.1],
    "position_noise_std": 1.0e-5, "velocity_noise_std": 1.0e-3, "base_tilt": [0.0, 0.0],
    "ft_sensor": {"enabled": True, "frame": None, "force_offset": [1.2, -0.8, 2.5],
                  "torque_offset": [0.05, -0.03, 0.02], "force_noise_std": 0.1, "torque_noise_std": 0.003},
    "controller": {"bandwidth_hz": 25.0, "delay": 0.002, "feedforward": "model"},
}


def test_the_panda_gains_are_within_three_sigma(tmp_path):
    """On a Panda-sized drive profile (the ur10 profile's friction laws, smaller drives) at 100 Hz with 2 kg the
    load-friction model is chosen (Newey-West σ RMS 0.22 % against linear 0.85 %) and panda_joint6, which the
    criterion counts as determined, was +1.06 % at 4.5σ (its σ 0.24 %): the chosen model's σ under-covered it. Now
    the linear candidate's distance with its weight (0.06) joins its σ."""
    profile = tmp_path / "panda_redteam.yaml"
    profile.write_text(yaml.safe_dump(PANDA_PROFILE))
    d = yaml.safe_load(cli_calibration(tmp_path, "panda", {**TRUTH, "frame": "panda_link8", "mass": 2.0},
                                       trajectory="panda_payload_inertia", profile=str(profile),
                                       seeds=(1, 101)).read_text())
    z = (np.array(d["effort_scale"]) - np.array(PANDA_PROFILE["effort_scale"])) / np.array(d["effort"]["scale_std"])
    assert np.all(np.abs(z) <= 3.0), (d["effort"]["gain_model"]["chosen"], np.round(z, 2).tolist())
