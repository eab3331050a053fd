"""Normal equations kept per joint, so that any per-joint row weighting is available without another pass.

For rows y_jt (one per joint j and sample t) and the torque left to them e_jt, JointNormalEquations keeps
G_j = Σ_t y_jt y_jtᵀ, b_j = Σ_t y_jt e_jt and c_j = Σ_t e_jt². A weighting w (one weight per joint) then
gives the weighted information Σ_j w_j G_j, evidence Σ_j w_j b_j and the weighted residual of any fit, and
two weightings give the covariance of their estimates with each other (difference_rls.py uses Xu's one ξ
for the mass and the robot identification's per-joint weights for the rest). The rows wait in a buffer and
enter in one batched product per `pending` samples: as many flops as the one information matrix they replace.
"""

from __future__ import annotations

import numpy as np

PENDING = 32   # samples per batched product


class JointNormalEquations:
    """G (n, u, u), b (n, u), c (n,) over the samples added; `samples` counts them, `rows` (n,) each joint's rows
    that carry data (a row the caller left out, its entries and torque zero, adds nothing but the sample)."""

    def __init__(self, n: int, u: int, pending: int = PENDING, offset: np.ndarray | None = None):
        """offset θ₀ (u,): add() takes the torques z and the residual is e = z − y θ₀, worked out when the waiting
        samples enter (one product per `pending` samples instead of one per sample)."""
        self.n, self.u = n, u
        self.offset = offset
        self.G = np.zeros((n, u, u))
        self.b = np.zeros((n, u))
        self.c = np.zeros(n)
        self.samples = 0
        self._left_out = np.zeros(n)    # rows left out per joint
        # Samples wait as they come, (pending, n, u), one copy each; flush lays them out per joint (n, pending, u).
        self._wait_rows = np.empty((pending, n, u))
        self._wait_res = np.empty((pending, n))
        self._rows = np.empty((n, pending, u))
        self._res = np.empty((n, pending))
        self._k = 0

    def add(self, rows: np.ndarray, residual: np.ndarray, left_out: np.ndarray | None = None) -> None:
        """rows (B, n, u), residual (B, n) (with an offset θ₀: the torques, e = residual − rows θ₀); left_out (B, n)
        bool: the rows the caller zeroed (rows and torque), not counted in `rows`."""
        B = rows.shape[0]
        if left_out is not None:
            self._left_out += np.count_nonzero(left_out, axis=0)
        if self._k + B > self._wait_rows.shape[0]:
            self.flush()
        if B > self._wait_rows.shape[0]:
            if self.offset is not None:
                residual = residual - rows @ self.offset
            self._absorb(np.transpose(rows, (1, 0, 2)), residual.T)
        else:
            k = self._k
            self._wait_rows[k:k + B] = rows
            self._wait_res[k:k + B] = residual
            self._k = k + B
        self.samples += B

    @property
    def rows(self) -> np.ndarray:
        """(n,) each joint's rows that carry data."""
        return self.samples - self._left_out

    def flush(self) -> None:
        k = self._k
        if k:
            waiting, res = self._wait_rows[:k], self._wait_res[:k]
            if self.offset is not None:     # each sample's y θ₀ by its own product, as one sample's would be
                res -= waiting @ self.offset
            self._rows[:, :k] = np.transpose(waiting, (1, 0, 2))
            self._res[:, :k] = res.T
            self._absorb(self._rows[:, :k], self._res[:, :k])
            self._k = 0

    def _absorb(self, R: np.ndarray, E: np.ndarray) -> None:
        """R (n, k, u), E (n, k)."""
        self.G += np.matmul(np.transpose(R, (0, 2, 1)), R)
        self.b += np.einsum("jku,jk->ju", R, E)
        self.c += np.einsum("jk,jk->j", E, E)

    def weighted(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Σ_j w_j G_j, Σ_j w_j b_j) for weights w (n,), or stacked for weights (k, n): (k, u, u), (k, u)."""
        self.flush()
        info = np.tensordot(w, self.G, axes=1)
        return 0.5 * (info + np.swapaxes(info, -1, -2)), w @ self.b

    def residuals(self, d: np.ndarray) -> np.ndarray:
        """(n,) Σ_t (e_jt − y_jtᵀ d)² per joint: the squared residual left by the correction d."""
        self.flush()
        return np.maximum(self.c - 2.0 * (self.b @ d) + (self.G @ d) @ d, 0.0)
