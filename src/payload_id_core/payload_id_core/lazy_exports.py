"""A package face whose names load with their submodule on first use (PEP 562 module __getattr__).

For the packages whose submodules differ much in weight: `payload_id_core.signals` names both the light
recording types and the conditioning pipeline (scipy.interpolate, scipy.signal: up to ~1 s); a node that needs a
CommandedTrajectory must not pay for the pipeline because both are on the face. The package's __init__ maps each
name to its submodule and imports them again under TYPE_CHECKING, so type checkers see them typed
(test_architecture checks that the two agree).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Iterable[str]]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(__getattr__, __dir__) for `package`, whose public names `exports` lists by the submodule defining them."""
    where = {name: submodule for submodule, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        submodule = where.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        setattr(sys.modules[package], name, value)   # found once; later lookups are plain attributes
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
