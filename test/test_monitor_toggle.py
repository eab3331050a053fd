"""Issue 31 items 4-6: the monitor's state survives a toggle and a restart, two drivers of the same joints pause it,
its floor is published, and after a place the controller is never left holding the part.

MonitorMode (the node's wiring) is fed in-process with a stand-in node and controller, on the simulated UR10 cell
(test_monitor_task_motion.Task): 3 kg picked during task motion, carried, put down. The red team's run that this
reproduces: the monitor toggled at 100 Hz while carrying found the pick twice, applied 2.92 kg for 3.0 kg, and
after the place the controller kept 2.92 kg on the empty flange for ≥ 13 s.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from monitor_mode_stand_ins import Controller, Node
from test_monitor_task_motion import FRAME, Task, place_then_forearm_push

from payload_id_core.monitor.live import MIN_TOGGLE_INTERVAL_S, LiveMonitor, ToggleLimit
from payload_id_core.monitor.refine import PayloadRefiner
from payload_id_core.payload.result_file import read_result, write_result
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_ros.monitor_mode import MonitorMode
from payload_id_ros.sensor_inbox import JointStateBatch

pytestmark = pytest.mark.slow
PART = 3.0
SECOND = 2.0
EVENTS = ["picked", "placed", "picked", "placed"]


class _Cell:
    """MonitorMode on a stand-in node, the estimate it publishes kept as the node keeps it."""

    def __init__(self, model, robot, controller=None, clock=None, saved=None):
        self.node, self.controller, self.t = Node(), controller or Controller(), 0.0
        self.estimate: PayloadEstimate | None = saved.estimate if saved else None
        self.saved: list = []
        self.unconfirmed: list[str] = []     # the unconfirmed mark persisted with each re-estimate ('' : confirmed)
        self.watched_until: list[float] = []  # the last joint-state stamp persisted with each re-estimate
        self.carried: list = []               # the covariance beyond the published one persisted with each

        def new_monitor():
            live = LiveMonitor(model, robot, FRAME, None, rated_payload_kg=10.0)
            live.saved_tare = saved.tare if saved else None
            live.saved_unloaded = getattr(saved, "unloaded", None)
            live.saved_unconfirmed = getattr(saved, "unconfirmed", "")
            live.saved_watched_until = getattr(saved, "watched_until", None)
            live.saved_carried = getattr(saved, "carried", None)
            return live

        self.mode = MonitorMode(self.node, new_monitor, lambda: "", lambda: self.estimate, self._publish,
                                self.controller, lambda: False, None,
                                persist=self._persist,
                                clock=clock or (lambda: self.t))

    def _publish(self, est):
        self.estimate = est

    def _persist(self, est, tare, unloaded, unconfirmed, watched_until, carried):
        self.saved.append((est, tare, unloaded))
        self.unconfirmed.append(unconfirmed)
        self.watched_until.append(watched_until)
        self.carried.append(carried)

    def events(self) -> list[str]:
        return [m.kind for m in self.node.publishers["~/payload_event"].sent]

    def wait_applied(self) -> None:
        thread = self.mode._apply_thread
        if thread is not None:
            thread.join(10)


@pytest.fixture(scope="module")
def task(ur10_cell_robot):
    model, _ = ur10_cell_robot
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(PART)
    task.moves(4)
    task.carry(0.0)
    task.moves(4)
    task.carry(SECOND)
    task.moves(4)
    task.carry(0.0)
    task.moves(4)
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    return task, t, q, qd, tau


def _run(cell: _Cell, task, toggle=None, stop: float = np.inf) -> None:
    """Feed the task in 20 ms blocks (as the node's 50 Hz drain) up to `stop` s; `toggle(cell, t)` before each."""
    _, t, q, qd, tau = task
    for k in range(0, t.size, 10):
        if t[k] >= stop:
            return
        cell.t = float(t[k])
        if toggle is not None:
            toggle(cell, cell.t)
        cell.mode.feed(JointStateBatch(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]))
    cell.wait_applied()


def test_a_toggle_at_100_hz_while_carrying_is_refused_and_the_place_empties_the_controller(ur10_cell_robot, task):
    truth = task[0].truth
    t_pick, t_place = truth[0][0], truth[1][0]
    cell = _Cell(*ur10_cell_robot)
    cell.mode.switch(True)
    answers = []

    def hundred_hz(c, t):
        if t_pick - 0.5 < t < t_place + 1.0:
            for on in (False, True):          # two switches per 20 ms block: 100 Hz
                answers.append(c.mode.switch(on))

    _run(cell, task, hundred_hz)
    refused = [msg for ok, msg in answers if not ok]
    obeyed = [msg for ok, msg in answers if ok and "already" not in msg]
    # One switch off per MIN_TOGGLE_INTERVAL_S of (here, simulated) time is obeyed, and the switch on after it; the
    # rest of the switches off are refused, saying why.
    span = t_place + 1.0 - (t_pick - 0.5)
    assert len(obeyed) <= 2 * (span / MIN_TOGGLE_INTERVAL_S + 1) and len(refused) > 0.4 * len(answers)
    assert "switch it off at most once per 0.5 s" in refused[0]
    assert cell.events() == EVENTS, cell.events()
    applied = cell.controller.applied
    assert applied and abs(applied[0] - PART) < 0.06, applied
    assert 0.0 in applied and applied.index(0.0) < [abs(m - SECOND) < 0.06 for m in applied].index(True), applied
    assert applied[-1] == 0.0, applied                   # each place left the controller empty
    assert cell.estimate is not None and not np.any(cell.estimate.phi)


def test_toggles_within_the_decision_window_lose_and_duplicate_nothing(ur10_cell_robot, task):
    """Off 20 ms after the pick (inside its decision window) and 20 ms after the place, on 0.6 s later each time,
    and twice more while carrying: one pick and one place, the controller given 3 kg and then nothing."""
    truth = task[0].truth
    t_pick, t_place = truth[0][0], truth[1][0]
    offs = [t_pick + 0.02, t_pick + 3.0, t_pick + 5.0, t_place + 0.02]
    state = {"next": 0}

    def scripted(c, t):
        i = state["next"]
        if i < 2 * len(offs):
            at = offs[i // 2] + (0.0 if i % 2 == 0 else 0.6)
            if t >= at:
                ok, why = c.mode.switch(i % 2 == 1)
                assert ok, why
                state["next"] += 1

    cell = _Cell(*ur10_cell_robot)
    cell.mode.switch(True)
    _run(cell, task, scripted)
    assert state["next"] == 2 * len(offs)
    assert cell.events() == EVENTS, cell.events()
    applied = cell.controller.applied
    assert applied and abs(applied[0] - PART) < 0.06 and applied[-1] == 0.0, applied
    assert all(m == 0.0 or abs(m - PART) < 0.06 or abs(m - SECOND) < 0.06 for m in applied), applied


def _restart_on(estimate, tare, unloaded=None, unconfirmed="", watched_until=None, carried=None):
    """What a restarted node starts on (_Cell's `saved`): the monitor's last re-estimate and what was persisted with
    it (the defaults: nothing learnt, confirmed, no stamp, the covariance not kept)."""
    return SimpleNamespace(estimate=estimate, tare=tare, unloaded=unloaded, unconfirmed=unconfirmed,
                           watched_until=watched_until, carried=carried)


def _restart_on_file(saved):
    """_restart_on what payload.yaml holds (read_result), as the node reads it back."""
    return _restart_on(saved.estimate, saved.monitor_tare, saved.monitor_unloaded, saved.monitor_unconfirmed,
                       saved.monitor_watched_until, saved.monitor_carried)


def test_a_restart_mid_carry_starts_from_the_part_carried(ur10_cell_robot, task):
    """The first node runs through a pick and a place (its tare learnt on the empty flange) and a second pick, whose
    re-estimate it persists with the tare, and dies mid-carry; a second node starts on what was saved, sees no
    new pick, and finds the place: the empty payload reaches the controller."""
    truth = task[0].truth
    t_place = truth[3][0]
    first = _Cell(*ur10_cell_robot)
    first.mode.switch(True)
    _run(first, task, stop=t_place - 0.5)
    assert first.events() == EVENTS[:3] and first.saved, first.events()
    est, tare, _ = first.saved[-1]
    assert abs(est.mass - SECOND) < 0.06 and tare[0] != 0.0

    second = _Cell(*ur10_cell_robot, saved=_restart_on(est, tare))
    second.mode.switch(True)
    _, t, q, qd, tau = task
    after = t >= t_place - 0.4                            # the second node hears the joints from here
    _run(second, (None, t[after], q[after], qd[after], tau[after]))
    assert second.events() == ["placed"], second.events()
    assert second.controller.applied and second.controller.applied[-1] == 0.0
    placed = second.node.publishers["~/payload_event"].sent[0]
    assert abs(placed.delta_mass + SECOND) < 0.1, placed.delta_mass


def test_a_place_while_the_node_was_down_is_said_not_located(ur10_cell_robot, task, tmp_path):
    """The first node persists each re-estimate with the last joint-state stamp it had seen, and dies mid-carry; the
    part is put down while no node runs; the second node starts 0.3 s after the place on the result file. Before: the
    place came out `placed` stamped at the second node's first sample (after the place) and said nothing of it; now
    ~/payload_event says its time is not located (t_change_located false), stamped no later than the place, the
    place within [stamp, stamp + alarm_delay], and the node's log line says the span."""
    truth = task[0].truth
    t_place = truth[3][0]
    model, _ = ur10_cell_robot
    first = _Cell(*ur10_cell_robot)
    first.mode.switch(True)
    _run(first, task, stop=t_place - 0.5)
    est, tare, unloaded = first.saved[-1]
    assert abs(est.mass - SECOND) < 0.06 and first.watched_until[-1] < t_place - 0.5, first.watched_until
    path = tmp_path / "payload.yaml"
    write_result(path, model, est, None, None, 1.0, monitor_tare=tare, monitor_unloaded=unloaded,
                 monitor_watched_until=first.watched_until[-1])
    saved = read_result(path, model)
    assert saved is not None and saved.monitor_watched_until == first.watched_until[-1]

    second = _Cell(*ur10_cell_robot, saved=_restart_on_file(saved))
    second.mode.switch(True)
    _, t, q, qd, tau = task
    after = t >= t_place + 0.3                            # the second node hears the joints from here
    _run(second, (None, t[after], q[after], qd[after], tau[after]))
    assert second.events() == ["placed"], second.events()
    placed = second.node.publishers["~/payload_event"].sent[0]
    stamp = placed.header.stamp.sec + 1e-9 * placed.header.stamp.nanosec
    assert placed.t_change_located is False and stamp <= t_place <= stamp + placed.alarm_delay, (placed, t_place)
    assert abs(placed.delta_mass + SECOND) < 0.1 and "not located within" in placed.reason, placed
    said = [text for level, text in second.node.logger.lines if text.startswith("payload event: placed")]
    assert said and "(its time not located)" in said[0], said
    assert second.controller.applied and second.controller.applied[-1] == 0.0


def test_a_restart_with_a_part_on_keeps_the_unloaded_friction_learnt(ur10_cell_robot, task, tmp_path):
    """Issue 31: the unloaded robot's friction (UnloadedFriction) is learnt only while nothing is carried, so a node
    restarted with a part on could not learn it before the next place, and its re-estimates went uncorrected. It is
    saved with the re-estimate and its tare (through the result file, as the node does) and the restarted monitor
    goes on from it: the same fit, the same normal equations, and the place re-estimated with its correction."""
    truth = task[0].truth
    t_place = truth[3][0]
    first = _Cell(*ur10_cell_robot)
    first.mode.switch(True)
    _run(first, task, stop=t_place - 0.5)
    est, tare, unloaded = first.saved[-1]
    assert unloaded is not None and unloaded["moving_s"] >= 1.0 and unloaded["used_cov"] is not None
    learnt = first.mode.live.monitor.unloaded
    np.testing.assert_array_equal(np.asarray(unloaded["used"]), learnt.used)     # a snapshot of it, as it is now
    assert np.any(learnt.used != 0.0)
    path = tmp_path / "payload.yaml"
    model, _ = ur10_cell_robot
    write_result(path, model, est, None, None, 1.0, monitor_tare=tare, monitor_unloaded=unloaded)
    saved = read_result(path, model)
    assert saved is not None and saved.monitor_tare == tare

    second = _Cell(*ur10_cell_robot, saved=_restart_on_file(saved))
    second.mode.switch(True)
    _, t, q, qd, tau = task
    after = t >= t_place - 0.4
    _run(second, (None, t[after][:10], q[after][:10], qd[after][:10], tau[after][:10]))
    restored = second.mode.live.monitor.unloaded
    for key in ("AtA", "data_AtA", "Atb", "btb", "used", "used_cov"):
        np.testing.assert_allclose(getattr(restored, key), getattr(learnt, key), rtol=1e-12, atol=0.0, err_msg=key)
    assert (restored.rows, restored.moving_s) == (learnt.rows, learnt.moving_s)
    _run(second, (None, t[after][10:], q[after][10:], qd[after][10:], tau[after][10:]))
    assert second.events() == ["placed"], second.events()
    # The place's re-estimate is corrected with the friction learnt before the restart (None: uncorrected).
    assert second.mode.live.monitor.refiner.correction_cov is not None


def test_a_saved_friction_of_another_robot_is_said_and_not_used(ur10_cell_robot, task):
    truth = task[0].truth
    first = _Cell(*ur10_cell_robot)
    first.mode.switch(True)
    _run(first, task, stop=truth[3][0] - 0.5)
    est, tare, unloaded = first.saved[-1]

    second = _Cell(*ur10_cell_robot,
                   saved=_restart_on(est, tare, dict(unloaded, Atb=np.asarray(unloaded["Atb"])[:, :1].tolist())))
    second.mode.switch(True)
    _, t, q, qd, tau = task
    k = int(np.searchsorted(t, truth[3][0] - 0.4))
    _run(second, (None, t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]))
    warned = [text for level, text in second.node.logger.lines if level == "warn"]
    assert any("the saved unloaded friction's Atb is not (6, " in w and "learnt again" in w for w in warned), warned
    assert second.mode.live.monitor.unloaded.rows == 0
    assert abs(second.estimate.mass - SECOND) < 0.06        # the part and its tare are kept


def test_an_unconfirmed_payload_stays_unconfirmed_across_a_restart(ur10_cell_robot, tmp_path, monkeypatch):
    """Issue 31: a payload restored after a refuted re-estimate is suspect until the residual confirms it
    (PayloadState.unconfirmed); the mark is saved with the re-estimate and a restarted node goes on doubting it.

    The scenario of test_monitor_task_motion's place-then-push test (a 1.61 kg part placed, a 118 N forearm push
    0.1 s later, 3 s of rest, moves), with the first node's refiner keeping the push's rows (drop_since made a no-op:
    a disturbance the detector did not take for a contact), so that the place's re-estimate is refuted and the part
    restored, unconfirmed, on the empty flange. The node restarts during the rest, from its result file. Before: the
    mark was not saved; the restarted node took the suspect 1.61 kg for no payload at all, started from nothing,
    and never named the place (the 1.61 kg stayed on ~/payload to the end). Its first samples could not confirm the
    part either: restarted observers leave r₀ − F φ at zero for a few time constants whatever is carried. Now the
    second node holds the part, unconfirmed, never publishes it ok, and names the place once the arm moves."""
    model, robot = ur10_cell_robot
    task, (_, t_released) = place_then_forearm_push(model)
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    whole = (task, t, q, qd, tau)
    t_place, t_restart = task.truth[-1][0], t_released + 1.0
    first = _Cell(model, robot)
    first.mode.switch(True)
    with monkeypatch.context() as patch:
        patch.setattr(PayloadRefiner, "drop_since", lambda self, t: 0)
        _run(first, whole, stop=t_restart)
    assert first.unconfirmed and first.unconfirmed[-1], first.unconfirmed      # the scenario: restored unconfirmed
    est, tare, unloaded = first.saved[-1]
    assert est.quality is Quality.SUSPECT and abs(est.mass - 1.61) < 0.1
    path = tmp_path / "payload.yaml"
    write_result(path, model, est, None, None, 1.0, monitor_tare=tare, monitor_unloaded=unloaded,
                 monitor_unconfirmed=first.unconfirmed[-1])
    saved = read_result(path, model)
    assert saved is not None and saved.monitor_unconfirmed == first.unconfirmed[-1]

    second = _Cell(model, robot, saved=_restart_on_file(saved))
    second.mode.switch(True)
    after = t >= t_restart
    _, ts, qs, qds, taus = whole
    for k in np.flatnonzero(after)[::10]:
        second.t = float(ts[k])
        second.mode.feed(JointStateBatch(ts[k:k + 10], qs[k:k + 10], qds[k:k + 10], taus[k:k + 10]))
        # The 1.61 kg part is never published ok on the empty flange (nor anything but nothing).
        est_now = second.estimate
        assert est_now is not None
        assert est_now.quality is not Quality.OK or not np.any(est_now.phi), (second.t, est_now.mass)
    second.wait_applied()
    assert second.events() == ["placed"], second.events()
    placed = second.node.publishers["~/payload_event"].sent[0]
    assert abs(placed.delta_mass + 1.61) < 0.15, placed.delta_mass
    assert second.estimate.quality is Quality.OK and not np.any(second.estimate.phi)
    assert second.controller.applied and second.controller.applied[-1] == 0.0, second.controller.applied
    assert t_restart - t_place > 1.0          # the restart came after the place, while the part was unconfirmed


def test_a_refused_apply_after_a_place_says_what_the_controller_keeps(ur10_cell_robot, task):
    cell = _Cell(*ur10_cell_robot, controller=Controller(refuse=True))
    cell.mode.switch(True)
    _run(cell, task)
    assert cell.events() == EVENTS
    warned = [text for level, text in cell.node.logger.lines if level == "warn"]
    assert any("keeps whatever it held before" in w and "did not answer" in w for w in warned), warned


def test_the_floor_is_said_at_start_and_kept_in_the_published_sigma(ur10_cell_robot, task):
    cell = _Cell(*ur10_cell_robot)
    cell.mode.switch(True)
    _run(cell, task)
    said = [text for _, text in cell.node.logger.lines if text.startswith("monitor floor")]
    assert len(said) == 1, said
    floor = float(said[0].split("sees here is ")[1].split(" kg")[0])
    assert 0.0 < floor < 1.0
    # The empty flange after the place: 0 kg, its σ at least half the floor (a smaller part is not excluded).
    # The floor as it stood then (the residual's level learnt since the start lowers it), in the estimate's note.
    assert cell.estimate is not None and not np.any(cell.estimate.phi)
    note = cell.estimate.notes[-1].text
    floor_then = float(note.split("floor ")[1].split(" kg")[0])
    assert 0.5 * floor < floor_then <= floor
    assert np.sqrt(cell.estimate.covariance[0, 0]) == pytest.approx(floor_then / 2, abs=1e-3)


def test_toggle_limit():
    limit = ToggleLimit()
    assert limit.refusal(10.0) == ""
    assert "switched off 0.10 s ago" in limit.refusal(10.1)
    assert limit.refusal(10.0 + MIN_TOGGLE_INTERVAL_S) == ""


def test_the_mass_floor_is_what_the_alarm_sees_at_rest(ur10_cell_robot):
    """A mass step at the flange, at rest: one of 1.5× the floor alarms within a second; one of 0.6× never does
    (simulated torques from the model itself, the robot identification's noise level)."""
    model, robot = ur10_cell_robot
    q = np.array([0.0, -1.4, 1.4, -1.6, -1.6, 0.0])
    live = LiveMonitor(model, robot, FRAME, None, rated_payload_kg=10.0)
    floor, joint = live.floor(q, None)
    assert 0.0 < floor < 1.0 and 0 <= joint < model.n
    from payload_id_core.dynamics.regressor import payload_regressor  # noqa: PLC0415 - this test's only
    g = payload_regressor(model, FRAME, q, np.zeros(model.n), np.zeros(model.n))[0, :, 0]
    tau0 = model.rnea(q, np.zeros(model.n), np.zeros(model.n))
    rng = np.random.default_rng(0)

    def alarms(share: float) -> bool:
        """A step of `share` × the floor as the monitor states it after 1 s at rest (its level learnt)."""
        mon = LiveMonitor(model, robot, FRAME, None, rated_payload_kg=10.0)
        n, step = 2000, 500
        t = np.arange(n) * 0.002
        tau = np.tile(tau0, (n, 1)) + 0.2 * robot.monitor_noise_scale * rng.standard_normal((n, model.n))
        qs = np.tile(q, (n, 1))
        for k in range(0, n, 10):
            if k == step:
                floor_now, _ = mon.floor(q, None)
                tau[step:] += share * floor_now * g
            mon.feed(t[k:k + 10], qs[k:k + 10], np.zeros((10, model.n)), tau[k:k + 10], None)
            assert mon.monitor is not None
            if mon.monitor._window is not None or mon.monitor.change.unnamed is not None:
                return True
        return False

    assert alarms(1.5)
    assert not alarms(0.6)


def test_floored_keeps_a_larger_sigma_and_raises_a_smaller_one(ur10_cell_robot):
    model, robot = ur10_cell_robot
    q = np.array([0.0, -1.4, 1.4, -1.6, -1.6, 0.0])
    live = LiveMonitor(model, robot, FRAME, None)
    floor, _ = live.floor(q, None)
    tight = PayloadEstimate(FRAME, np.zeros(10), np.eye(10) * 1e-6, "monitor")
    raised = live.floored(tight, q)
    assert raised.covariance[0, 0] == pytest.approx((floor / 2) ** 2)
    assert raised.quality is Quality.OK and "floor" in raised.notes[-1].text
    loose = PayloadEstimate(FRAME, np.zeros(10), np.eye(10), "monitor")
    assert live.floored(loose, q) is loose


def test_a_floor_above_any_part_the_robot_can_carry_raises_sigma_to_what_a_change_can_move(ur10_cell_robot):
    """The arm upright, no joint feels the flange's mass at rest and the floor runs to tens of kg and beyond (the real
    UR10e's 01_31-load ended there, 98.5 kg): σ is half the most a change can move the mass then (a place takes off at
    most what is carried, a pick adds at most 1.5 × the rated payload less it), not half the floor (h171)."""
    model, robot = ur10_cell_robot
    live = LiveMonitor(model, robot, FRAME, None, rated_payload_kg=10.0)
    assert live.max_mass_kg == pytest.approx(15.0)
    assert live.hidden_change(0.5, 3.0)[0] == 0.5                 # a floor below the reach stands
    assert live.hidden_change(98.5, 3.0)[0] == pytest.approx(12.0)
    assert live.hidden_change(98.5, 12.0)[0] == pytest.approx(12.0)     # a place of all 12 kg
    hidden, said = live.hidden_change(98.5, 0.0)
    assert hidden == pytest.approx(15.0) and "98.500 kg is above it" in said
