"""Counts of dropped input messages, by reason, with a throttled warning naming the problem.

A bad publisher can send hundreds of malformed messages a second: the node warns once per reason and
THROTTLE seconds (with the running count), never once per message, and a goal reports how many of its
samples were dropped from the counts' difference over the goal.
"""

from __future__ import annotations

import time
from collections import Counter

from payload_id_ros.joint_state_merge import DropReason

THROTTLE = 5.0        # s between two warnings of one reason


class DropCounter:
    """Dropped messages of one topic: `count(reason)` for each, `snapshot()` / `since()` for a goal's share."""

    def __init__(self, logger, topic: str, fix: str, throttle: float = THROTTLE):
        self.logger = logger
        self.topic = topic
        self.fix = fix
        self.throttle = throttle
        self.counts: Counter[DropReason] = Counter()
        self._warned: dict[DropReason, float] = {}

    def count(self, reason: DropReason) -> None:
        self.counts[reason] += 1
        now = time.monotonic()
        if now - self._warned.get(reason, -float("inf")) >= self.throttle:
            self._warned[reason] = now
            self.logger.warn(f"dropped a {self.topic} message: {reason.description} ({self.counts[reason]} so far; "
                             f"{self.fix})")

    def snapshot(self) -> Counter[DropReason]:
        return Counter(self.counts)

    def since(self, snapshot: Counter[DropReason]) -> Counter[DropReason]:
        """Drops counted after `snapshot` was taken, by reason (reasons with none left out)."""
        return Counter({r: c - snapshot.get(r, 0) for r, c in self.counts.items() if c > snapshot.get(r, 0)})


def describe(counts: Counter[DropReason]) -> str:
    """'12 (ragged 3, non_finite 9)': the total and its split by reason."""
    parts = ", ".join(f"{r.value} {c}" for r, c in sorted(counts.items(), key=lambda rc: rc[0].value))
    return f"{sum(counts.values())} ({parts})"
