"""Entry point of `payload-id`.

Each subcommand lives in its own module of this package exposing
``add_arguments(parser)`` and ``run(args) -> int``; modules are imported only when their
subcommand runs, so `payload-id --help` stays fast and a heavy import (pinocchio, mujoco, rclpy)
is paid only by the command that needs it. Bad input raises PayloadIdError, printed here as one
line on stderr with exit code 2 (docs/design.md, command-line contract).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from payload_id_core.blas import limit_blas_threads
from payload_id_core.errors import PayloadIdError


class _OneLineErrors(argparse.ArgumentParser):
    """A subcommand's usage errors as one line naming the flag and the way to the help (the full usage
    of a subcommand runs over a dozen lines and buries the problem), exit 2 like argparse."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


# name -> (module in payload_id_ros.cli, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "identify-robot": ("identify_robot", "identify the unloaded robot's base parameters and friction -> robot.yaml"),
    "identify-payload": ("identify_payload", "identify the payload on the flange from a loaded run -> payload.yaml"),
    "excite": ("excite", "design an optimized Fourier excitation trajectory -> trajectory.yaml"),
    "simulate": ("simulate", "play a trajectory on the simulated robot (MuJoCo) -> rosbag2 bag"),
    "report": ("report", "plot an identification (convergence, torque residuals) -> PNG"),
    "identify": ("identify", "ask a running payload_estimator node to identify the payload (--ros action client)"),
}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser (argparse exits 2 with the usage on a usage error) and one parser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="payload-id",
        description="Identify the unknown payload on a robot's flange (mass, CoM, inertia with "
        "uncertainty) from joint torques and wrist F/T sensors.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineErrors)
    sub.required = True
    subparsers: dict[str, argparse.ArgumentParser] = {}
    for name, (module, help_text) in SUBCOMMANDS.items():
        subparsers[name] = sub.add_parser(name, help=help_text, description=help_text)
        subparsers[name].set_defaults(_module=module)
    return parser, subparsers


def _load(module: str):
    return importlib.import_module(f"payload_id_ros.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    limit_blas_threads()
    parser, subparsers = build_parser()
    # Only the chosen subcommand's arguments are loaded (its imports may be heavy).
    if argv and argv[0] in SUBCOMMANDS:
        _load(SUBCOMMANDS[argv[0]][0]).add_arguments(subparsers[argv[0]])
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:   # usage error (2, message printed) or --help (0): a code for in-process callers
        return stop.code if isinstance(stop.code, int) else 2
    try:
        return int(_load(args._module).run(args) or 0)
    except PayloadIdError as err:
        # One line, whatever the message quotes (a YAML parser's or a reader's multi-line text).
        print(f"payload-id {args.command}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
