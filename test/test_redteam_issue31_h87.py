"""Red team of issue 31's dating of changes (a change found while the monitor was not watching is dated where it can be
located, or said not located with a span that contains it), on the simulated UR10 cell (test_monitor_task_motion.Task).

A 3 kg part picked while the monitor was switched off (PayloadMonitor.suspend: the node's toggle) or while the joint
states had stopped (a pause), or just before either while its decision window was still open: the restarted observers'
residual rises from zero to the part's torque at the restart, so the CUSUM's change time is the switch-on, not the pick.
Before: `picked` dated at the switch-on and said located (1.0 s after the pick for a 1.0 s switch-off, 3.0 s after for
3.0 s); now dated from the last sample watched before the pause, t_change_located false, the span in the reason, and
events.yaml (cli.monitor.event_dict) says the same.
"""

import numpy as np
import pytest
from test_monitor_task_motion import FRAME, HOME, Task

from payload_id_core.cli.monitor import event_dict, undecided_dict
from payload_id_core.monitor import EventKind, MonitorSettings, PayloadMonitor

pytestmark = pytest.mark.slow
PART = 3.0


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


def _unwatched_pick(model, seed: int, lead: float, gap: float):
    """A 3 kg pick at rest after two moves, and `lead` s after it (negative: before) the monitor stops watching for
    `gap` s; then three moves, the place, two moves. (task, t_off, t_on)."""
    task = Task(model, seed)
    task.rest(0.5)
    task.moves(2)
    task.rest(0.5)
    task.carry(PART)
    t_pick = task.truth[-1][0]
    task.rest(max(lead, 0.0) + gap + 0.1)
    task.rest(0.5)
    task.moves(3)
    task.carry(0.0)
    task.moves(2)
    return task, t_pick + lead, t_pick + lead + gap


def _watch(task: Task, robot, t_off: float, t_on: float, switched_off: bool, settings=None):
    """The task's events, fed in 20 ms blocks; from t_off to t_on no samples, the monitor suspended first (the toggle)
    or not (joint states stopped: the monitor pauses on the gap)."""
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    monitor = PayloadMonitor(task.model, robot, FRAME, settings=settings)
    events, suspended = [], False
    for k in range(0, t.size, 10):
        if t_off <= t[k] < t_on:
            if switched_off and not suspended:
                monitor.suspend()
                suspended = True
            continue
        events += monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
    return events


def _check(events, task: Task, t_off: float, t_on: float):
    (t_pick, _, _), (t_place, _, _) = task.truth
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED], events
    pick, place = events
    assert abs(pick.delta_mass - PART) <= 2 * pick.delta_mass_std + 0.03, pick
    # The pick is not dated at the switch-on: its span, from before the last sample watched, contains it.
    assert not pick.t_change_located, pick
    assert pick.t_change <= t_pick <= pick.t_alarm, (pick, t_pick)
    assert pick.t_alarm >= t_on - 1e-9 and pick.t_change >= t_off - 0.5, (pick, t_off, t_on)
    assert f"not located within [{pick.t_change:.3f}, {pick.t_alarm:.3f}] s" in pick.reason, pick.reason
    assert "between" in pick.when_text
    said = event_dict(pick)
    assert said["t_change_located"] is False and said["t_change"] <= t_pick <= said["t_alarm"], said
    # The place, watched, is dated and said located as before.
    assert place.t_change_located and abs(place.t_change - t_place) < 0.1, place


@pytest.mark.parametrize("off_s", [1.0, 3.0])
def test_a_pick_while_the_monitor_is_switched_off_is_not_dated_at_the_switch_on(cell, off_s):
    """Before: `picked` at the switch-on (t_change 6.400 for a pick at 5.400 with 1.0 s off; 8.400 with 3.0 s off),
    t_change_located true."""
    model, robot = cell
    task, t_off, t_on = _unwatched_pick(model, 3, -0.4, off_s)
    _check(_watch(task, robot, t_off, t_on, True), task, t_off, t_on)


@pytest.mark.parametrize("switched_off", [True, False], ids=["switched-off", "joint-states-stopped"])
def test_a_pick_whose_decision_window_a_pause_cuts_short_is_not_dated_after_it(cell, switched_off):
    """The pick alarms, and 30 ms later (its decision window open) the monitor is switched off, or the joint states
    stop, for 0.2 s: the window is dropped and the restart alarms again. Before: dated at the restart (5.43 s for a pick
    at 5.20 s), said located."""
    model, robot = cell
    task, t_off, t_on = _unwatched_pick(model, 5, 0.03, 0.2)
    _check(_watch(task, robot, t_off, t_on, switched_off), task, t_off, t_on)



def test_a_change_undecided_at_a_replays_end_says_its_time_is_not_located(cell):
    """events.yaml's `undecided:` (h83) had no t_change_located (h84): a pick made while the monitor was switched off,
    the recording ending 1 s after the switch-on (not named yet), was listed undecided with t_change the span's start
    and nothing saying it is no date. Now its entry says so as an event's would, with the span in the reason."""
    model, robot = cell
    task, t_off, t_on = _unwatched_pick(model, 3, -0.4, 1.0)
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    end = t <= t_on + 1.0
    monitor = PayloadMonitor(task.model, robot, FRAME)
    events = []
    for k in range(0, int(np.sum(end)), 10):
        if t_off <= t[k] < t_on:
            if k and t[k - 10] < t_off:
                monitor.suspend()
            continue
        events += monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
    assert events == []
    t_pick = task.truth[0][0]
    (pending,) = monitor.undecided()
    said = undecided_dict(pending)
    assert said["kind"] == "picked" and said["t_change_located"] is False, said
    assert said["t_change"] <= t_pick <= said["t_alarm"] and "not located within" in said["reason"], said
    # The same keys as an event's (cli.monitor's docstring: "same keys").
    assert set(said) == {"kind", "t_change", "t_change_located", "t_alarm", "delta_mass", "delta_mass_std", "reason"}

def _down_then_place(model):
    """A 3 kg pick, two moves; the node goes down (its last joint state then); the place at rest 0.3 s later; the node
    is up 0.7 s after the place, then rest and three moves. (task, the last stamp watched, the first stamp after)."""
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(PART)
    task.moves(2)
    t_down = task.cell.time
    task.rest(0.3)
    task.carry(0.0)
    task.rest(0.7)
    t_start = task.cell.time
    task.rest(0.5)
    task.moves(3)
    return task, t_down, t_start


def _restarted_on_the_part(task, model, robot, t_start: float, watched_until: float | None):
    """The events of a monitor built as the node restarted mid-carry builds it: on the saved re-estimate (σ of a settled
    one) and its tare (the empty flange's own re-estimated mass on this cell), from the first sample at t_start."""
    from test_monitor_task_motion import part  # noqa: PLC0415 - the task's part, as carried

    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    monitor = PayloadMonitor(model, robot, FRAME, part(PART), np.diag([0.03**2] + [0.015**2] * 3 + [1e-4] * 6))
    monitor.carry_on_from_part(-0.07, 0.01**2, watched_until=watched_until)
    events = []
    for k in np.nonzero(t >= t_start)[0][::10]:
        events += monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
    return events


def test_a_place_while_the_node_was_down_is_not_dated_at_its_restart(cell):
    """A place made while the node was down, the monitor restarted on the saved 3 kg (LiveMonitor.new_monitor:
    carry_on_from_part with its tare). Before: `placed` dated at the node's first sample (9.900 s for a place at
    9.200 s) and said located: the restarted observers' residual rises to the change at the start, as after a
    switch-off (_unwatched_change), and nothing bounded the span. Now the last joint-state stamp the saving node had
    seen is saved with the re-estimate (result_file's monitor_watched_until) and starts the span not watched."""
    model, robot = cell
    task, t_down, t_start = _down_then_place(model)
    events = _restarted_on_the_part(task, model, robot, t_start, t_down)
    t_place = task.truth[-1][0]
    assert [e.kind for e in events] == [EventKind.PLACED], events
    place = events[0]
    assert abs(place.delta_mass + PART) <= 2 * place.delta_mass_std + 0.03, place
    assert not place.t_change_located and place.t_change <= t_place <= place.t_alarm, (place, t_place)
    assert f"not located within [{place.t_change:.3f}, {place.t_alarm:.3f}] s" in place.reason, place.reason
    assert event_dict(place)["t_change_located"] is False


def test_a_place_while_the_node_was_down_without_a_saved_stamp_is_not_said_located(cell):
    """A result file saved before the stamp was kept: the span's start is not known. The place is still not said
    located (before: dated at the first sample, located), and its reason says it may have come before its t_change."""
    model, robot = cell
    task, _, t_start = _down_then_place(model)
    (place,) = _restarted_on_the_part(task, model, robot, t_start, None)
    assert place.kind is EventKind.PLACED and abs(place.delta_mass + PART) <= 2 * place.delta_mass_std + 0.03, place
    assert not place.t_change_located and abs(place.t_change - t_start) < 0.02, place
    assert "carries no stamp of when it was last watched" in place.reason, place.reason


def _place_then_pick(model, seed: int, first: float, second: float, gap: float):
    """`first` kg picked and carried two moves, placed at rest; a `gap` s move; `second` kg picked at rest, carried
    three 1.4 s moves and placed; two moves."""
    from payload_id_core.sim.pick_place import point_to_point  # noqa: PLC0415

    task = Task(model, seed)
    task.rest(0.5)
    task.moves(2)
    task.carry(first)
    task.moves(2)
    task.carry(0.0)
    for seconds, spread, home in ((gap, 0.3, False), (1.4, 0.5, True), (1.4, 0.5, True), (1.4, 0.5, True)):
        if not home:
            target = task.q + task.rng.uniform(-spread, spread, model.n)
        else:
            if len(task.truth) == 2:
                task.carry(second)
            target = task.q * 0 + HOME + task.rng.uniform(-spread, spread, model.n)
        task.cell.send(point_to_point(model, task.cell.time, task.q, target, seconds))
        task.q = target
        task.rest(seconds)
        task.rest(0.3 if home else 0.0)
    task.carry(0.0)
    task.moves(2)
    return task


@pytest.mark.parametrize(("seed", "first", "second", "gap"), [(1, 7.3, 9.2, 0.9), (2, 2.0, 3.0, 0.6)],
                         ids=["7.3kg-then-9.2kg", "2kg-then-3kg"])
def test_a_place_followed_within_a_second_by_a_pick_is_two_events(cell, seed, first, second, gap):
    """A place followed within a second by a pick (a 0.6-0.9 s move between) was one change: the pick, alarmed while
    the place was still re-estimated, was taken into it (persist_s: 'a pick does not come back within a second'), and
    the two were named as one `picked` dated at the place: 7.3 kg placed at 8.90 s and 9.2 kg picked at 9.80 s were
    `picked` +1.996 ± 0.046 kg at 8.900 s, said located (the net change, 45σ from either); 2 kg placed at 8.90 s and
    3 kg picked at 9.50 s were `picked` +0.983 ± 0.038 kg. Now a load of its own that is not the way back, after a
    pending load the motion already tells from a push, closes it (PayloadMonitor._a_load_of_its_own): `placed` −7.430
    ± 0.339 kg then `picked` +9.425 ± 0.341 kg; `placed` −2.296 ± 0.259 kg then `picked` +3.279 ± 0.259 kg (each
    within 3σ of its part; the σ are the place's 0.1 s window fit's). Left: the 2-then-3 kg run's `contact` in the
    next move (10.82 s) that nobody made, as before."""
    model, robot = cell
    task = _place_then_pick(model, seed, first, second, gap)
    events = _watch(task, robot, np.inf, np.inf, False)
    loads = [e for e in events if e.is_load_change]
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED, EventKind.PICKED, EventKind.PLACED], events
    for e, (t_true, _, _) in zip(loads, task.truth):
        assert e.t_change <= t_true <= e.t_alarm if not e.t_change_located else abs(e.t_change - t_true) < 0.1, \
            (e, t_true)
    # Each with its own part's mass (3σ), the place and the pick apart.
    masses = [first, -first, second, -second]
    for e, m in zip(loads, masses):
        assert abs(e.delta_mass - m) <= 3 * e.delta_mass_std, (e, m)


def _heavy_into_fast_moves(model, seed: int, mass: float, hold: float, move_s: float):
    """`mass` kg picked at rest, `hold` s later four fast point-to-point moves of `move_s` s (±0.6 rad about home, 0.2 s
    rests), the place at rest, five moves."""

    task = Task(model, seed)
    task.rest(0.5)
    task.moves(2)
    task.rest(0.3)
    task.carry(mass)
    task.rest(hold)
    for _ in range(4):
        task.start_move(move_s, spread=0.6)
        task.rest(move_s)
        task.rest(0.2)
    task.carry(0.0)
    task.moves(5)
    return task


def _one_pick_and_one_place(model, robot, seed, mass, hold, move_s, settings=None):
    task = _heavy_into_fast_moves(model, seed, mass, hold, move_s)
    events = _watch(task, robot, np.inf, np.inf, False, settings)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED], events
    for e, (t_true, _, _) in zip(events, task.truth):
        assert e.t_change_located and abs(e.t_change - t_true) < 0.1, (e, t_true)
        assert abs(abs(e.delta_mass) - mass) <= 3 * e.delta_mass_std + 0.01 * mass, (e, mass)
    return events


@pytest.mark.xfail(strict=True, reason=(
    "5 kg placed at rest as a fast move begins (9.55 s): a `contact` ('persistent but not a load on the flange (joint "
    "5 misfit 16.4 per row)'), then `placed` −5.005 ± 0.071 kg not located within [9.450, 12.344] s. Cause, measured "
    "(h182): the pan joint at 8-20 mrad/s (0.103 of the fastest joint's speed, trusted) reads −1.5 to −0.4 N·m against "
    "the true payload from 9.62 s, the friction law's sign smoothing (tanh(v/0.01) against the drive's sharper sign; "
    "the true Δφ leaves 11.2 per row there); the fit takes it by an unobservable moment, which wrist 2's one trusted "
    "row refutes. MonitorSettings.friction_sign_doubt names it (test below) and is off: on the real UR10e's 14harm "
    "loaded run it fitted a strike at 1937.36 s as a load (4.22 kg carried at the end, not determined, for 2.81). "
    "Not the load friction: with it expected in the alarm's residual (h212's load_friction_expected) the place is "
    "still a `contact`"))
def test_a_heavy_part_placed_as_a_fast_move_begins_is_a_place(cell):
    """The default path (friction_sign_doubt off): today a `contact` at the place, then `placed` not located."""
    model, robot = cell
    _one_pick_and_one_place(model, robot, 0, 5.0, 0.2291, 0.8802)


def test_a_heavy_part_placed_as_a_fast_move_begins_is_a_place_with_the_sign_doubt(cell):
    """5 kg picked at rest, carried through four fast moves (0.88 s, up to 0.6 rad per joint), placed at rest as the
    next move begins (9.55 s). Before (h87's strict xfail): the place a `contact` ('persistent but not a load on the
    flange (joint 5 misfit 16.4 per row)'), then `placed` −5.005 ± 0.071 kg not located within [9.450, 12.344] s.
    Cause: the pan joint starts at 8-20 mrad/s (0.103 of the fastest joint's speed, so trusted) and its residual
    against the true payload is −1.5 to −0.4 N·m from 9.62 s against its level of 0.55 N·m (the true change leaves
    11.2 per row there): the friction law's sign smoothing (tanh(v/0.01) against the drive's sharper one; the
    simulator with its sign smoothed as the law's names the place). The window's fit moved an unobservable moment
    (−0.52 kg·m on x for −0.05) to take those rows, which wrist 2's one trusted row (the anchor's next) refuted. Now
    the verdict weighs each row in motion by the law's sharp-less-smoothed gap (monitor.sign_doubt; opt-in,
    MonitorSettings.friction_sign_doubt): `placed` −5.023 ± 0.077 kg at 9.550 s, located, misfit 0.12 per row."""
    model, robot = cell
    _one_pick_and_one_place(model, robot, 0, 5.0, 0.2291, 0.8802, MonitorSettings(friction_sign_doubt=True))


@pytest.mark.xfail(strict=True, reason=(
    "10 kg carried into fast moves (0.67 s point-to-point, up to 0.6 rad per joint): a window in the carry at 7.254 s"
    " (alarm 7.388, 2.2 s after the pick) fits `placed` −0.335 kg, and the motion refutes it: a `contact` ('a push "
    "held through the motion, push over load by 264'). Cause, measured (h182): the part's own gear friction. At the "
    "alarm the lift joint's residual against the TRUE payload is 6.1-6.7 N·m (8.7 at 7.39 s) against an allowance of "
    "4.02 N·m (2σ; the carried payload's F Σ Fᵀ is 0.65 N·m of it, and the residual against the carried fit is "
    "smaller, 5.4-7.6: not the estimate's error); of it μ L₀ (the simulator's μ 0.02 times the part's filtered |τ_b| "
    "− |τ_a|) is 3.5-3.8 N·m. A CUSUM with the monitor's allowance on the true-payload residual alarms at 7.370 s; "
    "less μ L₀ it peaks at 5.2 of 12 and never alarms. The simulator with μ = 0 gives `picked` +9.94 / `placed` −9.95"
    " kg and nothing else. Expecting μ L₀ in the alarm (h67, h83, h103, h117; h150's opt-in load_friction_veto) "
    "passes this case and moved bench/monitor.py's pushed-task figures each time (design.md); h212's opt-in "
    "load_friction_expected passes it (`picked` +9.937 ± 0.073, `placed` −9.949 ± 0.091 kg; "
    "test_monitor_load_friction_expected) and lost light parts on the bench (design.md)"))
def test_a_heavy_part_into_fast_moves_is_one_pick_and_one_place(cell):
    """Today: 10 kg: `picked` +9.951 ± 0.083 kg, a `contact` at 7.254 s in the carry, `placed` −10.146 ± 0.105 kg at
    8.640 s."""
    model, robot = cell
    _one_pick_and_one_place(model, robot, 2, 10.0, 0.1591, 0.6693)


def test_a_light_place_then_a_heavy_pick_a_second_later_is_not_one_net_pick(cell):
    """A 0.5 kg part placed as a 1.2 s move begins, 6.0 kg picked 1.2 s later. Before (h95's strict xfail): the place
    called `contact` ('the residual fell to 20% of its peak within 0.10 s: a transient': the lift and elbow joints,
    whose step held at 2-3σ, went untrusted halfway through the window, and only the wrists' bump of the move's start
    was read at its end), the pick named `picked` +5.513 ± 0.077 kg (the net). Now the decay is judged where it is
    seen (detect.classify: the joints not trusted at the end held 88 % of the peak, so no transient is claimed):
    `placed` −0.572 ± 0.088 kg at 8.902 s, then `picked` +6.100 ± 0.090 kg."""
    model, robot = cell
    task = _place_then_pick(model, 4, 0.5, 6.0, 1.2)
    events = _watch(task, robot, np.inf, np.inf, False)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED, EventKind.PICKED, EventKind.PLACED], events
    assert abs(events[2].delta_mass - 6.0) <= 3 * events[2].delta_mass_std + 0.06, events[2]


def test_a_light_part_into_fast_moves_is_named_within_its_sigma(cell):
    """Before: `picked` +0.425 ± 0.014 kg (5.4σ low), the re-estimate over the fast moves against the empty flange the
    monitor was given, σ the rows' noise alone. Now a named change's σ carries the mass the robot model's error invents
    on task motion (PayloadMonitor.model_mass_std): +0.425 ± 0.068 kg."""
    model, robot = cell
    task = _heavy_into_fast_moves(model, 5, 0.5, 0.1869, 0.7067)
    events = _watch(task, robot, np.inf, np.inf, False)
    picks = [e for e in events if e.kind is EventKind.PICKED]
    assert len(picks) == 1 and abs(picks[0].t_change - task.truth[0][0]) < 0.1, events
    assert abs(picks[0].delta_mass - 0.5) <= 3 * picks[0].delta_mass_std, picks[0]


@pytest.mark.parametrize(("seed", "first", "second", "gap"), [(3, 2.0, 3.0, 0.5), (4, 3.0, 2.0, 0.4)],
                         ids=["2kg-then-3kg", "3kg-then-2kg"])
def test_a_place_then_a_pick_at_rest_is_not_one_located_change(cell, seed, first, second, gap):
    """The place and the pick 0.4-0.5 s apart with the arm at rest between: nothing in those rows tells the place from a
    push and the pick from its release, so the two are not named apart (_a_load_of_its_own asks the motion). Before:
    named as one located change at the place's time, `picked` +0.903 ± 0.046 kg (2 kg placed at 8.90 s, 3 kg picked at
    9.40 s) and `placed` −1.020 ± 0.026 kg (3 kg, then 2 kg at 9.30 s), as if one part had come. Now the net change is
    said as what it is: not located, its span from the place to the pick's alarm, the reason naming the two steps."""
    model, robot = cell
    task = Task(model, seed)
    task.rest(0.5)
    task.moves(2)
    task.carry(first)
    task.moves(2)
    task.carry(0.0)
    task.rest(gap)
    task.carry(second)
    task.moves(3)
    task.carry(0.0)
    task.moves(2)
    events = _watch(task, robot, np.inf, np.inf, False)
    loads = [e for e in events if e.is_load_change]
    (t_pick, _, _), (t_place, _, _), (t_second, _, _), (t_last, _, _) = task.truth
    assert len(loads) == 3, events
    net = loads[1]
    assert abs(net.delta_mass - (second - first)) <= 3 * net.delta_mass_std + 0.03, net
    assert not net.t_change_located and net.t_change <= t_place and t_second <= net.t_alarm, (net, task.truth)
    assert "the net of two steps" in net.reason and "not located within" in net.reason, net.reason
    assert event_dict(net)["t_change_located"] is False
    # Those before and after are dated and named as before.
    assert loads[0].t_change_located and abs(loads[0].t_change - t_pick) < 0.1, loads[0]
    assert loads[2].t_change_located and abs(loads[2].t_change - t_last) < 0.1, loads[2]
    # A replay ending 1 s after the pick, before the two are named, says the same of what is open (events.yaml's
    # `undecided:`).
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    monitor = PayloadMonitor(task.model, robot, FRAME)
    for k in range(0, int(np.searchsorted(t, t_second + 1.0)), 10):
        monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10])
    (open_,) = monitor.undecided()
    said = undecided_dict(open_)
    assert said["t_change_located"] is False and said["t_change"] <= t_place and t_second <= said["t_alarm"], said
    assert "the net of two steps" in said["reason"], said
