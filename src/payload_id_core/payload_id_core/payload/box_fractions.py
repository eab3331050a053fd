"""The data's Gaussian restricted to the bodies in a box, sampled where the box leaves a thin sheet of mass (issue 30).

In φ = (m, m·c, I_O) a CoM near a face of the box leaves only a sheet on that face: about the CoM c, every second
moment the box allows shrinks with the CoM's distance to the face, Σ_ii ∈ [0, m (c_i − lo_i)(hi_i − c_i)] (Bhatia &
Davis 2000) and Σ_ij between the corner products −m min((c_i − lo_i)(c_j − lo_j), (hi_i − c_i)(hi_j − c_j)) and
m min((c_i − lo_i)(hi_j − c_j), (hi_i − c_i)(c_j − lo_j)) (priors._linear_rows). The feasible set is a cone whose
tip is the face, and hit-and-run in φ does not reach into it (its chords there are as short as the sheet is thin:
split R̂ 1.17-1.57 on the synthetic 4 kg block from 2σ inside the face to 2.9σ outside, h137).

Here the body is z = (m, c, v): the mass, the CoM and, for each of the six second moments about the CoM, the
fraction v ∈ [0, 1] of the room the box leaves it at that CoM (Σ_ii = v_ii · m (c_i − lo_i)(hi_i − c_i), Σ_ij =
L_ij + v_ij (H_ij − L_ij) between the corner products L, H above). Every body in the box is one z with m > 0, c
inside the box, v in the unit cube and Σ ⪰ 0 (J ⪰ 0 by its Schur complement, Wensing, Kim & Slotine 2017), and the
set of z is not thin at any face: the fractions keep their whole range at every CoM. It is sampled by random-walk
Metropolis updates along the principal axes of a pilot's samples (metropolis_steps), CHAINS chains side by side.

The density in z is the data's likelihood at φ(z) times the prior flat in φ that priors.box_posterior's hit-and-run
samples, which in z is |∂φ/∂z| = m³ ∏_i m (c_i − lo_i)(hi_i − c_i) ∏_{i<j} (H_ij − L_ij) (log_volume): the same
posterior, only drawn where it is not thin. That volume gives a CoM at distance d from a face d³ of the prior's weight
(the room for the three moments that shrink with it), so where the motion resolves the moments the posterior's CoM is
pushed off the face by about 1.9 of the data's σ while its σ narrows to 0.7 of theirs (priors.com_reaching_the_mode
widens it). A prior flat in z has no such pull (measured, bench/box_face.py's resolved slab on the face: CoM x
−1.2σ, covered); it is not used: the box's answer would depend on which sampler settled.
"""

from __future__ import annotations

import numpy as np

CHAINS = 64
BURN_IN = 20                 # sweeps (one Metropolis update along each of the ten axes)
PILOT_STEPS = 60
STEPS = 300
ROUNDS = 4
RHAT = 1.05                  # split R̂ (Gelman et al., BDA3 §11.4) on every entry at which the chains are stopped
# A move along a principal axis, in the posterior's σ along it: 2.4, the optimal random-walk scale for a Gaussian in
# one dimension (Gelman, Roberts & Gilks 1996: acceptance 0.44).
STEP_SIGMA = 2.4
_PAIRS = ((0, 1), (0, 2), (1, 2))
_PRODUCT_INDEX = (5, 7, 8)   # φ's Ixy, Ixz, Iyz (pinocchio order [Ixx, Ixy, Iyy, Ixz, Iyz, Izz] from 4)


def _rooms(m: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """(3, N) room D_i = m (c_i − lo_i)(hi_i − c_i) of each Σ_ii, and (3, N) low ends L and widths W of each Σ_ij
    (pairs xy, xz, yz), for masses m (N,) and CoMs c (3, N)."""
    dl, dh = c - lo[:, None], hi[:, None] - c
    room = m * dl * dh
    low = np.empty_like(room)
    width = np.empty_like(room)
    for k, (i, j) in enumerate(_PAIRS):
        low[k] = -m * np.minimum(dl[i] * dl[j], dh[i] * dh[j])
        width[k] = m * np.minimum(dl[i] * dh[j], dh[i] * dl[j]) - low[k]
    return room, low, width


def phi_of(z: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 10) φ of bodies z (N, 10) = (m, c, v_xx, v_yy, v_zz, v_xy, v_xz, v_yz), and (N,) whether each is a body in
    the box (m > 0, c strictly inside, v in [0, 1], Σ about the CoM positive definite)."""
    zt = np.ascontiguousarray(np.atleast_2d(z).T)
    m, c, v = zt[0], zt[1:4], zt[4:]
    room, low, width = _rooms(m, c, lo, hi)
    sxx, syy, szz = v[:3] * room
    sxy, sxz, syz = low + v[3:] * width
    inside = ((m > 0) & ((c > lo[:, None]) & (c < hi[:, None])).all(axis=0)
              & ((v >= 0) & (v <= 1)).all(axis=0))
    # Σ ≻ 0 by its leading principal minors (Sylvester).
    det = sxx * (syy * szz - syz**2) - sxy * (sxy * szz - syz * sxz) + sxz * (sxy * syz - syy * sxz)
    inside &= (sxx > 0) & (sxx * syy > sxy**2) & (det > 0)
    # Σ about the origin = Σ about the CoM + m c cᵀ; I_O = tr(Σ_O) 1 − Σ_O (pinocchio order Ixx, Ixy, Iyy, Ixz, Iyz,
    # Izz, a product of inertia the negated second moment).
    h = m * c
    oxx, oyy, ozz = sxx + h[0] * c[0], syy + h[1] * c[1], szz + h[2] * c[2]
    phi = np.stack([m, h[0], h[1], h[2], oyy + ozz, -(sxy + h[0] * c[1]), oxx + ozz, -(sxz + h[0] * c[2]),
                    -(syz + h[1] * c[2]), oxx + oyy], axis=1)
    return phi, inside


def z_of(phi: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The inverse of phi_of for bodies strictly in the box: (N, 10) z of φ (N, 10)."""
    phi = np.atleast_2d(phi)
    m = phi[:, 0]
    c = phi[:, 1:4] / m[:, None]
    half = 0.5 * (phi[:, 4] + phi[:, 6] + phi[:, 9])
    about_origin = np.zeros((phi.shape[0], 3, 3))
    for k, d in enumerate((4, 6, 9)):
        about_origin[:, k, k] = half - phi[:, d]
    for k, (i, j) in zip(_PRODUCT_INDEX, _PAIRS):
        about_origin[:, i, j] = about_origin[:, j, i] = -phi[:, k]
    sig = about_origin - m[:, None, None] * c[:, :, None] * c[:, None, :]
    room, low, width = _rooms(m, c.T, lo, hi)
    z = np.zeros_like(phi)
    z[:, 0], z[:, 1:4] = m, c
    for i in range(3):
        z[:, 4 + i] = sig[:, i, i] / room[i]
    for k, (i, j) in enumerate(_PAIRS):
        z[:, 7 + k] = (sig[:, i, j] - low[k]) / width[k]
    return z


def log_volume(z: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(N,) log |∂φ/∂z|: what a prior flat in φ weighs z by (m³ for m·c, the rooms and the widths for the fractions;
    the map from Σ about the CoM to I_O has a constant determinant)."""
    m, c = z[:, 0], z[:, 1:4]
    room, _, width = _rooms(np.maximum(m, 1e-300), np.clip(c, lo, hi).T, lo, hi)
    with np.errstate(divide="ignore"):
        return 3.0 * np.log(np.maximum(m, 0.0)) + np.log(room).sum(axis=0) + np.log(width).sum(axis=0)


class FractionPosterior:
    """log density of z under N(φ; Λ⁻¹η, Λ⁻¹) restricted to the box, with a prior flat in φ."""

    def __init__(self, info: np.ndarray, eta: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        self.info, self.eta, self.lo, self.hi = info, eta, lo, hi

    def __call__(self, z: np.ndarray) -> np.ndarray:
        phi, inside = phi_of(z, self.lo, self.hi)
        out = np.full(phi.shape[0], -np.inf)
        if inside.any():
            p = phi[inside]
            out[inside] = -0.5 * np.sum((p @ self.info) * p, axis=1) + p @ self.eta
            out[inside] += log_volume(z[inside], self.lo, self.hi)
        return out


def metropolis_steps(logp, x: np.ndarray, scale: np.ndarray, steps: int, burn_in: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(steps, K, dim) samples of the density exp(logp) from K chains at x (K, dim): each step one random-walk
    Metropolis update (Metropolis et al. 1953) along every column of `scale` in a random order, the move
    STEP_SIGMA · N(0, 1) times the column (the posterior's σ along it: the principal axes of its shape). Each update
    leaves the density invariant, and where the posterior is near a product of independent factors along those axes
    a sweep leaves a nearly independent draw. One logp call per update for all chains: slice sampling (Neal 2003)
    mixed in 1.5 sweeps but cost 12 calls per update, each waiting for the slowest of the chains. Also returns the
    chains' last points."""
    x = np.array(x, dtype=float)
    current = logp(x)
    keep = np.zeros((steps, x.shape[0], x.shape[1]))
    k = x.shape[0]
    for step in range(burn_in + steps):
        for j in rng.permutation(scale.shape[1]):
            trial = x + STEP_SIGMA * rng.standard_normal((k, 1)) * scale[:, j]
            lp = logp(trial)
            accept = np.log(rng.random(k)) < lp - current
            x = np.where(accept[:, None], trial, x)
            current = np.where(accept, lp, current)
        if step >= burn_in:
            keep[step - burn_in] = x
    return keep, x


def split_rhat(chains: np.ndarray) -> np.ndarray:
    """Each entry's split R̂ (Gelman et al., Bayesian Data Analysis 3rd ed. §11.4) of samples (steps, chains,
    10): each chain halved, the between-halves variance against the within; near 1 when the chains agree."""
    n = chains.shape[0] // 2
    if n < 2:
        return np.full(chains.shape[2], np.nan)
    halves = np.concatenate([chains[:n], chains[n:2 * n]], axis=1)            # (n, 2k, 10)
    within = halves.var(axis=0, ddof=1).mean(axis=0)
    between = n * halves.mean(axis=0).var(axis=0, ddof=1)
    pooled = (n - 1) / n * within + between / n
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(np.where(within > 0, pooled / within, 1.0))
    return rhat


def sample_box_in_fractions(info: np.ndarray, eta: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: np.ndarray,
                            mass_std: float, rng: np.random.Generator) -> np.ndarray:
    """(n, CHAINS, 10) samples of φ under the data's Gaussian (information Λ, η; all ten entries determined)
    restricted to the box (lo, hi), drawn in z from `start` (φ strictly in the box): a pilot whose moves are the data's
    σ of the mass (`mass_std`) and of the CoM (at most a tenth of the box) and a tenth of each fraction's range, then
    STEPS sweeps along the pilot's principal axes, run on (ROUNDS at most, the earliest quarter dropped each round)
    while an entry's split R̂ (split_rhat) exceeds RHAT."""
    logp = FractionPosterior(info, eta, lo, hi)
    z0 = z_of(np.atleast_2d(start), lo, hi)[0]
    x = np.tile(z0, (CHAINS, 1))
    cov = np.linalg.inv(info)
    com_std = np.sqrt(np.maximum(np.diag(cov)[1:4] + z0[1:4] ** 2 * cov[0, 0], 0.0)) / z0[0]
    scale = np.diag(np.r_[max(mass_std, 1e-6 * abs(z0[0])), np.minimum(com_std, 0.1 * (hi - lo)), np.full(6, 0.1)])
    pilot, x = metropolis_steps(logp, x, scale, PILOT_STEPS, BURN_IN, rng)
    w, V = np.linalg.eigh(np.cov(pilot.reshape(-1, 10).T))
    scale = V * np.sqrt(np.maximum(w, 1e-12 * max(float(w.max()), 1e-300)))
    keep, x = metropolis_steps(logp, x, scale, STEPS, 0, rng)
    samples = phi_of(keep.reshape(-1, 10), lo, hi)[0].reshape(keep.shape)
    for _ in range(ROUNDS - 1):
        if np.max(split_rhat(samples), initial=1.0) <= RHAT:
            break
        more, x = metropolis_steps(logp, x, scale, STEPS, 0, rng)
        keep = np.concatenate([keep, more])
        keep = keep[keep.shape[0] // 4:]
        samples = phi_of(keep.reshape(-1, 10), lo, hi)[0].reshape(keep.shape)
    return samples
