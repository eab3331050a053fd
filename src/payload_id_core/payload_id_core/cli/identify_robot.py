"""`payload-id identify-robot`: identify the unloaded robot (base parameters, rotor inertia, friction) -> robot.yaml.

Reads a rosbag2 bag (or a UR CSV), turns it into regressor inputs (commanded trajectory by default,
Xu 2024 §3.2; `--use-measured` for filtered, differentiated measurements), estimates the parameters
(OLS, WLS or the physically consistent SDP) and writes robot.yaml atomically: nothing is written
when anything fails. Drive gains: `--effort-scale` gives them; `--known-payload-mass` with a run
carrying that payload (`--loaded-bag`) identifies them (Gautier & Briot). The same known mass on runs of other
motions (`--held-out-loaded-bag`) chooses each payload method's load friction, with given or identified gains.
This module is the flags, the reading and the printing: every choice is robot_identification.identify_robot's,
which a library user calls with the same runs for the same robot.yaml. The entry point imports
this module only when the subcommand runs, so its imports are at module level.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from payload_id_core.cli.inputs import (
    add_recording_arguments,
    add_urdf_argument,
    given_effort_scale,
    load_optional_recording,
    load_recording,
)
from payload_id_core.cli.numbers import integer, number
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.notes import Note, NoteCode, notes_with
from payload_id_core.robot_identification import GAIN_MODEL_HOLDOUT_DEFAULT, check_request, identify_robot
from payload_id_core.signals.recording import Recording


def _floats(text: str, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        raise PayloadIdError(f"{what} '{text}' is not a comma-separated list of numbers", "e.g. 0,0,-9.81") from err
    if not values or not all(math.isfinite(v) for v in values):
        raise PayloadIdError(f"{what} '{text}' is empty or holds NaN or infinity", "give finite numbers")
    return values


def _add_repeatable_runs(parser, kind: str, csv_help: str) -> None:
    """--<kind>-csv-ur and --<kind>-bag, each repeatable: the runs of one kind, read by _held_out_recordings."""
    parser.add_argument(f"--{kind}-csv-ur", action="append", default=[], metavar="CSV", help=csv_help)
    parser.add_argument(f"--{kind}-bag", action="append", default=[], metavar="BAG",
                        help=f"rosbag2 directory of such a run (repeatable), as --{kind}-csv-ur")


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
    parser.add_argument("--gain-model", choices=["held-out", "calibration"],
                        default="held-out" if GAIN_MODEL_HOLDOUT_DEFAULT else "calibration",
                        help="how the friction model the drive gains are fitted with is chosen (robot.yaml "
                             "effort.gain_model): held-out adds one load-friction μ for all the gears as a candidate "
                             "and judges every candidate on how well it predicts held-out loaded runs of known mass "
                             "(the --gain-check runs, or the loaded run's halves); calibration judges on the "
                             "calibration pair's own serially correlated σ (default "
                             f"{'held-out' if GAIN_MODEL_HOLDOUT_DEFAULT else 'calibration'}; held-out is a "
                             "measurement aid: on the real UR10e it picks the shared μ and the held-out payloads "
                             "regress, docs/design.md)")
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
    _add_repeatable_runs(parser, "held-out",
                         "UR CSV of an unloaded run of another exciting motion (repeatable): the model's error "
                         "there, as the payload it would invent, becomes the payload fits' model-error σ "
                         "(robot.yaml model_error)")
    _add_repeatable_runs(parser, "held-out-loaded",
                         "UR CSV of a run of another motion carrying the --known-payload-mass payload "
                         "(repeatable): each payload method that needs no unloaded run (khalil-1, khalil-2, "
                         "direct-rls, difference-rls) is run on it with and without the load-dependent friction, "
                         "and the one nearer the known mass beyond the noise becomes its default (robot.yaml "
                         "load_friction_choice)")
    _add_repeatable_runs(parser, "drift",
                         "UR CSV of an unloaded run recorded on another occasion (another motion, another day; "
                         "repeatable): robot.yaml's model is fitted on it with only the constant friction offsets "
                         "free, and their spread between runs becomes difference-rls's prior on a payload run's "
                         "offset change (robot.yaml friction_offset_drift); without such runs the offsets stay "
                         "free")
    _add_repeatable_runs(parser, "gain-check",
                         "UR CSV of a loaded run of known mass recorded on another occasion (another motion or "
                         "day; repeatable; needs identified gains): robot.yaml's model is fitted on it with only "
                         "the drive gains (and the load's CoM and inertia) free, and where the gains spread "
                         "between runs further than the calibration's σ, their σ becomes that spread's Student-t "
                         "predictive width (robot.yaml effort.gain_check); without such runs nothing changes")
    parser.add_argument("--gain-check-mass", action="append", default=[], metavar="KG",
                        type=number(above=0, unit="kg"),
                        help="kg, the load the --gain-check runs carry: once for all, or once per run (the CSVs "
                             "first, then the bags, each in the order given); default --known-payload-mass")
    _add_repeatable_runs(parser, "friction-cv",
                         "UR CSV of an unloaded run of any motion (repeatable; e.g. one joint at a time, which "
                         "isolates each joint's friction): used only to choose the friction model (--friction "
                         "auto), with the --held-out runs")
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


def _delay(text: str):
    """--delay as 'estimate' or seconds (its range: robot_identification.check_request)."""
    if text == "estimate":
        return text
    try:
        return float(text)
    except ValueError as err:
        raise PayloadIdError(f"--delay '{text}' is neither 'estimate' nor seconds", "e.g. --delay 0.008") from err


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


def run(args) -> int:
    joints = None if args.joints is None else [j.strip() for j in args.joints.split(",") if j.strip()]
    gravity = None if args.gravity is None else _floats(args.gravity, "--gravity")
    if gravity is not None and len(gravity) != 3:
        raise PayloadIdError(f"--gravity needs 3 numbers, got {len(gravity)}", "e.g. --gravity 0,0,-9.81")
    model = RobotModel.from_urdf(args.urdf, joint_names=joints, gravity=gravity)
    delay = _delay(args.delay)
    alpha = None if args.alpha is None else _floats(args.alpha, "--alpha")
    loaded_given = bool(getattr(args, "loaded_bag", None) or getattr(args, "loaded_csv_ur", None))
    held_out_loaded_given = bool(args.held_out_loaded_csv_ur or args.held_out_loaded_bag)
    # The request checked before any run is read (identify_robot checks it again, for library callers).
    check_request(model, loaded_given=loaded_given, known_payload_mass=args.known_payload_mass,
                  held_out_loaded_given=held_out_loaded_given, alpha=alpha, delay=delay,
                  payload_frame=args.payload_frame, friction=args.friction,
                  gain_check_runs=len(args.gain_check_csv_ur) + len(args.gain_check_bag),
                  gain_check_mass=args.gain_check_mass)
    given = given_effort_scale(args, model.n)
    recording = _require_commanded(args, load_recording(args, model.joint_names))
    validation = _require_commanded(args, load_optional_recording(args, model.joint_names, prefix="validate-"))
    loaded = None
    if loaded_given:
        loaded = _require_commanded(args, load_recording(args, model.joint_names, prefix="loaded-"))
    held_out, friction_cv, held_out_loaded, drift, gain_checks = (
        [_require_commanded(args, r) for r in _held_out_recordings(args, model.joint_names, prefix)]
        for prefix in ("held_out", "friction_cv", "held_out_loaded", "drift", "gain_check"))
    ident = identify_robot(model, recording, loaded=loaded, known_payload_mass=args.known_payload_mass,
                           held_out=held_out, friction_cv=friction_cv, held_out_loaded=held_out_loaded, drift=drift,
                           gain_checks=gain_checks, gain_check_mass=args.gain_check_mass,
                           validation=validation, friction=args.friction,
                           gear_friction=args.gear_friction == "identify",
                           gain_model_holdout=args.gain_model == "held-out", estimator=args.estimator,
                           use_commanded=not args.use_measured, cutoff_hz=args.cutoff_hz, decimate=args.decimate,
                           delay=delay, alpha=alpha, effort_scale=given, payload_frame=args.payload_frame,
                           report=print)
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
    for code in (NoteCode.ROBOT_GAIN_UNDETERMINED, NoteCode.ROBOT_GAIN_LOAD_FRICTION_COLLINEAR):
        for note in notes_with(ident.notes, code):
            print(f"warning: {note.text}", file=sys.stderr)
    for note in notes_with(ident.notes, NoteCode.ROBOT_SCALE_IMPLAUSIBLE):
        # robot.yaml is still written (the scale check's factor in it): the payload step marks its estimates suspect
        print(f"warning: {note.text}", file=sys.stderr)
    print(f"wrote {args.out}")
    return 0
