"""floor.AlarmFloor.unseen_span on synthetic floors: the earliest row kept where the alarm could not see a load bounds
when it came, and a record blind from its oldest row says the load may have come earlier still."""

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


def test_a_blind_stretch_inside_the_record_starts_the_span_and_says_nothing_of_its_length():
    # seen 0-20 s (floor 0.2 kg), blind to 1 kg 20-25 s (the arm upright), seen again; the window at 35 s
    floor = fed(30.0, every(0.0, 20.0, 0.2) + every(20.0, 25.0, 5.0) + every(25.0, 40.0, 0.2))
    start, why = floor.unseen_span(35.0, 1.0)
    assert abs(start - 20.0) < 0.11
    assert "may have come earlier" not in why


def test_a_load_the_alarm_could_see_throughout_is_located():
    floor = fed(30.0, every(0.0, 40.0, 0.2))
    assert floor.unseen_span(35.0, 1.0) is None
    # ... and one it could not see only before the record's oldest row is too
    floor = fed(30.0, every(0.0, 5.0, 5.0) + every(5.0, 40.0, 0.2))
    assert floor.unseen_span(35.0, 1.0) is None


def test_a_record_blind_from_its_oldest_row_says_the_load_may_have_come_earlier():
    floor = fed(30.0, every(0.0, 25.0, 5.0) + every(25.0, 40.0, 0.2))
    start, why = floor.unseen_span(35.0, 1.0)
    assert 9.9 < start < 10.2                        # the oldest row kept (30 s before the last) ...
    assert "may have come earlier still" in why      # ... is no bound of the data's
    # a run shorter than the record is bounded by its start: nothing was on before the monitor watched
    start, why = fed(60.0, every(0.0, 25.0, 5.0) + every(25.0, 40.0, 0.2)).unseen_span(35.0, 1.0)
    assert start < 0.2 and "may have come earlier" not in why


def test_an_unwatched_gap_starts_the_span_at_its_last_row_before_it():
    floor = fed(30.0, every(0.0, 20.0, 0.2) + every(23.0, 40.0, 0.2))     # disarmed 20-23 s: no floor noted
    start, _ = floor.unseen_span(35.0, 1.0)
    assert 19.8 < start < 20.0
