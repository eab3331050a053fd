"""Node parameters as one typed table per node.

Each node describes its parameters once, as a frozen dataclass whose fields carry the type, the
default and a description (`parameter(...)`). `declare_parameters` declares every field on the node
with a ParameterDescriptor (so `ros2 param describe` explains it), reads the values back converted to
the field's type and checks the declared ranges, raising PayloadIdError that names the parameter, its
value and what it must be. The names and defaults are what config/<robot>.yaml and the launch files
pass (test_launch_supervisor_sync checks that every key there is a field here).

Ranges are checked here rather than by ROS (ParameterDescriptor.floating_point_range): ROS would
refuse the value with its own exception at declaration, before the node can say what to give instead.
"""

from __future__ import annotations

import math
import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from payload_id_core.errors import PayloadIdError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

P = TypeVar("P", bound="DataclassInstance")     # a parameter table: a (frozen) dataclass


@dataclass(frozen=True)
class Range:
    """Allowed values of a numeric parameter; bounds are inclusive unless `*_open`; NaN/inf never pass."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""

    def admits(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None and (value >= self.high if self.high_open else value > self.high))

    def __str__(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " and ".join(parts) or "finite"


def parameter(default: Any, description: str, *, valid: Range | None = None, dynamic_typing: bool = False):
    """A field of a parameter table. List defaults are given as tuples (the table is frozen).
    `dynamic_typing`: the value may come as an integer or a double (e.g. `real_time_factor:=4`)."""
    return field(default=default, metadata={"description": description, "valid": valid,
                                            "dynamic_typing": dynamic_typing})


def describe(table: type) -> dict[str, ParameterDescriptor]:
    """The ParameterDescriptor of every field, by parameter name."""
    out = {}
    for f in fields(table):
        valid = f.metadata.get("valid")
        out[f.name] = ParameterDescriptor(
            name=f.name, description=f.metadata.get("description", ""),
            additional_constraints=str(valid) if valid is not None else "",
            dynamic_typing=bool(f.metadata.get("dynamic_typing", False)))
    return out


def defaults(table: type) -> dict[str, Any]:
    """{name: default} of a table, lists as lists (what a parameter file would hold)."""
    return {f.name: list(f.default) if isinstance(f.default, tuple) else f.default
            for f in fields(table) if f.default is not MISSING}


def declare_parameters(node: Node, table: type[P]) -> P:
    """Declare every field of `table` on `node`, read the values back typed and check their ranges."""
    descriptors = describe(table)
    hints = typing.get_type_hints(table)
    values = {}
    for f in fields(table):
        default = list(f.default) if isinstance(f.default, tuple) else f.default
        raw = node.declare_parameter(f.name, default, descriptors[f.name]).value
        values[f.name] = _typed(f.name, raw, hints[f.name])
        valid = f.metadata.get("valid")
        if valid is not None:
            _check(f.name, values[f.name], valid)
    return table(**values)


def _typed(name: str, raw: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        (item, *_rest) = typing.get_args(hint)
        return tuple(item(v) for v in raw)
    if hint in (float, int, bool, str):
        try:
            return hint(raw)
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"parameter {name} = {raw!r} is not a {hint.__name__}",
                                 f"give a {hint.__name__}") from err
    raise TypeError(f"parameter table field {name}: unsupported type {hint}")


def _check(name: str, value: Any, valid: Range) -> None:
    items = value if isinstance(value, tuple) else (value,)
    for v in items:
        if not valid.admits(float(v)):
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            raise PayloadIdError(f"parameter {name} = {shown} is out of range: it must be {valid}",
                                 valid.hint or f"give a value {valid}")
