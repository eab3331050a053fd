"""The payload's inertia on the MuJoCo-simulated UR10 cell (profile 'ur10': load-dependent friction,
rotor inertia, measured torque noise, PID tracking lag), issue 13.

What the inertia error was made of (bench/payload.py, docs/design.md "Inertia on the cell"): the truth
and the regressor path are exact (noise-free, friction-free cell: 0.2 % for khalil-1), the error is
the torque noise's, and difference-rls weighted every joint alike (Xu's ξ), so the wrist torques that
carry the inertia drowned in the shoulder's noise; it now keeps ξ for the mass only. The tests pin each
part with fixed seeds, looser than the bench's figures so that only a regression fails.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia, to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.excitation.limits import MotionLimits
from payload_id_core.excitation_design import (
    ExcitationDesign,
    Objective,
    RegressorMetrics,
    evaluate_trajectory,
    objective_value,
    optimize_excitation,
    random_feasible,
)
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim.profile import load_profile

MASS = 3.5
COM = np.array([0.03, -0.02, 0.08])
INERTIA = np.diag([0.012, 0.015, 0.009])
FRAME = "wrist_3_link"
TRAJECTORY = "ur10_payload_inertia"
SEEDS = (2, 3, 4)


def inertia_rel_err(phi) -> float:
    """‖I_c − I_c,true‖_F / ‖I_c,true‖_F, both about their CoM."""
    return float(np.linalg.norm(to_mass_com_inertia(phi)[2] - INERTIA) / np.linalg.norm(INERTIA))


def _cell(profile, trajectory=TRAJECTORY):
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(trajectory)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, INERTIA), np.zeros((10, 10)), "truth")
    robot = fit_given_model(m, simulate(m, traj, None, profile, seed=1), friction="nonlinear", estimator="wls")
    return m, robot, truth, [simulate(m, traj, truth, profile, seed=s) for s in SEEDS]


@pytest.fixture(scope="module")
def cell():
    return _cell("ur10")


def _quiet_profile():
    """The cell's profile without measurement noise (torque, encoder): what is left is model error."""
    profile = load_profile("ur10", 6)
    profile.torque_noise_std = np.zeros(6)
    profile.position_noise_std = profile.velocity_noise_std = 0.0
    return profile


@pytest.fixture(scope="module")
def quiet_cell():
    return _cell(_quiet_profile(), "ur10_payload")


@pytest.fixture(scope="module")
def quiet_inertia_cell():
    return _cell(_quiet_profile())


@pytest.mark.parametrize("method", ["difference-rls", "khalil-1", "direct-rls"])
def test_inertia_within_a_few_percent_on_the_cell(cell, method):
    m, robot, truth, loaded = cell
    errs, masses, coms = [], [], []
    for rec in loaded:
        est = identify_payload(method, m, robot, rec, FRAME)
        errs.append(inertia_rel_err(est.phi))
        masses.append(abs(est.mass - MASS) / MASS)
        coms.append(np.linalg.norm(est.com - COM))
    # Bench (5 seeds): 3.9-4.8 %. difference-rls was 15.9 % with Xu's one ξ for every payload parameter.
    assert np.median(errs) < 0.065, (method, errs)
    assert max(masses) < 0.004 and max(coms) < 0.002, (method, masses, coms)


@pytest.mark.parametrize("method", ["difference-rls", "khalil-1"])
def test_inertia_error_is_within_the_reported_std(cell, method):
    """The error left is the noise's, and σ says so: every inertia entry within 3σ on every seed."""
    m, robot, truth, loaded = cell
    for rec in loaded:
        est = identify_payload(method, m, robot, rec, FRAME)
        std = np.sqrt(np.diag(est.covariance))[4:]
        z = np.abs(est.phi[4:] - truth.phi[4:]) / std
        assert np.all(z < 3.0), (method, np.round(z, 2))


@pytest.mark.parametrize("method", ["difference-rls", "khalil-1"])
def test_no_inertia_bias_without_noise(quiet_cell, method):
    """Noise-free on ur10_payload, the model is right to ~1 %: difference-rls was 4.4 % off with Xu's one ξ
    for every payload parameter (the unloaded model's error on the big joints cancels in θ_b − θ_a only
    with the rows weighted as the identification weighted them)."""
    m, robot, truth, loaded = quiet_cell
    errs = [inertia_rel_err(identify_payload(method, m, robot, rec, FRAME).phi)
            for rec in loaded]
    assert max(errs) < 0.025, (method, errs)


@pytest.mark.parametrize(("method", "limit"), [("difference-rls", 0.07), ("khalil-1", 0.025)])
def test_inertia_model_error_on_the_inertia_trajectory(quiet_inertia_cell, method, limit):
    """Noise-free on the wrist-heavy inertia trajectory: khalil-1 ~1.5 %, difference-rls ~5 %: its
    friction-change unknowns, next to the μ columns, take up part of the wrist's inertia torque where
    friction grows with the load (1.9 % with μ = 0 in the cell; 9.4 % with Xu's one ξ for every parameter).
    A guard against regressions, not a target."""
    m, robot, truth, loaded = quiet_inertia_cell
    errs = [inertia_rel_err(identify_payload(method, m, robot, rec, FRAME).phi)
            for rec in loaded]
    assert np.median(errs) < limit, (method, errs)


def test_difference_rls_takes_the_mass_with_xus_weights_and_the_rest_with_the_identifications(cell):
    """The default weighs the rows by Xu's one ξ for the mass (real data is the judge: the identification's
    weights cost 2.5 points of mass on the UR10e 15harm pair) and by the robot identification's own WLS
    weights for the first moments and the inertia given that mass (DifferenceRLS._two_weightings): the mass
    is exactly Xu's, the inertia is 3x closer than with ξ for everything (the former default)."""
    m, robot, truth, loaded = cell
    default, xu = [], []
    for rec in loaded:
        est = identify_payload("difference-rls", m, robot, rec, FRAME)
        old = identify_payload("difference-rls", m, robot, rec, FRAME, moment_noise_std=10.0)
        assert est.mass == pytest.approx(old.mass, rel=1e-9)
        default.append(inertia_rel_err(est.phi))
        xu.append(inertia_rel_err(old.phi))
    assert np.median(default) < np.median(xu) / 2, (default, xu)


def test_moment_weights_are_refused_for_a_method_with_one_weighting(cell):
    m, robot, truth, loaded = cell
    with pytest.raises(PayloadIdError, match="moment_noise_std"):
        identify_payload("direct-rls", m, robot, loaded[0], FRAME, moment_noise_std=1.0)


def test_bundled_inertia_trajectory_beats_the_payload_one_on_inertia_variance():
    m = RobotModel.from_urdf("ur10")
    inertia = evaluate_trajectory(m, load_trajectory(TRAJECTORY), FRAME)
    payload = evaluate_trajectory(m, load_trajectory("ur10_payload"), FRAME)
    assert inertia["payload_variance"] < 0.85 * payload["payload_variance"]
    assert inertia["payload_variance_direct"] <= inertia["payload_variance"] * (1 + 1e-9)


def test_inertia_objective_is_the_log_summed_variance_and_the_optimizer_lowers_it():
    m = RobotModel.from_urdf("ur10")
    design = ExcitationDesign(m, MotionLimits.from_model(m), objective="inertia", frame=FRAME, duration=4.0,
                              harmonics=3, n_samples=60, min_rms_velocity_fraction=0.1)
    result = optimize_excitation(design, seeds=1, maxiter=15)
    final = result.metrics
    assert result.objective == Objective.INERTIA
    assert objective_value(final, "inertia") == pytest.approx(np.log(final["payload_variance"]))
    assert result.trajectory.design["payload_variance"] == pytest.approx(final["payload_variance"])
    # The optimizer's own start (seed 0's first random feasible point) had a larger variance.
    start = random_feasible(design, np.random.default_rng(0), fill=0.6)
    t = np.linspace(0.0, design.duration, 1000, endpoint=False)
    started = RegressorMetrics(m, FRAME).evaluate(*design.motion(start, t), only=Objective.INERTIA)
    assert final["payload_variance"] < 0.5 * started["payload_variance"]
