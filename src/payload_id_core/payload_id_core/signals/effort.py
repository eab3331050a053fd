"""What `joint_states.effort` measures, and the drive gains that turn it into joint torque.

Most industrial drivers (UR among them) report motor currents in `effort`; torque = effort × gain
per joint (the drive's torque constant times its gear ratio). A recording says which unit its
efforts are in (EffortUnit); a robot identification (robot.yaml) carries the gains it found or was
given, their standard deviation and where they came from, so every consumer converts the same way.
"""

from __future__ import annotations

from enum import Enum

from payload_id_core.errors import PayloadIdError


class EffortUnit(str, Enum):
    """The unit of the raw `effort` values of a recording or a driver."""

    TORQUE = "torque"      # N·m at the joint (gain 1)
    CURRENT = "current"    # A (or a driver's current unit): needs drive gains
    UNKNOWN = "unknown"    # not declared (recordings made before units were declared)

    @classmethod
    def parse(cls, value: EffortUnit | str | None) -> EffortUnit:
        if value is None:
            return cls.UNKNOWN
        try:
            return cls(value)
        except ValueError:
            raise PayloadIdError(f"unknown effort unit '{value}'",
                                 f"use one of: {', '.join(u.value for u in cls)}") from None
