"""Recursive least squares with its own noise estimate (Xu 2024 eq. 8–11).

Xu's update for one sample of n joint equations Y θ ≈ τ,

    K = P Yᵀ (ξ 1 + Y P Yᵀ)⁻¹,   θ ← θ + K (τ − Y θ),   P ← P − K Y P,

is the Kalman update with measurement variance ξ; for a diagonal measurement covariance it equals
n rank-one updates, one per joint row (update_rows). The block form costs fewer numpy calls for
n ≤ 7 joints, which is what keeps one update well under 100 µs in Python. Per-row variances r_j replace ξ when the joints' noise
differs. An optional forgetting factor λ ≤ 1 divides P after each sample (λ = 1: none; Xu's
"forgetting factor" ξ = 100 is the measurement variance above, not this λ).

Uncertainty: with the row variances only known up to a common factor s², the true covariance is
s² P. The weighted cost of the least-squares solution grows by e²/(r_j + yᵀPy) per row (the
normalised innovation), so s² = cost / (rows − unknowns) is estimated on the fly.
"""

from __future__ import annotations

import numpy as np


class RecursiveLeastSquares:
    """θ̂ and P for rows y_jᵀ θ ≈ z_j with variance r_j (up to a common factor, estimated)."""

    def __init__(self, theta0: np.ndarray, P0: np.ndarray, row_variance: np.ndarray | float,
                 forgetting: float = 1.0, joseph: bool = False):
        self.theta = np.array(theta0, dtype=float)
        self.P = np.array(P0, dtype=float)
        self.u = self.theta.size
        self.row_variance = np.atleast_1d(np.asarray(row_variance, dtype=float))
        self.forgetting = float(forgetting)
        self.cost = 0.0
        self.rows = 0
        self.samples = 0
        self.joseph = bool(joseph)
        self._eye = np.eye(self.u)
        n_rows = self.row_variance.size
        self._diag = (np.arange(n_rows), np.arange(n_rows)) if n_rows > 1 else None

    def _ensure_diag(self, n: int) -> None:
        if self._diag is None or self._diag[0].size != n:
            self._diag = (np.arange(n), np.arange(n))

    def update(self, Y: np.ndarray, z: np.ndarray) -> None:
        """One sample: Y (n, u), z (n,), all rows at once (Xu eq. 8–11 with R = diag(r))."""
        if self._diag is None or self._diag[0].size != Y.shape[0]:
            self._ensure_diag(Y.shape[0])
        P = self.P
        PYt = P @ Y.T
        S = Y @ PYt
        S[self._diag] += self.row_variance if self.row_variance.size > 1 else self.row_variance[0]
        S_inv = np.linalg.inv(S)
        e = z - Y @ self.theta
        K = PYt @ S_inv
        self.theta += K @ e
        if self.joseph:
            # Joseph form: stays symmetric positive definite under round-off when the prior P0 is far
            # larger than what the data leave (the plain P − K Y P then loses definiteness and diverges).
            A = self._eye - K @ Y
            self.P = P = A @ P @ A.T + (K * self._r_vec(Y.shape[0])) @ K.T
        else:
            P -= K @ PYt.T
        if self.forgetting != 1.0:
            P /= self.forgetting
        self.cost += float(e @ S_inv @ e)
        self.rows += Y.shape[0]
        self.samples += 1

    def _r_vec(self, n: int) -> np.ndarray:
        return self.row_variance if self.row_variance.size > 1 else np.full(n, self.row_variance[0])

    def update_rows(self, Y: np.ndarray, z: np.ndarray) -> None:
        """The same update as n rank-one steps (no matrix inverse): for samples with many rows."""
        theta, P = self.theta, self.P
        r = self.row_variance
        cost = 0.0
        for j in range(Y.shape[0]):
            y = Y[j]
            Py = P @ y
            s = (r[j] if r.size > 1 else r[0]) + y @ Py
            e = z[j] - y @ theta
            k = Py / s
            theta += k * e
            P -= np.outer(k, Py)
            cost += e * e / s
        if self.forgetting != 1.0:
            P /= self.forgetting
        self.cost += cost
        self.rows += Y.shape[0]
        self.samples += 1

    def noise_scale2(self) -> float:
        """s²: the factor between the assumed row variances and the residuals actually seen."""
        dof = self.rows - self.u
        return self.cost / dof if dof > 0 else float("nan")

    def covariance(self) -> np.ndarray:
        """s² P, the covariance of θ̂ (symmetrised)."""
        s2 = self.noise_scale2()
        P = 0.5 * (self.P + self.P.T)
        return P * (s2 if np.isfinite(s2) else 1.0)
