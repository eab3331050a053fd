"""Least-squares estimators of linear-in-parameter models τ = W θ + noise, W (N, n, p), τ (N, n).

- ols: ordinary least squares (Khalil 2007 eq. 4).
- wls: weighted by each joint's noise level, estimated from the OLS residual of that joint
  (Gautier 1990; Tadese 2022 eq. 23–24: σ_j² = ‖τ_j − W_j θ‖² / (N − p_j)), floored relative to the
  joint's torque scale (sigma_floor) so noise-free data do not divide by zero.
- feasible: the weighted fit constrained to physically consistent standard parameters, an SDP
  with a 4×4 pseudo-inertia ⪰ 0 per link (Wensing 2017; Tadese 2022 §3.3), rotor inertia ≥ 0 and
  friction coefficients ≥ 0. The standard parameters ψ are the variables; the data see them only
  through θ_I = A ψ (base parameters), so the fit term is the weighted residual in θ.

Uncertainty: cov(θ) = σ² (Wᵀ W)⁻¹ (OLS) or (Wᵀ Σ⁻¹ W)⁻¹ (WLS); relative standard deviation
100 σ_θ / |θ| % (Khalil 2007 eq. 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from payload_id_core.errors import PayloadIdError

ESTIMATORS = ("ols", "wls", "feasible")


@dataclass
class Fit:
    theta: np.ndarray       # (p,)
    cov: np.ndarray         # (p, p)
    sigma: np.ndarray       # (n,) per-joint noise std estimated from the residual, N·m
    rmse: np.ndarray        # (n,) torque RMSE per joint of this θ on the fitted data
    method: str

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    @property
    def rel_std(self) -> np.ndarray:
        """100 σ_θ / |θ| in percent (inf for θ = 0)."""
        with np.errstate(divide="ignore"):
            return 100.0 * self.std / np.abs(self.theta)


def _check(w: np.ndarray, tau: np.ndarray) -> None:
    if w.ndim != 3 or tau.shape != w.shape[:2]:
        raise PayloadIdError(f"regressor {w.shape} and torques {tau.shape} do not match", "W is (N, n, p), τ (N, n)")
    if w.shape[0] * w.shape[1] <= w.shape[2]:
        raise PayloadIdError(f"{w.shape[0]} samples are too few for {w.shape[2]} parameters",
                             "record a longer run")


@dataclass
class NormalEquations:
    """Per-joint normal equations: one pass over the (tall) data serves OLS, the WLS weights, WLS,
    the SDP's data term and the excitation check (G_j = W_jᵀ W_j, b_j = W_jᵀ τ_j, c_j = τ_jᵀ τ_j)."""

    gram: np.ndarray          # (n, p, p)
    rhs: np.ndarray           # (n, p)
    tt: np.ndarray            # (n,)
    n_samples: int
    p_joint: np.ndarray       # (n,) parameters acting on each joint

    @classmethod
    def from_data(cls, w: np.ndarray, tau: np.ndarray) -> NormalEquations:
        _check(w, tau)
        n_samples, n, p = w.shape
        gram, rhs, tt, pj = np.empty((n, p, p)), np.empty((n, p)), np.empty(n), np.empty(n, dtype=int)
        for j in range(n):
            a = np.ascontiguousarray(w[:, j, :])
            y = np.ascontiguousarray(tau[:, j])
            gram[j] = a.T @ a
            rhs[j] = a.T @ y
            tt[j] = y @ y
            pj[j] = np.count_nonzero(np.diag(gram[j]) > 0)
        return cls(gram, rhs, tt, n_samples, pj)

    def rss(self, theta: np.ndarray) -> np.ndarray:
        """(n,) residual sum of squares per joint: c_j − 2 θᵀ b_j + θᵀ G_j θ."""
        return np.maximum(self.tt - 2 * self.rhs @ theta + np.einsum("i,jik,k->j", theta, self.gram, theta), 0.0)

    def rmse(self, theta: np.ndarray) -> np.ndarray:
        return np.sqrt(self.rss(theta) / self.n_samples)

    def sigma(self, theta: np.ndarray) -> np.ndarray:
        """σ_j² = ‖τ_j − W_j θ‖² / (N − p_j) (Tadese 2022 eq. 24)."""
        return np.sqrt(self.rss(theta) / np.maximum(self.n_samples - self.p_joint, 1))

    def combined(self, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(Σ w_j G_j, Σ w_j b_j)."""
        wt = np.ones(self.gram.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        return np.einsum("j,jik->ik", wt, self.gram), wt @ self.rhs

    def condition_number(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Condition number of the column-normalised stacked regressor, its singular values (descending)
        and right singular vectors (rows)."""
        g, _ = self.combined()
        d = np.sqrt(np.diag(g))
        d = np.where(d > 0, d, 1.0)
        ev, vecs = np.linalg.eigh(g / np.outer(d, d))
        s = np.sqrt(np.maximum(ev[::-1], 0.0))
        return float(s[0] / max(s[-1], 1e-300)), s, vecs[:, ::-1].T


def _solve_normal(g: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """θ = G⁻¹ b and G⁻¹ on Jacobi-scaled normal equations. The scaled condition number is checked
    (< 1e5, regressors.excitation_check) so squaring it stays far from double precision, and the
    Gram products are several times faster than a Householder QR of 10⁵–10⁶ rows."""
    d = np.sqrt(np.diag(g))
    if np.any(d == 0):
        raise PayloadIdError(f"parameters {np.flatnonzero(d == 0).tolist()} have all-zero regressor columns",
                             "use a richer excitation trajectory (payload-id excite)")
    gs = g / np.outer(d, d)
    ev = np.linalg.eigvalsh(gs)
    if ev[0] <= 1e-12 * ev[-1]:
        raise PayloadIdError("the regressor is rank deficient: some parameters are not excited",
                             "use a richer excitation trajectory (payload-id excite)")
    cf = scipy.linalg.cho_factor(gs)
    theta = scipy.linalg.cho_solve(cf, b / d) / d
    inv = scipy.linalg.cho_solve(cf, np.eye(g.shape[0])) / np.outer(d, d)
    return theta, inv


def _normal_equations(w: np.ndarray | NormalEquations, tau: np.ndarray | None) -> NormalEquations:
    """`w` when it already is the normal equations, else those of the data (W, τ)."""
    if isinstance(w, NormalEquations):
        return w
    if tau is None:
        raise TypeError("fitting a regressor W needs its torques τ (only NormalEquations carry them)")
    return NormalEquations.from_data(w, tau)


def residual_rmse(w: np.ndarray, tau: np.ndarray, theta: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean((tau - w @ theta) ** 2, axis=0))


def ols(w: np.ndarray | NormalEquations, tau: np.ndarray | None = None) -> Fit:
    ne = _normal_equations(w, tau)
    n, p = ne.rhs.shape
    theta, inv = _solve_normal(*ne.combined())
    s2 = float(ne.rss(theta).sum() / (ne.n_samples * n - p))
    return Fit(theta, s2 * inv, sigma_floor(ne, ne.sigma(theta)), ne.rmse(theta), "ols")


def wls(w: np.ndarray | NormalEquations, tau: np.ndarray | None = None, sigma: np.ndarray | None = None) -> Fit:
    """Weighted least squares, rows of joint j divided by σ_j (from an OLS pass when not given)."""
    ne = _normal_equations(w, tau)
    if sigma is None:
        sigma = ols(ne).sigma
    sigma = sigma_floor(ne, sigma)
    theta, inv = _solve_normal(*ne.combined(1.0 / sigma ** 2))
    return Fit(theta, inv, sigma, ne.rmse(theta), "wls")


# Smallest per-joint noise level WLS believes, relative to the joint's RMS torque. The residual of
# the normal equations, c − 2θᵀb + θᵀGθ, cancels to about eps·‖τ_j‖² (σ ≈ 1e-7 of the torque RMS
# measured on noise-free Panda and UR10 data, often exactly 0 after clipping): below this floor σ_j
# is rounding, not noise, and 1/σ_j² would weight rounding by up to 1e24 (division by zero, or a
# Gram matrix that looks rank deficient). 1e-5 sits 100× above that rounding and 10× below the
# resolution of any real joint torque or current signal (≥ 1e-4 of its range).
SIGMA_FLOOR_REL = 1e-5


def sigma_floor(ne: NormalEquations, sigma) -> np.ndarray:
    """σ_j raised to at least SIGMA_FLOOR_REL × (RMS torque of joint j, or of the largest joint when
    joint j carries almost none), so noise-free data get a finite, torque-scaled weighting; when
    every torque is zero, equal weights (OLS)."""
    sigma = np.asarray(sigma, dtype=float)
    scale = np.sqrt(ne.tt / ne.n_samples)
    if not np.any(scale > 0):
        return np.ones_like(sigma)
    floor = SIGMA_FLOOR_REL * np.maximum(scale, SIGMA_FLOOR_REL * float(scale.max()))
    return np.maximum(np.where(np.isfinite(sigma), sigma, 0.0), floor)


def _pseudo_inertia_expr(cp, phi):
    """J(φ) of inertia.pseudo_inertia as a cvxpy expression (φ in pinocchio order)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = (phi[k] for k in range(10))
    tr = (ixx + iyy + izz) / 2
    return cp.bmat([[tr - ixx, -ixy, -ixz, hx],
                    [-ixy, tr - iyy, -iyz, hy],
                    [-ixz, -iyz, tr - izz, hz],
                    [hx, hy, hz, m]])


def feasible(w: np.ndarray | NormalEquations, tau: np.ndarray | None, a_inertial: np.ndarray, n_links: int, *,
             prior: np.ndarray | None = None, nonnegative: np.ndarray | None = None,
             sigma: np.ndarray | None = None, regularization: float = 1e-6,
             min_eig: float = 0.0) -> tuple[Fit, np.ndarray]:
    """Physically consistent weighted fit (Wensing 2017 LMI; Tadese 2022 §3.3).

    θ = [θ_I (q), θ_f (p − q)] with θ_I = A ψ, ψ = [φ_1..φ_n (10 each), Ia_1..Ia_n]. Minimises
    ‖L (W θ − τ)‖ over ψ, θ_f subject to J(φ_i) ⪰ min_eig·I, Ia ≥ 0, θ_f[nonnegative] ≥ 0, plus
    `regularization` × ‖P_N (ψ − prior)‖² where P_N projects onto the null space of A: the data
    cannot see those directions of ψ, so the term only picks one ψ among those with the same θ_I
    and never pulls θ_I away from the data (a prior that is wrong in what the data do see, e.g.
    zero rotor inertias, would otherwise bias θ by about `regularization`).
    The data term uses the weighted normal equations' Cholesky factor R: ‖L(Wθ − τ)‖² = ‖R(θ − θ_wls)‖² + c.
    It is minimised as a norm (a second-order cone), not squared: the interior-point solver's
    tolerance then bounds the error of θ itself rather than of its square, which is what lets a
    consistent θ_wls (noise-free data) come back to ~1e-9 instead of ~1e-4.
    Returns (Fit, ψ).
    """
    import cvxpy as cp  # noqa: PLC0415 - heavy import, only this estimator needs it

    ne = _normal_equations(w, tau)
    p = ne.rhs.shape[1]
    base = wls(ne, sigma=sigma)
    q_i, m_std = a_inertial.shape
    if m_std != 11 * n_links:
        raise PayloadIdError("internal: A must map 11 n standard parameters", "report this bug")
    g, _ = ne.combined(1.0 / base.sigma ** 2)
    d = np.sqrt(np.diag(g))
    r = scipy.linalg.cholesky(g / np.outer(d, d), lower=False) * d[None, :]
    r = r / np.sqrt(np.sum(r ** 2) / p)
    psi = cp.Variable(m_std)
    theta_f = cp.Variable(p - q_i)
    theta = cp.hstack([a_inertial @ psi, theta_f]) if p > q_i else a_inertial @ psi
    objective = cp.norm(r @ (theta - base.theta))
    prior = np.zeros(m_std) if prior is None else np.asarray(prior, dtype=float)
    if regularization > 0:
        _, sv, vt = np.linalg.svd(a_inertial)
        rank = int(np.sum(sv > 1e-10 * sv[0]))
        null = vt[rank:]                          # rows: orthonormal basis of null(A)
        if null.shape[0]:
            objective = objective + regularization * cp.sum_squares(null @ (psi - prior))
    cons = []
    for i in range(n_links):
        cons.append(_pseudo_inertia_expr(cp, psi[10 * i:10 * i + 10]) >> min_eig * np.eye(4))
    cons.append(psi[10 * n_links:] >= 0)
    if nonnegative is not None and np.any(nonnegative):
        cons.append(theta_f[np.flatnonzero(nonnegative)] >= 0)
    prob = cp.Problem(cp.Minimize(objective), cons)
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.SolverError as err:
        raise PayloadIdError(f"the physically consistent fit failed: {err}", "use --estimator wls") from err
    if psi.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise PayloadIdError(f"the physically consistent fit ended with status '{prob.status}'",
                             "use --estimator wls, or check the data")
    th = np.concatenate([a_inertial @ psi.value, theta_f.value if p > q_i else np.zeros(0)])
    fit = Fit(th, base.cov, base.sigma, ne.rmse(th), "feasible")
    return fit, np.asarray(psi.value)


def consistency_gap(a_inertial: np.ndarray, theta_inertial: np.ndarray, n_links: int) -> float:
    """min ‖A ψ − θ_I‖ / ‖θ_I‖ over physically consistent ψ: 0 (solver precision) iff θ_I is realisable
    by real bodies and non-negative rotor inertias."""
    import cvxpy as cp  # noqa: PLC0415 - heavy import, only the consistency check needs it

    psi = cp.Variable(a_inertial.shape[1])
    cons = [_pseudo_inertia_expr(cp, psi[10 * i:10 * i + 10]) >> 0 for i in range(n_links)]
    cons.append(psi[10 * n_links:] >= 0)
    prob = cp.Problem(cp.Minimize(cp.norm(a_inertial @ psi - theta_inertial)), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value) / max(float(np.linalg.norm(theta_inertial)), 1e-300)
