"""The one exception type that bad input raises.

Every check on user input (files, joint names, frames, NaN samples, unexcited trajectories) raises
PayloadIdError with a message that names the problem *and* what to do about it. The command line
turns it into one line on stderr and exit code 2; the ROS nodes turn it into an aborted goal.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

E = TypeVar("E", bound=Enum)


class Choice(str, Enum):
    """A choice users type (a CLI flag's, an option's, a goal field's): the member is its string, equal to it, and
    shows as it (enum.StrEnum, which Python 3.10 lacks)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class PayloadIdError(Exception):
    """Bad input or an impossible request; str(err) is a complete, user-facing sentence."""

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if not fix else f"{problem}; {fix}")


def parse_choice(choices: type[E], value: E | str, what: str) -> E:
    """The member of the str-valued Enum `choices` named `value`; an unknown name is bad input
    listing the known ones ("unknown <what> '<value>'; use one of: ...")."""
    try:
        return choices(value)
    except ValueError:
        raise PayloadIdError(f"unknown {what} '{value}'",
                             f"use one of: {', '.join(str(c.value) for c in choices)}") from None


class BadSamples(PayloadIdError, ValueError):
    """Samples no fit can use (NaN or inf) in a recording given through the Python API: bad input as every
    PayloadIdError (the command line's exit code 2, the node's aborted goal), and the ValueError a caller handing numpy
    arrays expects rather than numpy's LinAlgError from deep inside a fit."""
