"""The payload's inertia on the MuJoCo-simulated UR10 cell (profile 'ur10': load-dependent friction,
rotor inertia, measured torque noise, PID tracking lag), issue 13.

What the inertia error was made of (bench/payload.py, docs/design.md "Inertia on the cell"): the truth
and the regressor path are exact (noise-free, friction-free cell: 0.2 % for khalil-1), the error is
the torque noise's, and difference-rls weighted every joint alike (Xu's ξ), so the wrist torques that
carry the inertia drowned in the shoulder's noise. The tests pin each part with fixed seeds, looser
than the bench's figures so that only a regression fails.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia, to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.design import (
    ExcitationDesign,
    Objective,
    RegressorMetrics,
    evaluate_trajectory,
    objective_value,
    optimize_excitation,
    random_feasible,
)
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.excitation.limits import MotionLimits
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.methods import identify_payload
from payload_id_core.robot_id import identify_robot
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
    robot = identify_robot(m, simulate(m, traj, None, profile, seed=1), friction="nonlinear", estimator="wls")
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


def wrist_weighted(method, robot) -> dict:
    """difference-rls rows weighted by the robot identification's per-joint RMSE (Xu 2024 §4.2's Λ0)
    instead of Xu's one ξ: the wrist torques that carry the inertia are no longer drowned in the
    shoulder's. Not the default: on the real UR10e 15harm pair it moves the mass from +0.4 % to −2.1 %."""
    return {"noise_std": robot.rmse} if method == "difference-rls" else {}


@pytest.mark.parametrize("method", ["difference-rls", "khalil-1", "direct-rls"])
def test_inertia_within_a_few_percent_on_the_cell(cell, method):
    m, robot, truth, loaded = cell
    errs, masses, coms = [], [], []
    for rec in loaded:
        est = identify_payload(method, m, robot, rec, FRAME, **wrist_weighted(method, robot))
        errs.append(inertia_rel_err(est.phi))
        masses.append(abs(est.mass - MASS) / MASS)
        coms.append(np.linalg.norm(est.com - COM))
    # Bench (5 seeds): ~5-6 %. difference-rls was 13.5 % with Xu's equal joint weights on ur10_payload.
    assert np.median(errs) < 0.08, (method, errs)
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
    """Noise-free on ur10_payload, the model is right to ~1 %: difference-rls was 4.4 % off with equal
    joint weights (the friction model's error on the big joints, weighted like the wrist's torques)."""
    m, robot, truth, loaded = quiet_cell
    errs = [inertia_rel_err(identify_payload(method, m, robot, rec, FRAME, **wrist_weighted(method, robot)).phi)
            for rec in loaded]
    assert max(errs) < 0.025, (method, errs)


@pytest.mark.parametrize(("method", "limit"), [("difference-rls", 0.07), ("khalil-1", 0.025)])
def test_inertia_model_error_on_the_inertia_trajectory(quiet_inertia_cell, method, limit):
    """Noise-free on the wrist-heavy inertia trajectory: khalil-1 ~1.5 %, difference-rls ~5 %: its
    friction-change unknowns, next to the μ columns, take up part of the wrist's inertia torque where
    friction grows with the load (1.9 % with μ = 0 in the cell; 22.5 % with Xu's equal joint weights).
    A guard against regressions, not a target."""
    m, robot, truth, loaded = quiet_inertia_cell
    errs = [inertia_rel_err(identify_payload(method, m, robot, rec, FRAME, **wrist_weighted(method, robot)).phi)
            for rec in loaded]
    assert np.median(errs) < limit, (method, errs)


def test_difference_rls_default_keeps_xus_equal_joint_weights(cell):
    """The default stays Xu's one ξ (real data is the judge: the RMSE weights cost 2.5 points of mass on
    the UR10e 15harm pair), and its inertia on the cell, worse than the wrist-weighted one, is still
    honest: every entry within 3σ (test_inertia_error_is_within_the_reported_std)."""
    m, robot, truth, loaded = cell
    from payload_id_core.payload.online import OnlinePayloadEstimator  # noqa: PLC0415 - keeps imports above short

    est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls")
    assert np.ptp(est.noise_std) == 0.0
    errs = [inertia_rel_err(identify_payload("difference-rls", m, robot, rec, FRAME).phi) for rec in loaded]
    weighted = [inertia_rel_err(identify_payload("difference-rls", m, robot, rec, FRAME, noise_std=robot.rmse).phi)
                for rec in loaded]
    assert np.median(weighted) < np.median(errs), (weighted, errs)


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
