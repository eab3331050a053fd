"""`payload-id identify-robot`: identify the unloaded robot (base parameters, rotor inertia, friction) -> robot.yaml.

Reads a rosbag2 bag (or a UR CSV), turns it into regressor inputs (commanded trajectory by default,
Xu 2024 §3.2; `--use-measured` for filtered, differentiated measurements), estimates the parameters
(OLS, WLS or the physically consistent SDP) and writes robot.yaml atomically: nothing is written
when anything fails. Drive gains: `--effort-scale` gives them; `--known-payload-mass` with a run
carrying that payload (`--loaded-bag`) identifies them (Gautier & Briot). The same known mass on runs of other
motions (`--held-out-loaded-bag`) chooses each payload method's load friction, with given or identified gains.
The entry point imports
this module only when the subcommand runs, so its imports are at module level.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import numpy as np

from payload_id_core.cli.inputs import (
    add_recording_arguments,
    add_urdf_argument,
    checked_plausible,
    given_effort_scale,
    load_optional_recording,
    load_recording,
)
from payload_id_core.cli.numbers import integer, number
from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON, FrictionModel
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.notes import Note, NoteCode, notes_with
from payload_id_core.payload.held_out_error import (
    measure_gain_spread,
    measure_model_error,
    measure_offset_spread,
    refuse_fitted_runs,
    refuse_repeated_runs,
)
from payload_id_core.payload.load_friction_choice import measure_load_friction_choice
from payload_id_core.robot_id import (
    IDENTIFIED_GAINS_SOURCE,
    RobotIdentification,
    common_effort_unit,
    identify_robot,
    validate_robot,
)
from payload_id_core.robot_id.choice_record import (
    GAIN_LINEAR,
    GAIN_MODEL_CRITERION,
    GAIN_SHAPED_LOAD,
    GainModelChoice,
    choose_gain_model,
    model_choice_weight,
)
from payload_id_core.robot_id.drive_gains import (
    GainFit,
    gain_candidate,
    identify_drive_gains,
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
from payload_id_core.robot_id.gear_friction import GearFriction
from payload_id_core.robot_id.result import GainCovariance
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.signals.recording import Recording


def _floats(text: str, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        raise PayloadIdError(f"{what} '{text}' is not a comma-separated list of numbers", "e.g. 0,0,-9.81") from err
    if not values or not all(math.isfinite(v) for v in values):
        raise PayloadIdError(f"{what} '{text}' is empty or holds NaN or infinity", "give finite numbers")
    return values


# --friction auto with no held-out run to choose on: the model of Xu 2024 eq. 2, kept and recorded as not chosen.
DEFAULT_FRICTION = "nonlinear"
# The nonlinear friction exponent's range: the one the identification searches (dynamics/friction.py).
ALPHA_RANGE = (0.1, 3.0)
# A command-to-motion delay is a controller's lag: not negative (the arm cannot move before the command)
# and well under a second (more is a clock offset between the recorded topics, not a lag).
MAX_DELAY_S = 1.0


def add_arguments(parser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--joints", default=None, help="comma-separated actuated joints (default: the URDF's)")
    add_recording_arguments(parser, what="the unloaded robot's excitation run")
    parser.add_argument("--friction", choices=["auto", "none", "linear", "nonlinear", "stribeck", "temperature"],
                        default="auto",
                        help="friction model; auto (default): linear, nonlinear (Xu 2024 eq. 2) and Stribeck are each "
                             "identified and the one that predicts the held-out runs' torques best, beyond their "
                             "noise, is kept (the simplest when they cannot tell them apart; robot.yaml "
                             "friction_choice); with no held-out run, nonlinear, recorded as not chosen")
    parser.add_argument("--gear-friction", choices=["identify", "none"], default="none",
                        help="Coulomb friction that grows with the torque each drive transmits, μ_j|τ_j|: identify it "
                             "where the run determines it, or leave it out of the model (default: on the real UR10e "
                             "it fits the torques better but moves the payload masses away from the truth)")
    parser.add_argument("--estimator", choices=["ols", "wls", "feasible"], default="wls",
                        help="ols, wls (per-joint noise weights, default) or feasible (physically consistent SDP)")
    parser.add_argument("--use-measured", action="store_true",
                        help="use filtered measured positions and their derivatives instead of the commanded "
                             "trajectory")
    parser.add_argument("--cutoff-hz", type=number(above=0, unit="Hz"), default=None,
                        help="low-pass cutoff (Hz) for torques / positions")
    parser.add_argument("--decimate", type=integer(at_least=1, at_most=1000), default=1,
                        help="keep one sample in N after anti-alias filtering")
    parser.add_argument("--delay", default="estimate",
                        help="command-to-motion delay in seconds, or 'estimate' (default)")
    parser.add_argument("--gravity", default=None, help="gravity in the base frame, gx,gy,gz (default 0,0,-9.81)")
    parser.add_argument("--alpha", default=None,
                        help="fix the nonlinear friction exponent(s) instead of identifying them "
                             "(one or one per joint)")
    add_recording_arguments(parser, prefix="validate-", what="a second run for cross-validation", required=False)
    add_recording_arguments(parser, prefix="loaded-", what="a run with a payload of known mass (drive gains)",
                            required=False)
    parser.add_argument("--held-out-csv-ur", action="append", default=[], metavar="CSV",
                        help="UR CSV of an unloaded run of another exciting motion (repeatable): the model's error "
                             "there, as the payload it would invent, becomes the payload fits' model-error σ "
                             "(robot.yaml model_error)")
    parser.add_argument("--held-out-bag", action="append", default=[], metavar="BAG",
                        help="rosbag2 directory of such a run (repeatable), as --held-out-csv-ur")
    parser.add_argument("--held-out-loaded-csv-ur", action="append", default=[], metavar="CSV",
                        help="UR CSV of a run of another motion carrying the --known-payload-mass payload "
                             "(repeatable): each payload method that needs no unloaded run (khalil-1, khalil-2, "
                             "direct-rls, difference-rls) is run on it with and without the load-dependent friction, "
                             "and the one nearer the known mass beyond the noise becomes its default (robot.yaml "
                             "load_friction_choice)")
    parser.add_argument("--held-out-loaded-bag", action="append", default=[], metavar="BAG",
                        help="rosbag2 directory of such a run (repeatable), as --held-out-loaded-csv-ur")
    parser.add_argument("--drift-csv-ur", action="append", default=[], metavar="CSV",
                        help="UR CSV of an unloaded run recorded on another occasion (another motion, another day; "
                             "repeatable): robot.yaml's model is fitted on it with only the constant friction offsets "
                             "free, and their spread between runs becomes difference-rls's prior on a payload run's "
                             "offset change (robot.yaml friction_offset_drift); without such runs the offsets stay "
                             "free")
    parser.add_argument("--drift-bag", action="append", default=[], metavar="BAG",
                        help="rosbag2 directory of such a run (repeatable), as --drift-csv-ur")
    parser.add_argument("--gain-check-csv-ur", action="append", default=[], metavar="CSV",
                        help="UR CSV of a loaded run of known mass recorded on another occasion (another motion or "
                             "day; repeatable; needs identified gains): robot.yaml's model is fitted on it with only "
                             "the drive gains (and the load's CoM and inertia) free, and where the gains spread "
                             "between runs further than the calibration's σ, their σ becomes that spread's Student-t "
                             "predictive width (robot.yaml effort.gain_check); without such runs nothing changes")
    parser.add_argument("--gain-check-bag", action="append", default=[], metavar="BAG",
                        help="rosbag2 directory of such a run (repeatable), as --gain-check-csv-ur")
    parser.add_argument("--gain-check-mass", action="append", default=[], metavar="KG",
                        type=number(above=0, unit="kg"),
                        help="kg, the load the --gain-check runs carry: once for all, or once per run (the CSVs "
                             "first, then the bags, each in the order given); default --known-payload-mass")
    parser.add_argument("--friction-cv-csv-ur", action="append", default=[], metavar="CSV",
                        help="UR CSV of an unloaded run of any motion (repeatable; e.g. one joint at a time, which "
                             "isolates each joint's friction): used only to choose the friction model (--friction "
                             "auto), with the --held-out runs")
    parser.add_argument("--friction-cv-bag", action="append", default=[], metavar="BAG",
                        help="rosbag2 directory of such a run (repeatable), as --friction-cv-csv-ur")
    parser.add_argument("--known-payload-mass", type=number(above=0, unit="kg"), default=None,
                        help="kg, mass of the payload in the --loaded-bag run, which identifies the drive gains, "
                             "and in the --held-out-loaded runs; with given gains (--effort-scale) the held-out "
                             "loaded runs alone need it")
    parser.add_argument("--payload-frame", default=None,
                        help="frame the known payload is fixed to (default: child link of the last joint)")
    parser.add_argument("--out", required=True, help="robot.yaml to write")


def _held_out_recordings(args: argparse.Namespace, joint_names: list[str], prefix: str = "held_out") -> list[Recording]:
    """--held-out-csv-ur / --held-out-bag (or --friction-cv-...), in that order, with their raw efforts."""
    runs = [read_ur_csv(p, joint_names=joint_names) for p in getattr(args, f"{prefix}_csv_ur")]
    return runs + [read_bag(p, joint_topic=args.joint_states_topic, trajectory_topic=args.trajectory_topic,
                            wrench_topic=args.wrench_topic, joint_names=joint_names)
                   for p in getattr(args, f"{prefix}_bag")]


def _gain_check_masses(args: argparse.Namespace, loaded_given: bool) -> list[float]:
    """The known mass of each --gain-check run (one --gain-check-mass for all, one per run, or the
    --known-payload-mass), refused before any reading when they do not pair up or the gains are not identified."""
    count = len(args.gain_check_csv_ur) + len(args.gain_check_bag)
    masses = list(args.gain_check_mass)
    if not count:
        if masses:
            raise PayloadIdError("--gain-check-mass without a --gain-check run",
                                 "give the loaded runs it belongs to (--gain-check-csv-ur/--gain-check-bag)")
        return []
    if not loaded_given:
        raise PayloadIdError("--gain-check runs check identified drive gains, and none are identified here",
                             "identify them with a known mass (--loaded-csv-ur/--loaded-bag LOADED "
                             "--known-payload-mass KG), then add the --gain-check runs")
    if not masses:
        masses = [args.known_payload_mass]
    if len(masses) == 1:
        masses = masses * count
    if len(masses) != count:
        raise PayloadIdError(f"{len(masses)} --gain-check-mass values for {count} --gain-check runs",
                             "give one mass for all the runs, or one per run (the CSVs first, then the bags)")
    return [float(m) for m in masses]


def _delay(text: str):
    if text == "estimate":
        return text
    try:
        value = float(text)
    except ValueError as err:
        raise PayloadIdError(f"--delay '{text}' is neither 'estimate' nor seconds", "e.g. --delay 0.008") from err
    if not 0.0 <= value <= MAX_DELAY_S:
        raise PayloadIdError(f"--delay {text} s is outside [0, {MAX_DELAY_S:g}] s: the command-to-motion delay is "
                             "a controller's lag, never negative and well under a second",
                             "give the lag in seconds (e.g. --delay 0.008) or let it be estimated (--delay estimate)")
    return value


def _require_commanded(args, recording):
    """Commanded signals (the default) need the trajectory topic: name it when the bag lacks it."""
    if recording is not None and not args.use_measured and not recording.commanded:
        raise PayloadIdError(f"{recording.source}: no JointTrajectory messages on {args.trajectory_topic}",
                             "pass the controller's topic with --trajectory-topic, or use --use-measured")
    return recording


# Codes of the signals layer's notes (NoteCode.SIGNALS_MEASURED_AS_COMMANDED, .SIGNALS_TORQUES_FILTERED),
# compared by value so this module does not depend on when those members are added.
_MEASURED_AS_COMMANDED = "signals.measured_as_commanded"
_TORQUES_FILTERED = "signals.torques_filtered"


def _notes_to_print(notes: Sequence[Note | str], cutoff_hz: float | None) -> list[Note]:
    """The notes a user must see: the measured motion stood in for the command, and (no --cutoff-hz
    given) the torques were filtered alike because of it."""
    shown = {_MEASURED_AS_COMMANDED}
    if cutoff_hz is None:  # then the filter only ran because a smoothed stand-in replaced the command
        shown.add(_TORQUES_FILTERED)
    return [n for n in map(Note.from_any, notes) if n.code.value in shown]


def _identify_friction(args: argparse.Namespace, model: RobotModel, identify, held_out: list[Recording],
                       friction_cv: list[Recording], delay, frame: str) -> tuple[RobotIdentification, FrictionChoice]:
    """The identification with the friction model --friction names, or (auto) the one chosen on the held-out runs
    (friction_choice.py); every candidate's spurious payload mass on the --held-out runs goes with its score."""
    if args.friction != "auto":
        return identify(args.friction), given_choice(args.friction)
    if args.alpha is not None:  # an exponent is a nonlinear model's: given, not chosen
        return identify("nonlinear"), given_choice("nonlinear")
    runs = held_out + friction_cv
    if not runs:
        return identify(DEFAULT_FRICTION), unchosen_default(DEFAULT_FRICTION)
    fits = identify_candidates(identify)
    # Conditioned once: a held-out run's signals do not depend on the candidate (its tracking error is recorded
    # or not, the same for all).
    first = next(iter(fits.values()))
    sigs = [conditioned_signals(r, model.joint_names, source="measured" if args.use_measured else "commanded",
                                cutoff_hz=args.cutoff_hz, delay=delay, tracking_error=first.tracking_error)
            for r in runs]
    choice = choose_friction(fits, sigs, [r.source or f"held-out {i + 1}" for i, r in enumerate(runs)], model)
    if held_out:
        for cand in choice.candidates:
            if cand.kind != choice.chosen:  # the chosen one's are robot.yaml's model_error, measured below
                cand.spurious_mass = [float(m) for m in
                                      measure_model_error(model, fits[cand.kind], held_out, frame).spurious[:, 0]]
    print("friction model: " + choice.note().text)
    return fits[choice.chosen], choice


def run(args) -> int:
    joints = None if args.joints is None else [j.strip() for j in args.joints.split(",") if j.strip()]
    gravity = None if args.gravity is None else _floats(args.gravity, "--gravity")
    if gravity is not None and len(gravity) != 3:
        raise PayloadIdError(f"--gravity needs 3 numbers, got {len(gravity)}", "e.g. --gravity 0,0,-9.81")
    model = RobotModel.from_urdf(args.urdf, joint_names=joints, gravity=gravity)
    delay = _delay(args.delay)
    alpha = None if args.alpha is None else _floats(args.alpha, "--alpha")
    if alpha is not None and len(alpha) not in (1, model.n):
        raise PayloadIdError(f"--alpha has {len(alpha)} values for {model.n} joints", "give one, or one per joint")
    if alpha is not None and not all(ALPHA_RANGE[0] <= a <= ALPHA_RANGE[1] for a in alpha):
        raise PayloadIdError(f"--alpha {args.alpha} is outside [{ALPHA_RANGE[0]:g}, {ALPHA_RANGE[1]:g}], the range "
                             "of the nonlinear friction exponent", "e.g. --alpha 0.6, or leave it out to identify it")
    loaded_given = bool(getattr(args, "loaded_bag", None) or getattr(args, "loaded_csv_ur", None))
    held_out_loaded_given = bool(args.held_out_loaded_csv_ur or args.held_out_loaded_bag)
    # The known mass is the calibration run's (the drive gains) and the held-out loaded runs' (the load-friction
    # choice): a cell with given gains still chooses the load friction on a run of known mass.
    if loaded_given and args.known_payload_mass is None:
        raise PayloadIdError("drive-gain identification needs both --known-payload-mass and --loaded-bag",
                             "give both, or neither")
    if args.known_payload_mass is not None and not (loaded_given or held_out_loaded_given):
        raise PayloadIdError("--known-payload-mass without a run carrying that payload",
                             "give its run: --loaded-bag/--loaded-csv-ur (identifies the drive gains) or "
                             "--held-out-loaded-bag/--held-out-loaded-csv-ur (chooses the load friction)")
    if args.known_payload_mass is not None and not args.known_payload_mass > 0:
        raise PayloadIdError(f"--known-payload-mass {args.known_payload_mass} is not positive", "give the mass in kg")
    gain_check_masses = _gain_check_masses(args, loaded_given)
    frame = model.payload_frame(args.payload_frame)  # an unknown frame fails before any reading

    given = given_effort_scale(args, model.n)
    recording = _require_commanded(args, load_recording(args, model.joint_names))
    validation = _require_commanded(args, load_optional_recording(args, model.joint_names, prefix="validate-"))
    loaded = None
    if loaded_given:
        loaded = _require_commanded(args, load_recording(args, model.joint_names, prefix="loaded-"))
    held_out = [_require_commanded(args, r) for r in _held_out_recordings(args, model.joint_names)]
    friction_cv = [_require_commanded(args, r) for r in _held_out_recordings(args, model.joint_names, "friction_cv")]
    held_out_loaded = [_require_commanded(args, r)
                       for r in _held_out_recordings(args, model.joint_names, "held_out_loaded")]
    if held_out_loaded and args.known_payload_mass is None:
        raise PayloadIdError("--held-out-loaded-csv-ur/--held-out-loaded-bag need the payload's known mass",
                             "give --known-payload-mass (the mass those runs carry)")
    drift = [_require_commanded(args, r) for r in _held_out_recordings(args, model.joint_names, "drift")]
    gain_checks = [_require_commanded(args, r) for r in _held_out_recordings(args, model.joint_names, "gain_check")]
    refuse_fitted_runs(held_out + friction_cv + held_out_loaded + drift + gain_checks,
                       [r for r in (recording, loaded) if r is not None])  # the gains are fitted on both
    refuse_repeated_runs(drift, "--drift-csv-ur/--drift-bag")
    refuse_repeated_runs(gain_checks, "--gain-check-csv-ur/--gain-check-bag")
    runs = [r for r in (recording, validation, loaded, *held_out, *friction_cv, *held_out_loaded, *drift,
                        *gain_checks) if r is not None]
    unit = common_effort_unit([(r.joints.effort_unit, r.source) for r in runs])
    scale = np.ones(model.n) if given is None else given
    checked_plausible(model, *(r.with_drive_gains(scale) for r in runs))
    scale_std = None
    gain_fit: GainFit | None = None
    gain_notes: list[Note] = []
    gain_model: GainModelChoice | None = None
    source = "none" if given is None else "given"
    alpha_arg = None if alpha is None else (alpha[0] if len(alpha) == 1 else alpha)
    gear: bool | GearFriction = args.gear_friction == "identify"
    if loaded is not None:
        # Identified on top of the given gains (if any): the identified factor corrects them.
        def gains(geared: RobotIdentification | None = None, friction: FrictionModel | None = None,
                  load_friction: np.ndarray | None = None, sign_epsilon: float | None = None):
            """The drive gains, with the gear friction of `geared` taken off both runs' efforts when given, with
            `friction`'s shapes (default linear) and the load-dependent friction on the `load_friction` joints."""
            gear_mu = None if geared is None or geared.gear is None else geared.gear.mu
            eps = sign_epsilon if sign_epsilon is not None else \
                DEFAULT_SIGN_EPSILON if geared is None else geared.friction.sign_epsilon
            return identify_drive_gains(
                model, recording.with_drive_gains(scale), loaded.with_drive_gains(scale), args.known_payload_mass,
                frame, friction=friction or ("none" if args.friction == "none" else "linear"),
                use_commanded=not args.use_measured, delay=delay, gear_mu=gear_mu, sign_epsilon=eps,
                load_friction=load_friction)
        fit = gains()
        geared: RobotIdentification | None = None
        if gear is True:
            # The gear friction needs torques: one θ shared by all joints cannot fit efforts in each drive's own
            # unit, and μ would take the mismatch (elbow μ 0.097 for a true 0.02 on the cell's currents). So μ
            # on the torques of these gains, then the gains again without the gear friction they absorbed.
            first = identify_robot(model, recording.with_drive_gains(scale * fit.scale),
                                   friction="nonlinear" if args.friction == "auto" else args.friction,
                                   use_commanded=not args.use_measured, cutoff_hz=args.cutoff_hz,
                                   decimate=args.decimate, delay=delay, alpha=alpha_arg, gear_friction=True)
            assert first.gear is not None, "gear_friction=True identifies it"
            gear, geared = first.gear, first
            fit = gains(first)
        factor, factor_std = fit.scale, fit.std
        fit_std = factor_std
        if args.friction != "none":
            # The gains are fixed by the load's torque only, so what the friction model misses where the load changes
            # the torque goes into them. Second candidate: the friction's shapes identified on the unloaded run (they
            # do not depend on the gains) with a load-dependent Coulomb level on the joints the load determines;
            # chosen by choice_record.GAIN_MODEL_CRITERION. Not with the gear friction, the same law already taken off.
            shaped = identify_robot(model, recording.with_drive_gains(scale * fit.scale), friction="nonlinear",
                                    use_commanded=not args.use_measured, cutoff_hz=args.cutoff_hz,
                                    decimate=args.decimate, delay=delay, alpha=alpha_arg)
            determined = ~weakly_determined(fit)
            fits = {GAIN_LINEAR: fit}
            if geared is None and determined.any():
                fits[GAIN_SHAPED_LOAD] = gains(None, shaped.friction, determined, shaped.friction.sign_epsilon)
            candidates = [gain_candidate(kind, f, determined) for kind, f in fits.items()]
            chosen = choose_gain_model(candidates)
            gain_model = GainModelChoice(chosen, GAIN_MODEL_CRITERION,
                                         [model.joint_names[j] for j in np.flatnonzero(determined)], candidates,
                                         model_choice_weight(candidates, chosen))
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
            factor, (fit_std, gain_note) = fit.scale, with_model_error(fit, other, model.joint_names, std,
                                                                       fits[GAIN_LINEAR])
            # On the joints the known mass determines, the friction model the gains were fitted with is itself
            # uncertain: the other candidate's distance with its weight joins their σ (GAIN_CHOICE_SPREAD). Each fit's
            # own σ alone left wrist 1 −4.75 % at 8.7σ (linear kept, ur10 100 Hz) and panda_joint6 +1.06 % at 4.5σ
            # (load friction chosen); docs/design.md, "Conventions".
            choice_shift = gain_model.choice_spread(model.joint_names) * fit.scale
            factor_std = np.hypot(fit_std, choice_shift)
            print(gain_model.text())
            if gain_note is not None:
                gain_notes.append(gain_note)
        gain_fit, scale, scale_std, fit_scale_std = fit, scale * factor, scale * factor_std, scale * fit_std
        source = (f"{IDENTIFIED_GAINS_SOURCE}{loaded.source} with a known {args.known_payload_mass:g} kg payload"
                  + ("" if given is None else " (correcting --effort-scale)"))
        print("drive gains: " + ", ".join(f"{j} {k:.5g} ± {s:.2g}" for j, k, s in
                                          zip(model.joint_names, scale, scale_std)))
        if fit.serial_std is not None:
            # Both of the fit's σ (the textbook one shrinks with the sampling rate, the serially correlated one not);
            # which one robot.yaml carries: docs/design.md, "Conventions".
            print("drive gains' std, residuals independent / serially correlated (Newey–West): "
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
        return identify_robot(model, recording, friction=kind, estimator=args.estimator,
                              use_commanded=not args.use_measured, effort_scale=scale, cutoff_hz=args.cutoff_hz,
                              decimate=args.decimate, delay=delay, alpha=alpha_arg, gear_friction=gear)

    held_out = [r.with_drive_gains(scale) for r in held_out]
    ident, choice = _identify_friction(args, model, identify, held_out,
                                       [r.with_drive_gains(scale) for r in friction_cv], delay, frame)
    if validation is not None:
        ident.validation_rmse = validate_robot(ident, validation, model, cutoff_hz=args.cutoff_hz, delay=delay)
    if held_out:
        ident.model_error = measure_model_error(model, ident, held_out, frame)
        conv = ident.model_error.difference_rls
        if conv is not None:
            print(f"difference-rls moments conversion: {conv.chosen} (held-out first moments with and without C_a "
                  f"differ at chi2 {conv.chi2:.3g}, limit {conv.chi2_limit():.3g}; spurious mean square "
                  + ", ".join(f"{k} {conv.mean_square(k):.3g}" for k in conv.spurious) + " (kg·m)²)")
        for cand in choice.candidates:
            if cand.kind == choice.chosen:
                cand.spurious_mass = [float(m) for m in ident.model_error.spurious[:, 0]]
    ident.friction_choice = choice
    ident.notes.append(choice.note())
    if drift:
        ident.offset_drift = measure_offset_spread(model, ident, [r.with_drive_gains(scale) for r in drift],
                                                   frame)
        drift_record = ident.offset_drift
        print(f"friction offsets' drift over {len(drift)} run(s), per joint spread (resolution) -> prior std [N·m]: "
              + ", ".join(f"{j} {s:.3g} ({r:.2g}) -> {p:.3g}" for j, s, r, p in
                          zip(model.joint_names, drift_record.spread, drift_record.resolution, drift_record.prior_std)))
    spread_std = scale_std
    if gain_checks:
        assert scale_std is not None, "gain checks need identified gains (_gain_check_masses)"
        ident.gain_check = measure_gain_spread(model, ident, [r.with_drive_gains(scale) for r in gain_checks],
                                               gain_check_masses, scale_std, frame)
        spread_std = ident.gain_check.widened_std()
        print(ident.gain_check.text())
    if held_out_loaded:
        ident.load_friction_choice = measure_load_friction_choice(
            model, ident, [r.with_drive_gains(scale) for r in held_out_loaded], args.known_payload_mass, frame)
        for method, c in ident.load_friction_choice.methods.items():
            print(f"load-dependent friction for {method}: {c.reason}")
    ident.effort_unit = unit.value
    ident.effort_scale_std = spread_std
    if gain_fit is not None and scale_std is not None and spread_std is not None:
        # The gains' correlation with θ (θ was identified from efforts scaled by them): the payload fits count a gain
        # error once, through what θ absorbs of it and what it leaves (payload/gain_uncertainty.py).
        # The model-choice shift is one direction across the joints (the two fits' gains move together), a rank-one
        # term beside the fit's own correlations: the payloads take its effect on their load, not √n of it.
        shift = np.zeros(model.n) if gain_model is None else gain_model.choice_spread(model.joint_names)
        # The check runs' spread beyond the calibration's σ: its own term per joint (their few runs cannot give the
        # correlations), so the relative covariance's diagonal is (robot.yaml's std / gain)² again.
        beyond = np.diag((spread_std ** 2 - scale_std ** 2) / scale ** 2)
        ident.gain_covariance = GainCovariance(
            relative_gain_covariance(gain_fit, fit_scale_std / scale * gain_fit.scale) + np.outer(shift, shift)
            + beyond,
            theta_gain_sensitivity(ident, recording, model, use_commanded=not args.use_measured,
                                   cutoff_hz=args.cutoff_hz, decimate=args.decimate, delay=delay))
    ident.effort_scale_source = source
    ident.gain_model = gain_model
    ident.notes.extend(gain_notes)
    ident.save(args.out)

    print(f"{model.urdf_path.name}: {ident.b} base parameters, {ident.rotor.free.size} rotor inertias, "
          f"{ident.friction.n_params} friction parameters ({ident.friction.kind}), estimator {ident.estimator}, "
          f"condition number {ident.condition_number:.3g}, physically consistent: {ident.physically_consistent}")
    print("torque RMSE [N·m]: " + ", ".join(f"{j} {r:.4g}" for j, r in zip(model.joint_names, ident.rmse)))
    if ident.validation_rmse is not None:
        print("validation RMSE [N·m]: " + ", ".join(f"{j} {r:.4g}" for j, r in
                                                     zip(model.joint_names, ident.validation_rmse)))
    for note in _notes_to_print(ident.notes, args.cutoff_hz):
        print(f"note: {note.text}")
    for note in gain_notes:
        print(f"warning: {note.text}", file=sys.stderr)
    for note in notes_with(ident.notes, NoteCode.ROBOT_SCALE_IMPLAUSIBLE):
        # robot.yaml is still written (the scale check's factor in it): the payload step marks its estimates suspect
        print(f"warning: {note.text}", file=sys.stderr)
    print(f"wrote {args.out}")
    return 0
