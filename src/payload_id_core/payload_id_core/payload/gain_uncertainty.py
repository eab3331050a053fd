"""The drive gains' share of a payload's covariance (issue 12): torque = k ⊙ effort, k known to σ_k.

A relative gain error r_j = δk_j / k_j moves joint j's torque by r_j τ_j. The robot model θ_a was
identified from efforts scaled by the same gains, so the error moves its torque as well: to first
order the identification absorbs the relative change of its own torque (a common factor r scales θ_a
by 1 + r exactly), and what remains for the payload is the load's own torque on joint j,
(W_L φ_L)_j, scaled by r_j. Fitting that extra torque with the payload rows,

    δφ_L = Σ_j G_j r_j,   G_j = I⁻¹ I_j φ_L,   I_j = Σ_t W_L,tjᵀ W_L,tj / σ_j²,   I = Σ_j I_j,

so a common r scales the whole payload by 1 + r (δφ_L = r φ_L), and a gain error on a joint the load
barely loads moves it little. Here the gains enter as independent, with robot.yaml's standard deviations, but for
the friction model's choice (one shift of all the determined gains together, gain_load_only_covariance).

Where robot.yaml also gives θ's response to the gains, S = ∂θ/∂r (format 2), a fit of x on τ − Y_a θ_a (khalil-1)
takes the gain error exactly once, through what θ absorbs and what it leaves on this run (joint_gain_covariance):

    δx = P (r ⊙ τ − Y_a S r) = Σ_j r_j P (e_j τ_j − Y_a S_j),   P = (WᵀΣ⁻¹W)⁺ WᵀΣ⁻¹,

τ the run's measured torques (robot and load), r with its covariance C_r, the correlations the calibration fit
found between the gains kept (robot_id/result.GainCovariance): a common r still gives δx = r x, and a per-joint
error the base parameters absorb on the calibration motion moves the payload only by what they fail to absorb on
this one. The other methods keep the load-only rule with independent gains: the gains' positive correlations on the
real UR10e (+0.6 shoulder lift-elbow, the wrists +0.6-0.9) took gaz-dtau's 15harm mass σ from 0.993 to 1.003 %
through it, past the 1 % its error (−0.39 %) does not need; they wait for their own response to θ's absorption.
"""

from __future__ import annotations

import numpy as np


def gain_relative_std(robot) -> np.ndarray | None:
    """σ(k_j) / k_j of the drive gains the torques were computed with; None when robot.yaml gives no
    standard deviation (gains given by hand, or torques measured directly) or all of them are zero."""
    std = getattr(robot, "effort_scale_std", None)
    if std is None:
        return None
    std = np.asarray(std, dtype=float).reshape(-1)
    k = np.asarray(getattr(robot, "effort_scale", np.ones(std.size)), dtype=float).reshape(-1)
    if k.size != std.size or not np.all(np.isfinite(std)) or not np.all(k > 0) or not np.any(std > 0):
        return None
    return std / k


def gain_relative_covariance(robot) -> np.ndarray | None:
    """cov(r), r_j = δk_j / k_j, for joint_gain_covariance: robot.yaml's (format 2, correlations kept) or diag of
    gain_relative_std; None as gain_relative_std."""
    rel = gain_relative_std(robot)
    if rel is None:
        return None
    joint = getattr(robot, "gain_covariance", None)
    if joint is not None and np.asarray(joint.relative).shape == (rel.size, rel.size):
        return np.asarray(joint.relative, dtype=float)
    return np.diag(rel ** 2)


def gain_load_only_covariance(robot) -> np.ndarray | None:
    """cov(r) for the load-only rule: independent gains, except the shift of the friction model the gains were
    fitted with (robot.yaml effort.gain_model's choice_spread), which moves them together and so enters as one
    rank-one term: the payload takes its effect on the load's torque, which partly cancels across the joints (the
    real UR10e's two fits differ by −1.6 % on the shoulder lift and +1.3 % on the elbow). None as
    gain_relative_std."""
    rel = gain_relative_std(robot)
    if rel is None:
        return None
    gm = getattr(robot, "gain_model", None)
    names = getattr(robot, "joint_names", None)
    shift = np.zeros(rel.size) if gm is None or names is None else gm.choice_spread(names)
    if shift.size != rel.size:
        shift = np.zeros(rel.size)
    return np.diag(np.maximum(rel ** 2 - shift ** 2, 0.0)) + np.outer(shift, shift)


def joint_information(payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """(n, 10, 10) I_j: the information each joint's payload rows W_L (N, n, 10) carry, rows weighted 1/σ_j."""
    w = np.asarray(payload_rows, dtype=float)[..., :10] / np.asarray(sigma, dtype=float).reshape(1, -1, 1)
    return np.einsum("tji,tjk->jik", w, w)


def gain_covariance(info: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, rel_std: np.ndarray) -> np.ndarray:
    """(10, 10) covariance the gains' relative std `rel_std` (n,), or their relative covariance (n, n), adds to φ_L
    (module docstring); zero on the entries the motion leaves undetermined. `info` (n, 10, 10) from
    joint_information."""
    ok = np.asarray(identifiable, dtype=bool)[:10]
    cov = np.zeros((10, 10))
    if not ok.any():
        return cov
    info = np.asarray(info, dtype=float)
    total = info.sum(axis=0)[np.ix_(ok, ok)]
    pulls = np.einsum("jik,k->ji", info, np.asarray(phi, dtype=float)[:10])[:, ok]   # (n, ok): I_j φ_L
    G = np.linalg.lstsq(total, pulls.T, rcond=None)[0]                               # (ok, n): columns G_j
    cov[np.ix_(ok, ok)] = G @ _as_covariance(rel_std) @ G.T
    return cov


def _as_covariance(rel: np.ndarray) -> np.ndarray:
    rel = np.asarray(rel, dtype=float)
    return rel if rel.ndim == 2 else np.diag(rel ** 2)


def joint_gain_covariance(W: np.ndarray, sigma: np.ndarray, identifiable: np.ndarray, tau: np.ndarray,
                          y_a: np.ndarray, robot) -> np.ndarray | None:
    """(u, u) covariance the gains add to x = P (τ − Y_a θ_a) through their joint covariance with θ_a (module
    docstring); W (N, n, u) the fit's rows, τ (N, n) the run's torques, Y_a (N, n, p) the robot's regressor.
    None when robot.yaml has no S (format 1, gains given): the caller then takes with_gain_uncertainty."""
    joint = getattr(robot, "gain_covariance", None)
    rel = gain_relative_covariance(robot)
    if joint is None or rel is None:
        return None
    sens = np.asarray(joint.theta_sensitivity, dtype=float)
    N, n, u = W.shape
    if sens.shape != (y_a.shape[-1], n):
        return None
    w = 1.0 / np.asarray(sigma, dtype=float)
    response = -(y_a @ sens)                                            # (N, n, n): column j, −Y_a S_j
    response[:, np.arange(n), np.arange(n)] += tau
    ok = np.asarray(identifiable, dtype=bool)
    A = (W * w[None, :, None]).reshape(N * n, u)[:, ok]
    G = np.zeros((u, n))
    G[ok] = np.linalg.lstsq(A, (response * w[None, :, None]).reshape(N * n, n), rcond=None)[0]
    return G @ rel @ G.T


def with_gain_uncertainty(cov: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, robot,
                          payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """`cov` (of z = [φ_L, …]) with the gains' share added to its φ_L block; unchanged without a gain std."""
    rel = gain_load_only_covariance(robot)
    if rel is None or rel.shape[0] != np.asarray(sigma).size:
        return cov
    out = np.array(cov, dtype=float)
    out[:10, :10] = out[:10, :10] + gain_covariance(joint_information(payload_rows, sigma), phi, identifiable, rel)
    return out
