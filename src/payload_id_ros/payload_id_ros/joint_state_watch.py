"""The payload_estimator's live joint states: drained from the sensor inbox (by the 50 Hz timer, and by a goal
thread before it judges them stale, so a late timer on a busy executor is never mistaken for a silent driver),
the last complete one kept, and judged live, complete and finite before and during a goal.

Joint states count as stale by the time their last one was taken; a goal waits for a live sample first (a
restarted driver's is not the dead one's last).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_ros.sensor_inbox import JointStateBatch, SensorInbox


@dataclass(frozen=True)
class LatestJointState:
    """The last complete joint state, in model order."""

    stamp: float
    q: np.ndarray
    effort: np.ndarray


class JointStateWatch:
    """`drain()` hands each batch to `on_batch` (under the watch's lock: one batch at a time, in order);
    `check()` raises unless the joint states are live."""

    def __init__(self, inbox: SensorInbox, now: Callable[[], float], stale_timeout: float,
                 on_batch: Callable[[JointStateBatch], None]) -> None:
        self.inbox, self._now, self.stale_timeout, self._on_batch = inbox, now, stale_timeout, on_batch
        self._lock = threading.Lock()              # the timer and the goal thread both drain
        self.latest: LatestJointState | None = None

    def drain(self) -> None:
        """Take the queued joint states."""
        with self._lock:
            js = self.inbox.drain_joint_states(self._now())
            if js is None:
                return
            self.latest = LatestJointState(float(js.t[-1]), js.q[-1], js.effort[-1])
            self._on_batch(js)

    def _state(self) -> tuple[float, str | None, LatestJointState | None]:
        """(s since the last complete sample was taken (inf: never), why the messages taken since made none, the
        last complete sample), drained first when the timer has not made any for `stale_timeout`."""
        if self._age() > self.stale_timeout:
            self.drain()
        with self._lock:
            return self._age(), self.inbox.problem, self.latest

    def _age(self) -> float:
        receipt = self.inbox.last_sample_receipt
        return math.inf if receipt is None else time.monotonic() - receipt

    def check(self, wait: float = 0.0) -> None:
        """Raise unless live, complete, finite joint states arrive. A goal first waits up to `wait` s for live
        ones: a driver (re)started just before is discovered by DDS only after ~0.5-2.5 s (measured on the
        loaded test machine), and until then the last sample held is the dead publisher's, whose age
        says nothing about the new one. Messages of other drivers (other joints) never count as live."""
        stale_timeout = self.stale_timeout
        deadline = time.monotonic() + wait
        age, problem, latest = self._state()
        while age > stale_timeout and time.monotonic() < deadline:
            time.sleep(0.02)
            age, problem, latest = self._state()
        if age > stale_timeout and problem is not None:
            since = "" if age == math.inf else f" (the last complete one arrived {age:.2f} s ago)"
            raise PayloadIdError(f"{problem}{since}", "publish every joint of the URDF, with finite values and "
                                 "increasing stamps, on the joint states topic")
        if age == math.inf or latest is None:
            raise PayloadIdError("no joint states received", "start the robot driver (or mock_hardware) so "
                                 "/joint_states is published")
        if age > stale_timeout:
            raise PayloadIdError(f"the last joint state arrived {age:.2f} s ago", "the robot driver stopped "
                                 "publishing /joint_states; restart it")
        lag = self._now() - latest.stamp
        if abs(lag) > stale_timeout:
            raise PayloadIdError(f"joint states are stamped {lag:.2f} s away from now (stale)",
                                 "check the driver's clock (use_sim_time) and that it publishes live samples")
        if not np.all(np.isfinite(latest.effort)):
            raise PayloadIdError("the joint states carry no efforts (NaN)",
                                 "check the robot driver; the identification needs torques (effort) of every joint")
