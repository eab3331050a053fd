"""Two parts within `persist_s` of each other, and the motion counted under a load while the monitor is disarmed (issue
31, h138), on the simulated UR10 cell (MuJoCo, `ur10` profile).

A second part put on 0.3-1 s after the first is a second step in the flange load. Where its window fits it (at rest),
the two window fits and the sum held afterwards name each part with its mass (PayloadMonitor._split_steps; main named
one `picked` +3.96 kg for 3 kg and 1 kg 0.5 s apart). Where no window fits it (in motion within the first second after
a pick the alarm is deaf: test_monitor_floor_after_change's strict xfail), the one event says it may be two parts.

Review finding B (h122, h130): `change.moved_s`, the motion a pending load is named on, grows while the monitor is
disarmed, when neither the re-estimate nor contact_wrench takes rows. Counted only at the re-arm on the carried fit
(h138) or only while armed (h130), figures were lost (design.md): the behaviour meant is a strict xfail here.
"""

import numpy as np
import pytest
from test_monitor_task_motion import FRAME, Task, push_for

from payload_id_core.monitor import EventKind, PayloadMonitor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


def two_parts(model, first: float, second: float, moving: bool) -> Task:
    """`first` kg picked, `second` kg more 0.5 s later at rest (or 0.8 s into the move after the pick), moves, the
    place of both, moves."""
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    if moving:
        task.carry(first)
        task.start_move(1.5)
        task.rest(0.8)
        task.carry(first + second)
        task.rest(1.3)
    else:
        task.rest(0.3)
        task.carry(first)
        task.rest(0.5)
        task.carry(first + second)
        task.rest(0.8)
    task.moves(3)
    task.carry(0.0)
    task.moves(3)
    return task


def fed(monitor: PayloadMonitor, task: Task, each=None):
    """(events, [(t, published PayloadState)]) in 20 ms blocks; `each(monitor, t)` after every block."""
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    events, published = [], []
    for k in range(0, t.size, 10):
        u = monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10])
        events += u.events
        t_block = float(t[min(k + 9, t.size - 1)])
        published += [(t_block, u.estimate)] if u.estimate is not None else []
        if each is not None:
            each(monitor, t_block)
    return events, published


@pytest.mark.parametrize("first, second", [(3.0, 1.0), (1.0, 1.0)])
def test_two_parts_at_rest_are_named_each_with_its_mass(cell, first, second):
    """Each pick named at its time with its own mass within 3σ (and 3σ ≤ a third of the part), the place of both with
    their sum; ~/payload between the second part and the naming covers what is carried within 2σ."""
    model, robot = cell
    task = two_parts(model, first, second, moving=False)
    events, published = fed(PayloadMonitor(model, robot, FRAME), task)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PICKED, EventKind.PLACED], events
    (t1, _, _), (t2, _, _), (t3, _, _) = task.truth
    for e, t_true, dm in zip(events, (t1, t2, t3), (first, second, -(first + second))):
        assert abs(e.t_change - t_true) < 0.1 and e.t_change_located, e
        assert abs(e.delta_mass - dm) < 3.0 * e.delta_mass_std and 3.0 * e.delta_mass_std < abs(dm) / 3.0, e
    assert "the first of two parts" in events[0].reason and "the second of two parts" in events[1].reason
    between = [(t, s) for t, s in published if t2 + 0.1 < t < events[0].t_verdict]
    assert between, published
    for _, state in between:
        est = state.to_estimate(FRAME)
        assert abs(est.mass - (first + second)) <= 2.0 * np.sqrt(est.covariance[0, 0]), (est.mass, est.covariance[0, 0])
        assert not est.converged


@pytest.mark.parametrize("first, second", [(3.0, 1.0), (1.0, 1.0)])
def test_a_second_part_unheard_in_motion_is_said_to_be_perhaps_two(cell, first, second):
    """In motion the second part raises no alarm (the deaf second): one `picked` with the sum (within 3σ), dated at the
    first part, whose reason says its window fitted less than is held, two parts or one, and whose σ takes in the
    difference; then the place of both."""
    model, robot = cell
    task = two_parts(model, first, second, moving=True)
    events, _ = fed(PayloadMonitor(model, robot, FRAME), task)
    # (1 + 1 kg: a false `changed` −0.030 ± 0.125 kg at 8.19 s, as on main, the one event of no pick or place.)
    loads = [e for e in events if e.kind in (EventKind.PICKED, EventKind.PLACED)]
    (t1, _, _), _, (t3, _, _) = task.truth
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events
    pick, place = loads
    assert abs(pick.t_change - t1) < 0.1 and abs(pick.delta_mass - (first + second)) < 3.0 * pick.delta_mass_std, pick
    assert "two parts or one" in pick.reason, pick.reason
    # Either may be the change (the first part alone, or both): its σ takes in the part unseen.
    assert pick.delta_mass_std > 0.5 * second, pick
    assert abs(place.t_change - t3) < 0.1 and abs(place.delta_mass + first + second) < 3.0 * place.delta_mass_std
    assert "two parts or one" not in place.reason


def test_one_part_is_not_said_to_be_two(cell):
    """A single 4 kg part picked at rest and one in motion: no `two parts` in any reason."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(4.0)
    task.moves(3)
    task.carry(0.0)
    task.moves(2)
    task.start_move(1.5)
    task.rest(0.8)
    task.carry(4.0)
    task.rest(1.3)
    task.moves(3)
    events, _ = fed(PayloadMonitor(model, robot, FRAME), task)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED, EventKind.PICKED], events
    for e, (t_true, _, _) in zip(events, task.truth):
        assert abs(e.t_change - t_true) < 0.1 and abs(abs(e.delta_mass) - 4.0) < 3.0 * e.delta_mass_std < 0.4, e
    assert not any("two parts" in e.reason for e in events), [e.reason for e in events]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review finding B: the motion under a pending load "
                   "grows while the monitor is disarmed. Counted only at the re-arm on the carried fit (h138, tried): "
                   "this test passes, but test_monitor_task_motion's pick after a push at rest gets a place dated into "
                   "the push, and bench/monitor.py's pushed task seed 7 finds 77 of 88 pushes above 30 N (main 81), "
                   "for picks and places 54 -> 58 of 68; counted only while armed (h130): task seed 5 found 69 -> 64 "
                   "of 70")
def test_motion_while_disarmed_counts_under_the_load_only_at_the_re_arm(cell):
    """Review finding B, the behaviour meant: a 3 kg pick at rest, and 0.3 s later a 100 N strike on the forearm as the
    next move begins (a contact: the monitor is disarmed in motion). While disarmed the motion under the pending pick
    (`change.moved_s`, what `_close_pending` names a load on) does not grow: neither the re-estimate nor
    contact_wrench takes rows then, and the fit is seen to survive that motion only when the residual comes back within
    its allowance on it (the re-arm), where that motion would be counted. The pick is named with its mass."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.rest(0.3)
    push_for(task, "forearm", np.array([0.0, 100.0, 0.0]), 0.1, 0.3, move_s=1.5)
    task.rest(1.6)
    task.moves(3)
    task.carry(0.0)
    task.moves(3)
    trace = []
    events, _ = fed(PayloadMonitor(model, robot, FRAME), task,
                    lambda m, t: trace.append((t, m._armed, m.change.moved_s, t < m._moving_until)))
    contact = [e for e in events if e.kind is EventKind.CONTACT]
    loads = [e for e in events if e.is_load_change]
    assert contact and [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events
    assert abs(loads[0].delta_mass - 3.0) < 3.0 * loads[0].delta_mass_std, loads[0]
    disarmed = [k for k in range(1, len(trace)) if not trace[k][1] and not trace[k - 1][1]]
    assert any(trace[k][3] for k in disarmed), "the strike did not disarm the monitor in motion"
    grown = [(trace[k][0], trace[k][2] - trace[k - 1][2]) for k in disarmed if trace[k][2] != trace[k - 1][2]]
    assert not grown, grown
