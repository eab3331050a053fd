"""Physical consistency of an estimated rigid body (a payload): pseudo-inertia ⪰ 0 and mass > 0 (Wensing 2017).

A raw least-squares estimate can be physically impossible (negative principal moments, a CoM
that the inertia cannot carry) when the motion excites the payload weakly. It is then projected
onto the feasible set by a small semidefinite program, nearest in the metric of the estimate's
own inverse covariance, so well-determined parameters move little and poor ones move most.
Entries the data did not determine are free in the program: the raw estimate counts as consistent
when some completion of them is feasible.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.inertia import is_physically_consistent

MIN_MASS = 1e-6  # kg: "mass > 0" as a closed constraint
# A projection that moves the estimate less than this (Mahalanobis distance, in standard deviations) is within
# the noise: a clean fit of a compact payload often lands just outside the feasible set. The fact is kept
# (payload.projected_within_noise) but not announced as news.
PROJECTION_SIGMA_NOTABLE = 1.0


def _whitening(cov: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """L with ‖L δ‖² = δᵀ cov⁻¹ δ; falls back to a scale-aware Euclidean metric without a covariance."""
    if cov.size == 0:
        return np.zeros((0, 0))
    cov = np.where(np.isfinite(cov), cov, 0.0)
    cov = 0.5 * (cov + cov.T)
    w, V = np.linalg.eigh(cov)
    if w.max() <= 0:
        scale = np.maximum(np.abs(phi), 1e-3)
        return np.diag(1.0 / scale)
    w = np.maximum(w, w.max() * 1e-12)
    return (V / np.sqrt(w)).T


def project_feasible(phi: np.ndarray, cov: np.ndarray, identifiable: np.ndarray,
                     min_mass: float = MIN_MASS, extra_constraints=None) -> tuple[np.ndarray, bool, float]:
    """(φ_projected, raw was consistent, Mahalanobis distance moved).

    φ entries not identifiable keep their given value in the result (the caller's prior), but are
    free variables of the feasibility test. `extra_constraints`: x -> [cvxpy constraints] that narrow the
    feasible set further (payload/priors.py: the mass inside a bounding box); the consistency shortcut is then
    not taken.
    """
    phi = np.asarray(phi, dtype=float)
    ok = np.asarray(identifiable, dtype=bool)
    if extra_constraints is None and ok.all() and is_physically_consistent(phi) and phi[0] >= min_mass:
        return phi.copy(), True, 0.0
    import cvxpy as cp  # noqa: PLC0415 - heavy import, only when a projection is needed

    x = cp.Variable(10)
    m, h = x[0], x[1:4]
    ixx, ixy, iyy, ixz, iyz, izz = x[4], x[5], x[6], x[7], x[8], x[9]
    # Pseudo-inertia [[Σ, h], [hᵀ, m]] with Σ = ½ tr(I) 1 − I (inertia.pseudo_inertia).
    s_xx = 0.5 * (-ixx + iyy + izz)
    s_yy = 0.5 * (ixx - iyy + izz)
    s_zz = 0.5 * (ixx + iyy - izz)
    J = cp.bmat([[s_xx, -ixy, -ixz, h[0]],
                 [-ixy, s_yy, -iyz, h[1]],
                 [-ixz, -iyz, s_zz, h[2]],
                 [h[0], h[1], h[2], m]])
    idx = np.flatnonzero(ok)
    L = _whitening(np.asarray(cov, dtype=float)[np.ix_(idx, idx)], phi[idx])
    scale = max(1.0, float(np.abs(L).max())) if L.size else 1.0
    objective = cp.sum_squares((L / scale) @ (x[idx] - phi[idx])) if idx.size else cp.Constant(0.0)
    constraints = [(J + J.T) / 2 >> 0, m >= min_mass]
    if extra_constraints is not None:
        constraints += extra_constraints(x)
    prob = cp.Problem(cp.Minimize(objective), constraints)
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.SolverError:
        prob.solve(solver=cp.SCS)
    if x.value is None:
        return phi.copy(), False, float("nan")
    dist = float(np.sqrt(max(prob.value, 0.0))) * scale
    out = phi.copy()
    # The raw determined entries with the solver's completion of the others: feasible up to the
    # solver's round-off means the raw estimate was consistent already.
    completed = np.array(x.value, dtype=float)
    completed[idx] = phi[idx]
    if (extra_constraints is None and completed[0] >= min_mass and is_physically_consistent(completed, tol=1e-7)) \
            or dist < 1e-3:
        return out, True, dist
    out[idx] = x.value[idx]
    return out, False, dist
