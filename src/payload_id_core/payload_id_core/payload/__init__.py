"""Payload identification: the payload Jacobian, every method of DESIGN.md behind one interface, the identify
session, its result file.

Callers outside the package import from here. The face is lazy (lazy_exports): a node that draws the markers must
not load the identify session, which pulls in every method, the F/T sensor and the signal conditioning."""

# ruff: noqa: F401 - the TYPE_CHECKING imports are the face's names, typed; __all__ lists them at run time
from typing import TYPE_CHECKING

from payload_id_core.lazy_exports import lazy_exports

_EXPORTS = {
    "goal_outcome": ["FinishedGoal", "GoalOutcome"],
    "markers": ["COM_SPHERE_DIAMETER", "LABEL_SIZE", "marker_geometry", "mass_label"],
    "mass_limit": ["KnownMassLimit", "MassLimit", "known_mass_limit", "rated_payload"],
    "method_names": ["PayloadMethod"],
    "methods": ["METHOD_SPECS", "ONLINE_SPECS", "identify_payload", "method_spec"],
    "online": ["ConvergenceRule", "OnlinePayloadEstimator"],
    "options": ["PayloadOptions"],
    "priors": ["PayloadPrior"],
    "result_file": ["MonitorCarried", "ResultUnreadable", "SavedResult", "read_result", "write_result"],
    "session": ["IdentificationRun", "goal_options", "goal_prior"],
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
if TYPE_CHECKING:  # the same names, for type checkers (test_architecture checks that the two agree)
    from payload_id_core.payload.goal_outcome import FinishedGoal, GoalOutcome
    from payload_id_core.payload.markers import COM_SPHERE_DIAMETER, LABEL_SIZE, marker_geometry, mass_label
    from payload_id_core.payload.mass_limit import KnownMassLimit, MassLimit, known_mass_limit, rated_payload
    from payload_id_core.payload.method_names import PayloadMethod
    from payload_id_core.payload.methods import METHOD_SPECS, ONLINE_SPECS, identify_payload, method_spec
    from payload_id_core.payload.online import ConvergenceRule, OnlinePayloadEstimator
    from payload_id_core.payload.options import PayloadOptions
    from payload_id_core.payload.priors import PayloadPrior
    from payload_id_core.payload.result_file import (
        MonitorCarried,
        ResultUnreadable,
        SavedResult,
        read_result,
        write_result,
    )
    from payload_id_core.payload.session import IdentificationRun, goal_options, goal_prior
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
