"""Gaz 2017: the payload from the change of the robot's (gravity) parameters.

  gaz-static  §V, eq. 40–44: gravity coefficients from static poses, loaded and unloaded;
              mass and first moments from their difference.
  gaz-dtau    eq. 26 + 28: ε̂ = Ȳ_L^# (τ̄_L − τ̄) in one shot, then φ_L = J_ε^# ε̂.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform, rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.covariance_extra import offset_drift_covariance, run_offset_drift_on
from payload_id_core.payload.gain_uncertainty import with_gain_uncertainty
from payload_id_core.payload.jacobian import difference_jacobian, theta_layout
from payload_id_core.payload.linear import generalized_lstsq, weighted_lstsq
from payload_id_core.payload.load_friction import sign_epsilon, solve_with_load_friction
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import (
    check_covers_excitation,
    finish,
    friction_change_spread,
    method_signals,
    motion_duration,
    payload_rows,
    robot_sensitivity_cov,
    robot_uncertainty,
    same_trajectory_torques,
)
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import Signals
from payload_id_core.signals.recording import Recording


def _gravity_basis(model: RobotModel, seed: int = 0) -> np.ndarray:
    """(r, 10 n) orthonormal rows spanning what gravity torques see: Y_g φ = (Y_g Vᵀ)(V φ)."""
    rng = np.random.default_rng(seed)
    lim = model.limits
    lo = np.where(np.isfinite(lim.lower), np.maximum(lim.lower, -np.pi), -np.pi)
    hi = np.where(np.isfinite(lim.upper), np.minimum(lim.upper, np.pi), np.pi)
    q = lo + (hi - lo) * rng.random((max(40, 20 * model.n), model.n))
    z = np.zeros_like(q)
    Yg = rigid_body_regressor(model, q, z, z).reshape(-1, 10 * model.n)
    _, s, vt = np.linalg.svd(Yg, full_matrices=False)
    return vt[s > 1e-9 * s[0]]


def _static_mask(sig: Signals, vel_tol: float, acc_tol: float) -> np.ndarray:
    return np.all(np.abs(sig.qd) <= vel_tol, axis=1) & np.all(np.abs(sig.qdd) <= acc_tol, axis=1)


def _coulomb_at_rest(robot: RobotIdentification, n: int) -> np.ndarray:
    """(n,) the Coulomb level Fc per joint of the robot's friction model: half the jump of the friction
    torque across zero velocity, read just outside the smooth-sign band (viscous terms are negligible there)."""
    eps = float(robot.friction.sign_epsilon) or 1e-4
    v = np.full((1, n), 5.0 * eps)
    try:
        jump = robot.friction_torque(v) - robot.friction_torque(-v)
    except PayloadIdError:               # temperature models need a temperature: no estimate of the band
        return np.zeros(n)
    return np.maximum(0.5 * np.asarray(jump, dtype=float).reshape(n), 0.0)


def _in_row_space(A: np.ndarray, B: np.ndarray, rtol: float = 1e-6) -> bool:
    """Whether every row of A (…, u) is a combination of the rows of B (…, u)."""
    A = A.reshape(-1, A.shape[-1])
    B = B.reshape(-1, B.shape[-1])
    _, s, vt = np.linalg.svd(B, full_matrices=False)
    basis = vt[s > rtol * s[0]]
    return bool(np.linalg.norm(A - (A @ basis.T) @ basis) <= rtol * max(float(np.linalg.norm(A)), 1e-300) * 1e3)


def gaz_static(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
               unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Gaz 2017 §V eq. 40–44: gravity coefficients π_g (loaded and unloaded) from static samples,
    ε_g = π_{L,g} − π_g, p_{L,g} = (m, m·c) = J_εg^# ε_g. The unloaded coefficients come from an
    unloaded recording of static poses when given, else from the robot identification's gravity
    model (the footnote to eq. 26). Options: vel_tol (rad/s, 0.01), acc_tol (rad/s², 0.05)."""
    vel_tol = float(options.vel_tol)
    acc_tol = float(options.acc_tol)
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    V = _gravity_basis(model)
    joint, X = payload_transform(model, frame)
    lay = theta_layout(robot)
    theta_a = np.asarray(robot.theta, dtype=float)
    zero = lambda a: np.zeros_like(a)  # noqa: E731

    def static_fit(s, what):
        m = _static_mask(s, vel_tol, acc_tol)
        if m.sum() < 3:
            raise PayloadIdError(f"gaz-static: the {what} has only {int(m.sum())} static samples "
                                 f"(|q̇| ≤ {vel_tol} rad/s and |q̈| ≤ {acc_tol} rad/s² on every joint)",
                                 "record the robot resting in many different poses, or choose a dynamic method")
        q = s.q[m]
        yg = rigid_body_regressor(model, q, zero(q), zero(q))
        # Friction at rest: the offsets B of the unloaded identification (Coulomb terms vanish at q̇ = 0).
        temperature = None if s.temperature is None else s.temperature[m]
        f0 = robot.regressor(q, zero(q), zero(q), temperature)[..., lay.friction]
        target = s.tau[m] - f0 @ theta_a[lay.friction]
        return weighted_lstsq(yg @ V.T, target), yg, m, target

    loaded_fit, yg_l, mask_l, target_l = static_fit(sig, "loaded recording")
    poses = len(np.unique(np.round(sig.q[mask_l], 3), axis=0))
    notes = [*sig.notes, Note(NoteCode.PAYLOAD_STATIC_SAMPLES,
                              f"{int(mask_l.sum())} static samples in {poses} poses of the loaded run")]
    if unloaded is not None:
        sig_u = method_signals(unloaded, model, options, robot)
        unloaded_fit, yg_u, mask_u, _ = static_fit(sig_u, "unloaded recording")
        pi_a, cov_a = unloaded_fit.x, np.nan_to_num(unloaded_fit.cov)
        notes.append(Note(NoteCode.PAYLOAD_UNLOADED_REFERENCE, "unloaded gravity coefficients from "
                          f"{int(mask_u.sum())} static samples of the unloaded run"))
    else:
        # The identified robot's gravity torques at the loaded poses, expressed in the same coefficients.
        K = np.asarray(robot.base.K, dtype=float)
        phi_a = K.T @ np.linalg.solve(K @ K.T, theta_a[lay.base])
        pi_a = V @ phi_a
        cov_a = np.zeros((V.shape[0],) * 2)
        rc = robot_uncertainty(robot, options)
        if rc is not None:
            T = V @ K.T @ np.linalg.solve(K @ K.T, np.eye(K.shape[0]))
            cov_a = T @ rc[lay.base, lay.base] @ T.T
        notes.append(Note(NoteCode.PAYLOAD_UNLOADED_REFERENCE,
                          "unloaded gravity coefficients from the robot identification"))
    J = V[:, 10 * (joint - 1):10 * joint] @ X
    if loaded_fit.identifiable.all():
        sol = generalized_lstsq(J[:, :4], loaded_fit.x - pi_a, np.nan_to_num(loaded_fit.cov) + cov_a)
    else:
        # Too few poses fix every gravity coefficient: ε would carry the free ones' arbitrary values.
        # Solve eq. 44 in the row space of the static regressor instead, A (π_a + J p) ≈ τ, which is the
        # same estimate where the coefficients are determined and says which of m, m·c the poses fix.
        A = yg_l @ V.T
        if unloaded is not None and not unloaded_fit.identifiable.all() and not _in_row_space(A, yg_u @ V.T):
            raise PayloadIdError("gaz-static: the unloaded run's static poses do not cover the loaded run's, so "
                                 "the unloaded gravity torques at the loaded poses are unknown",
                                 "rest the unloaded robot in the same poses, or leave out the unloaded run to use "
                                 "the robot identification's gravity model")
        sol = weighted_lstsq(A @ J[:, :4], target_l - A @ pi_a)
        notes.append(Note(NoteCode.PAYLOAD_ROW_SPACE,
                          f"{poses} static pose(s) leave gravity coefficients undetermined: the payload was solved "
                          "in the row space of the static regressor (robot uncertainty not propagated)"))
        if not sol.identifiable[0]:
            raise PayloadIdError(f"gaz-static: the {int(mask_l.sum())} static samples of the loaded run hold "
                                 f"{poses} distinct pose(s), which do not determine the payload's mass",
                                 "record the robot resting in several poses that tilt the last link differently "
                                 "(Gaz 2017 §VI used 10 poses ±7° per joint), or choose a dynamic method")
        if not sol.identifiable.all():
            names = [n for n, ok in zip(("mcx", "mcy", "mcz"), sol.identifiable[1:]) if not ok]
            notes.append(Note(NoteCode.PAYLOAD_NOT_IDENTIFIABLE,
                              f"the static poses do not determine {', '.join(names)}: reported as not identifiable"))
    # Friction at rest is anywhere in ±Fc (stiction, hysteresis), constant while a pose is held: a
    # systematic error per pose and joint that the sample scatter does not show. Propagate it as a uniform
    # distribution (variance Fc²/3) through the same linear estimator; Gaz 2017 measured link-side
    # torques, where this term does not exist, but motor currents carry it.
    def solve(y):
        if loaded_fit.identifiable.all():
            fit = weighted_lstsq(yg_l @ V.T, y, sigma=loaded_fit.sigma)
            return generalized_lstsq(J[:, :4], fit.x, np.nan_to_num(loaded_fit.cov) + cov_a).x
        return weighted_lstsq(A @ J[:, :4], y, sigma=sol.sigma).x

    fc = _coulomb_at_rest(robot, model.n)
    if np.any(fc > 0):
        pose_of = np.unique(np.round(sig.q[mask_l], 3), axis=0, return_inverse=True)[1].reshape(-1)
        stiction = np.zeros((4, 4))
        for k in range(poses):
            for j in np.flatnonzero(fc > 0):
                y = np.zeros_like(target_l)
                y[pose_of == k, j] = 1.0
                dp = solve(y)
                stiction += (fc[j] ** 2 / 3.0) * np.outer(dp, dp)
        sol.cov = sol.cov + stiction
        notes.append(Note(NoteCode.PAYLOAD_STICTION,
                          f"friction at rest (±Fc = {np.round(fc, 2).tolist()} N·m per joint) included in the "
                          "uncertainty, as a systematic error per pose"))
    z = np.zeros(10)
    z[:4] = sol.x
    cov = np.full((10, 10), np.nan)
    cov[:4, :4] = sol.cov
    ok = np.zeros(10, dtype=bool)
    ok[:4] = sol.identifiable
    return finish(frame, PayloadMethod.GAZ_STATIC, z, cov, ok, notes, options,
                  convergence_time=float(mask_l.sum()) * float(np.median(np.diff(sig.t))))


def gaz_dtau(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
             unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Gaz 2017 eq. 26 + 28 in one shot: ε̂ = Ȳ_L^# Δτ̄ with Δτ̄ = τ̄_L − τ̄ (the unloaded torques on the
    same trajectory when an unloaded run is given, else the identified robot's prediction), then
    p_L = J_ε^# ε̂ weighted by cov(ε̂). friction_change (default False) lets ε̂ include Δφ_f; with an unloaded run
    the fit with it says how much that matters (common.friction_change_spread)."""
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    y_b = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    lay = theta_layout(robot)
    theta_a = np.asarray(robot.theta, dtype=float)
    if unloaded is not None:
        tau_u = same_trajectory_torques(model, sig, unloaded, options, PayloadMethod.GAZ_DTAU, robot)
        source = "unloaded run on the same trajectory"
    else:
        tau_u = y_b @ theta_a
        source = "robot identification's prediction"
    fc = bool(options.friction_change)
    cols = np.r_[np.arange(lay.base.start, lay.base.stop),
                 np.arange(lay.friction.start, lay.friction.stop) if fc else np.array([], dtype=int)]
    lf = bool(options.load_friction)   # resolved by identify_payload (the method's default when not given)
    # The load-dependent Coulomb columns (load_friction.py) from the identified robot's torque and the one
    # the first ε̂ adds; the μ_j are nuisance unknowns after ε and leave the conversion to the payload.
    tau_model = y_b @ theta_a
    re_all, W_used, lf_fit_notes = solve_with_load_friction(
        y_b[..., cols], sig.tau - tau_u, tau_model, sig.qd, sign_epsilon(robot), lf,
        loaded_torque=lambda W, x: tau_model + W @ x)
    k = cols.size
    re = replace(re_all, x=re_all.x[:k], cov=re_all.cov[:k, :k], identifiable=re_all.identifiable[:k],
                 hac_cov=re_all.measured_cov()[:k, :k])
    eps = np.zeros(lay.p)
    eps[cols] = re.x
    C = np.zeros((lay.p, lay.p))
    C[np.ix_(cols, cols)] = np.nan_to_num(re.cov)
    rc = robot_uncertainty(robot, options)
    if unloaded is None and rc is not None:
        C[np.ix_(cols, cols)] += robot_sensitivity_cov(W_used, re_all.sigma, y_b, re_all, rc)[:k, :k]
    rest = np.setdiff1d(np.arange(lay.p), cols)
    # Parameters held at zero change are known exactly; a tiny variance keeps C invertible.
    C[rest, rest] = 1e-12 * max(float(np.max(np.diag(C))), 1e-12)
    # ε weighted by C (the fit's covariance times its largest Newey–West ratio: a common factor, the weighting
    # unchanged), its covariance as measured: each parameter's own Newey–West one (LinearSolution.hac_cov). The
    # largest ratio belongs to a parameter the payload barely uses (×100 against the mass's ×10-18 on the UR10e
    # pairs) and made the mass σ 1.4 % for errors of 0.3-0.4 %.
    C_measured = C.copy()
    C_measured[np.ix_(cols, cols)] += np.nan_to_num(re.measured_cov()) - np.nan_to_num(re.cov)
    J = difference_jacobian(model, robot, frame, friction_change=fc)
    sol = generalized_lstsq(J, eps, C, C_measured)
    w_l, _ = payload_rows(model, None, frame, sig, False)
    cov = with_gain_uncertainty(sol.measured_cov(), sol.x, sol.identifiable, robot, w_l, re.sigma)
    metric = with_gain_uncertainty(sol.cov, sol.x, sol.identifiable, robot, w_l, re.sigma)
    notes = [*sig.notes, Note(NoteCode.PAYLOAD_UNLOADED_REFERENCE, f"Δτ against the {source}"), *lf_fit_notes]
    drift = None
    if unloaded is None and not fc:
        # Against robot.yaml's prediction with ε̂ on the base parameters alone, the offsets are held at robot.yaml's:
        # how far they move between runs, where robot.yaml measured it, through ε̂'s fit and the conversion (σ only).
        def to_payload(fit_shift: np.ndarray) -> np.ndarray:
            shift = np.zeros((lay.p, fit_shift.shape[1]))
            shift[cols] = fit_shift[:k]
            return np.stack([generalized_lstsq(J, d, C, C_measured).x for d in shift.T], axis=1)

        # Without a drift record, the drift this run shows of the offsets it resolves better than robot.yaml, as
        # khalil-2's (h192).
        run_drift = run_offset_drift_on(model, robot, frame, sig.q, sig.qd, sig.qdd, sig.tau, sig.temperature, lf, rc)
        drift, drift_note = offset_drift_covariance(robot, y_b, re_all, W_used, frame, model, to_payload,
                                                    float(sol.x[0]), holds_measured_error=False, run_drift=run_drift)
        notes += [] if drift_note is None else [drift_note]
    spread = friction_change_spread(sol.x, sol.identifiable, options, robot, unloaded is not None,
                                    lambda o: gaz_dtau(model, robot, loaded, frame, unloaded, o))
    if spread is not None:
        cov, metric = spread.applied(cov, metric)
        notes += spread.notes
    return finish(frame, PayloadMethod.GAZ_DTAU, sol.x, cov if drift is None else cov + drift, sol.identifiable,
                  notes, options, convergence_time=motion_duration(sig), projection_cov=metric,
                  friction_unknowns=sol.x.size - 10)
