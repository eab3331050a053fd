"""`payload-id excite`: design an optimized Fourier excitation trajectory and write its YAML.

The trajectory starts and ends at rest at the start pose, respects the URDF's position and velocity
limits, the acceleration limits (robot defaults or --acceleration-limit) and optional Cartesian
limits, all checked on a 1 ms grid before the file is written (atomically; nothing on error).

`--from NAME --periods N` designs nothing: it writes a copy of an existing trajectory (a bundled name or a
YAML) that plays N back-to-back periods, checked against --urdf's limits as designed. A calibration run is
recorded on such a copy (several periods of an `--objective inertia` excitation: README, "Calibration").
"""

from __future__ import annotations

import math
import shlex
import sys

import numpy as np

from payload_id_core.cli.inputs import add_urdf_argument
from payload_id_core.cli.numbers import finite, integer, number
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import FourierTrajectory, load_trajectory
from payload_id_core.excitation.limits import (
    CartesianLimit,
    MotionLimits,
    check_trajectory,
    limit_violations,
    robot_key,
)
from payload_id_core.excitation_design import COLUMN_SCALINGS, OBJECTIVES, ExcitationDesign, optimize_excitation
from payload_id_core.sim.profile import load_profile


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        raise PayloadIdError(f"'{text}' is not a comma-separated list of numbers", "e.g. 0,-1.57,0") from err
    if not all(math.isfinite(v) for v in values):
        raise PayloadIdError(f"'{text}' holds NaN or infinity", "give finite numbers, e.g. 0,-1.57,0")
    return values


def add_arguments(parser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--frame", default=None, help="payload frame (default: child link of the last joint)")
    parser.add_argument("--duration", type=number(above=0, unit="s"), default=10.0, help="s, one period (default 10)")
    parser.add_argument("--harmonics", type=integer(at_least=2), default=5,
                        help="Fourier harmonics per joint (default 5)")
    parser.add_argument("--base-frequency", type=number(above=0, unit="Hz"), default=None,
                        help="Hz, default 1/duration (must be k/duration)")
    parser.add_argument("--objective", choices=OBJECTIVES, default="payload",
                        help="base: cond of base regressor with friction; xu: Xu 2024 eq. 18; payload: cond of W_L; "
                             "dopt: D-optimality; inertia: summed variance of the payload parameters (A-optimal "
                             "W_L, what a usable inertia needs); convergence: the mass's variance after the first "
                             "--horizon seconds (how soon an online estimator converges) (default payload)")
    parser.add_argument("--horizon", type=number(above=0, unit="s"), default=2.0,
                        help="s of motion by which --objective convergence makes the mass known (default 2)")
    parser.add_argument("--joints", default=None, help="comma-separated joints that move (others hold the offset), "
                                                       "e.g. wrist_1_joint,wrist_2_joint,wrist_3_joint")
    parser.add_argument("--offsets", default=None, help="comma-separated start pose (rad), default per robot")
    parser.add_argument("--margin", type=number(at_least=0, at_most=0.9), default=0.05,
                        help="fraction kept from every limit (default 0.05)")
    parser.add_argument("--acceleration-limit", default=None,
                        help="rad/s², one value or one per joint (URDFs have none; default per robot)")
    parser.add_argument("--min-height", type=finite, default=None, help="m, keep --height-frame above this z")
    parser.add_argument("--max-height", type=finite, default=None, help="m, keep --height-frame below this z")
    parser.add_argument("--height-frame", default=None, help="frame for --min/max-height (default: payload frame)")
    parser.add_argument("--payload-size", type=number(above=0, unit="m"), default=0.1,
                        help="m, characteristic payload size scaling the payload objective (default 0.1)")
    parser.add_argument("--noise-std", default=None,
                        help="torque noise std per joint weighting the rows (Xu 2024 Λ0^-1/2): comma-separated N·m "
                             "(one or one per joint) or a simulation profile name/YAML whose torque_noise_std to use "
                             "(default: the robot's data/sim/<robot>.yaml if any, else 1 %% of the effort limit)")
    parser.add_argument("--column-scaling", choices=COLUMN_SCALINGS, default="none",
                        help="base/xu objectives: none = SI units as Xu 2024 (default), unit = unit-norm columns")
    parser.add_argument("--min-velocity-fraction", type=number(at_least=0), default=0.25,
                        help="every moving joint's RMS velocity >= this x its velocity limit (default 0.25)")
    parser.add_argument("--seeds", type=integer(at_least=1, at_most=100), default=3, help="random starts (default 3)")
    parser.add_argument("--seed", type=integer(at_least=0), default=0, help="random seed (default 0)")
    parser.add_argument("--maxiter", type=integer(at_least=1, at_most=10000), default=60,
                        help="SLSQP iterations per start (default 60)")
    parser.add_argument("--from", dest="from_trajectory", default=None, metavar="TRAJECTORY",
                        help="design nothing: copy this trajectory (a bundled name or a YAML) to play --periods "
                             "periods, e.g. a calibration run on ur10_payload_inertia")
    parser.add_argument("--periods", type=integer(at_least=1, at_most=MAX_PERIODS), default=None,
                        help="with --from: back-to-back periods the copy plays (default 1)")
    parser.add_argument("--out", required=True, help="trajectory YAML to write")
    # What --from must not be given with: remembered as parsed by default, so that a design option given
    # beside --from is refused rather than silently ignored.
    _DESIGN_DEFAULTS.clear()
    _DESIGN_DEFAULTS.update({dest: parser.get_default(dest) for dest in _DESIGN_OPTIONS})


# Up to 100 periods: a calibration needs a few; more is a typo, and the copy is checked sample by sample.
MAX_PERIODS = 100
_DESIGN_OPTIONS = ("frame", "duration", "harmonics", "base_frequency", "objective", "horizon", "joints", "offsets",
                   "margin", "acceleration_limit", "min_height", "max_height", "height_frame", "payload_size",
                   "noise_std", "column_scaling", "min_velocity_fraction", "seeds", "seed", "maxiter")
_DESIGN_DEFAULTS: dict[str, object] = {}


def _option(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def copy_periods(args) -> int:
    """`--from T --periods N`: T's motion unchanged, its duration N periods, checked against the robot's limits
    (and T's own design margin and Cartesian limits) before anything is written."""
    given = [_option(d) for d in _DESIGN_OPTIONS if getattr(args, d) != _DESIGN_DEFAULTS.get(d)]
    if given:
        raise PayloadIdError(f"{', '.join(given)} designs a new trajectory, and --from copies one as it was designed",
                             "drop --from to design a new one, or drop " + ", ".join(given))
    model = RobotModel.from_urdf(args.urdf)
    source = load_trajectory(args.from_trajectory).for_model(list(model.joint_names))
    check_trajectory(source, model)
    periods = 1 if args.periods is None else args.periods
    # robot and urdf say what the copy was checked against (a UR10 excitation copied for a UR10e is the UR10e's now).
    design = {**source.design, "copied_from": str(args.from_trajectory), "periods": periods,
              "robot": robot_key(model), "urdf": str(args.urdf), "command": _command_line()}
    copy = FourierTrajectory(list(source.joint_names), source.base_frequency_hz, source.offsets, source.a, source.b,
                             periods / source.base_frequency_hz, design)
    copy.save(args.out)
    print(f"wrote {args.out}: {args.from_trajectory} played {periods} period(s), {copy.duration:g} s "
          f"(one period {1.0 / source.base_frequency_hz:g} s), within {robot_key(model)}'s limits")
    return 0


def _command_line() -> str | None:
    if len(sys.argv) > 2 and sys.argv[1] == "excite":
        return "payload-id excite " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    return None


def run(args) -> int:
    if args.from_trajectory is not None:
        return copy_periods(args)
    if args.periods is not None:
        raise PayloadIdError("--periods repeats an existing trajectory", "give it with --from, e.g. "
                             "--from ur10_payload_inertia --periods 3; a new design's length is --duration")
    if not args.duration > 0:
        raise PayloadIdError(f"--duration {args.duration} s is not positive", "use e.g. --duration 10")
    if args.seeds < 1 or args.maxiter < 1:
        raise PayloadIdError("--seeds and --maxiter must be at least 1", "e.g. --seeds 3 --maxiter 60")
    model = RobotModel.from_urdf(args.urdf)
    acc = None if args.acceleration_limit is None else _floats(args.acceleration_limit)
    if acc is not None and len(acc) not in (1, model.n):
        raise PayloadIdError(f"--acceleration-limit has {len(acc)} values for {model.n} joints",
                             "give one value or one per joint")
    limits = MotionLimits.from_model(model, margin=args.margin, acceleration=acc)
    frame = model.payload_frame(args.frame)
    cartesian = []
    if args.min_height is not None or args.max_height is not None:
        cartesian.append(CartesianLimit(args.height_frame or frame, 2, args.min_height, args.max_height))
        model.frame_id(cartesian[0].frame)
    joints = None
    if args.joints:
        joints = [j.strip() for j in args.joints.split(",") if j.strip()]
    offsets = None if args.offsets is None else np.asarray(_floats(args.offsets))
    noise = None
    if args.noise_std is not None:
        try:
            noise = _floats(args.noise_std)
        except PayloadIdError:
            noise = list(load_profile(args.noise_std, model.n).torque_noise_std)
        if len(noise) not in (1, model.n) or not all(v > 0 for v in noise):
            raise PayloadIdError(f"--noise-std gives {noise} for {model.n} joints",
                                 "give one positive N·m value or one per joint, or a simulation profile name")
    design = ExcitationDesign(model, limits, objective=args.objective, frame=frame, duration=args.duration,
                              harmonics=args.harmonics, base_frequency_hz=args.base_frequency, offsets=offsets,
                              joints=joints, cartesian=cartesian, payload_size_m=args.payload_size,
                              noise_std=None if noise is None else np.asarray(noise),
                              column_scaling=args.column_scaling, min_rms_velocity_fraction=args.min_velocity_fraction,
                              horizon_s=args.horizon)
    result = optimize_excitation(design, seeds=args.seeds, seed=args.seed, maxiter=args.maxiter,
                                 log=lambda m: print(m, file=sys.stderr))
    traj = result.trajectory
    bad = limit_violations(traj, model, limits, cartesian, dt=1e-3)
    if bad:  # optimize_excitation already guarantees this; never write a file that breaks a limit
        raise PayloadIdError(f"internal check failed: {bad[0]}", "report this; no file was written")
    traj.design["robot"] = robot_key(model)
    traj.design["urdf"] = str(args.urdf)
    traj.design["command"] = _command_line()
    traj.save(args.out)
    m = result.metrics
    print(f"wrote {args.out}: objective {args.objective} = {result.objective_value:.4g}, "
          f"base cond {m['base_cond']:.4g} "
          f"(unit columns {m['base_cond_unit_columns']:.4g}), "
          f"payload cond {m['payload_cond']:.4g}, Xu eq. 18 sum {m['xu']:.4g} ({result.seconds:.1f} s, "
          f"{result.seeds_feasible}/{result.seeds_tried} starts feasible)")
    return 0
