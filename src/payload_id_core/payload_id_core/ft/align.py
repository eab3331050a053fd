"""Put wrist F/T readings on the joint-state time base, refusing what cannot be trusted.

Readings over the sensor's range (saturated) and stretches where the sensor stopped publishing are
never interpolated over: the joint-state samples they touch are dropped and counted. Clocks that
do not overlap are an error, not an empty result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.recording import WrenchSamples


@dataclass
class AlignedWrench:
    keep: np.ndarray          # (N,) bool over the joint-state times given
    force: np.ndarray         # (M, 3) at the kept times
    torque: np.ndarray        # (M, 3)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)


def _range_vector(value, what: str) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.all(arr > 0):
        raise PayloadIdError(f"F/T sensor {what} range {value} is not positive",
                             f"give the sensor's rated {what} range (scalar or x, y, z), e.g. from its datasheet")
    return arr


def saturated(wrench: WrenchSamples, force_range=None, torque_range=None) -> np.ndarray:
    """(N,) True where any axis reaches the rated range (scalar or per-axis [x, y, z])."""
    sat = np.zeros(wrench.t.size, dtype=bool)
    fr, tr = _range_vector(force_range, "force"), _range_vector(torque_range, "torque")
    if fr is not None:
        sat |= np.any(np.abs(wrench.force) >= fr, axis=1)
    if tr is not None:
        sat |= np.any(np.abs(wrench.torque) >= tr, axis=1)
    return sat


def align_wrench(wrench: WrenchSamples, t, *, force_range=None, torque_range=None, max_gap: float | None = None,
                 min_overlap: float = 0.5, source: str = "recording") -> AlignedWrench:
    """Linear interpolation of the readings to the times `t` (the joint states).

    A time is dropped when it lies outside the readings, when the two readings around it are more
    than `max_gap` apart (default 3 × the median reading interval), or when either is saturated.
    The overlap of the two time spans must be at least `min_overlap` of the shorter span.
    """
    t = np.asarray(t, dtype=float)
    wt = wrench.t
    if wt.size < 2:
        raise PayloadIdError(f"{source}: only {wt.size} F/T reading(s)", "record the F/T sensor during the motion")
    overlap = min(t[-1], wt[-1]) - max(t[0], wt[0])
    shorter = min(t[-1] - t[0], wt[-1] - wt[0])
    if overlap <= 0 or overlap < min_overlap * shorter:
        raise PayloadIdError(
            f"{source}: F/T readings ({wt[0]:.3f} s to {wt[-1]:.3f} s) and joint states ({t[0]:.3f} s to "
            f"{t[-1]:.3f} s) do not overlap in time (overlap {max(overlap, 0.0):.3f} s)",
            "record both topics together and stamp them with the same clock")
    sat = saturated(wrench, force_range, torque_range)
    gap_max = 3.0 * float(np.median(np.diff(wt))) if max_gap is None else float(max_gap)

    inside = (t >= wt[0]) & (t <= wt[-1])
    lo = np.clip(np.searchsorted(wt, t, side="right") - 1, 0, wt.size - 2)
    hi = lo + 1
    gap_ok = (wt[hi] - wt[lo]) <= gap_max
    sat_ok = ~(sat[lo] | sat[hi])
    keep = inside & gap_ok & sat_ok
    w = np.clip((t - wt[lo]) / (wt[hi] - wt[lo]), 0.0, 1.0)[:, None]
    force = (1 - w) * wrench.force[lo] + w * wrench.force[hi]
    torque = (1 - w) * wrench.torque[lo] + w * wrench.torque[hi]
    counts = {
        "readings": int(wt.size),
        "readings_saturated": int(sat.sum()),
        "used": int(keep.sum()),
        "dropped_outside_readings": int((~inside).sum()),
        "dropped_saturated": int((inside & ~sat_ok).sum()),
        "dropped_reading_gap": int((inside & sat_ok & ~gap_ok).sum()),
    }
    notes: list[Note] = []
    if counts["readings_saturated"]:
        notes.append(Note(NoteCode.FT_SATURATED,
                          f"ft: {counts['readings_saturated']} saturated F/T readings (force range {force_range}, "
                          f"torque range {torque_range}); {counts['dropped_saturated']} samples next to them dropped"))
    if force_range is None and torque_range is None:
        notes.append(Note(NoteCode.FT_RANGE_UNKNOWN, "ft: sensor range not given, saturation not checked"))
    if counts["dropped_outside_readings"]:
        notes.append(Note(NoteCode.FT_OUTSIDE_READINGS_DROPPED,
                          f"ft: {counts['dropped_outside_readings']} joint samples outside the F/T readings dropped"))
    if counts["dropped_reading_gap"]:
        notes.append(Note(NoteCode.FT_READING_GAP_DROPPED,
                          f"ft: {counts['dropped_reading_gap']} joint samples in gaps > {gap_max * 1e3:.1f} ms "
                          "between F/T readings dropped"))
    return AlignedWrench(keep, force[keep], torque[keep], counts, notes)
