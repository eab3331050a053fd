"""Covariances under serially correlated residuals (robot_id/serial_correlation.py, payload/linear.py):
the reported std matches the scatter over seeds, for AR(1) noise of known
correlation and for white noise (then the plain, uncorrelated std)."""

from __future__ import annotations

import numpy as np
import pytest

from payload_id_core.payload.linear import weighted_lstsq
from payload_id_core.robot_id import serial_correlation

N, JOINTS, UNKNOWNS = 2000, 3, 4
SEEDS = 200


def _regressor(N: int = N) -> np.ndarray:
    """Smooth regressors as an excitation trajectory gives (a few slow harmonics per column)."""
    t = np.linspace(0.0, 40.0, N)
    W = np.empty((N, JOINTS, UNKNOWNS))
    for j in range(JOINTS):
        for k in range(UNKNOWNS):
            W[:, j, k] = np.sin(0.3 * (k + 1) * t + j) + 0.5 * np.cos(0.11 * (j + 2) * t + k)
    return W


def _ar1(rng: np.random.Generator, rho: float, N: int = N) -> np.ndarray:
    e = rng.normal(size=(N, JOINTS)) * np.sqrt(1 - rho ** 2)
    out = np.empty_like(e)
    out[0] = rng.normal(size=JOINTS)
    for t in range(1, N):
        out[t] = rho * out[t - 1] + e[t]
    return out * np.array([0.5, 1.0, 2.0])


def _scatter(rho: float):
    W = _regressor()
    x_true = np.array([1.0, -2.0, 0.5, 3.0])
    xs, stds, infl = [], [], []
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        noise = _ar1(rng, rho)
        sol = weighted_lstsq(W, W @ x_true + noise)
        xs.append(sol.x)
        stds.append(np.sqrt(np.diag(sol.cov)))
        infl.append(sol.inflation)
    return np.std(xs, axis=0), np.median(stds, axis=0), np.median(infl)


def test_ar1_residuals_std_matches_scatter_over_seeds():
    """ρ = 0.9: the long-run variance of the noise is (1 + ρ)/(1 − ρ) = 19× its variance, so the
    uncorrelated formula would report about 1/4 of the scatter of slowly varying regressors' fits."""
    scatter, std, infl = _scatter(0.9)
    assert np.all(np.abs(std / scatter - 1) < 0.2), std / scatter
    assert 3.0 < infl < 5.0, infl


def test_white_noise_gives_the_plain_std():
    scatter, std, infl = _scatter(0.0)
    assert np.all(np.abs(std / scatter - 1) < 0.2), std / scatter
    assert 1.0 <= infl < 1.1, infl


def test_a_common_factor_never_below_one_on_the_eq21_covariance():
    """Only σ widens: the covariance is Khalil's eq. 21 one times inflation² (a common factor keeps
    every covariance-weighted use, e.g. the projection onto consistent parameters, unchanged)."""
    rng = np.random.default_rng(3)
    W = _regressor(500)
    y = W @ np.ones(UNKNOWNS) + rng.normal(size=(500, JOINTS))
    sol = weighted_lstsq(W, y)
    w = np.tile(1.0 / sol.sigma, 500)          # sol.sigma already carries eq. 21's misfit scale
    A = W.reshape(-1, UNKNOWNS) * w[:, None]
    assert sol.inflation >= 1.0
    np.testing.assert_allclose(sol.cov, np.linalg.inv(A.T @ A) * sol.inflation ** 2, rtol=1e-8)


def test_bartlett_sum_equals_the_lag_sum():
    rng = np.random.default_rng(1)
    g = rng.normal(size=(50, 3)).cumsum(axis=0)
    L = 6
    direct = g.T @ g
    for lag in range(1, L + 1):
        gamma = g[lag:].T @ g[:-lag]
        direct += (1 - lag / (L + 1)) * (gamma + gamma.T)
    np.testing.assert_allclose(serial_correlation.long_run_covariance(g, L), direct, rtol=1e-12)


@pytest.mark.parametrize(("rho", "low", "high"), [(0.0, 0, 2), (0.9, 55, 75)])
def test_bandwidth_grows_with_the_correlation(rho, low, high):
    """ρ = 0.9, N = 2000: α = 4ρ² (1 − ρ)⁻² (1 + ρ)⁻² = 89.8, L = 1.1447 (α N)^(1/3) = 64."""
    assert low <= serial_correlation.bandwidth(_ar1(np.random.default_rng(0), rho)) <= high

