"""`payload-id identify-payload`: the payload on a frame from a loaded run and the robot's identification.

    payload-id identify-payload --urdf U --robot robot.yaml --bag B [--unloaded-bag B0] --frame F
                                --method difference-rls|direct-rls|khalil-1..4|gaz-static|gaz-dtau|ft
                                --out payload.yaml
(DESIGN.md). --csv-ur / --unloaded-csv-ur read UR CSV recordings instead of bags (the measured
motion then serves as the commanded one, and payload.yaml's notes say so). Bad input raises
PayloadIdError (exit 2) before anything is written; payload.yaml is written atomically.
Quality (payload/finish.py judge_quality): a SUSPECT estimate is written with `converged: false` and
its reasons, the summary line says SUSPECT and each reason follows, exit 0 (the file is the user's to
inspect); a FAILED one likewise but exit 1, so a script chaining commands stops there.
"""

from __future__ import annotations

import argparse
import math
import sys

from payload_id_core.cli.inputs import (
    add_recording_arguments,
    apply_drive_gains,
    given_effort_scale,
    load_optional_recording,
    load_recording,
    resolve_cli_gains,
)
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.estimate import PayloadEstimate, Quality
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods import identify_payload, needs_robot_identification, on_same_trajectory
from payload_id_core.robot_id import RobotIdentification

# Notes printed on stderr besides payload.yaml: the estimate rests on measured (not commanded) motion,
# leaves entries undetermined, was projected onto physically consistent parameters, or its two runs
# were aligned on one trajectory clock.
STDERR_NOTES = frozenset({NoteCode.PAYLOAD_MEASURED_SIGNALS, NoteCode.PAYLOAD_NOT_IDENTIFIABLE,
                          NoteCode.PAYLOAD_UNDETERMINED,
                          NoteCode.PAYLOAD_PROJECTED, NoteCode.SIGNALS_MEASURED_AS_COMMANDED,
                          NoteCode.SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN, NoteCode.FT_PROJECTED,
                          NoteCode.SIGNALS_RUNS_ALIGNED})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--urdf", required=True, help="robot URDF (path or bundled name: ur10, ur10e, panda, ...)")
    parser.add_argument("--robot", help="robot.yaml of the unloaded robot (payload-id identify-robot); "
                                        "not needed by khalil-3 and ft")
    add_recording_arguments(parser, what="the run with the payload")
    add_recording_arguments(parser, prefix="unloaded-", what="the run without payload (khalil-3/4, gaz-*)",
                            required=False)
    parser.add_argument("--frame", help="payload frame (any URDF frame; default: child link of the last joint)")
    parser.add_argument("--method", default=PayloadMethod.DIFFERENCE_RLS.value,
                        choices=[m.value for m in PayloadMethod])
    parser.add_argument("--signals", choices=["commanded", "measured"],
                        help="regressor inputs (default: commanded when the bag holds the trajectory)")
    parser.add_argument("--convergence", choices=["covariance", "xu"], default="covariance",
                        help="online methods: convergence rule (own covariance, or Xu 2024's 300 calm samples)")
    parser.add_argument("--load-friction", choices=["auto", "on", "off"], default="auto",
                        help="model Coulomb friction growing with the load torque (auto: the method's default; "
                             "use off when the drive gains were fitted without it, as they are collinear)")
    parser.add_argument("--sensor-frame", help="ft: the F/T sensor's frame")
    parser.add_argument("--sensor-force-range", type=_range, metavar="N",
                        help="ft: the sensor's force range (one value or Fx,Fy,Fz); readings at or beyond it "
                             "are dropped")
    parser.add_argument("--sensor-torque-range", type=_range, metavar="NM",
                        help="ft: the sensor's torque range (one value or Tx,Ty,Tz); readings at or beyond it "
                             "are dropped")
    parser.add_argument("--ft-mode", choices=["static", "dynamic"],
                        help="ft: 'static' (Duan 2022: mass, CoM, offsets, tilt from held poses) or 'dynamic' "
                             "(adds the inertia from every sample; default)")
    parser.add_argument("--out", required=True, help="payload.yaml to write")


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
    frame = args.frame or model.default_payload_frame
    model.frame_id(frame)
    robot = None
    if args.robot:
        robot = RobotIdentification.load(args.robot, model)
    elif needs_robot_identification(args.method):
        raise PayloadIdError(f"--method {args.method} needs the unloaded robot's identification",
                             "pass --robot robot.yaml (payload-id identify-robot)")
    given_effort_scale(args, model.n)   # a malformed flag fails before any reading
    loaded = load_recording(args, model.joint_names)
    unloaded = load_optional_recording(args, model.joint_names, prefix="unloaded-")
    gain_notes: list[Note] = []
    if args.method != PayloadMethod.FT.value:   # ft reads the wrist sensor, not the joint efforts
        gains = resolve_cli_gains(args, robot, [loaded, unloaded], model.n)
        loaded = loaded.with_drive_gains(gains.scale)
        unloaded = apply_drive_gains(unloaded, gains)
        gain_notes = gains.notes
    # Runs without a recorded command (UR CSV) start and stop at different times: put them on one clock.
    loaded, unloaded, aligned_options = on_same_trajectory(args.method, loaded, unloaded)
    options = {"convergence": args.convergence, **aligned_options}
    if args.load_friction != "auto":
        options["load_friction"] = args.load_friction == "on"
    if args.signals:
        options["source"] = args.signals
    if args.sensor_frame:
        options["sensor_frame"] = args.sensor_frame
    ft_flags = {"force_range": args.sensor_force_range, "torque_range": args.sensor_torque_range, "mode": args.ft_mode}
    given = {k: v for k, v in ft_flags.items() if v is not None}
    if given and args.method != "ft":
        raise PayloadIdError(f"--sensor-force-range, --sensor-torque-range and --ft-mode apply to --method ft only, "
                             f"not {args.method}", "drop them, or pass --method ft")
    options.update(given)
    estimate = identify_payload(args.method, model, robot, loaded, frame, unloaded=unloaded, **options)
    estimate.notes.extend(gain_notes)
    atomic_write_yaml(args.out, estimate.to_dict())
    # summary(): what the motion left undetermined, or "no payload detected", is said instead of a number.
    after = "" if math.isnan(estimate.convergence_time) else f" after {estimate.convergence_time:.2f} s"
    print(f"{args.method} in {frame}: {estimate.summary()}; "
          f"{'converged' if estimate.converged else 'NOT converged'}{after}{quality_tag(estimate)} -> {args.out}")
    for reason in estimate.quality_reasons:
        print(f"  {estimate.quality.value.upper()}: {reason}")
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
