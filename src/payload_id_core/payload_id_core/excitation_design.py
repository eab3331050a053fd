"""Optimal excitation: choose Fourier coefficients that make the identification well conditioned.

Objectives (all minimised; each is evaluated on `n_samples` points of one period):

- ``base``: condition number of the base regressor with linear friction (Gautier 1991 base
  parameters, Swevers 1997's criterion; Tadese 2022 §4.3 reaches 80.25, Xu 2024 §4.2 79.67).
- ``xu``: Xu 2024 eq. 18, 10 cond(Y) + 5 cond(Y_i) + cond(Y_g) + cond(Y_f), the full, inertial,
  first-moment (with mass) and friction sub-regressors of the same matrix.
- ``payload``: condition number of the payload regressor W_L (N n x 10), what payload
  identification needs (Khalil 2007 §III; Xu 2024 eq. 15's unknowns).
- ``dopt``: D-optimality, -log det(Yᵀ Y / N) of the base regressor with friction (Swevers 1997).
- ``inertia``: A-optimality for the payload, log tr(Σ_L) with Σ_L the covariance (per unit row noise,
  rows divided by the torque noise, φ_L in size-L units below) of the payload parameters taken from
  the robot's base parameters fitted with friction on the same motion, Σ_L = (J_εᵀ S J_ε)⁻¹, S the
  Schur complement of the base block of [Y_b, Y_f]ᵀ[Y_b, Y_f] (the base parameters' information once
  friction is fitted too) and J_ε the payload Jacobian (Gaz 2017 eq. 27). That is Xu 2024's
  difference method (the default); the direct methods' covariance (W_Lᵀ W_L)⁻¹ is never larger, since
  W_L = Y_b J_ε. The trace is the summed variance, which the six inertia entries dominate (their
  signal is the weakest). A small condition number (``payload``) only says the parameters are excited
  alike: on the simulated UR10 the ``payload`` trajectory left the inertia at 7-15 % error, all of it
  within the estimators' σ (issue 13). Minimising W_L's variance alone is not enough either: the
  difference method then loses the robot's base parameters (27 % inertia error).
- ``convergence``: how soon an online estimator can stand behind its mass. The same difference-method
  covariance Σ_L as ``inertia``, but of the motion's first `horizon_s` seconds: log Σ_L,mass after
  horizon_s / 2 and after horizon_s of motion, plus CONVERGENCE_PERIOD_WEIGHT x log tr Σ_L over the
  whole period (the CoM and inertia still need the rest of it). Both early terms, because the online
  rule (payload/online/base.py) declares only an estimate that is precise and has settled over the last
  second: the mass must already be determined halfway. A period-wide objective spreads the information
  over the period: the bundled ur10_payload (cond W_L, 10 s) predicts a mass σ of 5.7 % of 3.5 kg after 1 s
  and 0.45 % after 2 s (the UR10 profile's noise, 500 Hz), and difference-rls declared it converged at 5.35 s
  on the simulated cell; ur10_payload_fast (this objective, horizon 2 s, 4 s period) predicts 0.24 % and
  0.15 %, and declares at 1.95 s (bench/payload.py cell_convergence_*, robot identified with its gear friction).

Scaling (Xu 2024 §4.2, eq. 18). Xu weights the stacked regressor's rows by Λ0^(-1/2), Λ0 the
per-joint torque noise covariance estimated from the OLS residuals R0 = τ - Y π_ols of a first run,
and does not scale columns: parameters stay in SI units. That is the default here (`column_scaling
='none'`), so `base_cond` is comparable with Xu's 79.67. The noise std per joint (`noise_std`) is,
in order of preference: given (e.g. `noise_std_from_run`, which is Xu's Λ0 from a simulated run),
the `torque_noise_std` of the robot's simulation profile data/sim/<robot>.yaml (measured on real
UR data), otherwise proportional to the joint's effort limit (a proxy: only ratios matter for a
condition number). `column_scaling='unit'` scales the base columns to unit norm instead (Gautier's
unit-free figure; always reported as `base_cond_unit_columns`). The payload regressor's columns
are expressed for a payload of characteristic size L (default 0.1 m): φ_L in kg, kg·L, kg·L².
Unit-norm scaling there would hide exactly what payload identification suffers from, a weak
inertia signal next to the mass's.

Every joint must move: base parameters of a joint that barely turns are identified from nothing
(a base trajectory that left the shoulder pan at 0.14 rad/s gave 168 N·m validation RMSE on it).
Each moving joint's RMS velocity is kept at or above `min_rms_velocity_fraction` of its
(margin-reduced) velocity limit. With the rest-coordinate basis orthonormal, the RMS velocity of
joint j over a period is ||z_j|| / sqrt(2) (Parseval), a smooth quadratic constraint; peak ≥ RMS.

Constraints. q, q̇, q̈ are linear in the null-space coordinates z of excitation.rest_basis, so the
joint position, velocity and acceleration limits on a coarse grid are linear inequalities (exact
Jacobians for SLSQP); Cartesian limits are nonlinear, with Jacobians from pinocchio's frame Jacobian.
The result is verified on a 1 ms grid and shrunk toward the offset pose (which scales q - q0, q̇, q̈
together) until it passes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin
import scipy.optimize

from payload_id_core.blas import single_threaded_blas
from payload_id_core.dynamics.base_params import compute_base_parameters
from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON, make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_columns, payload_transform, rigid_body_regressor
from payload_id_core.errors import Choice, PayloadIdError, parse_choice
from payload_id_core.excitation.fourier import FourierTrajectory, rest_basis
from payload_id_core.excitation.limits import CartesianLimit, MotionLimits, frame_positions, limit_violations, robot_key
from payload_id_core.robot_id import full_regressor, rotor_structure
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.sim import simulate
from payload_id_core.sim.profile import load_profile


class Objective(Choice):
    """What the optimizer makes well conditioned (values are the command line's --objective; a Choice, so a message
    shows the name typed, never 'Objective.CONVERGENCE')."""

    BASE = "base"          # the base regressor with friction: robot identification
    XU = "xu"              # Xu 2024 eq. 18: weighted sum of sub-regressor condition numbers
    PAYLOAD = "payload"    # the payload regressor W_L: payload identification
    DOPT = "dopt"          # D-optimality of the base regressor
    INERTIA = "inertia"    # A-optimality of the payload from the base parameters (summed variance, inertia-dominated)
    CONVERGENCE = "convergence"   # the mass's variance after the first seconds of motion: online convergence

    @classmethod
    def parse(cls, value: Objective | str) -> Objective:
        return parse_choice(cls, value, "excitation objective")


class ColumnScaling(Choice):
    NONE = "none"          # SI units, as Xu 2024
    UNIT = "unit"          # unit-norm columns


OBJECTIVES = tuple(o.value for o in Objective)
COLUMN_SCALINGS = tuple(c.value for c in ColumnScaling)

# Xu 2024 eq. 18 weights: full, inertial, first-moment, friction.
XU_WEIGHTS = (10.0, 5.0, 1.0, 1.0)
# 'convergence' objective: weight of the whole period's log tr Σ_L next to the two early mass terms. At 0.5 the
# 10 s design left difference-rls's inertia 8-13 % off on the cell, at 2 (the default) 5-10 %, for the same
# early mass σ within 10 %.
CONVERGENCE_PERIOD_WEIGHT = 2.0
# Sample rate at which the design reports the mass σ it predicts after the first seconds (a robot's usual rate).
REPORT_RATE_HZ = 500.0


def default_offsets(model) -> np.ndarray:
    """A start pose away from singularities: Xu 2024's UR pose [0, -π/2, 0, -π/2, 0, 0], the Panda's
    ready pose, otherwise the middle of each joint's range (clipped to ±π/2 around zero)."""
    key = robot_key(model)
    if key.startswith("ur") and model.n == 6:
        return np.array([0.0, -math.pi / 2, 0.0, -math.pi / 2, 0.0, 0.0])
    if key == "panda" and model.n == 7:
        return np.array([0.0, 0.0, 0.0, -math.pi / 2, 0.0, math.pi / 2, math.pi / 4])
    lim = model.limits
    mid = 0.5 * (np.asarray(lim.lower) + np.asarray(lim.upper))
    return np.clip(np.where(np.isfinite(mid), mid, 0.0), -math.pi / 2, math.pi / 2)


def _cond_gram(g: np.ndarray) -> float:
    """Condition number of M from its Gram matrix G = MᵀM (sqrt of the eigenvalue ratio); exact enough
    below ~1e7 and ~20x faster than an SVD of the tall M, which matters inside the optimizer."""
    ev = np.linalg.eigvalsh(g)
    return float(math.sqrt(ev[-1] / ev[0])) if ev[0] > ev[-1] * 1e-15 else math.inf


def _variance_trace(g: np.ndarray) -> float:
    """tr(G⁻¹) of a Gram matrix G = MᵀM: the summed variance of least squares on M's columns per unit
    row noise (A-optimality); inf when M is rank deficient."""
    ev = np.linalg.eigvalsh(g)
    return float(np.sum(1.0 / ev)) if ev[0] > ev[-1] * 1e-15 else math.inf


def _unit_gram(g: np.ndarray) -> np.ndarray:
    """Gram matrix of M with every column scaled to unit norm."""
    d = np.sqrt(np.diag(g))
    d = np.where(d > 0, d, 1.0)
    return g / np.outer(d, d)


def payload_column_scale(size_m: float) -> np.ndarray:
    """Column scales of the payload regressor for a payload of characteristic size L: φ_L in units of
    [kg, kg·L (x3), kg·L² (x6)], so each parameter counts at the precision that matters for such a payload."""
    return np.array([1.0] + [size_m] * 3 + [size_m**2] * 6)


def profile_noise_std(model) -> tuple[np.ndarray | None, str]:
    """Per-joint torque noise std (N·m) of the robot's simulation profile data/sim/<robot>.yaml
    (measured on real data), or (None, reason) when no profile matches the robot."""
    key = robot_key(model)
    try:
        prof = load_profile(key, model.n)
    except PayloadIdError:
        return None, f"no simulation profile sim_{key}.yaml"
    std = np.asarray(prof.torque_noise_std, dtype=float)
    if std.shape != (model.n,) or not np.all(std > 0):
        return None, f"profile sim_{key}.yaml has no positive torque_noise_std"
    return std, f"torque_noise_std of {Path(prof.source).name}"


def default_noise_std(model) -> tuple[np.ndarray, str]:
    """(n,) N·m torque noise used to weight rows before any data exist, and where it came from."""
    std, source = profile_noise_std(model)
    if std is not None:
        return std, source
    effort = np.asarray(model.limits.effort, dtype=float)
    effort = np.where(np.isfinite(effort) & (effort > 0), effort, 1.0)
    return 0.01 * effort, "1 % of the URDF effort limit (proxy: no measured noise for this robot)"


def noise_std_from_run(model, trajectory, profile: str = "ur10", seed: int = 0) -> np.ndarray:
    """Xu 2024 §4.2's Λ0: per-joint std of the OLS torque residuals R0 = τ - Y π_ols on a simulated run
    of `trajectory` (payload_id_core.sim, `profile`), Y = base + free rotor inertia + linear friction.
    diag(Λ0) = Σ_k R0_jk² / (N - p/n) per joint j (Xu's N - p, per joint rows)."""
    rec = simulate(model, trajectory, None, profile, seed=seed)
    sig = conditioned_signals(rec, list(model.joint_names), source="commanded")
    base = compute_base_parameters(model)
    fric = make_friction_model("linear", list(model.joint_names))
    y = full_regressor(model, base, rotor_structure(model, base), fric, sig.q, sig.qd, sig.qdd)
    a = y.reshape(-1, y.shape[2])
    tau = np.asarray(sig.tau, dtype=float)
    pi = np.linalg.lstsq(a, tau.reshape(-1), rcond=None)[0]
    r = tau - (a @ pi).reshape(tau.shape)
    dof = r.shape[0] - y.shape[2] / model.n
    return np.sqrt((r**2).sum(axis=0) / dof)


class RegressorMetrics:
    """Condition numbers and D-optimality of one robot's regressors for given motion.

    Built once per robot (base parameters, friction model, row weights); `evaluate(q, qd, qdd)` is the
    inner loop of the optimizer. Rows are divided by `noise_std` (Xu 2024's Λ0^(-1/2); default
    `default_noise_std`); `row_weights` overrides that directly. `column_scaling` 'none' (Xu, SI
    units) or 'unit' decides what `base_cond` and the sub-regressor figures mean.
    """

    def __init__(self, model, frame: str | None = None, friction: str = "linear", row_weights=None,
                 payload_size_m: float = 0.1, noise_std=None, column_scaling: ColumnScaling | str = ColumnScaling.NONE,
                 load_friction: bool = False):
        self.model = model
        # Whether mass_variance also fits the load-dependent friction μ_j of every joint (payload/load_friction.py),
        # as the online estimators do where robot.yaml has no gear friction: what they can know early (bench/
        # cell_convergence.py); the design objectives leave it out (design.md, "The cell's convergence ≤ 2 s").
        self.load_friction = bool(load_friction)
        self._link_parameters = model.standard_parameters()
        self.frame = model.payload_frame(frame)
        self.base = compute_base_parameters(model)
        self.friction = make_friction_model(friction, list(model.joint_names))
        self.column_scaling = parse_choice(ColumnScaling, column_scaling, "column scaling")
        if row_weights is not None:
            self.noise_std, self.noise_source = 1.0 / np.asarray(row_weights, dtype=float), "given row weights"
        elif noise_std is not None:
            self.noise_std = np.broadcast_to(np.asarray(noise_std, dtype=float), (model.n,)).copy()
            self.noise_source = "given"
        else:
            self.noise_std, self.noise_source = default_noise_std(model)
        if self.noise_std.shape != (model.n,) or not np.all(np.isfinite(self.noise_std) & (self.noise_std > 0)):
            raise PayloadIdError(f"torque noise std {np.asarray(self.noise_std).tolist()} is not one positive value "
                                 f"per joint", "give positive N·m values, one per joint")
        self.row_weights = 1.0 / self.noise_std
        if not payload_size_m > 0:
            raise PayloadIdError(f"payload size {payload_size_m} m is not positive", "use e.g. 0.1 m")
        self.payload_scale = payload_column_scale(payload_size_m)
        joint, placement = payload_transform(model, self.frame)
        # J_ε (Gaz 2017 eq. 27) in size-L units: the base-parameter change per unit of scaled φ_L.
        self.payload_jacobian = self.base.K[:, 10 * (joint - 1): 10 * joint] @ placement * self.payload_scale
        kinds = self.base.independent % 10
        nb = self.base.b
        nf = self.friction.n_params
        self.groups = {
            "inertial": np.flatnonzero(kinds >= 4),
            "first_moment": np.flatnonzero(kinds < 4),
            "friction": nb + np.arange(nf),
        }

    def matrices(self, q, qd, qdd) -> tuple[np.ndarray, np.ndarray]:
        """(stacked base+friction regressor, stacked payload regressor in size-L units), rows weighted."""
        y = rigid_body_regressor(self.model, q, qd, qdd)
        w = self.row_weights[None, :, None]
        full = np.concatenate([self.base.reduce(y), self.friction.columns(qd)], axis=2) * w
        pay = payload_columns(self.model, self.frame, y) * w * self.payload_scale
        return full.reshape(-1, full.shape[2]), pay.reshape(-1, 10)

    def load_friction_columns(self, q, qd, qdd, y: np.ndarray | None = None) -> np.ndarray:
        """(N n, n) rows weighted: the load-dependent friction's column of each joint, μ_j (|τ_b,j| − |τ_a,j|)
        sgn q̇_j (payload/load_friction.py), for a unit mass at the payload frame's origin: to first order in the
        payload, sgn(τ_a,j) sgn(q̇_j) τ_L,j, τ_a the URDF's own torque. Until joint j reverses (or its torque
        changes sign) the column is ± the payload's own torque on that joint, so μ_j takes the mass's share of
        the joint's rows: the motion's first seconds determine the mass only once the joints have reversed.
        `y`: rigid_body_regressor(q, qd, qdd) when already computed."""
        if y is None:
            y = rigid_body_regressor(self.model, q, qd, qdd)
        tau_a = y @ self._link_parameters
        tau_l = payload_columns(self.model, self.frame, y)[..., 0]
        values = np.sign(tau_a) * np.tanh(np.asarray(qd) / DEFAULT_SIGN_EPSILON) * tau_l * self.row_weights
        n = self.model.n
        out = np.zeros(values.shape + (n,))
        out[..., np.arange(n), np.arange(n)] = values
        return out.reshape(-1, n)

    def difference_matrix(self, q, qd, qdd) -> np.ndarray:
        """The stacked base+friction regressor (rows weighted), with the load-friction columns when
        self.load_friction: the unknowns of the loaded fit the payload's variance is taken through."""
        y = rigid_body_regressor(self.model, q, qd, qdd)
        full = np.concatenate([self.base.reduce(y), self.friction.columns(qd)], axis=2)
        full = full * self.row_weights[None, :, None]
        full = full.reshape(-1, full.shape[2])
        if self.load_friction:
            full = np.hstack([full, self.load_friction_columns(q, qd, qdd, y)])
        return full

    def _difference_information(self, g: np.ndarray) -> np.ndarray | None:
        """J_εᵀ S J_ε: the information on φ_L (size-L units, per unit row noise) through the base parameters
        fitted with friction, S the Schur complement of g's base block (see the module doc); None when the
        friction block is singular."""
        nb = self.base.b
        g_bb, g_bf, g_ff = g[:nb, :nb], g[:nb, nb:], g[nb:, nb:]
        try:
            schur = g_bb - g_bf @ np.linalg.solve(g_ff, g_bf.T) if g_ff.size else g_bb
        except np.linalg.LinAlgError:
            return None
        info = self.payload_jacobian.T @ schur @ self.payload_jacobian
        return 0.5 * (info + info.T)

    def _difference_variance(self, g: np.ndarray) -> float:
        """tr((J_εᵀ S J_ε)⁻¹): summed variance of φ_L through the base parameters fitted with friction."""
        info = self._difference_information(g)
        return math.inf if info is None else _variance_trace(info)

    def mass_variance(self, q, qd, qdd) -> float:
        """(J_εᵀ S J_ε)⁻¹ at the mass: its variance (kg², per unit row noise) from these samples by the
        difference method (with the load-friction μ_j when self.load_friction); inf when the samples do not
        determine φ_L."""
        full = self.difference_matrix(q, qd, qdd)
        info = self._difference_information(full.T @ full)
        if info is None:
            return math.inf
        ev = np.linalg.eigvalsh(info)
        if not ev[0] > ev[-1] * 1e-15:
            return math.inf
        return float(np.linalg.solve(info, np.eye(10)[0])[0] / self.payload_scale[0] ** 2)

    def evaluate(self, q, qd, qdd, only: Objective | None = None) -> dict:
        """Every figure (or, with `only` = an objective name, just what that objective needs).

        `base_cond` and the Xu sub-regressor figures use the instance's column scaling;
        `base_cond_si` (no column scaling, Xu 2024) and `base_cond_unit_columns` are both reported."""
        full, pay = self.matrices(q, qd, qdd)
        out = {}
        if only in (None, Objective.PAYLOAD):
            out["payload_cond"] = _cond_gram(pay.T @ pay)
            if only:
                return out
        g = full.T @ full
        if only in (None, Objective.INERTIA):
            out["payload_variance"] = self._difference_variance(g)
            if only:
                return out
            out["payload_variance_direct"] = _variance_trace(pay.T @ pay)
        if only in (None, Objective.DOPT):
            sign, logdet = np.linalg.slogdet(g / full.shape[0])
            out["logdet"] = float(logdet) if sign > 0 else -math.inf
            if only:
                return out
        gs = _unit_gram(g) if self.column_scaling is ColumnScaling.UNIT else g
        out["base_cond"] = _cond_gram(gs)
        if only is None:
            out["base_cond_si"] = out["base_cond"] if self.column_scaling is ColumnScaling.NONE else _cond_gram(g)
            out["base_cond_unit_columns"] = (out["base_cond"] if self.column_scaling is ColumnScaling.UNIT
                                             else _cond_gram(_unit_gram(g)))
        if only is Objective.BASE:
            return out
        for name, idx in self.groups.items():
            out[f"{name}_cond"] = _cond_gram(gs[np.ix_(idx, idx)]) if idx.size else 1.0
        c = (out["base_cond"], out["inertial_cond"], out["first_moment_cond"], out["friction_cond"])
        out["xu"] = float(sum(wi * ci for wi, ci in zip(XU_WEIGHTS, c)))
        return out


def objective_value(metrics: dict, objective: Objective | str) -> float:
    """The number the optimizer minimises for `objective` (log of a condition number: same minimiser,
    better scaled)."""
    objective = Objective.parse(objective)
    if objective is Objective.BASE:
        return math.log(metrics["base_cond"])
    if objective is Objective.PAYLOAD:
        return math.log(metrics["payload_cond"])
    if objective is Objective.INERTIA:
        return math.log(metrics["payload_variance"])
    if objective is Objective.XU:
        return math.log(metrics["xu"])
    if objective is Objective.CONVERGENCE:
        raise ValueError("the convergence objective needs the motion's first seconds: use convergence_value")
    return -metrics["logdet"]


# Size limits, checked before anything is allocated. The optimizer (SLSQP) works on dense matrices of
# (joints x 2H) coefficients and costs their cube per iteration: 25 harmonics on 6 joints (300 variables)
# take minutes, 1000 would take days. The final limit check samples the whole period every 1 ms
# (positions, velocities, accelerations and the 2H-column basis of each): its memory grows with the
# duration times the harmonics and must fit in DESIGN_GRID_BUDGET.
MAX_HARMONICS = 25
DESIGN_GRID_BUDGET = 1024**3
DESIGN_CHECK_DT = 1e-3


def convergence_value(metrics: RegressorMetrics, design, x, early: list[np.ndarray], period: np.ndarray) -> float:
    """The 'convergence' objective (module doc): log Σ_L,mass on each early grid plus the weighted log tr Σ_L
    over the period's grid."""
    value = sum(math.log(metrics.mass_variance(*design.motion(x, t))) for t in early)
    q, qd, qdd = design.motion(x, period)
    whole = metrics.evaluate(q, qd, qdd, only=Objective.INERTIA)["payload_variance"]
    return value + CONVERGENCE_PERIOD_WEIGHT * math.log(whole)


def early_mass_std(metrics: RegressorMetrics, design, x) -> dict[str, float]:
    """The mass σ (kg) the difference method would have after half the horizon, the horizon and the whole
    period of motion sampled at REPORT_RATE_HZ, under the design's torque noise (white): what the design
    promises an online estimator, before model error. Keys in the order half horizon, horizon, period (the
    horizon clipped to the period)."""
    out = {}
    horizon = min(design.horizon_s, design.duration)
    for h in (horizon / 2, horizon, design.duration):
        t = np.arange(1, max(int(round(h * REPORT_RATE_HZ)), 1) + 1) / REPORT_RATE_HZ
        out[f"{h:g} s"] = float(math.sqrt(metrics.mass_variance(*design.motion(x, t))))
    return out


def check_design_size(duration: float, harmonics: int, n_joints: int) -> None:
    """Refuse, before any allocation, a design whose optimization or 1 ms limit check is unbounded."""
    if harmonics > MAX_HARMONICS:
        raise PayloadIdError(
            f"{harmonics} harmonics are more than the limit of {MAX_HARMONICS}: the optimizer's time grows with "
            f"the cube of the {2 * harmonics} coefficients per joint",
            f"use --harmonics {MAX_HARMONICS} or fewer (5 is usual; more only with a longer --duration)")
    samples = duration / DESIGN_CHECK_DT + 1
    need = samples * (3 * 2 * harmonics + 3 * n_joints) * 8
    if need > DESIGN_GRID_BUDGET:
        limit_s = DESIGN_GRID_BUDGET / ((3 * 2 * harmonics + 3 * n_joints) * 8) * DESIGN_CHECK_DT
        raise PayloadIdError(
            f"a {duration:g} s period would need about {need / 1024**3:.3g} GiB to check the limits every "
            f"{DESIGN_CHECK_DT * 1e3:g} ms; the limit is {DESIGN_GRID_BUDGET / 1024**3:g} GiB, about "
            f"{limit_s:.0f} s with {harmonics} harmonics", "use a shorter --duration (10-60 s is usual)")


@dataclass
class ExcitationDesign:
    """What to optimize: the robot, the trajectory's shape, its limits and the criterion."""

    model: RobotModel
    limits: MotionLimits
    objective: Objective | str = Objective.PAYLOAD
    frame: str | None = None
    duration: float = 10.0
    harmonics: int = 5
    base_frequency_hz: float | None = None       # default 1 / duration
    offsets: np.ndarray | None = None            # default default_offsets(model)
    joints: list[str] | None = None              # joints that move; the others hold their offset
    cartesian: list[CartesianLimit] = field(default_factory=list)
    n_samples: int = 150                         # regressor samples per objective evaluation
    n_constraint_samples: int = 200              # coarse grid of the limits during optimization
    friction: str = "linear"
    payload_size_m: float = 0.1                  # characteristic payload size for the payload objective's scaling
    noise_std: np.ndarray | None = None          # N·m per joint, rows / noise (Xu Λ0); default default_noise_std
    column_scaling: ColumnScaling | str = ColumnScaling.NONE   # for base/xu objectives
    min_rms_velocity_fraction: float = 0.25      # each moving joint's RMS velocity >= this x its velocity limit
    horizon_s: float = 2.0                       # 'convergence' objective: seconds of motion the mass must be known by

    def __post_init__(self) -> None:
        m = self.model
        self.objective = Objective.parse(self.objective)
        if not (math.isfinite(self.duration) and self.duration > 0):
            raise PayloadIdError(f"duration {self.duration} s is not positive", "use e.g. --duration 10")
        if self.base_frequency_hz is None:
            self.base_frequency_hz = 1.0 / self.duration
        if not (self.base_frequency_hz > 0):
            raise PayloadIdError(f"base frequency {self.base_frequency_hz} Hz is not positive",
                                 "use e.g. 0.1 Hz, or leave it out for 1 / duration")
        periods = self.duration * self.base_frequency_hz
        if abs(periods - round(periods)) > 1e-6 or round(periods) < 1:
            raise PayloadIdError(
                f"duration {self.duration} s is not a whole number of periods of {self.base_frequency_hz} Hz",
                "leave --base-frequency out (1 / duration) or use k / duration")
        if self.harmonics < 2:
            raise PayloadIdError(f"{self.harmonics} harmonic(s) cannot start and end at rest",
                                 "use --harmonics 2 or more (5 is usual)")
        check_design_size(self.duration, self.harmonics, m.n)
        if self.objective is Objective.CONVERGENCE:
            ok = (isinstance(self.horizon_s, (int, float, np.integer, np.floating))
                  and not isinstance(self.horizon_s, (bool, np.bool_)))
            if not (ok and math.isfinite(self.horizon_s) and 0 < self.horizon_s <= self.duration):
                raise PayloadIdError(f"horizon {self.horizon_s!r} s is not a duration within the trajectory's "
                                     f"(0, {self.duration:g}] s", "use e.g. --horizon 2 (at most --duration)")
            self.horizon_s = float(self.horizon_s)
        if self.column_scaling not in COLUMN_SCALINGS:
            raise PayloadIdError(f"unknown column scaling '{self.column_scaling}'",
                                 f"use one of {', '.join(COLUMN_SCALINGS)}")
        if not 0.0 <= self.min_rms_velocity_fraction < 1.0 / math.sqrt(2.0):
            raise PayloadIdError(f"minimum RMS velocity fraction {self.min_rms_velocity_fraction} is outside "
                                 "[0, 0.707)", "use e.g. 0.25 (a sine reaching the limit has RMS 0.707 of it)")
        if self.joints is None:
            self.moving = np.arange(m.n)
        else:
            unknown = [j for j in self.joints if j not in m.joint_names]
            if unknown or not self.joints:
                raise PayloadIdError(f"joints {unknown or self.joints} are not actuated joints of the URDF",
                                     f"choose among {', '.join(m.joint_names)}")
            self.moving = np.array(sorted(m.joint_names.index(j) for j in self.joints))
        if self.moving.size < m.n and self.objective != Objective.PAYLOAD:
            raise PayloadIdError(
                f"objective '{self.objective}' needs every joint to move (the base parameters of joints that "
                "hold still cannot be excited)", "use --objective payload with --joints, or drop --joints")
        self.offsets = default_offsets(m) if self.offsets is None else np.asarray(self.offsets, float).reshape(-1)
        if self.offsets.shape != (m.n,):
            raise PayloadIdError(f"{self.offsets.size} offsets for {m.n} joints",
                                 f"give one per joint of {m.joint_names}")
        lim = self.limits
        outside = [j for j, x, lo, hi in zip(m.joint_names, self.offsets, lim.lower, lim.upper) if not lo <= x <= hi]
        if outside:
            raise PayloadIdError(f"the start pose is outside the joint limits (minus the margin) of {outside}",
                                 "choose offsets inside the limits or reduce --margin")
        if self.cartesian:
            q0 = self.offsets[None, :]
            for c in self.cartesian:
                p = frame_positions(m, c.frame, q0)[0, c.axis]
                if (c.lower is not None and p < c.lower) or (c.upper is not None and p > c.upper):
                    raise PayloadIdError(
                        f"no trajectory can keep {c.describe()}: the start pose already has "
                        f"{c.frame} {'xyz'[c.axis]} = {p:.3f} m",
                        "relax the Cartesian limit or choose a start pose (offsets) that satisfies it")
        self.basis = rest_basis(self.harmonics)           # (2H, r)
        self.r = self.basis.shape[1]

    # -- the trajectory as a function of the free variables ----------------------------------
    @property
    def n_vars(self) -> int:
        return self.moving.size * self.r

    def trajectory(self, x: np.ndarray, design_info: dict | None = None) -> FourierTrajectory:
        z = np.zeros((self.model.n, self.r))
        z[self.moving] = np.asarray(x, float).reshape(self.moving.size, self.r)
        return FourierTrajectory.from_rest_coordinates(self.model.joint_names, self.base_frequency_hz, self.offsets,
                                                       z, self.harmonics, self.duration, design_info)

    def _grid_maps(self, t: np.ndarray):
        """Per-sample linear maps from one joint's z to (q - q0, q̇, q̈): each (N, r)."""
        proto = self.trajectory(np.zeros(self.n_vars))
        pos, vel, acc = proto.basis(t)
        return pos @ self.basis, vel @ self.basis, acc @ self.basis

    def motion(self, x: np.ndarray, t: np.ndarray):
        return self.trajectory(x).evaluate(t)


@dataclass
class DesignResult:
    trajectory: FourierTrajectory
    metrics: dict
    objective: str
    objective_value: float
    seconds: float
    seeds_tried: int
    seeds_feasible: int
    random_metrics: dict | None = None


def _linear_limit_constraints(design: ExcitationDesign, tightening: float):
    """A x <= ub for the joint limits on the coarse grid (one block per moving joint)."""
    t = np.linspace(0.0, design.duration, design.n_constraint_samples, endpoint=False)
    mp, mv, ma = design._grid_maps(t)
    lim = design.limits
    rows, ub = [], []
    k = design.moving.size
    r = design.r
    s = 1.0 - tightening
    offsets = design.offsets
    if offsets is None:
        raise TypeError("ExcitationDesign.__post_init__ resolves the offsets; this design skipped it")

    def block(i: int, m: np.ndarray) -> np.ndarray:
        """`m` placed in the columns of the i-th moving joint's variables, zeros elsewhere."""
        a = np.zeros((m.shape[0], k * r))
        a[:, i * r:(i + 1) * r] = m
        return a

    for i, j in enumerate(design.moving):
        q0 = offsets[j]
        rows += [block(i, mp), block(i, -mp), block(i, mv), block(i, -mv), block(i, ma), block(i, -ma)]
        n = t.size
        # position: q0 + mp z <= q0 + s (upper - q0)  and  >= q0 - s (q0 - lower)
        ub += [np.full(n, s * (lim.upper[j] - q0)), np.full(n, s * (q0 - lim.lower[j])),
               np.full(n, s * lim.velocity[j]), np.full(n, s * lim.velocity[j]),
               np.full(n, s * lim.acceleration[j]), np.full(n, s * lim.acceleration[j])]
    return np.vstack(rows), np.concatenate(ub)


def _cartesian_constraints(design: ExcitationDesign, tightening_m: float = 0.005):
    """SLSQP 'ineq' dicts g(x) >= 0 for each Cartesian limit on a coarse grid, Jacobians from pinocchio."""
    if not design.cartesian:
        return []
    t = np.linspace(0.0, design.duration, max(60, design.n_constraint_samples // 2), endpoint=False)
    mp, _, _ = design._grid_maps(t)
    pm = design.model.model
    data = pm.createData()
    cons = []
    for c in design.cartesian:
        fid = design.model.frame_id(c.frame)

        def values_and_jac(x, c=c, fid=fid):
            q, _, _ = design.motion(x, t)
            val = np.empty(t.size)
            jac = np.empty((t.size, design.n_vars))
            for k, qk in enumerate(q):
                pin.computeJointJacobians(pm, data, qk)
                pin.updateFramePlacements(pm, data)
                val[k] = data.oMf[fid].translation[c.axis]
                jrow = pin.getFrameJacobian(pm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[c.axis]
                # d p / d z_j = J[axis, j] * mp[k]
                jac[k] = np.concatenate([jrow[j] * mp[k] for j in design.moving])
            return val, jac

        if c.lower is not None:
            cons.append({"type": "ineq", "fun": lambda x, f=values_and_jac, c=c: f(x)[0] - c.lower - tightening_m,
                         "jac": lambda x, f=values_and_jac: f(x)[1]})
        if c.upper is not None:
            cons.append({"type": "ineq", "fun": lambda x, f=values_and_jac, c=c: c.upper - tightening_m - f(x)[0],
                         "jac": lambda x, f=values_and_jac: -f(x)[1]})
    return cons


def rms_velocity(design: ExcitationDesign, x: np.ndarray) -> np.ndarray:
    """(moving,) RMS velocity of each moving joint over one period: ||z_j|| / sqrt(2) (Parseval; the
    rest basis is orthonormal, so ||z_j|| = ||[a_j, b_j]||)."""
    z = np.asarray(x, float).reshape(design.moving.size, design.r)
    return np.linalg.norm(z, axis=1) / math.sqrt(2.0)


def _velocity_excitation_constraint(design: ExcitationDesign):
    """SLSQP 'ineq' g(x) >= 0: (RMS velocity_j / v_j)² - f² for each moving joint (smooth, exact Jacobian)."""
    f = design.min_rms_velocity_fraction
    if f <= 0:
        return []
    v = design.limits.velocity[design.moving]
    k, r = design.moving.size, design.r
    rows = np.repeat(np.arange(k), r)

    def fun(x):
        z = np.asarray(x, float).reshape(k, r)
        return 0.5 * (z**2).sum(axis=1) / v**2 - f**2

    def jac(x):
        j = np.zeros((k, k * r))
        j[rows, np.arange(k * r)] = np.asarray(x, float) / np.repeat(v**2, r)
        return j

    return [{"type": "ineq", "fun": fun, "jac": jac}]


def _shrink_until_feasible(design: ExcitationDesign, x: np.ndarray, dt: float, max_steps: int = 40):
    """Scale x toward the offset pose until the dense-grid check passes (q - q0, q̇, q̈ all scale with x)."""
    for _ in range(max_steps):
        traj = design.trajectory(x)
        if not limit_violations(traj, design.model, design.limits, design.cartesian, dt):
            return x
        x = 0.98 * x
    return None


def random_feasible(design: ExcitationDesign, rng: np.random.Generator, fill: float = 0.9) -> np.ndarray:
    """Random coefficients scaled to use `fill` of the most binding joint limit on the coarse grid
    (the baseline a hand-made "random" excitation would give, and the optimizer's seeds)."""
    a, ub = _linear_limit_constraints(design, 0.0)
    x = rng.standard_normal(design.n_vars)
    use = a @ x
    scale = fill * np.min(ub[use > 0] / use[use > 0])
    return x * scale


def optimize_excitation(design: ExcitationDesign, seeds: int = 3, seed: int = 0, maxiter: int = 60,
                        final_dt: float = 1e-3, tightening: float = 0.01, max_cond: float = 1e4,
                        log=None) -> DesignResult:
    """Minimise the design's objective with SLSQP from `seeds` random feasible starts (Swevers 1997;
    Xu 2024 eq. 18). Returns the best trajectory that passes the `final_dt` (1 ms) limit check.

    Raises PayloadIdError when no start satisfies the limits, or when the best trajectory found
    still leaves the chosen regressor ill conditioned (cond > max_cond): the limits are too tight
    for the duration (too little motion to excite the parameters).
    """
    with single_threaded_blas():
        return _optimize(design, seeds, seed, maxiter, final_dt, tightening, max_cond, log)


def _optimize(design, seeds, seed, maxiter, final_dt, tightening, max_cond, log) -> DesignResult:
    start = time.perf_counter()
    metrics = RegressorMetrics(design.model, design.frame, design.friction, payload_size_m=design.payload_size_m,
                               noise_std=design.noise_std, column_scaling=design.column_scaling)
    t_obj = np.linspace(0.0, design.duration, design.n_samples, endpoint=False)
    a_lin, ub_lin = _linear_limit_constraints(design, tightening)
    cons = [{"type": "ineq", "fun": lambda x: ub_lin - a_lin @ x, "jac": lambda x: -a_lin}]
    cons += _cartesian_constraints(design)
    cons += _velocity_excitation_constraint(design)
    v_min = design.min_rms_velocity_fraction * design.limits.velocity[design.moving]

    early = [np.linspace(0.0, h, design.n_samples + 1)[1:] for h in (design.horizon_s / 2, design.horizon_s)]

    def f(x):
        try:
            if design.objective is Objective.CONVERGENCE:
                return convergence_value(metrics, design, x, early, t_obj)
            return objective_value(metrics.evaluate(*design.motion(x, t_obj), only=design.objective), design.objective)
        except (np.linalg.LinAlgError, ValueError):
            return 1e3

    def fval(x):
        v = f(x)
        return v if math.isfinite(v) else 1e3

    rng = np.random.default_rng(seed)
    best = None
    tried = feasible = 0
    for _ in range(max(1, seeds)):
        x0 = random_feasible(design, rng, fill=0.6)
        tried += 1
        res = scipy.optimize.minimize(fval, x0, method="SLSQP", constraints=cons,
                                      options={"maxiter": maxiter, "ftol": 1e-6})
        # SLSQP often stops on its coarse-grid constraints ("Inequality constraints incompatible"); its point is
        # then scaled until the 1 ms grid passes, so the start is feasible whatever SLSQP said.
        x = _shrink_until_feasible(design, res.x, final_dt)
        source = "the optimum" if res.success else f"the optimizer's last point (it stopped: {res.message})"
        if x is None:
            x = _shrink_until_feasible(design, x0, final_dt)
            source = "the random start (the optimizer's point broke a limit)"
        if x is None:
            continue
        feasible += 1
        value = fval(x)
        # 1 % slack: the 1 ms shrink may take a little off the RMS velocity the optimizer reached
        moves = bool(np.all(rms_velocity(design, x) >= 0.99 * v_min))
        if log:
            log(f"seed {tried}: objective {value:.4g} from {source}, scaled within the limits; "
                f"{'every joint moves' if moves else 'some joint moves too little'}")
        if best is None or (moves, -value) > (best[2], -best[0]):
            best = (value, x, moves)
    if best is None:
        raise PayloadIdError(
            "no trajectory satisfies the joint and Cartesian limits on the 1 ms grid",
            "relax the limits (margin, Cartesian bounds) or change the start pose")
    value, x, moves = best
    if not moves:
        rms = rms_velocity(design, x)
        slow = [f"{design.model.joint_names[j]} {v:.3g} rad/s < {m:.3g}"
                for j, v, m in zip(design.moving, rms, v_min) if v < 0.99 * m]
        raise PayloadIdError(
            f"the limits are too tight for the duration to move every joint at RMS velocity >= "
            f"{design.min_rms_velocity_fraction:g} x its limit: {'; '.join(slow)}",
            "lengthen --duration, relax the acceleration/position limits or --margin, or lower "
            "--min-velocity-fraction")
    final = metrics.evaluate(*design.motion(x, np.linspace(0.0, design.duration, 1000, endpoint=False)))
    mass_std = early_mass_std(metrics, design, x)
    if design.objective is Objective.CONVERGENCE:
        half = next(iter(mass_std))
        if not math.isfinite(mass_std[half]):
            raise PayloadIdError(
                f"no motion within the limits determines the payload in its first {half}: the convergence "
                f"objective had nothing to minimise (horizon {design.horizon_s:g} s)",
                "use a longer --horizon (2 s is usual), or relax the velocity/acceleration limits")
        info_horizon = {"horizon_s": design.horizon_s, "period_weight": CONVERGENCE_PERIOD_WEIGHT}
    else:
        info_horizon = {}
    # Refusal on the unit-column figure: it says whether parameters are excited at all, whatever their units.
    key = {"base": "base_cond_unit_columns", "xu": "base_cond_unit_columns", "dopt": "base_cond_unit_columns",
           "payload": "payload_cond", "inertia": "payload_cond", "convergence": "payload_cond"}[design.objective]
    if not final[key] < max_cond:
        raise PayloadIdError(
            f"the best trajectory within these limits leaves the {key.replace('_', ' ')} at {final[key]:.3g} "
            f"(> {max_cond:g}): the limits are too tight for the duration to excite the parameters",
            "lengthen --duration, relax the velocity/acceleration limits or --margin, or move more joints")
    seconds = time.perf_counter() - start
    _, qd_dense, _ = design.motion(x, design.trajectory(x).time_grid(1e-3))
    peak_fraction = np.abs(qd_dense).max(axis=0) / design.limits.velocity
    info = {
        "objective": design.objective.value,
        "objective_value": float(value),
        "base_cond": final["base_cond"],
        "payload_cond": final["payload_cond"],
        "payload_variance": final["payload_variance"],
        "payload_variance_direct": final["payload_variance_direct"],
        "xu_sum": final["xu"],
        "inertial_cond": final["inertial_cond"],
        "first_moment_cond": final["first_moment_cond"],
        "friction_cond": final["friction_cond"],
        "logdet": final["logdet"],
        "base_cond_si": final["base_cond_si"],
        "base_cond_unit_columns": final["base_cond_unit_columns"],
        **info_horizon,
        "noise_std": [float(v) for v in metrics.noise_std],
        "noise_source": metrics.noise_source,
        "column_scaling": design.column_scaling,
        "min_rms_velocity_fraction": design.min_rms_velocity_fraction,
        "peak_velocity_fraction": [float(v) for v in peak_fraction],
        "frame": str(metrics.frame),
        "moving_joints": [design.model.joint_names[j] for j in design.moving],
        "margin": design.limits.margin,
        "acceleration_limits": [float(a) for a in design.limits.acceleration],
        "acceleration_limits_source": design.limits.acceleration_source,
        "cartesian": [c.to_dict() for c in design.cartesian],
        "scaling": "rows / torque noise std (Xu 2024 sec. 4.2 Lambda0^-1/2); base columns "
                   + ("in SI units (unscaled)" if design.column_scaling == "none" else "to unit norm")
                   + f"; payload columns in kg, kg*L, kg*L^2 with L = {design.payload_size_m:g} m",
        "mass_std_kg": mass_std,
        "samples": design.n_samples,
        "seeds": tried,
        "seconds": round(seconds, 2),
    }
    traj = design.trajectory(x, info)
    return DesignResult(traj, final, design.objective, float(value), seconds, tried, feasible)


def evaluate_trajectory(model, trajectory: FourierTrajectory, frame: str | None = None, n_samples: int = 1000,
                        friction: str = "linear", payload_size_m: float = 0.1, noise_std=None,
                        column_scaling: str = "none") -> dict:
    """Condition numbers (same scaling as the optimizer's defaults) of a trajectory sampled at n_samples points."""
    traj = trajectory.for_model(list(model.joint_names))
    t = np.linspace(0.0, traj.duration, n_samples, endpoint=False)
    return RegressorMetrics(model, frame, friction, payload_size_m=payload_size_m, noise_std=noise_std,
                            column_scaling=column_scaling).evaluate(*traj.evaluate(t))
