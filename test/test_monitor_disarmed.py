"""The disarmed monitor's record and the dating of a load found in it (payload_id_core.monitor.disarmed), on synthetic
residuals: the observer's filtered response (K = 50/s) to a load coming on in one step, two steps or a ramp, seen by six
joints, whitened noise of σ 1 on a held push's constant torque. A load is dated where it came, or not at all (None with
why) when the record cannot tell: never a confident wrong date."""

import re

import numpy as np
import pytest

from payload_id_core.monitor.disarmed import (
    MAX_SPACING_S,
    RECORD_ROWS,
    TRANSITION_MAX_S,
    DisarmedRecord,
    locate_load,
)

K = 50.0
DT = 0.01                        # the record's spacing: every 5th of 2 ms samples
SPAN_CHI2 = 4.0


def filtered(share: np.ndarray) -> np.ndarray:
    """The momentum observer's first-order response to a share of the load coming on, sampled every DT."""
    out, y, a = np.empty_like(share), 0.0, np.exp(-K * DT)
    for i, s in enumerate(share):
        y = a * y + (1.0 - a) * s
        out[i] = y
    return out


def residual(share, seed=0, direction=None, push=None):
    """(T, R, U, w, still, segment, settled) of 8 s at rest: a held push's constant torque, plus `share` (a function of
    t, 0 to 1) of a load whose filtered torque is U, plus noise of σ 1 per joint."""
    rng = np.random.default_rng(seed)
    T = np.arange(0.0, 8.0, DT)
    U = np.tile(np.array([5.0, -30.0, -40.0, -35.0, -3.0, 0.5]) if direction is None else direction, (T.size, 1))
    c = np.array([-12.0, -73.0, -104.0, -73.0, -0.5, 0.0])
    s = filtered(np.array([share(t) for t in T]))
    R = c + s[:, None] * U + rng.normal(0.0, 1.0, U.shape)
    if push is not None:
        R += filtered(np.array([push[0](t) for t in T]))[:, None] * push[1]
    n = T.size
    return T, R, U, np.ones(6), np.ones(n, bool), np.zeros(n, int), np.ones(n, bool)


def locate(args):
    return locate_load(*args, K, SPAN_CHI2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_step_is_dated_at_the_step(seed):
    located, why = locate(residual(lambda t: float(t >= 3.0), seed))
    assert located is not None and located.how == "one step", why
    assert 3.0 <= located.t <= 3.03, located


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_steps_are_dated_at_the_first(seed):
    """1 kg then 2 kg more, 1.2 s apart: a third of the load, then all of it. Before (one step of the whole load only)
    no step fitted and the date was the first move after the hand left."""
    located, why = locate(residual(lambda t: 0.0 if t < 3.0 else (1 / 3 if t < 4.2 else 1.0), seed))
    assert located is not None and located.how.startswith("a transition"), why
    assert 3.0 <= located.t <= 3.03, located


@pytest.mark.parametrize("ramp", [0.3, 0.5, 1.0])
def test_a_ramp_is_dated_at_its_start(ramp):
    """A weight coming on linearly over `ramp` s: dated where a tenth of it has come (the observer's lag in)."""
    located, why = locate(residual(lambda t: float(np.clip((t - 3.0) / ramp, 0.0, 1.0))))
    assert located is not None, why
    assert 3.0 <= located.t <= 3.0 + 0.1 * ramp + 0.04, located


def test_a_ramp_longer_than_the_transitions_searched_is_not_located():
    ramp = TRANSITION_MAX_S + 1.0
    located, why = locate(residual(lambda t: float(np.clip((t - 2.0) / ramp, 0.0, 1.0))))
    assert located is None and "neither one step" in why, (located, why)


@pytest.mark.parametrize("ramp", [0.0, 0.1, 0.3])
def test_a_hand_pressing_like_the_part_before_it_leaves_the_date_not_located(ramp):
    """At rest a hand pressing straight down on the flange with the part's weight puts the part's torque on the joints:
    pressed on at 2 s (ramped over `ramp`), let go over 1 s from 3 s, then the part put on at 4.5 s in one step. Where
    the press is a step too (within the observer's transient), the residual holds two steps that each fit the load, and
    the record cannot say which was the part: before, the one of least misfit was taken (the noise's choice); now
    neither is a date. A press ramped over 0.3 s is no step, and the part's step is preferred to it (a gripper's part
    comes on in a step; a transition is searched only where no step fits)."""
    def share(t):
        press = float(np.clip((t - 2.0) / max(ramp, 1e-9), 0.0, 1.0)) * float(np.clip(1.0 - (t - 3.0), 0.0, 1.0))
        return press + float(t >= 4.5)
    located, why = locate(residual(share))
    if ramp <= 0.1:
        assert located is None and why.startswith("steps of the implied load fit at"), (located, why)
        first, second = (float(x) for x in re.findall(r"at (\d+\.\d+) s", why))
        assert abs(first - 2.0) < 0.1 and abs(second - 4.5) < 0.1, why
    else:
        assert located is not None and 4.5 <= located.t <= 4.53, (located, why)


def test_a_push_across_the_load_is_no_transition():
    """A push ramped on across the load's direction (the wrist joints, where a flange load puts little) is not a load
    coming on, and the load's own step is dated."""
    push = np.array([0.0, 0.0, 0.0, 0.0, 25.0, -20.0])
    located, why = locate(residual(lambda t: float(t >= 5.0), push=(lambda t: float(np.clip((t - 2.0) / 0.5, 0, 1)),
                                                                     push)))
    assert located is not None and 5.0 <= located.t <= 5.03, (located, why)


def paused(T, R, U, w, still, segment, settled, at=5.0, off=0.5):
    """The record with the monitor switched off from `at` for `off` s: no rows, then a new segment whose observers start
    from zero (r₀ − F φ rises to the misfit over a few time constants), unsettled for 5 of them."""
    keep = (T < at) | (T >= at + off)
    T, R, U, still, segment, settled = T[keep], R[keep].copy(), U[keep], still[keep], segment[keep], settled[keep]
    after = T >= at
    segment[after] = 1
    R[after] *= filtered(np.ones(int(after.sum())))[:, None]
    settled[after & (T < at + off + 5.0 / K)] = False
    return T, R, U, w, still, segment, settled


def test_a_load_before_a_pause_is_dated_and_one_during_it_is_not():
    """Kept across a pause (a switch off and on cleared the record before, and a pick 1 s before it was dated at the
    first move after the hand left): a step before it is found. A load put on while the monitor was off is not dated at
    the pause, nor at the restarted observers' rise: a window never spans two segments or unsettled rows."""
    located, why = locate(paused(*residual(lambda t: float(t >= 3.0))))
    assert located is not None and 3.0 <= located.t <= 3.03, (located, why)
    located, why = locate(paused(*residual(lambda t: float(t >= 5.2))))
    assert located is None, (located, why)


def test_the_record_thins_rather_than_forgets_and_keeps_segments():
    """Held 100 s at 2 ms samples: the record keeps at most RECORD_ROWS rows, evenly spaced and no coarser than
    MAX_SPACING_S, from the disarmed span's start for as long as that allows (80 s), then the newest; a pause starts a
    segment; clearing (re-armed) forgets the span."""
    rec = DisarmedRecord(5)
    rec.disarmed(0.5)
    zero, F = np.zeros(6), np.zeros((6, 10))
    for k in range(50_000):
        t = 1.0 + 0.002 * k
        if k == 10_000:
            rec.pause()
        rec.add(t, zero, F, 0.0, True, 0.002)
        if k == 15_000:
            assert len(rec) <= RECORD_ROWS and rec.rows[0][0] < 1.1, (len(rec), rec.rows[0][0])
    T = np.array([r[0] for r in rec.rows])
    assert len(rec) <= RECORD_ROWS and np.allclose(np.diff(T), np.diff(T)[0]) and np.diff(T)[0] <= MAX_SPACING_S + 1e-9
    assert T[-1] > 100.5 and T[-1] - T[0] >= 75.0, (T[0], T[-1])
    assert {r[4] for r in rec.rows} == {1} and rec.since == 0.5
    rec.clear()
    assert len(rec) == 0 and np.isnan(rec.since) and rec.stride == 5


def test_an_event_not_located_says_its_span_not_a_date():
    """The log line, `payload-id monitor`'s print and events.yaml of a change whose time was not located give the span
    it lies in and the flag, never its earliest time as the date."""
    from payload_id_core.cli.monitor import event_dict  # noqa: PLC0415
    from payload_id_core.monitor import Event, EventKind  # noqa: PLC0415

    located = Event(EventKind.PICKED, 5.82, 9.87, 14.8, 3.006, 0.029)
    assert located.when_text == "at 5.820 s" and event_dict(located)["t_change_located"] is True
    e = Event(EventKind.PICKED, 4.63, 11.87, 16.0, 3.001, 0.029, reason="...; its time is not located within "
              "[4.630, 11.870] s, the monitor disarmed: ...", t_change_located=False)
    assert e.when_text == "between 4.630 and 11.870 s (its time not located)"
    said = event_dict(e)
    assert said["t_change_located"] is False and said["t_change"] == 4.63 and said["t_alarm"] == 11.87
    assert "not located within [4.630, 11.870] s" in said["reason"]
