"""The alarm right after a change (issue 31, h118, h129; strict xfails), on the simulated UR10 cell (MuJoCo, `ur10`).

Right after a pick or a place the carried payload is its 0.1 s window's fit, whose covariance leaves the CoM along
gravity and the inertia to their priors; the allowance takes in F Σ Fᵀ of that fit, and the first move reads those
priors through F: the smallest mass step the alarm is sure to see (PayloadMonitor.recent_floor) rises from ~0.35 kg
to ~0.6 kg (median) and to several kg at worst for the second until the re-estimate replaces the fit, and a part put
on in that second is not heard. Two fixes were measured and not kept (design.md): the allowance bounded by the
re-estimate since the change (h118: 2.59 -> 0.55 kg here) and the alarm testing the residual against the fit of the
rows since the change, refreshed every 0.1 s (h129: 2.59 -> 0.47 kg, and the second part below heard 46 ms after it);
both added false events on bench/monitor.py's task, h129 three pushes called a load on its pushed task (seed 9) and
the real UR10e place no longer named. Until a fix holds those, these tests name the figures they miss. h140's alarm
against the since-change fit with its model-error term (MonitorSettings.since_change_alarm, off by default: one push
of 310 called a load on bench/monitor.py's pushed task, design.md) passes both for the pick, not the place's floor.
h206 measured both again on main at 7b2b49a (the same figures) and found what holds them (design.md): after the place
the floor is 5σ of the mass itself (0.10-0.14 kg in either reference, the elbow creeping at the move's start), and
seed 8's push called a load comes from a doubt kept by 5 g with the setting on, whose step-wide σ (1.85 kg) in the
allowance then hides a real place.
"""

import numpy as np
import pytest
from test_monitor_task_motion import FRAME, Task

from payload_id_core.monitor import EventKind, MonitorSettings, PayloadMonitor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


def pick_then_place(model) -> Task:
    """A 3 kg part picked at rest and carried through moves, then put down."""
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(3)
    task.carry(3.0)
    task.moves(3)
    task.carry(0.0)
    task.moves(3)
    return task


def second_part_after_pick(model) -> Task:
    """A 3 kg part picked at rest, and 0.8 s into the move that follows a 1 kg part more."""
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.start_move(1.5)
    task.rest(0.8)
    task.carry(4.0)
    task.rest(0.7)
    task.rest(0.6)
    task.moves(3)
    return task


def alarms_fed(monitor: PayloadMonitor, task: Task) -> list[float]:
    """The times of the alarms that opened a verdict window, the task fed in 20 ms blocks."""
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    alarms: list[float] = []
    for k in range(0, t.size, 10):
        monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10])
        if monitor._window is not None and (not alarms or monitor._window["t_alarm"] != alarms[-1]):
            alarms.append(monitor._window["t_alarm"])
    return alarms


def floors_fed(monitor: PayloadMonitor, task: Task):
    """(events, [(t, kg)]: the alarm's floor over the last half second after each 20 ms block)."""
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    events, floors = [], []
    for k in range(0, t.size, 10):
        events += monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
        floors.append((float(t[min(k + 9, t.size - 1)]), monitor.recent_floor()))
    return events, np.array(floors)


@pytest.mark.xfail(strict=True, reason="the alarm's floor in the second after a 3 kg pick is 2.59 kg (median; 4.0 "
                   "at worst) for 0.56 kg settled before it: the window fit's F Sigma F^T is in the allowance "
                   "(h118, h129)")
def test_the_alarm_hears_a_part_in_the_first_second_after_a_change(cell):
    """A 3 kg part picked at rest and carried through moves, then put down: in the second after each change (from
    the half second after its verdict window's end on) the floor's median stays below 1 kg, the smallest part
    bench/monitor.py counts, and within 2.5x the settled floor before the change; the pick and the place are named
    with their masses and nothing else is said."""
    model, robot = cell
    task = pick_then_place(model)
    events, floors = floors_fed(PayloadMonitor(model, robot, FRAME), task)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED], events
    for e, (t_true, _, _), sign in zip(events, task.truth, (1.0, -1.0)):
        assert abs(e.t_change - t_true) < 0.1 and abs(e.delta_mass - sign * 3.0) < 3.0 * e.delta_mass_std, e
    for t_true, _, _ in task.truth:
        before = floors[(floors[:, 0] > t_true - 1.0) & (floors[:, 0] <= t_true), 1]
        # recent_floor is the largest over the last half second: from 0.6 s on it holds no sample of the window
        after = floors[(floors[:, 0] > t_true + 0.6) & (floors[:, 0] <= t_true + 1.1), 1]
        settled, first = float(np.median(before)), float(np.median(after))
        # With the window fit's F Σ Fᵀ: 2.59 kg (at most 4.0) after the pick for 0.56 kg settled before it, 0.99 kg
        # after the place (0.36 before). Bounded by the re-estimate (h118, not kept): 0.55 kg and 0.71 kg; against the
        # fit of the rows since the change, refreshed every 0.1 s (h129, not kept): 0.47 kg (at most 0.52), 0.62 kg.
        assert first < 1.0 and first <= 2.5 * settled, (t_true, settled, first, float(np.max(after)))


@pytest.mark.xfail(strict=True, reason="a 1 kg part put on 0.8 s after a 3 kg pick, in the move after it, raises no "
                   "alarm (the window fit's F Sigma F^T in the allowance), and the 4 kg carried are not determined by "
                   "the task's end (3.98 kg, not settled)")
def test_a_second_part_in_the_first_second_after_a_pick_is_heard(cell):
    """A 3 kg part picked at rest, and 0.8 s into the move that follows a 1 kg part more: the alarm opens a window on
    it within 0.1 s, and the 4 kg carried are re-estimated within 3σ (h129's refreshed fit, not kept: its alarm 46 ms
    after the part, +4.033 ± 0.078 kg named at the pick's time as one change, 4.013 ± 0.022 kg carried)."""
    model, robot = cell
    task = second_part_after_pick(model)
    monitor = PayloadMonitor(model, robot, FRAME)
    alarms = alarms_fed(monitor, task)
    (t_first, _, _), (t_second, _, _) = task.truth
    assert any(0.0 <= a - t_first < 0.1 for a in alarms), alarms
    # Main: only the pick's alarm (4.71 s for 4.70 s); h129's refreshed fit: 5.55 s for the part at 5.50 s.
    assert any(0.0 <= a - t_second < 0.1 for a in alarms), alarms
    mass, cov = monitor.state.part
    assert monitor.state.determined and abs(mass[0] - 4.0) < 3.0 * np.sqrt(cov[0, 0]), (mass[0], cov[0, 0])


SINCE_CHANGE = MonitorSettings(since_change_alarm=True)


def test_with_the_since_change_alarm_the_floor_after_a_pick_is_that_of_a_part(cell):
    """MonitorSettings.since_change_alarm (h140, opt-in): the pick and the place named as without it, and in the second
    after the pick the floor's median below 1 kg and within 2.5x the settled floor (0.68 kg for 0.56 kg settled; the
    window fit's alone: 2.59 kg). After the place it stays the window fit's (0.99 kg for 0.36 kg settled)."""
    model, robot = cell
    task = pick_then_place(model)
    events, floors = floors_fed(PayloadMonitor(model, robot, FRAME, settings=SINCE_CHANGE), task)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED], events
    for e, (t_true, _, _), sign in zip(events, task.truth, (1.0, -1.0)):
        assert abs(e.t_change - t_true) < 0.1 and abs(e.delta_mass - sign * 3.0) < 3.0 * e.delta_mass_std, e
    t_pick = task.truth[0][0]
    before = floors[(floors[:, 0] > t_pick - 1.0) & (floors[:, 0] <= t_pick), 1]
    after = floors[(floors[:, 0] > t_pick + 0.6) & (floors[:, 0] <= t_pick + 1.1), 1]
    settled, first = float(np.median(before)), float(np.median(after))
    assert first < 1.0 and first <= 2.5 * settled, (settled, first, float(np.max(after)))


def test_with_the_since_change_alarm_a_second_part_after_a_pick_is_heard(cell):
    """MonitorSettings.since_change_alarm (h140, opt-in): the 1 kg part put on 0.8 s after the 3 kg pick is alarmed on
    within 0.1 s (5.57 s for 5.50 s) and the 4 kg carried re-estimated within 3σ (4.013 ± 0.022 kg)."""
    model, robot = cell
    task = second_part_after_pick(model)
    monitor = PayloadMonitor(model, robot, FRAME, settings=SINCE_CHANGE)
    alarms = alarms_fed(monitor, task)
    (t_first, _, _), (t_second, _, _) = task.truth
    assert any(0.0 <= a - t_first < 0.1 for a in alarms), alarms
    assert any(0.0 <= a - t_second < 0.1 for a in alarms), alarms
    mass, cov = monitor.state.part
    assert monitor.state.determined and abs(mass[0] - 4.0) < 3.0 * np.sqrt(cov[0, 0]), (mass[0], cov[0, 0])
