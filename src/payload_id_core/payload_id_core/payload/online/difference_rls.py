"""difference-rls: Xu 2024 Algorithm 1, the loaded robot re-identified online and compared with the unloaded one.

RLS on the loaded robot's whole θ_b, initialised at θ_a with P = 10·1 and ξ = 100 (§3.2), fed with the
commanded motion and the unloaded nonlinear friction shape α_a (eq. 7); the payload follows from
ε = θ_b − θ_a through the payload Jacobian (eq. 6, 12–16, generalised: z = J^# ε weighted by the
covariance of ε). The rows' normal equations are also kept per joint (joint_normal.py), so that the mass
is converted with Xu's weights and the rest of the payload with the robot identification's.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack, lu_factor, lu_solve

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.jacobian import difference_jacobian, identifiable_entries
from payload_id_core.payload.linear import generalized_lstsq
from payload_id_core.payload.load_friction import prior_std
from payload_id_core.payload.online.base import NOISE_FLOOR, XU_XI, OnlineEstimator, gram_identifiable
from payload_id_core.payload.online.joint_normal import JointNormalEquations
from payload_id_core.payload.online.rls import RecursiveLeastSquares
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id.model_error import moments_robot_covariance
from payload_id_core.robot_id.serial_correlation import bandwidth, floored, long_run_covariance

XU_P0 = 10.0           # Xu 2024 §3.2: P* = 10 · 1
QUICK_PIVOT = 1e-12    # smallest Cholesky pivot of the unit-diagonal normal matrix _quick_payload_now accepts
MOMENTS_DISAGREE_CHI2 = 11.34   # χ² with 3 degrees of freedom, 99 %: the two weightings' first moments disagree
# A joint's row is left out while the joint passes within this many of the friction's sign smoothing ε of rest
# (_fill_rows; a joint held still keeps its rows): there tanh(q̇/ε) is the model's assumption, not identified
# (tanh(3) = 0.995: beyond, the sign is the sign). The drives' friction passes through zero velocity by a law the
# static model does not describe (pre-sliding; on the simulated cell the drives' sign width and viscous exponent
# differ from the model's), so those rows hold the robot model's largest friction error, and at a joint's first
# reversal the payload read it: the mass stepped by +0.3-0.5 % there (docs/design.md, the cell's convergence).
# Opt-in for now (near_rest_epsilons, default 0): on test_difference_rls_weights' synthetic draws, whose friction is
# the model's exactly, it moved one entry's spread/σ (ixz) from 0.709 to 0.639 against that test's 0.68 (σ +1 %, the
# spread −8 %: the draws' subset, not the σ), and that bound is not to be loosened here.
NEAR_REST_EPSILONS = 3.0


class DifferenceRLS(OnlineEstimator):
    """Xu 2024 Algorithm 1 (options: OnlineEstimator's, and):

      noise_std default: √ξ = 10 N·m on every joint (Xu §3.2): the row weights the RLS and the mass use.
      moment_noise_std default: the robot identification's WLS noise std per joint (robot.sigma; its RMSE
        when absent): the row weights of the first moments and the inertia, fitted given the mass
        (_two_weightings). Xu's one ξ weights a wrist joint (0.2-0.4 N·m of noise) like the shoulder (2 N·m),
        so the inertia, which only the wrist torques carry clearly, drowned in the shoulder's noise and
        model error through the shared θ_b (cell: 15.9 % inertia error; 4.8 % this way). For the mass the
        identification's weights are not taken because real data disagree: on the UR10e 15harm pair they
        move it from +0.5 % to −2.1 % (−3.1 % through the CLI; issue 12's bound is 1 %).
      p0: prior variance scale (Xu's 10).
      friction_change, joseph: accepted for a uniform constructor and ignored: the friction block is part
        of θ_b, so its change is always estimated, and the square-root update is always definite.
      near_rest_epsilons: a joint's rows are left out while |q̇_j| is below this many of the robot's friction
        sign smoothing ε and q̈_j ≠ 0 (0, the default, keeps every row; NEAR_REST_EPSILONS the value measured).

    The constant friction offsets' change ΔB_j is free (Xu) unless robot.yaml records their drift between runs
    (friction_offset_drift, identify-robot --drift-bag): then it has that Gaussian prior, a ridge term in the
    data-only conversion's normal equations (the quick estimate and the final one alike; not in the RLS posterior
    used with forgetting < 1) and its pull in the covariance (_two_weightings).
    """

    method = "difference-rls"
    friction_change = True
    accumulates_info = False    # Σ Yᵀ R⁻¹ Y is Xu's weighting of the per-joint sums (_normal): not kept twice

    def __init__(self, model: RobotModel, robot, frame: str, *, friction_change: bool = True, p0: float | None = None,
                 joseph: bool = True, moment_noise_std=None, near_rest_epsilons: float | None = None,
                 **options):
        super().__init__(model, robot, frame, **options)
        if near_rest_epsilons is None:
            near_rest_epsilons = 0.0
        if not (isinstance(near_rest_epsilons, (int, float)) and np.isfinite(near_rest_epsilons)
                and near_rest_epsilons >= 0):
            raise PayloadIdError(f"near_rest_epsilons {near_rest_epsilons!r} is not a number ≥ 0",
                                 "give how many sign-smoothing widths ε of rest leave a joint's rows out (0: none)")
        # |q̇| below which a joint's row is left out (NEAR_REST_EPSILONS); 0 without a sign smoothing.
        self.near_rest_speed = float(near_rest_epsilons) * self._sign_eps
        if self.forgetting == 1.0:
            # The gains' share comes from the per-joint sums here (payload_solution): the base class's per-joint
            # payload information would be accumulated for nothing.
            self._joint_info = None
        if moment_noise_std is None:
            default = getattr(robot, "sigma", None)
            moment_noise_std = self.rmse if default is None else default
        else:
            given = np.asarray(moment_noise_std, dtype=float)
            if given.size not in (1, self.n) or given.ndim > 1 or not np.all(np.isfinite(given) & (given > 0)):
                raise PayloadIdError(f"moment_noise_std {given.tolist()} is not one positive N·m value or one per "
                                     f"joint ({self.n})", "give the torque noise std of each joint, N·m")
            if self.forgetting != 1.0:
                raise PayloadIdError("moment_noise_std has no effect with forgetting: the estimate then comes from "
                                     "the RLS posterior, with noise_std's weights", "leave one of them out")
        self.moment_noise_std = np.maximum(np.broadcast_to(np.asarray(moment_noise_std, dtype=float).reshape(-1),
                                                           (self.n,)), NOISE_FLOOR)
        lay = self.layout
        J = difference_jacobian(model, robot, frame, friction_change=True)   # (p, 10 + kf)
        # The μ_j of the load-dependent friction are entries of θ_b (zero unloaded). Where robot.yaml models the
        # joint's gear friction, μ_j is what is left of it, zero with the identification's σ
        # (load_friction.prior_std): known, not an unknown of z; its σ enters the conversion as θ_a's covariance
        # does (load_friction_cov). Elsewhere μ_j is a nuisance unknown of z, one to one.
        lf_std = prior_std(robot, self.n) if self.n_lf else np.zeros(0)
        free = np.flatnonzero(~np.isfinite(lf_std))
        self.J = np.zeros((lay.p + self.n_lf, J.shape[1] + free.size))
        self.J[:lay.p, :J.shape[1]] = J
        self.J[lay.p + free, J.shape[1] + np.arange(free.size)] = 1.0
        self.theta_b0 = np.concatenate([self.theta_a, np.zeros(self.n_lf)])
        # The robot's covariance on the θ_b layout (the μ_j are not part of the robot identification).
        self.robot_cov_b = None
        if self.robot_cov is not None:
            self.robot_cov_b = np.zeros((self.theta_b0.size,) * 2)
            self.robot_cov_b[:lay.p, :lay.p] = self.robot_cov
        self.load_friction_cov = None
        # The known μ_j's columns on θ_b and their prior information, for the noise level's fit (_two_weightings).
        self._lf_known_cols = np.zeros((self.theta_b0.size, 0))
        self._lf_known_info = np.zeros(0)
        if np.any(np.isfinite(lf_std)):
            known = np.flatnonzero(np.isfinite(lf_std))
            self.load_friction_cov = np.zeros((self.theta_b0.size,) * 2)
            self.load_friction_cov[lay.p + known, lay.p + known] = lf_std[known] ** 2
            self._lf_known_cols = np.zeros((self.theta_b0.size, known.size))
            self._lf_known_cols[lay.p + known, np.arange(known.size)] = 1.0
            self._lf_known_info = lf_std[known] ** -2
        # robot.yaml's measured offset drift (robot_id/offset_spread.py): a Gaussian prior ΔB_j ~ N(0, s_j²) on the
        # friction change's constant offsets, a ridge term in the conversion's normal equations (_two_weightings).
        # Free (Xu) they trade with the payload's mean gravity torque; fixed they read a moved offset as payload.
        self.offset_prior_var = offset_prior_variance(robot, self.J.shape[1])
        u = lay.p + self.n_lf
        rls = RecursiveLeastSquares(self.theta_b0.copy(), np.eye(u) * (XU_P0 if p0 is None else p0),
                                    self.noise_std**2, self.forgetting, joseph=True)
        self._struct_ok = identifiable_entries(self.J)
        self._Js = np.asfortranarray(self.J[:, self._struct_ok])
        # Column 0: θ_a; column 1: the reference θ̂_b the load-friction columns use (_refresh_reference).
        self._ab = np.column_stack([self.theta_a, self.theta_a])
        self._start(rls, sensitive=np.flatnonzero(np.any(np.abs(self.J[:, :10]) > 1e-12, axis=1)))
        self._normal = JointNormalEquations(self.n, self.u, offset=self.theta_b0)
        self.moment_disagreement = float("nan")   # χ² (3 dof) of the two weightings' first moments, last solve
        self._check_samples: tuple[np.ndarray, ...] | None = None   # judge_moments_on
        self._hac_cache: tuple | None = None                          # _moments_noise_hac's last answer
        # Whether the first moments' and the inertia's conversion weighs ε with the robot identification's
        # covariance C_a (Xu's generalised J^#, as the mass's does): robot.yaml's held-out choice
        # (model_error.difference_rls), else yes.
        self.moments_robot_covariance = moments_robot_covariance(robot)
        # Held-out runs only (payload/held_out_error.py): also convert the first moments the other way, and judge
        # the two conversions' difference against the covariance noise and C_a predict for it.
        self.compare_conversions = False
        # (first moments with this conversion minus the other's, its predicted covariance) of the last full solve
        self.conversion_difference: tuple[np.ndarray, np.ndarray] | None = None

    def _reference_cov(self, with_robot: bool) -> np.ndarray | None:
        """The covariance of θ_b's reference the conversion weighs ε with: the known load-friction μ_j's
        (load_friction_cov) and, with_robot, the robot identification's C_a; None when neither."""
        parts = [c for c in (self.robot_cov_b if with_robot else None, self.load_friction_cov) if c is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]

    def _default_noise_std(self) -> np.ndarray:
        return np.full(self.n, np.sqrt(XU_XI))

    def _fill_rows(self, q, qd, qdd, tau, rows, z, full_w) -> None:
        """See OnlineEstimator._fill_rows; rows and z are the buffers' first B samples."""
        B = q.shape[0]
        views = self._views.get(B)
        if views is None:       # the buffers' views for blocks of B samples, made once (slicing costs ~0.1 µs each)
            rows_theta, both, magnitude = self._rows_buf[:B, :, :self.layout.p], *np.empty((2, B, self.n, 2))
            views = self._views[B] = (self._yrb[:B], self._fv_buf[:B], self._src_qdd[:B], self._gather[:B],
                                      self._rest_buf[:B], self._speed_buf[:B],
                                      rows_theta, both, rows_theta[0], both[0], magnitude, magnitude[..., 0],
                                      magnitude[..., 1], *self._varying_friction(self._fv_buf[:B]))
        (y_rb, fv_buf, src_qdd, gather, rest, speed, rows_theta, both, rows_theta0, both0, magnitude, abs_a, abs_b,
         fv_sgn, fv_second) = views
        self.reg.rigid_into(y_rb, q, qd, qdd)
        self._friction_values_into(qd, fv_buf, fv_sgn, fv_second)
        if self.n_rotor:
            src_qdd[...] = qdd
        # The identification's rows (FastRegressor.identification_rows_into) and zeros in the μ columns, by one gather
        # from the samples' source vectors (_buffers).
        # (ndarray.take and .dot: np.take and np.dot without their Python dispatch, ~0.5 and ~0.1 µs a call)
        self._src.take(gather, out=rows, mode="clip")
        if self.n_lf:
            # Unloaded and loaded model torques in one product: [Y θ_a, Y θ̂_b].
            if B == 1:     # ndarray.dot on the 2-D operands: matmul's BLAS call (the same numbers) with less set-up
                rows_theta0.dot(self._ab, out=both0)
            else:
                np.matmul(rows_theta, self._ab, out=both)
            np.abs(both, out=magnitude)    # |Y θ_a| and |Y θ̂_b| in one call (_load_friction_into takes them one by one)
            self._load_friction_from_abs(B, abs_a, abs_b, qd)
        z[...] = tau
        if self.near_rest_speed > 0:
            # Rows near rest carry the friction the model cannot describe (NEAR_REST_EPSILONS): zeroed, they add
            # nothing to the RLS or the sums (their torque zero too, so their residual is zero).
            # A joint held still (q̇ = q̈ = 0) keeps its rows: it does not pass through the friction's transition,
            # and its torque still carries the gravity the payload adds.
            np.less(np.abs(qd, out=speed), self.near_rest_speed, out=rest)
            self._left_out = bool(np.count_nonzero(rest))    # mostly none (count_nonzero: cheaper than any())
            if self._left_out:
                rest &= qdd != 0.0
                rows[rest] = 0.0
                z[rest] = 0.0

    @property
    def info(self) -> np.ndarray:
        """Σ Yᵀ R⁻¹ Y with Xu's row weights, from the per-joint sums."""
        return self._normal.weighted(self._isig**2)[0]

    def _buffers(self, B: int) -> None:
        super()._buffers(B)
        # Sample b's rows from its source vector, which starts at b times the source's length (np.take reads the
        # source flat).
        self._gather = (self.reg.identification_gather(self.u)[None]
                        + (np.arange(B) * self._src.shape[1])[:, None, None])
        self._views: dict[int, tuple] = {}   # per block size B: views of the buffers, some None (unused)
        self._rest_buf = np.zeros((B, self.n), dtype=bool)   # _fill_rows: the rows left out near rest
        self._speed_buf = np.empty((B, self.n))                # _fill_rows: |q̇|
        self._left_out = False                                 # whether the last _fill_rows left a row out

    def _absorb(self, B: int) -> None:
        super()._absorb(B)
        # residual τ − Y θ_b0 (the sums' offset); the rows left out near rest are not counted as data
        self._normal.add(self._rows_buf[:B], self._z_buf[:B], self._rest_buf[:B] if self._left_out else None)

    def _refresh_reference(self) -> None:
        """θ̂_b starts at θ_a and moves smoothly (Xu's prior), so it serves as the reference at once."""
        self._ab[:, 1] = self.rls.theta[:self.layout.p]

    def _quick_payload_now(self) -> tuple[np.ndarray, np.ndarray]:
        """(φ_L, its std) for history and the convergence check: the estimate solution() returns, over the
        structurally identifiable entries and without its rank analysis (a Cholesky pivot below
        QUICK_PIVOT of the unit-diagonal normal matrix means the data do not determine z yet).

        With λ = 1 that is the data-only conversion (_solution_data_only). The posterior ε̂ of Xu's
        P0 = 10 prior is shrunk towards 0 while few samples are in: on the simulated UR10 cell (ur10_payload,
        3.5 kg, 10 noise seeds) its mass was −1.8 % off at 2.0 s of motion (median; data-only −0.7 %) and
        at the declared convergence only 45 % of 20 seeds were within 1 % (data-only: 75 %), so the rule
        judged, and the history showed, an estimate nobody is given. With forgetting (λ < 1) solution()
        itself uses the posterior, and so does this."""
        if self.rls.forgetting == 1.0:
            sol = self._two_weightings(self._Js, quick=True, mass_first=bool(self._struct_ok[0]),
                                       check_moments=bool(self._struct_ok[:4].all()),
                                       prior_var=self.offset_prior_var[self._struct_ok])
        else:
            normal = self._posterior_normal()
            both = None if normal is None else _spd_solve(normal[0], np.column_stack([normal[1],
                                                                                       np.eye(normal[1].size)]), True)
            sol = None if both is None else (both[:, 0], both[:, 1:])
        z = np.full(self.J.shape[1], np.nan)
        std = np.full(self.J.shape[1], np.nan)
        if sol is not None:
            z[self._struct_ok] = sol[0]
            std[self._struct_ok] = np.sqrt(np.maximum(np.diag(sol[1]), 0.0))
        return z[:10], std[:10]

    def _posterior_normal(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Normal equations of z from the RLS posterior (θ̂_b, s²P): with C = L Lᵀ, A = L⁻¹ J, b = L⁻¹ ε,
        (AᵀA, Aᵀb) over the structurally identifiable entries."""
        s2 = self.rls.noise_scale2()
        if not np.isfinite(s2):
            return None
        C = self.rls.P * s2          # symmetric by construction (square-root update)
        reference = self._reference_cov(self.include_robot_uncertainty)
        if reference is not None:
            C = C + reference
        L, info = lapack.dpotrf(C, lower=1, clean=1)
        if info != 0:
            return None
        A, _ = lapack.dtrtrs(L, self._Js, lower=1)
        b, _ = lapack.dtrtrs(L, self.rls.theta - self.theta_b0, lower=1)
        return A.T @ A, A.T @ b

    def estimate(self) -> PayloadEstimate:
        est = super().estimate()
        if self.moment_disagreement > MOMENTS_DISAGREE_CHI2:
            est.notes.append(Note(NoteCode.PAYLOAD_MOMENTS_DISAGREE, (
                "the first moments with the shoulder-heavy weights (Xu's ξ) and with the identification's differ "
                f"beyond the noise (χ² {self.moment_disagreement:.1f}, 3 dof; 99 %: {MOMENTS_DISAGREE_CHI2}): "
                "their difference is added to the CoM's covariance. A wrist drive gain or friction the robot "
                "model lacks does this; check the wrist joints' gains")))
        return est

    def judge_moments_on(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, tau: np.ndarray) -> None:
        """The samples fed (arrays (N, n)), kept for the full solutions' moments check: it then judges the two
        weightings' disagreement against the noise as it is, serially correlated (_moments_noise_hac), in place
        of white noise. The quick solutions (history, convergence) keep the white-noise check."""
        self._check_samples = tuple(np.asarray(a, dtype=float).reshape(-1, self.n) for a in (q, qd, qdd, tau))

    def _moments_noise_hac(self, A_v: np.ndarray, A_w: np.ndarray, theta: np.ndarray) -> np.ndarray | None:
        """Covariance of the noise's share of A_v g_v + A_w g_w on the kept samples (judge_moments_on), with
        serially correlated residuals: g_v = Σ_t Σ_j v_j y_jt e_jt (and g_w alike), so the share is Σ_t a_t with
        scores a_t = Σ_j (v_j A_v + w_j A_w) y_jt r_jt, r the residual of the fit θ; their Newey–West (Bartlett)
        long-run covariance (robot_id/serial_correlation.py). None without kept samples."""
        if self._check_samples is None:
            return None
        cached = self._hac_cache
        if (cached is not None and cached[0] == self.samples and np.array_equal(cached[1], A_v)
                and np.array_equal(cached[2], A_w) and np.array_equal(cached[3], theta)):
            return cached[4]    # estimate() and payload_solution() ask for the same one
        q, qd, qdd, tau = self._check_samples
        P = (self.noise_std**-2)[:, None, None] * A_v + (self.moment_noise_std**-2)[:, None, None] * A_w  # (n, k, u)
        N = q.shape[0]
        scores = np.empty((N, A_v.shape[0]))
        residual = np.empty((N, self.n))
        for k in range(0, N, self._cap):
            end = min(N, k + self._cap)
            B = end - k
            rows, z = self._rows_buf[:B], self._z_buf[:B]
            self._fill_rows(q[k:end], qd[k:end], qdd[k:end], tau[k:end], rows, z,
                            None if self._full_buf is None else self._full_buf[:B])
            r = z - rows @ theta
            residual[k:end] = r
            scores[k:end] = np.einsum("jcu,bju,bj->bc", P, rows, r)
        out = long_run_covariance(scores, bandwidth(residual))
        self._hac_cache = (self.samples, A_v.copy(), A_w.copy(), theta.copy(), out)
        return out

    def payload_solution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """solution() with the drive gains' share of the covariance (robot.yaml's effort scale std) computed
        for the two weightings (_two_weightings); the base class's share assumes one weighting."""
        if self.rls.forgetting != 1.0 or self._gain_rel_cov is None:
            return super().payload_solution()
        self._flush()
        return self._solution_data_only(with_gains=True)

    def solution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._flush()
        if self.rls.forgetting == 1.0:
            return self._solution_data_only()
        eps = self.rls.theta - self.theta_b0
        C = self.rls.covariance()
        reference = self._reference_cov(self.include_robot_uncertainty)
        if reference is not None:
            C = C + reference
        sol = generalized_lstsq(self.J, eps, C)
        # The weighting by C does not change which entries are determined.
        return sol.x, np.nan_to_num(sol.cov, nan=0.0), self._determined()

    def _determined(self) -> np.ndarray:
        """The entries of z the structure (J) and the motion so far (the data's information seen through J)
        determine."""
        return self._struct_ok & gram_identifiable(self.J.T @ self.info @ self.J)

    def _solution_data_only(self, with_gains: bool = False):
        """z with the evidence of the loaded data alone (λ = 1), over the entries the motion determines; with
        the drive gains' share of the covariance when with_gains."""
        x = np.zeros(self.J.shape[1])
        cov = np.zeros((x.size, x.size))
        ok = self._determined()
        if ok.any():
            sol = self._two_weightings(self.J[:, ok], quick=False, mass_first=bool(ok[0]),
                                       payload_columns=int(ok[:10].sum()) if with_gains else 0,
                                       check_moments=bool(ok[:4].all()), prior_var=self.offset_prior_var[ok])
            if sol is not None:
                x[ok], cov[np.ix_(ok, ok)] = sol
            else:
                ok[:] = False
        return x, cov, ok

    def _two_weightings(self, J: np.ndarray, quick: bool, mass_first: bool = True, payload_columns: int = 0,
                        check_moments: bool = False, prior_var: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray] | None:
        """(z, its covariance) over the columns J: the mass (J's first column when mass_first) with Xu's
        weights, the rest with the robot identification's given that mass (all with Xu's weights when the
        mass is not among them); None when the data do not determine z (quick: a Cholesky pivot below
        QUICK_PIVOT).

        Data-only conversion (Xu's P0 = 10 prior left out: it says ε ≈ 0 ± √(10 s²), which a payload's
        mass-scaled entries violate by far, so its posterior ε̂ is shrunk towards 0 while few samples are in
        and s²P does not count that). For row weights v_j, the evidence is g_v = Σ Yᵀ V (τ − Y θ_a) and
        I_v = Σ Yᵀ V Y, so with ε_d ~ N(J z, s² I_v⁻¹ + C_a) the weighted conversion is z = (Jᵀ W J)⁻¹ Jᵀ W ε_d,
        W = (I + M C_a)⁻¹ M, M = I_v / s², and W ε_d = (I + M C_a)⁻¹ g_v / s² (no inverse of I_v needed:
        directions the motion leaves undetermined get no weight). Why two weightings: see the class
        docstring; besides the noise, the unloaded robot's model error cancels in ε = θ_b − θ_a on the
        identification's own trajectory only when θ_b is fitted with the rows weighted as θ_a was (noise-free
        cell, ur10_payload_inertia: inertia 9.4 % with ξ, 5.0 % with the identification's weights).

        The covariance is that of this two-step estimate, both steps being linear in the same data: with
        g_v = I_v δ + n_v (δ = θ_a − θ̂_a ~ N(0, C_a)) and per-joint noise variances σ_j² estimated from
        the residual of the second weighting's plain fit, cov(n_v, n_w) = Σ_j v_j w_j σ_j² G_j; so it holds
        with each joint's own noise level, whatever the weights were.

        With payload_columns > 0 (J's first columns are φ_L's) and robot.yaml's gain std, the gains' share is
        added: a relative gain error γ_j scales the payload's torque on joint j, y_jtᵀ ε_L with ε_L = J_L z_L
        (the unloaded torque's share went into θ_a with the same gains), so the evidence moves by
        γ_j v_j G_j ε_L and γ_j w_j G_j ε_L, and z by H_v and H_w of those.

        prior_var (k,): the variance of a zero-mean Gaussian prior on each column's unknown (inf: none; the friction
        offsets' measured drift, offset_prior_variance). Its information 1/s² is added to both conversions' normal
        matrices (a ridge term: a maximum a posteriori conversion), and the covariance gains what the prior's pull
        does to an unknown that truly moved by s: with A = H_v I_v + H_w I_w the estimate's response to the true z,
        E[ẑ] = A J z, so the error holds (A J − 1) z on the prior's columns, (A J − 1) S (A J − 1)ᵀ with S = diag(s²).
        For one weighting this is the posterior covariance (JᵀWJ + S⁻¹)⁻¹ exactly.
        """
        normal = self._normal
        self.moment_disagreement = float("nan")
        v = 1.0 / self.noise_std**2
        w = 1.0 / self.moment_noise_std**2
        k = J.shape[1]
        # The noise level's fit has the known load-friction μ_j as unknowns too, held by their prior: the residual
        # is the noise's, as with free μ_j (the limit of a wide prior is the free unknown, σ included).
        J_fit = np.hstack([J, self._lf_known_cols])
        prior_var = np.full(k, np.inf) if prior_var is None else prior_var
        prior_info = np.where(np.isfinite(prior_var), 1.0 / prior_var, 0.0)
        with_prior = bool(np.any(prior_info > 0))
        fit_prior = np.concatenate([prior_info, self._lf_known_info])
        k_fit = J_fit.shape[1]
        dof_rows = float(normal.rows.sum()) - k_fit
        if dof_rows <= 0:
            return None
        # One pass over the per-joint sums for both weightings; each weighting's plain fit of z gives its own
        # noise scale, and the second's the per-joint noise variances var_j (its residual) the covariance uses.
        (I_v, I_w), (g_v, g_w) = normal.weighted(np.stack([v, w]))
        residuals = []
        for I_x, g_x in ((I_v, g_v), (I_w, g_w)):
            plain = _spd_solve(J_fit.T @ I_x @ J_fit + np.diag(fit_prior), J_fit.T @ g_x, quick)
            if plain is None:
                return None
            residuals.append(normal.residuals(J_fit @ plain))
        plain_w = plain
        var = residuals[1] / np.maximum(normal.rows - k_fit / self.n, 1.0)
        S_vv, S_ww, S_vw = normal.weighted(np.stack([v * v * var, w * w * var, v * w * var]))[0]
        C_a = self._reference_cov(self.include_robot_uncertainty)
        # The moments' conversion leaves the robot's C_a out where robot.yaml's held-out runs chose so
        # (moments_robot_covariance); C_a's response stays in their covariance either way (covariance() below).
        # The known load-friction μ_j's σ stays in both: without it they would be taken as exact.
        C_lf = self._reference_cov(False)
        C_w = C_a if self.moments_robot_covariance else C_lf
        s2_v, s2_w = (float(wx @ r) / dof_rows for wx, r in ((v, residuals[0]), (w, residuals[1])))
        gram_v, R_v = _conversion(I_v, s2_v if s2_v > 0 else 1.0, J, C_a)
        gram_v = gram_v + np.diag(prior_info)
        B_v = _spd_solve(gram_v, R_v, quick)
        if B_v is None:
            return None

        def two_step(C_x: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
            """(H_v, H_w): z = H_v g_v + H_w g_w with the rest converted with C_x."""
            if k == 1 or not mass_first:
                return B_v, np.zeros_like(B_v)
            gram_w, R_w = _conversion(I_w, s2_w if s2_w > 0 else 1.0, J, C_x)
            gram_w = gram_w + np.diag(prior_info)
            # Column 0 is the mass (φ_L's first entry; structurally identifiable whenever any entry is).
            mass_map = B_v[0]
            rest = slice(1, k)
            K = _spd_solve(gram_w[rest, rest], np.column_stack([gram_w[rest, 0], R_w[rest]]), quick)
            if K is None:
                return None
            H_v = np.zeros((k, J.shape[0]))
            H_w = np.zeros((k, J.shape[0]))
            H_v[0] = mass_map
            H_v[rest] = -np.outer(K[:, 0], mass_map)
            H_w[rest] = K[:, 1:]
            return H_v, H_w

        maps = two_step(C_w)
        if maps is None:
            return None
        H_v, H_w = maps
        z = H_v @ g_v + H_w @ g_w
        pull, gain_var = None, None
        if payload_columns and self._gain_rel_cov is not None:
            pull = normal.G @ (J[:, :payload_columns] @ z[:payload_columns])   # (n, u): G_j ε_L
            gain_var = self._gain_rel_cov                  # cov(r) (n, n): gain_load_only_covariance

        def covariance(A_v: np.ndarray, A_w: np.ndarray, noise: np.ndarray | None = None,
                       target: np.ndarray | None = None) -> np.ndarray:
            """Covariance of A_v g_v + A_w g_w: the noise (white, per joint, unless its covariance `noise` is
            given), the robot's error δ, the gains' share (pull) and, as an estimate of `target` z (rows; None: of
            nothing, a difference of two estimates), the prior's pull on the unknowns it holds."""
            if noise is None:
                cross = A_v @ S_vw @ A_w.T
                out = A_v @ S_vv @ A_v.T + A_w @ S_ww @ A_w.T + cross + cross.T
            else:
                out = noise.copy()
            if C_a is not None:
                P = A_v @ I_v + A_w @ I_w          # the response to the robot's error δ
                out += P @ C_a @ P.T
            if pull is not None and gain_var is not None:
                D = A_v @ (v[:, None] * pull).T + A_w @ (w[:, None] * pull).T   # (k, n): the response to γ_j
                out += D @ gain_var @ D.T
            if with_prior:
                bias = (A_v @ I_v + A_w @ I_w) @ J - (0.0 if target is None else target)
                held = prior_info > 0
                out += (bias[:, held] * prior_var[held]) @ bias[:, held].T
            return 0.5 * (out + out.T)

        eye = np.eye(k)
        cov = covariance(H_v, H_w, target=eye)
        theta_fit = self.theta_b0 + J_fit @ plain_w
        if not quick and k > 3 and mass_first:
            # The first moments' noise as it is, serially correlated (the long-run covariance the moments check
            # uses, never below the white-noise one). Judging the check by it while reporting the moments with
            # white noise let a CoM pass the check and be reported with a σ its error did not respect (UR10e
            # 15harm: y 8.4 mm from khalil-3's, 4σ of the white-noise σ). Only the moments' variances are
            # rescaled (correlations kept): the mass's long-run variance on these drives is 3x what its error
            # shows (2.4-2.9 % for errors under 1 %), the model error its slow residual holds being already
            # carried by robot.yaml's measured model error.
            hac = self._moments_noise_hac(H_v, H_w, theta_fit)
            if hac is not None:
                cross = H_v @ S_vw @ H_w.T
                white = H_v @ S_vv @ H_v.T + H_w @ S_ww @ H_w.T + cross + cross.T
                correlated = covariance(H_v, H_w, floored(0.5 * (hac + hac.T), 0.5 * (white + white.T)), eye)
                scale = np.ones(k)
                first_moments = np.arange(1, 4)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.diag(correlated)[first_moments] / np.diag(cov)[first_moments]
                scale[first_moments] = np.sqrt(np.where(np.isfinite(ratio) & (ratio > 1.0), ratio, 1.0))
                cov = cov * np.outer(scale, scale)
        if (check_moments and k > 3 and mass_first and self.compare_conversions and self.include_robot_uncertainty
                and self.robot_cov_b is not None):
            # Both conversions are linear in the same evidence: their difference (A_v g_v + A_w g_w) holds the
            # noise only where they weigh it differently, and its covariance under "θ̂_a's error is N(0, C_a)" is
            # known; a difference beyond it is a robot error C_a does not describe (model_error.py).
            other = two_step(C_lf if self.moments_robot_covariance else C_a)
            self.conversion_difference = None
            if other is not None:
                A_v, A_w = np.vstack([H_v[1:4], other[0][1:4]]), np.vstack([H_w[1:4], other[1][1:4]])
                noise = self._moments_noise_hac(A_v, A_w, theta_fit)
                self.conversion_difference = (A_v @ g_v + A_w @ g_w,
                                              covariance(A_v, A_w, noise, np.vstack([eye[1:4], eye[1:4]])))
        if check_moments and k > 3 and mass_first:
            # The first moments with Xu's weights alone against these: the same data, so their difference has
            # a known covariance; beyond it the joints disagree (a wrist gain or friction the model lacks).
            # Beyond χ²₃'s 99 % the disagreement itself is added to their covariance: the error is at least that.
            # The noise is the residuals' as they are when the samples are kept (judge_moments_on): serially
            # correlated on real drives (efforts filtered at 5 Hz, slowly varying model error). Judged as white
            # noise, the UR10e's 15harm and 01_31 runs disagreed at χ² 800 and 263 and the CoM was withheld,
            # where the combined moments agree with khalil-3's (the Xu moments, shoulder-heavy, are what differ).
            moments = slice(1, 4)
            diff = z[moments] - B_v[moments] @ g_v
            A_v, A_w = H_v[moments] - B_v[moments], H_w[moments]
            noise = None if quick else self._moments_noise_hac(A_v, A_w, theta_fit)
            C = covariance(A_v, A_w, noise)
            sol = _spd_solve(C, diff, quick=False)   # None: C not definite, no check
            self.moment_disagreement = float(diff @ sol) if sol is not None else float("nan")
            if self.moment_disagreement > MOMENTS_DISAGREE_CHI2:
                cov[1:4, 1:4] += np.outer(diff, diff)
        return z, cov

    def batch_friction_prior_var(self) -> np.ndarray:
        """The friction change's unknowns as this estimator holds them: every parameter free (Xu), the constant
        offsets by robot.yaml's recorded drift where it has one (offset_prior_var)."""
        return self.offset_prior_var[10:10 + self.kf]

    def model_error_ratio(self) -> np.ndarray | float:
        """Residual RMS of the payload fit over the unloaded identification's torque RMSE, per joint (as the
        offline methods report it): near 1 when the payload model explains the loaded data as well as the
        robot model its own. From the per-joint normal equations, not the RLS cost (which holds Xu's prior
        misfit); NaN with forgetting (the sums do not forget)."""
        rmse = np.asarray(getattr(self.robot, "rmse", []), dtype=float).reshape(-1)
        normal = self._normal
        if rmse.size != self.n or not np.all(rmse > 0) or self.rls.forgetting != 1.0:
            return float("nan")
        # Over the entries the motion determines: a joint that never moved leaves its friction columns empty,
        # and the check must not vanish with them.
        ok = self._determined()
        J = self.J[:, ok]
        if not J.shape[1]:
            return float("nan")
        # With the known load-friction μ_j and the offsets held by their priors, as the noise level's fit
        # (_two_weightings).
        var = self.offset_prior_var[ok]
        prior = np.concatenate([np.where(np.isfinite(var), 1.0 / var, 0.0), self._lf_known_info])
        J = np.hstack([J, self._lf_known_cols])
        k = J.shape[1]
        if normal.rows.sum() <= k:
            return float("nan")
        (I_w,), (g_w,) = normal.weighted(np.stack([1.0 / self.moment_noise_std**2]))
        plain = _spd_solve(J.T @ I_w @ J + np.diag(prior), J.T @ g_w, quick=False)
        if plain is None:
            return float("nan")
        var = normal.residuals(J @ plain) / np.maximum(normal.rows - k / self.n, 1.0)
        return np.sqrt(var) / self.model_error_reference(rmse)

def _conversion(info: np.ndarray, s2: float, J: np.ndarray, robot_cov: np.ndarray | None):
    """(Jᵀ W J, R) of the data-only conversion for evidence g with information `info` and noise scale s2:
    W = (I + M C_a)⁻¹ M, M = info / s2, and Jᵀ W ε_d = R g (DifferenceRLS._two_weightings)."""
    M = info / s2
    if robot_cov is None:
        WJ, R = M @ J, J.T / s2
    else:
        lu = lu_factor(np.eye(M.shape[0]) + M @ robot_cov, check_finite=False)
        WJ = lu_solve(lu, M @ J, check_finite=False)
        R = lu_solve(lu, J, trans=1, check_finite=False).T / s2
    gram = J.T @ WJ
    return 0.5 * (gram + gram.T), R


def _spd_solve(G: np.ndarray, rhs: np.ndarray, quick: bool) -> np.ndarray | None:
    """G⁻¹ rhs for a symmetric positive definite G, through its unit-diagonal Cholesky factor; None when
    G is not (numerically) definite: a pivot below QUICK_PIVOT when quick, a failed factorisation otherwise."""
    d = np.sqrt(np.maximum(np.diag(G), 0.0))
    if not np.all(d > 0):
        return None
    L, info = lapack.dpotrf(G / np.outer(d, d), lower=1, clean=1)
    if info != 0 or (quick and np.min(np.diag(L)) ** 2 < QUICK_PIVOT):
        return None
    rhs = np.asarray(rhs, dtype=float)
    scaled = rhs / (d[:, None] if rhs.ndim == 2 else d)
    x, _ = lapack.dpotrs(L, scaled, lower=1)
    return x / (d[:, None] if rhs.ndim == 2 else d)


def offset_prior_variance(robot, columns: int) -> np.ndarray:
    """(columns,) the prior variance of each of z's unknowns [φ_L, Δφ_f, μ]: robot.yaml's measured offset drift
    (offset_spread.OffsetSpread.prior_std, N·m) squared on the constant offsets' Δφ_f entries, inf elsewhere and
    everywhere when robot.yaml has no such record (Xu's free offsets)."""
    var = np.full(columns, np.inf)
    spread = getattr(robot, "offset_drift", None)
    if spread is None:
        return var
    std = spread.per_offset_parameter(robot.friction.param_names)
    held = np.flatnonzero(np.isfinite(std))
    var[10 + held] = std[held] ** 2
    return var
