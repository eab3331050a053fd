"""The change the payload monitor adopted and re-estimates, one object (monitor.adopted_change.AdoptedChange, h164).

What a window's later loads do to the pending one (take_in), when the pending load counts from (pending_start,
moved_under_pending), that a snapshot of the monitor holds the change whole: restored, then changed by the monitor,
it can be restored again unchanged (the take-back restores `_change_from`, the same snapshot as `_adopted_from`); and
that a window's fit taken back by the contact right after it (_decide's undo) leaves a doubt raised before it as it was.
"""

import numpy as np

from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.monitor import MonitorUpdate, PayloadMonitor
from payload_id_core.monitor.adopted_change import AdoptedChange, load_key
from payload_id_core.monitor.detect import Event, EventKind
from payload_id_core.monitor.state import PayloadState


def load(t: float, dm: float) -> Event:
    kind = EventKind.PICKED if dm > 0 else EventKind.PLACED
    return Event(kind, t, t + 0.02, t + 0.2, dm, 0.05, np.zeros(10), "a window's load")


def settled(mass: float) -> PayloadState:
    phi = np.zeros(10)
    phi[0] = mass
    return PayloadState(phi, np.eye(10) * 1e-4, True, float("nan"), 0.0)


def test_later_windows_loads_are_taken_into_the_pending_one_by_their_sign():
    change = AdoptedChange(settled(0.0))
    change.begin(settled(0.0), 10.0, "", 0.0, 10.02, load(10.0, 2.0))
    change.take_in(load(10.3, 1.0), 10.3, 10.32, in_doubt=False)          # same sign: a second step
    assert change.second_step is not None and change.second_step.delta_mass == 1.0 and change.taken_in is None
    change.take_in(load(10.6, -2.9), 10.6, 10.62, in_doubt=False)         # the other sign: the net is named
    assert change.taken_in == (10.6, 10.62, -2.9)
    change.take_in(load(10.8, -0.5), 10.8, 10.82, in_doubt=False)         # one of each is kept: the first
    assert change.taken_in == (10.6, 10.62, -2.9) and change.pending.delta_mass == 2.0
    # A new change on a settled payload starts over (the doubt's mark stays: it is keyed to the load it was made for).
    change.pending_on_doubt = (9.0, 1.0, 0.5)
    change.begin(settled(3.0), 12.0, "", 0.4, 12.02, None)
    assert (change.pending, change.taken_in, change.second_step) == (None, None, None)
    assert change.moved_s == 0.4 and change.before.phi[0] == 3.0 and change.pending_on_doubt == (9.0, 1.0, 0.5)


def test_a_load_fitted_on_a_doubt_counts_from_its_own_window():
    """A window's load fitted on a doubt not yet decided: `persist_s` and the motion under it count from that window's
    change, not from the doubt's start (a 121 N push ramped into a move was named `picked` with the doubt's mass,
    bench/monitor.py's pushed task seed 9)."""
    change = AdoptedChange(settled(0.0))
    change.begin(settled(0.0), 20.0, "", 1.5, 21.0, None)                 # a doubt began at 20.0 s, 1.5 s moved
    change.moved_s = 3.0
    change.take_in(load(23.0, 1.2), 23.0, 23.02, in_doubt=True)
    assert change.pending_on_doubt == (23.0, 1.2, 3.0)
    change.moved_s = 3.8
    assert change.pending_start() == 23.0 and np.isclose(change.moved_under_pending(), 0.8)
    assert change.keyed((23.0, 1.2, "judged")) == (23.0, 1.2, "judged") and change.keyed((22.0, 1.2)) is None
    change.end()
    assert change.pending is None and change.unnamed is None and change.keyed((23.0, 1.2)) is None
    change.pending = load(24.0, 1.2)                    # another load: the doubt's mark is not its own
    assert change.pending_start() == 20.0 and change.moved_under_pending() == 3.8
    assert load_key(change.pending) == (24.0, 1.2)


def test_an_event_dated_from_a_change_not_located_says_so():
    change = AdoptedChange(settled(0.0))
    change.begin(settled(0.0), 5.0, "its time is not located within [5.000, 7.000] s", 0.0, 7.0, None)
    assert change.dating(5.0) == (False, "; its time is not located within [5.000, 7.000] s")
    assert change.dating(6.0) == (True, "")


def test_a_snapshot_restored_then_changed_in_place_restores_the_same_change_again(ur10_cell_robot):
    model, robot = ur10_cell_robot
    monitor = PayloadMonitor(model, robot, model.payload_frame(None))
    monitor.change.begin(monitor.state, 1.0, "", 0.2, 1.02, load(1.0, 2.0))
    monitor.change.doubt_mass, monitor.change.doubt_mass_std = 2.1, 0.3
    snap = monitor._snapshot()
    for moved in (0.7, 1.9):
        monitor._restore(snap)
        assert load_key(monitor.change.pending) == (1.0, 2.0) and monitor.change.moved_s == 0.2
        assert (monitor.change.doubt_mass, monitor.change.doubt_mass_std) == (2.1, 0.3)
        monitor.change.moved_s += moved                 # what _step does, in place
        monitor.change.take_in(load(1.3, -2.0), 1.3, 1.32, in_doubt=False)
        monitor.change.end()
    assert snap["change"].moved_s == 0.2 and snap["change"].taken_in is None and snap["change"].pending is not None


def test_a_window_fit_taken_back_on_a_doubt_leaves_the_doubt_with_the_mass_it_implied(ur10_cell_robot):
    """_decide's undo (a window's fit whose next window, starting within one observer time constant of its end, is a
    contact: one disturbance, its fit taken back) kept its own list of fields, `_snapshot`'s without the doubt's mass
    and σ (h153's note). Not a bug: nothing but a doubt sets them, and a doubt clears the undo (_put_in_doubt), so the
    undo never held other values than the monitor's. Now it restores `_snapshot`'s fields, the change whole.
    Here (model torques at rest, the identification's noise): 2 kg put on while the monitor is disarmed is taken as a
    doubt (_put_in_doubt, called as _step calls it after `doubt_after_s` of motion: at rest it never does), +3 kg at
    6 s is fitted by a window and adopted on the doubt, and 10 ms after that window a 30 N·m torque on the pan joint
    is a contact. The +3 kg is taken back; the doubt stands, as it should (the contact answers nothing about the
    misfit that raised it): same reason, same mass implied, same payload carried."""
    model, robot = ur10_cell_robot
    frame = model.payload_frame(None)
    q = np.array([0.0, -1.4, 1.4, -1.6, -1.6, 0.0])
    g = payload_regressor(model, frame, q, np.zeros(model.n), np.zeros(model.n))[0, :, 0]
    n, k_doubt, k_load = 4000, 500, 3000
    t = np.arange(n) * 0.002
    rng = np.random.default_rng(0)
    tau = model.rnea(q, np.zeros(model.n), np.zeros(model.n)) + \
        0.2 * robot.monitor_noise_scale * rng.standard_normal((n, model.n))
    tau[k_doubt:] += 2.0 * g
    tau[k_load:] += 3.0 * g
    qs, qd = np.tile(q, (n, 1)), np.zeros((n, model.n))
    monitor = PayloadMonitor(model, robot, frame)
    events = monitor.update(t[:k_doubt], qs[:k_doubt], qd[:k_doubt], tau[:k_doubt]).events
    for k in range(k_doubt, k_doubt + 300):
        monitor._armed = False                   # disarmed (by a contact, say) while the 2 kg came
        events += monitor.update(t[k:k + 1], qs[k:k + 1], qd[k:k + 1], tau[k:k + 1]).events
    last = monitor._history[-1]
    monitor._put_in_doubt(last[0], last[1], last[2], last[3], MonitorUpdate(), last[6], last[7])
    doubt, mass, implied = monitor.state.doubt, float(monitor.state.phi[0]), monitor.change.doubt_mass
    assert doubt and abs(mass - 2.0) < 0.2 and implied == mass, (doubt, mass)
    said = monitor.undecided()
    k, contact_from = k_doubt + 300, None
    while k < n:
        events += monitor.update(t[k:k + 10], qs[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
        k += 10
        if contact_from is None and monitor.change.pending is not None:
            # The +3 kg window decided (adopted on the doubt, pending): a push from the next sample on.
            assert abs(monitor.change.pending.delta_mass - 3.0) < 0.3 and abs(monitor.state.phi[0] - 5.0) < 0.3
            contact_from = k
            tau[k:k + 150, 0] += 30.0
    assert contact_from is not None and t[contact_from] > t[k_load]
    assert [e.kind for e in events] == [EventKind.CONTACT] and events[0].t_change > t[contact_from - 10], events
    # The +3 kg fit is taken back with the contact; the doubt is as it was before it.
    assert monitor.change.pending is None and abs(float(monitor.state.phi[0]) - mass) < 0.02, monitor.state
    assert monitor.state.doubt == doubt and monitor.change.doubt_mass == implied
    assert [(u.t_change, u.reason) for u in monitor.undecided()] == [(u.t_change, u.reason) for u in said] != []
