"""Which true change each payload-monitor event names: the matching bench/monitor.py counts its figures by.

An event says when its change came: a date (`t_change`, located), or, not located (`Event.t_change_located` false), a
span from `t_change`, the earliest the change can have come, to `t_alarm`. It names at most one true change:
- located: the true change nearest its date, within `match_s`;
- not located: the one true change inside its span [t_change − match_s, t_alarm]. A span that holds two or more true
  changes (it is wider than the gap between them) does not say which of them the event is: the event is *unlocated*,
  names none of them, and is counted as such, never as several (bench/monitor.py's seed-22 place "not located within
  [0.61, 91.44] s" had been counted as naming 5 picks wrongly and 4 missed places);
- no true change at its date or in its span: an event *without a change* (a false event; a phantom load, if a load).
A true change may be named by several events (a contact, then the load it turned out to be).

Matched by time alone, not by sign or size: the kind and the mass are what the bench judges an event by (named
right, named wrong, a push called a load). Choosing among the changes in a span the one that agrees best with the
event's sign and size would grade the event against the change it is least wrong about, and a span over many changes
would always find one: an event that cannot say when is not credited with a date.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class DatedEvent(Protocol):
    t_change: float
    t_alarm: float


@dataclass(frozen=True)
class Match:
    """`change`: the index of the true change the event names, or None; `unlocated`: not located, and its span holds
    `candidates` ≥ 2 true changes (so `change` is None, and the event is no false event either)."""
    change: int | None
    unlocated: bool = False
    candidates: int = 0

    @property
    def without_a_change(self) -> bool:
        """No true change at its date or in its span."""
        return self.change is None and not self.unlocated


def match_event(event: DatedEvent, times: Sequence[float], match_s: float) -> Match:
    """The true change (times: each change's time, s) `event` names (module docstring)."""
    if getattr(event, "t_change_located", True):
        near = [(abs(event.t_change - t), i) for i, t in enumerate(times) if abs(event.t_change - t) < match_s]
        return Match(min(near)[1], candidates=len(near)) if near else Match(None)
    inside = [i for i, t in enumerate(times) if event.t_change - match_s <= t <= event.t_alarm]
    if len(inside) == 1:
        return Match(inside[0], candidates=1)
    return Match(None, unlocated=len(inside) > 1, candidates=len(inside))


def match_events(events: Sequence[DatedEvent], times: Sequence[float], match_s: float) -> list[Match]:
    """match_event for each event, in order."""
    return [match_event(e, times, match_s) for e in events]
