"""`payload-id identify-payload`: the payload on a frame from a loaded run and the robot's identification.

    payload-id identify-payload --urdf U --robot robot.yaml --bag B [--unloaded-bag B0] --frame F
                                --method M --out payload.yaml
(DESIGN.md; the methods, what each needs and which flags it reads: payload/methods/registry.py, which
--method's choices and every flag's help read). The arguments are checked once, before any recording is read:
the frame (RobotModel.payload_frame), the method with the options its flags set and the robot it needs
(payload_request: a flag the method does not read is refused, naming the methods that read it), then
--effort-scale and the recordings in one walk (inputs.read_runs). --csv-ur / --unloaded-csv-ur read UR CSV
recordings instead of bags (the measured motion then serves as the commanded one, and payload.yaml's notes
say so). --bounding-box and --known-mass give what is known of the payload (payload/priors.py), checked here
(a zero or swapped extent, NaN, a mass <= 0, above the robot's rated payload or above what its URDF's joints can
hold at full reach: exit 2). Bad input raises
PayloadIdError (exit 2) before anything is written; payload.yaml is written atomically.
Quality (payload/finish.py judge_quality): a SUSPECT estimate is written with `converged: false` and
its reasons, the summary line says SUSPECT and each reason follows, exit 0 (the file is the user's to
inspect); a FAILED one likewise but exit 1, so a script chaining commands stops there.
"""

from __future__ import annotations

import argparse
import math
import sys

from payload_id_core.cli.inputs import add_recording_arguments, add_urdf_argument, read_runs
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft.identify import FtMode
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.mass_limit import known_mass_limit
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods import estimate_payload, on_same_trajectory, payload_request
from payload_id_core.payload.methods.registry import SPECS, Measurement, UnloadedRun, readers_of
from payload_id_core.payload.online.base import ConvergenceRule
from payload_id_core.payload.options import LoadFriction
from payload_id_core.payload.priors import PayloadPrior
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import SignalSource

# Notes printed on stderr besides payload.yaml: the estimate rests on measured (not commanded) motion,
# leaves entries undetermined, was projected onto physically consistent parameters, or its two runs
# were aligned on one trajectory clock.
STDERR_NOTES = frozenset({NoteCode.PAYLOAD_MEASURED_SIGNALS, NoteCode.PAYLOAD_NOT_IDENTIFIABLE,
                          NoteCode.PAYLOAD_UNDETERMINED,
                          NoteCode.PAYLOAD_PROJECTED, NoteCode.SIGNALS_MEASURED_AS_COMMANDED,
                          NoteCode.SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN, NoteCode.FT_PROJECTED,
                          NoteCode.SIGNALS_RUNS_ALIGNED, NoteCode.PAYLOAD_PRIOR,
                          NoteCode.PAYLOAD_PRIOR_CONTRADICTED, NoteCode.GAINS_GIVEN_NOT_USED})


# The flags that set a PayloadOptions field: argparse's name -> the option. Which methods read each is the
# registry's; a flag given to a method that does not read it is refused by payload_request, named by its flag.
FLAG_OPTIONS = {"signals": "source", "convergence": "convergence", "load_friction": "load_friction",
                "sensor_frame": "sensor_frame", "sensor_force_range": "force_range",
                "sensor_torque_range": "torque_range", "ft_mode": "mode"}
FLAG_NAMES = {option: "--" + flag.replace("_", "-") for flag, option in FLAG_OPTIONS.items()}
FLAG_NAMES["payload_prior"] = "--bounding-box/--known-mass"


def _read_by(option: str) -> str:
    return f"read by {', '.join(readers_of(option))}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    robot_free = ", ".join(spec.name for spec in SPECS if not spec.needs_robot)
    with_unloaded = ", ".join(f"{spec.name} ({spec.unloaded})" for spec in SPECS
                              if spec.unloaded is not UnloadedRun.NOT_USED)
    online = ", ".join(spec.name for spec in SPECS if spec.online)
    add_urdf_argument(parser)
    parser.add_argument("--robot", help="robot.yaml of the unloaded robot (payload-id identify-robot); "
                                        f"not needed by {robot_free}")
    add_recording_arguments(parser, what="the run with the payload")
    add_recording_arguments(parser, prefix="unloaded-", what=f"the run without payload: {with_unloaded}; khalil-1 "
                            "adds its model error on it to σ where robot.yaml measured one", required=False)
    parser.add_argument("--frame", help="payload frame (any URDF frame; default: child link of the last joint)")
    parser.add_argument("--method", default=PayloadMethod.DIFFERENCE_RLS.value, choices=[spec.name for spec in SPECS],
                        help=f"payload method (docs/design.md's method table); online: {online}")
    parser.add_argument("--signals", choices=[s.value for s in SignalSource],
                        help="regressor inputs (default: commanded when the bag holds the trajectory); "
                             + _read_by("source"))
    parser.add_argument("--convergence", choices=[r.value for r in ConvergenceRule],
                        help="convergence rule (default covariance: the estimate's own σ; xu: Xu 2024's 300 calm "
                             "samples); " + _read_by("convergence"))
    parser.add_argument("--load-friction", choices=[c.value for c in LoadFriction], default=LoadFriction.AUTO.value,
                        help="model Coulomb friction growing with the load torque (auto: the method's default; "
                             "use off when the drive gains were fitted without it, as they are collinear); "
                             + _read_by("load_friction"))
    parser.add_argument("--sensor-frame", help="the F/T sensor's frame; " + _read_by("sensor_frame"))
    parser.add_argument("--sensor-force-range", type=_range, metavar="N",
                        help="the sensor's force range (one value or Fx,Fy,Fz); readings at or beyond it "
                             "are dropped; " + _read_by("force_range"))
    parser.add_argument("--sensor-torque-range", type=_range, metavar="NM",
                        help="the sensor's torque range (one value or Tx,Ty,Tz); readings at or beyond it "
                             "are dropped; " + _read_by("torque_range"))
    parser.add_argument("--ft-mode", choices=[m.value for m in FtMode],
                        help="'static' (Duan 2022: mass, CoM, offsets, tilt from held poses) or 'dynamic' "
                             "(adds the inertia from every sample; default); " + _read_by("mode"))
    parser.add_argument("--bounding-box", metavar="X0,Y0,Z0,X1,Y1,Z1",
                        help="what you know of the payload's size: the axis-aligned box (m, payload frame; low corner "
                             "first) that holds all of its mass; the estimate is restricted to bodies inside it and "
                             "its σ says what the box determined (payload/priors.py); every method reads it. A "
                             "negative first corner needs the = form: --bounding-box=-0.1,-0.1,0,0.1,0.1,0.2")
    parser.add_argument("--known-mass", metavar="KG",
                        help="the payload's weighed mass (kg, at most the robot's rated payload); every method "
                             "reads it")
    parser.add_argument("--known-mass-std", metavar="KG",
                        help="the weighed mass's standard deviation (kg; default 0.5 %% of it)")
    parser.add_argument("--out", required=True, help="payload.yaml to write")


def flag_options(args: argparse.Namespace) -> dict:
    """The PayloadOptions the flags set (those given: a flag left out is the method's default)."""
    options = {option: getattr(args, flag) for flag, option in FLAG_OPTIONS.items()}
    options["load_friction"] = LoadFriction(args.load_friction).as_option()
    return {option: value for option, value in options.items() if value is not None and value != ""}


def _range(text: str):
    """'100' or '100,100,200': a positive scalar or one value per axis."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number or a comma-separated list of 3 numbers") from None
    if len(values) not in (1, 3) or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"'{text}': give one positive value or three (x,y,z)")
    return values[0] if len(values) == 1 else values


def run(args: argparse.Namespace) -> int:
    model = RobotModel.from_urdf(args.urdf)
    frame = model.payload_frame(args.frame)
    # The arm's holding capacity takes about a second to find: only for a known mass.
    prior = PayloadPrior.from_text(args.bounding_box, args.known_mass, args.known_mass_std,
                                   known_mass_limit(model) if args.known_mass is not None else None)
    robot = RobotIdentification.load(args.robot, model) if args.robot else None
    options = flag_options(args) | ({"payload_prior": prior} if prior is not None else {})
    request = payload_request(args.method, model, robot, frame, labels=FLAG_NAMES, **options)
    # ft reads the wrist sensor, not the joint efforts: no drive gains.
    runs = read_runs(args, model, robot, other_prefix="unloaded-",
                     uses_efforts=request.spec.measurement is not Measurement.WRIST_WRENCH)
    # Runs without a recorded command (UR CSV) start and stop at different times: put them on one clock.
    loaded, unloaded, aligned_options = on_same_trajectory(request.spec.method, runs.run, runs.other)
    estimate = estimate_payload(request.with_options(**aligned_options), loaded, unloaded)
    estimate.notes.extend(runs.gain_notes)
    atomic_write_yaml(args.out, estimate.to_dict())
    # summary(): what the motion left undetermined, or "no payload detected", is said instead of a number.
    after = "" if math.isnan(estimate.convergence_time) else f" after {estimate.convergence_time:.2f} s"
    print(f"{args.method} in {frame}: {estimate.summary()}; "
          f"{'converged' if estimate.converged else 'NOT converged'}{after}{quality_tag(estimate)} -> {args.out}")
    for reason in estimate.quality_reasons:
        print(f"  {estimate.quality.value.upper()}: {reason}")
    if estimate.prior_not_applied:      # said on stdout, not only in a note: the user gave it and it was not used
        print(f"  PRIOR: {estimate.prior_not_applied_text()}")
    for note in map(Note.from_any, estimate.notes):
        if note.code in STDERR_NOTES:
            print(f"  note: {note.text}", file=sys.stderr)
    return quality_exit_code(estimate)


def quality_tag(estimate: PayloadEstimate) -> str:
    """', SUSPECT' / ', FAILED' for the summary line (nothing when ok)."""
    return "" if estimate.quality is Quality.OK else f", {estimate.quality.value.upper()}"


def quality_exit_code(estimate: PayloadEstimate) -> int:
    """0 for ok and suspect (the file, marked not converged with its reasons, is the user's to inspect);
    1 for failed: the estimate must not be used, and a script chaining commands has to notice."""
    return 1 if estimate.quality is Quality.FAILED else 0
