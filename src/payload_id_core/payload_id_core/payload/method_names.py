"""The names of the payload methods (DESIGN.md), apart from their implementations.

A module of its own so that the online estimators, the nodes and the CLI can name a method without
importing every method (payload.methods imports the online estimator: importing it back would cycle).
"""

from __future__ import annotations

from enum import Enum

from payload_id_core.errors import parse_choice


class PayloadMethod(str, Enum):
    """Every payload method; the value is the name users type and payload.yaml stores."""

    DIFFERENCE_RLS = "difference-rls"   # Xu 2024 Algorithm 1
    DIRECT_RLS = "direct-rls"
    KHALIL_1 = "khalil-1"               # Khalil 2007 §V-A-1..4
    KHALIL_2 = "khalil-2"
    KHALIL_3 = "khalil-3"
    KHALIL_4 = "khalil-4"
    GAZ_STATIC = "gaz-static"           # Gaz 2017 §V
    GAZ_DTAU = "gaz-dtau"               # Gaz 2017 eq. 26 + 28
    FT = "ft"                           # Duan 2022 / Atkeson 1986, wrist F/T sensor

    def __str__(self) -> str:
        # argparse and f-strings show the name users type, not "PayloadMethod.KHALIL_1".
        return self.value

    @classmethod
    def parse(cls, name: PayloadMethod | str) -> PayloadMethod:
        """The method called `name`; an unknown name is bad input naming the known ones."""
        return parse_choice(cls, name, "payload method")
