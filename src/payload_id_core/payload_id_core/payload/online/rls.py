"""Recursive least squares with its own noise estimate (Xu 2024 eq. 8–11).

Xu's update for one sample of n joint equations Y θ ≈ τ,

    K = P Yᵀ (ξ 1 + Y P Yᵀ)⁻¹,   θ ← θ + K (τ − Y θ),   P ← P − K Y P,

is the Kalman update with measurement variance ξ (per-row variances r_j replace ξ when the joints'
noise differs). It is computed in square-root form: with S = R + Y P Yᵀ = L Lᵀ (Cholesky) and
H = P Yᵀ L⁻ᵀ, w = L⁻¹ (τ − Y θ),

    θ ← θ + H w,   P ← P − H Hᵀ,

so P stays exactly symmetric (P − H Hᵀ is one in-place BLAS dgemm: its (i, j) and (j, i) entries are the same
products summed in the same order, the numbers of the syrk H Hᵀ subtracted, test_speed_paths) and costs one rank-n
downdate instead of the Joseph form's two dense u×u products: one update of Xu's 58 unknowns (64 with the
load-dependent friction) takes ~10 µs of a ~25 µs sample (issue 35). An optional forgetting factor λ ≤ 1 divides
P after each sample (λ = 1: none; Xu's "forgetting factor" ξ = 100 is the measurement variance above, not this λ).

Several samples at once (update(Y, z) with the rows of B samples stacked, `samples=B`) give the same
θ and P as B single updates: the Kalman update of a block equals the sequence of its rows' updates
(with λ ≠ 1 the rows of sample i get the variance r·λ^(i−1) and P is divided by λ^B at the end).

Uncertainty: with the row variances only known up to a common factor s², the true covariance is
s² P. The weighted cost of the least-squares solution grows by the normalised innovation wᵀw per
update (for a block, the same as the sum over its samples when λ = 1), so s² = cost / (rows −
unknowns) is estimated on the fly.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas, lapack

dpotrf, dtrtri, dgemm = lapack.dpotrf, lapack.dtrtri, blas.dgemm


class RecursiveLeastSquares:
    """θ̂ and P for rows y_jᵀ θ ≈ z_j with variance r_j (up to a common factor, estimated)."""

    def __init__(self, theta0: np.ndarray, P0: np.ndarray, row_variance: np.ndarray | float,
                 forgetting: float = 1.0, joseph: bool = False):
        self.theta = np.array(theta0, dtype=float)
        self.P = np.array(P0, dtype=float)
        self.P = 0.5 * (self.P + self.P.T)
        self.u = self.theta.size
        self.row_variance = np.atleast_1d(np.asarray(row_variance, dtype=float))
        self.forgetting = float(forgetting)
        self.cost = 0.0
        self.rows = 0
        self.samples = 0
        # Kept for callers of the former API: the square-root update is symmetric and positive
        # semidefinite by construction, which is what the Joseph form was for.
        self.joseph = bool(joseph)
        self._rv_cache: dict[int, np.ndarray] = {}
        self._rv_last: tuple[int, np.ndarray] = (-1, np.empty(0))
        # Work arrays per row count m: G (u, m), S (m, m), S's diagonal, the innovation (m,), H (u, m), the step of θ.
        self._work: dict[int, tuple[np.ndarray, ...]] = {}

    def _variances(self, rows: int, samples: int) -> np.ndarray:
        key = rows * 1000 + samples
        if key == self._rv_last[0]:
            return self._rv_last[1]
        r = self._rv_cache.get(key)
        if r is None:
            per = rows // samples
            base = self.row_variance if self.row_variance.size == per else np.full(per, self.row_variance[0])
            r = np.tile(base, samples)
            if self.forgetting != 1.0:
                r = r * np.repeat(self.forgetting ** np.arange(samples), per)
            self._rv_cache[key] = r
        self._rv_last = (key, r)
        return r

    def update(self, Y: np.ndarray, z: np.ndarray, samples: int = 1) -> None:
        """Y (rows, u), z (rows,): one sample's joint equations (Xu eq. 8–11 with R = diag(r)), or
        the rows of `samples` consecutive samples stacked in time order."""
        m = Y.shape[0]
        P = self.P
        work = self._work.get(m)
        if work is None:                                # work arrays per row count, allocated once
            S = np.empty((m, m))
            u = self.u
            work = self._work[m] = (np.empty((u, m)), S, S.ravel()[::m + 1], np.empty(m), np.empty((u, m)),
                                    np.empty(u))
        G, S, diagonal, innovation, H, step = work
        # ndarray.dot, not np.dot or matmul: the same BLAS call on 2-D operands (the same numbers) with the least
        # set-up (np.dot goes through its Python dispatcher first: ~0.1 µs each). The LAPACK and BLAS wrappers take
        # their flags by position: parsing keywords costs them ~0.3 µs a call (issue 35).
        P.dot(Y.T, out=G)                               # (u, m)
        Y.dot(G, out=S)
        diagonal += self._variances(m, samples)         # a view of S's diagonal
        L, info = dpotrf(S, 1, 1, 1)                    # lower, clean, overwrite_a
        if info != 0:
            raise np.linalg.LinAlgError("innovation covariance not positive definite")
        Li, _ = dtrtri(L, 1, 0, 1)                      # lower, not unit diagonal, overwrite_c
        Y.dot(self.theta, out=innovation)
        w = Li.dot(np.subtract(z, innovation, out=innovation))
        G.dot(Li.T, out=H)
        self.theta += H.dot(w, out=step)
        # P − H Hᵀ in one BLAS call, in place: P is symmetric, so its transpose is the Fortran-ordered array dgemm
        # overwrites (the same numbers as P -= H @ H.T: test_speed_paths). A P not C-ordered is copied by the call.
        Pt = P.T
        done = dgemm(-1.0, H, H, 1.0, Pt, 0, 1, 1)      # beta, c, trans_a, trans_b, overwrite_c
        if done is not Pt:
            P[...] = done.T
        if self.forgetting != 1.0:
            P /= self.forgetting ** samples
        self.cost += float(w.dot(w))
        self.rows += m
        self.samples += samples

    def update_rows(self, Y: np.ndarray, z: np.ndarray) -> None:
        """The same update as n rank-one steps (no matrix factorisation)."""
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
