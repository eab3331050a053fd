"""`payload-id report`: PNG of how well an identified payload explains a recording.

Torque residuals per joint with the unloaded robot model and with the payload added, and the
convergence of the estimate when the payload file carries the online history.
"""

from __future__ import annotations

import argparse

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.fileio import read_yaml_mapping
from payload_id_ros.cli.inputs import add_recording_arguments, load_recording


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--urdf", required=True, help="robot URDF (path or bundled name: ur10, ur10e, panda…)")
    parser.add_argument("--robot", required=True, help="robot.yaml of the unloaded robot (identify-robot)")
    parser.add_argument("--payload", required=True, help="payload.yaml (identify-payload)")
    add_recording_arguments(parser, what="the loaded run to explain")
    parser.add_argument("--truth", help="payload.yaml of the true payload, drawn for comparison (simulations)")
    parser.add_argument("--out", required=True, help="PNG file to write")


def run(args: argparse.Namespace) -> int:
    from payload_id_core.conditioning import conditioned_signals  # noqa: PLC0415
    from payload_id_core.identification import RobotIdentification  # noqa: PLC0415
    from payload_id_core.model import RobotModel  # noqa: PLC0415
    from payload_id_core.payload.estimate import PayloadEstimate  # noqa: PLC0415
    from payload_id_core.regressor import payload_regressor  # noqa: PLC0415
    from payload_id_core.report import TorqueResiduals, plot_report  # noqa: PLC0415

    if not args.out.lower().endswith(".png"):
        raise PayloadIdError(f"--out {args.out} is not a .png file", "name the report file something.png")
    model = RobotModel.from_urdf(args.urdf)
    robot = RobotIdentification.load(args.robot, model)
    payload_doc = read_yaml_mapping(args.payload, "payload file", "give --payload a payload.yaml from identify-payload")
    payload = PayloadEstimate.from_dict(payload_doc)
    frame = payload.frame or model.default_payload_frame
    model.frame_id(frame)
    recording = load_recording(args, model.joint_names)
    signals = conditioned_signals(recording, model.joint_names,
                                  source="commanded" if recording.commanded else "measured")
    before = robot.predict(signals.q, signals.qd, signals.qdd, signals.temperature)
    after = before + payload_regressor(model, frame, signals.q, signals.qd, signals.qdd) @ payload.phi
    residuals = TorqueResiduals(signals.t - signals.t[0], model.joint_names, signals.tau, before, after)
    truth_mass = PayloadEstimate.from_dict(read_yaml_mapping(args.truth, "truth file", "give --truth a payload.yaml")).mass if args.truth else None
    history = payload_doc.get("history")
    if history:
        history = {k: np.asarray(v, dtype=float) for k, v in history.items()}
    plot_report(args.out, residuals, history=history, truth_mass=truth_mass,
                title=f"{payload.method}: {payload.mass:.3f} kg in {frame}")
    print(f"torque RMSE per joint [N·m], unloaded model: {np.round(residuals.rmse_before, 3).tolist()}")
    print(f"torque RMSE per joint [N·m], with payload:   {np.round(residuals.rmse_after, 3).tolist()}")
    print(f"wrote {args.out}")
    return 0
