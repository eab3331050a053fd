"""The change the monitor adopted on its settled payload and re-estimates until it is named or taken back.

A window's fit or a doubt's implied load is adopted at once (monitor.PayloadMonitor._decide, _put_in_doubt), and what
the monitor knows of that change until it is decided lives here, as one object: `PayloadMonitor._snapshot` copies it
whole with the rest of what an adoption replaces, and a take-back restores it whole. The marks keyed to a pending load
(`load_key`: its judgement up to a contact, its early naming) are the monitor's, outside this object: they outlive a
snapshot restored, by design.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.monitor.detect import Event
from payload_id_core.monitor.state import PayloadState


def load_key(event: Event) -> tuple[float, float]:
    """What identifies a pending load across snapshots (deep copies): its change time and Δm."""
    return float(event.t_change), float(event.delta_mass)


@dataclass
class AdoptedChange:
    """The change being re-estimated (or the last one, once decided: `before` stays what a take-back goes back to)."""

    before: PayloadState                 # the payload settled before the change: what to go back to if it is no load
    started: float = float("nan")        # s: when it began (a doubt's: the earliest it can have come, if not located)
    unlocated: str = ""                  # why `started` is only the earliest it can have come ('': located)
    moved_s: float = 0.0                 # s of motion since it began
    unnamed: float | None = None         # t_alarm of the change while it is not named (all are, at first)
    pending: Event | None = None         # the load its window fitted (None: none), named once it holds
    # (t_change, t_alarm, Δm) of a later window's load of the other sign taken into it: the change named is then the net
    # of two steps, whose times are not one (steps.two_steps)
    taken_in: tuple[float, float, float] | None = None
    # A later window's load of the same sign taken into it: a second part within `persist_s` of the first, or one load
    # fitted in two windows; named apart where the data tell the two steps (PayloadMonitor._named_steps)
    second_step: Event | None = None
    # (t_change, Δm, moved_s then) of a window's load fitted on a doubt not yet decided (pending_start)
    pending_on_doubt: tuple[float, float, float] | None = None
    doubt_mass: float = float("nan")     # kg: the fit's mass a doubt implied (PayloadMonitor._put_in_doubt)
    doubt_mass_std: float = float("nan")  # kg: that fit's own σ (not the step-wide σ the state carries)

    def begin(self, before: PayloadState, started: float, unlocated: str, moved_s: float, unnamed: float | None,
              pending: Event | None) -> None:
        """A change adopted on the settled payload `before`: what a change before it left pending goes."""
        self.before, self.started, self.unlocated, self.moved_s = before, started, unlocated, moved_s
        self.unnamed, self.pending, self.taken_in, self.second_step = unnamed, pending, None, None

    def end(self) -> None:
        """Decided (named, a contact, or taken back): nothing is pending, and the next change is one of its own."""
        self.unnamed, self.pending = None, None

    def take_in(self, event: Event | None, dated: float, t_alarm: float, in_doubt: bool) -> None:
        """A later window's load `event` (dated `dated`, alarmed at `t_alarm`) while the change is re-estimated: the
        load pending if none is; else a step of the other sign (the way back, or a load the motion has not yet told
        from a push's release), whose net with the pending one is named (steps.two_steps); else a second step of the
        same sign within `persist_s` (a second part, or one load, a push, fitted in two windows), taken in as before (a
        push's release is still the way back from both) and named apart where the data tell the two steps."""
        if event is None:
            return
        if self.pending is None:
            self.pending = event
            if in_doubt:
                self.pending_on_doubt = (float(event.t_change), float(event.delta_mass), self.moved_s)
        elif event.is_load_change and self.taken_in is None and \
                np.sign(event.delta_mass) != np.sign(self.pending.delta_mass):
            self.taken_in = (dated, t_alarm, float(event.delta_mass))
        elif event.is_load_change and self.second_step is None and self.taken_in is None and \
                self.pending.is_load_change and np.sign(event.delta_mass) == np.sign(self.pending.delta_mass):
            self.second_step = event

    def keyed(self, mark: tuple | None) -> tuple | None:
        """`mark` if it was made for the load pending now (its first two entries load_key's), else None."""
        if mark is None or self.pending is None or tuple(mark[:2]) != load_key(self.pending):
            return None
        return mark

    def on_doubt(self) -> tuple[float, float, float] | None:
        """(t_change, Δm, motion then) of the pending load when a window fitted it on a doubt not yet decided."""
        mark, pending = self.pending_on_doubt, self.pending
        if mark is None or pending is None or (mark[0], mark[1]) != (float(pending.t_change),
                                                                     float(pending.delta_mass)):
            return None
        return mark

    def pending_start(self) -> float:
        """When the pending load came, for `persist_s`: the change's start, or, for a window's load fitted on a doubt,
        that window's own change. The doubt's start is no date of it: a 121 N forearm push ramped into a move, fitted
        +1.24 kg by its first window 5.7 s after a doubt began, was closed by its own ramp's next window 0.15 s later
        as having held, and named `picked` +2.50 kg with the doubt's mass (bench/monitor.py's pushed task, seed 9)."""
        mark = self.on_doubt()
        return self.started if mark is None else max(self.started, mark[0])

    def moved_under_pending(self) -> float:
        """s of motion under the pending load (as pending_start: from its own window when fitted on a doubt)."""
        mark = self.on_doubt()
        return self.moved_s if mark is None else self.moved_s - mark[2]

    def dating(self, since: float) -> tuple[bool, str]:
        """(located, what to add to the reason) for an event dated `since`: dated from a change whose time was not
        located (PayloadMonitor._put_in_doubt), it says so."""
        if self.unlocated and since == self.started:
            return False, f"; {self.unlocated}"
        return True, ""
