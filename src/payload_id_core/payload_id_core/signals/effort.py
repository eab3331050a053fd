"""What `joint_states.effort` measures, and the drive gains that turn it into joint torque.

Most industrial drivers (UR among them) report motor currents in `effort`; torque = effort × gain
per joint (the drive's torque constant times its gear ratio). A recording says which unit its
efforts are in (EffortUnit); a robot identification (robot.yaml) carries the gains it found or was
given, their standard deviation and where they came from, so every consumer converts the same way.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from payload_id_core.errors import PayloadIdError, parse_choice


class EffortUnit(str, Enum):
    """The unit of the raw `effort` values of a recording or a driver."""

    TORQUE = "torque"      # N·m at the joint (gain 1)
    CURRENT = "current"    # A (or a driver's current unit): needs drive gains
    UNKNOWN = "unknown"    # not declared (recordings made before units were declared)

    @classmethod
    def parse(cls, value: EffortUnit | str | None) -> EffortUnit:
        if value is None:
            return cls.UNKNOWN
        return parse_choice(cls, value, "effort unit")


def check_drive_gains(gains, n: int, what: str) -> np.ndarray:
    """`gains` (one value for all joints, or one per joint) as an (n,) array of finite positive drive gains.

    A zero, negative or NaN gain has no physical meaning (torque = effort × gain), and a wrong count
    means the gains belong to another robot: PayloadIdError naming `what` (e.g. "--effort-scale")."""
    # Text such as a quoted "10.5" in robot.yaml is refused, not parsed: numpy would read "10.5" but also
    # "1e1" or " 10.5", and a gain that is text was edited by hand; the file must say what it means.
    if any(isinstance(g, (str, bytes, bool)) for g in np.ravel(np.asarray(gains, dtype=object))):
        raise PayloadIdError(f"{what} {gains!r} holds text or true/false, not numbers",
                             "write drive gains as plain numbers (effort_scale: 10.5, not \"10.5\")")
    try:
        values = np.atleast_1d(np.asarray(gains, dtype=float)).reshape(-1)
    except (TypeError, ValueError) as err:
        raise PayloadIdError(f"{what} {gains!r} is not a number or a list of numbers",
                             "give one gain, or one per joint in the URDF's joint order") from err
    if values.size == 1:
        values = np.full(n, float(values[0]))
    if values.size != n:
        raise PayloadIdError(f"{what} has {values.size} drive gains for {n} joints",
                             "give one gain, or one per joint in the URDF's joint order")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise PayloadIdError(f"{what} {values.tolist()} holds a zero, negative or non-finite drive gain",
                             "drive gains are positive (N·m per unit of effort); identify them with a known mass "
                             "(payload-id identify-robot --known-payload-mass) or take them from the drive's data")
    return values
