"""The 'covariance' convergence rule declares an estimate only once it has settled (payload/online/base.py).

On the simulated cell (profile 'ur10') the bundled ur10_payload_inertia excitation concentrates the robot
model's load-dependent friction error in its first seconds: difference-rls's mass sits 1.4-2.3 % off for
half a second with σ ≈ 0.4 %, and the σ rule alone declared it converged at 2.25 s. Seeds 104 and 105 are
two such runs (issue 13: never a confident wrong answer).
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.online_feed import feed_until_converged, reported_mass_std

MASS = 3.5
FRAME = "tool0"
SEEDS = (104, 105)


def _cell(trajectory: str, seeds):
    """(model, robot identified on the unloaded run, seed 11, as bench/payload.py, loaded runs of `seeds`)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(trajectory)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, [0.03, -0.02, 0.08], np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    robot = fit_given_model(m, simulate(m, traj, None, "ur10", seed=11), friction="nonlinear")
    return m, robot, [simulate(m, traj, truth, "ur10", seed=s) for s in seeds]


@pytest.fixture(scope="module")
def cell():
    return _cell("ur10_payload_inertia", SEEDS)


def _declared(m, robot, rec, **options):
    """(time, mass error / kg, σ / kg) of difference-rls at its declaration, fed as the ROS session feeds it
    (blocks of the check period, the robot's covariance in σ; σ with the serial-correlation part the goal adds)."""
    sig = method_signals(rec, m, PayloadOptions(), robot)
    est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True,
                                 **options)
    k = feed_until_converged(est, sig)
    assert est.converged
    z, cov, _ = est.payload_solution()
    return est.convergence_time, z[0] - MASS, reported_mass_std(est, cov[0, 0], sig, k)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_declared_mass_is_within_two_sigma_where_the_sigma_rule_alone_was_wrong(cell, seed):
    m, robot, recs = cell
    rec = recs[SEEDS.index(seed)]
    t_alone, err_alone, std_alone = _declared(m, robot, rec, settle_time=0.0, serial_check=False)
    # Declared converged more than 1 % off; the σ the goal reports (with the robot's unmodelled gear friction,
    # OnlineEstimator.covariance_extra) now covers that error, but at ~1 %, not below the 0.5 % declared.
    assert t_alone < 2.5 and abs(err_alone) > 0.01 * MASS and std_alone > 0.005 * MASS, (t_alone, err_alone, std_alone)
    t, err, std = _declared(m, robot, rec)
    assert t > t_alone and abs(err) <= 2.0 * std and abs(err) < 0.01 * MASS, (t, err, std)


@pytest.fixture(scope="module")
def demo_cell():
    """The demo's excitation (bundled ur10_payload)."""
    return _cell("ur10_payload", (111, 115))


@pytest.mark.parametrize("index", [0, 1])
def test_the_reported_sigma_must_pass_too_where_the_estimators_own_was_not_honest(demo_cell, index):
    """ur10_payload seeds 111 and 115: the estimator's σ and the settling pass at 3.7 s with the mass −1.5 % off
    (beyond 2σ of the σ the goal reported before it had the robot's unmodelled gear friction; within it now, but
    that σ is 0.7 %, not the 0.5 % declared); the reported σ, required below the threshold too, waits until the
    mass is within 1 % and its 2σ."""
    m, robot, recs = demo_cell
    t_own, err_own, std_own = _declared(m, robot, recs[index], serial_check=False)
    assert t_own < 4.0 and abs(err_own) > 0.01 * MASS and std_own > 0.005 * MASS, (t_own, err_own, std_own)
    t, err, std = _declared(m, robot, recs[index])
    assert t > t_own and abs(err) <= 2.0 * std and abs(err) < 0.01 * MASS, (t, err, std)


def test_update_and_update_batch_declare_at_the_same_sample(cell):
    m, robot, recs = cell
    sig = method_signals(recs[0], m, PayloadOptions(), robot)
    n = sig.t.size
    one, batch = (OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=500.0) for _ in range(2))
    for k in range(n):
        one.update(sig.q[k], sig.qd[k], sig.qdd[k], sig.tau[k], float(sig.t[k]))
    batch.update_batch(sig.t[:n], sig.q[:n], sig.qd[:n], sig.qdd[:n], sig.tau[:n])
    assert one.converged and one.convergence_time == batch.convergence_time


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "1.0", True])
def test_a_settle_time_that_is_not_a_duration_is_refused(cell, bad):
    m, robot, recs = cell
    with pytest.raises(PayloadIdError, match="settle_time"):
        identify_payload("difference-rls", m, robot, recs[0], FRAME, settle_time=bad)


def test_checks_sparser_than_the_window_still_compare_the_last_mass_before_it(cell):
    """With one check per 1.12 s (check_every 560 at 500 Hz) no check falls inside the 1.0 s window: the last
    one before it is compared, so the rule still waits on the seed the σ rule alone declared wrong."""
    m, robot, recs = cell
    t_alone, err_alone, std_alone = _declared(m, robot, recs[0], settle_time=0.0, check_every=560,
                                                 serial_check=False)
    assert abs(err_alone) > 0.01 * MASS, (t_alone, err_alone, std_alone)
    t, err, std = _declared(m, robot, recs[0], check_every=560)
    assert t > t_alone and abs(err) <= 2.0 * std, (t, err, std)


def test_an_earlier_check_is_judged_against_the_spread_nested_estimates_have():
    """base.settle_band: under an exact model an estimate from the first n_i samples differs from the current one
    (n samples) by noise of variance σ_i² − σ² (the current one is the efficient one). Nested means of white noise,
    4000 draws, σ_i = √5 σ: the settling's 2-band is then exceeded by 5 % of honest draws (a 2σ test), where
    judging against 2σ(t), as before, refused 32 % of them; a check with σ_i within √2 of the current keeps σ(t)."""
    from payload_id_core.payload.online.base import SETTLE_SIGMAS, settle_band  # noqa: PLC0415

    rng = np.random.default_rng(7)
    n_i, n = 100, 500
    draws = rng.standard_normal((4000, n))
    earlier, current = draws[:, :n_i].mean(axis=1), draws.mean(axis=1)
    s_i, s = 1 / np.sqrt(n_i), 1 / np.sqrt(n)
    band = settle_band(s_i, s)
    assert band == pytest.approx(2 * s, rel=1e-12)       # √(5 − 1) σ
    outside = np.mean(np.abs(earlier - current) > SETTLE_SIGMAS * band)
    outside_current_only = np.mean(np.abs(earlier - current) > SETTLE_SIGMAS * s)
    assert 0.035 < outside < 0.065 and outside_current_only > 0.28, (outside, outside_current_only)
    assert settle_band(1.3 * s, s) == s
    assert settle_band(np.array([0.5 * s, 3 * s]), s) == pytest.approx([s, np.sqrt(8) * s])
