"""The one exception type that bad input raises.

Every check on user input (files, joint names, frames, NaN samples, unexcited trajectories) raises
PayloadIdError with a message that names the problem *and* what to do about it. The command line
turns it into one line on stderr and exit code 2; the ROS nodes turn it into an aborted goal.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

E = TypeVar("E", bound=Enum)


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
