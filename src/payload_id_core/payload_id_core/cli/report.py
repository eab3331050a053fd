"""`payload-id report`: PNG of how well an identified payload explains a recording.

Torque residuals per joint with the unloaded robot model and with the payload added
(payload/residuals.py), the convergence of mass, CoM and inertia when the payload file carries the
online history (identify-payload writes it for the online methods: payload.yaml's `history`), the
estimate ± σ beside the truth (--truth), and the robot at the recording's first pose with the payload
markers as rviz shows them, the bounding box the estimate was made with among them
(payload_id_core.robot_drawing). This module is imported only when the
subcommand runs (cli/main.py), so its core imports are paid by `payload-id report` alone.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pinocchio as pin

from payload_id_core.cli.inputs import add_recording_arguments, add_urdf_argument, read_runs
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import read_yaml_mapping
from payload_id_core.notes import NoteCode, has_note, notes_with
from payload_id_core.payload.residuals import torque_residuals
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.report import Convergence, estimate_lines, plot_report
from payload_id_core.robot_drawing import PayloadPose
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import conditioned_signals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--robot", required=True, help="robot.yaml of the unloaded robot (identify-robot)")
    parser.add_argument("--payload", required=True, help="payload.yaml (identify-payload)")
    add_recording_arguments(parser, what="the loaded run to explain")
    parser.add_argument("--truth", help="payload.yaml of the true payload (simulations): marked in the convergence "
                        "panels and printed beside the estimate")
    parser.add_argument("--out", required=True, help="PNG file to write")


def truth_in_frame(model: RobotModel, truth: PayloadEstimate, frame: str) -> PayloadEstimate:
    """The true payload expressed in the estimate's `frame` (a truth file names its own, e.g. tool0 where the estimate
    is on wrist_3_link): both frames must be fixed to one link."""
    truth_frame = model.payload_frame(truth.frame or frame)
    joint, placement = model.frame_in_joint(truth_frame)
    joint_to, placement_to = model.frame_in_joint(frame)
    if joint != joint_to:
        raise PayloadIdError(f"the truth is given in {truth_frame}, which does not move with the payload frame {frame}",
                             f"give --truth in {frame} or in a frame fixed to the same link")
    inertia = (placement_to.actInv(placement.act(pin.Inertia.FromDynamicParameters(truth.phi))))
    return PayloadEstimate(frame=frame, phi=np.asarray(inertia.toDynamicParameters(), dtype=float),
                           covariance=truth.covariance, method=truth.method)


def run(args: argparse.Namespace) -> int:
    if not args.out.lower().endswith(".png"):
        raise PayloadIdError(f"--out {args.out} is not a .png file", "name the report file something.png")
    model = RobotModel.from_urdf(args.urdf)
    robot = RobotIdentification.load(args.robot, model)
    payload_doc = read_yaml_mapping(args.payload, "payload file", "give --payload a payload.yaml from identify-payload")
    payload = PayloadEstimate.from_dict(payload_doc)
    frame = model.payload_frame(payload.frame)
    # The residuals compare torques with robot.yaml's model: the same gains identify-payload applied.
    runs = read_runs(args, model, robot)
    recording = runs.run
    for note in notes_with(runs.gain_notes, NoteCode.GAINS_GIVEN_NOT_USED):
        print(f"note: {note.text}", file=sys.stderr)
    signals = conditioned_signals(recording, model.joint_names,
                                  source="commanded" if recording.commanded else "measured",
                                  tracking_error=robot.tracking_error)
    signals.tau = robot.gear_corrected(signals.tau, signals.qd)   # as robot.yaml's parameters were fitted
    residuals = torque_residuals(model, robot, frame, payload.phi, signals.t - signals.t[0], signals.q, signals.qd,
                                 signals.qdd, signals.tau, signals.temperature)
    truth = (truth_in_frame(model, PayloadEstimate.from_dict(read_yaml_mapping(args.truth, "truth file",
                                                                               "give --truth a payload.yaml")), frame)
             if args.truth else None)
    payload.frame = frame
    no_payload = has_note(payload.notes, NoteCode.PAYLOAD_NO_PAYLOAD)
    what = "no payload detected" if no_payload else f"{payload.mass:.3f} kg"
    # The recording's first sample: the start pose of the excitation, where the arm rests. A CoM the data
    # did not determine (or no payload at all) is not drawn: a marker would show a number nobody can stand behind.
    com_drawn = bool(payload.readable_identifiable()[1:4].all()) and not no_payload
    convergence = (Convergence.from_history(payload.history, payload.convergence_time)
                   if payload.history else None)
    # The numbers people read: the σ are payload.yaml's (from_dict restores the covariance they come from).
    numbers = estimate_lines(payload.to_dict(), truth.to_dict() if truth else None)
    scene = plot_report(args.out, model.joint_names, residuals.rmse_before, residuals.rmse_after,
                        convergence=convergence, residuals=residuals,
                        truth_mass=truth.mass if truth else None, truth_com=truth.com if truth else None,
                        truth_inertia=np.diag(truth.inertia_about_com) if truth else None,
                        title=f"{payload.method}: {what} in {frame}", numbers=numbers,
                        payload_pose=PayloadPose(model, signals.q[0], payload) if com_drawn else None)
    print(f"torque RMSE per joint [N·m], unloaded model: {np.round(residuals.rmse_before, 3).tolist()}")
    print(f"torque RMSE per joint [N·m], with payload:   {np.round(residuals.rmse_after, 3).tolist()}")
    # After the RMSE lines, which scripts read by position.
    print(f"payload: {payload.summary()}")
    print("estimate ± σ" + (" and truth" if truth else "") + ":")
    for line in numbers:
        print(f"  {line}")
    if truth is not None:
        print(f"error against the truth: mass {payload.mass - truth.mass:+.4f} kg "
              f"({100 * (payload.mass - truth.mass) / truth.mass:+.2f} %), "
              f"CoM {1e3 * np.linalg.norm(payload.com - truth.com):.2f} mm")
    if scene is not None:
        print(f"payload CoM drawn at {np.round(scene.com, 4).tolist()} m in the base frame "
              f"(first pose of the recording), equivalent box {np.round(scene.geometry.box_sides, 4).tolist()} m")
        if scene.prior_box_corners is not None:   # identify-payload --bounding-box: drawn as a dashed wireframe
            print(f"bounding box drawn: {len(scene.geometry.prior_box_edges())} edges, corners from "
                  f"{np.round(scene.prior_box_corners.min(axis=0), 4).tolist()} to "
                  f"{np.round(scene.prior_box_corners.max(axis=0), 4).tolist()} m in the base frame")
    print(f"wrote {args.out}")
    return 0
