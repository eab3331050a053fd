"""Command-line options shared by the subcommands: `--urdf` (every one), and the recording options of those
that read a recording (rosbag2 bag or UR CSV).

One place decides how `--bag`, `--csv-ur`, the topic overrides and `--effort-scale` become a
Recording, so identify-robot, identify-payload and report accept the same inputs. Recordings are read
with their raw efforts; the drive gains are decided afterwards (robot_id.resolve_drive_gains: robot.yaml's
by default, `--effort-scale` checked against them) and applied. `read_runs` is the one walk a command that
applies the gains makes: --effort-scale parsed and checked once before any reading, the runs read, the gains
resolved once and applied.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.model import RobotModel, known_robots
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.notes import Note
from payload_id_core.robot_id import DriveGains, RobotIdentification, common_effort_unit, resolve_drive_gains
from payload_id_core.signals.effort import check_drive_gains
from payload_id_core.signals.plausibility import check_plausible
from payload_id_core.signals.recording import Recording


def parse_effort_scale(text: str | None):
    """'k' or 'k1,k2,...' -> float or list of floats (None when not given)."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise PayloadIdError(f"--effort-scale '{text}' is not a comma-separated list of numbers",
                             "give one gain, or one per joint: --effort-scale 10.0,10.7,8.5,9.0,9.5,10.1") from err
    if not values:
        raise PayloadIdError("--effort-scale is empty", "give one gain, or one per joint")
    return values[0] if len(values) == 1 else values


def add_urdf_argument(parser: argparse.ArgumentParser) -> None:
    """`--urdf`, its help naming every bundled robot (one list for every subcommand: known_robots)."""
    parser.add_argument("--urdf", required=True,
                        help=f"robot URDF: a path, or a bundled robot ({', '.join(known_robots())})")


def add_recording_arguments(parser: argparse.ArgumentParser, prefix: str = "", what: str = "the run",
                            required: bool = True) -> None:
    """--{prefix}bag / --{prefix}csv-ur (one of them), topic overrides only once (prefix '')."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument(f"--{prefix}bag", metavar="BAG", help=f"rosbag2 directory of {what}")
    group.add_argument(f"--{prefix}csv-ur", metavar="CSV",
                       help=f"UR CSV recording of {what} (31 columns, or 25 for the collision recordings; measured "
                            "motion serves as commanded)")
    if not prefix:
        parser.add_argument("--effort-scale", metavar="K[,K...]",
                            help="drive gains: torque = effort × gain (one value or one per joint; "
                                 "UR reports currents)")
        parser.add_argument("--joint-states-topic", default="/joint_states")
        parser.add_argument("--trajectory-topic", default="/joint_trajectory_controller/joint_trajectory")
        parser.add_argument("--wrench-topic", default="/ft_sensor/wrench")


def given_effort_scale(args: argparse.Namespace, n: int) -> np.ndarray | None:
    """--effort-scale as (n,) positive finite gains, None when not given (wrong count, zero, negative, NaN: refused)."""
    values = parse_effort_scale(getattr(args, "effort_scale", None))
    return None if values is None else check_drive_gains(values, n, "--effort-scale")


def resolve_cli_gains(args: argparse.Namespace, robot: RobotIdentification | None,
                      recordings: list[Recording | None], n: int, given: np.ndarray | None) -> DriveGains:
    """The drive gains for these recordings (robot_id.resolve_drive_gains): robot.yaml's by default,
    `given` (--effort-scale, checked: given_effort_scale) when robot.yaml has none, a conflict or currents
    without gains refused."""
    present = [r for r in recordings if r is not None]
    unit = common_effort_unit([(r.joints.effort_unit, r.source) for r in present])
    return resolve_drive_gains(unit, robot, given,
                               n, recording_source=present[0].source if present else "the recording",
                               robot_source=getattr(args, "robot", None) or "robot.yaml")


def apply_drive_gains(recording: Recording | None, gains: DriveGains) -> Recording | None:
    return None if recording is None else recording.with_drive_gains(gains.scale)


@dataclass
class Runs:
    """The recordings a command reads, with the drive gains applied when it uses the efforts."""

    run: Recording                      # --bag / --csv-ur
    other: Recording | None = None      # --<prefix>bag / --<prefix>csv-ur, when given
    gain_notes: list[Note] = field(default_factory=list)   # how the gains were chosen (robot_id.DriveGains)


def read_runs(args: argparse.Namespace, model: RobotModel, robot: RobotIdentification | None, *,
              other_prefix: str | None = None, uses_efforts: bool = True) -> Runs:
    """The one walk of a command's recording arguments: --effort-scale parsed and checked (count, sign) once
    before any reading, the run and the optional `other_prefix` run read with raw efforts, then the drive gains
    resolved once for both and applied. `uses_efforts` False (ft reads the wrist sensor): the runs as read."""
    given = given_effort_scale(args, model.n)
    run = load_recording(args, model.joint_names)
    other = load_optional_recording(args, model.joint_names, other_prefix) if other_prefix else None
    if not uses_efforts:
        checked_plausible(model, run, other)
        return Runs(run, other)
    gains = resolve_cli_gains(args, robot, [run, other], model.n, given)
    run, other = run.with_drive_gains(gains.scale), apply_drive_gains(other, gains)
    checked_plausible(model, run, other)
    return Runs(run, other, list(gains.notes))


def checked_plausible(model: RobotModel, *recordings: Recording | None) -> None:
    """Refuse any of `recordings` (torques with the gains in use) that holds a sample no robot can produce
    (signals.plausibility: beyond the URDF's limits by a wide margin)."""
    limits = model.limits
    for recording in recordings:
        if recording is not None:
            check_plausible(recording, model.joint_names, limits.lower, limits.upper, limits.velocity, limits.effort)


def load_recording(args: argparse.Namespace, joint_names: list[str], prefix: str = "") -> Recording:
    """The Recording named by --{prefix}bag or --{prefix}csv-ur (raw efforts), options add_recording_arguments
    made required."""
    recording = load_optional_recording(args, joint_names, prefix)
    if recording is None:
        raise PayloadIdError(f"neither --{prefix}bag nor --{prefix}csv-ur was given", "give one of them")
    return recording


def load_optional_recording(args: argparse.Namespace, joint_names: list[str], prefix: str = "") -> Recording | None:
    """The Recording named by --{prefix}bag or --{prefix}csv-ur with its raw efforts (None when neither was given)."""
    attr = prefix.replace("-", "_")
    bag = getattr(args, f"{attr}bag", None)
    csv = getattr(args, f"{attr}csv_ur", None)
    if bag:
        return read_bag(bag, joint_topic=args.joint_states_topic, trajectory_topic=args.trajectory_topic,
                        wrench_topic=args.wrench_topic, joint_names=joint_names)
    if csv:
        return read_ur_csv(csv, joint_names=joint_names)
    return None
