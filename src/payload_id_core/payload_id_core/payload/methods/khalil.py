"""Khalil 2007 §V-A: the four ways to identify a payload from joint torques.

  khalil-1  §V-A-1, eq. 22–23: WLS of φ_L from τ_T − W χ with the known robot parameters.
  khalil-2  §V-A-2, eq. 24–28: re-identify the loaded robot, payload from the differences (through
            the numerical payload Jacobian instead of the RX90's grouping relations).
  khalil-3  §V-A-3, eq. 29: WLS of φ_L from loaded minus unloaded torques on the same trajectory.
  khalil-4  §V-A-4, eq. 30: one WLS of [θ, φ_L] on the stacked unloaded and loaded runs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.covariance_extra import (
    few_motions_note,
    gear_model_error,
    gear_model_error_note,
    loaded_model_error_note,
    measured_model_error,
    measured_model_error_note,
    model_error_frame_note,
    offset_drift_covariance,
    resolution_floor_note,
    resolution_floored_covariance,
    run_offset_drift_on,
)
from payload_id_core.payload.finish import MODEL_RESOLUTION, model_error_notes, model_error_ratio
from payload_id_core.payload.gain_uncertainty import joint_gain_covariance, with_gain_uncertainty
from payload_id_core.payload.jacobian import difference_jacobian
from payload_id_core.payload.linear import LinearSolution, generalized_lstsq, weighted_lstsq
from payload_id_core.payload.load_friction import (
    load_changeable_friction,
    load_friction_columns,
    load_friction_note,
    sign_epsilon,
    solve_with_load_friction,
)
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import (
    check_covers_excitation,
    finish,
    friction_change_spread,
    method_signals,
    motion_duration,
    moving_rows,
    payload_rows,
    robot_sensitivity_cov,
    robot_uncertainty,
    same_trajectory_torques,
    shared_trajectory_slots,
)
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload.robot_prior import (
    recorded_offset_drift,
    robot_offset_entries,
    robot_offset_joints,
    robot_prior_fit,
    robot_prior_note,
)
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.model_error import MAX_MASS_SIGMAS
from payload_id_core.signals.conditioning import Signals
from payload_id_core.signals.recording import Recording


def khalil_1(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
             unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Khalil 2007 eq. 23: χ_L = W_L^+ (Y_T − W χ), weighted per joint; friction assumed unchanged
    unless friction_change=True (then Δφ_f joins the unknowns, as the paper suggests). `unloaded`, where given (an
    unloaded run of this motion), is not a torque reference: it joins robot.yaml's held-out runs in the measured model
    error (_with_own_unloaded_run)."""
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    W, y_a = payload_rows(model, robot, frame, sig, bool(options.friction_change))
    theta_a = np.asarray(robot.theta, dtype=float)
    tau_a = y_a @ theta_a
    lf = bool(options.load_friction)   # resolved by identify_payload (the method's default when not given)
    sol, W, lf_notes = solve_with_load_friction(W, sig.tau - tau_a, tau_a, sig.qd, sign_epsilon(robot), lf)
    # With the estimate's mass: the loaded held-out runs' part, where robot.yaml has them (robot_id/model_error.py).
    measured = measured_model_error(robot, frame, model, "khalil-1", float(sol.x[0]))
    # Given an unloaded run of this motion, the model error on it is measured, not only sampled on other motions.
    own_run_note, own_motion_counted = None, False
    if measured is not None and unloaded is not None:
        measured, own_run_note, own_motion_counted = _with_own_unloaded_run(model, robot, frame, unloaded, options,
                                                                            measured, loaded, sig)
    # With the model error measured on held-out motions, the residuals' serial-correlation inflation (an
    # estimate of the same error from this run's residuals) gives way to it (robot_id/model_error.py).
    cov = sol.cov if measured is None else sol.cov / sol.inflation**2
    # Without it, the residual level the covariance is scaled by is floored at the model's resolution
    # (covariance_extra.resolution_floored_covariance: a noise-free run's residuals do not measure the model error).
    floored = None if measured is not None else resolution_floored_covariance(
        W, sol, np.sqrt(np.mean(sig.tau**2, axis=0)))
    floor_note = None
    if floored is not None:
        cov = sol.inflation**2 * floored
        floor_note = resolution_floor_note(sol.sigma, np.sqrt(np.mean(sig.tau**2, axis=0)))
    rc = robot_uncertainty(robot, options)
    # robot.yaml's parameters are an estimate with a stated error, C_a. Without a drift record or a measured model
    # error they join the fit under that prior, so what this run determines of them (an offset one calibration
    # motion left loose, and its drift since) is measured, not read as payload (payload/robot_prior.py, h184/h191).
    # With a record (robot_prior on, h195), the offsets' drift under the recorded width in place of the run's own.
    # Not by default where robot.yaml records the drift or measured its model error: on the real UR10e the fit under
    # C_a moved khalil-1 −0.66 / −1.34 / −0.53 % on 14harm / 15harm / 01_31 at the same σ (its C_a does not describe
    # the model's error on other motions; docs/design.md h195), where the simulated robot's σ narrowed 8×.
    use_prior = (measured is None and robot.offset_drift is None) if options.robot_prior is None \
        else bool(options.robot_prior)
    held = None if rc is None or not use_prior else robot_prior_fit(
        W, sig.tau - tau_a, y_a, sol.sigma, sol.identifiable, sol.x, rc, robot_offset_entries(robot),
        None if floored is None else np.maximum(sol.sigma, MODEL_RESOLUTION * np.sqrt(np.mean(sig.tau**2, axis=0))),
        recorded_drift=recorded_offset_drift(robot))
    notes_held: list[Note] = []
    if held is not None:
        fixed_mass = float(sol.x[0])
        sol = replace(sol, x=held.x)
        cov = (1.0 if measured is not None else sol.inflation**2) * held.noise + held.robot
        notes_held = [robot_prior_note(held, fixed_mass, robot_offset_joints(robot),
                                       robot.offset_drift is not None)]
    elif rc is not None:
        cov = cov + robot_sensitivity_cov(W, sol.sigma, y_a, sol, rc)
    gains = joint_gain_covariance(W, sol.sigma, sol.identifiable, sig.tau, y_a, robot,
                                  None if held is None else held.response)
    cov = with_gain_uncertainty(cov, sol.x, sol.identifiable, robot, W, sol.sigma) if gains is None else cov + gains
    notes = [*sig.notes, Note(NoteCode.PAYLOAD_RESIDUAL,
                              f"torque residual std per joint: {np.round(sol.sigma, 4).tolist()} N·m"), *lf_notes]
    notes += [] if floor_note is None else [floor_note]
    notes += notes_held
    gear = gear_model_error(robot, y_a, sol, W, sig.qd) if measured is None else None
    if measured is not None:
        cov[:10, :10] = cov[:10, :10] + measured
        notes.append(measured_model_error_note(measured, float(sol.x[0]), robot))
        notes += [] if own_run_note is None else [own_run_note]
        load_note = loaded_model_error_note(robot, frame, model, "khalil-1", float(sol.x[0]), float(measured[0, 0]))
        notes += [] if load_note is None else [load_note]
        # One held-out motion's error does not bound this one's: suspect (finish.judge_quality), unless this run's
        # own motion joined it.
        few = None if own_motion_counted else few_motions_note(robot, frame, model, "khalil-1", own_run_fix=True)
        notes += [] if few is None else [few]
    if gear is not None:
        shift, mu = gear
        cov = cov + np.outer(shift, shift)
        notes.append(gear_model_error_note(float(shift[0]), float(sol.x[0]), mu))
    # robot.yaml's offsets are held at their values: how far they move between runs, where robot.yaml measured it
    # (σ only: the projection's metric leaves it out).
    drift, drift_note = offset_drift_covariance(robot, y_a, sol, W, frame, model)
    # Fitted with robot.yaml's error free (held), the offsets are not held at robot.yaml's values: that fit's note
    # says what σ then holds of their drift.
    notes += [] if drift_note is None or held is not None else [drift_note]
    drift = None if held is not None else drift
    frame_note = model_error_frame_note(robot, frame, model)
    if frame_note is not None:
        notes.append(frame_note)
    notes += model_error_notes(model_error_ratio(sol.sigma, robot, np.sqrt(np.mean(sig.tau**2, axis=0))))
    # The friction assumed unchanged under load: σ says what the fit with Δφ_f finds that assumption moves (as for
    # the unloaded-twin methods), where the robot model's error is C_a's alone. Where robot.yaml measured the model's
    # error on held-out motions, that fit's move is the model error redistributed over the friction columns, which
    # `measured` already holds (real UR10e: the fit with Δφ_f is the worse one, 14harm −0.36 % against +0.12 %, and
    # its move made σ 0.83 → 0.90 %, 0.85 → 0.98 % for an error of +0.12 % on 14harm and 15harm): not counted twice.
    # The projection keeps the fit's own metric, so the estimate is the one without Δφ_f.
    metric = None
    spread = friction_change_spread(sol.x, sol.identifiable, options, robot, measured is None,
                                    lambda o: khalil_1(model, robot, loaded, frame, unloaded, o))
    if spread is not None:
        metric = cov
        cov, _ = spread.applied(cov, cov)
        notes += spread.notes
    if drift is not None:
        metric = cov if metric is None else metric
        # The fit with the friction change (spread) is khalil-1 too: its covariance already holds its own drift term.
        cov = cov + drift if spread is None or spread.with_change_cov is None else cov
    return finish(frame, PayloadMethod.KHALIL_1, sol.x, cov, sol.identifiable, notes, options,
                  convergence_time=motion_duration(sig), projection_cov=metric,
                  friction_unknowns=W.shape[-1] - 10 - (model.n if lf else 0))


def _with_own_unloaded_run(model: RobotModel, robot: RobotIdentification, frame: str, unloaded: Recording,
                           options: PayloadOptions, measured: np.ndarray, loaded: Recording, loaded_sig: Signals
                           ) -> tuple[np.ndarray, Note | None, bool]:
    """khalil-1's measured model error `measured` (C_me for `frame`) with the payload run's own unloaded run joined
    to robot.yaml's held-out runs as one more motion (robot_id/model_error.OWN_UNLOADED_RUN), the note that says
    so, and whether this motion's error is now among the measured ones (joined, or already held out; False where the
    run carries a load or is of another motion: covariance_extra.few_motions_note); `measured` unchanged (no note, or
    one saying why) where that run is already held out, carries a load, or does not widen it. Its spurious payload is
    khalil-1's regression on it (Khalil 2007 eq. 23 with no payload on), as identify-robot measures a held-out run's
    (payload/held_out_error.spurious_payload). A run of another motion is
    not joined (h220): it is not this motion's error, and where it determines the payload poorly its spurious φ is its
    own noise (the real UR10e's jointwise-joint_1 run: mass −18.3 kg, 5σ test passed, the mass σ 0.031 → 13.0 kg on
    15harm, the CoM withheld, the estimate +0.24 % off)."""

    me = robot.model_error.in_frame(model, frame) if robot.model_error is not None else None
    if me is None:
        return measured, None, False
    sig = method_signals(unloaded, model, options, robot)
    W, y_a = payload_rows(model, robot, frame, sig, False)
    fit = weighted_lstsq(W, sig.tau - y_a @ np.asarray(robot.theta, dtype=float))
    std = np.sqrt(np.abs(np.diag(fit.cov)[:10]))
    phi = np.where(fit.identifiable[:10] & np.isfinite(std), fit.x[:10], np.nan)
    source = unloaded.source or "the unloaded run"
    if me.holds_run(phi, unloaded.source):
        # Already one of the held-out runs: this motion's error is measured only where it is a run of this motion.
        return measured, None, shared_trajectory_slots(sig, loaded_sig, unloaded, loaded) is not None
    if shared_trajectory_slots(sig, loaded_sig, unloaded, loaded) is None:
        return measured, Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                              f"{source} not joined to robot.yaml's held-out runs: it is not an unloaded run of this "
                              "motion (its joint positions do not follow the loaded run's on one trajectory "
                              "clock)"), False
    if np.isfinite(phi[0]) and abs(phi[0]) > MAX_MASS_SIGMAS * std[0]:
        return measured, Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                              f"{source} not joined to robot.yaml's held-out runs: it carries a load (spurious mass "
                              f"{phi[0]:.4g} kg, {abs(phi[0]) / std[0]:.0f} σ from zero)"), False
    widened = me.covariance_with_run(measured, phi)
    if not np.any(np.diag(widened) > np.diag(measured)):
        return measured, None, True
    before, after = (np.sqrt(np.maximum(np.diag(c)[:4], 0.0)) for c in (measured, widened))
    return widened, Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                         f"{source}, this motion unloaded, joined robot.yaml's {len(me.sources)} held-out run(s) as "
                         f"one more motion: its spurious payload mass {phi[0]:.4g} kg, first moments "
                         f"{np.round(1e3 * phi[1:4], 1).tolist()} g·m; model-error σ mass {before[0]:.4g} → "
                         f"{after[0]:.4g} kg, first moments {np.round(1e3 * before[1:], 1).tolist()} → "
                         f"{np.round(1e3 * after[1:], 1).tolist()} g·m (one held-out motion's error is one draw of "
                         "another motion's)"), True


def _difference_payload(model: RobotModel, robot: RobotIdentification, frame: str, theta_b: np.ndarray,
                        cov_b: np.ndarray, ok_b: np.ndarray, options: PayloadOptions) -> LinearSolution:
    """z = J^# (θ_b − θ_a) weighted by cov(ε); θ_b entries the loaded data did not fix get no weight.

    The friction change Δφ_f holds the parameters a load can change, not the offsets (load_changeable_friction, as
    khalil-1's and direct-rls's friction change): a free offset change per joint is collinear with the payload's
    mean gravity torque over the motion and takes part of the mass and first moments with it (docs/design.md
    "The methods", the friction offsets)."""
    J = difference_jacobian(model, robot, frame, friction_change=True,
                            changeable=load_changeable_friction(robot.friction))
    eps = theta_b - np.asarray(robot.theta, dtype=float)
    C = np.where(np.isfinite(cov_b), cov_b, 0.0)
    rc = robot_uncertainty(robot, options)
    if rc is not None:
        C = C + rc
    if not ok_b.all():
        big = 1e8 * max(float(np.max(np.diag(C))), 1e-12)
        C[~ok_b, :] = 0.0
        C[:, ~ok_b] = 0.0
        C[~ok_b, ~ok_b] = big
        eps = np.where(ok_b, eps, 0.0)
    return generalized_lstsq(J, eps, C)


def khalil_2(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
             unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Khalil 2007 eq. 24–28: WLS re-identification of all robot parameters with the payload, then
    the payload from the parameter variations through the payload Jacobian."""
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    duration = motion_duration(sig)
    # The re-identification frees the gravity parameters: the samples at rest, where static friction holds the
    # arm with a torque no model of the state gives, are left out (common.moving_rows).
    sig, at_rest = moving_rows(sig)
    y_b = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    lf = bool(options.load_friction)   # resolved by identify_payload (the method's default when not given)
    # The loaded re-identification with the load-dependent Coulomb columns: the loaded torque is Y θ̂_b
    # itself; the μ_j are nuisance unknowns after θ_b and leave the difference to the payload.
    tau_a = y_b @ np.asarray(robot.theta, dtype=float)
    re, y_used, lf_fit_notes = solve_with_load_friction(y_b, sig.tau, tau_a, sig.qd, sign_epsilon(robot), lf,
                                                        loaded_torque=lambda W, x: W @ x)
    p = y_b.shape[-1]
    sol = _difference_payload(model, robot, frame, re.x[:p], re.cov[:p, :p], re.identifiable[:p], options)
    payload_cov = sol.cov
    # The re-identification's residual level floored at the model's resolution (resolution_floored_covariance;
    # khalil-2 never uses robot.yaml's measured model error, so always): the estimate keeps its weighting, the
    # covariance is the conversion's with the floored cov(θ_b).
    floored = resolution_floored_covariance(y_used, re, np.sqrt(np.mean(sig.tau**2, axis=0)))
    floor_note = None
    if floored is not None:
        payload_cov = _difference_payload(model, robot, frame, re.x[:p], re.inflation**2 * floored[:p, :p],
                                          re.identifiable[:p], options).cov
        floor_note = resolution_floor_note(re.sigma, np.sqrt(np.mean(sig.tau**2, axis=0)))
    w_l, _ = payload_rows(model, None, frame, sig, False)
    cov = with_gain_uncertainty(payload_cov, sol.x, sol.identifiable, robot, w_l, re.sigma)
    notes = [*sig.notes, *lf_fit_notes, Note(NoteCode.PAYLOAD_ROBOT_REIDENTIFIED,
                              f"loaded robot re-identified: {int(re.identifiable.sum())} of {re.x.size} "
                              f"parameters determined, torque residual std {np.round(re.sigma, 4).tolist()} N·m"
                              + (f"; {at_rest} samples at rest left out (static friction)" if at_rest else ""))]
    notes += [] if floor_note is None else [floor_note]
    gear = gear_model_error(robot, y_b, re, y_used, sig.qd)
    if gear is not None:
        # The re-identified θ_b moves by the response; the payload follows it through the same conversion.
        theta_shift, mu = gear
        shift = _difference_payload(model, robot, frame, np.asarray(robot.theta, dtype=float) + theta_shift[:p],
                                    re.cov[:p, :p], re.identifiable[:p], options).x
        cov = cov + np.outer(shift, shift)
        notes.append(gear_model_error_note(float(shift[0]), float(sol.x[0]), mu))
    # The conversion holds the offsets at robot.yaml's (their change is no unknown of it): how far they move between
    # runs, where robot.yaml measured it, through the re-identification and the same conversion (σ only).
    theta_a = np.asarray(robot.theta, dtype=float)

    def to_payload(theta_shift: np.ndarray) -> np.ndarray:
        return np.stack([_difference_payload(model, robot, frame, theta_a + d[:p], re.cov[:p, :p],
                                             re.identifiable[:p], options).x for d in theta_shift.T], axis=1)

    # Without a drift record, the drift this run shows of the offsets it resolves better than robot.yaml (the width
    # khalil-1 fits them with, h184) in the record's place: the conversion cannot fit it (h192).
    run_drift = run_offset_drift_on(model, robot, frame, sig.q, sig.qd, sig.qdd, sig.tau, sig.temperature, lf,
                                    robot_uncertainty(robot, options))
    drift, drift_note = offset_drift_covariance(robot, y_b, re, y_used, frame, model, to_payload, float(sol.x[0]),
                                                holds_measured_error=False, run_drift=run_drift)
    notes += [] if drift_note is None else [drift_note]
    return finish(frame, PayloadMethod.KHALIL_2, sol.x, cov if drift is None else cov + drift, sol.identifiable,
                  notes, options, convergence_time=duration, friction_unknowns=sol.x.size - 10, projection_cov=cov)


def khalil_3(model: RobotModel, robot: RobotIdentification | None, loaded: Recording, frame: str,
             unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Khalil 2007 eq. 29: χ_L = W_L^+ (Y_T − Y_wL), Y_wL the unloaded torques on the same trajectory.
    Needs no robot parameters at all (robot may be None); friction assumed unchanged by default, and with a
    robot identification the fit with Δφ_f says how much that matters (common.friction_change_spread)."""
    if unloaded is None:
        raise PayloadIdError("khalil-3 needs the unloaded run of the same trajectory", "pass --unloaded-bag")
    if options.friction_change and robot is None:
        # The friction change's columns are the robot identification's friction regressor.
        raise PayloadIdError("khalil-3 estimates friction_change only with the unloaded robot's identification",
                             "pass the robot identification (--robot robot.yaml), or leave friction_change off")
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    tau_u = same_trajectory_torques(model, sig, unloaded, options, PayloadMethod.KHALIL_3, robot)
    fc = bool(options.friction_change)
    lf = bool(options.load_friction)   # resolved by identify_payload (the method's default when not given)
    W, y_a = payload_rows(model, robot if (fc or lf) else None, frame, sig, fc)
    tau_a = None
    if lf:
        # The unloaded model torque sets the load the drives carry: the identified robot's, else the URDF's
        # (not the unloaded run's measured torque: its noise is in the fitted difference too).
        # (with lf, y_a is the robot's regressor exactly when there is a robot)
        tau_a = (y_a @ np.asarray(robot.theta, dtype=float) if robot is not None and y_a is not None
                 else np.array([model.rnea(q, qd, qdd) for q, qd, qdd in zip(sig.q, sig.qd, sig.qdd)]))
    sol, W, lf_notes = solve_with_load_friction(W, sig.tau - tau_u, tau_a, sig.qd, sign_epsilon(robot), lf)
    # Both runs' torques carry the same gains: their difference is the load's torque, scaled by them exactly.
    # Each parameter's own Newey–West variance, not the largest ratio over all of them (LinearSolution.hac_cov).
    cov = with_gain_uncertainty(sol.measured_cov(), sol.x, sol.identifiable, robot, W, sol.sigma)
    metric = with_gain_uncertainty(sol.cov, sol.x, sol.identifiable, robot, W, sol.sigma)
    notes = [*sig.notes, Note(NoteCode.PAYLOAD_RESIDUAL, "loaded − unloaded torque residual std per joint: "
                              f"{np.round(sol.sigma, 4).tolist()} N·m"), *lf_notes]
    spread = friction_change_spread(sol.x, sol.identifiable, options, robot, True,
                                    lambda o: khalil_3(model, robot, loaded, frame, unloaded, o))
    if spread is not None:
        cov, metric = spread.applied(cov, metric)
        notes += spread.notes
    return finish(frame, PayloadMethod.KHALIL_3, sol.x, cov, sol.identifiable, notes, options,
                  convergence_time=motion_duration(sig), projection_cov=metric,
                  friction_unknowns=W.shape[-1] - 10 - (model.n if lf else 0))


def khalil_4(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
             unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Khalil 2007 eq. 30: [Y_a; Y_b] = [[W_a, 0], [W_b, W_L]] [χ; χ_L], one WLS with weights per run
    and joint. robot.yaml only supplies the parameter definition (base set, friction shape); friction assumed
    unchanged by default, the fit with Δφ_f saying how much that matters (common.friction_change_spread)."""
    if unloaded is None:
        raise PayloadIdError("khalil-4 needs an unloaded run (any exciting trajectory)", "pass --unloaded-bag")
    check_covers_excitation(loaded)
    check_covers_excitation(unloaded, "unloaded recording")
    sig_b = method_signals(loaded, model, options, robot)
    sig_a = method_signals(unloaded, model, options, robot)
    y_a = robot.regressor(sig_a.q, sig_a.qd, sig_a.qdd, sig_a.temperature)
    W_l, y_b = payload_rows(model, robot, frame, sig_b, bool(options.friction_change))
    p, u = y_a.shape[-1], W_l.shape[-1]
    top = np.concatenate([y_a, np.zeros(y_a.shape[:2] + (u,))], axis=-1)
    bottom = np.concatenate([y_b, W_l], axis=-1)
    # Weights per run and joint (Khalil §III): first an ordinary solution, then each block whitened.
    A = np.concatenate([top, bottom], axis=0)
    b = np.concatenate([sig_a.tau, sig_b.tau], axis=0)
    first = weighted_lstsq(A, b, iterate_weights=False)
    na = y_a.shape[0]
    lf = bool(options.load_friction)   # resolved by identify_payload (the method's default when not given)
    if lf:
        # Load-dependent Coulomb columns on the loaded rows only (load_friction.py): τ̂_a = Y_b θ̂ and
        # τ̂_b = τ̂_a + W_L φ̂_L from the first solution; the unloaded run carries no load change.
        tau_a_b = y_b @ first.x[:p]
        lfc = load_friction_columns(tau_a_b, tau_a_b + W_l[..., :10] @ first.x[p:p + 10], sig_b.qd,
                                    sign_epsilon(robot))
        A = np.concatenate([A, np.concatenate([np.zeros(y_a.shape[:2] + (model.n,)), lfc], axis=0)], axis=-1)
        W_l = np.concatenate([W_l, lfc], axis=-1)
        u += model.n
        first = weighted_lstsq(A, b, iterate_weights=False)
    r = b - A @ first.x
    s_a = np.sqrt(np.mean(r[:na] ** 2, axis=0))
    s_b = np.sqrt(np.mean(r[na:] ** 2, axis=0))
    w = np.concatenate([np.broadcast_to(1 / np.maximum(s_a, 1e-12), (na, model.n)),
                        np.broadcast_to(1 / np.maximum(s_b, 1e-12), (r.shape[0] - na, model.n))])
    # Two runs of one trajectory carry the robot model's error at the same points of it, and the payload rests on
    # their contrast there, where that error cancels (as in khalil-3): the Newey–West sum counts the two samples
    # at one point as one observation (common.shared_trajectory_slots). Summed as two independent runs, the
    # unloaded run's share of the mass variance was added to the loaded run's instead of cancelling it (UR10e
    # 15harm: mass σ 1.18 % with the friction change fitted, 0.58 % paired, for an error of −0.36 %).
    slots = shared_trajectory_slots(sig_a, sig_b, unloaded, loaded)
    sol = weighted_lstsq(A * w[..., None], b * w, sigma=np.ones(model.n), time_slots=slots)
    z = sol.x[p:]
    ok = sol.identifiable[p:]
    # The payload's own Newey–West covariance, not the largest ratio over all [θ, φ_L] (LinearSolution.hac_cov): on
    # the UR10e pairs that ratio (×290-420) belongs to a robot parameter and made the mass σ 2.4-3.1 % for errors
    # of 0.05-0.5 %.
    cov = with_gain_uncertainty(sol.measured_cov()[p:, p:], z, ok, robot, W_l, s_b)
    metric = with_gain_uncertainty(sol.cov[p:, p:], z, ok, robot, W_l, s_b)
    notes = [*sig_b.notes, Note(NoteCode.PAYLOAD_RESIDUAL,
                                f"global identification: {p} robot + {u} payload unknowns; torque residual std "
                                f"unloaded {np.round(s_a, 4).tolist()}, loaded {np.round(s_b, 4).tolist()} N·m"
                                + ("; the two runs are one trajectory: their residuals at the same point of it are "
                                   "counted as correlated" if slots is not None else ""))]
    if lf:
        mu_std = np.sqrt(np.maximum(np.diag(sol.cov)[-model.n:], 0.0))
        notes.append(load_friction_note(sol.x[-model.n:], mu_std))
    spread = friction_change_spread(z, ok, options, robot, True,
                                    lambda o: khalil_4(model, robot, loaded, frame, unloaded, o))
    if spread is not None:
        cov, metric = spread.applied(cov, metric)
        notes += spread.notes
    return finish(frame, PayloadMethod.KHALIL_4, z, cov, ok, notes, options, convergence_time=motion_duration(sig_b),
                  projection_cov=metric,
                  friction_unknowns=u - 10 - (model.n if lf else 0))
