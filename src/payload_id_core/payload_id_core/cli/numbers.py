"""argparse types for numeric flags: a finite number inside its range, or a one-line usage error.

`type=float` alone lets `nan`, `inf` and negative values through, and they then fail deep inside a
command (or, worse, pass). Each flag states its range here, so argparse refuses it before any work:
"payload-id excite: error: argument --duration: ...", exit 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def finite(text: str) -> float:
    """A finite float ('nan', 'inf' and words refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def number(*, above: float | None = None, at_least: float | None = None, at_most: float | None = None,
           unit: str = "") -> Callable[[str], float]:
    """A finite float with `value > above`, `value >= at_least` and `value <= at_most` (those given)."""
    suffix = f" {unit}" if unit else ""

    def parse(text: str) -> float:
        value = finite(text)
        if above is not None and not value > above:
            bound = "positive" if above == 0 else f"above {above:g}{suffix}"
            raise argparse.ArgumentTypeError(f"{text}{suffix} is not {bound}")
        if at_least is not None and value < at_least:
            raise argparse.ArgumentTypeError(f"{text}{suffix} is below {at_least:g}{suffix}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"{text}{suffix} is above the limit of {at_most:g}{suffix}")
        return value
    return parse


def integer(*, at_least: int | None = None, at_most: int | None = None) -> Callable[[str], int]:
    """An int within [at_least, at_most] (those given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if at_least is not None and value < at_least:
            raise argparse.ArgumentTypeError(f"{value} is below {at_least}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"{value} is above the limit of {at_most}")
        return value
    return parse


def positive_list(*, at_most: float, unit: str = "") -> Callable[[str], list[float]]:
    """'k' or 'k1,k2,...': finite numbers in (0, at_most] (how many is the receiver's to check: it knows the
    joints)."""
    one = number(above=0, at_most=at_most, unit=unit)

    def parse(text: str) -> list[float]:
        return [one(v) for v in text.split(",")]
    return parse


def finite_list(text: str) -> list[float]:
    """'a,b,...': finite numbers (how many is the receiver's to check)."""
    return [finite(v) for v in text.split(",")]
