"""direct-rls: RLS straight on the payload's unknowns (Khalil 2007 method 1, recursive).

z = [φ_L, Δφ_f, μ] from τ − Y θ_a: 10 (+ friction change, + load-dependent friction) unknowns, so one
update is a handful of rank-one steps. The prior on z is vague (DIRECT_P0, relative to the largest row
variance), so the RLS cost is the residual's and the model-error check applies.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.numpy_kernels import einsum
from payload_id_core.payload.online.base import XU_XI, OnlineEstimator, gram_identifiable
from payload_id_core.payload.online.rls import RecursiveLeastSquares

DIRECT_P0 = 1e4        # a vague prior on z (kg, kg·m, kg·m², N·m), in units of the largest row variance
LOAD_REF_REL_STD = 0.05  # the payload enters the load-friction columns once its mass is this certain


class DirectRLS(OnlineEstimator):
    """Khalil 2007 method 1 as a recursive estimator (options: OnlineEstimator's, and):

      friction_change: estimate the change of the friction parameters under load (Xu eq. 5, W_f Δφ_f), all
        but the offsets (load_friction.load_changeable_friction).
      noise_std default: the robot identification's torque RMSE per joint.
      p0: prior variance scale (1e4), times the largest row variance max(noise_std)²: the rows' weights only
        count relative to each other (the level is re-estimated), so the prior must be vague relative to
        them, not in absolute N·m. With the absolute 1e4 a robot identified on noise-free data (RMSE ~5e-5
        N·m, noise_std at its 1e-3 floor) put the prior 1e10 above a row's variance and the covariance
        update P − H Hᵀ lost definiteness in round-off: LinAlgError on the first samples (Panda, friction
        change off; every seed). For noise_std ~1 N·m (real drives) this is the former prior.
      joseph: Joseph-form covariance update: the plain P − K Y P loses definiteness and diverges when
        the prior is much vaguer than the data.
    """

    method = "direct-rls"

    def __init__(self, model: RobotModel, robot, frame: str, *, friction_change: bool = True, p0: float | None = None,
                 joseph: bool = True, **options):
        super().__init__(model, robot, frame, **options)
        self.friction_change = bool(friction_change)
        # A standard-parameter vector reproducing π_a (K has full row rank): Y φ_a = reduce(Y) π_a.
        K = np.asarray(robot.base.K, dtype=float)
        self.phi_a_std = K.T @ np.linalg.solve(K @ K.T, self.theta_a[self.layout.base])
        self._fric_a_joint = self.fric_a.reshape(self.n, -1) if self.kf else None
        # The rotor inertias per joint, 0 where the identification absorbed them into π_b: one product per
        # sample instead of a gather and a scatter (adding q̈·0 leaves those joints' torques as they were).
        self._rotor_a_joint = np.zeros(self.n)
        self._rotor_a_joint[self.reg.rotor_free] = self.rotor_a
        # The friction change's unknowns: the parameters a load can change (load_friction.load_changeable_friction).
        changeable = self.reg.changeable if self.friction_change else np.zeros(self.kf, dtype=bool)
        self.n_friction_change = int(changeable.sum())
        self._fc_rows = self.reg.friction_rows[changeable]
        self._fc_cols = 10 + np.arange(self.n_friction_change)
        self._fc_values = np.flatnonzero(changeable)
        u = 10 + self.n_friction_change + self.n_lf
        z0 = np.zeros(u)
        z0[:10] = self.prior
        prior_var = (DIRECT_P0 if p0 is None else p0) * float(np.max(self.noise_std)) ** 2
        rls = RecursiveLeastSquares(z0, np.eye(u) * prior_var, self.noise_std**2, self.forgetting, joseph=bool(joseph))
        # dz/dθ_a needs Σ Yᵀ R⁻¹ Y_a: accumulated only when the robot's covariance is propagated.
        self.cross = np.zeros((u, self.layout.p)) if self.include_robot_uncertainty else None
        self._start(rls, sensitive=np.arange(10))
        self._ref = self.rls.theta.copy()      # the estimate the μ columns use (_refresh_reference)
        self._ref_phi = self._ref[:10]

    def _default_noise_std(self) -> np.ndarray:
        rmse = self.rmse
        return rmse if (rmse.size == self.n and np.all(rmse > 0)) else np.full(self.n, np.sqrt(XU_XI))

    def _block_views(self, B: int) -> tuple:
        """The buffers' views _fill_rows uses for blocks of B samples, made once (slicing costs ~0.1 µs each, and a
        sample's rows took a dozen): Y_rb, its payload block, the rows' φ_L columns, the friction values, their
        changeable run and its place in the rows (fc_view), and work arrays for τ_a, τ_b − τ_a, the rotor torque;
        for B = 1 also the first sample's views of Y_rb, its payload block, the rows' φ_L columns, τ_a and τ_b − τ_a,
        with a contiguous (n, 10) array for the φ_L columns."""
        views = self._views.get(B)
        if views is None:
            rows, y_rb, fv, n = self._rows_buf[:B], self._yrb[:B], self._fv_buf[:B], self.n
            fc = (fv[:, :, self._fc_slice], self._fc_view[:B]) if self._fc_view is not None else (None, None)
            y_block, rows_phi = y_rb[:, :, self.block], rows[:, :, :10]
            tau_a, tau_l = np.empty((B, n)), np.empty((B, n))
            views = self._views[B] = (y_rb, y_block, rows_phi, fv, *fc, tau_a, tau_l, np.empty((B, n)),
                                      y_rb[0], y_block[0], rows_phi[0], tau_a[0], tau_l[0], np.empty((n, 10)),
                                      *self._varying_friction(fv))
        return views

    def _fill_rows(self, q, qd, qdd, tau, rows, z, full_w) -> None:
        """See OnlineEstimator._fill_rows; rows and z are the buffers' first B samples."""
        B = q.shape[0]
        (y_rb, y_block, rows_phi, fv_buf, fc_values, fc_rows, tau_a, tau_l, rotor,
         y_rb0, y_block0, rows_phi0, tau_a0, tau_l0, rows_one, fv_sgn, fv_second) = self._block_views(B)
        self.reg.rigid_into(y_rb, q, qd, qdd)
        fv = self._friction_values_into(qd, fv_buf, fv_sgn, fv_second)
        if B == 1:     # ndarray.dot on the 2-D operands: matmul's BLAS call (the same numbers) with less set-up
            rows_phi0[...] = y_block0.dot(self.X, out=rows_one)
            y_rb0.dot(self.phi_a_std, out=tau_a0)
        else:
            np.matmul(y_block, self.X, out=rows_phi)
            np.matmul(y_rb, self.phi_a_std, out=tau_a)
        if fv is not None and self._fric_a_joint is not None:   # both exactly when the model has friction
            # Σ_k fv_jk θ_f,jk: np.einsum's own kernel (a product and a sum give other round-off)
            tau_a += einsum("bjk,jk->bj", fv, self._fric_a_joint)
            if fc_rows is not None:
                fc_rows[...] = fc_values
            elif self.n_friction_change:
                rows[:, self._fc_rows, self._fc_cols] = fv.reshape(B, -1)[:, self._fc_values]
        if self.n_rotor:
            tau_a += np.multiply(qdd, self._rotor_a_joint, out=rotor)
        if self.n_lf:
            if B == 1:
                rows_one.dot(self._ref_phi, out=tau_l0)     # rows_one: the φ_L columns just written
            else:
                np.matmul(rows_phi, self._ref_phi, out=tau_l)
            self._load_friction_into(B, tau_a, np.add(tau_a, tau_l, out=tau_l), qd, fv)
        np.subtract(tau, tau_a, out=z)
        if full_w is not None:
            self.reg.identification_rows_into(full_w, y_rb, fv, qdd)
            full_w *= self._isig_col

    def _buffers(self, B: int) -> None:
        super()._buffers(B)
        self._views: dict[int, tuple] = {}   # per block size B: views of the buffers, some None (unused)
        # When every joint's changeable friction parameters are the same run of its columns (Coulomb and viscous,
        # say), the friction change's entries of the rows are one strided view: joint j's run starts at column
        # 10 + j·c of its row; filled by one copy instead of a gather and a scatter per update.
        self._fc_view: np.ndarray | None = None
        self._fc_slice = slice(0)
        per_joint = self._fc_values.reshape(self.n, -1) - (np.arange(self.n) * self.reg.k)[:, None] \
            if self.n_friction_change and self.n_friction_change % self.n == 0 else None
        if per_joint is None or not (per_joint == per_joint[0]).all() or np.any(np.diff(per_joint[0]) != 1):
            return
        c, u, item = per_joint.shape[1], self.u, self._rows_buf.itemsize
        self._fc_slice = slice(int(per_joint[0, 0]), int(per_joint[0, 0]) + c)
        self._fc_view = np.lib.stride_tricks.as_strided(
            self._rows_buf.reshape(-1)[10:], shape=(B, self.n, c), strides=(self.n * u * item, (u + c) * item, item),
            writeable=True)

    def _refresh_reference(self) -> None:
        """direct-rls starts from a vague prior, and its first estimates can be tens of kilograms off:
        load-friction columns built from them are large and would dominate the information on μ (the
        mass came out +0.28 % instead of −0.27 % with the final payload on the cell), so the payload
        enters only once its mass is known to LOAD_REF_REL_STD."""
        theta = self.rls.theta
        var = self.rls.P[0, 0] * self.rls.noise_scale2()
        if not (theta[0] > 0 and np.isfinite(var) and var < (LOAD_REF_REL_STD * theta[0]) ** 2):
            return
        self._ref[...] = theta          # in place: _ref_phi is its view

    def _quick_payload_now(self) -> tuple[np.ndarray, np.ndarray]:
        s2 = self.rls.noise_scale2()
        if not np.isfinite(s2):
            return np.full(10, np.nan), np.full(10, np.nan)
        return self.rls.theta[:10].copy(), np.sqrt(np.maximum(np.diag(self.rls.P)[:10], 0.0) * s2)

    def solution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._flush()
        z = self.rls.theta.copy()
        cov = self.rls.covariance()
        if self.cross is not None and self.robot_cov is not None:
            sens = self.rls.P @ self.cross            # dz/dθ_a = −P Σ Yᵀ R⁻¹ Y_a
            cov = cov + sens @ self.robot_cov @ sens.T
        return z, cov, gram_identifiable(self.info)

    def model_error_ratio(self) -> float:
        """Residual RMS of the fit over the unloaded identification's torque RMSE (pooled over joints):
        near 1 when the payload model explains the loaded data as well as the robot model its own.
        The prior is vague, so the RLS cost is the residual's."""
        rmse = np.asarray(getattr(self.robot, "rmse", []), dtype=float).reshape(-1)
        s2 = self.rls.noise_scale2()
        if rmse.size != self.n or not np.all(rmse > 0) or not np.isfinite(s2):
            return float("nan")
        # s² is the mean squared whitened residual; the rows were whitened by noise_std.
        return float(np.sqrt(s2 * np.mean(self.noise_std**2 / self.model_error_reference(rmse)**2)))
