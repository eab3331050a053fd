"""The alarm's reference right after a change (issue 31, h140): the fit of every row since it, and how well that fit
predicts the motion that comes, the robot model's error included.

Right after a pick or a place the carried payload is its verdict window's fit (0.1 s of rows), whose covariance leaves
the CoM along gravity and the inertia to their priors; the alarm's allowance takes in F Σ Fᵀ of it, and the first move
reads those priors through F, so the alarm is deaf for the second until the re-estimate replaces that fit
(test_monitor_floor_after_change). The alarm instead tests the residual against the fit of every row since the change
(the re-estimate's own normal equations, PayloadRefiner), refreshed as the rows come in (h129's try). What h129 left
out is the fit's error the robot model's own error puts in it: a fit of a few tenths of a second reads the model's
error on those rows as payload, and that error does not average down over rows that follow one motion (the real
UR10e's place was lost to alarms on it). Its covariance here is therefore the sandwich

    Σ = G⁻¹ ((s² c + N) AᵀA + W) G⁻¹,   G = AᵀA + W,

A the rows since the change whitened by the residual's running level, W the priors (the detector's on the first
moments and the inertia, the refiner's on the load friction), s² c the rows' own AR(1) misfit term (as the re-estimate
has it), and N AᵀA the model's error: each joint's error at its running level, correlated over all N samples since the
change. N AᵀA bounds Var(Σ_k a_kᵀ e_k) for any correlation of e_k over the samples (Cauchy-Schwarz,
(Σ_k x_k)² ≤ N Σ_k x_k²), so it is the worst case of a model error that follows the motion, and it does not shrink as
rows come in (no model error averages down on one motion). F Σ Fᵀ on the current row's regressor is then about the
running level where the rows since the change excited what this row excites (the fit is as good as the model there),
and the priors' variance where they did not (a move after a pick at rest reads the CoM along gravity)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.monitor.refine import PRIOR_STD_MASS_MOMENTS, PayloadRefiner


@dataclass(frozen=True)
class AlarmReference:
    """The payload the alarm tests the residual against right after a change, and its prediction covariance."""
    phi: np.ndarray      # (10,)
    cov: np.ndarray      # (10, 10)
    since: float         # s: the change (PayloadState.since) whose rows it was fitted on
    rows: int            # whitened rows behind it
    misfit: float        # mean squared whitened residual per row of the fit (≈ 1 when a flange load explains them)


def since_change_fit(refiner: PayloadRefiner, since: float, moment_prior_std: float, inertia_prior_std: float,
                     n_joints: int) -> AlarmReference | None:
    """The fit of the refiner's rows since the change at `since` (module docstring), with the detector's priors on
    the first moments and the inertia about the refiner's prior payload (the window's fit); None before any row."""
    if refiner.rows <= 0:
        return None
    W = refiner.prior_weight.copy()
    W[0, 0] = PRIOR_STD_MASS_MOMENTS[0] ** -2.0
    W[1:4, 1:4] = np.eye(3) * moment_prior_std ** -2.0
    W[4:10, 4:10] = np.eye(6) * inertia_prior_std ** -2.0
    AtA = refiner.AtA
    G = AtA + W
    x = np.linalg.solve(G, refiner.Atb + W @ refiner.prior)
    u = x.size
    rss = float(refiner.btb - 2 * x @ refiner.Atb + x @ AtA @ x)
    s2 = max(rss / (refiner.rows - u), 1e-12) if refiner.rows > u else 1.0
    rho = refiner.rho
    # The model's error correlated within each of the refiner's clusters (BLOCK_S of rows), as its robust covariance
    # takes it, at the running level (the rows' whitening): N_b A_bᵀA_b per cluster of N_b samples.
    model_error = refiner.block_model_error(n_joints)
    Ginv = np.linalg.inv(G)
    cov = Ginv @ (s2 * (1.0 + rho) / (1.0 - rho) * AtA + model_error + W) @ Ginv
    cov = 0.5 * (cov + cov.T)
    return AlarmReference(x[:10].copy(), cov[:10, :10].copy(), since, int(refiner.rows), float(s2))
