"""Payload, sensor offsets and base tilt from wrist F/T readings and joint motion.

Two estimators share one measurement model (see ft.compensate):
- static (Duan 2022 §2): mass, first moments (CoM), 6 offsets and the tilt (U, V) from the gravity
  wrench over many orientations. `duan_static_linear` is the paper's closed form (eq. 5–23), used
  as the starting point; the result is the maximum-likelihood refinement of the same model.
- dynamic (Atkeson 1986 + Duan §4): all 10 inertial parameters, the offsets and the tilt from the
  full Newton–Euler wrench, the sensor frame's velocity and acceleration coming from forward
  kinematics of the joint motion.
Both solve a Gauss–Newton weighted least squares: the model is linear in (φ, offsets) and only the
two tilt angles enter nonlinearly. Channel weights (force and torque noise differ by orders of
magnitude) come from the residuals, and so does the covariance: cov = (Jᵀ W J)⁻¹ at the solution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.inertia import PARAM_NAMES
from payload_id_core.errors import Choice, PayloadIdError, parse_choice
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.kinematics import (
    SensorMotion,
    gravity_wrench_regressor,
    tilt_from_gravity,
    tilt_gravity,
    tilt_gravity_derivatives,
    wrench_regressor,
)
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload_estimate import PayloadEstimate

OFFSET_NAMES = ["Fx0", "Fy0", "Fz0", "Tx0", "Ty0", "Tz0"]
CHANNELS = ["Fx", "Fy", "Fz", "Tx", "Ty", "Tz"]


class FtMode(Choice):
    """Which F/T estimator runs (module doc); the value is what users type (identify-payload --ft-mode)."""

    STATIC = "static"       # Duan 2022 §2: mass, CoM, offsets, tilt from held poses
    DYNAMIC = "dynamic"     # Atkeson 1986 + Duan §4: adds the inertia from every sample


@dataclass
class DuanStatic:
    """Duan 2022 §2 closed-form result."""

    mass: float
    com: np.ndarray       # (3,) in the sensor frame
    offset: np.ndarray    # (6,)
    tilt: tuple[float, float]


def _lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares through the (column-scaled) normal equations. einsum, not BLAS: these tall, thin
    products are tiny, and a multi-threaded BLAS on a busy machine spends far longer waiting for its threads."""
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a = a / scale
    return np.linalg.solve(np.einsum("ki,kj->ij", a, a), np.einsum("ki,k->i", a, b)) / scale


def duan_static_linear(rotation: np.ndarray, force: np.ndarray, torque: np.ndarray, gravity_norm: float) -> DuanStatic:
    """Duan 2022 §2.3–2.4 with the sensor orientation R_BS from forward kinematics.

    Forces: F_i = R_iᵀ L + F0 with L = G g_B/|g| (eq. 17–20). Torques: T_i = c × F_i + k with
    k = T0 − c × F0 (eq. 3–9); then T0 (eq. 21), G = |L| (eq. 22) and (U, V) (eq. 23).
    """
    n = rotation.shape[0]
    a_f = np.concatenate([np.transpose(rotation, (0, 2, 1)), np.broadcast_to(np.eye(3), (n, 3, 3))], axis=2)
    sol_f = _lstsq(a_f.reshape(-1, 6), force.reshape(-1))
    big_l, f0 = sol_f[:3], sol_f[3:]
    # c × F = −[F]× c
    fx, fy, fz = force.T
    skew_neg = np.zeros((n, 3, 3))
    skew_neg[:, 0, 1], skew_neg[:, 0, 2] = fz, -fy
    skew_neg[:, 1, 0], skew_neg[:, 1, 2] = -fz, fx
    skew_neg[:, 2, 0], skew_neg[:, 2, 1] = fy, -fx
    a_t = np.concatenate([skew_neg, np.broadcast_to(np.eye(3), (n, 3, 3))], axis=2)
    sol_t = _lstsq(a_t.reshape(-1, 6), torque.reshape(-1))
    com, k = sol_t[:3], sol_t[3:]
    t0 = k + np.cross(com, f0)
    return DuanStatic(float(np.linalg.norm(big_l) / gravity_norm), com, np.concatenate([f0, t0]),
                      tilt_from_gravity(big_l))


@dataclass
class FtIdentification:
    """What `identify_ft` found: the payload (in the payload frame) plus the sensor's own parameters."""

    payload: PayloadEstimate
    params: FtParameters               # for compensation (φ in the sensor frame)
    offset_std: np.ndarray             # (6,)
    tilt_std: np.ndarray               # (2,) rad
    noise_std: np.ndarray              # (6,) residual std per channel [Fx..Tz]
    fit_rmse: dict[str, list[float]]   # residual_rmse on the identification data
    counts: dict[str, int] = field(default_factory=dict)   # samples used / dropped and why
    mode: str = "dynamic"
    duan: DuanStatic | None = None     # the closed-form Duan §2 solution on the same data
    validation_rmse: dict[str, list[float]] | None = None   # residual_rmse on a validation recording

    @property
    def offset(self) -> np.ndarray:
        return self.params.offset

    @property
    def tilt(self) -> tuple[float, float]:
        return self.params.tilt

    def summary_notes(self) -> list[Note]:
        o, so = self.offset, self.offset_std
        u, v = np.degrees(self.tilt)
        su, sv = np.degrees(self.tilt_std)
        return [Note(NoteCode.FT_SUMMARY, text) for text in (
            "ft: sensor offsets " + ", ".join(f"{n}={x:.4g}±{s:.2g}" for n, x, s in zip(OFFSET_NAMES, o, so)),
            f"ft: base tilt U={u:.3f}±{su:.2g} deg, V={v:.3f}±{sv:.2g} deg",
            "ft: residual noise std " + ", ".join(f"{c}={s:.3g}" for c, s in zip(CHANNELS, self.noise_std)),
            "ft: samples " + ", ".join(f"{k}={c}" for k, c in self.counts.items()),
        )]


@dataclass
class _Fit:
    phi: np.ndarray
    offset: np.ndarray
    tilt: np.ndarray
    cov: np.ndarray          # (p, p) over [φ[mask], offset, tilt]
    sigma: np.ndarray        # (6,)
    phi_mask: np.ndarray


def _null_space_params(info_scaled: np.ndarray, rtol: float = 1e-6) -> np.ndarray:
    """Parameters in the numerical null space of a column-scaled Jacobian, from its normal matrix JᵀJ
    (singular values of J below rtol × the largest)."""
    eig, vec = np.linalg.eigh(info_scaled)
    null = vec[:, eig < rtol ** 2 * eig[-1]]
    if null.size == 0:
        return np.zeros(info_scaled.shape[0], dtype=bool)
    return np.linalg.norm(null, axis=1) > 1e-3


def _fit(motion: SensorMotion, measured: np.ndarray, gravity_norm: float, *, inertial: bool,
         phi_mask: np.ndarray, phi0: np.ndarray, offset0: np.ndarray, tilt0, estimate_tilt: bool,
         max_iter: int = 30) -> _Fit:
    n = measured.shape[0]
    rot_t = np.transpose(motion.rotation, (0, 2, 1))
    dyn = wrench_regressor(motion.velocity, motion.acceleration) if inertial else None
    phi, offset, tilt = phi0.astype(float).copy(), offset0.astype(float).copy(), np.array(tilt0, dtype=float)
    sigma = np.ones(6)
    eye = np.broadcast_to(np.eye(6), (n, 6, 6))
    n_phi = int(phi_mask.sum())
    for it in range(max_iter):
        g_s = rot_t @ tilt_gravity(gravity_norm, *tilt)
        reg = gravity_wrench_regressor(g_s)
        if dyn is not None:
            reg = reg - dyn
        resid = measured - np.einsum("nij,j->ni", reg, phi) - offset
        cols = [reg[:, :, phi_mask], eye]
        if estimate_tilt:
            du, dv = tilt_gravity_derivatives(gravity_norm, *tilt)
            cols.append(np.stack([np.einsum("nij,j->ni", gravity_wrench_regressor(rot_t @ du), phi),
                                  np.einsum("nij,j->ni", gravity_wrench_regressor(rot_t @ dv), phi)], axis=-1))
        jac = np.concatenate(cols, axis=2)
        p = jac.shape[2]
        if it > 0:
            # Per-channel noise from the residuals (unbiased for the p fitted parameters).
            sigma = np.sqrt(np.sum(resid ** 2, axis=0) / max(n - p / 6.0, 1.0))
            sigma = np.maximum(sigma, 1e-12 * max(sigma.max(), 1e-300))
        jw = (jac / sigma[None, :, None]).reshape(-1, p)
        rw = (resid / sigma).reshape(-1)
        scale = np.linalg.norm(jw, axis=0)
        scale[scale == 0] = 1.0
        # Normal equations on unit-norm columns: p ≤ 18, so this is cheap and well conditioned enough
        # (the rank check below refuses what is not identifiable).
        info = np.einsum("ki,kj->ij", jw, jw) / np.outer(scale, scale)
        if it == 0:
            bad = _null_space_params(info)
            if bad.any():
                names = [PARAM_NAMES[i] for i in np.flatnonzero(phi_mask)] + OFFSET_NAMES + ["U", "V"]
                raise _Unidentifiable([names[i] for i in np.flatnonzero(bad)])
        info_inv = np.linalg.inv(info)
        step = (info_inv @ (np.einsum("ki,k->i", jw, rw) / scale)) / scale
        std = np.sqrt(np.diag(info_inv)) / scale
        phi[phi_mask] += step[:n_phi]
        offset += step[n_phi:n_phi + 6]
        if estimate_tilt:
            tilt += step[n_phi + 6:]
        # Converged when the step is negligible against the parameters' own uncertainty.
        if it >= 2 and np.all(np.abs(step) <= 1e-3 * std):
            break
    cov = info_inv / np.outer(scale, scale)
    return _Fit(phi, offset, tilt, cov, sigma, phi_mask)


class _Unidentifiable(Exception):
    def __init__(self, names: list[str]):
        self.names = names
        super().__init__(", ".join(names))


def fit_ft(motion: SensorMotion, force: np.ndarray, torque: np.ndarray, gravity_norm: float, *,
           mode: FtMode | str = FtMode.DYNAMIC, estimate_tilt: bool = True) -> tuple[_Fit, DuanStatic]:
    """Fit the wrench model to sensor readings ((N, 3) force and torque) along `motion`.

    mode 'static': mass and first moments (gravity only; slow or static data).
    mode 'dynamic': all 10 parameters (gravity + inertia).
    Raises PayloadIdError when the motion does not excite a parameter.
    """
    measured = np.hstack([force, torque])
    mode = parse_choice(FtMode, mode, "F/T identification mode")
    if measured.shape[0] < 12:
        raise PayloadIdError(f"only {measured.shape[0]} F/T samples overlap the joint states",
                             "record at least a few seconds of motion with the sensor publishing")
    duan = duan_static_linear(motion.rotation, force, torque, gravity_norm)
    phi0 = np.zeros(10)
    phi0[0] = duan.mass
    phi0[1:4] = duan.mass * duan.com
    mask = np.zeros(10, dtype=bool)
    mask[:4] = True
    tilt0 = duan.tilt if estimate_tilt else (0.0, 0.0)
    if mode is FtMode.DYNAMIC:
        mask = np.ones(10, dtype=bool)
    try:
        # Duan's closed form starts the Gauss–Newton iterations: only the tilt enters nonlinearly,
        # and it is small, so a few iterations reach the weighted least-squares solution.
        fit = _fit(motion, measured, gravity_norm, inertial=mode is FtMode.DYNAMIC, phi_mask=mask, phi0=phi0,
                   offset0=duan.offset, tilt0=tilt0, estimate_tilt=estimate_tilt)
    except _Unidentifiable as err:
        what = "sensor orientation" if mode is FtMode.STATIC else "sensor orientation, velocity and acceleration"
        raise PayloadIdError(
            f"the motion does not excite the F/T parameters {err.names} (the {what} varies too little)",
            "move the wrist joints (4–6) through many orientations, e.g. `payload-id excite` with joints 4–6, "
            "and make it fast for the inertia") from None
    return fit, duan


def phi_covariance(fit: _Fit) -> np.ndarray:
    """(10, 10) covariance of φ_S, NaN for parameters the mode does not estimate."""
    cov = np.full((10, 10), np.nan)
    idx = np.flatnonzero(fit.phi_mask)
    cov[np.ix_(idx, idx)] = fit.cov[: idx.size, : idx.size]
    return cov


def to_payload_frame(phi_s: np.ndarray, cov_s: np.ndarray, identifiable_s: np.ndarray,
                     x_sp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """φ_P = X⁻¹ φ_S with its covariance; a φ_P entry is known when every φ_S entry it uses is."""
    x_inv = np.linalg.inv(x_sp)
    uses = np.abs(x_inv) > 1e-12
    identifiable_p = np.array([identifiable_s[uses[k]].all() for k in range(10)])
    cov0 = np.where(np.isfinite(cov_s), cov_s, 0.0)
    cov_p = x_inv @ cov0 @ x_inv.T
    cov_p[~identifiable_p, :] = np.nan
    cov_p[:, ~identifiable_p] = np.nan
    return x_inv @ phi_s, cov_p, identifiable_p
