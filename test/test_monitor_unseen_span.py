"""floor.AlarmFloor.unseen_span on synthetic floors: a load the alarm could not see at some time after the payload
before it was named or confirmed (`since`, PayloadState.since) is not located from `since` on, not from a row of the
floor (a row where the floor was below the load does not exclude it either); one the alarm could see throughout is
located."""

import numpy as np

from payload_id_core.monitor.floor import AlarmFloor

RECENT_S, LOOKBACK_S = 0.5, 0.1


def fed(record_s: float, floors: list[tuple[float, float]]) -> AlarmFloor:
    """A one-joint floor record: each (t, kg) noted as a sample whose floor is that (σ / |F_m| with ν = 1)."""
    floor = AlarmFloor(RECENT_S, record_s, LOOKBACK_S)
    for t, kg in floors:
        F = np.zeros((1, 10))
        F[0, 0] = 1.0
        floor.note(t, F, np.ones(1), np.ones(1), np.array([kg]))
    return floor


def every(t0: float, t1: float, kg: float, dt: float = 0.1) -> list[tuple[float, float]]:
    return [(float(t), kg) for t in np.arange(t0, t1, dt)]


def test_a_blind_stretch_after_the_last_confirmation_dates_the_load_from_that_confirmation():
    # seen 0-20 s (floor 0.2 kg), blind to 1 kg 20-25 s (the arm upright), seen again; the payload before the change
    # named at 12 s; the window at 35 s. Before: the span started at the blind stretch (20 s), as if the load could
    # not have come while the floor was below it.
    floor = fed(30.0, every(0.0, 20.0, 0.2) + every(20.0, 25.0, 5.0) + every(25.0, 40.0, 0.2))
    start, why = floor.unseen_span(35.0, 1.0, since=12.0)
    assert start == 12.0
    assert "not located after 12.000 s" in why and "cannot have come before 12.000 s" in why


def test_a_blind_stretch_reaching_back_past_the_last_confirmation_starts_at_the_confirmation():
    # blind from the oldest row kept (10 s) to 25 s; the payload before confirmed at 15 s. Before: [10 s, ...] and "may
    # have come earlier still"; a load before 15 s would have been in that payload.
    floor = fed(30.0, every(0.0, 25.0, 5.0) + every(25.0, 40.0, 0.2))
    start, why = floor.unseen_span(35.0, 1.0, since=15.0)
    assert start == 15.0 and "earlier still" not in why


def test_a_load_the_alarm_could_see_throughout_is_located():
    floor = fed(30.0, every(0.0, 40.0, 0.2))
    assert floor.unseen_span(35.0, 1.0, since=0.0) is None
    # ... and one it could not see only before the payload before it was confirmed, too
    floor = fed(30.0, every(0.0, 20.0, 5.0) + every(20.0, 40.0, 0.2))
    assert floor.unseen_span(35.0, 1.0, since=22.0) is None
    # ... or only before the rows kept (30 s): the record answers whether it can have gone unseen, for its length
    floor = fed(30.0, every(0.0, 5.0, 5.0) + every(5.0, 40.0, 0.2))
    assert floor.unseen_span(35.0, 1.0, since=0.0) is None


def test_an_unwatched_gap_after_the_confirmation_unlocates_the_load_from_it():
    floor = fed(30.0, every(0.0, 20.0, 0.2) + every(23.0, 40.0, 0.2))     # disarmed 20-23 s: no floor noted
    start, _ = floor.unseen_span(35.0, 1.0, since=8.0)
    assert start == 8.0


def test_a_monitor_restarted_after_the_last_sample_watched_is_blind_in_between():
    # a restart: the saved payload last watched at 3 s, this monitor's first sample at 10 s; seen throughout since
    floor = fed(30.0, every(10.0, 40.0, 0.2))
    start, _ = floor.unseen_span(35.0, 1.0, since=3.0)
    assert start == 3.0
    # started on its own first sample: nothing unwatched
    assert floor.unseen_span(35.0, 1.0, since=10.0) is None


def test_a_pause_right_after_the_confirmation_unlocates_the_load_from_it():
    floor = fed(30.0, every(0.0, 20.0, 0.2) + every(23.0, 40.0, 0.2))     # paused 20-23 s, confirmed at 20.5 s
    start, _ = floor.unseen_span(35.0, 1.0, since=20.5)
    assert start == 20.5
