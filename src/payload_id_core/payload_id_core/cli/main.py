"""Entry point of `payload-id`.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``;
modules are imported only when their subcommand runs, so `payload-id --help` stays fast and a heavy
import (pinocchio, mujoco, rclpy) is paid only by the command that needs it. The offline subcommands are
this package's modules; `identify` (the ROS action client) is a plugin the ROS package declares in the
entry-point group PLUGIN_GROUP, so the core never imports ROS. Bad input raises PayloadIdError, printed
here as one line on stderr with exit code 2 (docs/design.md, command-line contract).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points

from payload_id_core.blas import limit_blas_threads
from payload_id_core.errors import PayloadIdError
from payload_id_core.scipy_startup import skip_scipy_doc_notes


class _OneLineErrors(argparse.ArgumentParser):
    """A subcommand's usage errors as one line naming the flag and the way to the help (the full usage
    of a subcommand runs over a dozen lines and buries the problem), exit 2 like argparse."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


# name -> (module in payload_id_core.cli, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "identify-robot": ("identify_robot", "identify the unloaded robot's base parameters and friction -> robot.yaml"),
    "identify-payload": ("identify_payload", "identify the payload on the flange from a loaded run -> payload.yaml"),
    "excite": ("excite", "design an optimized Fourier excitation trajectory -> trajectory.yaml"),
    "simulate": ("simulate", "play a trajectory on the simulated robot (MuJoCo) -> rosbag2 bag"),
    "report": ("report", "plot an identification (convergence, torque residuals) -> PNG"),
    "gazebo-urdf": ("gazebo_urdf", "the robot's URDF for Gazebo Sim with gz_ros2_control (and a payload) -> URDF"),
    "monitor": ("monitor", "replay a recording through the payload monitor as the node runs it -> events.yaml"),
}

# Subcommands other installed packages add: entry point name = subcommand, value = its module.
PLUGIN_GROUP = "payload_id.commands"
# name -> (one-line help, what to install): the plugins this repository ships, known here so that the
# command without its package says what to install (the help text is read without importing ROS).
KNOWN_PLUGINS: dict[str, tuple[str, str]] = {
    "identify": ("ask a running payload_estimator node to identify the payload (--ros action client)",
                 "the ROS 2 package payload_id_ros (colcon build the workspace and source install/setup.bash, "
                 "or pip install -e src/payload_id_ros)"),
}


def plugin_modules() -> dict[str, str]:
    """Installed plugin subcommands, name -> module (the offline subcommands' names cannot be taken)."""
    return {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP) if ep.name not in SUBCOMMANDS}


def build_parser(plugins: dict[str, str] | None = None) -> tuple[argparse.ArgumentParser,
                                                                 dict[str, argparse.ArgumentParser]]:
    """The top-level parser (argparse exits 2 with the usage on a usage error) and one parser per subcommand
    (this package's and the installed plugins'), each knowing its module."""
    plugins = plugin_modules() if plugins is None else plugins
    parser = argparse.ArgumentParser(
        prog="payload-id",
        description="Identify the unknown payload on a robot's flange (mass, CoM, inertia with "
        "uncertainty) from joint torques and wrist F/T sensors.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineErrors)
    sub.required = True
    subparsers: dict[str, argparse.ArgumentParser] = {}
    commands = {name: (f"payload_id_core.cli.{module}", help_text) for name, (module, help_text) in SUBCOMMANDS.items()}
    for name, module in plugins.items():
        commands[name] = (module, KNOWN_PLUGINS.get(name, (f"(from {module})", ""))[0])
    for name, (module, help_text) in commands.items():
        subparsers[name] = sub.add_parser(name, help=help_text, description=help_text)
        subparsers[name].set_defaults(_module=module)
    return parser, subparsers


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    limit_blas_threads()
    skip_scipy_doc_notes()   # SciPy's imports without parsing ~800 docstrings nobody reads here (0.6-1 s)
    plugins = plugin_modules()
    if argv and argv[0] in KNOWN_PLUGINS and argv[0] not in plugins:
        print(f"payload-id {argv[0]}: error: this subcommand needs {KNOWN_PLUGINS[argv[0]][1]}", file=sys.stderr)
        return 2
    parser, subparsers = build_parser(plugins)
    # Only the chosen subcommand's arguments are loaded (its imports may be heavy).
    if argv and argv[0] in subparsers:
        importlib.import_module(subparsers[argv[0]].get_default("_module")).add_arguments(subparsers[argv[0]])
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:   # usage error (2, message printed) or --help (0): a code for in-process callers
        return stop.code if isinstance(stop.code, int) else 2
    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except PayloadIdError as err:
        # One line, whatever the message quotes (a YAML parser's or a reader's multi-line text).
        print(f"payload-id {args.command}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
