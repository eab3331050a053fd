"""Friction shape parameters (α of Xu 2024 eq. 2, Stribeck velocity, Tadese 2022's σ3, σ4) and their
share of the uncertainty.

The friction model is linear in its coefficients θ_f but not in its shape. Shapes are found per
joint by an outer search around the linear least squares, the inner problem staying linear (the
two-level scheme Xu 2024 uses for α), then refined jointly for all joints by Gauss–Newton
(variable projection). The covariance of θ is marginal over those shapes: θ's block of the
Gauss–Newton covariance of [θ, shapes] (shape_marginal_covariance); the shapes' own std goes to
robot.yaml (friction.shape_std).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from payload_id_core.dynamics.friction import FrictionModel, joint_columns, smooth_sign
from payload_id_core.robot_id.estimators import NormalEquations

_SHAPE_SEARCH_SAMPLES = 8000


# -- per-joint search -----------------------------------------------------------------------------

def search_friction_shape(friction: FrictionModel, wi: np.ndarray, tau: np.ndarray, qd: np.ndarray,
                          temperature: np.ndarray | None) -> FrictionModel:
    """Per joint: the shape minimising the residual of that joint's torques with its friction columns
    and every inertial column free (a profile least squares; Xu 2024 identifies α_j this way, around
    the linear problem). 1-D: coarse grid then bounded Brent; 2-D: grid then Nelder–Mead."""
    bounds = friction.shape_bounds
    if not bounds:
        return friction
    shape = friction.shape.copy()
    for j in range(friction.n):
        # A few thousand samples pin one or two shape numbers down; more only cost time.
        rows = slice(None, None, max(1, wi.shape[0] // _SHAPE_SEARCH_SAMPLES))
        a = wi[rows, j, :]
        a = np.ascontiguousarray(a[:, np.abs(a).max(axis=0) > 0])
        at = np.ascontiguousarray(a.T)
        y = np.ascontiguousarray(tau[rows, j])
        v = np.ascontiguousarray(qd[rows, j])
        # Normal equations of [A F] with A fixed: only the F blocks change per evaluation.
        ata, aty, yty = at @ a, at @ y, float(y @ y)
        temp = None if temperature is None else np.ascontiguousarray(temperature[rows, j])

        def cost(x, at=at, ata=ata, aty=aty, yty=yty, y=y, v=v, temp=temp):
            s = np.array([np.exp(c) if b[2] else c for c, b in zip(x, bounds)])
            f = joint_columns(friction.kind, v, s, temp, friction.sign_epsilon)
            af = at @ f
            g = np.block([[ata, af], [af.T, f.T @ f]])
            rhs = np.concatenate([aty, y @ f])
            dg = np.sqrt(np.diag(g))
            coef = np.linalg.lstsq(g / np.outer(dg, dg), rhs / dg, rcond=1e-13)[0]
            return float(yty - (rhs / dg) @ coef)

        lo = np.array([np.log(b[0]) if b[2] else b[0] for b in bounds])
        hi = np.array([np.log(b[1]) if b[2] else b[1] for b in bounds])
        if len(bounds) == 1:
            grid = np.linspace(lo[0], hi[0], 15)
            costs = [cost([g]) for g in grid]
            k = int(np.argmin(costs))
            a_, b_ = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
            res = minimize_scalar(lambda x: cost([x]), bounds=(a_, b_), method="bounded",
                                  options={"xatol": 1e-4 * (hi[0] - lo[0])})
            x = np.array([res.x if res.fun <= costs[k] else grid[k]])
        else:
            axes = [np.linspace(lo[i], hi[i], 7) for i in range(len(bounds))]
            pts = np.array(np.meshgrid(*axes)).reshape(len(bounds), -1).T
            costs = [cost(p) for p in pts]
            x0 = pts[int(np.argmin(costs))]
            res = minimize(cost, x0, method="Nelder-Mead", bounds=list(zip(lo, hi)),
                           options={"xatol": 1e-4, "fatol": 1e-10 * max(min(costs), 1e-30), "maxiter": 200})
            x = res.x if res.fun <= min(costs) else x0
        shape[j] = [np.exp(v) if b[2] else v for v, b in zip(x, bounds)]
    return friction.with_shape(shape)


# -- joint refinement and the shapes' share of the uncertainty ------------------------------------

def _shape_derivative_columns(friction: FrictionModel, v: np.ndarray, shape_j: np.ndarray, theta_fj: np.ndarray,
                              temp: np.ndarray | None) -> np.ndarray:
    """(N, s): ∂τ_f,j/∂s_i = (∂F_j/∂s_i) θ_f,j for one joint, by central differences (relative step
    1e-5: truncation ~1e-10, far below the noise; shape parameters are all positive)."""
    if friction.kind == "nonlinear":   # ∂/∂α (|q̇|^α sgn q̇) = |q̇|^α ln|q̇| sgn q̇ (→ 0 at q̇ = 0)
        av = np.abs(v)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(av > 0, av ** shape_j[0] * np.log(av), 0.0)
        return (d * smooth_sign(v, friction.sign_epsilon) * theta_fj[1])[:, None]
    out = np.empty((v.size, shape_j.size))
    for i in range(shape_j.size):
        h = 1e-5 * max(abs(shape_j[i]), 1e-3)
        up, dn = shape_j.copy(), shape_j.copy()
        up[i] += h
        dn[i] -= h
        out[:, i] = (joint_columns(friction.kind, v, up, temp, friction.sign_epsilon)
                     - joint_columns(friction.kind, v, dn, temp, friction.sign_epsilon)) @ theta_fj / (2 * h)
    return out


@dataclass
class ShapeProblem:
    """Per-joint blocks of the joint problem in x = [θ (p), s (n·ns)]: τ_j = W_j(s_j) θ + noise.

    The inertial columns never change, so their Gram blocks are formed once; each evaluation only
    forms the friction (and shape-derivative) columns of every joint and their products."""

    friction: FrictionModel
    a: list[np.ndarray]         # per joint (N, pi) contiguous inertial columns
    gi: np.ndarray              # (n, pi, pi)
    bi: np.ndarray              # (n, pi)
    tt: np.ndarray              # (n,)
    tau: list[np.ndarray]       # per joint (N,)
    qd: list[np.ndarray]
    temp: list[np.ndarray | None]

    @classmethod
    def build(cls, friction: FrictionModel, wi: np.ndarray, tau: np.ndarray, qd: np.ndarray,
              temperature: np.ndarray | None) -> ShapeProblem:
        n = friction.n
        a = [np.ascontiguousarray(wi[:, j, :]) for j in range(n)]
        ys = [np.ascontiguousarray(tau[:, j]) for j in range(n)]
        return cls(friction, a, np.array([x.T @ x for x in a]), np.array([x.T @ y for x, y in zip(a, ys)]),
                   np.array([y @ y for y in ys]), ys, [np.ascontiguousarray(qd[:, j]) for j in range(n)],
                   [None if temperature is None else np.ascontiguousarray(temperature[:, j]) for j in range(n)])

    def system(self, shape: np.ndarray, weights: np.ndarray, theta: np.ndarray | None = None):
        """Weighted normal equations (H, r, Σ w τᵀτ) of the columns [W(s)] (theta None) or of the
        Gauss–Newton Jacobian [W(s), ∂(W θ)/∂s] at θ."""
        fm, n = self.friction, self.friction.n
        pi, k = self.gi.shape[1], fm.per_joint
        ns = shape.shape[1] if theta is not None else 0
        p = pi + n * k
        size = p + n * ns
        h, r = np.zeros((size, size)), np.zeros(size)
        h[:pi, :pi] = np.einsum("j,jik->ik", weights, self.gi)
        r[:pi] = weights @ self.bi
        for j in range(n):
            c = joint_columns(fm.kind, self.qd[j], shape[j], self.temp[j], fm.sign_epsilon)
            idx = pi + j * k + np.arange(k)
            if theta is not None and ns:   # ns > 0 only with θ, said again for the type checker
                c = np.column_stack([c, _shape_derivative_columns(fm, self.qd[j], shape[j],
                                                                  theta[idx], self.temp[j])])
                idx = np.concatenate([idx, p + j * ns + np.arange(ns)])
            x = self.a[j].T @ c
            h[:pi, idx] += weights[j] * x
            h[idx, :pi] += weights[j] * x.T
            h[np.ix_(idx, idx)] += weights[j] * (c.T @ c)
            r[idx] += weights[j] * (c.T @ self.tau[j])
        return h, r, float(weights @ self.tt)

    def normal_equations(self, shape) -> NormalEquations:
        """Per-joint normal equations of [W_inertial, F(s)] from the cached inertial blocks."""
        fm, n = self.friction, self.friction.n
        pi, k = self.gi.shape[1], fm.per_joint
        p = pi + n * k
        gram, rhs = np.zeros((n, p, p)), np.zeros((n, p))
        gram[:, :pi, :pi], rhs[:, :pi] = self.gi, self.bi
        for j in range(n):
            c = joint_columns(fm.kind, self.qd[j], shape[j], self.temp[j], fm.sign_epsilon)
            idx = pi + j * k + np.arange(k)
            x = self.a[j].T @ c
            gram[j][:pi, idx], gram[j][idx, :pi] = x, x.T
            gram[j][np.ix_(idx, idx)] = c.T @ c
            rhs[j, idx] = c.T @ self.tau[j]
        pj = np.count_nonzero(np.einsum("jii->ji", gram) > 0, axis=1)
        return NormalEquations(gram, rhs, self.tt.copy(), self.tau[0].size, pj)

    def solve(self, shape, weights):
        """θ(s) of the weighted linear problem and its weighted residual sum of squares."""
        h, r, tt = self.system(shape, weights)
        d = np.sqrt(np.diag(h))
        d = np.where(d > 0, d, 1.0)
        theta = np.linalg.lstsq(h / np.outer(d, d), r / d, rcond=1e-13)[0] / d
        return theta, tt - 2 * theta @ r + theta @ h @ theta


def _scaled_inverse(h: np.ndarray, rcond: float = 1e-12) -> np.ndarray:
    d = np.sqrt(np.diag(h))
    d = np.where(d > 0, d, 1.0)
    return np.linalg.pinv(h / np.outer(d, d), rcond=rcond, hermitian=True) / np.outer(d, d)


def refine_shape_jointly(problem: ShapeProblem, shape: np.ndarray, weights: np.ndarray,
                          max_iter: int = 12) -> np.ndarray:
    """Gauss–Newton on every joint's shape at once, θ re-solved linearly at each step (variable
    projection). The per-joint search frees each joint's inertial columns on its own rows (a
    relaxation of the shared θ), so its shapes are not the weighted least squares of the whole
    model, and only at that estimate does the Jacobian covariance describe the scatter."""
    bounds = problem.friction.shape_bounds
    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    theta, cost = problem.solve(shape, weights)
    p = theta.size
    for _ in range(max_iter):
        h, r, _ = problem.system(shape, weights, theta)
        g = r - h[:, :p] @ theta
        inv = _scaled_inverse(h)
        step = (inv @ g)[p:].reshape(shape.shape)
        # A step below 2 % of the shapes' own std (inv is their covariance: weights 1/σ²) moves
        # nothing the data can tell apart; stop there rather than at machine precision.
        if np.all(np.abs(step) <= 0.02 * np.sqrt(np.maximum(np.diag(inv)[p:], 0.0)).reshape(shape.shape)):
            break
        lam, improved = 1.0, False
        for _ in range(6):
            trial = np.clip(shape + lam * step, lo, hi)
            th, c = problem.solve(trial, weights)
            if c < cost:
                improved = True
                break
            lam /= 2
        if not improved:
            break
        shape, theta, cost = trial, th, c
    return shape


def shape_marginal_covariance(problem: ShapeProblem, shape: np.ndarray, theta: np.ndarray,
                              sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cov of θ marginal over the shapes, std of the shapes (n, ns)).

    The fit is linear in θ given the shapes, and cov(θ) = (WᵀΣ⁻¹W)⁻¹ is conditional on them; the
    shapes are themselves estimated from the same data and trade off with the friction
    coefficients (α against Fc and Fv). Linearising the whole model in x = [θ, s] at the estimate,
    J = [W, ∂(Wθ)/∂s], cov(x) = (JᵀΣ⁻¹J)⁻¹ (Gauss–Newton, same per-joint σ), and θ's block of it is
    the marginal covariance. A shape whose derivative column vanishes (e.g. α with Fv = 0) is not
    identified: NaN std, and it is left out (θ stays conditional on it)."""
    p = theta.size
    h, _, _ = problem.system(shape, 1.0 / np.asarray(sigma, dtype=float) ** 2, theta)
    ns_total = h.shape[0] - p
    diag = np.diag(h)[p:]
    keep = diag > 1e-12 * max(float(np.max(np.diag(h)[:p])), 1e-300)
    idx = np.concatenate([np.arange(p), p + np.flatnonzero(keep)])
    cov = _scaled_inverse(h[np.ix_(idx, idx)])
    shape_std = np.full(ns_total, np.nan)
    shape_std[keep] = np.sqrt(np.maximum(np.diag(cov)[p:], 0.0))
    return cov[:p, :p], shape_std.reshape(shape.shape)
