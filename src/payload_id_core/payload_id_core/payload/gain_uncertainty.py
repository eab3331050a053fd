"""The drive gains' share of a payload's covariance (issue 12): torque = k ⊙ effort, k known to σ_k.

A relative gain error r_j = δk_j / k_j moves joint j's torque by r_j τ_j. The robot model θ_a was
identified from efforts scaled by the same gains, so the error moves its torque as well: to first
order the identification absorbs the relative change of its own torque (a common factor r scales θ_a
by 1 + r exactly), and what remains for the payload is the load's own torque on joint j,
(W_L φ_L)_j, scaled by r_j. Fitting that extra torque with the payload rows,

    δφ_L = Σ_j G_j r_j,   G_j = I⁻¹ I_j φ_L,   I_j = Σ_t W_L,tjᵀ W_L,tj / σ_j²,   I = Σ_j I_j,

so a common r scales the whole payload by 1 + r (δφ_L = r φ_L), and a gain error on a joint the load
barely loads moves it little. Neglected (second order, or unknowable without the unloaded run): the
part of a per-joint gain error the robot's base parameters cannot absorb, and the correlation between
the joints' gains (robot.yaml stores their standard deviations only, so they enter as independent).
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


def joint_information(payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """(n, 10, 10) I_j: the information each joint's payload rows W_L (N, n, 10) carry, rows weighted 1/σ_j."""
    w = np.asarray(payload_rows, dtype=float)[..., :10] / np.asarray(sigma, dtype=float).reshape(1, -1, 1)
    return np.einsum("tji,tjk->jik", w, w)


def gain_covariance(info: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, rel_std: np.ndarray) -> np.ndarray:
    """(10, 10) covariance the gains' relative std `rel_std` (n,) adds to φ_L (module docstring); zero on
    the entries the motion leaves undetermined. `info` (n, 10, 10) from joint_information."""
    ok = np.asarray(identifiable, dtype=bool)[:10]
    cov = np.zeros((10, 10))
    if not ok.any():
        return cov
    info = np.asarray(info, dtype=float)
    total = info.sum(axis=0)[np.ix_(ok, ok)]
    pulls = np.einsum("jik,k->ji", info, np.asarray(phi, dtype=float)[:10])[:, ok]   # (n, ok): I_j φ_L
    G = np.linalg.lstsq(total, pulls.T, rcond=None)[0]                               # (ok, n): columns G_j
    cov[np.ix_(ok, ok)] = (G * np.asarray(rel_std, dtype=float) ** 2) @ G.T
    return cov


def with_gain_uncertainty(cov: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, robot,
                          payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """`cov` (of z = [φ_L, …]) with the gains' share added to its φ_L block; unchanged without a gain std."""
    rel = gain_relative_std(robot)
    if rel is None or rel.size != np.asarray(sigma).size:
        return cov
    out = np.array(cov, dtype=float)
    out[:10, :10] = out[:10, :10] + gain_covariance(joint_information(payload_rows, sigma), phi, identifiable, rel)
    return out
