"""Entry point of `payload-id`.

Each subcommand lives in its own module of this package exposing
``add_arguments(parser)`` and ``run(args) -> int``; modules are imported only when their
subcommand runs, so `payload-id --help` stays fast and a heavy import (pinocchio, mujoco, rclpy)
is paid only by the command that needs it. Bad input raises PayloadIdError, printed here as one
line on stderr with exit code 2 (DESIGN.md, command-line contract).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Before numpy loads: the matrices here are small or tall-and-thin, and threaded OpenBLAS on a
# busy machine oversubscribes the cores (measured 5–20× slower and erratic on 2 shared cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from payload_id_core.errors import PayloadIdError

# name -> (module in payload_id_ros.cli, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "identify-robot": ("identify_robot", "identify the unloaded robot's base parameters and friction -> robot.yaml"),
    "identify-payload": ("identify_payload", "identify the payload on the flange from a loaded run -> payload.yaml"),
    "excite": ("excite", "design an optimized Fourier excitation trajectory -> trajectory.yaml"),
    "simulate": ("simulate", "play a trajectory on the simulated robot (MuJoCo) -> rosbag2 bag"),
    "report": ("report", "plot an identification (convergence, torque residuals) -> PNG"),
    "identify": ("identify", "ask a running payload_estimator node to identify the payload (--ros action client)"),
}


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep that, with the usage on stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="payload-id",
        description="Identify the unknown payload on a robot's flange (mass, CoM, inertia with "
        "uncertainty) from joint torques and wrist F/T sensors.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
    return parser


def _load(module: str):
    return importlib.import_module(f"payload_id_ros.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    # Only the chosen subcommand's arguments are loaded (its imports may be heavy).
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    if chosen:
        sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        try:
            _load(SUBCOMMANDS[chosen][0]).add_arguments(sub_action.choices[chosen])
        except ModuleNotFoundError as err:
            if err.name != f"payload_id_ros.cli.{SUBCOMMANDS[chosen][0]}":
                raise
            print(f"payload-id {chosen}: error: this subcommand is not available in this build", file=sys.stderr)
            return 2
    args = parser.parse_args(argv)
    try:
        return int(_load(args._module).run(args) or 0)
    except PayloadIdError as err:
        print(f"payload-id {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
