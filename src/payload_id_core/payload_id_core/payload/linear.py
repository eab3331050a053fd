"""Linear estimation shared by the payload methods: weighted least squares with covariance.

Khalil 2007 §III: the equations of joint j are weighted by the inverse standard deviation of that
joint's residual (eq. 17–21: σ² = ‖r‖²/(r − c), C = σ² (WᵀW)⁻¹). Unknowns the data cannot
determine (identifiable_entries) are solved for by the minimum-norm solution in column-scaled
coordinates, which leaves every determined entry unique, and are then reported as unknown.

The rows are time samples × joints, and real residuals are serially correlated (filtered efforts,
unmodelled effects): the eq. 21 covariance is widened by the common factor that makes every
parameter's variance at least its Newey–West value (robot_id/serial_correlation.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.jacobian import LIVE_RTOL, RANK_RTOL, identifiable_entries, in_row_space
from payload_id_core.robot_id import serial_correlation


@dataclass
class LinearSolution:
    x: np.ndarray              # (u,) estimate (undetermined entries: minimum-norm value)
    cov: np.ndarray            # (u, u); NaN rows/columns for undetermined entries
    identifiable: np.ndarray   # (u,) bool
    sigma: np.ndarray          # (n,) residual standard deviation per joint (or per row group)
    rows: int
    bandwidth: int = 0         # lags (samples) the covariance sums residual correlation over
    inflation: float = 1.0     # factor on the standard deviations for that correlation (≥ 1)
    # The Newey–West covariance itself (NaN where undetermined), each variance floored at its textbook value:
    # what each parameter's own residual correlation measures, where `cov` takes the largest ratio over all of
    # them (a worst case for the others). None without a serial-correlation analysis (generalized_lstsq).
    hac_cov: np.ndarray | None = None
    # (u,) 1/s² of a zero-mean Gaussian prior each unknown was held by (0: free), the fit's ridge rows
    # (weighted_lstsq's prior_std); None: no prior.
    prior_info: np.ndarray | None = None

    def measured_cov(self) -> np.ndarray:
        """The covariance to report when the estimate's own serial correlation is to set it: hac_cov, else cov."""
        return self.cov if self.hac_cov is None else self.hac_cov


# The online convergence rule's batch check (`gram=True` below) solves from the Gram matrix AᵀA where the
# column-scaled A's condition number is at most this: x and (AᵀA)^# then to ~κ² ε ≤ 1e-10 relative, and no singular
# value is near RANK_RTOL (1e-8) of the largest, so the rank analysis is the SVD's. Above it, or with a dead column,
# the SVD as before. On the simulated cell's check κ is 13-28 (bench/batch_check.py's run, 2 s of samples).
GRAM_MAX_COND = 1e3


class _ScaledSvd(NamedTuple):
    """The SVD u s vt of A with its columns scaled to unit norm (`norms`; `dead` columns, at round-off of the
    largest, zeroed). From the Gram matrix (`of(A, gram=True)`), `u` is None and `A` is kept: uᵀy = s⁻¹ vt Asᵀy."""

    norms: np.ndarray
    dead: np.ndarray
    u: np.ndarray | None
    s: np.ndarray
    vt: np.ndarray
    A: np.ndarray | None = None

    @classmethod
    def of(cls, A: np.ndarray, gram: bool = False) -> _ScaledSvd:
        """`gram`: from AᵀA's eigen-decomposition where the scaled A is well conditioned (GRAM_MAX_COND), every
        column live and A at least twice as tall as wide; else (and by default) A's SVD. The SVD of a tall A costs
        ~25 times the product AᵀA (30000 × 32: 59 against 2.2 ms of CPU), and the online rule's batch check made 9
        of them over every sample fed (bench/batch_check.py)."""
        if gram and A.shape[0] >= 2 * A.shape[1] > 0:
            svd = cls._from_gram(A)
            if svd is not None:
                return svd
        norms = np.linalg.norm(A, axis=0)
        dead = norms <= LIVE_RTOL * norms.max() if norms.size and norms.max() > 0 else np.ones(norms.size, dtype=bool)
        norms[dead] = 1.0
        As = A / norms
        As[:, dead] = 0.0
        u, s, vt = np.linalg.svd(As, full_matrices=False)
        return cls(norms, dead, u, s, vt)

    @classmethod
    def _from_gram(cls, A: np.ndarray) -> _ScaledSvd | None:
        """The SVD of the column-scaled A from the eigen-decomposition of its Gram matrix (s² and vt), None where
        that is not as good as A's own (a dead column, or a condition number above GRAM_MAX_COND)."""
        G = A.T @ A
        norms = np.sqrt(np.maximum(np.diag(G), 0.0))
        if not norms.size or not np.all(norms > LIVE_RTOL * norms.max()):
            return None
        evals, V = np.linalg.eigh(G / np.outer(norms, norms))
        evals, V = evals[::-1], V[:, ::-1]          # descending, as the SVD orders them
        if not evals[-1] > evals[0] / GRAM_MAX_COND**2:
            return None
        return cls(norms, np.zeros(norms.size, dtype=bool), None, np.sqrt(evals), np.ascontiguousarray(V.T), A)

    def identifiable(self) -> np.ndarray | None:
        """identifiable_entries of A from this SVD, when it is the one that function makes (no dead column); None
        otherwise."""
        if self.dead.any() or not self.s.size:
            return None
        return in_row_space(self.s, self.vt)

    def solve(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """_scaled_pinv_solve's answer for A and `y`."""
        s, vt, norms = self.s, self.vt, self.norms
        keep = s > RANK_RTOL * s[0] if s.size and s[0] > 0 else np.zeros_like(s, dtype=bool)
        inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        per_rhs = (slice(None),) + (None,) * (np.ndim(y) - 1)
        if self.u is not None:
            uty = self.u.T @ y
        else:
            assert self.A is not None
            uty = (vt @ ((self.A.T @ y) / norms[per_rhs])) / s[per_rhs]
        xs = vt.T @ (inv_s[per_rhs] * uty)
        gram_pinv_s = (vt.T * inv_s**2) @ vt
        x = xs / norms[per_rhs]
        gram_pinv = gram_pinv_s / np.outer(norms, norms)
        return x, gram_pinv


def _scaled_pinv_solve(A: np.ndarray, y: np.ndarray, gram: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-norm LS in column-scaled coordinates; returns (x, (AᵀA)^# in original units). `y` (rows,) or
    (rows, k): k right-hand sides, x then (u, k). `gram`: _ScaledSvd.of's."""
    return _ScaledSvd.of(A, gram).solve(y)


def prior_information(prior_std: np.ndarray | None, u: int) -> np.ndarray | None:
    """(u,) 1/s² of each unknown's zero-mean Gaussian prior std `prior_std` (inf or NaN: free, 0 there); None when
    no unknown has one (the fit is then the plain one, to the bit)."""
    if prior_std is None:
        return None
    std = np.asarray(prior_std, dtype=float).reshape(u)
    held = np.isfinite(std) & (std > 0)
    if not held.any():
        return None
    return np.where(held, 1.0 / np.where(held, std, 1.0)**2, 0.0)


def _with_ridge(A: np.ndarray, b: np.ndarray, prior_info: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The weighted rows A, b with the prior's ridge rows (√info on the unknown's column, target 0) below them."""
    if prior_info is None:
        return A, b
    held = np.flatnonzero(prior_info > 0)
    ridge = np.zeros((held.size, A.shape[1]))
    ridge[np.arange(held.size), held] = np.sqrt(prior_info[held])
    return np.vstack([A, ridge]), np.concatenate([b, np.zeros((held.size,) + b.shape[1:])])


def weighted_lstsq(W: np.ndarray, y: np.ndarray, *, iterate_weights: bool = True,
                   sigma: np.ndarray | None = None, time_slots: np.ndarray | None = None,
                   prior_std: np.ndarray | None = None, gram: bool = False, covariance: bool = True
                   ) -> LinearSolution:
    """Per-joint weighted LS of y (N, n) ≈ W (N, n, u) x (Khalil 2007 §III, eq. 16–21).

    Weights 1/σ_j come from the residuals of a first ordinary solution (iterate_weights), or are
    given as `sigma` (n,). The covariance is σ-scaled (WᵀΣ⁻¹W)^# on the determined entries, times the
    residuals' serial-correlation inflation (Newey–West over time samples, rows grouped n per sample).
    `time_slots` (N,): each sample's place on the time axis its residual is correlated along (default its
    row: one run); samples of two runs of one trajectory at the same point of it share a slot, their scores
    summed before the Newey–West sum (serial_correlation.slot_sums), the bandwidth still the rows' own.
    `prior_std` (u,): a zero-mean Gaussian prior's std on each unknown (inf: free), as ridge rows below the weighted
    ones: x is the maximum a posteriori estimate, P = (WᵀΣ⁻¹W + S⁻¹)⁻¹, and its Newey–West covariance holds the
    prior's pull P S⁻¹ P (the bias of an unknown that truly moved by its prior std; with white residuals the two
    sum to P). The weights σ_j come from the fit without the prior (the free fit's residual, consistent whether
    or not the held unknowns moved within it), and which entries are determined from the data alone.
    `gram`: both solves from the Gram matrix where it is as good as the SVD (_ScaledSvd.of, GRAM_MAX_COND): the
    online convergence rule's batch check, which repeats this fit over every sample fed.
    `covariance=False`: x alone, for a caller that reads nothing else (load_friction's first solve, whose x only
    builds the columns of the second): cov and hac_cov NaN, no serial-correlation analysis (a third of the check's
    cost at 30 s of samples), x and the determined entries the same to the bit.
    """
    W = np.asarray(W, dtype=float)
    y = np.asarray(y, dtype=float)
    N, n, u = W.shape
    if N * n <= u:
        raise PayloadIdError(f"only {N} samples of {n} joints for {u} unknowns",
                             "record a longer excitation")
    A = W.reshape(N * n, u)
    b = y.reshape(N * n)
    ok = None
    prior_info = prior_information(prior_std, u)
    if sigma is None:
        # The first, unweighted solve decomposes the matrix the rank analysis does: one SVD for both (two of the
        # three SVDs of the batch fit the online convergence rule repeats over every sample fed).
        plain = _ScaledSvd.of(A, gram)
        ok = plain.identifiable()
        x, _ = plain.solve(b)
        r = (b - A @ x).reshape(N, n)
        dof = max(N - u / n, 1.0)
        sigma = np.sqrt(np.sum(r**2, axis=0) / dof)
        if not iterate_weights:
            sigma = np.full(n, np.sqrt(np.sum(r**2) / max(N * n - u, 1)))
    if ok is None:
        ok = identifiable_entries(A)
    sigma = np.maximum(np.asarray(sigma, dtype=float).reshape(n), 1e-12)
    w = np.tile(1.0 / sigma, N)
    Aw = A * w[:, None]        # the weighted rows, made once: the solve and the scores both read them
    x, gram_pinv = _scaled_pinv_solve(*_with_ridge(Aw, b * w, prior_info), gram=gram)
    if not covariance:
        unknown = np.full((u, u), np.nan)
        return LinearSolution(x, unknown, ok, sigma, N * n, hac_cov=unknown, prior_info=prior_info)
    r = ((b - A @ x) * w)
    # Residuals are normalised by σ_j: their variance should be 1; any misfit scales the covariance.
    dof = max(N * n - int(ok.sum()), 1)
    scale2 = float(r @ r) / dof
    cov = gram_pinv * scale2
    lags, factor2 = 0, 1.0
    hac_cov = cov.copy()
    if ok.any():
        rt = r.reshape(N, n)
        lags = serial_correlation.bandwidth(rt)
        scores = np.einsum("tjk,tj->tk", _columns_outermost(Aw, ok, N, n), rt)
        if time_slots is not None:
            scores = serial_correlation.slot_sums(scores, time_slots)
        hac = serial_correlation.sandwich(gram_pinv[np.ix_(ok, ok)], scores, lags, N * n / dof)
        if prior_info is not None:
            bread = gram_pinv[np.ix_(ok, ok)]
            hac = hac + (bread * prior_info[ok]) @ bread
        factor2 = serial_correlation.variance_inflation(hac, cov[np.ix_(ok, ok)])
        hac_cov[np.ix_(ok, ok)] = serial_correlation.floored(hac, cov[np.ix_(ok, ok)])
        cov = cov * factor2
    for c in (cov, hac_cov):
        c[~ok, :] = np.nan
        c[:, ~ok] = np.nan
    return LinearSolution(x, cov, ok, sigma * np.sqrt(scale2), N * n, lags, float(np.sqrt(factor2)), hac_cov,
                          prior_info)


# Rows per block of _columns_outermost's transposing copy: a block stays in the cache while it is written (15000
# samples × 6 joints × 34 columns: 5.7 ms at 512 rows, 6.7 at 2048, 10.7 the boolean index's one-piece copy).
TRANSPOSE_BLOCK_ROWS = 512


def _columns_outermost(A: np.ndarray, ok: np.ndarray, N: int, n: int) -> np.ndarray:
    """A (N·n, u)'s columns `ok` as (N, n, k) with the columns outermost in memory: the array A.reshape(N, n, u)[...,
    ok] is, values and layout (a boolean index over the last axis puts that axis first). np.einsum sums each sample's
    joints in an order set by the layout (a joint-contiguous dot product, fused multiply-adds where the machine has
    them), so weighted_lstsq's Newey–West scores keep their bits only in this one; copied a block of rows at a time,
    which costs a third of the one-piece transposing copy the index makes over every sample fed (15000 samples × 32
    columns: ~7 against ~20 ms, the online rule's batch check making four)."""
    cols = np.flatnonzero(ok)
    out = np.empty((cols.size, A.shape[0]))
    every = cols.size == A.shape[1]
    for i in range(0, A.shape[0], TRANSPOSE_BLOCK_ROWS):
        block = A[i:i + TRANSPOSE_BLOCK_ROWS]
        out[:, i:i + TRANSPOSE_BLOCK_ROWS] = block.T if every else block[:, cols].T
    return out.T.reshape(N, n, cols.size)


def weighted_response(W: np.ndarray, y: np.ndarray, sigma: np.ndarray, prior_info: np.ndarray | None = None,
                      gram: bool = False) -> np.ndarray:
    """x of weighted_lstsq(W, y, sigma=sigma) alone, no covariance: how that fit moves for a change y of its torques,
    e.g. a predicted model error. The same weighted (and ridged) rows are decomposed as that fit's solve decomposes
    them, so the directions it truncates (singular values below RANK_RTOL of the largest, in column-scaled
    coordinates) are truncated here too and x is that fit's to rounding; only the structural rank analysis
    (identifiable_entries, a second SVD of the unweighted rows) is not made. `prior_info`: that fit's prior
    (LinearSolution.prior_info), whose ridge rows hold the unknowns it held. `y` (N, n), or (N, n, k) for k changes
    at once (x then (u, k)). `gram`: weighted_lstsq's."""
    W = np.asarray(W, dtype=float)
    N, n, u = W.shape
    y = np.asarray(y, dtype=float)
    w = np.tile(1.0 / np.maximum(np.asarray(sigma, dtype=float).reshape(n), 1e-12), N)
    rhs = y.reshape((N * n,) + y.shape[2:])
    A, b = _with_ridge(W.reshape(N * n, u) * w[:, None], rhs * w[(slice(None),) + (None,) * (rhs.ndim - 1)],
                       prior_info)
    x, _ = _scaled_pinv_solve(A, b, gram)
    return x


def generalized_lstsq(J: np.ndarray, eps: np.ndarray, C: np.ndarray,
                      measured_C: np.ndarray | None = None) -> LinearSolution:
    """z minimising (ε − J z)ᵀ C⁻¹ (ε − J z): the payload from a parameter difference weighted by its
    covariance (Gaz 2017 eq. 28, J_ε^# ε, with the weighting asked for in Xu's conversion).

    `measured_C`: ε's covariance as measured when it differs from the weighting metric C (C a common multiple
    of the textbook covariance, measured_C each parameter's own Newey–West one: LinearSolution.hac_cov); the
    solution's hac_cov is then z's covariance under it, G measured_C Gᵀ with G the weighted solve's linear map,
    the estimate unchanged."""
    J = np.asarray(J, dtype=float)
    eps = np.asarray(eps, dtype=float)
    C = 0.5 * (np.asarray(C, dtype=float) + np.asarray(C, dtype=float).T)
    d = np.sqrt(np.maximum(np.diag(C), 0.0))
    d[d == 0] = 1.0
    Cs = C / np.outer(d, d)
    # Whitening by the symmetric inverse square root; near-singular directions (parameters the
    # data fixed exactly, e.g. on noise-free data) are kept with a floor instead of dropped.
    evals, evecs = np.linalg.eigh(Cs)
    floor = evals.max() * 1e-12 if evals.max() > 0 else 1.0
    L = (evecs / np.sqrt(np.maximum(evals, floor))) @ evecs.T / d[None, :]
    A = L @ J
    b = L @ eps
    ok = identifiable_entries(A)
    x, gram_pinv = _scaled_pinv_solve(A, b)
    cov = gram_pinv.copy()
    measured = None
    if measured_C is not None:
        G = gram_pinv @ A.T @ L
        measured = G @ np.nan_to_num(np.asarray(measured_C, dtype=float)) @ G.T
        measured = 0.5 * (measured + measured.T)
    for c in (cov,) if measured is None else (cov, measured):
        c[~ok, :] = np.nan
        c[:, ~ok] = np.nan
    return LinearSolution(x, cov, ok, np.array([1.0]), J.shape[0], hac_cov=measured)
