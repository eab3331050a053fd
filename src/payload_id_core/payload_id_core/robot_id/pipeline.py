"""Offline identification of the unloaded robot: signals in, RobotIdentification (→ robot.yaml) out.

Model (Xu 2024 eq. 1–4; Khalil 2007 eq. 1–3; Tadese 2022 eq. 4):
    τ = Y_b(q, q̇, q̈) π_b + diag(q̈) Ia + F(q̇, T; shape) θ_f,    θ = [π_b, Ia, θ_f]
π_b = K φ are the rigid-body base parameters (dynamics.base_params); rotor inertias the base
columns already explain are absorbed into π_b (structure). The friction shapes are searched around
the linear least squares and refined jointly (friction_shapes); θ then comes from OLS, WLS or the
physically consistent SDP (estimators), its covariance marginal over the estimated shapes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np
from numpy.typing import ArrayLike

from payload_id_core.blas import single_threaded_blas
from payload_id_core.dynamics.base_params import BaseParameters, compute_base_parameters
from payload_id_core.dynamics.friction import FrictionModel, make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note
from payload_id_core.robot_id import estimators
from payload_id_core.robot_id import gear_friction as gear_friction_model
from payload_id_core.robot_id.friction_shapes import (
    ShapeProblem,
    refine_shape_jointly,
    search_friction_shape,
    shape_marginal_covariance,
)
from payload_id_core.robot_id.gear_friction import GearFriction
from payload_id_core.robot_id.regressors import excitation_check, inertial_regressor
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.robot_id.scale_check import check_scale
from payload_id_core.robot_id.signal_checks import require_finite
from payload_id_core.robot_id.structure import RotorStructure, base_parameter_names, inertial_map, rotor_structure
from payload_id_core.signals.conditioning import Signals, SignalSource, conditioned_signals
from payload_id_core.signals.recording import Recording

# Raised whenever fit_given_model fits another model from the same inputs (2: the arm's tracking error in the
# motion, signals/tracking.py; 3: the gear friction it leaves out, gear_friction.UnmodelledGear; 4: identified
# gains' joint covariance with θ, robot.yaml format 2). Caches of identifications (the demo's, the accuracy bench's)
# key on it, so a cached robot.yaml is never one the current code would not write.
IDENTIFICATION_VERSION = 4


def identify_from_signals(model: RobotModel, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, tau: ArrayLike,
                          temperature: ArrayLike | None = None, *, friction: str = "nonlinear",
                          estimator: str = "wls", effort_scale: ArrayLike | None = None,
                          alpha: float | ArrayLike | None = None, sign_epsilon: float | None = None,
                          source: str = "commanded", seed: int = 0, check_consistency: bool = True,
                          notes: Iterable[Note | str] | None = None,
                          gear_friction: bool | ArrayLike | GearFriction = False) -> RobotIdentification:
    """Identify θ = [π_b, Ia, θ_f] from regressor inputs (N, n) and torques (N, n) (already × effort_scale).

    `alpha` fixes the nonlinear friction exponent(s) instead of identifying them; `effort_scale`
    and `source` are only recorded in the result; `notes` (the signals') are carried into it.
    `gear_friction`: True identifies the gear friction μ_j|τ_j| first and fits θ to the torques without it
    (gear_friction.py); a GearFriction or an array gives μ (one per joint, e.g. from an earlier identification
    of the same robot); False (default) leaves it out of the model: on the real UR10e it fits the unloaded torques
    better but moves the payload masses 1-2 % away from the truth (gear_friction.py).
    BLAS runs single-threaded: the work is many products of 10–100-column blocks, which threaded
    OpenBLAS made ~5× slower on a loaded 2-core machine (measured on the scatter test: 19 s vs 3.5 s).
    """
    names = list(model.joint_names)
    q, qd, qdd, tau = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd, tau))
    temp = None if temperature is None else np.asarray(temperature, dtype=float)
    for what, a in (("positions", q), ("velocities", qd), ("accelerations", qdd), ("torques", tau),
                    ("temperatures", temp)):
        require_finite(what, a, names)
    if q.shape[1] != model.n or tau.shape != q.shape:
        raise PayloadIdError(f"signals have shape {q.shape} / {tau.shape}, the robot has {model.n} joints",
                             "pass one column per joint in the model's order")
    if estimator not in estimators.ESTIMATORS:
        raise PayloadIdError(f"unknown estimator '{estimator}'", f"use one of {', '.join(estimators.ESTIMATORS)}")
    if temp is None and friction == "temperature":
        raise PayloadIdError("--friction temperature needs joint temperatures, the recording has none",
                             "use --friction nonlinear, or record the drive temperatures")
    kw = {} if sign_epsilon is None else {"sign_epsilon": sign_epsilon}
    fm = make_friction_model(friction, names, alpha=alpha, **kw)
    identify_gear = isinstance(gear_friction, (bool, np.bool_)) and bool(gear_friction)
    if isinstance(gear_friction, (bool, np.bool_)):
        given = None
    elif isinstance(gear_friction, GearFriction):
        given = GearFriction(gear_friction_model.check_mu(gear_friction.mu, model.n, "gear friction μ"),
                             np.asarray(gear_friction.mu_std, dtype=float))
    else:
        mu = gear_friction_model.check_mu(gear_friction, model.n, "gear friction μ")
        given = GearFriction(mu, np.full(model.n, np.nan))
    gear_notes: list[Note] = []
    with single_threaded_blas():
        # The structure and the inertial columns depend on the motion only: one evaluation serves both fits.
        base = compute_base_parameters(model, seed=seed)
        rotor = rotor_structure(model, base)
        wi = inertial_regressor(model, base, rotor, q, qd, qdd)
        if identify_gear:
            # μ̂ around a first WLS fit (the consistent fit, when asked for, is only needed once: below).
            first = _fit(model, base, rotor, wi, tau, qd, temp, fm, "wls", False, search_shapes=alpha is None)
            w_first = np.concatenate([wi, first.friction.columns(qd, temp)], axis=2)
            mu_hat, mu_std = gear_friction_model.fit(w_first, first.theta, tau, qd, first.sigma, fm.sign_epsilon)
            del w_first
            gear = gear_friction_model.kept(mu_hat, mu_std)
            # Once more with the friction shapes searched on the torques without the gear friction: searched with it
            # still in, they take part of μ|τ| sgn q̇ and μ̂ came out low (gear_friction.py, shape bias).
            for _ in range(gear_friction_model.SHAPE_ALTERNATIONS):
                if not gear.active:
                    break
                again = _fit(model, base, rotor, wi, gear_friction_model.remove(tau, qd, gear.mu, fm.sign_epsilon), qd,
                             temp, fm, "wls", False, search_shapes=alpha is None)
                w_again = np.concatenate([wi, again.friction.columns(qd, temp)], axis=2)
                mu_hat, mu_std = gear_friction_model.fit(w_again, again.theta, tau, qd, again.sigma, fm.sign_epsilon,
                                                         mu0=gear.mu)
                del w_again
                gear = gear_friction_model.kept(mu_hat, mu_std)
            gear_notes.append(gear.note(mu_hat, mu_std))
        elif given is not None:
            gear = given
            gear_notes.append(gear.note())
        else:
            gear = None
        tau_fit = tau if gear is None or not gear.active else gear_friction_model.remove(tau, qd, gear.mu,
                                                                                           fm.sign_epsilon)
        ident = _fit(model, base, rotor, wi, tau_fit, qd, temp, fm, estimator, check_consistency,
                     search_shapes=alpha is None)
        if gear is None:
            # Left out of the model, but not out of the uncertainty of what is fitted with it on other motions.
            w = np.concatenate([wi, ident.friction.columns(qd, temp)], axis=2)
            ident.unmodelled_gear = gear_friction_model.unmodelled(w, ident.theta, tau, qd, ident.sigma,
                                                                   ident.friction.sign_epsilon)
            del w
    scale = np.ones(model.n) if effort_scale is None else np.broadcast_to(
        np.asarray(effort_scale, dtype=float), (model.n,)).copy()
    ident.effort_scale, ident.source, ident.gear = scale, source, gear
    ident.notes = [Note.from_any(n) for n in notes or []] + gear_notes
    # Torques in the wrong unit or with wrong gains scale every parameter alike: say so now, not at the payload.
    check = check_scale(ident, model)
    ident.urdf_scale_factor = check.factor
    ident.notes.append(check.note())
    return ident


def _fit(model: RobotModel, base: BaseParameters, rotor: RotorStructure, wi: np.ndarray, tau: np.ndarray,
         qd: np.ndarray, temp: np.ndarray | None, fm: FrictionModel, estimator: str, check_consistency: bool, *,
         search_shapes: bool) -> RobotIdentification:
    """θ, its covariance and the friction shapes from the inertial columns `wi` and the torques (identify_from_
    signals' work, once); the effort scale, source and notes are the caller's to set."""
    names = list(model.joint_names)
    theta_names = (base_parameter_names(base, rotor, names) + [f"Ia_{names[j]}" for j in rotor.free]
                   + fm.param_names)
    w = np.concatenate([wi, fm.columns(qd, temp)], axis=2) if fm.n_params else wi
    ne = estimators.NormalEquations.from_data(w, tau)
    cond = excitation_check(ne, theta_names)
    del w
    problem = None
    if fm.shape_bounds and search_shapes:
        fm, problem = _identify_friction_shapes(fm, wi, tau, qd, temp)
        ne = problem.normal_equations(fm.shape)
    a_map = inertial_map(base, rotor, model.n)
    fit, psi = _estimate(estimator, ne, model, a_map, fm)
    cov, rel_std, shape_std = fit.cov, fit.rel_std, None
    if problem is not None:
        # θ's covariance marginal over the estimated shapes, with the σ the fit used
        sigma = fit.sigma if estimator != "ols" else np.full(model.n, np.sqrt(
            float(ne.rss(fit.theta).sum()) / (ne.n_samples * model.n - fit.theta.size)))
        cov, shape_std = shape_marginal_covariance(problem, fm.shape, fit.theta, sigma)
        with np.errstate(divide="ignore"):
            rel_std = 100.0 * np.sqrt(np.maximum(np.diag(cov), 0.0)) / np.abs(fit.theta)
    consistent = _physically_consistent(a_map, fit.theta, fm, model.n) if check_consistency else None
    return RobotIdentification(
        joint_names=names, urdf_path=str(model.urdf_path), urdf_sha256=model.urdf_sha256, gravity=model.gravity,
        base=base, rotor=rotor, friction=fm, theta=fit.theta, theta_names=theta_names, cov=cov,
        rel_std=rel_std, shape_std=shape_std, effort_scale=np.ones(model.n), rmse=fit.rmse, sigma=fit.sigma,
        estimator=estimator, physically_consistent=consistent, standard_parameters=psi, condition_number=cond,
        model=model)


def _estimate(estimator: str, ne: estimators.NormalEquations, model: RobotModel, a_map: np.ndarray,
              fm: FrictionModel) -> tuple[estimators.Fit, np.ndarray | None]:
    """θ by OLS, WLS or the physically consistent SDP (then also ψ, its standard parameters)."""
    if estimator == "ols":
        return estimators.ols(ne), None
    if estimator == "wls":
        return estimators.wls(ne), None
    prior = np.concatenate([model.standard_parameters(), np.zeros(model.n)])
    return estimators.feasible(ne, None, a_map, model.n, prior=prior, nonnegative=fm.nonnegative)


def _identify_friction_shapes(fm: FrictionModel, wi: np.ndarray, tau: np.ndarray, qd: np.ndarray,
                              temperature: np.ndarray | None) -> tuple[FrictionModel, ShapeProblem]:
    """Per-joint search, then the joint Gauss–Newton refinement weighted by the OLS noise level."""
    fm = search_friction_shape(fm, wi, tau, qd, temperature)
    problem = ShapeProblem.build(fm, wi, tau, qd, temperature)
    ne = problem.normal_equations(fm.shape)
    sigma0 = estimators.sigma_floor(ne, estimators.ols(ne).sigma)
    fm = fm.with_shape(refine_shape_jointly(problem, fm.shape, 1.0 / sigma0 ** 2))
    problem.friction = fm
    return fm, problem


def _physically_consistent(a_map: np.ndarray, theta: np.ndarray, fm: FrictionModel, n: int) -> bool:
    """θ_I realisable by real bodies with non-negative rotor inertias, and the friction signs right."""
    gap = estimators.consistency_gap(a_map, theta[:a_map.shape[0]], n)
    nonneg_ok = bool(np.all(theta[a_map.shape[0]:][fm.nonnegative] >= -1e-9)) if fm.n_params else True
    return bool(gap < 1e-6 and nonneg_ok)


def fit_given_model(model: RobotModel, recording: Recording, friction: str = "nonlinear", estimator: str = "wls",
                    use_commanded: bool = True, *, effort_scale: ArrayLike | None = None,
                    cutoff_hz: float | None = None, decimate: int = 1, delay: str | float = "estimate",
                    alpha: float | ArrayLike | None = None, sign_epsilon: float | None = None,
                    validate: Recording | None = None, seed: int = 0,
                    gear_friction: bool | ArrayLike | GearFriction = False,
                    tracking_error: bool = True) -> RobotIdentification:
    """Fit the robot model these arguments name to a Recording (torques already × effort_scale): it makes no choice.

    The friction model, the gear friction and the gains are what the caller gives; robot.yaml's records of the
    choices (friction_choice, effort.gain_model, model_error, load_friction_choice) stay empty, so a payload fit on
    the result falls back on the methods' fixed rules (load friction on with gains scaled in by hand: difference-rls
    +3.2 % / +4.6 % on the real UR10e where identify-robot's path gives +0.3 % / +0.1 %). robot.yaml as
    `payload-id identify-robot` makes it: payload_id_core.robot_identification.identify_robot, which calls this.

    Signals come from conditioning.conditioned_signals: the commanded trajectory (Xu 2024 §3.2,
    delay-corrected) when `use_commanded`, else filtered and differentiated measurements.
    `effort_scale` is only recorded in the result (the Recording holds scaled torques).
    `validate`: a second Recording; its torque RMSE per joint goes to `validation_rmse`.
    `gear_friction`: identified (True), given (μ per joint) or left out (False); see identify_from_signals.
    `tracking_error`: add the measured deviation from a recorded command (signals/tracking.py); robot.yaml
    records whether it was, and every payload fit on it does the same.
    """
    sig = conditioned_signals(recording, model.joint_names, source="commanded" if use_commanded else "measured",
                              cutoff_hz=cutoff_hz, decimate=decimate, delay=delay, tracking_error=tracking_error)
    ident = identify_from_signals(model, sig.q, sig.qd, sig.qdd, sig.tau, sig.temperature, friction=friction,
                                  estimator=estimator, effort_scale=effort_scale, alpha=alpha,
                                  sign_epsilon=sign_epsilon, source=sig.source, seed=seed, notes=sig.notes,
                                  gear_friction=gear_friction)
    ident.tracking_error = sig.tracking_error
    stamp_when(ident, recording, sig.temperature)
    if sig.tracking_error:
        plain = conditioned_signals(recording, model.joint_names, source="commanded", cutoff_hz=cutoff_hz,
                                    decimate=decimate, delay=sig.delay_used)
        ident.rmse_commanded = torque_rmse(ident, plain, model)
    if validate is not None:
        ident.validation_rmse = validate_robot(ident, validate, model, use_commanded=use_commanded,
                                               cutoff_hz=cutoff_hz, delay=delay)
    return ident


# Joint-state stamps after this (s since the epoch: 2001-09-09) are wall-clock time; before it, a
# controller's or simulator's own clock, which says nothing about when the run was recorded.
WALL_CLOCK_EPOCH_S = 1.0e9


def stamp_when(ident: RobotIdentification, recording: Recording, temperature: np.ndarray | None) -> None:
    """Record when the robot was identified, when its run was recorded and how warm its drives were
    (`temperature`: the run's drive temperatures (N, n) in the model's joint order, or None)."""
    ident.identified_at = datetime.now(UTC).isoformat(timespec="seconds")
    t = recording.joints.t
    ident.recorded_at = (datetime.fromtimestamp(float(t[0]), UTC).isoformat(timespec="seconds")
                         if t.size and t[0] > WALL_CLOCK_EPOCH_S else "")
    ident.drive_temperature = (None if temperature is None or not np.isfinite(temperature).all()
                               else np.mean(temperature, axis=0))


def validate_robot(ident: RobotIdentification, recording: Recording, model: RobotModel | None = None, *,
                   use_commanded: bool | None = None, cutoff_hz: float | None = None, decimate: int = 1,
                   delay: str | float = "estimate") -> np.ndarray:
    """Torque RMSE per joint of the identified model on another recording (cross-validation)."""
    model = ident.require_model(model)
    use_commanded = ident.source == SignalSource.COMMANDED if use_commanded is None else use_commanded
    sig = conditioned_signals(recording, model.joint_names, source="commanded" if use_commanded else "measured",
                              cutoff_hz=cutoff_hz, decimate=decimate, delay=delay,
                              tracking_error=ident.tracking_error)
    require_finite("torques", sig.tau, model.joint_names)
    return torque_rmse(ident, sig, model)


def torque_rmse(ident: RobotIdentification, sig: Signals, model: RobotModel) -> np.ndarray:
    """Per-joint RMSE of the identified model's torque against the measured one, on `sig`."""
    pred = ident.predict(sig.q, sig.qd, sig.qdd, sig.temperature, model=model)
    return np.sqrt(np.mean((ident.gear_corrected(sig.tau, sig.qd) - pred) ** 2, axis=0))

