"""`payload-id gazebo-urdf`: the robot's URDF for Gazebo Sim with gz_ros2_control (dynamics/gazebo_urdf.py),
optionally with a payload fixed on the flange; launch/gz_cell.launch.py makes the same text in memory."""

from __future__ import annotations

import argparse
import math

from payload_id_core.cli.inputs import add_urdf_argument
from payload_id_core.cli.numbers import finite, finite_list
from payload_id_core.dynamics.gazebo_urdf import flange_payload, gazebo_urdf
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_text, check_output_file
from payload_id_core.payload.mass_limit import known_mass_limit
from payload_id_core.payload.priors import MAX_PAYLOAD_EXTENT_M


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--controllers", required=True,
                        help="controllers YAML the gz_ros2_control plugin loads (e.g. the installed "
                             "share/payload_id_ros/config/<robot>_controllers.yaml); its trajectory controller "
                             "must name the robot's joints")
    parser.add_argument("--payload-mass", type=finite, default=0.0,
                        help="kg fixed on the payload frame (default 0: none)")
    parser.add_argument("--payload-com", type=finite_list, default=[0.0, 0.0, 0.0], metavar="X,Y,Z",
                        help="m, the payload's centre of mass in the payload frame")
    parser.add_argument("--payload-inertia", type=finite_list, default=[0.0] * 6, metavar="IXX,IXY,IXZ,IYY,IYZ,IZZ",
                        help="kg m², about the CoM, axes of the payload frame")
    parser.add_argument("--payload-frame", help="URDF link carrying the payload (default: the robot's flange, as "
                        "identify-payload's --frame)")
    parser.add_argument("--initial-positions", type=finite_list, metavar="Q1,Q2,...",
                        help="joint positions Gazebo starts at (default: 0 clipped to the limits)")
    parser.add_argument("--out", required=True, help="output URDF file")


def run(args: argparse.Namespace) -> int:
    out = check_output_file(args.out)
    payload = flange_payload(args.payload_mass, args.payload_com, args.payload_inertia)
    if payload is not None:
        # The limits identify-payload's priors have: no robot carries a part beyond them.
        distance = math.hypot(*payload.com)
        if distance > MAX_PAYLOAD_EXTENT_M:
            raise PayloadIdError(f"payload com is {distance:g} m from the payload frame, beyond any payload a robot "
                                 f"carries (limit {MAX_PAYLOAD_EXTENT_M:g} m)", "give the com in metres, e.g. 0,0,0.1")
        limit = known_mass_limit(RobotModel.from_urdf(args.urdf))
        if limit is not None and payload.mass > limit.kg:
            raise PayloadIdError(f"payload mass {payload.mass:g} kg is above {limit.what}",
                                 "check the mass and its unit (kg)")
    text = gazebo_urdf(args.urdf, args.controllers, payload, args.payload_frame, args.initial_positions)
    atomic_write_text(out, text)
    carried = "no payload" if payload is None else f"a {payload.mass:g} kg payload"
    print(f"wrote {out}: {args.urdf} for Gazebo (gz_ros2_control), {carried}")
    return 0
