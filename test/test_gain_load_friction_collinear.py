"""Issue 29 (h174): a drive gain the calibration run cannot separate from its joint's load-Coulomb level μ_j|τ_j|
sgn(q̇_j) says so in its σ. drive_gains.load_friction_collinearity measures it from the run's own columns (the
gain's σ with μ_j freed against its σ at μ_j = 0), load_friction_spread adds it to robot.yaml's σ, the payloads' gain
share leaves it out (payload/gain_uncertainty.load_friction_spread). The UR3's wrist 1 under the `ur10` drives is the
case (test_redteam_issue29_h86.test_the_ur3_gains_are_within_three_sigma, a strict xfail before); the real UR10e's
wrists are bench/ur10e.py's. Synthetic rows and the UR3 run: seconds."""

from __future__ import annotations

import numpy as np

from payload_id_core.robot_id.drive_gains import (
    LOAD_FRICTION_MU_PRIOR,
    DriveGainRows,
    GainFit,
    load_friction_collinear_note,
    load_friction_collinearity,
    load_friction_spread,
)
from payload_id_core.robot_id.fit_information import information_covariance


def _rows(seed: int, reverse: bool) -> tuple[DriveGainRows, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two joints, three shared unknowns: each joint's velocity keeps the sign of its torque (`reverse` False) or not.
    Returns the rows, x, k, σ and the output-error Jacobian of identify_drive_gains at that point."""
    rng = np.random.default_rng(seed)
    N, n, m = 400, 2, 3
    xs = rng.normal(size=(N, n, m))
    cs = rng.normal(size=(N, n)) + 2.0
    x, k, sig = np.array([0.5, -0.2, 0.3]), np.array([8.0, 9.0]), np.array([0.1, 0.2])
    u = xs @ x + cs
    # the velocity's sign: the torque's but for 5 % of the samples, or independent of it
    flip = np.where(rng.random((N, n)) < 0.05, -1.0, 1.0)
    sgn = np.sign(u) * flip if not reverse else np.sign(rng.normal(size=(N, n)))
    jac = np.concatenate([xs / k[None, :, None], np.zeros((N, n, n))], axis=2)
    jac[:, np.arange(n), m + np.arange(n)] = -u / k ** 2
    jw = (jac / sig[None, :, None]).reshape(-1, m + n)
    return DriveGainRows(xs, cs, u / k, sgn, 0, cs, np.zeros((N, n, 10))), x, k, sig, jw


def _marginal(rows, x, k, sig, jw, j):
    """The gain's variance with μ_j's column appended to the Jacobian (the fit with μ_j free), and μ_j's."""
    N, n, m = rows.xs.shape
    col = np.zeros((N, n))
    col[:, j] = np.abs((rows.xs @ x + rows.cs) / k)[:, j] * rows.sgn[:, j] / sig[j]
    cov = information_covariance(np.column_stack([jw, col.reshape(-1)]))
    return cov[m + j, m + j], cov[-1, -1]


def test_the_gains_sigma_with_mu_free_is_the_augmented_fits_and_grows_only_where_the_signs_stay():
    """The partitioned inverse: σ_cond² + (∂k/∂μ σ_μ)² is the gain's variance of the fit with μ_j's column added, to
    rounding; where joint j's torque keeps the sign of its velocity the two columns are nearly one (5 % of the signs
    flipped: σ × 2.0-2.4), where the velocity's sign is independent of the torque's they separate (σ × ≤ 1.05)."""
    for reverse in (False, True):
        rows, x, k, sig, jw = _rows(3, reverse)
        slope, free_std = load_friction_collinearity(jw, rows, x, k, sig, np.ones(2, bool))
        cond = np.diag(information_covariance(jw))[3:]
        for j in range(2):
            var_k, var_mu = _marginal(rows, x, k, sig, jw, j)
            np.testing.assert_allclose(free_std[j] ** 2, var_mu, rtol=1e-8)
            np.testing.assert_allclose(cond[j] + (slope[j] * free_std[j]) ** 2, var_k, rtol=1e-8)
        ratio = np.sqrt(1 + (slope * free_std) ** 2 / cond)
        if reverse:
            assert np.all(ratio < 1.05), ratio
        else:
            assert np.all(ratio > 1.8), ratio


def test_the_spread_is_bounded_by_the_prior_and_zero_off_the_joints_asked_and_where_mu_was_fitted():
    rows, x, k, sig, jw = _rows(4, False)
    slope, free_std = load_friction_collinearity(jw, rows, x, k, sig, np.array([True, False]))
    assert slope[1] == 0.0 and np.isinf(free_std[1])                     # μ_1 fitted (or not asked): nothing to add
    fit = GainFit(k, np.array([0.01, 0.01]), np.array([10.0, 10.0]), load_friction_slope=np.array([-8.0, -9.0]),
                  load_friction_free_std=np.array([np.inf, 0.01]))
    spread = load_friction_spread(fit, np.array([True, True]))
    assert spread[0] == 8.0 * LOAD_FRICTION_MU_PRIOR                    # nothing on μ_0: the prior caps it
    np.testing.assert_allclose(spread[1], 9.0 / np.sqrt(1e4 + 1 / LOAD_FRICTION_MU_PRIOR ** 2))
    assert np.all(load_friction_spread(fit, np.array([False, False])) == 0.0)   # undetermined: with_model_error's
    note = load_friction_collinear_note(fit, fit.std, spread, ["a", "b"])
    assert note is not None and "a 8:" in note.text and "b 9:" in note.text and "--effort-scale" in note.text
    assert load_friction_collinear_note(fit, fit.std, 0.5 * fit.std, ["a", "b"]) is None   # σ × 1.1: not named
