"""Least-squares covariance that stays honest when the residuals are serially correlated.

The textbook covariance σ² (WᵀW)⁻¹ (Khalil 2007 eq. 5; Tadese 2022 eq. 23–24) assumes the torque residual
of every sample is independent of the next. On real drives it is not: efforts are low-pass filtered
(UR10e: 5 Hz, sampled at 50 Hz) and unmodelled effects vary slowly, so neighbouring residuals share
most of their value. Measured on the UR10e recordings, the variance of a fitted parameter is 15–35×
what the textbook formula says: every σ was 4–6× too small.

The fix is the heteroscedasticity-and-autocorrelation-consistent (HAC) sandwich of Newey & West
(1987) with a Bartlett kernel: with the rows of one time sample t stacked (joints j), the score of
that sample g_t = Σ_j W_tjᵀ ω_j r_tj and the bread B = (Σ_t Σ_j W_tjᵀ ω_j W_tj)⁻¹,

    cov = B S B,   S = Σ_{|l| ≤ L} (1 − |l| / (L + 1)) Σ_t g_t g_{t−l}ᵀ,

which sums the scores' cross products over lags up to the bandwidth L, and so covers the correlation
between joints at the same instant as well (lag 0). The Bartlett sum is computed exactly as
(1 / (L + 1)) Σ over all windows of L + 1 samples (zero-padded) of (window sum)(window sum)ᵀ: one
cumulative sum, O(N k²) whatever L, and positive semidefinite by construction.

Bandwidth: Andrews (1991, Econometrica 59 §6) plug-in for the Bartlett kernel,
L = 1.1447 (α N)^(1/3), α from an AR(1) fit ρ_j of each joint's residual,
α = Σ_j 4 ρ_j² s_j⁴ / ((1 − ρ_j)⁶ (1 + ρ_j)²) / Σ_j s_j⁴ / (1 − ρ_j)⁴. It grows with the correlation
the data show (white noise: L ≈ 0, the plain covariance) and slowly with N, as consistency needs. It
is bounded by N / MIN_BLOCKS so that at least that many effectively independent windows remain.

The HAC matrix is not used as it is: callers scale their textbook covariance by the common
factor `variance_inflation`, the largest ratio of a parameter's HAC variance to its textbook one
(never below 1). A common factor leaves every use of the covariance as a metric unchanged (the
projection onto physically consistent parameters, the covariance-weighted difference methods), so
the estimates stay exactly what they were and only their standard deviations widen; taking the
largest ratio means no parameter's σ is below its HAC value. On white noise the ratios scatter
around 1; a σ that shrank by chance would be a confident claim the data do not support, hence the floor.
"""

from __future__ import annotations

import numpy as np

ANDREWS_BARTLETT = 1.1447   # Andrews 1991 eq. 6.2, Bartlett kernel
MAX_RHO = 0.995             # AR(1) coefficient cap: beyond it the plug-in's α diverges
MIN_BLOCKS = 8              # the bandwidth leaves at least this many windows of the record


def bandwidth(residual: np.ndarray) -> int:
    """Andrews' AR(1) plug-in bandwidth (samples) for the Bartlett kernel, from the residuals (N, n)
    (time in rows, one column per joint), bounded to [0, N / MIN_BLOCKS]."""
    r = np.asarray(residual, dtype=float)
    r = r.reshape(r.shape[0], -1)
    N = r.shape[0]
    if N < 3:
        return 0
    r = r - r.mean(axis=0)
    s2 = np.sum(r ** 2, axis=0)
    live = s2 > 0
    if not live.any():
        return 0
    rho = np.clip(np.sum(r[1:, live] * r[:-1, live], axis=0) / s2[live], -MAX_RHO, MAX_RHO)
    s4 = (s2[live] / N) ** 2
    num = np.sum(4 * rho ** 2 * s4 / ((1 - rho) ** 6 * (1 + rho) ** 2))
    den = np.sum(s4 / (1 - rho) ** 4)
    L = ANDREWS_BARTLETT * (num / den * N) ** (1 / 3)
    return int(min(np.floor(L), N // MIN_BLOCKS))


def long_run_covariance(scores: np.ndarray, lags: int) -> np.ndarray:
    """S = Σ_{|l| ≤ lags} (1 − |l|/(lags + 1)) Σ_t g_t g_{t−l}ᵀ of the scores (N, k), time in rows."""
    g = np.asarray(scores, dtype=float)
    if lags <= 0:
        return g.T @ g
    k = g.shape[1]
    c = np.zeros((g.shape[0] + lags + 1, k))
    np.cumsum(g, axis=0, out=c[1:g.shape[0] + 1])
    c[g.shape[0] + 1:] = c[g.shape[0]]
    # Window sums over [t − lags, t] for every t whose window touches the data (zero padding outside).
    windows = np.concatenate([c[1:lags + 1], c[lags + 1:] - c[:-lags - 1]], axis=0)
    return windows.T @ windows / (lags + 1)


def slot_sums(scores: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """The scores (N, k) summed per slot (N,) of the time axis the residuals are correlated along, slot 0 first
    (a slot no sample falls in holds zeros): the series whose long-run covariance counts two samples that share
    a slot as one observation. Two runs of one trajectory share the robot model's error where they pass the same
    point of it, as neighbouring samples of one run do: their scores at that point are not independent."""
    g = np.asarray(scores, dtype=float)
    idx = np.asarray(slots, dtype=int)
    out = np.zeros((int(idx.max()) + 1 if idx.size else 0, g.shape[1]))
    np.add.at(out, idx, g)
    return out


def sandwich(bread: np.ndarray, scores: np.ndarray, lags: int, dof_ratio: float = 1.0) -> np.ndarray:
    """B S B (module docstring), scaled by `dof_ratio` (rows / (rows − unknowns), the small-sample
    correction the plain covariance makes as well)."""
    S = long_run_covariance(scores, lags)
    cov = bread @ S @ bread * dof_ratio
    return 0.5 * (cov + cov.T)


def variance_inflation(hac: np.ndarray, plain: np.ndarray) -> float:
    """max(1, largest ratio of a parameter's variance under `hac` to its variance under `plain`),
    over the parameters `plain` gives a positive, finite variance."""
    a, b = np.diag(hac), np.diag(plain)
    ok = np.isfinite(a) & np.isfinite(b) & (b > 0)
    return float(max(1.0, np.max(a[ok] / b[ok]))) if ok.any() else 1.0


def floored(hac: np.ndarray, plain: np.ndarray) -> np.ndarray:
    """`hac` with every variance raised to at least its `plain` value (the correlations kept): S hac S, S diagonal
    max(1, √(plain_ii / hac_ii)). The per-parameter counterpart of variance_inflation's floor: a parameter whose
    scores happen to anti-correlate is not reported more precise than independent residuals allow."""
    a, b = np.diag(hac), np.diag(plain)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where((a > 0) & np.isfinite(b), np.sqrt(np.maximum(b / np.where(a > 0, a, 1.0), 1.0)), 1.0)
    s = np.where(a > 0, s, 1.0)
    out = hac * np.outer(s, s)
    zero = ~(a > 0)
    out[zero, zero] = np.maximum(b[zero], 0.0)
    return out
