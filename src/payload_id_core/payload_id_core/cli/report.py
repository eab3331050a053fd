"""`payload-id report`: PNG of how well an identified payload explains a recording.

Torque residuals per joint with the unloaded robot model and with the payload added
(payload/residuals.py), and the convergence of the estimate when the payload file carries the
online history, and the robot at the recording's first pose with the payload markers as rviz shows
them (payload_id_core.robot_drawing). This module is imported only when the subcommand runs (cli/main.py), so its core
imports are paid by `payload-id report` alone.
"""

from __future__ import annotations

import argparse

import numpy as np

from payload_id_core.cli.inputs import add_recording_arguments, add_urdf_argument, read_runs
from payload_id_core.dynamics.inertia import to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import read_yaml_mapping
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.residuals import torque_residuals
from payload_id_core.report import Convergence, plot_report
from payload_id_core.robot_drawing import PayloadPose
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import conditioned_signals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--robot", required=True, help="robot.yaml of the unloaded robot (identify-robot)")
    parser.add_argument("--payload", required=True, help="payload.yaml (identify-payload)")
    add_recording_arguments(parser, what="the loaded run to explain")
    parser.add_argument("--truth", help="payload.yaml of the true payload, drawn for comparison (simulations)")
    parser.add_argument("--out", required=True, help="PNG file to write")


def _convergence(history: dict | None) -> Convergence | None:
    """payload.yaml's optional online history {t, phi, std} -> Convergence (None when absent)."""
    if not history:
        return None
    phi = np.asarray(history["phi"], dtype=float)
    std = np.asarray(history.get("std", np.zeros_like(phi)), dtype=float)
    com = np.array([to_mass_com_inertia(p)[1] for p in phi])
    return Convergence(np.asarray(history["t"], dtype=float), phi[:, 0], std[:, 0], com)


def run(args: argparse.Namespace) -> int:
    if not args.out.lower().endswith(".png"):
        raise PayloadIdError(f"--out {args.out} is not a .png file", "name the report file something.png")
    model = RobotModel.from_urdf(args.urdf)
    robot = RobotIdentification.load(args.robot, model)
    payload_doc = read_yaml_mapping(args.payload, "payload file", "give --payload a payload.yaml from identify-payload")
    payload = PayloadEstimate.from_dict(payload_doc)
    frame = model.payload_frame(payload.frame)
    # The residuals compare torques with robot.yaml's model: the same gains identify-payload applied.
    recording = read_runs(args, model, robot).run
    signals = conditioned_signals(recording, model.joint_names,
                                  source="commanded" if recording.commanded else "measured",
                                  tracking_error=robot.tracking_error)
    signals.tau = robot.gear_corrected(signals.tau, signals.qd)   # as robot.yaml's parameters were fitted
    residuals = torque_residuals(model, robot, frame, payload.phi, signals.t - signals.t[0], signals.q, signals.qd,
                                 signals.qdd, signals.tau, signals.temperature)
    truth = (PayloadEstimate.from_dict(read_yaml_mapping(args.truth, "truth file", "give --truth a payload.yaml"))
             if args.truth else None)
    payload.frame = frame
    no_payload = has_note(payload.notes, NoteCode.PAYLOAD_NO_PAYLOAD)
    what = "no payload detected" if no_payload else f"{payload.mass:.3f} kg"
    # The recording's first sample: the start pose of the excitation, where the arm rests. A CoM the data
    # did not determine (or no payload at all) is not drawn: a marker would show a number nobody can stand behind.
    com_drawn = bool(payload.readable_identifiable()[1:4].all()) and not no_payload
    scene = plot_report(args.out, model.joint_names, residuals.rmse_before, residuals.rmse_after,
                        convergence=_convergence(payload_doc.get("history")), residuals=residuals,
                        truth_mass=truth.mass if truth else None, truth_com=truth.com if truth else None,
                        title=f"{payload.method}: {what} in {frame}",
                        payload_pose=PayloadPose(model, signals.q[0], payload) if com_drawn else None)
    print(f"torque RMSE per joint [N·m], unloaded model: {np.round(residuals.rmse_before, 3).tolist()}")
    print(f"torque RMSE per joint [N·m], with payload:   {np.round(residuals.rmse_after, 3).tolist()}")
    # After the RMSE lines, which scripts read by position.
    print(f"payload: {payload.summary()}")
    if scene is not None:
        print(f"payload CoM drawn at {np.round(scene.com, 4).tolist()} m in the base frame "
              f"(first pose of the recording), equivalent box {np.round(scene.geometry.box_sides, 4).tolist()} m")
    print(f"wrote {args.out}")
    return 0
