"""Re-estimating the payload from task motion after a change (issue 17): least squares of r₀ on F.

With r₀ the residual against the unloaded robot and F the filtered payload regressor, a payload φ carried
since t_c leaves r₀(t) − E(t) r₀(t_c) = (F(t) − E(t) F(t_c)) φ (detect.transient_free_rows), so φ is a linear
fit on the measured joint positions and velocities alone: no acceleration, no excitation, as the task motion
allows. Rows are whitened per joint by the residual's running variance. The filtered residual is serially
correlated (first order, ρ = e^{−K Δt} between kept rows), so the covariance is widened by the AR(1)
variance factor (1 + ρ)/(1 − ρ); σ² itself comes from the fit's own residual, so model error counts.
Entries the motion leaves undetermined (the inertia during slow moves) are held near the previous estimate
by a prior (σ `inertia_prior_std` about that estimate) and reported as not determined.

That σ counts only errors that decorrelate within a few observer time constants. The robot model's error
on task motion does not: it follows the motion (friction and inertia terms extrapolated off the
identification's excitation) and stays correlated for a whole move, so on the simulated UR10 cell the mass
was 3–6 % off a 3 kg part at 5–7σ. The covariance is therefore also computed cluster-robust (a sandwich
G⁻¹ (Σ_b s_b s_bᵀ) G⁻¹ over blocks of `BLOCK_S` of motion, s_b the block's score at the estimate; Liang &
Zeger's clustered covariance with the B/(B−1) small-sample factor), and the wider of the two is reported;
the estimate counts as determined only once `MIN_BLOCKS` blocks make that covariance meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.payload.online.base import gram_identifiable

PRIOR_STD_MASS_MOMENTS = np.array([20.0, 5.0, 5.0, 5.0])   # kg, kg·m: only keeps the fit definite
BLOCK_S = 0.5        # s of rows per cluster of the robust covariance: shorter than a move, longer than the lag
MIN_BLOCKS = 6       # clusters before the robust covariance is trusted (and the estimate can be determined)


@dataclass(frozen=True)
class Refined:
    phi: np.ndarray              # (10,)
    cov: np.ndarray              # (10, 10)
    determined: np.ndarray       # (10,) bool: the motion so far determines this entry
    rows: int
    seconds: float               # of data since the anchor
    misfit: float                # mean squared whitened residual per row (≈ 1 when a rigid load explains it)
    blocks: int = 0              # clusters behind the robust covariance (< MIN_BLOCKS: not yet trusted)

    @property
    def mass_std(self) -> float:
        return float(np.sqrt(self.cov[0, 0]))

    def com_and_std(self) -> tuple[np.ndarray, np.ndarray]:
        """c = (m c)/m and its σ per axis (first order)."""
        m = self.phi[0]
        c = self.phi[1:4] / m
        J = np.zeros((3, 10))
        J[:, 0] = -c / m
        J[:, 1:4] = np.eye(3) / m
        return c, np.sqrt(np.maximum(np.diag(J @ self.cov @ J.T), 0.0))


class PayloadRefiner:
    """Normal equations of the whitened rows since the last anchor (a change, or the start)."""

    def __init__(self, prior_phi: np.ndarray, rho: float, inertia_prior_std: float = 0.02):
        self.rho = float(rho)
        self.restart(prior_phi, float("nan"), inertia_prior_std)

    def restart(self, prior_phi: np.ndarray, t: float, inertia_prior_std: float) -> None:
        self.prior = np.asarray(prior_phi, dtype=float).copy()
        self.prior_weight = np.diag(1.0 / np.concatenate([PRIOR_STD_MASS_MOMENTS, np.full(6, inertia_prior_std)])**2)
        self.AtA = np.zeros((10, 10))
        self.Atb = np.zeros(10)
        self.btb = 0.0
        self.rows = 0
        self.t0, self.t1 = t, t
        self._blocks: list[list] = []     # per BLOCK_S of rows: [t_start, AᵀA, Aᵀb]

    def add(self, t: np.ndarray, A: np.ndarray, b: np.ndarray, scale: np.ndarray) -> None:
        """Rows (N, n, 10) and (N, n) from transient_free_rows, whitened by `scale` (n,)."""
        if t.size == 0:
            return
        Aw = (A / scale[None, :, None]).reshape(-1, 10)
        bw = (b / scale[None, :]).reshape(-1)
        AtA, Atb = Aw.T @ Aw, Aw.T @ bw
        self.AtA += AtA
        self.Atb += Atb
        self.btb += float(bw @ bw)
        self.rows += bw.size
        if not self._blocks or t[0] - self._blocks[-1][0] >= BLOCK_S:
            self._blocks.append([float(t[0]), np.zeros((10, 10)), np.zeros(10)])
        self._blocks[-1][1] += AtA
        self._blocks[-1][2] += Atb
        if not np.isfinite(self.t0):
            self.t0 = float(t[0])
        self.t1 = float(t[-1])

    def estimate(self) -> Refined:
        W = self.prior_weight
        G = self.AtA + W
        phi = np.linalg.solve(G, self.Atb + W @ self.prior)
        rss = float(self.btb - 2 * phi @ self.Atb + phi @ self.AtA @ phi)
        s2 = max(rss / max(self.rows - 10, 1), 1e-12) if self.rows > 10 else 1.0
        factor = (1.0 + self.rho) / (1.0 - self.rho)
        Ginv = np.linalg.inv(G)
        cov = Ginv * s2 * factor
        B = len(self._blocks)
        if B >= 2:
            scores = np.array([Atb - AtA @ phi for _, AtA, Atb in self._blocks])
            robust = Ginv @ (scores.T @ scores) @ Ginv * (B / (B - 1))
            # The wider one, judged by the mass (what is checked and applied first).
            if robust[0, 0] > cov[0, 0]:
                cov = robust
        return Refined(phi, 0.5 * (cov + cov.T), gram_identifiable(self.AtA), self.rows,
                       float(self.t1 - self.t0) if np.isfinite(self.t0) else 0.0, float(s2), B)
