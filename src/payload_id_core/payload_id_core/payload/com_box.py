"""The bounding box on the mass and first moments alone, where the motion leaves the inertia unidentified (issue 30).

The payload monitor's re-estimates (PayloadState.to_estimate) and any estimate whose ten-parameter φ has its mass
and m·c identified but none of the six inertia entries carry no inertia to restrict: the box then says exactly one
thing, that the CoM lies in it. A rigid body whose mass lies in the box has its CoM c = h/m in it, and every (m, h)
with m > 0 and lo ≤ h/m ≤ hi is such a body (a point mass at c), so on x = (m, h) the box's set is the polyhedral
cone

    m ≥ 0,   h_i − lo_i m ≥ 0,   hi_i m − h_i ≥ 0     (i = x, y, z; seven rows A x ≥ 0, linear in φ),

the exact projection of Wensing, Kim & Slotine 2017's bounding-box set (J ⪰ 0 and the slabs) onto (m, h) where the
inertia is free. The data's Gaussian N(μ, S) on x restricted to it is a four-dimensional truncated Gaussian: where the
box does not bind (every row BIND_MARGIN_SIGMA σ inside) the data's numbers stand; where it does, samples of it come
from the Gaussian itself (rejection: exact and independent wherever a fair share of it lies in the box) or, where
little does (the CoM near or beyond a face), from hit-and-run in the data's whitened coordinates (Smith 1984: a
random direction, the exact chord of the cone along it, t from the one-dimensional truncated Gaussian). In whitened
coordinates the target is a standard normal cut by at most seven half-spaces, so the chains mix in a few steps, unlike
the ten-parameter sampler, whose chains do not settle on this shape (six free inertia entries along the box's flat
directions: split R̂ 1.20-1.32, h190).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

# The box does not bind where every row holds this many σ along its normal at the data's mean: the Gaussian's mass
# outside is then below 7 Φ(−4) = 2e-4 (as priors.BIND_MARGIN_SIGMA; no J ⪰ 0 to check by draws here).
BIND_MARGIN_SIGMA = 4.0
DRAWS = 4096                # draws of the data's Gaussian tried by rejection
MIN_ACCEPTED = 1024         # ... kept when at least this many lie in the box: σ/√1024 = 3 % of σ on the mean
CHAINS = 64                 # hit-and-run chains side by side, where fewer are accepted
BURN_IN = 30
STEPS = 150
ROUNDS = 4                  # chains whose split R̂ exceeds MAX_RHAT are run on, to at most ROUNDS × STEPS
MAX_RHAT = 1.05
SEED = 30


def com_box_rows(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(7, 4) rows A with A x ≥ 0 for x = (m, h) of a body whose CoM lies in the box [lo, hi]: m ≥ 0 and, per
    axis, h_i ≥ lo_i m and h_i ≤ hi_i m."""
    rows = [np.array([1.0, 0.0, 0.0, 0.0])]
    for i in range(3):
        low, high = np.zeros(4), np.zeros(4)
        low[1 + i], low[0] = 1.0, -lo[i]
        high[1 + i], high[0] = -1.0, hi[i]
        rows += [low, high]
    return np.array(rows)


def com_box_does_not_bind(mean: np.ndarray, cov: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether N(mean, cov) on (m, h) lies inside the cone by BIND_MARGIN_SIGMA σ along every row's normal."""
    rows = com_box_rows(lo, hi)
    margin = rows @ mean
    spread = np.sqrt(np.maximum(np.einsum("ki,ij,kj->k", rows, 0.5 * (cov + cov.T), rows), 0.0))
    return bool(np.all(margin > 0) and np.all(margin >= BIND_MARGIN_SIGMA * spread))


def truncated_normal(rng: np.random.Generator, mean: np.ndarray, std: np.ndarray, a: np.ndarray,
                     b: np.ndarray) -> np.ndarray:
    """One draw each of N(mean, std²) restricted to [a, b] (inverse CDF, computed on the side of the mean that keeps
    precision; an interval far in one tail gives its end nearer the mean)."""
    za, zb = (a - mean) / std, (b - mean) / std
    flip = za > 0
    za, zb = np.where(flip, -zb, za), np.where(flip, -za, zb)
    pa, pb = ndtr(za), ndtr(zb)
    u = rng.random(mean.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(pb > pa, ndtri(pa + (pb - pa) * u), zb)
    z = np.clip(np.nan_to_num(z, nan=0.0), za, zb)
    return mean + std * np.where(flip, -z, z)


def _root(cov: np.ndarray) -> np.ndarray:
    """W with W Wᵀ = cov (symmetric eigen-root; directions of round-off variance kept at 1e-12 of the largest)."""
    w, V = np.linalg.eigh(0.5 * (cov + cov.T))
    return V * np.sqrt(np.maximum(w, 1e-12 * max(float(w.max()), 1e-300)))


def _hit_and_run(B: np.ndarray, d: np.ndarray, z: np.ndarray, steps: int, burn_in: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(steps, K, 4) samples of the standard normal on {z: B z + d ≥ 0} from the K strictly feasible points `z`, and
    the chains' last points."""
    keep = np.zeros((steps, *z.shape))
    for step in range(burn_in + steps):
        u = rng.standard_normal(z.shape)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        slack, rate = z @ B.T + d, u @ B.T             # row r holds while slack_r + t rate_r ≥ 0
        with np.errstate(divide="ignore", invalid="ignore"):
            root = -slack / rate
        t_lo = np.max(np.where(rate > 0, root, -np.inf), axis=1)
        t_hi = np.min(np.where(rate < 0, root, np.inf), axis=1)
        # Along z + t u the standard normal is N(t; −z·u, 1); finite ends come from the cone's rows, and a chord
        # open at one end is a half-line, which the inverse CDF takes as it is.
        t = truncated_normal(rng, -np.einsum("ki,ki->k", z, u), np.ones(z.shape[0]), t_lo, t_hi)
        width = np.where(np.isfinite(t_hi - t_lo), t_hi - t_lo, 1.0)
        z = z + np.clip(t, t_lo + 1e-9 * width, t_hi - 1e-9 * width)[:, None] * u
        if step >= burn_in:
            keep[step - burn_in] = z
    return keep, z


def com_box_samples(mean: np.ndarray, cov: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: np.ndarray,
                    split_rhat) -> np.ndarray:
    """(steps, chains, 4) samples of N(mean, cov) on x = (m, h) restricted to the cone of com_box_rows: the
    Gaussian's own draws that lie in it where at least MIN_ACCEPTED of DRAWS do (one chain of independent draws),
    else hit-and-run chains from `start` (a point strictly inside, e.g. near the data's nearest body in the box), run
    on while an entry's split R̂ (`split_rhat`) exceeds MAX_RHAT, up to ROUNDS rounds, the earliest quarter dropped
    each round. A fixed seed: the same input gives the same answer."""
    rows = com_box_rows(lo, hi)
    rng = np.random.default_rng(SEED)
    W = _root(cov)
    draws = mean + rng.standard_normal((DRAWS, 4)) @ W.T
    inside = np.all(draws @ rows.T >= 0, axis=1)
    if inside.sum() >= MIN_ACCEPTED:
        return draws[inside][:, None, :]
    B, d = rows @ W, rows @ mean
    z0 = np.linalg.solve(W, np.asarray(start, dtype=float) - mean)
    accepted = np.linalg.solve(W, (draws[inside] - mean).T).T
    # Chains start on the accepted draws where there are some (already distributed as the target), the rest at start.
    z = np.vstack([accepted[:CHAINS], np.tile(z0, (max(CHAINS - accepted.shape[0], 0), 1))])
    keep, z = _hit_and_run(B, d, z, STEPS, BURN_IN, rng)
    for _ in range(ROUNDS - 1):
        if np.max(split_rhat(keep)) <= MAX_RHAT:
            break
        more, z = _hit_and_run(B, d, z, STEPS, 0, rng)
        keep = np.concatenate([keep, more])
        keep = keep[keep.shape[0] // 4:]
    return mean + keep @ W.T
