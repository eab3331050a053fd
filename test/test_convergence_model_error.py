"""The online methods' convergence when the robot model's error, not the noise, sets the mass σ (issue 29, h134).

The 'covariance' rule declares an estimate converged when its reported mass σ is below mass_rel_std (0.5 %), or,
the second route, when more rows of the motion can no longer sharpen it: the variance the rows still shrink (the
estimator's own, the serial-correlation and resolution terms) at most MODEL_LIMITED_SHARE of the variance they do not
(robot.yaml's measured model error, the unmodelled gear friction's response, the offsets' drift, the drive gains'),
settled over the last second and over the last half of the motion (online/base.py). On the real UR10e the measured
model error alone is 0.77 % of the mass: the first route never declared there.

Simulated here on sim_runs' 8 s UR10 run with 4 kg, robot.yaml given a measured model error of 1 % of the mass: at the
runs' own noise the estimator's σ falls to ~0.1 % and the rule declares; with the noise twelve times larger it stays
~0.8 % (above half the 1 %) and the rule waits, though neither run ever has a σ below 0.5 %.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

import ur10e_data  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.notes import NoteCode
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.base import MODEL_LIMITED_SHARE, ConvergedBy
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id.model_error import HeldOutModelError
from payload_id_core.testing.online_feed import feed_until_converged, reported_mass_std
from payload_id_core.testing.sim_runs import DRIFT_MASS, DRIFT_PHI, FRICTION, NOISE, given_gains_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

MODEL_ERROR = 0.01        # robot.yaml's measured model error: the mass's σ, a share of the mass


@pytest.fixture(scope="module")
def measured():
    """(model, robot.yaml with a measured model error of MODEL_ERROR × the mass, frame)."""
    model, robot = given_gains_robot("ur10")
    frame = model.default_payload_frame
    spurious = np.array([[MODEL_ERROR * DRIFT_MASS, 1e-4, 1e-4, 1e-4, *[1e-5] * 6]])
    error = HeldOutModelError(frame, ["held-out a", "held-out b"], np.vstack([spurious, -spurious]))
    return model, replace(robot, model_error=error), frame


def _run(model, robot, frame, method: str, noise_scale: float):
    """The online estimator fed 25 samples at a time until it declares, and the estimate and its reported mass σ
    then (as a goal that stops when converged has them)."""
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=3)
    rec = synthetic_recording(model, t, q, qd, qdd, friction=make_friction_model("linear", model.joint_names),
                              friction_params=np.tile(FRICTION, model.n), noise_std=NOISE * noise_scale, seed=3,
                              payload=(DRIFT_PHI, frame))
    sig = method_signals(rec, model, PayloadOptions(), robot)
    est = OnlinePayloadEstimator(model, robot, frame, method, rate_hz=100.0)
    k = feed_until_converged(est, sig)
    z, std = est._quick_payload()
    shares = est.mass_variance_shares(z, float(std[0])) if not est.converged else None
    return est, float(z[0]), reported_mass_std(est, std[0] ** 2, sig, k), shares


@pytest.mark.parametrize("method", ["direct-rls", "difference-rls"])
def test_model_error_dominated_run_converges(measured, method):
    est, mass, std, _ = _run(*measured, method, 1.0)
    assert est.converged and est.converged_by is ConvergedBy.MODEL_ERROR, (est.converged, est.converged_by)
    assert 0.5 < est.convergence_time <= 3.0, est.convergence_time     # measured 1.75 s (direct), 2.75 s (difference)
    assert std >= MODEL_ERROR * mass                   # the σ the goal reports holds the 1 %: never below 0.5 %
    assert abs(mass - DRIFT_MASS) <= 2 * std, (mass, std)
    notes = [n.text for n in est.estimate().notes if "converged at" in n.text]
    assert notes and "robot model's error" in notes[0], notes


def test_model_error_from_one_held_out_motion_does_not_declare(measured):
    """Issue 29 (h166): the second route declares because robot.yaml's measured model error dominates σ; measured on
    one held-out motion it cannot show how that error varies between motions (the real UR10e's cross-validation:
    test_cross_validated_direct_rls_on_15harm_is_no_confident_wrong_answer). The same run that declares at 1.75 s with
    two held-out motions runs to its end not converged with one, and its progress note says why and what to give."""
    model, robot, frame = measured
    one = replace(robot.model_error, sources=["held-out a"], spurious=robot.model_error.spurious[:1])
    est, mass, std, _ = _run(model, replace(robot, model_error=one), frame, "direct-rls", 1.0)
    assert not est.converged, (est.converged_by, est.convergence_time)
    assert std >= MODEL_ERROR * mass                   # σ as with two: the same measured error, only not declared on
    notes = [n.text for n in est.estimate().notes if n.code is NoteCode.PAYLOAD_ONLINE_PROGRESS]
    assert notes and "one held-out motion" in notes[0] and "--held-out-" in notes[0], notes


def test_identify_robot_says_when_its_model_error_rests_on_one_motion(measured):
    """The note identify-robot prints and robot.yaml keeps, so a user learns before a goal runs to its end unconverged
    (h166): present with one held-out motion, absent with the two this robot.yaml measured."""
    _, robot, _ = measured
    assert robot.model_error.mass_motions() == 2 and robot.model_error.too_few_motions_note() is None
    one = replace(robot.model_error, sources=["held-out a"], spurious=robot.model_error.spurious[:1])
    note = one.too_few_motions_note()
    assert note is not None and note.code is NoteCode.ROBOT_MODEL_ERROR_FEW_MOTIONS
    assert "1 held-out motion" in note.text and "--held-out-bag" in note.text, note.text


def test_noise_limited_run_does_not_converge_yet(measured):
    est, mass, std, shares = _run(*measured, "direct-rls", 12.0)
    assert not est.converged
    noise, lasting = shares
    assert noise > MODEL_LIMITED_SHARE * lasting > 0.0, shares      # own σ ~0.8 % against the 1 %
    assert std > 0.005 * mass                                         # nor is it below the first route's bar


@pytest.fixture(scope="module")
def ur10e_measured_robot_yaml(ur10e_held_out_robot_yaml):
    """robot.yaml as bench/ur10e.py's user path makes it: the gains from the 14harm pair with the known 2.805 kg, the
    model error measured and the offsets' drift recorded on the 15harm and 01_31 unloaded runs (conftest's, shared)."""
    return ur10e_held_out_robot_yaml


@requires_ur10e_data
def test_difference_rls_converges_on_a_real_pair(ur10e_measured_robot_yaml, tmp_path):
    """The real UR10e user path (bench/ur10e.py's robot.yaml: model error measured on the 15harm and 01_31 unloaded
    runs): difference-rls on 01_31 declares after 27.2 s of its 30 s, within 0.2σ; the first route never did."""
    out = tmp_path / "payload.yaml"
    assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(ur10e_measured_robot_yaml),
                     "--csv-ur", str(DATA / "ur-20_01_31-load.csv"), "--unloaded-csv-ur",
                     str(DATA / "ur-20_01_31-unload.csv"), "--method", "difference-rls", "--out", str(out)]) == 0
    d = yaml.safe_load(out.read_text())
    assert d["converged"] is True and d["quality"]["status"] == "ok", (d["converged"], d["quality"])
    assert 20.0 < d["convergence_time"] < 30.0, d["convergence_time"]
    assert abs(d["mass"] - 2.805) <= d["std"]["mass"], (d["mass"], d["std"]["mass"])


def _declared_on_real_run(robot_yaml, loaded_csv: str, method: str) -> tuple[float, float, float]:
    """The online `method` on a real loaded UR10e run fed 25 samples at a time, as a goal that stops when converged
    would (ur10e_data.online_on_real_run): (seconds of motion, mass, the mass σ the goal reports) when it declared;
    the test fails if it never did."""
    run = ur10e_data.online_on_real_run(robot_yaml, DATA / loaded_csv, method)
    assert run.declared is not None, f"{method} on {loaded_csv} never declared (end: {run.final})"
    return run.declared


@requires_ur10e_data
def test_direct_rls_declares_within_two_sigma_on_15harm(ur10e_measured_robot_yaml):
    """Issue 29 (h145): on main direct-rls on the real 15harm run declared at 36.0 s of its 62 s at −1.75 % with a
    reported σ of 0.85 % (2.07σ): the model error, measured on whole held-out runs, does not average down with the
    prefix like noise. robot.yaml now records each online method's running spurious mass on its held-out runs, and
    the σ partway through a motion reads it at the information reached (HeldOutModelError.prefix_mass_variance)."""
    at, mass, std = _declared_on_real_run(ur10e_measured_robot_yaml, "ur-20_02_19_15harm50secLoad.csv", "direct-rls")
    assert std <= 0.02 * 2.805, std                    # the σ stays a measurement, not a refusal (≤ 2 % of the mass)
    assert abs(mass - 2.805) <= 2.0 * std, (at, mass, std)


@requires_ur10e_data
@pytest.mark.parametrize("loaded_csv, method", [("ur-20_02_19_15harm50secLoad.csv", "difference-rls"),
                                                ("ur-20_01_31-load.csv", "direct-rls")])
def test_declares_within_two_sigma_where_the_whole_run_is_right(ur10e_measured_robot_yaml, loaded_csv, method):
    """Issue 29 (h155): difference-rls on 15harm and direct-rls on 01_31 never declared, although their final
    estimates are within 1 % and within σ (+0.31 % at σ 0.87 %; −0.77 % at σ 0.91 %). The model-error route's
    last-half settling held them: it judged an earlier estimate by the whole-run model error only, and
    difference-rls's +4.20 % at 33.4 s (its reported σ then 1.6 %) lay 2.2× beyond the band from the final +0.31 %.
    Judged by the σ each check reported (prefix_mass_excess), they declare at 47.4 s (+0.87 %, 0.98σ) and 25.4 s
    (−0.80 %, 0.89σ); on main never."""
    at, mass, std = _declared_on_real_run(ur10e_measured_robot_yaml, loaded_csv, method)
    assert abs(mass - 2.805) <= 0.01 * 2.805, (at, mass, std)
    assert abs(mass - 2.805) <= 2.0 * std, (at, mass, std)
    assert std <= 0.02 * 2.805, std


@pytest.fixture(scope="module")
def cross_validated_15harm_direct_rls(tmp_path_factory):
    """direct-rls online on the real 15harm loaded run with robot.yaml made as bench/ur10e.py's user path makes it but
    with 01_31's unloaded run as its only held-out (and drift) run: 15harm's own unloaded twin is not among them."""
    robot_yaml = ur10e_data.user_path_robot_yaml(DATA, tmp_path_factory.mktemp("ur10e_cv") / "robot.yaml",
                                                 ("ur-20_01_31-unload.csv",))
    return ur10e_data.online_on_real_run(robot_yaml, DATA / "ur-20_02_19_15harm50secLoad.csv", "direct-rls")


@requires_ur10e_data
def test_cross_validated_direct_rls_on_15harm_is_no_confident_wrong_answer(cross_validated_15harm_direct_rls):
    """Issue 29 (h166): with 01_31's unloaded run as robot.yaml's only held-out run, direct-rls on 15harm declared at
    16.77 s at −4.41 % with a reported σ of 1.18 % (3.74σ). The one held-out motion reads 1.09 % of the load at the
    information reached then, 15harm's own unloaded run 2.87 %: one motion does not measure how the model error
    varies between motions, and the second route no longer declares on it. Not declared beyond 3σ; the end of the
    run is as before (−0.73 %, σ 1.14 %)."""
    run = cross_validated_15harm_direct_rls
    if run.declared is not None:
        at, mass, std = run.declared
        assert abs(mass - 2.805) <= 3.0 * std, (at, mass, std)
    _, mass, std = run.final
    assert abs(mass - 2.805) <= std and std <= 0.012 * 2.805, (mass, std)


def test_prefix_model_error_read_at_the_information_reached():
    """HeldOutModelError.prefix_mass_variance: per held-out run the largest spurious mass² where that run had determined
    the mass at least as well (σ at the assumed noise at most the estimate's), never below the whole-run φ², averaged
    over the runs; an estimate better informed than every held-out point reads C_me's mass variance; robot.yaml keeps
    the record (to_dict / from_dict)."""
    whole = np.zeros((2, 10))
    whole[:, 0] = [0.01, 0.03]
    running = {"direct-rls": [np.array([[0.5, 2.0], [0.05, -0.12], [0.02, 0.04], [0.01, 0.005]]),
                              np.array([[0.4, 1.0], [0.03, 0.02]])]}
    error = HeldOutModelError("tool0", ["a", "b"], whole, running=running)
    assert error.prefix_mass_variance("direct-rls", 0.05) == pytest.approx((0.12**2 + 0.03**2) / 2)
    assert error.prefix_mass_variance("direct-rls", 0.025) == pytest.approx((0.04**2 + 0.03**2) / 2)
    assert error.prefix_mass_variance("direct-rls", 0.001) == pytest.approx((0.01**2 + 0.03**2) / 2)
    assert error.prefix_mass_variance("difference-rls", 0.05) is None          # not run over the held-out runs
    at_once = error.prefix_mass_variances("direct-rls", np.array([0.05, 0.025, 0.001, np.nan]))
    assert at_once[:3] == pytest.approx([(0.12**2 + 0.03**2) / 2, (0.04**2 + 0.03**2) / 2, (0.01**2 + 0.03**2) / 2])
    assert np.isnan(at_once[3])
    back = HeldOutModelError.from_dict(yaml.safe_load(yaml.safe_dump(error.to_dict())), "robot.yaml")
    assert back.prefix_mass_variance("direct-rls", 0.05) == pytest.approx((0.12**2 + 0.03**2) / 2)
