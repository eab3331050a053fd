"""A load or a push: does the motion's acceleration confirm a change the monitor fitted as a load (issue 31)?

At rest a load φ on the flange changes the joint torques only through its gravity wrench, τ = Jᵀ(q) [m(−g);
m c × (−g)]: a constant wrench in the base frame, which a person's hand pressing on the flange produces as well
(40 N straight down is a 4.1 kg part). In motion the two part: a load's wrench is its inertial one,
[m(a − g); m c × (a − g) + I α + ω × I ω] (Khalil & Dombre 2002, §9.3: the Newton-Euler wrench of a body), which
follows the move's accelerations, while a push held by a person stays what it is (a constant force of the base
frame, at the link it acts on). So over the rows the re-estimate fits since a change, two models of the same
momentum residual are compared:
  - load:  b = A (φ_ref + Δφ),   Δφ = (Δm, Δ(m c)) free (the inertia held at φ_ref's);
  - push:  b = A φ_ref + G w,    w a constant wrench (6) at the payload frame, in the base frame,
with A the filtered payload regressor's transient-free rows (detect.transient_free_rows), b the residual's, φ_ref
the payload before the change, and G the observer's filter run on J(q)ᵀ (FilteredContactJacobian: r₀'s response to
a constant wrench, as F is its response to a payload; De Luca & Mattone 2003 eq. 8). At rest G spans the load's
columns (and more), so the push model fits at least as well: nothing is confirmed there. A load is confirmed when
its model leaves clearly less misfit than the push's (by `LoadOrPushSettings.confirm_chi2` of the rows' variance,
counted as AR(1)-correlated rows); a push, when the push model leaves less than the load's.

The rows are kept as normal equations of [A | G | b], with the last RECENT_S of additions one by one so that a
contact's rows can be taken out again (as refine.PayloadRefiner.drop_since).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.monitor.observer import MomentumFilter
from payload_id_core.monitor.refine import RECENT_S

WRENCH = 12       # a constant force at a point fixed on the flange: f (3) and the products d_i f_j (9)
LOAD = 4          # Δm, Δ(m c): the columns of a load a task motion determines


class FilteredContactJacobian:
    """G(t), (n, 12): the momentum observer's filter on the joint torques of a constant force f (base frame) pushing
    on a point o + R d fixed on the link of `frame` (o, R: the frame's origin and orientation; d unknown, as where a
    hand presses): τ = J_vᵀ f + J_ωᵀ ((R d) × f) = J_vᵀ f + Σ_ij d_i f_j J_ωᵀ (R e_i × e_j), linear in (f, d_i f_j) once
    the products are taken as free (J at the frame, LOCAL_WORLD_ALIGNED). So G w is the residual such a push leaves.
    A load's gravity wrench at rest is one of them (f = m(−g), d = c); in motion a load's is not. Reset it with the
    observer."""

    def __init__(self, model: RobotModel, frame: str, gain: np.ndarray):
        self.pm = model.model
        self.data = self.pm.createData()      # its own: the monitor's model data may be in use elsewhere
        self.frame_id = model.frame_id(frame)
        self._filter = MomentumFilter(gain, (model.n, WRENCH))

    def reset(self) -> None:
        self._filter.reset()

    def update(self, t: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Feed samples (t (N,), q (N, n)); returns G after each one, (N, n, 6)."""
        Jt = np.empty((q.shape[0], q.shape[1], WRENCH))
        eye = np.eye(3)
        for k in range(q.shape[0]):
            J = pin.computeFrameJacobian(self.pm, self.data, q[k], self.frame_id, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            R = self.data.oMf[self.frame_id].rotation
            Jt[k, :, :3] = J[:3].T
            # (R e_i) × e_j for every i, j: the moment of a unit force along e_j at the point R e_i from the origin
            moments = np.cross(R.T[:, None, :], eye[None, :, :]).reshape(9, 3)
            Jt[k, :, 3:] = J[3:].T @ moments.T
        # A constant external torque Jᵀ w enters the observer as the motor torque does: r = K(∫τ_ext − ∫r).
        return self._filter.update(t, np.zeros_like(Jt), Jt)


@dataclass
class LoadOrPushSettings:
    # How much less a load's model must leave than a constant wrench's, in the rows' own variance (whitened, AR(1)
    # factor counted), for the motion to confirm it (a χ² of the 6 − 4 more... see LoadOrPush.judge).
    confirm_chi2: float = 25.0
    min_moving_rows: int = 50       # rows in motion (of the re-estimate's stride) before anything is judged


@dataclass(frozen=True)
class LoadOrPushJudgement:
    statistic: float      # (S_push − S_load) / (s² · AR(1) factor): > 0 the load fits better
    load_misfit: float    # per row
    push_misfit: float    # per row
    rows: int
    moving_rows: int

    @property
    def text(self) -> str:
        return (f"a constant wrench at the flange leaves {self.push_misfit:.2f} per row, a load {self.load_misfit:.2f} "
                f"(statistic {self.statistic:+.1f} over {self.moving_rows} rows in motion)")


class LoadOrPush:
    """The rows since a change, for LoadOrPush.judge (module docstring)."""

    def __init__(self, settings: LoadOrPushSettings | None = None):
        self.s = settings or LoadOrPushSettings()
        self.restart(np.zeros(10), float("nan"))

    def restart(self, phi_ref: np.ndarray, t: float) -> None:
        self.phi_ref = np.asarray(phi_ref, dtype=float).copy()
        self.t0 = t
        u = LOAD + WRENCH + 1
        self.ZtZ = np.zeros((u, u))
        self.rows = 0
        self.moving_rows = 0
        self._recent: deque = deque()

    def add(self, t: np.ndarray, A: np.ndarray, G: np.ndarray, b: np.ndarray, scale: np.ndarray,
            moving: np.ndarray) -> None:
        """Rows A (N, n, 10), G (N, n, 6), b (N, n) (untrusted joints' rows already zero), whitened by `scale` (n,);
        `moving` (N,) bool: the robot moved at that row."""
        if t.size == 0:
            return
        b_ref = b - A @ self.phi_ref
        Z = np.concatenate([A[..., :LOAD], G, b_ref[..., None]], axis=2) / scale[None, :, None]
        Z = Z.reshape(-1, Z.shape[-1])
        ZtZ = Z.T @ Z
        rows = int(np.count_nonzero(np.any(Z != 0.0, axis=1)))
        moving_rows = int(np.sum(moving))
        self.ZtZ += ZtZ
        self.rows += rows
        self.moving_rows += moving_rows
        self._recent.append((float(t[0]), ZtZ, rows, moving_rows))
        while self._recent and self._recent[0][0] < float(t[-1]) - RECENT_S:
            self._recent.popleft()

    def drop_since(self, t: float) -> None:
        """Take out the rows added from `t` on (within the last RECENT_S), as PayloadRefiner.drop_since."""
        while self._recent and self._recent[-1][0] >= t:
            _, ZtZ, rows, moving_rows = self._recent.pop()
            self.ZtZ -= ZtZ
            self.rows -= rows
            self.moving_rows -= moving_rows
        if self.rows <= 0:
            self.ZtZ[:] = 0.0
            self.rows = self.moving_rows = 0

    def _misfit(self, cols: slice) -> float:
        """The least residual sum of squares of b on the columns `cols` (ridge-free; pinv on a rank-deficient set)."""
        ZtZ = self.ZtZ
        u = ZtZ.shape[0] - 1
        M, v, btb = ZtZ[cols, cols], ZtZ[cols, u], ZtZ[u, u]
        x = np.linalg.lstsq(M, v, rcond=1e-10)[0]
        return float(max(btb - v @ x, 0.0))

    def judge(self, correlation: float) -> LoadOrPushJudgement | None:
        """The comparison (None: too few rows in motion to say anything). `correlation`: the rows' AR(1) variance
        factor (detect.ar1_factor at the re-estimate's stride)."""
        if self.moving_rows < self.s.min_moving_rows or self.rows <= LOAD + WRENCH:
            return None
        s_load = self._misfit(slice(0, LOAD))
        s_push = self._misfit(slice(LOAD, LOAD + WRENCH))
        per_row = max(min(s_load, s_push) / (self.rows - WRENCH), 1.0)
        stat = (s_push - s_load) / (per_row * correlation)
        return LoadOrPushJudgement(float(stat), s_load / self.rows, s_push / self.rows, self.rows, self.moving_rows)
