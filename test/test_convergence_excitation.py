"""The 'convergence' excitation objective and the bundled ur10_payload_fast it designed (issue 13 item 5).

A period-wide design spreads what it tells about the mass over the period: on the simulated cell
difference-rls declared the bundled ur10_payload (10 s) converged at 5.35 s. The convergence objective puts the
mass's information into the first seconds; the demo now plays ur10_payload_fast with the robot identified on it.
"""

import math

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.excitation.limits import MotionLimits
from payload_id_core.excitation_design import (
    ExcitationDesign,
    Objective,
    RegressorMetrics,
    objective_value,
    optimize_excitation,
)
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.difference_rls import NEAR_REST_EPSILONS
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.online_feed import feed_until_converged, reported_mass_std

FRAME = "tool0"
MASS = 3.5
FAST = "ur10_payload_fast"
# Issue 29's 2.0 s, as bench/cell_convergence.py counts it: a declaration at the 1000th sample (1.998 s + one
# sample interval) is 2.0 s, not 2.0000000000000004 s.
TARGET_S = 2.0 + 1e-9


def _mass_std_after(model, name: str, seconds: float) -> float:
    """The difference method's mass σ (kg) after `seconds` of the bundled trajectory at 500 Hz, rows / the UR10
    simulation profile's torque noise (what ur10_payload_fast was designed with)."""
    traj = load_trajectory(name)
    metrics = RegressorMetrics(model, FRAME)
    t = np.arange(1, int(round(seconds * 500)) + 1) / 500.0
    return math.sqrt(metrics.mass_variance(*traj.evaluate(t)))


def test_mass_variance_scales_with_the_noise_and_falls_with_more_motion(ur10):
    traj = load_trajectory(FAST)
    t = np.arange(1, 1001) / 500.0
    base = RegressorMetrics(ur10, FRAME, noise_std=1.0).mass_variance(*traj.evaluate(t))
    doubled = RegressorMetrics(ur10, FRAME, noise_std=2.0).mass_variance(*traj.evaluate(t))
    assert doubled == pytest.approx(4.0 * base, rel=1e-9)
    half = RegressorMetrics(ur10, FRAME, noise_std=1.0).mass_variance(*traj.evaluate(t[:500]))
    assert half > base
    # A pose held still says nothing about the payload's first moments apart from the mass: undetermined.
    q = np.tile(traj.offsets, (200, 1))
    assert RegressorMetrics(ur10, FRAME).mass_variance(q, 0 * q, 0 * q) == math.inf


def test_the_load_friction_columns_take_the_mass_until_the_joints_first_reverse(ur10):
    """RegressorMetrics(load_friction=True): each joint's μ_j column is, to first order, the payload's own torque on
    that joint times sgn(τ_a) sgn(q̇) (payload/load_friction.py). ur10_payload_fast's joints first reverse at
    1.06-1.21 s: over its first second the columns take the mass's share of those joints' rows, and the mass σ the
    design's measure predicts is 1.78x what it promised without them (0.43 against 0.24 % of 3.5 kg; difference-rls
    reports 0.52 % there: bench/cell_convergence.py); over the whole period, every joint having reversed, they cost
    nothing (0.084 % both)."""
    traj = load_trajectory(FAST)
    noise = traj.design["noise_std"]
    plain, with_lf = RegressorMetrics(ur10, FRAME, noise_std=noise), RegressorMetrics(ur10, FRAME, noise_std=noise,
                                                                                     load_friction=True)
    t = np.arange(1, 501) / 500.0
    q, qd, qdd = traj.evaluate(t)
    assert np.all(np.abs(qd[-1]) > 0.0) and np.all(np.sign(qd[25]) == np.sign(qd[-1]))   # none reversed yet
    columns = with_lf.load_friction_columns(q, qd, qdd).reshape(t.size, ur10.n, ur10.n)
    _, payload = plain.matrices(q, qd, qdd)          # rows weighted, size-L units: column 0 is the mass's
    mass_torque = payload.reshape(t.size, ur10.n, 10)[..., 0]
    moving = np.abs(qd) > 0.1                         # the sign's smoothing (0.01 rad/s) is 1 there
    assert np.allclose(np.abs(np.diagonal(columns, axis1=1, axis2=2))[moving], np.abs(mass_torque)[moving])
    assert np.all(columns[:, ~np.eye(ur10.n, dtype=bool)] == 0.0)
    ratio_1s = math.sqrt(with_lf.mass_variance(q, qd, qdd) / plain.mass_variance(q, qd, qdd))
    assert ratio_1s > 1.6, ratio_1s
    whole = np.arange(1, 2001) / 500.0
    ratio_4s = math.sqrt(with_lf.mass_variance(*traj.evaluate(whole)) / plain.mass_variance(*traj.evaluate(whole)))
    assert 1.0 <= ratio_4s < 1.05, ratio_4s


def test_the_fast_trajectory_knows_the_mass_after_two_seconds_where_the_period_design_does_not(ur10):
    traj = load_trajectory(FAST)
    assert traj.design["objective"] == "convergence" and traj.design["horizon_s"] == 2.0
    assert "--objective convergence" in traj.design["command"]
    fast = _mass_std_after(ur10, FAST, 2.0)
    assert fast == pytest.approx(traj.design["mass_std_kg"]["2 s"], rel=1e-6)
    # ur10_payload (cond W_L over 10 s): 0.016 kg after 2 s
    assert fast < 0.4 * _mass_std_after(ur10, "ur10_payload", 2.0)
    assert _mass_std_after(ur10, FAST, 1.0) < 0.1 * _mass_std_after(ur10, "ur10_payload", 1.0)


def test_the_convergence_objective_lowers_the_early_mass_variance_below_a_period_design(ur10):
    """The same small design (4 s, 4 harmonics, one start, seed 0) with the inertia objective (the whole period's
    summed variance) and with the convergence one: the mass σ after half the 2 s horizon and after all of it is
    the lower with the latter (0.011 against 0.029 kg after 1 s, 0.0062 against 0.0085 after 2 s)."""
    def design(objective):
        return ExcitationDesign(ur10, MotionLimits.from_model(ur10), objective=objective, frame=FRAME, duration=4.0,
                                harmonics=4, n_samples=40, min_rms_velocity_fraction=0.1)
    conv, period = design("convergence"), design("inertia")
    a = optimize_excitation(conv, seeds=1, maxiter=30)
    b = optimize_excitation(period, seeds=1, maxiter=30)
    assert a.objective == Objective.CONVERGENCE and a.trajectory.design["horizon_s"] == 2.0
    early_a, early_b = a.trajectory.design["mass_std_kg"], b.trajectory.design["mass_std_kg"]
    assert early_a["1 s"] < 0.5 * early_b["1 s"], (early_a, early_b)
    assert early_a["2 s"] < 0.85 * early_b["2 s"], (early_a, early_b)
    # what the file records is what the trajectory gives
    t = np.arange(1, 1001) / 500.0
    assert math.sqrt(RegressorMetrics(ur10, FRAME).mass_variance(*a.trajectory.evaluate(t))) == pytest.approx(
        early_a["2 s"], rel=1e-6)
    with pytest.raises(ValueError, match="first seconds"):
        objective_value(a.metrics, "convergence")


@pytest.mark.parametrize("horizon", [0.0, -1.0, 4.5, float("nan"), True, "2"])
def test_a_horizon_outside_the_trajectory_is_refused(ur10, horizon):
    with pytest.raises(PayloadIdError, match="horizon"):
        ExcitationDesign(ur10, MotionLimits.from_model(ur10), objective="convergence", frame=FRAME, duration=4.0,
                         harmonics=3, horizon_s=horizon)


def test_the_horizon_concerns_the_convergence_objective_only(ur10):
    """A 1.5 s payload design (shorter than the default 2 s horizon) is what it was before the objective existed;
    numpy numbers are durations too."""
    limits = MotionLimits.from_model(ur10)
    short = ExcitationDesign(ur10, limits, objective="payload", frame=FRAME, duration=1.5, harmonics=3)
    assert short.duration == 1.5
    ExcitationDesign(ur10, limits, objective="inertia", frame=FRAME, duration=4.0, harmonics=3, horizon_s=20.0)
    d = ExcitationDesign(ur10, limits, objective="convergence", frame=FRAME, duration=4.0, harmonics=3,
                         horizon_s=np.float32(2.0))
    assert d.horizon_s == 2.0 and isinstance(d.horizon_s, float)


def test_a_horizon_too_short_to_determine_the_payload_is_refused(tmp_path, capsys):
    """The first milliseconds of any rest-to-rest motion determine nothing: the objective is flat there, and the
    command line says so instead of writing a design it never optimised."""
    from payload_id_core.cli.main import main as cli_main  # noqa: PLC0415

    out = tmp_path / "t.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--objective", "convergence", "--horizon", "0.002", "--duration", "4",
                   "--harmonics", "3", "--seeds", "1", "--maxiter", "3", "--min-velocity-fraction", "0",
                   "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "determines the payload in its first" in err and "--horizon" in err and not out.exists()


# The loaded runs' noise seeds: 100-102, the two of bench/payload.py's twenty that declared late while the
# shoulder's and elbow's load-friction μ_j were free unknowns (3.05 s and 2.10 s; load_friction.prior_std), and the
# one that still declared at 2.05 s while difference-rls read the rows near the joints' reversals (bench/
# cell_convergence.py, demo's robot; difference_rls.NEAR_REST_EPSILONS).
FAST_CELL_SEEDS = (100, 101, 102, 112, 106, 114)


@pytest.fixture(scope="module")
def fast_cell(ur10):
    """The demo's setting offline: the robot identified with its gear friction on ur10_payload_fast's unloaded run
    (seed 11), loaded runs (FAST_CELL_SEEDS) of the 3.5 kg payload, as bench/payload.py's cell_convergence_*."""
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this fixture

    traj = load_trajectory(FAST)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, [0.03, -0.02, 0.08], np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    robot = fit_given_model(ur10, simulate(ur10, traj, None, "ur10", seed=11), friction="nonlinear", gear_friction=True)
    return robot, [simulate(ur10, traj, truth, "ur10", seed=s) for s in FAST_CELL_SEEDS]


def _declared(ur10, robot, rec, **options):
    """difference-rls fed as the ROS session feeds it, until it declares convergence: (estimator, samples fed, the
    declared mass error, its σ as reported: the estimator's with the serial-correlation part the rule adds)."""
    sig = method_signals(rec, ur10, PayloadOptions(), robot)
    est = OnlinePayloadEstimator(ur10, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True,
                                 **options)
    k = feed_until_converged(est, sig)
    z, cov, _ = est.payload_solution()
    return est, k, z[0] - MASS, reported_mass_std(est, cov[0, 0], sig, k)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_difference_rls_declares_the_fast_run_converged_by_about_two_seconds_within_its_sigma(ur10, fast_cell, index):
    """bench/payload.py (20 seeds): declared at a median 1.9 s, all within 1 % and 2σ. Looser here: 2.5 s."""
    robot, recs = fast_cell
    est, _, err, std = _declared(ur10, robot, recs[index])
    assert est.converged and est.convergence_time <= 2.5, est.convergence_time
    assert abs(err) < 0.01 * MASS and abs(err) <= 2.0 * std, (err, std)


@pytest.mark.parametrize("index", [3, 4])
def test_the_cell_declares_within_two_seconds_where_free_load_friction_held_it_back(ur10, fast_cell, index):
    """Issue 29 (the cell's convergence ≤ 2 s): seeds 112 and 106 declared at 3.05 s and 2.10 s while the shoulder's
    and elbow's load-friction μ_j were free unknowns, collinear with the payload's torque until those joints first
    reverse (1.06-1.08 s). robot.yaml identifies their gear friction, so μ_j is known to its σ
    (load_friction.prior_std): declared within 2 s, the declared mass within 1 % and 2σ."""
    robot, recs = fast_cell
    est, _, err, std = _declared(ur10, robot, recs[index])
    assert est.converged and est.convergence_time <= TARGET_S, est.convergence_time
    assert abs(err) < 0.01 * MASS and abs(err) <= 2.0 * std, (err, std)


def test_the_cell_declares_within_two_seconds_where_the_reversals_friction_held_it_back(ur10, fast_cell):
    """Issue 29 (the cell's convergence ≤ 2 s): seed 114 declared at 2.05 s while difference-rls read the rows of
    joints near rest (the robot model's friction error at the first reversals stepped the mass by about +0.3 %
    there). Those rows left out (difference_rls.NEAR_REST_EPSILONS): declared by 2.0 s, within 1 % and 2σ."""
    robot, recs = fast_cell
    est, _, err, std = _declared(ur10, robot, recs[5], near_rest_epsilons=NEAR_REST_EPSILONS)
    assert est.converged and est.convergence_time <= TARGET_S, est.convergence_time
    assert abs(err) < 0.01 * MASS and abs(err) <= 2.0 * std, (err, std)


def test_the_cell_declares_within_two_seconds_where_its_first_second_held_it_back(ur10, fast_cell, monkeypatch):
    """Issue 29 (the cell's convergence ≤ 2 s), h113: seed 114 with the demo's robot, every row kept (the default),
    declared at 2.05 s on main, held by its check at 1.00 s, 0.75 % below the 2.0 s estimate: beyond 2σ(t) (0.66 %),
    but that check's own σ was 0.50 % against 0.33 % now, and an estimate from fewer samples differs from the
    current one by √(σ_i² − σ²) (0.38 %) by noise alone (base.settle_band). Judged against that spread: declared by
    2.0 s, within 1 % and 2σ; judged against σ(t) (main's band, every earlier check alike), not by 2.0 s."""
    from payload_id_core.payload.online import base  # noqa: PLC0415

    robot, recs = fast_cell
    est, _, err, std = _declared(ur10, robot, recs[5])
    assert est.converged and est.convergence_time <= TARGET_S, est.convergence_time
    assert abs(err) < 0.01 * MASS and abs(err) <= 2.0 * std, (err, std)
    monkeypatch.setattr(base, "settle_band", lambda earlier_std, std: std)
    late, _, _, _ = _declared(ur10, robot, recs[5])
    assert late.convergence_time > TARGET_S, late.convergence_time


@pytest.fixture(scope="module")
def noise_free_cell(ur10):
    """The demo's setting without noise (torque, position and velocity): the robot identified with its gear
    friction on ur10_payload_fast's unloaded run, the 3.5 kg payload's loaded run. What moves the mass is then the
    robot model's own error (the drives' friction law, which the model's differs from)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this fixture
    from payload_id_core.sim.profile import load_profile  # noqa: PLC0415

    profile = load_profile("ur10", ur10.n)
    profile.torque_noise_std = np.zeros(ur10.n)
    profile.position_noise_std = profile.velocity_noise_std = 0.0
    traj = load_trajectory(FAST)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, [0.03, -0.02, 0.08], np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    robot = fit_given_model(ur10, simulate(ur10, traj, None, profile, seed=11), friction="nonlinear",
                           gear_friction=True)
    return robot, simulate(ur10, traj, truth, profile, seed=100)


def _mass_history(ur10, robot, rec, seconds: float, **options) -> tuple[np.ndarray, np.ndarray]:
    """(t, mass error in % of MASS) of difference-rls's checks (every 25 samples) over the first `seconds`."""
    sig = method_signals(rec, ur10, PayloadOptions(), robot)
    n = int(round(seconds * 500))
    est = OnlinePayloadEstimator(ur10, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True,
                                 serial_check=False, history_every=25, **options)
    est.update_batch(sig.t[:n], sig.q[:n], sig.qd[:n], sig.qdd[:n], sig.tau[:n])
    h = est.estimate().history
    assert h is not None
    return h["t"], 100.0 * (h["phi"][:, 0] - MASS) / MASS


def test_the_mass_does_not_step_at_the_joints_first_reversals(ur10, noise_free_cell):
    """Issue 29: the elbow, wrist 1 and shoulder lift first reverse at 1.06-1.09 s into ur10_payload_fast. Without
    noise, difference-rls's mass stepped there from +0.06 % to +0.27-0.36 % (1.15-1.25 s) and was +0.11 % at
    2.0 s: the rows of a joint near rest hold the robot model's friction error (the drives' friction passes zero
    by another law than tanh(q̇/ε)), and at a reversal they entered the payload, and the friction offsets' change
    separating from the Coulomb change kept it there. Left out (difference_rls.NEAR_REST_EPSILONS) the mass stays
    within 0.2 % from 1.0 s on (at most +0.16 %) and moves by less than 0.1 % across the reversals; keeping them (0)
    shows the step."""
    robot, rec = noise_free_cell
    t, err = _mass_history(ur10, robot, rec, 2.0, near_rest_epsilons=NEAR_REST_EPSILONS)
    after = t >= 1.0 - 1e-9
    assert np.max(np.abs(err[after])) <= 0.2, np.round(err[after], 3)
    at = {s: float(err[np.argmin(np.abs(t - s))]) for s in (1.05, 1.2, 2.0)}
    assert abs(at[1.2] - at[1.05]) < 0.1, at
    t, kept = _mass_history(ur10, robot, rec, 2.0)     # the default keeps them
    stepped = {s: float(kept[np.argmin(np.abs(t - s))]) for s in (1.05, 1.2)}
    assert stepped[1.2] - stepped[1.05] > 0.2, stepped


def _mass_after(ur10, robot, rec, seconds):
    sig = method_signals(rec, ur10, PayloadOptions(), robot)
    n = int(round(seconds * 500))
    est = OnlinePayloadEstimator(ur10, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True)
    est.update_batch(sig.t[:n], sig.q[:n], sig.qd[:n], sig.qdd[:n], sig.tau[:n])
    z, cov, _ = est.payload_solution()
    return z[0], float(np.sqrt(cov[0, 0]))


def test_a_known_load_friction_is_the_free_unknown_in_the_limit_of_a_wide_sigma(ur10, fast_cell):
    """load_friction.prior_std: robot.yaml's gear friction makes the shoulder's and elbow's μ_j known to its σ. The
    same data with that σ widened to 100 (N·m per N·m) give the free unknowns' mass and σ (as before it), and the
    identification's σ a smaller mass σ than free unknowns: the prior adds information, and only its own."""
    import dataclasses  # noqa: PLC0415

    from payload_id_core.robot_id.gear_friction import GearFriction  # noqa: PLC0415

    robot, recs = fast_cell
    gear = robot.gear
    assert gear is not None and np.count_nonzero(np.isfinite(gear.mu_std)) == 2      # shoulder lift and elbow
    free = dataclasses.replace(robot, gear=GearFriction(gear.mu, np.full(gear.mu.size, np.nan)))   # given: free
    wide = dataclasses.replace(robot, gear=GearFriction(gear.mu, np.where(np.isfinite(gear.mu_std), 100.0, np.nan)))
    m_free, s_free = _mass_after(ur10, free, recs[0], 1.5)
    m_wide, s_wide = _mass_after(ur10, wide, recs[0], 1.5)
    m_known, s_known = _mass_after(ur10, robot, recs[0], 1.5)
    assert m_wide == pytest.approx(m_free, abs=1e-4 * MASS) and s_wide == pytest.approx(s_free, rel=1e-3)
    assert s_known < 0.9 * s_free, (s_known, s_free)
    assert abs(m_known - MASS) <= 2.0 * s_known, (m_known, s_known)
