"""The heaviest known mass a robot's payload may have (issue 30: a known mass above the robot's rated payload is bad
input), whatever its URDF is called.

Two statements, the lower one binding:
  rated      the maker's rated payload: the node's `rated_payload_kg` parameter when set, else RATED_PAYLOAD_KG by the
             URDF's <robot name> (also with a "_robot" suffix, as ROS 1's ur_description names them). Above it the arm
             may still hold the part, but it is not rated for it: refused, as issue 30 asks, saying how much the arm
             could hold.
  physical   dynamics.holding_capacity: the most the arm holds at full reach by its URDF's effort limits. Above it
             no pose of the stretched arm can hold the part: refused, naming the joint. This one needs no name, so a
             URDF named "ur" (ur_description's default) or any robot not in the table is bounded too, and a URDF
             named for a bigger robot than its limits describe is bounded by its limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from payload_id_core.dynamics.holding_capacity import holding_capacity
from payload_id_core.dynamics.model import RobotModel

# Rated payloads (kg) by the URDF's <robot name> (the bundled robots and their families).
RATED_PAYLOAD_KG = {"ur3": 3.0, "ur3e": 3.0, "ur5": 5.0, "ur5e": 5.0, "ur10": 10.0, "ur10e": 12.5, "ur16e": 16.0,
                    "ur20": 20.0, "ur30": 30.0, "panda": 3.0, "fr3": 3.0, "iiwa7": 7.0, "iiwa14": 14.0}
_NAME_SUFFIXES = ("_robot",)


def rated_payload(robot_name: str) -> float | None:
    """The rated payload (kg) of the robot named `robot_name` (the URDF's <robot name>), None when not known."""
    name = str(robot_name).lower()
    for suffix in _NAME_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in RATED_PAYLOAD_KG:
            name = name[: -len(suffix)]
    return RATED_PAYLOAD_KG.get(name)


@dataclass(frozen=True)
class MassLimit:
    """A known mass above `kg` is bad input; `what` completes "the known mass M kg is above ..."."""

    kg: float
    what: str

    @classmethod
    def rated(cls, kg: float, detail: str = "") -> MassLimit:
        return cls(float(kg), f"the robot's rated payload {kg:g} kg{detail}")


def known_mass_limit(model: RobotModel, rated_kg: float | None = None) -> MassLimit | None:
    """The limit for `model` (`rated_kg`: the configured rated payload; None or <= 0: the name's, if known), the lower
    of the rated payload and the arm's holding capacity; None when neither is known."""
    rated = rated_kg if rated_kg is not None and rated_kg > 0 else rated_payload(model.model.name)
    capacity = holding_capacity(model)
    if capacity is not None and (rated is None or capacity.mass < rated):
        return MassLimit(capacity.mass, f"what the arm can hold by its URDF's effort limits: {capacity.describe()}"
                         + (f", below its rated {rated:g} kg" if rated is not None else ""))
    if rated is None:
        return None
    could = f" (its joints could hold {capacity.mass:.1f} kg at full reach, but it is not rated for more)" \
        if capacity is not None else ""
    return MassLimit.rated(rated, could)


# A detected load above this multiple of the robot's limit is no part it can carry (the monitor's margin over the rated
# payload since issue 17: motion, a CoM offset and the estimate's σ let a real part read above the rating).
MONITOR_LOAD_MARGIN = 1.5


def monitor_max_mass(model: RobotModel, rated_kg: float = 0.0) -> float:
    """The heaviest carried mass (kg) the payload monitor names as a load (DetectorSettings.max_mass_kg): a margin
    (MONITOR_LOAD_MARGIN) over the configured rated payload `rated_kg`, or, with none configured (0), over
    known_mass_limit's (the URDF name's rated payload or its joints' holding capacity, the lower); inf when neither is
    known. Without it the monitor named a 12 t part where no row excited the mass (h143: the real UR10e's
    jointwise-joint_6 with rated_payload_kg unset)."""
    if rated_kg > 0:
        return MONITOR_LOAD_MARGIN * rated_kg
    limit = known_mass_limit(model)
    return math.inf if limit is None else MONITOR_LOAD_MARGIN * limit.kg


class KnownMassLimit:
    """known_mass_limit of one robot, found on first need: the holding capacity's search takes 0.5-1 s, so a node pays
    it only when its parameters or a goal give a known mass."""

    def __init__(self, model: RobotModel, rated_kg: float | None = None) -> None:
        self._model, self._rated_kg = model, rated_kg
        self._found: tuple[MassLimit | None] | None = None

    def __call__(self, known_mass: float) -> MassLimit | None:
        """The limit a known mass `known_mass` is checked against (0: none given, nothing to check: None)."""
        if known_mass == 0.0:
            return None
        if self._found is None:
            self._found = (known_mass_limit(self._model, self._rated_kg),)
        return self._found[0]


__all__ = ["MONITOR_LOAD_MARGIN", "RATED_PAYLOAD_KG", "KnownMassLimit", "MassLimit", "known_mass_limit",
           "monitor_max_mass", "rated_payload"]
