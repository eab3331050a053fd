"""The supervisor's heartbeat on an excitation goal: the payload_estimator, while an Excite goal of its own is running,
publishes a std_msgs/Header naming that goal (frame_id = the goal's id in hex) every HEARTBEAT_PERIOD s on
`<excite action>/heartbeat`; the excitation player, for a goal that has been named so (it is supervised), stops the
arm and aborts the goal once the heartbeat is older than SUPERVISOR_SILENCE s. A SIGKILLed estimator cannot cancel
its goal, and DDS only notices its death after the participant's lease (Fast DDS: ~20 s): without this the arm
played the rest of its excitation. A goal nobody names (someone calling Excite by hand) is never stopped by it.

Judged on the receiver's monotonic clock (the stamp is informative only: sim time or a clock jump must not stop
an arm)."""

from __future__ import annotations

import threading
import time

HEARTBEAT_PERIOD = 0.1      # s between the supervisor's beats
# s without a beat before a supervised goal's arm is stopped: ten periods, since the beats share the estimator's
# single-threaded executor and a loaded machine (a CI runner beside a busy worker) can stall it for a few hundred ms
# (a false stop aborts a healthy identification); short enough that the arm is at rest within 2 s of the
# supervisor's death (this, the player's check every 0.1 s, its decelerating stop of ~0.3 s).
SUPERVISOR_SILENCE = 1.0
FORGET_AFTER = 10.0         # s a beat of a goal the player is not executing is kept


def heartbeat_topic(excite_action: str) -> str:
    """The heartbeat's topic for the Excite action `excite_action` (the player subscribes to `~/excite/heartbeat`)."""
    return f"{excite_action.rstrip('/')}/heartbeat"


def goal_key(uuid) -> str:
    """An action goal's id (unique_identifier_msgs/UUID or its 16 bytes) as the heartbeat names it."""
    return bytes(getattr(uuid, "uuid", uuid)).hex()


class SupervisorBeats:
    """The player's side: when each goal was last named by its supervisor (monotonic s). The supervisor names a goal
    before sending it (its id is chosen by the client), so a supervisor killed before the player's acceptance reached
    it still leaves a supervised goal. Thread-safe: beats arrive on the executor, the goal thread reads."""

    def __init__(self, silence: float = SUPERVISOR_SILENCE, clock=time.monotonic) -> None:
        self.silence, self._clock = silence, clock
        self._last: dict[str, float] = {}       # goal -> its last beat
        self._running: set[str] = set()         # goals the player executes: kept however old their last beat
        self._lock = threading.Lock()

    def running(self, key: str) -> None:
        """The player executes goal `key`."""
        with self._lock:
            self._running.add(key)

    def beat(self, key: str) -> None:
        now = self._clock()
        with self._lock:
            self._last[key] = now
            # Beats of goals not (or no longer) running are kept FORGET_AFTER s: a goal about to start, a late beat.
            self._last = {k: t for k, t in self._last.items() if k in self._running or now - t < FORGET_AFTER}

    def silent_for(self, key: str) -> float | None:
        """s since `key`'s last beat; None when the goal was never named (nobody supervises it)."""
        with self._lock:
            last = self._last.get(key)
        return None if last is None else self._clock() - last

    def lost(self, key: str) -> float | None:
        """The silence (s) when `key` is supervised and its supervisor has been silent beyond the bound, else None."""
        silent = self.silent_for(key)
        return silent if silent is not None and silent > self.silence else None

    def forget(self, key: str) -> None:
        """The goal has ended."""
        with self._lock:
            self._running.discard(key)
            self._last.pop(key, None)
