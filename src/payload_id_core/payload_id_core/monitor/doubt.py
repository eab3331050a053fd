"""The load a lasting misfit implies (PayloadMonitor._put_in_doubt): while the monitor is disarmed, a residual that
stays outside its allowance in motion says the carried payload does not explain the torques; the flange load that
would, fitted on the kept samples, or None when no flange load does."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.monitor.detect import DetectorSettings, ar1_factor


@dataclass(frozen=True)
class ImpliedLoad:
    delta: np.ndarray     # (10,) the step in φ: mass and first moments (the inertia's entries zero)
    fit_std: float        # kg: the fit's own σ of Δm (not the step-wide σ a doubt's state carries)
    rms: np.ndarray       # (n,) N·m: the residual's RMS per joint over the samples fitted
    # (4, 4) of Δm and Δ(m c): the fit's own covariance and the robot model's error on the samples fitted, at the
    # running level and correlated over all of them (the worst case of an error that follows the motion, as
    # since_change.since_change_fit takes it): what the alarm takes for the doubt (PayloadState.alarm_cov)
    alarm_cov: np.ndarray


def implied_load(history, phi: np.ndarray, level: np.ndarray, gain: np.ndarray, dt: float, tare_mass: float,
                 detector: DetectorSettings) -> ImpliedLoad | None:
    """The load step the residual r₀ − F φ of the kept `history` samples ((t, F, r₀, L, w, moving, G), those in motion
    if any) implies on the carried `phi`: a fit on F's mass and first moments, each joint whitened by its running
    `level` and weighted by its trust w. None when it is no part the detector would name (a contact's tail, the model's
    error on this motion), or no flange load (most of the misfit unexplained, a negative or unliftable mass less the
    `tare_mass`, or more torque on some joint than that joint's own residual: a push that lasts)."""
    hist = [s for s in history if s[5]] or list(history)
    Fh = np.array([s[1][:, :4] for s in hist])                           # (N, n, 4)
    Wh = np.array([s[4] for s in hist]) / np.sqrt(level)[None, :]
    rh = np.array([s[2] - s[1] @ phi for s in hist])
    A = (Fh * Wh[:, :, None]).reshape(-1, 4)
    delta = np.zeros(10)
    delta[:4], _, rank, sv = np.linalg.lstsq(A, (rh * Wh).reshape(-1), rcond=1e-6)
    d = detector
    bw = (rh * Wh).reshape(-1)
    sse = float(np.sum((bw - A @ delta[:4]) ** 2))
    explained = 1.0 - sse / max(float(np.sum(bw**2)), 1e-300)
    # The fit's own σ of Δm: its residual's variance per row (at least the unit the rows are scaled to), times
    # (AᵀA)⁻¹, times the variance factor of the observer's filtered, hence correlated, samples.
    per_row = max(sse / max(A.shape[0] - 4, 1), 1.0)
    AtA_inv = np.linalg.pinv(A.T @ A, rcond=1e-12) if rank == 4 else np.full((4, 4), np.inf)
    mass_var = float(AtA_inv[0, 0])
    fit_std = float(np.sqrt(per_row * mass_var * ar1_factor(gain, dt)))
    fit_cov = per_row * ar1_factor(gain, dt) * AtA_inv
    # The model's error at the running level (the rows' unit), correlated over the N samples fitted: Cauchy-Schwarz
    # bounds Var(Σ_k a_kᵀ e_k) by N Σ_k |a_k|², so N (AᵀA)⁻¹ on top of the fit's own (since_change's model term).
    alarm_cov = fit_cov + len(hist) * AtA_inv
    part_m = float(phi[0] + delta[0]) - tare_mass
    # Joint by joint: a flange load moves every joint its wrench reaches, while a push on a link leaves the joints
    # beyond it untouched. A fit that puts more torque on some joint than that joint's own residual, by more than a
    # flange load may leave unexplained there, is not a flange load (a 27 N forearm push held in motion was fitted
    # as +1.04 kg: its torque on the wrist joints, where the residual had none; its release was then named placed).
    rows_j = (bw - A @ delta[:4]).reshape(rh.shape)
    worse = (np.sum(rows_j**2, axis=0) - np.sum((rh * Wh) ** 2, axis=0)) / max(rh.shape[0], 1)
    if abs(delta[0]) < d.min_mass_change_kg or explained < 0.5 or part_m < -d.min_mass_change_kg or \
            part_m > d.max_mass_kg or float(np.max(worse)) > d.joint_span_chi2:
        return None
    return ImpliedLoad(delta, fit_std, np.sqrt(np.mean(rh**2, axis=0)), alarm_cov)
