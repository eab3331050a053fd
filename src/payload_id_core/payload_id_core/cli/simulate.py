"""`payload-id simulate`: play a trajectory YAML on the MuJoCo-simulated cell and write a rosbag2 bag
(joint states at --rate, the commanded JointTrajectory, the F/T wrench), deterministic for a seed.

The bag declares its effort unit (metadata, read back by read_bag): a profile with drive gains
(e.g. ur10: efforts in A, as a UR driver reports them) writes currents, others torques, so a simulated
current-unit bag is treated exactly as a real UR's."""

from __future__ import annotations

import argparse

import numpy as np

from payload_id_core.cli.inputs import add_urdf_argument
from payload_id_core.cli.numbers import integer, number
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.io.bag import write_bag
from payload_id_core.io.files import read_yaml_mapping
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.sim import load_profile, simulate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--trajectory", required=True,
                        help="trajectory YAML from `payload-id excite` (or a bundled name)")
    parser.add_argument("--payload", help="payload.yaml (frame, mass, com, inertia) to mount; none: unloaded robot")
    parser.add_argument("--frame", help="URDF frame the payload is mounted at (default: the payload file's, "
                        "else the last link)")
    parser.add_argument("--profile", default="clean",
                        help="noise/friction profile: clean, ur10 (data/sim/<name>.yaml) or a YAML path "
                             "(default clean)")
    parser.add_argument("--seed", type=integer(at_least=0), default=0,
                        help="noise seed: same seed, same bag (default 0)")
    parser.add_argument("--rate", type=number(above=0, unit="Hz"), default=500.0,
                        help="joint state rate in Hz (default 500)")
    parser.add_argument("--lead-in", type=number(at_least=0, unit="s"), default=0.5,
                        help="seconds at rest before the trajectory (default 0.5)")
    parser.add_argument("--storage", default="mcap", choices=["mcap", "sqlite3"], help="bag storage (default mcap)")
    parser.add_argument("--out", required=True, help="output rosbag2 directory (replaced)")


def _payload(path: str | None, frame: str | None):
    if path is None:
        if frame:
            raise PayloadIdError("--frame given without --payload", "add --payload payload.yaml or drop --frame")
        return None
    data = read_yaml_mapping(path, "payload file", "give --payload a payload.yaml with frame, mass, com and inertia")
    est = PayloadEstimate.from_dict(data)
    if frame:
        est.frame = frame
    return est


def run(args: argparse.Namespace) -> int:
    if not args.rate > 0:
        raise PayloadIdError(f"--rate {args.rate} Hz is not positive", "use e.g. 500")
    model = RobotModel.from_urdf(args.urdf)
    trajectory = load_trajectory(args.trajectory)
    payload = _payload(args.payload, args.frame)
    profile = load_profile(args.profile, model.n)
    recording = simulate(model, trajectory, payload, profile, seed=args.seed, rate_hz=args.rate,
                         lead_in=args.lead_in)
    recording.source = f"payload-id simulate --urdf {args.urdf} --trajectory {args.trajectory}"
    unit = EffortUnit.TORQUE if np.all(profile.effort_scale == 1.0) else EffortUnit.CURRENT
    out = write_bag(args.out, recording, storage=args.storage, effort_scale=profile.effort_scale, effort_unit=unit)
    j = recording.joints
    mounted = "none" if payload is None else f"{payload.mass:g} kg at {payload.frame or model.default_payload_frame}"
    print(f"wrote {out}: {len(j)} joint states over {j.t[-1] - j.t[0]:.2f} s, profile {profile.name}, "
          f"payload {mounted}, efforts in {unit.value}")
    return 0
