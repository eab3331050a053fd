"""tools/monitor_match.py: which true change a monitor event names, on synthetic event lists (bench/monitor.py's
figures are counted by it)."""

from monitor_match import match_event, match_events
from payload_id_core.monitor.detect import Event, EventKind

MATCH_S = 0.1


def event(kind: str, t_change: float, t_alarm: float | None = None, located: bool = True, dm: float = 0.5) -> Event:
    return Event(EventKind(kind), t_change, t_change + 0.02 if t_alarm is None else t_alarm, t_change + 2.0, dm, 0.05,
                 t_change_located=located)


def test_a_located_event_names_the_change_at_its_date_and_only_the_nearest():
    times = [10.0, 10.06, 20.0]
    assert match_event(event("picked", 10.05), times, MATCH_S).change == 1     # 0.01 s from 10.06, 0.05 s from 10.0
    assert match_event(event("picked", 10.02), times, MATCH_S).change == 0
    assert match_event(event("picked", 10.05), times, MATCH_S).candidates == 2
    assert match_event(event("placed", 19.95), times, MATCH_S).change == 2


def test_a_located_event_off_its_change_by_the_match_window_names_none_and_is_without_a_change():
    m = match_event(event("placed", 15.0), [10.0, 20.0], MATCH_S)
    assert m.change is None and not m.unlocated and m.without_a_change
    assert match_event(event("placed", 10.12), [10.0], MATCH_S).without_a_change
    assert match_event(event("placed", 10.099), [10.0], MATCH_S).change == 0


def test_an_unlocated_span_over_one_change_names_it():
    m = match_event(event("picked", 3.0, 9.0, located=False), [1.0, 5.0, 12.0], MATCH_S)
    assert (m.change, m.unlocated, m.candidates) == (1, False, 1)
    # its span starts match_s before its earliest time, as a located date's window does
    assert match_event(event("picked", 5.05, 9.0, located=False), [5.0], MATCH_S).change == 0


def test_an_unlocated_span_over_several_changes_is_unlocated_names_none_and_is_no_false_event():
    # seed 22 with the veto on: a place "not located within [0.61, 91.44] s" over 24 picks and places
    times = [0.16] + [0.7 + 3.8 * k for k in range(24)]      # the first before its span
    m = match_event(event("placed", 0.608, 91.44, located=False, dm=-0.919), times, MATCH_S)
    assert m.change is None and m.unlocated and m.candidates == 24
    assert not m.without_a_change


def test_an_unlocated_span_over_no_change_is_without_a_change():
    m = match_event(event("placed", 30.0, 40.0, located=False), [10.0, 50.0], MATCH_S)
    assert m.without_a_change and m.candidates == 0


def test_each_event_names_at_most_one_change_and_a_change_may_be_named_twice():
    times = [5.0, 5.05, 8.0]
    events = [event("contact", 4.98), event("picked", 4.98), event("placed", 7.0, 8.5, located=False),
              event("changed", 30.0)]
    matches = match_events(events, times, MATCH_S)
    assert [m.change for m in matches] == [0, 0, 2, None]
    assert [m.without_a_change for m in matches] == [False, False, False, True]
