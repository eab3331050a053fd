"""The payload monitor on task motions that once made it wrong (issue 17), on the simulated UR10 cell (MuJoCo,
`ur10` profile: nonlinear load-dependent friction, rotor inertia, measured noise, 2 ms lag).

Each test builds the motion that exposed one defect and checks the monitor against the truth; each defect is
named where it is fixed (payload_id_core.monitor.monitor):
- a wrist joint creeping at a few mrad/s while the arm moves (its friction is the least known part of the
  model) made a phantom part (PayloadMonitor._trusted); only the ROS cell's recording shows it (test/data);
- a part picked before the robot had moved at all was refuted as a contact (UnloadedFriction.min_moving_s);
- the robot model's own error read as −0.02 to −0.04 kg of payload, which the re-estimates carried at 3-4σ
  (the tare, PayloadState.part);
- a person's push held in motion put the payload in doubt that was never lifted, and the next place was dated from
  the push (PayloadMonitor._doubt_came_back);
- a pick after a light push at rest was dated from that push, as the start of a doubt it had nothing to do with, and
  a place named late from an earlier window that named nothing (PayloadMonitor._names_doubt, _name_late);
- a second push in one slow move went unseen: the monitor, disarmed by the first, waited for a creeping joint to be
  trusted again before re-arming (PayloadMonitor._step);
- a place made while the monitor was disarmed was taken into a pick's re-estimate still running, and both were lost
  (PayloadMonitor._put_in_doubt, _close_pending).
"""

import gzip
from pathlib import Path

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.monitor import DetectorSettings, EventKind, MonitorSettings, PayloadMonitor
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.sim.cell import SimulatedCell
from payload_id_core.sim.pick_place import FORCE_UPDATE_S, HUMAN_LINKS, _push_torque, pick_and_place, point_to_point

pytestmark = pytest.mark.slow
HOME = np.array([0.0, -1.4, 1.4, -1.6, -1.6, 0.0])
FRAME = "tool0"
RATE = 500
DATA = Path(__file__).parent / "data"


def part(mass: float) -> np.ndarray:
    return from_mass_com_inertia(mass, np.array([0.01, -0.02, 0.07]), np.diag([0.01, 0.012, 0.008]))


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


class Task:
    """A scripted task on the simulated cell: rests, moves, parts put on and taken off the flange."""

    def __init__(self, model: RobotModel, seed: int):
        self.model, self.rng = model, np.random.default_rng(seed)
        self.cell = SimulatedCell(model, "ur10", None, seed=seed, rate_hz=RATE, q0=HOME)
        self.q = HOME.copy()
        self.parts: list = []
        self.truth: list[tuple[float, str, float]] = []      # (t, kind, mass carried from then on)

    def rest(self, seconds: float) -> None:
        self.parts.append(self.cell.advance(int(round(seconds * RATE))))

    def start_move(self, seconds: float, spread: float = 0.5) -> np.ndarray:
        """Send one move of `seconds` to a random pose within ±`spread` rad of home (the time is not advanced: the
        caller rests or pushes through it); the target."""
        target = HOME + self.rng.uniform(-spread, spread, self.model.n)
        self.cell.send(point_to_point(self.model, self.cell.time, self.q, target, seconds))
        self.q = target
        return target

    def moves(self, n: int) -> None:
        """n moves of 1.5 s to random poses within ±0.5 rad of home, 0.6 s rests."""
        for _ in range(n):
            self.start_move(1.5)
            self.rest(1.5)
            self.rest(0.6)

    def carry(self, mass: float) -> None:
        phi = part(mass) if mass else None
        self.cell.set_payload(None if phi is None else PayloadEstimate(FRAME, phi, np.zeros((10, 10)), "truth"))
        self.truth.append((self.cell.time, "picked" if mass else "placed", mass))

    def watch(self, robot, settings: MonitorSettings | None = None, named_at: list[float] | None = None):
        """(monitor, events, [(t, published PayloadState)]) of a monitor fed the task (`feed`)."""
        t, q, qd, tau = (np.concatenate([getattr(p, k) for p in self.parts]) for k in ("t", "q", "qd", "tau"))
        monitor = PayloadMonitor(self.model, robot, FRAME, settings=settings)
        return (monitor, *feed(monitor, t, q, qd, tau, named_at))


def feed(monitor: PayloadMonitor, t, q, qd, tau, named_at: list[float] | None = None):
    """(events, [(t, published PayloadState)]) of the monitor fed joint states in 20 ms blocks; `named_at`, if given,
    gets the end of the block that made each event, in the events' order."""
    events, published = [], []
    for k in range(0, t.size, 10):
        u = monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10])
        events += u.events
        if named_at is not None:
            named_at += [float(t[min(k + 9, t.size - 1)])] * len(u.events)
        published += [(float(t[min(k + 9, t.size - 1)]), u.estimate)] if u.estimate is not None else []
    return events, published


def test_a_wrist_creeping_through_a_move_is_no_phantom_part(cell, tmp_path):
    """Recorded over ROS (`make demo-monitor`'s task, its robot model as the demo identifies it; joint states
    as the node fed them, float32): a 3 kg part picked at 6.79 s, and 2.5 s later wrist 1 creeping at 0-10
    mrad/s at the start of a move, its residual 2.6σ for 0.1 s. Before PayloadMonitor._trusted that was
    reported as a second part of 0.22 kg (its CoM 2 m from the flange); the same replay with the check off
    (creep_speed 0) still does so."""
    model = cell[0]
    robot_yaml = tmp_path / "robot.yaml"
    robot_yaml.write_bytes(gzip.decompress((DATA / "monitor_ros_cell_robot.yaml.gz").read_bytes()))
    robot = RobotIdentification.load(robot_yaml, model)
    rec = np.load(DATA / "monitor_ros_cell_task.npz")
    t = rec["t"]
    q, qd, tau = (rec[k].astype(float) for k in ("q", "qd", "tau"))

    def replay(settings):
        monitor = PayloadMonitor(model, robot, FRAME, settings=settings)
        return monitor, feed(monitor, t, q, qd, tau)[0]

    monitor, events = replay(MonitorSettings(detector=DetectorSettings(max_mass_kg=15.0)))
    assert [e.kind for e in events] == [EventKind.PICKED], events
    assert abs(events[0].t_change - 6.79) < 0.02 and abs(events[0].delta_mass - 3.0) < 0.1
    assert abs(monitor.state.part[0][0] - 3.0) < 0.06
    # Checked, the pick is named from its re-estimate; with the check off the creeping wrist still raises a change at
    # 9.3 s (it was once reported as a second part of 0.22 kg; a load is now named only once it holds, and the
    # creep's phantom does not), which ends the pick's re-estimate and names it from its window instead.
    assert events[0].reason.startswith("named from")
    _, unchecked = replay(MonitorSettings(creep_speed=0.0, detector=DetectorSettings(max_mass_kg=15.0)))
    assert [e.kind for e in unchecked] == [EventKind.PICKED], unchecked
    assert "until the next change" in unchecked[0].reason and abs(unchecked[0].t_verdict - 9.4) < 0.2


def test_a_part_picked_before_the_robot_has_moved_is_kept(cell):
    model, robot = cell
    task = Task(model, 0)
    task.rest(1.0)
    task.carry(3.0)
    task.rest(0.5)
    task.moves(5)
    monitor, events, published = task.watch(robot)
    assert [e.kind for e in events] == [EventKind.PICKED], events
    estimates = [p for _, p in published if not p.undecided]     # re-estimates (the pick was said undecided first)
    assert estimates and abs(estimates[0].part[0][0] - 3.0) < 0.06
    assert abs(monitor.state.part[0][0] - 3.0) < 0.06


def _pick_within_sigma(cell, seed: int, moved_first_s: float) -> list[str]:
    """The 3 kg part of test_a_part_picked_before_the_robot_has_moved_is_kept on another seed, after `moved_first_s`
    of motion with the empty flange (0: none): what is wrong about its mass, each published re-estimate and the end
    state judged in its own σ (empty: every one within 3σ)."""
    model, robot = cell
    task = Task(model, seed)
    task.rest(1.0 if moved_first_s == 0 else 0.5)
    if moved_first_s:
        task.moves(3)
        task.rest(0.5)
    task.carry(3.0)
    task.rest(0.5)
    task.moves(5)
    monitor, events, published = task.watch(robot)
    wrong = [] if [e.kind for e in events] == [EventKind.PICKED] else [f"events {[e.kind.value for e in events]}"]
    states = [(f"published at {t:.2f} s", p) for t, p in published if not p.undecided] + [("end", monitor.state)]
    for what, p in states:
        mass, std = float(p.part[0][0]), float(np.sqrt(p.part[1][0, 0]))
        if abs(mass - 3.0) > 3.0 * std:
            wrong.append(f"{what}: {mass:.4f} ± {std:.4f} kg ({(mass - 3.0) / std:+.1f}σ)")
    return wrong


@pytest.mark.parametrize("seed", [1, 5])
def test_a_part_picked_after_the_empty_flange_moved_is_named_within_its_sigma(cell, seed):
    """The contrast to the xfail below (h213): 3 s of motion with the empty flange before the pick, so that the unloaded
    robot's friction error is learnt (UnloadedFriction) and taken out of the pick's rows: seed 1 first 2.9805 ± 0.0136
    kg (1.4σ), end 2.9980 ± 0.0084; seed 5 3.0256 ± 0.0189 (1.4σ), end 2.9956 ± 0.0084. With the unloaded friction off
    (MonitorSettings(unloaded_friction=False)) the same picks end 2.9435 ± 0.0062 (9.1σ) and 2.9588 ± 0.0101 (4.1σ)."""
    assert _pick_within_sigma(cell, seed, moved_first_s=3.0) == []


@pytest.mark.parametrize("seed", [1, 5])
@pytest.mark.xfail(strict=True, reason="h213: a part picked before the robot has moved is re-estimated 1.3-4 % low "
                   "with a σ that does not cover it, on main: seed 1 first published 2.9227 ± 0.0169 kg (4.6σ), end "
                   "2.9322 ± 0.0075 (9.0σ); seed 5 2.8770 ± 0.0132 (9.3σ), end 2.9386 ± 0.0154 (4.0σ) (seeds 0-6: the "
                   "end 3.9-9.0σ low on all 7, the first publication beyond 3σ on 1, 3, 5). The unloaded robot's "
                   "friction error is not learnt before the first move (UnloadedFriction.min_moving_s) and nothing "
                   "counts it in the re-estimate's σ. Not the load friction μ: held at the simulated 0.02 ± 0.0005 "
                   "the seed-0 pick still ends 2.960 ± 0.012 (3.3σ); test_a_part_picked_before_the_robot_has_moved_"
                   "is_kept (seed 0, first 2.9865 ± 0.0288) passes its 0.06 kg tolerance by luck")
def test_a_part_picked_before_the_robot_has_moved_is_named_within_its_sigma(cell, seed):
    assert _pick_within_sigma(cell, seed, moved_first_s=0.0) == []


def test_the_robot_models_own_error_is_tared_off_the_next_part(cell):
    """Pick, place, pick: the empty flange's re-estimate (the model's error as a payload, a few hundredths of a
    kilogram below zero here) is taken off the second part, which is then published within 2σ and 1 %."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.moves(4)
    task.carry(0.0)
    task.moves(4)
    task.carry(2.0)
    task.moves(4)
    _, events, published = task.watch(robot)
    assert [e.kind for e in events] == [EventKind.PICKED, EventKind.PLACED, EventKind.PICKED], events
    t_second = task.truth[-1][0]
    # Re-estimates: an undecided change is said first (the payload before it ± the fit, h105).
    empty = [p for t, p in published if task.truth[1][0] < t < t_second and not p.undecided]
    assert empty and empty[0].carries_nothing
    second = [p for t, p in published if t > t_second and not p.undecided][0]
    assert -0.1 < second.tare_mass < -0.01      # the cell's model error on these moves, seen as payload
    phi, cov = second.part
    err = phi[0] - 2.0
    assert second.to_estimate(FRAME).readable_identifiable()[:4].all()    # mass and CoM, for a controller
    assert abs(err) < 2.0 * np.sqrt(cov[0, 0]) and abs(err) < 0.02
    # Without the tare the same fit is off by the model's error: 0.029 kg at 1.9 of its own σ (beyond 2 σ before the
    # robot was identified with the arm's tracking error, a model that errs less), three times the tared error.
    assert abs(second.phi[0] - 2.0) > 1.5 * np.sqrt(second.cov[0, 0]) and abs(second.phi[0] - 2.0) > 3 * abs(err)


def test_a_push_held_in_motion_is_no_load_and_the_next_place_is_dated_right(cell):
    """Issue 31: a person's push on the flange (137 N, mostly down, ramped 0.4 s and held 1.5 s during a move) while
    3 kg is carried. Its first window is a contact, which disarms the monitor; its misfit lasts a further second of
    motion, which puts the payload in doubt: a flange push fits a mass as a part does while it lasts (17.9 kg here).
    Before: that doubt was never lifted (~/payload suspect at 17.9 kg for the 9 s to the place), and the real place
    was named dated from the push. Now the re-estimate after the push carries the 3 kg again: the doubt came back,
    the 3 kg is published again, and the place is named at its time."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.moves(3)
    task.start_move(4.0)
    task.rest(0.5)
    t_push, ramp, hold = task.cell.time, 0.4, 1.5
    force = 137.0 * np.array([0.3, 0.2, -1.0]) / np.linalg.norm([0.3, 0.2, -1.0])
    while task.cell.time - t_push < 2 * ramp + hold - 1e-9:
        elapsed = task.cell.time - t_push
        scale = min(1.0, elapsed / ramp, max(0.0, (2 * ramp + hold - elapsed) / ramp))
        task.cell.set_external_torque(_push_torque(model, task.parts[-1].q[-1], HUMAN_LINKS["flange"], np.zeros(3),
                                                   force * scale))
        task.rest(FORCE_UPDATE_S)
    task.cell.set_external_torque(None)
    t_released = task.cell.time
    task.rest(4.0 - 0.5 - (t_released - t_push) + 0.6)
    task.moves(3)
    task.carry(0.0)
    task.moves(3)
    _, events, published = task.watch(robot)
    t_place = task.truth[-1][0]
    pushed = [e for e in events if t_push - 0.1 <= e.t_change <= t_released + 0.5]
    assert pushed and all(e.kind is EventKind.CONTACT for e in pushed), events
    loads = [(e.kind, round(e.t_change, 2)) for e in events if e.is_load_change]
    assert loads == [(EventKind.PICKED, round(task.truth[0][0], 2)), (EventKind.PLACED, round(t_place, 2))], loads
    # Between the push and the place, the 3 kg is published again, settled and not in doubt.
    again = [s for t, s in published if t_released < t < t_place]
    assert again and again[-1].determined and not again[-1].doubt and abs(again[-1].part[0][0] - 3.0) < 0.06, again


def push_for(task: Task, link: str, force: np.ndarray, ramp: float, hold: float, move_s: float = 0.0,
             move_after: float = 0.0):
    """A person's push on `link` (force in the base frame at its origin), ramped up and down over `ramp` and held
    `hold` s, the arm at rest (or moving to a random pose over `move_s`, from `move_after` s into the push on);
    (start, end) of the push."""
    start = task.cell.time
    moved = not move_s
    while task.cell.time - start < 2 * ramp + hold - 1e-9:
        elapsed = task.cell.time - start
        if not moved and elapsed >= move_after - 1e-9:
            task.start_move(move_s)
            moved = True
        scale = min(1.0, elapsed / ramp, max(0.0, (2 * ramp + hold - elapsed) / ramp))
        task.cell.set_external_torque(_push_torque(task.model, task.parts[-1].q[-1], HUMAN_LINKS[link], np.zeros(3),
                                                   force * scale))
        task.rest(FORCE_UPDATE_S)
    task.cell.set_external_torque(None)
    return start, task.cell.time


def place_then_forearm_push(model: RobotModel) -> tuple[Task, tuple[float, float]]:
    """A 1.61 kg part carried and placed, and 0.1 s after the place a person's 118 N push on the forearm ramped over
    0.2 s and held 1 s (bench/monitor.py's human task, where the push refuted the place), then 3 s at rest and three
    moves; the task and (start, end) of the push."""
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(1.61)
    task.moves(3)
    task.carry(0.0)
    task.rest(0.1)
    push = push_for(task, "forearm", 118.0 * np.array([-1.0, 0.5, 0.0]) / np.sqrt(1.25), 0.2, 1.0)
    task.rest(3.0)
    task.moves(3)
    return task, push


def test_a_pick_after_a_push_at_rest_is_dated_at_the_pick_not_at_the_push(cell):
    """Issue 31 (bench/monitor.py's human task, seed 7: a real pick at 301.5 s named as of 285.26 s). A light push at
    rest (10 N on the flange, held 6 s) fits nothing the window names, but leaves the flange unsettled (the arm does
    not move under it); a 3.4 kg part is picked at rest, then a person pushes the wrist during the next move, which
    puts the payload in doubt. Before: the pick was named dated from the light push 7.4 s earlier (the episode's
    start, taken for the doubt's), and the place, named late, from a window 3 s before it. Now each load is dated
    from the window that fitted it: the doubt implied 9 kg, not the 3.4 kg named."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    light = np.array([-0.45, -0.8, -0.4])
    t_light = push_for(task, "flange", 10.0 * light / np.linalg.norm(light), 0.5, 6.0)
    task.rest(1.0)
    task.carry(3.4)
    task.rest(1.0)
    wrist = np.array([1.0, -0.3, 0.2])
    t_wrist = push_for(task, "wrist", 60.0 * wrist / np.linalg.norm(wrist), 0.4, 2.5, move_s=4.0)
    task.rest(4.0 - (t_wrist[1] - t_wrist[0]) + 0.6)
    task.moves(2)
    task.carry(0.0)
    task.moves(2)
    _, events, _ = task.watch(robot)
    assert all(e.kind is EventKind.CONTACT for e in events if t_light[0] - 0.1 <= e.t_change <= t_light[1] + 0.5), \
        events
    loads = [e for e in events if e.is_load_change]
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events
    for e, (t_true, _, _) in zip(loads, task.truth):
        assert abs(e.t_change - t_true) < 0.1 and e.t_change <= e.t_alarm < t_true + 0.1, (e, t_true)
    # Named with σ that covers the truth (the pick's mass is still carried by a push's re-estimate when named).
    assert abs(loads[0].delta_mass - 3.4) <= 2 * loads[0].delta_mass_std, loads[0]
    assert abs(loads[1].delta_mass + 3.4) <= 2 * loads[1].delta_mass_std, loads[1]


def test_a_place_refuted_by_a_push_right_after_it_does_not_bring_back_the_part(cell):
    """Issue 31 (bench/monitor.py's human task, seed 7, at 68.45 s): a 1.61 kg part placed at rest and, 0.1 s later, a
    person's 118 N push on the forearm ramped over 0.2 s and held 1 s. The place's re-estimate took the push's rows
    and was refuted as no load on the flange; the monitor went back to the part settled before the place and reported
    1.61 kg, ok, on the empty flange for as long as the arm rested (h28 made that part unconfirmed, suspect, until its
    misfit in the next moves put it in doubt and named the place 4.6 s late, dated from the doubt). Now the rows the
    push's contact acted on are taken out of the re-estimate (PayloadRefiner.drop_since): the place's re-estimate is
    not refuted, the place is named at its time with its mass, and the empty flange is published ok."""
    model, robot = cell
    task, t_push = place_then_forearm_push(model)
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    monitor = PayloadMonitor(model, robot, FRAME)
    events, t_place = [], task.truth[-1][0]
    for k in range(0, t.size, 10):
        events += monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events
        if t[k] > t_place + 0.5:
            # After the place, whatever the monitor holds as ok is the empty flange (in doubt it is suspect).
            est = monitor.state.to_estimate(FRAME)
            assert not (est.converged and est.quality is Quality.OK) or est.phi[0] == 0.0, (t[k], monitor.state)
    # The push is a contact and refutes nothing: its rows are not the place's (before: the place's re-estimate was
    # refuted by them, "not a load on the flange").
    pushed = [e for e in events if t_push[0] - 0.05 <= e.t_change <= t_push[1] + 0.5]
    assert pushed and all(e.kind is EventKind.CONTACT for e in pushed), events
    assert not [e for e in events if e.kind is EventKind.CONTACT and "not a load on the flange:" in e.reason], events
    loads = [e for e in events if e.is_load_change]
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events
    # Named at its time (before: dated from the doubt its lasting misfit raised, 4.6 s late), with its mass.
    assert abs(loads[1].t_change - t_place) < 0.1 and loads[1].t_alarm < t_place + 0.1, (loads[1], t_place)
    assert abs(loads[1].delta_mass + 1.61) <= 3 * loads[1].delta_mass_std, loads[1]
    final = monitor.state.to_estimate(FRAME)
    assert monitor.state.carries_nothing and final.converged and final.quality is Quality.OK, monitor.state


def test_a_second_push_in_a_slow_move_is_a_contact(cell):
    """Issue 31 (bench/monitor.py's human task, seed 7, at 323.5 s and 485.5 s): a person pushes a slowly moving arm
    twice, 0.4 s apart, during one 8 s move in which the pan joint barely turns (a creeping joint, left out of the
    alarm: PayloadMonitor._trusted). The first push's contact disarms the monitor until the residual comes back.
    Before: it re-armed only with every joint trusted, the pan joint crept for the whole move, and the second push
    (90 N on the flange) went unseen although the residual was back at its noise between the two. Now both are
    contacts, and neither is a load."""
    model, robot = cell
    task = Task(model, 5)
    task.rest(0.5)
    task.moves(2)
    target = task.q + np.array([0.01, 0.4, -0.4, 0.5, 0.5, 0.5])
    task.cell.send(point_to_point(model, task.cell.time, task.q, target, 8.0))
    task.q = target
    t_move = task.cell.time
    task.rest(1.0)
    first = push_for(task, "wrist", 110.0 * np.array([0.6, -0.7, 0.4]) / np.linalg.norm([0.6, -0.7, 0.4]), 0.3, 1.5)
    task.rest(0.4)
    second = push_for(task, "flange", 90.0 * np.array([-0.2, 0.5, -0.8]) / np.linalg.norm([-0.2, 0.5, -0.8]), 0.3,
                      1.2)
    task.rest(8.0 - (task.cell.time - t_move) + 0.6)
    task.moves(2)
    _, events, _ = task.watch(robot)
    assert not [e for e in events if e.is_load_change], events
    for start, end in (first, second):
        assert [e for e in events if e.kind is EventKind.CONTACT and start - 0.1 <= e.t_change <= end + 0.5], \
            (start, end, [(e.kind.value, round(e.t_change, 2), e.reason) for e in events])


def test_a_place_while_disarmed_is_not_taken_into_the_pick_still_being_re_estimated(cell):
    """Issue 31 (the real UR10e's place, 01_31 loaded run then its unloaded twin: a re-estimate begun 6 s before the
    place took it in, and the place was dated from that re-estimate's window). A 2.5 kg part picked at rest and moved
    once (its re-estimate not determined yet), then a person's push on the forearm held 2 s at rest, during which the
    part is put down; the monitor, disarmed by the push's contact, sees the place only as a misfit that lasts in the
    next moves (PayloadMonitor._put_in_doubt). Before: that misfit was taken into the pick's re-estimate, which then
    carried what was carried before the pick, and both were lost: one `contact` at the pick ("did not persist"). Now
    the pick is judged on the rows before the doubt (PayloadMonitor._close_pending) and the place is a change of its
    own: `picked` at the pick, `placed` after the place, each 2.5 kg to 3σ."""
    model, robot = cell
    task = Task(model, 4)
    task.rest(0.5)
    task.moves(2)
    task.carry(2.5)
    t_pick = task.cell.time
    task.rest(0.3)
    task.moves(1)
    force = 110.0 * np.array([0.6, -0.7, 0.4]) / np.linalg.norm([0.6, -0.7, 0.4])
    ramp, hold = 0.3, 2.0
    start, t_place = task.cell.time, float("nan")
    while task.cell.time - start < 2 * ramp + hold - 1e-9:
        elapsed = task.cell.time - start
        if np.isnan(t_place) and elapsed >= ramp + hold / 2:
            task.carry(0.0)
            t_place = task.cell.time
        scale = min(1.0, elapsed / ramp, max(0.0, (2 * ramp + hold - elapsed) / ramp))
        task.cell.set_external_torque(_push_torque(task.model, task.parts[-1].q[-1], HUMAN_LINKS["forearm"],
                                                   np.zeros(3), force * scale))
        task.rest(FORCE_UPDATE_S)
    task.cell.set_external_torque(None)
    task.rest(0.5)
    task.moves(4)
    monitor, events, _ = task.watch(robot)
    said = [(e.kind.value, round(e.t_change, 2), e.mass_change_text) for e in events]
    picked = [e for e in events if e.kind is EventKind.PICKED]
    placed = [e for e in events if e.kind is EventKind.PLACED]
    assert len(picked) == 1 and len(placed) == 1 and not [e for e in events if e.kind is EventKind.CHANGED], said
    assert abs(picked[0].t_change - t_pick) < 0.1, (t_pick, said)
    assert placed[0].t_change > t_place - 0.1, (t_place, said)
    for e in picked + placed:
        assert abs(abs(e.delta_mass) - 2.5) <= 3 * e.delta_mass_std, said
    assert [e for e in events if e.kind is EventKind.CONTACT and start - 0.1 <= e.t_change <= start + 2 * ramp + hold]
    assert monitor.state.carries_nothing, monitor.state


@pytest.mark.xfail(strict=True, reason="issue 31: the residual does not expect the load's friction "
                   "μ(|τ_b| − |τ_a|) sgn q̇; taking it in (the carried μ, or robot.yaml's in the residual or in the "
                   "alarm's allowance) removed this event but lost picks on the pushed task or failed "
                   "test_a_pick_after_a_push_at_rest_is_dated_at_the_pick_not_at_the_push or the real UR10e place "
                   "(design.md); h150's opt-in MonitorSettings.load_friction_veto passes it "
                   "(test_monitor_load_friction_veto) but on main with h149-h152 (h154) it lost 2 of 88 pushes on the "
                   "pushed task's seed 7, 2 of the task's 70 picks and places, and named a place 6.6 s late; h212's "
                   "opt-in load_friction_expected (μ L₀ taken out of the alarm's residual itself) passes it too "
                   "(test_monitor_load_friction_expected) but named light parts 59 → 50 of 89 on "
                   "bench/monitor.py's short run, one 3σ wrong, and failed "
                   "test_a_push_held_in_motion_is_no_load_and_the_next_place_is_dated_right")
def test_a_heavy_part_carried_into_a_move_is_no_change(cell):
    """bench/monitor.py's task (seed 5) to its false event: a 4.89 kg part picked at rest at 48.42 s, one move, a rest,
    and at 50.5 s the start of the next move, the lift and elbow joints starting to move under the part for the
    second time. Their drives' friction grows with the load's torque, μ(|τ_b| − |τ_a|) sgn q̇ (the `ur10` profile's
    μ = 0.02; robot.yaml's identification 0.019 ± 0.002 and 0.020 ± 0.003): 0.3-0.7 N·m there, which the residual
    did not expect. Added to the move's start, it alarmed on the elbow; its window fitted −0.36 ± 0.06 kg (−0.25 with
    the friction taken out), adopted, and 2.5 s later named `contact` "did not persist". Right: no event, and the part
    carried at its mass. Today the `contact` is still raised (strict xfail: design.md says what was tried). It came with
    70c5cbc (the alarm level rising 20x slower than it falls, h4): with the level rising at 1 s and unclipped the same
    run has no event there (h219's bisection)."""
    model, robot = cell
    run = pick_and_place(model, "ur10", seconds=53.5, seed=5)
    monitor = PayloadMonitor(model, robot, run.frame)
    events, _ = feed(monitor, run.t, run.q, run.qd, run.tau)
    false = [e for e in events if not any(abs(e.t_change - c.t) < 0.1 for c in run.changes)]
    assert not false, false
    picked = [e for e in events if abs(e.t_change - 48.42) < 0.1]
    assert [e.kind for e in picked] == [EventKind.PICKED], events
    truth = run.carried_mass(run.t[-1])
    mass, cov = monitor.state.part
    assert truth > 4.8 and monitor.state.determined
    assert abs(mass[0] - truth) < 0.02 * truth and abs(mass[0] - truth) < 2.0 * np.sqrt(cov[0, 0]), (mass[0], cov[0, 0])


def _quick_move(task: Task, seconds: float) -> None:
    """One move of `seconds` to a random pose within ±0.5 rad of home (Task.moves' are 1.5 s), no rest after."""
    task.start_move(seconds)
    task.rest(seconds)


def test_a_place_with_under_a_second_of_motion_before_the_next_pick_is_named_by_the_motion(cell):
    """bench/monitor.py's task (seed 5) at 265.68 s: a place, a move of 0.99 s, the next pick 1.69 s after the place.
    The place's window fit held until the next change but the arm had moved under it less than `min_refine_s` (1 s),
    so it was called a `contact` "not confirmed" (at rest a push fits a load as well). The motion it did have fits a
    load far better than a constant force on the flange (+1223 there; the margin that refutes a load is 100): that
    evidence names it. Here: 3 kg picked, carried, put down at rest, a 0.8 s move, 0.2 s of rest, 2 kg picked, and
    4 moves after it: the 2 kg pick is named 4.3 s after it (from 3 s of its motion), with 2 moves (4.5 s) that came
    0.16 s before the recording ended (h203), a slower decision would have been no event at all; now 4 moves (8.7 s)
    leave it over 4 s, and the margin is asserted."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.rest(0.3)
    task.moves(2)
    task.carry(0.0)
    t_place = task.cell.time
    task.rest(0.3)
    _quick_move(task, 0.8)
    task.rest(0.2)
    task.carry(2.0)
    t_pick = task.cell.time
    task.rest(0.3)
    task.moves(4)
    named_at: list[float] = []
    _, events, _ = task.watch(robot, named_at=named_at)
    said = [(e.kind.value, round(e.t_change, 2), e.mass_change_text, e.reason) for e in events]
    t_end = task.cell.time
    picked = [at for e, at in zip(events, named_at) if e.kind is EventKind.PICKED and abs(e.t_change - t_pick) < 0.1]
    assert picked and t_end - picked[0] >= 2.0, \
        f"the pick at {t_pick:.2f} s named at {picked} with the recording ending at {t_end:.2f} s: under 2 s of margin"
    placed = [e for e in events if e.kind is EventKind.PLACED and abs(e.t_change - t_place) < 0.1]
    assert len(placed) == 1, (t_place, said)
    assert abs(placed[0].delta_mass + 3.0) <= max(0.1, 3 * placed[0].delta_mass_std), said
    # Named by the motion's evidence, under 1 s of it: at the next change (_close_pending), or before it once the
    # flange reads empty (_name_confirmed, h139: "with the arm moving 0.75 s under it").
    assert "which a load follows and a push does not" in placed[0].reason, said
    assert "the arm moved 0." in placed[0].reason or "the arm moving 0." in placed[0].reason, said
    assert [e.kind for e in events if abs(e.t_change - t_pick) < 0.1] == [EventKind.PICKED], said
    assert not [e for e in events if e.kind is EventKind.CONTACT], said


def test_a_place_at_the_recordings_end_is_said_undecided_not_dropped(cell):
    """bench/monitor.py's task (seed 5) ended 0.38 s after a place: its window fitted −3.48 ± 0.15 kg, and a load is
    named only once it holds (the rest of the recording), so no event; the replay said nothing of it. Now
    PayloadMonitor.undecided says it: the fitted kind, time and mass change, and why it is not decided."""
    model, robot = cell
    task = Task(model, 4)
    task.rest(0.5)
    task.moves(2)
    task.carry(3.0)
    task.rest(0.3)
    task.moves(2)
    task.carry(0.0)
    t_place = task.cell.time
    task.rest(0.38)
    monitor, events, _ = task.watch(robot)
    assert [e.kind for e in events] == [EventKind.PICKED], events
    undecided = monitor.undecided()
    assert len(undecided) == 1, undecided
    u = undecided[0]
    assert u.kind is EventKind.PLACED and abs(u.t_change - t_place) < 0.1, u
    assert abs(u.delta_mass + 3.0) <= max(0.1, 3 * u.delta_mass_std), u
    assert u.reason.startswith("not yet decided"), u
