"""Recorded signals and their conditioning into regressor inputs (sampling, filtering, differentiation).

Callers outside the package import from here. The face is lazy (lazy_exports): the recording types are
light, the conditioning pipeline loads scipy.interpolate and, on its first low-pass (filtering.lowpass), scipy.signal
(~1 s with the scipy.stats it imports)."""

# ruff: noqa: F401 - the TYPE_CHECKING imports are the face's names, typed; __all__ lists them at run time
from typing import TYPE_CHECKING

from payload_id_core.lazy_exports import lazy_exports

_EXPORTS = {
    "align": ["aligned_pair"],
    "commanded": ["sample_commanded"],
    "conditioning": ["Signals", "conditioned_signals"],
    "effort": ["EffortUnit", "check_drive_gains"],
    "recording": ["CommandedTrajectory", "JointSamples", "Recording", "WrenchSamples"],
    "stamp_holes": ["WindowCoverage"],
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
if TYPE_CHECKING:  # the same names, for type checkers (test_architecture checks that the two agree)
    from payload_id_core.signals.align import aligned_pair
    from payload_id_core.signals.commanded import sample_commanded
    from payload_id_core.signals.conditioning import Signals, conditioned_signals
    from payload_id_core.signals.effort import EffortUnit, check_drive_gains
    from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples
    from payload_id_core.signals.stamp_holes import WindowCoverage
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
