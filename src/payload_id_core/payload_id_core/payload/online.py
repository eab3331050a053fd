"""Online payload estimators: one update per control sample, an estimate with uncertainty at any time.

Two forms (DESIGN.md method table):
  direct-rls      RLS straight on z = [φ_L, Δφ_f] from τ − Y θ_a (Khalil 2007 method 1, recursive):
                  10 (+ friction change) unknowns, so one update is a handful of rank-one steps.
  difference-rls  Xu 2024 Algorithm 1: RLS on the loaded robot's whole θ_b, initialised at θ_a with
                  P = 10·1 and ξ = 100 (§3.2), fed with the commanded motion and the unloaded nonlinear
                  friction shape α_a (eq. 7); the payload follows from ε = θ_b − θ_a through the payload
                  Jacobian (eq. 6, 12–16, generalised: z = J^# ε weighted by the covariance of ε).

Convergence (seconds of motion until declared):
  'xu'          Xu §3.2: 300 consecutive samples with max |Δπ| < 0.005 over the payload-sensitive
                parameters (the base parameters J_ε moves, or φ_L itself for direct-rls).
  'covariance'  the estimate's own uncertainty: relative standard deviation of the mass below
                `mass_rel_std` (0.5 %), checked every `check_every` samples. Unlike the Xu rule it
                cannot fire on a slowly drifting estimate, and it scales with the noise actually seen.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from payload_id_core.errors import PayloadIdError
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.finish import model_error_notes, undetermined_to_prior
from payload_id_core.payload.jacobian import difference_jacobian, identifiable_entries, theta_layout
from payload_id_core.payload.linear import generalized_lstsq
from payload_id_core.payload.load_friction import sign_epsilon
from payload_id_core.payload.rls import RecursiveLeastSquares
from payload_id_core.dynamics.regressor import payload_transform

ONLINE_METHODS = ("direct-rls", "difference-rls")
XU_XI = 100.0          # Xu 2024 §3.2: ξ
XU_P0 = 10.0           # Xu 2024 §3.2: P* = 10 · 1
XU_TOL = 0.005         # Xu 2024 §3.2: max |Δπ| threshold
XU_COUNT = 300         # Xu 2024 §3.2: consecutive samples
NOISE_FLOOR = 1e-3     # N·m
DIRECT_P0 = 1e4        # direct-rls: a vague prior on z (kg, kg·m, kg·m², N·m)
BLOCK = 8              # samples per Kalman update in update_batch (48 rows for a 6-joint arm)
PENDING = 32           # samples whose rows enter the information matrix in one product
LOAD_REFRESH = 8       # samples between refreshes of the estimate the load-friction columns are built from
LOAD_REF_REL_STD = 0.05  # direct-rls: the payload enters the load-friction columns once its mass is this certain


def gram_identifiable(M: np.ndarray) -> np.ndarray:
    """identifiable_entries for an information matrix M = AᵀA (its square root has A's row space)."""
    M = 0.5 * (M + M.T)
    d = np.sqrt(np.maximum(np.diag(M), 0.0))
    live = d > 1e-10 * d.max() if d.size and d.max() > 0 else np.zeros(d.size, dtype=bool)
    ok = np.zeros(M.shape[0], dtype=bool)
    if not live.any():
        return ok
    Ms = M[np.ix_(live, live)] / np.outer(d[live], d[live])
    w, V = np.linalg.eigh(Ms)
    # Eigenvalues of a Gram matrix carry round-off ~1e-16·λmax; their square roots ~1e-8, so the
    # rank threshold for the square root is looser than for a regressor.
    root = (V * np.sqrt(np.maximum(w, 0.0))).T
    ok[np.flatnonzero(live)] = identifiable_entries(root, rtol=1e-6)
    return ok


class FastRegressor:
    """Per-sample regressor rows for one robot identification, without per-call Python overhead.

    rigid(q, qd, qdd) -> Y_rb (n, 10n) from pinocchio (its own Data, reused); friction_values(qd)
    -> (..., n, k) each joint's own friction columns, for one sample or a block of them.
    Checked against the identification's own batch regressor when the estimator is built.
    """

    def __init__(self, model: RobotModel, robot):
        self.model = model
        self.robot = robot
        self.fm = robot.friction
        self.kind = self.fm.kind
        self.n = model.n
        self.k = self.fm.per_joint
        self.eps = float(self.fm.sign_epsilon)
        self.shape = np.asarray(self.fm.shape, dtype=float)
        self._rows = np.arange(self.n)
        self._fast = self.kind in ("none", "linear", "nonlinear") and not self.fm.needs_temperature
        self._alpha = self.shape[:, 0] if self.kind == "nonlinear" else None
        # Scatter indices of the per-joint friction values into the block-diagonal rows.
        self._fr_rows = np.repeat(self._rows, self.k)
        self._fr_cols = (self._rows[:, None] * self.k + np.arange(self.k)).reshape(-1)
        self._pm = model.model
        self._pd = model.model.createData()    # own workspace: other users of model.data are not disturbed
        self._reg = pin.computeJointTorqueRegressor

    def friction_values(self, qd: np.ndarray) -> np.ndarray:
        """(..., n, k): each joint's own friction columns (the nonzero entries of its row)."""
        qd = np.asarray(qd, dtype=float)
        if not self._fast:
            flat = qd.reshape(-1, self.n)
            cols = self.fm.columns(flat)
            vals = cols[:, self._rows[:, None], self._rows[:, None] * self.k + np.arange(self.k)]
            return vals.reshape(qd.shape + (self.k,))
        v = np.empty(qd.shape + (self.k,))
        if self.k == 0:
            return v
        sgn = np.tanh(qd / self.eps) if self.eps > 0 else np.sign(qd)
        v[..., 0] = sgn
        v[..., 1] = qd if self.kind == "linear" else np.abs(qd) ** self._alpha * sgn
        v[..., 2] = 1.0
        return v

    def friction_columns(self, qd: np.ndarray) -> np.ndarray:
        """(n, k n) block-diagonal friction rows, as robot.friction.columns gives for one sample."""
        out = np.zeros((self.n, self.k * self.n))
        out[self._fr_rows, self._fr_cols] = self.friction_values(qd).reshape(-1)
        return out

    def rigid(self, q, qd, qdd) -> np.ndarray:
        return self._reg(self._pm, self._pd, q, qd, qdd)

    def rigid_into(self, out: np.ndarray, q, qd, qdd) -> None:
        """(B, n, 10n) rigid-body rows of B samples into `out` (one pinocchio call each)."""
        reg, pm, pd = self._reg, self._pm, self._pd
        for i in range(q.shape[0]):
            out[i] = reg(pm, pd, q[i], qd[i], qdd[i])

class OnlinePayloadEstimator:
    """update(q, qd, qdd, tau[, t]) per sample; estimate() -> PayloadEstimate at any time; .converged.

    Options:
      method: 'direct-rls' or 'difference-rls'.
      friction_change: estimate the change of the friction parameters under load (Xu eq. 5, W_f Δφ_f).
        difference-rls always re-estimates the friction block (it is part of θ_b).
      noise_std: per-joint torque noise (N·m) weighting the rows; default: the robot identification's
        torque RMSE for direct-rls, √ξ = 10 N·m on every joint for difference-rls (Xu). Only ratios
        matter for the estimate; the absolute level is re-estimated from the residuals.
      p0: prior variance scale (direct-rls: 1e4; difference-rls: Xu's 10).
      convergence: 'covariance' (default) or 'xu'; mass_rel_std, xu_tol, xu_count tune them.
      rate_hz: sample rate used for the convergence time when update() gets no time stamps.
      history_every: store (t, φ, std) every this many samples (0: none).
      include_robot_uncertainty: add the robot identification's covariance to the payload's.
      joseph: Joseph-form covariance update for direct-rls (always on for difference-rls): the plain
        P − K Y P loses definiteness and diverges when the prior is much vaguer than the data.
      load_friction: estimate the load-dependent Coulomb friction μ_j (load_friction.py), one unknown per
        joint appended to z (direct-rls) or θ_b (difference-rls). Its columns need the loaded torque,
        predicted with the estimate as it was at the last multiple of LOAD_REFRESH samples (so that
        update_batch and sequential updates see the same one).
    """

    def __init__(self, model: RobotModel, robot, frame: str, method: str = "direct-rls", *,
                 friction_change: bool = True, noise_std=None, p0: float | None = None, forgetting: float = 1.0,
                 convergence: str = "covariance", mass_rel_std: float = 0.005, xu_tol: float = XU_TOL,
                 xu_count: int = XU_COUNT, check_every: int = 25, min_time: float = 0.5, rate_hz: float = 500.0,
                 history_every: int = 25, include_robot_uncertainty: bool = False, prior=None,
                 joseph: bool = True, load_friction: bool = True):
        if method not in ONLINE_METHODS:
            raise PayloadIdError(f"'{method}' is not an online method", f"use one of {', '.join(ONLINE_METHODS)}")
        if convergence not in ("covariance", "xu"):
            raise PayloadIdError(f"unknown convergence rule '{convergence}'", "use 'covariance' or 'xu'")
        self.model, self.robot, self.frame, self.method = model, robot, frame, method
        self.layout = theta_layout(robot)
        lay = self.layout
        self.theta_a = np.asarray(robot.theta, dtype=float)
        self.n = model.n
        self.reg = FastRegressor(model, robot)
        self.joint, self.X = payload_transform(model, frame)
        self.block = slice(10 * (self.joint - 1), 10 * self.joint)
        self.independent = np.asarray(robot.base.independent)
        # A standard-parameter vector reproducing π_a (K has full row rank): Y φ_a = reduce(Y) π_a.
        K = np.asarray(robot.base.K, dtype=float)
        self.phi_a_std = K.T @ np.linalg.solve(K @ K.T, self.theta_a[lay.base])
        self.rotor_a = self.theta_a[lay.rotor]
        # Rotor inertias with their own unknown (the others are absorbed into π_b by the identification).
        self.rotor_free = np.asarray(getattr(getattr(robot, "rotor", None), "free", np.arange(lay.rotor.stop - lay.rotor.start)),
                                     dtype=int)
        self.fric_a = self.theta_a[lay.friction]
        self.n_rotor = lay.rotor.stop - lay.rotor.start
        self.kf = lay.friction.stop - lay.friction.start
        self.friction_change = bool(friction_change) if method == "direct-rls" else True
        self.convergence_rule = convergence
        self.mass_rel_std, self.xu_tol, self.xu_count = float(mass_rel_std), float(xu_tol), int(xu_count)
        self.check_every, self.min_time, self.dt = int(check_every), float(min_time), 1.0 / float(rate_hz)
        self.history_every = int(history_every)
        self.include_robot_uncertainty = bool(include_robot_uncertainty)
        self.prior = np.zeros(10) if prior is None else np.asarray(getattr(prior, "phi", prior), dtype=float)
        robot_cov = getattr(robot, "cov", None)
        self.robot_cov = None if robot_cov is None else np.asarray(robot_cov, dtype=float)

        rmse = np.asarray(getattr(robot, "rmse", np.ones(self.n)), dtype=float).reshape(-1)
        if noise_std is None:
            noise_std = rmse if (method == "direct-rls" and rmse.size == self.n and np.all(rmse > 0)) \
                else np.full(self.n, np.sqrt(XU_XI))
        # Only ratios weight the rows (the level is re-estimated); a floor keeps noise-free fits well posed.
        self.noise_std = np.maximum(np.broadcast_to(np.asarray(noise_std, dtype=float), (self.n,)), NOISE_FLOOR)
        row_var = self.noise_std**2

        self.load_friction = bool(load_friction)
        self.n_lf = self.n if self.load_friction else 0
        self._sign_eps = sign_epsilon(robot)
        J = difference_jacobian(model, robot, frame, friction_change=True)   # (p, 10 + kf)
        # The μ_j of the load-dependent friction are nuisance unknowns of θ_b, one to one (zero unloaded).
        self.J = np.zeros((lay.p + self.n_lf, J.shape[1] + self.n_lf))
        self.J[:lay.p, :J.shape[1]] = J
        self.J[lay.p:, J.shape[1]:] = np.eye(self.n_lf)
        self.theta_b0 = np.concatenate([self.theta_a, np.zeros(self.n_lf)])
        # The robot's covariance on the θ_b layout (the μ_j are not part of the robot identification).
        self.robot_cov_b = None
        if self.robot_cov is not None:
            self.robot_cov_b = np.zeros((self.theta_b0.size,) * 2)
            self.robot_cov_b[:lay.p, :lay.p] = self.robot_cov
        if method == "direct-rls":
            self.u = 10 + (self.kf if self.friction_change else 0) + self.n_lf
            z0 = np.zeros(self.u)
            z0[:10] = self.prior
            self.rls = RecursiveLeastSquares(z0, np.eye(self.u) * (DIRECT_P0 if p0 is None else p0), row_var, forgetting,
                                             joseph=bool(joseph))
            self.sensitive = np.arange(10)
        else:
            self.u = lay.p + self.n_lf
            self.rls = RecursiveLeastSquares(self.theta_b0.copy(), np.eye(self.u) * (XU_P0 if p0 is None else p0),
                                             row_var, forgetting, joseph=True)
            self.sensitive = np.flatnonzero(np.any(np.abs(self.J[:, :10]) > 1e-12, axis=1))
        self._lf_cols = self.u - self.n_lf + np.arange(self.n_lf)   # where the μ_j sit in the unknowns
        self._ref = self.rls.theta.copy()                            # the estimate the μ columns use
        self._struct_ok = identifiable_entries(self.J)
        self._Js = np.asfortranarray(self.J[:, self._struct_ok])
        self._quick_at = -1
        self._quick = None
        self._fric_a_joint = self.fric_a.reshape(self.n, -1) if self.kf else None
        self._info = np.zeros((self.u, self.u))    # Σ Yᵀ R⁻¹ Y: which unknowns the motion determines
        self.cross = np.zeros((self.u, lay.p)) if (method == "direct-rls" and self.include_robot_uncertainty) else None
        self._isig = 1.0 / self.noise_std
        self._ab = np.column_stack([self.theta_a, self.theta_a])   # column 1: the reference θ̂_b (_refresh_reference)
        # The nonlinear/linear friction's first column is tanh(q̇/ε) with the same ε: reused as sgn_ε(q̇).
        self._sgn_from_fv = bool(self.kf and self.reg._fast and self.reg.eps == self._sign_eps)
        self._buffers(BLOCK)
        self.samples = 0
        self.t0: float | None = None
        self.t_last = 0.0
        self.converged = False
        self.convergence_time = float("nan")
        self._calm = 0
        self._hist_t: list[float] = []
        self._hist_phi: list[np.ndarray] = []
        self._hist_std: list[np.ndarray] = []
        self._check_regressor()

    # -- per sample -------------------------------------------------------------------------------
    def _fill_rows(self, q, qd, qdd, tau, rows, z, whitened, full_w) -> None:
        """Rows of B samples (inputs (B, n)) into the buffers: rows (B, n, u) of the unknowns, z (B, n)
        the torque left to them, whitened = rows / σ (B, n, u) and, when the robot's uncertainty is
        propagated by direct-rls, full_w = the robot's rows / σ (B, n, p)."""
        B = q.shape[0]
        y_rb = self._yrb[:B]
        self.reg.rigid_into(y_rb, q, qd, qdd)
        fv = self.reg.friction_values(qd) if self.kf else None
        isig = self._isig[:, None]
        if self.method == "direct-rls":
            np.matmul(y_rb[:, :, self.block], self.X, out=rows[:, :, :10])
            tau_a = y_rb @ self.phi_a_std
            if self.kf:
                tau_a += np.einsum("bjk,jk->bj", fv, self._fric_a_joint)
                if self.friction_change:
                    rows[:, self.reg._fr_rows, 10 + self.reg._fr_cols] = fv.reshape(B, -1)
            if self.n_rotor:
                tau_a[:, self.rotor_free] += qdd[:, self.rotor_free] * self.rotor_a
            if self.n_lf:
                self._load_friction_into(B, tau_a, tau_a + rows[:, :, :10] @ self._ref[:10], qd, fv)
            np.subtract(tau, tau_a, out=z)
            np.multiply(rows, isig, out=whitened)
            if full_w is not None:
                self._robot_rows_into(full_w, y_rb, fv, qdd)
                full_w *= isig
            return
        self._robot_rows_into(rows, y_rb, fv, qdd)
        if self.n_lf:
            # Unloaded and loaded model torques in one product: [Y θ_a, Y θ̂_b].
            both = rows[:, :, :self.layout.p] @ self._ab
            self._load_friction_into(B, both[..., 0], both[..., 1], qd, fv)
        z[...] = tau
        np.multiply(rows, isig, out=whitened)

    def _load_friction_into(self, B: int, tau_a, tau_b, qd, fv) -> None:
        """load_friction.load_friction_values written straight onto the diagonal of the μ columns of the
        row buffer (a strided view: no fancy indexing per update), reusing the friction's sign column."""
        sgn = fv[..., 0] if self._sgn_from_fv else (np.tanh(qd / self._sign_eps) if self._sign_eps > 0 else np.sign(qd))
        d = self._lf_diag[:B]
        np.abs(tau_b, out=d)
        d -= np.abs(tau_a)
        d *= sgn

    def _robot_rows_into(self, out, y_rb, fv, qdd) -> None:
        """The identification's rows [π_b | rotor | friction] (B, n, p) into `out` (zeros kept where
        the structure has them: only the nonzero entries are written)."""
        B = y_rb.shape[0]
        b = self.layout.base.stop
        out[:, :, :b] = y_rb[:, :, self.independent]
        if self.n_rotor:
            out[:, self.rotor_free, b + np.arange(self.n_rotor)] = qdd[:, self.rotor_free]
        if self.kf:
            off = self.layout.friction.start
            out[:, self.reg._fr_rows, off + self.reg._fr_cols] = fv.reshape(B, -1)

    def _buffers(self, B: int) -> None:
        """Work arrays for blocks of up to B samples, allocated once (zeros where rows are structurally zero)."""
        n, u, p = self.n, self.u, self.layout.p
        self._cap = B
        self._yrb = np.empty((B, n, 10 * n))
        self._rows_buf = np.zeros((B, n, u))
        # The diagonal of the last n_lf columns of every sample's rows: the μ_j columns (load_friction.py).
        item = self._rows_buf.itemsize
        self._lf_diag = np.lib.stride_tricks.as_strided(
            self._rows_buf.reshape(-1)[u - self.n_lf:], shape=(B, self.n_lf), strides=(n * u * item, (u + 1) * item),
            writeable=True) if self.n_lf else None
        self._z_buf = np.empty((B, n))
        self._white_buf = np.empty((B, n, u))
        self._full_buf = np.zeros((B, n, p)) if self.cross is not None else None
        # Whitened rows wait here and enter the information matrix in one product per PENDING samples.
        self._pend = np.empty((PENDING * n, u))
        self._pend_full = np.empty((PENDING * n, p)) if self.cross is not None else None
        self._npend = 0

    def _robot_rows(self, y_rb, fric, qdd):
        """One sample's robot rows (n, p) from its rigid rows and block-diagonal friction columns."""
        parts = [y_rb[:, self.independent]]
        if self.n_rotor:
            rot = np.zeros((self.n, self.n_rotor))
            rot[self.rotor_free, np.arange(self.n_rotor)] = qdd[self.rotor_free]
            parts.append(rot)
        parts.append(fric)
        return np.hstack(parts)

    def _check_regressor(self) -> None:
        """The fast rows must equal the identification's batch regressor (same θ layout)."""
        rng = np.random.default_rng(1)
        q, qd, qdd = rng.standard_normal((3, 2, self.n)) * 0.5
        theirs = np.asarray(self.robot.regressor(q, qd, qdd))
        mine = np.zeros((2, self.n, self.layout.p))
        y_rb = np.empty((2, self.n, 10 * self.n))
        self.reg.rigid_into(y_rb, q, qd, qdd)
        self._robot_rows_into(mine, y_rb, self.reg.friction_values(qd) if self.kf else None, qdd)
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=1e-9, atol=1e-9):
            raise PayloadIdError("the robot identification's regressor has a layout the online estimator does not know",
                                 "re-run payload-id identify-robot with this version")

    def _absorb(self, B: int) -> None:
        """RLS update with the B samples in the buffers, and their whitened rows queued for the information matrix."""
        m = B * self.n
        self.rls.update(self._rows_buf[:B].reshape(m, self.u), self._z_buf[:B].reshape(m), samples=B)
        if self._npend + m > self._pend.shape[0]:
            self._flush()
        if m > self._pend.shape[0]:
            W = self._white_buf[:B].reshape(m, self.u)
            self._info += W.T @ W
            if self.cross is not None:
                self.cross += W.T @ self._full_buf[:B].reshape(m, -1)
            return
        k = self._npend
        self._pend[k:k + m] = self._white_buf[:B].reshape(m, self.u)
        if self.cross is not None:
            self._pend_full[k:k + m] = self._full_buf[:B].reshape(m, -1)
        self._npend = k + m

    def _flush(self) -> None:
        k = self._npend
        if k:
            W = self._pend[:k]
            self._info += W.T @ W
            if self.cross is not None:
                self.cross += W.T @ self._pend_full[:k]
            self._npend = 0

    @property
    def info(self) -> np.ndarray:
        """Σ Yᵀ R⁻¹ Y over the samples fed: which unknowns the motion determines."""
        self._flush()
        return self._info

    def _advance_time(self, t) -> None:
        if t is None:
            t = self.t_last + self.dt if self.samples else 0.0
        elif self.samples and t > self.t_last:
            self.dt = float(t) - self.t_last
        if self.t0 is None:
            self.t0 = float(t)
        self.t_last = float(t)
        self.samples += 1

    def update(self, q, qd, qdd, tau, t: float | None = None) -> None:
        """Feed one sample (commanded q, q̇, q̈ as Xu recommends; measured torque)."""
        n = self.n
        q = np.asarray(q, dtype=float).reshape(1, n)
        qd = np.asarray(qd, dtype=float).reshape(1, n)
        qdd = np.asarray(qdd, dtype=float).reshape(1, n)
        tau = np.asarray(tau, dtype=float).reshape(1, n)
        if self.n_lf and self.samples % LOAD_REFRESH == 0:
            self._refresh_reference()
        self._fill_rows(q, qd, qdd, tau, self._rows_buf[:1], self._z_buf[:1],
                        self._white_buf[:1], None if self._full_buf is None else self._full_buf[:1])
        before = self.rls.theta[self.sensitive].copy() if self.convergence_rule == "xu" else None
        self._absorb(1)
        self._advance_time(t)
        if not self.converged:
            self._check_convergence(before)
        if self.history_every and self.samples % self.history_every == 0:
            self._record_history()

    def update_batch(self, t, q, qd, qdd, tau) -> None:
        """Feed B samples at once (arrays (B,), (B, n)): the same state as B update() calls, faster.

        The samples go through the RLS in blocks of up to BLOCK (one Kalman update of the stacked rows,
        which equals the sequence of single updates), cut wherever a single update would have checked
        convergence or stored history, so those see exactly the state they would have. Under the
        'xu' rule the samples are fed one by one until convergence is declared (the rule looks at
        every sample's step). Results agree with sequential updates to round-off.
        """
        t = np.asarray(t, dtype=float).reshape(-1)
        q, qd, qdd, tau = (np.asarray(a, dtype=float).reshape(-1, self.n) for a in (q, qd, qdd, tau))
        N = t.size
        k = 0
        while k < N:
            if self.convergence_rule == "xu" and not self.converged:
                self.update(q[k], qd[k], qdd[k], tau[k], float(t[k]))
                k += 1
                continue
            end = min(N, k + self._cap)
            for every, active in ((self.check_every, not self.converged), (self.history_every, True),
                                  (LOAD_REFRESH, self.n_lf > 0)):
                if active and every > 0:
                    end = min(end, k + every - self.samples % every)
            if self.n_lf and self.samples % LOAD_REFRESH == 0:
                self._refresh_reference()
            B = end - k
            self._fill_rows(q[k:end], qd[k:end], qdd[k:end], tau[k:end], self._rows_buf[:B], self._z_buf[:B],
                            self._white_buf[:B], None if self._full_buf is None else self._full_buf[:B])
            self._absorb(B)
            for tk in t[k:end]:
                self._advance_time(float(tk))
            k = end
            if not self.converged:
                self._check_convergence(None)
            if self.history_every and self.samples % self.history_every == 0:
                self._record_history()

    def _refresh_reference(self) -> None:
        """The estimate the load-friction columns predict the loaded torque with (Xu-style difference-rls:
        θ̂_b, which starts at θ_a and moves smoothly). direct-rls starts from a vague prior, and its first
        estimates can be tens of kilograms off: columns built from them are large and would dominate the
        information on μ (the mass came out +0.28 % instead of −0.27 % with the final payload on the
        cell), so the payload enters only once its mass is known to LOAD_REF_REL_STD."""
        theta = self.rls.theta
        if self.method == "direct-rls":
            var = self.rls.P[0, 0] * self.rls.noise_scale2()
            if not (theta[0] > 0 and np.isfinite(var) and var < (LOAD_REF_REL_STD * theta[0]) ** 2):
                return
        self._ref = theta.copy()
        if self.method == "difference-rls":
            self._ab[:, 1] = theta[:self.layout.p]

    def _record_history(self) -> None:
        z, std = self._quick_payload()
        self._hist_t.append(self.t_last - self.t0)
        self._hist_phi.append(z)
        self._hist_std.append(std)

    def _check_convergence(self, before) -> None:
        elapsed = self.t_last - (self.t0 or 0.0)
        if self.convergence_rule == "xu":
            step = np.max(np.abs(self.rls.theta[self.sensitive] - before)) if before.size else 0.0
            self._calm = self._calm + 1 if step < self.xu_tol else 0
            if self._calm >= self.xu_count:
                self._declare(elapsed)
            return
        if elapsed < self.min_time or self.samples % self.check_every:
            return
        z, std = self._quick_payload()
        if z[0] > 0 and np.isfinite(std[0]) and std[0] < self.mass_rel_std * z[0]:
            self._declare(elapsed)

    def _declare(self, elapsed: float) -> None:
        self.converged = True
        self.convergence_time = elapsed + self.dt   # the sample that settled it counts as motion used

    # -- estimate ---------------------------------------------------------------------------------
    def _quick_payload(self) -> tuple[np.ndarray, np.ndarray]:
        """(φ_L, its std) cheaply, for history and the convergence check: no rank analysis; the
        difference form solves its weighted conversion with a Cholesky factor of cov(ε)."""
        if self._quick_at == self.samples:
            return self._quick
        self._quick_at = self.samples
        self._quick = self._quick_payload_now()
        return self._quick

    def _quick_payload_now(self) -> tuple[np.ndarray, np.ndarray]:
        nan = np.full(10, np.nan), np.full(10, np.nan)
        s2 = self.rls.noise_scale2()
        if not np.isfinite(s2):
            return nan
        if self.method == "direct-rls":
            return self.rls.theta[:10].copy(), np.sqrt(np.maximum(np.diag(self.rls.P)[:10], 0.0) * s2)
        C = self.rls.P * s2          # symmetric by construction (square-root update)
        if self.include_robot_uncertainty and self.robot_cov_b is not None:
            C = C + self.robot_cov_b
        # Whitened conversion: with C = L Lᵀ, A = L⁻¹ J, b = L⁻¹ ε:  z = (AᵀA)⁻¹ Aᵀ b, cov z = (AᵀA)⁻¹.
        L, info = lapack.dpotrf(C, lower=1, clean=1)
        if info != 0:
            return nan
        A, _ = lapack.dtrtrs(L, self._Js, lower=1)
        b, _ = lapack.dtrtrs(L, self.rls.theta - self.theta_b0, lower=1)
        Lm, info = lapack.dpotrf(A.T @ A, lower=1, clean=1)
        if info != 0:
            return nan
        zs, _ = lapack.dpotrs(Lm, A.T @ b, lower=1)
        Mi, _ = lapack.dpotri(Lm, lower=1)
        z = np.full(self.J.shape[1], np.nan)
        std = np.full(self.J.shape[1], np.nan)
        z[self._struct_ok] = zs
        std[self._struct_ok] = np.sqrt(np.maximum(np.diag(Mi), 0.0))
        return z[:10], std[:10]

    def _payload(self):
        """(z = [φ_L, Δφ_f], its covariance, identifiable mask of z)."""
        self._flush()
        cov_theta = self.rls.covariance()
        if self.method == "direct-rls":
            z = self.rls.theta.copy()
            cov = cov_theta
            if self.cross is not None and self.robot_cov is not None:
                sens = self.rls.P @ self.cross            # dz/dθ_a = −P Σ Yᵀ R⁻¹ Y_a
                cov = cov + sens @ self.robot_cov @ sens.T
            ok = gram_identifiable(self.info)
            return z, cov, ok
        eps = self.rls.theta - self.theta_b0
        if self.rls.forgetting == 1.0:
            return self._difference_payload_data_only(eps)
        C = cov_theta
        if self.include_robot_uncertainty and self.robot_cov_b is not None:
            C = C + self.robot_cov_b
        sol = generalized_lstsq(self.J, eps, C)
        # Structure (J) and motion (the data's information on θ seen through J); the weighting by C does
        # not change which entries are determined.
        ok = self._struct_ok & gram_identifiable(self.J.T @ self.info @ self.J)
        return sol.x, np.nan_to_num(sol.cov, nan=0.0), ok

    def _difference_payload_data_only(self, eps: np.ndarray):
        """z from ε̂ = θ̂_b − θ_a with the evidence of the loaded data alone (λ = 1).

        Xu's RLS starts at θ_a with P0 = 10·1: a prior saying ε ≈ 0 ± √(10 s²), which a 4 kg payload
        violates by far in its mass-scaled entries, so the posterior ε̂ is shrunk towards 0 while few
        samples are in, and s²P, the posterior spread, does not count that shrinkage: the mass came out
        low by ~0.8 σ on 3 s runs. Since P⁻¹ = P0⁻¹ + I_d (I_d = Σ YᵀR⁻¹Y), P⁻¹ ε̂ = Σ YᵀR⁻¹ (τ − Y θ_a)
        is the data's own evidence g; with ε_d ~ N(J z, s² I_d⁻¹ + C_a) the weighted conversion is
        z = (Jᵀ W J)⁻¹ Jᵀ W ε_d, W = (I + M C_a)⁻¹ M, M = I_d / s², and W ε_d = (I + M C_a)⁻¹ g / s²
        (no inverse of I_d needed, so directions the motion leaves undetermined simply get no weight).
        """
        s2 = self.rls.noise_scale2()
        s2 = s2 if np.isfinite(s2) and s2 > 0 else 1.0
        g = np.linalg.solve(self.rls.P, eps)
        M = self.info / s2
        h = g / s2
        MJ = M @ self.J
        if self.include_robot_uncertainty and self.robot_cov_b is not None:
            A = np.eye(self.u) + M @ self.robot_cov_b
            WJ = np.linalg.solve(A, MJ)
            Weps = np.linalg.solve(A, h)
        else:
            WJ, Weps = MJ, h
        gram = self.J.T @ WJ
        gram = 0.5 * (gram + gram.T)
        rhs = self.J.T @ Weps
        ok = self._struct_ok & gram_identifiable(gram)
        x = np.zeros(self.J.shape[1])
        cov = np.zeros((x.size, x.size))
        if ok.any():
            G = gram[np.ix_(ok, ok)]
            x[ok] = np.linalg.solve(G, rhs[ok])
            cov[np.ix_(ok, ok)] = np.linalg.inv(G)
        return x, cov, ok

    def model_error_ratio(self) -> float:
        """Residual RMS of the fit over the unloaded identification's torque RMSE (pooled over joints):
        near 1 when the payload model explains the loaded data as well as the robot model its own.
        direct-rls only (NaN otherwise): its prior is vague, so the RLS cost is the residual's; Xu's
        P0 = 10 prior of difference-rls adds the (large) prior misfit of ε to the cost."""
        if self.method != "direct-rls":
            return float("nan")
        rmse = np.asarray(getattr(self.robot, "rmse", []), dtype=float).reshape(-1)
        s2 = self.rls.noise_scale2()
        if rmse.size != self.n or not np.all(rmse > 0) or not np.isfinite(s2):
            return float("nan")
        # s² is the mean squared whitened residual; the rows were whitened by noise_std.
        return float(np.sqrt(s2 * np.mean(self.noise_std**2 / rmse**2)))

    def estimate(self) -> PayloadEstimate:
        """The current estimate (not projected onto physically consistent parameters: see consistency)."""
        if self.samples == 0:
            raise PayloadIdError("no sample fed to the estimator yet", "call update() while the robot moves")
        z, cov, ok = self._payload()
        phi, cov10, ok10, prior_notes = undetermined_to_prior(z, cov, ok, self.prior)
        notes = [f"{self.samples} samples, {self.t_last - (self.t0 or 0.0):.3f} s of motion; "
                 f"convergence rule '{self.convergence_rule}'", *prior_notes]
        if self.method == "direct-rls" and self.friction_change or self.method == "difference-rls":
            notes.append(f"friction change under load estimated ({self.kf} parameters)")
        if self.n_lf:
            mu = self.rls.theta[self._lf_cols]
            mu_std = np.sqrt(np.maximum(np.diag(self.rls.covariance())[self._lf_cols], 0.0))
            notes.append("load-dependent Coulomb friction μ per joint (N·m per N·m of load change): "
                         f"{np.round(mu, 4).tolist()} ± {np.round(mu_std, 4).tolist()}")
        notes += model_error_notes(self.model_error_ratio())
        history = None
        if self._hist_t:
            history = {"t": np.array(self._hist_t), "phi": np.array(self._hist_phi), "std": np.array(self._hist_std)}
        return PayloadEstimate(frame=self.frame, phi=phi, covariance=cov10, method=self.method, identifiable=ok10,
                               converged=self.converged, convergence_time=self.convergence_time, notes=notes,
                               history=history)

    def run(self, t, q, qd, qdd, tau) -> PayloadEstimate:
        """Feed a whole recording (offline use of the online method; update_batch, same result as
        sample-by-sample updates)."""
        self.update_batch(t, q, qd, qdd, tau)
        return self.estimate()
