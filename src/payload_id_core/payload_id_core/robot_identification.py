"""The unloaded robot identified the way `payload-id identify-robot` identifies it: runs in, robot.yaml's content out.

Every choice robot.yaml records is made here, once: the drive gains from a run of known mass and the friction model
they are fitted with (choice_record.GAIN_MODEL_CRITERION), the friction model chosen on held-out runs
(friction_choice.py), the model's error on held-out motions (payload/held_out_error.py), the friction offsets' drift,
the gains' spread over held-out loaded runs (effort.gain_check), each payload method's load-dependent friction
(payload/load_friction_choice.py), the gains' covariance with θ. The command line is argument parsing, reading and
this call; a library user calling identify_robot with the same runs gets the same robot.yaml, number for number
(test_robot_identification_path). robot_id.fit_given_model is the one fit inside it, which chooses nothing: a payload
fit on its result falls back on the methods' fixed rules (on the real UR10e, difference-rls +3.2 % / +4.6 % where
this path gives +0.3 % / +0.1 %: docs/design.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON, FrictionModel
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note
from payload_id_core.payload.gain_check_runs import check_run_signals, measure_gain_spread
from payload_id_core.payload.held_out_error import (
    DRIFT,
    FRICTION_CV,
    GAIN_CHECK,
    HELD_OUT,
    HELD_OUT_LOADED,
    measure_loaded_model_error,
    measure_model_error,
    measure_offset_spread,
    refuse_fitted_runs,
    refuse_repeated_runs,
)
from payload_id_core.payload.load_friction_choice import measure_load_friction_choice
from payload_id_core.payload.options import SIGNAL_OPTIONS, PayloadOptions
from payload_id_core.robot_id import (
    IDENTIFIED_GAINS_SOURCE,
    RobotIdentification,
    common_effort_unit,
    fit_given_model,
    validate_robot,
)
from payload_id_core.robot_id.choice_record import (
    GAIN_HOLDOUT_CRITERION,
    GAIN_LINEAR,
    GAIN_MODEL_CRITERION,
    GAIN_SHAPED_LOAD,
    GAIN_SHARED_MU,
    GainModelChoice,
    choose_gain_model,
    model_choice_weight,
)
from payload_id_core.robot_id.drive_gains import (
    GainFit,
    gain_candidate,
    identify_drive_gains,
    load_friction_collinear_note,
    load_friction_spread,
    relative_gain_covariance,
    theta_gain_sensitivity,
    weakly_determined,
    with_model_error,
)
from payload_id_core.robot_id.friction_choice import (
    FrictionChoice,
    choose_friction,
    given_choice,
    identify_candidates,
    unchosen_default,
)
from payload_id_core.robot_id.gain_model_holdout import GainModelSpec, calibration_rows, judge_on_held_out
from payload_id_core.robot_id.gear_friction import GearFriction
from payload_id_core.robot_id.result import GainCovariance
from payload_id_core.signals.conditioning import SignalSource, conditioned_signals
from payload_id_core.signals.effort import EffortUnit, check_drive_gains
from payload_id_core.signals.plausibility import check_plausible
from payload_id_core.signals.recording import Recording

# friction "auto" with no held-out run to choose on: the model of Xu 2024 eq. 2, kept and recorded as not chosen.
DEFAULT_FRICTION = "nonlinear"
FRICTION_KINDS = ("auto", "none", "linear", "nonlinear", "stribeck", "temperature")
# The nonlinear friction exponent's range: the one the identification searches (dynamics/friction.py).
ALPHA_RANGE = (0.1, 3.0)
# Whether identify-robot judges the drive gains' friction model on held-out loaded runs (GAIN_HOLDOUT_CRITERION,
# with the one-μ candidate) rather than on the calibration pair's own σ (GAIN_MODEL_CRITERION): docs/design.md.
GAIN_MODEL_HOLDOUT_DEFAULT = False
# A command-to-motion delay is a controller's lag: not negative (the arm cannot move before the command)
# and well under a second (more is a clock offset between the recorded topics, not a lag).
MAX_DELAY_S = 1.0


def check_request(model: RobotModel, *, loaded_given: bool, known_payload_mass: float | None,
                  held_out_loaded_given: bool, alpha: float | Sequence[float] | None = None,
                  delay: str | float = "estimate", payload_frame: str | None = None,
                  friction: str = "auto", gain_check_runs: int = 0,
                  gain_check_mass: float | Sequence[float] = ()) -> str:
    """The payload frame, after refusing a request identify_robot cannot serve (before any run is read): a known mass
    without its run or a run without its mass, gain-check runs without identified gains or masses that do not pair
    with them (gain_check_masses), an exponent or a delay out of range, an unknown friction model."""
    if friction not in FRICTION_KINDS:
        raise PayloadIdError(f"unknown friction model '{friction}'", f"use one of {', '.join(FRICTION_KINDS)}")
    if alpha is not None:
        values = np.atleast_1d(np.asarray(alpha, dtype=float))
        if values.size not in (1, model.n):
            raise PayloadIdError(f"--alpha has {values.size} values for {model.n} joints",
                                 "give one, or one per joint")
        if not all(ALPHA_RANGE[0] <= a <= ALPHA_RANGE[1] for a in values):
            raise PayloadIdError(f"--alpha {','.join(f'{a:g}' for a in values)} is outside [{ALPHA_RANGE[0]:g}, "
                                 f"{ALPHA_RANGE[1]:g}], the range of the nonlinear friction exponent",
                                 "e.g. --alpha 0.6, or leave it out to identify it")
    if delay != "estimate" and not (isinstance(delay, (int, float)) and 0.0 <= float(delay) <= MAX_DELAY_S):
        raise PayloadIdError(f"--delay {delay} s is outside [0, {MAX_DELAY_S:g}] s: the command-to-motion delay is "
                             "a controller's lag, never negative and well under a second",
                             "give the lag in seconds (e.g. --delay 0.008) or let it be estimated (--delay estimate)")
    # The known mass is the calibration run's (the drive gains) and the held-out loaded runs' (the load-friction
    # choice): a cell with given gains still chooses the load friction on a run of known mass.
    if loaded_given and known_payload_mass is None:
        raise PayloadIdError("drive-gain identification needs both --known-payload-mass and --loaded-bag",
                             "give both, or neither")
    if known_payload_mass is not None and not (loaded_given or held_out_loaded_given):
        raise PayloadIdError("--known-payload-mass without a run carrying that payload",
                             "give its run: --loaded-bag/--loaded-csv-ur (identifies the drive gains) or "
                             "--held-out-loaded-bag/--held-out-loaded-csv-ur (chooses the load friction)")
    if known_payload_mass is not None and not known_payload_mass > 0:
        raise PayloadIdError(f"--known-payload-mass {known_payload_mass} is not positive", "give the mass in kg")
    gain_check_masses(gain_check_runs, gain_check_mass, known_payload_mass, loaded_given)
    if held_out_loaded_given and known_payload_mass is None:
        raise PayloadIdError("--held-out-loaded-csv-ur/--held-out-loaded-bag need the payload's known mass",
                             "give --known-payload-mass (the mass those runs carry)")
    return model.payload_frame(payload_frame)  # an unknown frame fails before any reading


def gain_check_masses(runs: int, masses: float | Sequence[float], known_payload_mass: float | None,
                      loaded_given: bool) -> list[float]:
    """The known mass of each of `runs` gain-check runs (one of `masses` for all, one per run, or
    `known_payload_mass`), refused before any reading when they do not pair up or the gains are not identified."""
    given = [float(m) for m in np.atleast_1d(np.asarray(masses, dtype=float))]
    for m in given:  # the command line's own type refuses these too (cli/numbers.number)
        if not (math.isfinite(m) and m > 0):
            raise PayloadIdError(f"--gain-check-mass {m:g} is not a positive mass", "give the mass in kg")
    if not runs:
        if given:
            raise PayloadIdError("--gain-check-mass without a --gain-check run",
                                 "give the loaded runs it belongs to (--gain-check-csv-ur/--gain-check-bag)")
        return []
    if not loaded_given:
        raise PayloadIdError("--gain-check runs check identified drive gains, and none are identified here",
                             "identify them with a known mass (--loaded-csv-ur/--loaded-bag LOADED "
                             "--known-payload-mass KG), then add the --gain-check runs")
    if not given:
        assert known_payload_mass is not None, "check_request refuses a loaded run without its mass first"
        given = [float(known_payload_mass)]
    if len(given) == 1:
        given = given * runs
    if len(given) != runs:
        raise PayloadIdError(f"{len(given)} --gain-check-mass values for {runs} --gain-check runs",
                             "give one mass for all the runs, or one per run (the CSVs first, then the bags)")
    return given


def calibration_conditioning(use_commanded: bool, delay: str | float, cutoff_hz: float | None,
                             decimate: int) -> PayloadOptions:
    """How identify_robot conditions every run it reads (conditioning.conditioned_signals' source, delay, cutoff_hz,
    decimate): the calibration's own options, for its fit, its drive gains, and its held-out, friction-choice, drift,
    load-friction, gain-check and validation runs alike. The payload fits' defaults when the command line's are."""
    return PayloadOptions(source=SignalSource.COMMANDED if use_commanded else SignalSource.MEASURED, delay=delay,
                          cutoff_hz=cutoff_hz, decimate=decimate)


def identify_robot(model: RobotModel, recording: Recording, *, loaded: Recording | None = None,
                   known_payload_mass: float | None = None, held_out: Sequence[Recording] = (),
                   friction_cv: Sequence[Recording] = (), held_out_loaded: Sequence[Recording] = (),
                   drift: Sequence[Recording] = (), gain_checks: Sequence[Recording] = (),
                   gain_check_mass: float | Sequence[float] = (), validation: Recording | None = None,
                   friction: str = "auto",
                   gear_friction: bool = False, gain_model_holdout: bool = GAIN_MODEL_HOLDOUT_DEFAULT,
                   estimator: str = "wls", use_commanded: bool = True,
                   cutoff_hz: float | None = None, decimate: int = 1, delay: str | float = "estimate",
                   alpha: float | Sequence[float] | None = None, effort_scale: ArrayLike | None = None,
                   payload_frame: str | None = None,
                   report: Callable[[str], None] | None = None) -> RobotIdentification:
    """robot.yaml's content (RobotIdentification; .save writes it) from the unloaded `recording`, as
    `payload-id identify-robot` makes it with the same runs and options (its defaults are the command line's).

    Every recording holds raw efforts (read_ur_csv / read_bag with no effort scale). `loaded` + `known_payload_mass`
    (kg): the drive gains are identified (Gautier & Briot), with the friction model GAIN_MODEL_CRITERION picks;
    `effort_scale`: given gains (corrected by the identified ones when both). `held_out`: unloaded runs of other
    motions (the friction choice and the model error σ, robot.yaml model_error); `friction_cv`: runs for the friction
    choice only; `held_out_loaded`: runs of other motions carrying `known_payload_mass` (each payload method's load
    friction); `drift`: unloaded runs of other occasions (friction_offset_drift); `gain_checks`: loaded runs of other
    occasions carrying `gain_check_mass` (kg: one for all, one per run; default `known_payload_mass`), which widen the
    identified gains' σ to their spread where it exceeds the calibration's (effort.gain_check); `validation`: its
    torque RMSE.
    `friction` "auto" chooses on the held-out runs (nonlinear, recorded as not chosen, without them); `gear_friction`
    True identifies μ_j|τ_j|. `gain_model_holdout`: the gains' friction model (with a third candidate, one μ for the
    gears) chosen on held-out loaded runs, the `gain_checks` or else the loaded run's halves
    (choice_record.GAIN_HOLDOUT_CRITERION), not on the calibration pair's own σ.
    `report`: a callable given each progress line the command line prints (None: silent).
    Bad input: PayloadIdError naming it, before any fit.
    """
    say = report or (lambda _line: None)
    frame = check_request(model, loaded_given=loaded is not None, known_payload_mass=known_payload_mass,
                          held_out_loaded_given=bool(held_out_loaded), alpha=alpha, delay=delay,
                          payload_frame=payload_frame, friction=friction, gain_check_runs=len(gain_checks),
                          gain_check_mass=gain_check_mass)
    check_masses = gain_check_masses(len(gain_checks), gain_check_mass, known_payload_mass, loaded is not None)
    given = None if effort_scale is None else check_drive_gains(effort_scale, model.n, "--effort-scale")
    held_out, friction_cv, held_out_loaded, drift, gain_checks = (
        list(r) for r in (held_out, friction_cv, held_out_loaded, drift, gain_checks))
    fitted = [r for r in (recording, loaded) if r is not None]  # the gains are fitted on both
    for kind, given_runs in ((HELD_OUT, held_out), (FRICTION_CV, friction_cv), (HELD_OUT_LOADED, held_out_loaded),
                             (DRIFT, drift), (GAIN_CHECK, gain_checks)):
        refuse_fitted_runs(given_runs, fitted, kind)
    refuse_repeated_runs(drift, "--drift-csv-ur/--drift-bag")
    refuse_repeated_runs(gain_checks, "--gain-check-csv-ur/--gain-check-bag")
    runs = [r for r in (recording, validation, loaded, *held_out, *friction_cv, *held_out_loaded, *drift,
                        *gain_checks) if r is not None]
    for r in runs if use_commanded else ():
        if not r.commanded:  # the command line names its --trajectory-topic first (identify-robot's _require_commanded)
            raise PayloadIdError(f"{r.source}: no commanded trajectory in the run, and use_commanded is set",
                                 "read the controller's JointTrajectory topic with it, or use_commanded=False "
                                 "(--use-measured)")
    unit = common_effort_unit([(r.joints.effort_unit, r.source) for r in runs])
    scale = np.ones(model.n) if given is None else given
    limits = model.limits
    for r in runs:  # a sample no robot can produce (beyond the URDF's limits by a wide margin) is refused
        check_plausible(r.with_drive_gains(scale), model.joint_names, limits.lower, limits.upper, limits.velocity,
                        limits.effort)
    # Every run read here is conditioned as the calibration run is (its motion source, delay, filter, decimation):
    # a robot.yaml whose held-out figures came from runs filtered otherwise would not describe the model it holds.
    conditioning = calibration_conditioning(use_commanded, delay, cutoff_hz, decimate)
    # A bad check run refused here, in seconds, not after the identification (h108: 60-150 s on the real UR10e).
    for r in gain_checks:
        check_run_signals(model, r.with_drive_gains(scale), conditioning)
    scale_std = None
    gain_fit: GainFit | None = None
    gain_notes: list[Note] = []
    gain_model: GainModelChoice | None = None
    source = "none" if given is None else "given"
    alpha_arg = None if alpha is None else (
        float(np.ravel(alpha)[0]) if np.size(alpha) == 1 else np.asarray(alpha, dtype=float))
    gear: bool | GearFriction = bool(gear_friction)
    if loaded is not None:
        assert known_payload_mass is not None, "check_request refuses a loaded run without its mass"
        # Identified on top of the given gains (if any): the identified factor corrects them.
        def gains(geared: RobotIdentification | None = None, shapes: FrictionModel | None = None,
                  load_friction: np.ndarray | None = None, sign_epsilon: float | None = None,
                  shared_mu: bool = False):
            """The drive gains, with the gear friction of `geared` taken off both runs' efforts when given, with
            `shapes`' friction (default linear) and the load-dependent friction on the `load_friction` joints (one μ
            for all of them with `shared_mu`)."""
            gear_mu = None if geared is None or geared.gear is None else geared.gear.mu
            eps = sign_epsilon if sign_epsilon is not None else \
                DEFAULT_SIGN_EPSILON if geared is None else geared.friction.sign_epsilon
            return identify_drive_gains(
                model, recording.with_drive_gains(scale), loaded.with_drive_gains(scale), known_payload_mass,
                frame, friction=shapes or ("none" if friction == "none" else "linear"),
                use_commanded=use_commanded, delay=delay, cutoff_hz=cutoff_hz, decimate=decimate, gear_mu=gear_mu,
                sign_epsilon=eps,
                load_friction=load_friction, shared_mu=shared_mu)
        fit = gains()
        geared: RobotIdentification | None = None
        if gear is True:
            # The gear friction needs torques: one θ shared by all joints cannot fit efforts in each drive's own
            # unit, and μ would take the mismatch (elbow μ 0.097 for a true 0.02 on the cell's currents). So μ
            # on the torques of these gains, then the gains again without the gear friction they absorbed.
            first = fit_given_model(model, recording.with_drive_gains(scale * fit.scale),
                                    friction="nonlinear" if friction == "auto" else friction,
                                    use_commanded=use_commanded, cutoff_hz=cutoff_hz, decimate=decimate, delay=delay,
                                    alpha=alpha_arg, gear_friction=True)
            assert first.gear is not None, "gear_friction=True identifies it"
            gear, geared = first.gear, first
            fit = gains(first)
        factor, factor_std = fit.scale, fit.std
        fit_std = factor_std
        if friction != "none":
            # The gains are fixed by the load's torque only, so what the friction model misses where the load changes
            # the torque goes into them. Second candidate: the friction's shapes identified on the unloaded run (they
            # do not depend on the gains) with a load-dependent Coulomb level on the joints the load determines;
            # chosen by choice_record.GAIN_MODEL_CRITERION. Not with the gear friction, the same law already taken off.
            shaped = fit_given_model(model, recording.with_drive_gains(scale * fit.scale), friction="nonlinear",
                                     use_commanded=use_commanded, cutoff_hz=cutoff_hz, decimate=decimate,
                                     delay=delay, alpha=alpha_arg)
            determined = ~weakly_determined(fit)
            fits = {GAIN_LINEAR: fit}
            eps = shaped.friction.sign_epsilon
            specs = [GainModelSpec(GAIN_LINEAR, "linear")]
            if geared is None and determined.any():
                fits[GAIN_SHAPED_LOAD] = gains(None, shaped.friction, determined, eps)
                specs.append(GainModelSpec(GAIN_SHAPED_LOAD, shaped.friction, determined, False, eps))
                if gain_model_holdout:
                    # One μ for the gears (h115): judged only where held-out runs can show whether it carries over;
                    # the calibration's own σ prefers it on the real UR10e, whose held-out payloads it moves the
                    # wrong way (docs/design.md, "one μ for the robot's gears").
                    fits[GAIN_SHARED_MU] = gains(None, shaped.friction, determined, eps, shared_mu=True)
                    specs.append(GainModelSpec(GAIN_SHARED_MU, shaped.friction, determined, True, eps))
            candidates = [gain_candidate(kind, f, determined) for kind, f in fits.items()]
            judged_on: list[str] = []
            if gain_model_holdout and len(fits) > 1:
                judged_on = judge_on_held_out(
                    candidates, specs,
                    calibration_rows(model, frame, use_commanded=use_commanded, delay=delay, cutoff_hz=cutoff_hz,
                                     decimate=decimate, gear_mu=None),
                    recording.with_drive_gains(scale), loaded.with_drive_gains(scale), known_payload_mass,
                    determined, [(r.with_drive_gains(scale), m) for r, m in zip(gain_checks, check_masses)])
            chosen = choose_gain_model(candidates)
            gain_model = GainModelChoice(chosen, GAIN_HOLDOUT_CRITERION if judged_on else GAIN_MODEL_CRITERION,
                                         [model.joint_names[j] for j in np.flatnonzero(determined)], candidates,
                                         model_choice_weight(candidates, chosen), judged_on)
            fit = fits[chosen]
            # The gains' σ: with the load-friction model chosen, its Newey–West σ as the criterion measured it (its
            # textbook σ left wrist 1 at 3.9σ on simulate --profile ur10, 500 Hz: the residuals are slower than white).
            # The linear model keeps its own σ: its Newey–West one (2.3 % on the real UR10e, recorded in
            # effort.gain_model) took the real masses' σ to 1.7-2.0 % for errors below 1 % (docs/design.md).
            std = fit.std if chosen == GAIN_LINEAR else gain_candidate(chosen, fit, determined).serial_std
            # A gain the known mass does not fix takes up the friction model's error: how far it moves with the
            # friction's shapes alone (no load friction: where the load barely torques a joint μ and its gain are one
            # column) joins its std.
            other = gains(geared, shaped.friction) if weakly_determined(fits[GAIN_LINEAR]).any() else fit
            if chosen == GAIN_SHARED_MU:
                # Fitted with the shapes, so the shapes-alone fit is no other friction model for these joints: the
                # linear fit's distance joins too (UR3, held-out halves, seed 7: wrist 3 −5.78 % at 3.0σ without it).
                std, _ = with_model_error(fit, fits[GAIN_LINEAR], model.joint_names, std, fits[GAIN_LINEAR])
            factor, (fit_std, gain_note) = fit.scale, with_model_error(fit, other, model.joint_names, std,
                                                                       fits[GAIN_LINEAR])
            # On the joints the known mass determines, the friction model the gains were fitted with is itself
            # uncertain: the other candidate's distance with its weight joins their σ (GAIN_CHOICE_SPREAD). Each fit's
            # own σ alone left wrist 1 −4.75 % at 8.7σ (linear kept, ur10 100 Hz) and panda_joint6 +1.06 % at 4.5σ
            # (load friction chosen); docs/design.md, "Conventions".
            choice_shift = gain_model.choice_spread(model.joint_names) * fit.scale
            # A determined gain fitted without its joint's load friction: what the run cannot separate of the two
            # joins its σ (drive_gains.load_friction_spread; UR3 wrist 1 −5.03 % at 4.8σ without it). Not with the
            # gear friction: its μ was identified and taken off first.
            collinear = load_friction_spread(fit, determined) if geared is None else np.zeros(model.n)
            gain_model.load_friction_spread = collinear / fit.scale
            factor_std = np.sqrt(fit_std ** 2 + choice_shift ** 2 + collinear ** 2)
            say(gain_model.text())
            if gain_note is not None:
                gain_notes.append(gain_note)
            collinear_note = load_friction_collinear_note(fit, fit_std, collinear, model.joint_names)
            if collinear_note is not None:
                gain_notes.append(collinear_note)
        gain_fit, scale, scale_std, fit_scale_std = fit, scale * factor, scale * factor_std, scale * fit_std
        source = (f"{IDENTIFIED_GAINS_SOURCE}{loaded.source} with a known {known_payload_mass:g} kg payload"
                  + ("" if given is None else " (correcting --effort-scale)"))
        say("drive gains: " + ", ".join(f"{j} {k:.5g} ± {s:.2g}" for j, k, s in
                                        zip(model.joint_names, scale, scale_std)))
        if fit.serial_std is not None:
            # Both of the fit's σ (the textbook one shrinks with the sampling rate, the serially correlated one not);
            # which one robot.yaml carries: docs/design.md, "Conventions".
            say("drive gains' std, residuals independent / serially correlated (Newey–West): "
                + ", ".join(f"{j} {100 * s / k:.2g} / {100 * w / k:.2g} %" for j, k, s, w in
                            zip(model.joint_names, fit.scale, fit.std, fit.serial_std)))
    elif unit is EffortUnit.CURRENT and given is None:
        # A model fitted to currents as if they were N·m makes every payload wrong by the gains (~10× on a UR).
        raise PayloadIdError(f"{recording.source}: the efforts are motor currents and no drive gains were given",
                             "identify them with a known mass (--loaded-csv-ur/--loaded-bag LOADED "
                             "--known-payload-mass KG), or pass --effort-scale k1,...,kn")
    recording = recording.with_drive_gains(scale)
    validation = None if validation is None else validation.with_drive_gains(scale)

    def identify(kind: str) -> RobotIdentification:
        return fit_given_model(model, recording, friction=kind, estimator=estimator, use_commanded=use_commanded,
                               effort_scale=scale, cutoff_hz=cutoff_hz, decimate=decimate, delay=delay,
                               alpha=alpha_arg, gear_friction=gear)

    held_out = [r.with_drive_gains(scale) for r in held_out]
    ident, choice = _identify_friction(model, identify, friction, alpha is not None, held_out,
                                       [r.with_drive_gains(scale) for r in friction_cv], conditioning, frame, say)
    spread_std, gain_check = scale_std, None
    if gain_checks:  # first of the held-out measures: a mass the runs contradict is refused before the others run
        assert scale_std is not None, "gain checks need identified gains (gain_check_masses)"
        gain_check = measure_gain_spread(model, ident, [r.with_drive_gains(scale) for r in gain_checks],
                                         check_masses, scale_std, frame, conditioning)
        spread_std = gain_check.widened_std()
        say(gain_check.text())
    if validation is not None:
        ident.validation_rmse = validate_robot(ident, validation, model, use_commanded=use_commanded,
                                               cutoff_hz=cutoff_hz, decimate=decimate, delay=delay)
    if held_out:
        ident.model_error = measure_model_error(model, ident, held_out, frame, conditioning)
        few_motions = ident.model_error.too_few_motions_note()
        if few_motions is not None:
            ident.notes.append(few_motions)
            say(few_motions.text)
        conv = ident.model_error.difference_rls
        if conv is not None:
            say(f"difference-rls moments conversion: {conv.chosen} (held-out first moments with and without C_a "
                f"differ at chi2 {conv.chi2:.3g}, limit {conv.chi2_limit():.3g}; spurious mean square "
                + ", ".join(f"{k} {conv.mean_square(k):.3g}" for k in conv.spurious) + " (kg·m)²)")
        for cand in choice.candidates:
            if cand.kind == choice.chosen:
                cand.spurious_mass = [float(m) for m in ident.model_error.spurious[:, 0]]
    ident.friction_choice = choice
    ident.notes.append(choice.note())
    if drift:
        ident.offset_drift = measure_offset_spread(model, ident, [r.with_drive_gains(scale) for r in drift], frame,
                                                   conditioning)
        drift_record = ident.offset_drift
        say(f"friction offsets' drift over {len(drift)} run(s), per joint spread (resolution, robot.yaml's C_a along "
            "the offset) -> prior std [N·m]: "
            + ", ".join(f"{j} {s:.3g} ({r:.2g}, {c:.2g}) -> {p:.3g}" for j, s, r, c, p in
                        zip(model.joint_names, drift_record.spread, drift_record.resolution,
                            drift_record.identification, drift_record.prior_std)))
    if held_out_loaded:
        assert known_payload_mass is not None, "check_request refuses held-out loaded runs without the mass"
        ident.load_friction_choice = measure_load_friction_choice(
            model, ident, [r.with_drive_gains(scale) for r in held_out_loaded], known_payload_mass, frame,
            options=conditioning)
        for method, c in ident.load_friction_choice.methods.items():
            say(f"load-dependent friction for {method}: {c.reason}")
        if ident.model_error is not None:
            # After the load friction choice: each method is scored as robot.yaml will run it.
            ident.model_error.loaded = measure_loaded_model_error(
                model, ident, [r.with_drive_gains(scale) for r in held_out_loaded], known_payload_mass, frame,
                conditioning)
            say(ident.model_error.loaded.text())
        else:
            say("held-out loaded runs: not in the model error (robot.yaml measures none without unloaded held-out "
                "runs, --held-out-csv-ur/--held-out-bag)")
    ident.gain_check = gain_check
    ident.effort_unit = unit.value
    ident.effort_scale_std = spread_std
    if gain_fit is not None and scale_std is not None and spread_std is not None:
        # The gains' correlation with θ (θ was identified from efforts scaled by them): the payload fits count a gain
        # error once, through what θ absorbs of it and what it leaves (payload/gain_uncertainty.py).
        # The model-choice shift is one direction across the joints (the two fits' gains move together), a rank-one
        # term beside the fit's own correlations: the payloads take its effect on their load, not √n of it.
        shift = np.zeros(model.n) if gain_model is None else gain_model.choice_spread(model.joint_names)
        # Each joint's load friction its own direction (one μ_j per joint): a diagonal term.
        collinear_rel = np.zeros(model.n) if gain_model is None or gain_model.load_friction_spread is None \
            else gain_model.load_friction_spread
        # The check runs' spread beyond the calibration's σ: its own term per joint (their few runs cannot give the
        # correlations), so the relative covariance's diagonal is (robot.yaml's std / gain)² again.
        beyond = np.diag((spread_std ** 2 - scale_std ** 2) / scale ** 2)
        ident.gain_covariance = GainCovariance(
            relative_gain_covariance(gain_fit, fit_scale_std / scale * gain_fit.scale) + np.outer(shift, shift)
            + np.diag(collinear_rel ** 2) + beyond,
            theta_gain_sensitivity(ident, recording, model, use_commanded=use_commanded, cutoff_hz=cutoff_hz,
                                   decimate=decimate, delay=delay))
    ident.effort_scale_source = source
    ident.gain_model = gain_model
    ident.notes.extend(gain_notes)
    return ident


def _identify_friction(model: RobotModel, identify: Callable[[str], RobotIdentification], friction: str,
                       alpha_given: bool, held_out: list[Recording], friction_cv: list[Recording],
                       conditioning: PayloadOptions, frame: str,
                       say: Callable[[str], None]) -> tuple[RobotIdentification, FrictionChoice]:
    """The identification with the friction model `friction` names, or (auto) the one chosen on the held-out runs
    (friction_choice.py); every candidate's spurious payload mass on the `held_out` runs goes with its score."""
    if friction != "auto":
        return identify(friction), given_choice(friction)
    if alpha_given:  # an exponent is a nonlinear model's: given, not chosen
        return identify("nonlinear"), given_choice("nonlinear")
    runs = held_out + friction_cv
    if not runs:
        return identify(DEFAULT_FRICTION), unchosen_default(DEFAULT_FRICTION)
    fits = identify_candidates(identify)
    # Conditioned once: a held-out run's signals do not depend on the candidate (its tracking error is recorded
    # or not, the same for all).
    first = next(iter(fits.values()))
    sigs = [conditioned_signals(r, model.joint_names, **conditioning.given(SIGNAL_OPTIONS),
                                tracking_error=first.tracking_error) for r in runs]
    choice = choose_friction(fits, sigs, [r.source or f"held-out {i + 1}" for i, r in enumerate(runs)], model)
    if held_out:
        for cand in choice.candidates:
            if cand.kind != choice.chosen:  # the chosen one's are robot.yaml's model_error, measured below
                cand.spurious_mass = [float(m) for m in measure_model_error(model, fits[cand.kind], held_out, frame,
                                                                            conditioning).spurious[:, 0]]
    say("friction model: " + choice.note().text)
    return fits[choice.chosen], choice
