"""Stretches of a sample stream that never arrived, found from the stamps of the samples that did.

A subscriber's KEEP_LAST queue overwrites its oldest samples when the reader stalls longer than the queue holds,
and tells nobody; a driver that pauses leaves the same trace. Either way the only evidence is in the stamps: a
step between consecutive samples far beyond the stream's own period. The threshold is the one the tracking-error
fits already treat as the end of a stretch of data (signals/tracking.GAP_FACTOR median intervals), so what is
reported as lost is exactly what no fit spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.signals.tracking import GAP_FACTOR

PERIOD_FROM = 10      # steps seen before the period (their median) is trusted to judge a step
PERIOD_STEPS = 500    # steps the period is taken from (a driver's rate does not change within a goal)


@dataclass(frozen=True)
class Hole:
    """No sample between `start` and `end` (s, the stamps on each side of it); `samples`: how many the stream's
    period puts in it."""

    start: float
    end: float
    samples: int


class StampHoles:
    """The holes of one stream fed in chunks of increasing stamps (push), judged against the median step of its
    first PERIOD_STEPS steps; steps seen before PERIOD_FROM of them are judged once the period is known."""

    def __init__(self, factor: float = GAP_FACTOR) -> None:
        self.factor = float(factor)
        self.holes: list[Hole] = []
        self._last: float | None = None
        self._steps: list[float] = []                    # the first PERIOD_STEPS steps: the period
        self._unjudged: list[tuple[float, float]] = []   # (from, to) stamps before the period was known
        self.period: float | None = None

    def push(self, t: np.ndarray) -> list[Hole]:
        """The holes the new stamps `t` (increasing, after the last pushed) reveal."""
        t = np.asarray(t, dtype=float).reshape(-1)
        if t.size == 0:
            return []
        edges = t if self._last is None else np.concatenate([[self._last], t])
        self._last = float(t[-1])
        steps = np.diff(edges)
        if len(self._steps) < PERIOD_STEPS:
            self._steps.extend(steps[: PERIOD_STEPS - len(self._steps)].tolist())
            if len(self._steps) >= PERIOD_FROM:
                self.period = float(np.median(self._steps))
        pairs = self._unjudged + list(zip(edges[:-1].tolist(), edges[1:].tolist()))
        if self.period is None or not self.period > 0.0:
            self._unjudged = pairs
            return []
        self._unjudged = []
        limit = self.factor * self.period
        found = [Hole(a, b, max(1, round((b - a) / self.period) - 1)) for a, b in pairs if b - a > limit]
        self.holes.extend(found)
        return found


def holes_inside(holes: list[Hole], t0: float, t1: float) -> list[tuple[float, float, Hole]]:
    """The holes overlapping the window [t0, t1] (s), each as (start, end) clipped to it and the hole."""
    return [(max(h.start, t0), min(h.end, t1), h) for h in holes if h.end > t0 and h.start < t1]


@dataclass(frozen=True)
class WindowCoverage:
    """What one stream delivered of a window [t0, t1] (s, its own stamps): `received` samples, and the stretches
    lost in it (holes: steps over the stream's GAP_FACTOR periods, clipped to the window). Complete: no stretch
    lost, so every part of the motion the window spans reached the estimator (shorter steps are scheduling jitter
    or a lone lost sample, which no fit treats as a gap either)."""

    t0: float
    t1: float
    received: int
    period: float | None                    # s, the stream's median step (None: too few steps to know it)
    lost_s: float                           # s of the window inside lost stretches
    longest_lost_s: float                   # s, the longest of them (0: none)
    stretches: int                          # how many

    @classmethod
    def of(cls, holes: list[Hole], t0: float, t1: float, received: int, period: float | None) -> WindowCoverage:
        inside = [b - a for a, b, _ in holes_inside(holes, t0, t1)]
        return cls(float(t0), float(t1), int(received), period, float(sum(inside)), float(max(inside, default=0.0)),
                   len(inside))

    @property
    def covered_share(self) -> float:
        """The share of the window's duration outside lost stretches (1.0 for an empty window)."""
        length = self.t1 - self.t0
        return 1.0 - self.lost_s / length if length > 0.0 else 1.0

    @property
    def complete(self) -> bool:
        return self.stretches == 0

    def to_dict(self) -> dict:
        return {"window": [self.t0, self.t1], "received": self.received, "period_s": self.period,
                "lost_s": self.lost_s, "longest_lost_s": self.longest_lost_s, "lost_stretches": self.stretches,
                "covered_share": self.covered_share, "complete": self.complete}


def describe_holes(holes: list[Hole], t0: float, t1: float, what: str = "joint states") -> str:
    """One sentence on the holes inside the window [t0, t1] (s; '' if none), where they fall in it: 'lost 0.62 s of
    joint states (309 samples) at 3.10 s of motion'."""
    inside = holes_inside(holes, t0, t1)
    if not inside:
        return ""
    # The samples a hole clipped by the window held, in proportion to the part of it inside.
    counts = [max(1, round(h.samples * (b - a) / (h.end - h.start))) for a, b, h in inside]
    total_s = sum(b - a for a, b, _ in inside)
    if len(inside) == 1:
        a, b, _ = inside[0]
        return f"lost {b - a:.2f} s of {what} ({counts[0]} samples) at {a - t0:.2f} s of motion"
    shown = ", ".join(f"{b - a:.2f} s at {a - t0:.2f} s" for a, b, _ in inside[:3])
    more = f" and {len(inside) - 3} more" if len(inside) > 3 else ""
    return (f"lost {total_s:.2f} s of {what} ({sum(counts)} samples) in {len(inside)} stretches: {shown}{more} "
            "of motion")
