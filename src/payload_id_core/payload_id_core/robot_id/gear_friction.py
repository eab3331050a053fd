"""Gear friction that grows with the torque a drive transmits, identified with the unloaded robot (opt-in).

A geared drive loses a share of the torque it transmits: its Coulomb level is Fc_j + μ_j |τ_j|, so the
measured torque is

    τ_j = τ_model,j(q, q̇, q̈) + μ_j |τ_j| sgn_ε(q̇_j),

with τ_model the rigid body, rotor and friction model of robot_id (Xu 2024 eq. 2 for the velocity part;
the load-dependent Coulomb term is the one Xu §4.3 measures as joint 2's Coulomb level growing by
0.8 N·m under a payload).

Identification (fit, kept): the column |τ̂_j| sgn_ε(q̇_j) of each joint joins the fitted model, τ̂ the
first-stage model torque Y θ̂ — a model torque, not the measured one: |τ_meas| carries the noise of the
torque it is fitted to (errors in variables). μ_j is kept where the run determines it, μ̂_j > 3σ, and
where it is a physical, noticeable loss, MU_MIN ≤ μ̂_j < MU_MAX; elsewhere it is 0. The wrist drives of
an arm carry torques too small and too constant to tell μ_j|τ_j| from the Coulomb level Fc_j; the
payload's load-friction columns (payload/load_friction.py) still model their change under load. The
robot is then identified again on the corrected torques. μ̂ also takes what the velocity friction model
misses where that correlates with |τ| sgn q̇: with `--friction linear` on the cell, whose friction is
nonlinear, μ̂ is 0.053/0.047/0.034 at 8-47σ for a true 0.02; identify it with the friction model that fits
(the nonlinear one, the default, gives 0.021/0.020/0.022).

Use (remove): every consumer takes the gear friction off its measured torques before it compares them
with the model, τ − μ|τ| sgn_ε(q̇). The measured |τ| is the torque the gears transmit, and with μ fixed it
sits on the side of the fitted torques, where its noise only scales the noise (no errors-in-variables
bias). The correction is linear in the drive gains (μ|k e| = k μ|e|), so it applies to raw efforts alike.

What it does (bench/payload.py, bench/ur10e.py):
- Simulated UR10 cell (μ = 0.02 on every drive): μ̂ 0.021 / 0.021 on shoulder and elbow; difference-rls's
  CoM 0.65 → 0.19 mm and inertia 4.8 → 4.0 % on ur10_payload_inertia; without it the unloaded fit
  absorbs μ|τ_a| where it correlates with the model's columns, which is wrong once a payload changes |τ|.
- Real UR10e: μ̂ ≈ 0.06 on shoulder lift and elbow on all three unloaded runs, their torque RMSE down
  13-27 %. But the command line's payload masses move from within ±0.9 % to +0.3..+2.3 %: on the loaded
  runs the same fit finds μ 3-24 % larger (0.069-0.078 against 0.059-0.071): one μ per drive does not
  describe how these drives' losses grow with the load, and the drive gains identified with the known
  mass absorb the rest differently. Until a model does, it is off by default (fit_given_model gear_friction=False,
  identify-robot --gear-friction none); real data are the judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from payload_id_core.dynamics.friction import smooth_sign
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.robot_id.estimators import NormalEquations, wls

# Largest share of the transmitted torque a drive's friction is believed to take (an efficiency of 85 %;
# the real UR10e's loaded drives lose 6 %). Above it a μ̂ is the fit compensating something else: on the
# simulated cell's wrist joints, whose torques hardly vary, μ̂ comes out at 0.57 ± 0.07 for a true 0.02.
MU_MAX = 0.15
# μ̂_j is kept when it is this many standard deviations above zero...
DETERMINED_SIGMAS = 3.0
# ...and at least this large: below half a percent of the transmitted torque the correction is smaller than a
# drive gain's own uncertainty, and a noise-free fit finds such μ̂ in what the model misses elsewhere
# (3e-4 at 20σ on the simulated cell without friction, profile 'clean').
MU_MIN = 0.005
# μ̂ is fitted again this many times with the friction shapes (robot_id/shape_search) searched on the torques without
# the gear friction found so far. Searched with μ|τ| sgn q̇ still in the torques, the shapes take part of it: on the
# simulated cell (μ 0.02, ur10_payload_fast, robot seeds 1000-1009) the shoulder lift's μ̂ was low on every seed, mean
# 0.0177, z −0.8..−3.2 against its σ (noise-free 0.0181); once again: mean 0.0200, z RMS 0.96 / 0.45 (shoulder lift /
# elbow), none beyond 1.6 (noise-free 0.0207). A second time moves it ≤ 0.0005, below its σ.
SHAPE_ALTERNATIONS = 1


@dataclass(frozen=True)
class GearFriction:
    """μ_j per joint (0 where not modelled), the fit's std of each (NaN where given, not fitted)."""

    mu: np.ndarray
    mu_std: np.ndarray

    @property
    def active(self) -> bool:
        return bool(np.any(self.mu != 0))

    def note(self, fitted: np.ndarray | None = None, fitted_std: np.ndarray | None = None) -> Note:
        std = [None if not np.isfinite(x) else round(float(x), 4) for x in self.mu_std]
        text = (f"gear friction μ|τ| per joint (N·m per N·m transmitted): {np.round(self.mu, 4).tolist()} "
                f"± {std}")
        if fitted is not None and fitted_std is not None:
            text += (f"; fitted {np.round(fitted, 4).tolist()} ± {np.round(fitted_std, 4).tolist()}, kept where "
                     f"> {DETERMINED_SIGMAS:g}σ and in [{MU_MIN:g}, {MU_MAX:g})")
        return Note(NoteCode.ROBOT_GEAR_FRICTION, text)


@dataclass(frozen=True)
class UnmodelledGear:
    """Gear friction the unloaded run shows but the robot model leaves out (fit_given_model gear_friction=False,
    the default): μ_j (0 where not determined, as `kept`), their std, and θ_shift = θ_g − θ_a, how far the
    model's parameters would move with it (θ_g fitted to τ − μ|τ| sgn_ε(q̇) with the same weights).

    The constant Coulomb levels of θ_a hold μ|τ_a| at its average over the identification run. Where a payload
    run's torques differ from that run's (another excitation, or its first seconds), the model is off by
    `torque_error`, and the payload fit with it: on the simulated cell (μ = 0.02) the robot identified on
    ur10_payload put difference-rls's mass on ur10_payload_fast 1.0-1.5 % off at 3-5σ, every seed, and this
    predicted −1.1..−1.5 % (bench/payload.py cell_convergence_cross_robot_*). The payload fits add that
    prediction to their covariance (payload/covariance_extra.py gear_model_error) rather than correct for it:
    on the real UR10e the correction made the masses worse (module doc)."""

    mu: np.ndarray
    mu_std: np.ndarray
    theta_shift: np.ndarray

    def torque_error(self, regressor: np.ndarray, theta: np.ndarray, qd: np.ndarray, sign_epsilon: float
                     ) -> np.ndarray:
        """(N, n): τ − Y θ_a if the drives lose μ|τ|: Y θ_shift + μ |Y (θ_a + θ_shift)| sgn_ε(q̇)."""
        geared = regressor @ (np.asarray(theta, dtype=float) + self.theta_shift)
        return regressor @ self.theta_shift + self.mu * np.abs(geared) * smooth_sign(qd, sign_epsilon)


def unmodelled(regressor: np.ndarray, theta: np.ndarray, tau: np.ndarray, qd: np.ndarray, sigma: np.ndarray,
               sign_epsilon: float) -> UnmodelledGear | None:
    """The gear friction an identification without it leaves out (UnmodelledGear), from its rows W (N, n, p),
    fit θ̂ and noise σ on torques τ (N, n); None when the run shows none (no μ̂_j kept)."""
    mu_hat, mu_std = fit(regressor, theta, tau, qd, sigma, sign_epsilon)
    gear = kept(mu_hat, mu_std)
    if not gear.active:
        return None
    # WLS is linear in the torques for fixed weights: the shift is the fit of the correction alone.
    correction = np.asarray(tau, dtype=float) - remove(tau, qd, gear.mu, sign_epsilon)
    shift = wls(NormalEquations.from_data(regressor, -correction), sigma=sigma).theta
    return UnmodelledGear(gear.mu, gear.mu_std, np.asarray(shift, dtype=float))


def check_mu(mu, n: int, what: str) -> np.ndarray:
    """n finite values in [0, MU_MAX): a gear friction coefficient, or a PayloadIdError naming `what`."""
    arr = np.atleast_1d(np.asarray(mu, dtype=float))
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr >= MU_MAX):
        raise PayloadIdError(f"{what} {arr.tolist()} is not {n} gear friction coefficients in [0, {MU_MAX:g})",
                             "give one μ per joint (0 for none), or let identify-robot estimate them")
    return arr


def remove(tau: ArrayLike, qd: ArrayLike, mu: np.ndarray, sign_epsilon: float) -> np.ndarray:
    """τ − μ|τ| sgn_ε(q̇) for torques (or raw efforts) and velocities (..., n)."""
    tau = np.asarray(tau, dtype=float)
    return tau - mu * np.abs(tau) * smooth_sign(np.asarray(qd, dtype=float), sign_epsilon)


def fit(regressor: np.ndarray, theta: np.ndarray, tau: np.ndarray, qd: np.ndarray, sigma: np.ndarray,
        sign_epsilon: float, mu0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(μ̂, std) of every joint from the model's rows W (N, n, p) and their fit θ̂ on torques τ (N, n):
    the WLS fit of τ = W θ + diag(|τ̂| sgn_ε(q̇)) μ, rows of joint j weighted by 1/σ_j. τ̂ is the model's
    transmitted torque: W θ̂ when θ̂ was fitted to τ itself; with `mu0`, θ̂ fitted to τ without the gear friction
    μ0|τ| sgn_ε(q̇), so the drive transmits W θ̂ + μ0 |W θ̂| sgn_ε(q̇) (its own loss included)."""
    n = tau.shape[1]
    sgn = smooth_sign(qd, sign_epsilon)
    tau_hat = regressor @ theta
    if mu0 is not None:
        tau_hat = tau_hat + np.asarray(mu0, dtype=float) * np.abs(tau_hat) * sgn
    col = np.abs(tau_hat) * sgn
    joint_fit = wls(with_gear_columns(regressor, col, tau), sigma=sigma)
    return joint_fit.theta[-n:], joint_fit.std[-n:]


def with_gear_columns(regressor: np.ndarray, col: np.ndarray, tau: np.ndarray) -> NormalEquations:
    """NormalEquations.from_data of the rows [W | diag(col)] (N, n, p + n) without building them: joint j's μ
    column is col[:, j] on its own rows and 0 on the others', so its Gram matrix is [[W_jᵀW_j, W_jᵀc_j e_j],
    [., c_jᵀc_j e_j e_jᵀ]]. Building the rows copied 92 MB on 60 s at 500 Hz and multiplied (p + n)² columns
    where p² and one column are not zero; the same numbers to round-off (test_speed_paths)."""
    tau = np.asarray(tau, dtype=float)
    n_samples, n, p = regressor.shape
    if col.shape != (n_samples, n) or tau.shape != (n_samples, n):
        return NormalEquations.from_data(np.concatenate([regressor, _diagonal_columns(col)], axis=2), tau)
    gram, rhs = np.zeros((n, p + n, p + n)), np.zeros((n, p + n))
    tt, pj = np.empty(n), np.empty(n, dtype=int)
    for j in range(n):
        a = np.ascontiguousarray(regressor[:, j, :])
        c = np.ascontiguousarray(col[:, j])
        y = np.ascontiguousarray(tau[:, j])
        gram[j, :p, :p] = a.T @ a
        gram[j, :p, p + j] = gram[j, p + j, :p] = a.T @ c
        gram[j, p + j, p + j] = c @ c
        rhs[j, :p] = a.T @ y
        rhs[j, p + j] = c @ y
        tt[j] = y @ y
        pj[j] = np.count_nonzero(np.diag(gram[j]) > 0)
    return NormalEquations(gram, rhs, tt, n_samples, pj)


def _diagonal_columns(col: np.ndarray) -> np.ndarray:
    """(N, n, n): col[:, j] at row j, column j (the rows' μ columns, built when the shapes are not the usual)."""
    n = col.shape[-1]
    cols = np.zeros(col.shape + (n,))
    cols[..., np.arange(n), np.arange(n)] = col
    return cols


def kept(mu_hat: np.ndarray, mu_std: np.ndarray) -> GearFriction:
    """The fitted μ̂ where the run determines it and it is physical, 0 elsewhere (module doc)."""
    keep = (mu_hat > DETERMINED_SIGMAS * mu_std) & (mu_hat >= MU_MIN) & (mu_hat < MU_MAX) & np.isfinite(mu_std)
    return GearFriction(np.where(keep, mu_hat, 0.0), np.where(keep, mu_std, np.nan))
