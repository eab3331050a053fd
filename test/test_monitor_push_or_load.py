"""A person's push held on the arm while a part is carried is never named a load (issue 31), on the simulated UR10 cell
(MuJoCo, `ur10` profile), judged by the physics (payload_id_core.monitor.contact_wrench): a load's torques follow
the move's accelerations, a push's constant force does not.

The case that failed (reproduced twice): 40 N straight down on the flange, ramped 0.3 s and held 3 s during a 4 s
move, with 2 kg carried. Its first window is a contact; its misfit lasts in motion, which puts the payload in doubt
with the push as its implied mass; the push's release is the next change, which named the real pick with the mass
the doubt's re-estimate held (seed 1: `picked` +5.58 kg for 2 kg, then `placed` −3.56 kg 7.6 s after the pick, at
the push's release). Now the doubt's rows are judged against a constant force on the flange on the payload before it:
the force explains them at least as well, so the doubt is taken back, and the pick is named with its own mass.
The other cases: other seeds, directions (down, sideways, up), the wrist, at rest and in motion, held 1-5 s.
"""

import numpy as np
import pytest
from test_monitor_task_motion import FRAME, Task, feed, push_for

from payload_id_core.monitor import EventKind, PayloadMonitor
from payload_id_core.payload_estimate import Quality

pytestmark = pytest.mark.slow
CARRIED = 2.0


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


def carried_push(model, seed: int, link: str, direction, force: float, ramp: float, hold: float, move_s: float):
    """2 kg picked, two moves, a person's push on `link` (held during a move of `move_s`, or at rest: 0), the arm
    resting out the move, three moves, the place, three moves. The task and (start, end) of the push."""
    task = Task(model, seed)
    task.rest(0.5)
    task.moves(2)
    task.carry(CARRIED)
    task.moves(2)
    d = np.asarray(direction, dtype=float)
    push = push_for(task, link, force * d / np.linalg.norm(d), ramp, hold, move_s=move_s)
    task.rest(max(0.0, move_s - (push[1] - push[0])) + 0.6)
    task.moves(3)
    task.carry(0.0)
    task.moves(3)
    return task, push


DOWN, SIDEWAYS, UP = (0.0, 0.0, -1.0), (0.3, -1.0, 0.0), (0.2, 0.1, 1.0)
CASES = {
    # seed, link, direction, N, ramp s, hold s, move s (0: at rest)
    "flange-down-moving-seed1": (1, "flange", DOWN, 40.0, 0.3, 3.0, 4.0),
    "flange-down-moving-seed2": (2, "flange", DOWN, 40.0, 0.3, 3.0, 4.0),
    "flange-sideways-moving": (4, "flange", SIDEWAYS, 60.0, 0.5, 2.0, 4.0),
    "flange-up-moving": (5, "flange", UP, 50.0, 0.3, 1.5, 3.0),
    "wrist-down-moving": (6, "wrist", DOWN, 40.0, 0.3, 3.0, 4.0),
    "flange-down-at-rest-5s": (7, "flange", DOWN, 40.0, 0.3, 5.0, 0.0),
    "wrist-sideways-at-rest-1s": (8, "wrist", SIDEWAYS, 80.0, 0.2, 1.0, 0.0),
}


# Not fixed. A wrist push held in motion whose first window fits a load (+3.34 kg) is named from that window at its
# release: the motion refutes it (push over load by 94 after 0.65 s, 102 after 1.15 s, 164 at the release after 3.2 s
# of the move) but the re-estimate is never determined while the push lasts (sigma 0.15-0.77 kg). Since h149
# `_refutes_pending` counts the refutation however long the arm moved, but only where it holds with a push on the upper
# arm in both models as well (contact_wrench: on seed 9 of the pushed task a 2.55 kg place with a 19 N push held on the
# upper arm through the move after it read -355 without it, h139); here the load with that push leaves 428 of the
# rows' variance, a push on the wrist or the flange 432: with the push's price (refute_chi2), push over load by 96.
# The place 6.3 s before the flange-at-rest case ends was a strict xfail until h139 (its empty flange's re-estimate,
# -0.06 +- 0.05 kg, determined only 9.9 s after it): it is named once the motion under it confirms a load (load over
# push by 224) and its fit's sigma is down to the robot model's error (PayloadMonitor._name_confirmed).
KNOWN = {"wrist-down-moving": "a window's fit of a wrist push held in motion is named at its release: push over load "
                              "by 164 after 3.2 s of motion, but with a push on the upper arm in both models by 96 "
                              "(load + that push fits its rows as well as a push on the wrist), short of refute_chi2; "
                              "with the carried load's friction expected in the alarm's residual (h212, opt-in "
                              "MonitorSettings.load_friction_expected) the push is contacts only and the pick and "
                              "place named (test_monitor_load_friction_expected)"}
_RUNS: dict = {}


def assert_the_pick_and_the_place_at_their_times(events, t_pick: float, t_place: float) -> None:
    """The loads named are the pick and the place, each within 0.1 s of its time and with the part's mass (3σ, and
    5 %): a push's mass is carried by neither."""
    loads = [e for e in events if e.is_load_change]
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events
    for e, t_true, sign in ((loads[0], t_pick, 1.0), (loads[1], t_place, -1.0)):
        assert abs(e.t_change - t_true) < 0.1, (e, t_true)
        err = e.delta_mass - sign * CARRIED
        assert abs(err) < 3.0 * e.delta_mass_std and abs(err) < 0.05 * CARRIED, e


def watched(cell, case: str):
    """(task, (start, end) of the push, monitor, events, published) of `case`, simulated and watched once."""
    if case not in _RUNS:
        model, robot = cell
        task, push = carried_push(model, *CASES[case])
        _RUNS[case] = (task, push, *task.watch(robot))
    return _RUNS[case]


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[c]))
                                  if c in KNOWN else c for c in CASES])
def test_a_push_held_while_carrying_is_no_load_and_the_part_keeps_its_mass(cell, case):
    task, (start, end), monitor, events, published = watched(cell, case)
    (t_pick, _, _), (t_place, _, _) = task.truth
    # Nothing named a load within the push (from its start to 0.5 s after its release): contacts only.
    during = [e for e in events if start - 0.1 <= e.t_change <= end + 0.5]
    assert all(e.kind is EventKind.CONTACT for e in during), events
    # The loads are the pick and the place, each at its time and with the part's mass (3σ, and 5 %): the push's
    # mass is carried by neither.
    assert_the_pick_and_the_place_at_their_times(events, t_pick, t_place)
    # Never a wrong payload published ok: every converged, ok estimate is the part carried then (3σ, 5 %).
    for t, state in published:
        est = state.to_estimate("tool0")
        if est.converged and est.quality is Quality.OK:
            truth = CARRIED if t_pick <= t < t_place else 0.0
            m, std = float(est.phi[0]), float(np.sqrt(est.covariance[0, 0]))
            assert abs(m - truth) <= max(3.0 * std, 0.05 * CARRIED), (t, m, std, truth, case)
    assert monitor.state.carries_nothing


def test_a_push_released_at_rest_is_the_end_of_a_contact_not_a_place(cell):
    """40 N down on the flange held 5 s at rest with 2 kg carried: at rest exactly a 4 kg part's gravity wrench, so its
    window's fit (+4.04 kg) is adopted and the push is a `contact` once its release ends it with no motion under it.
    Before, that fit stayed in the carried payload and the release was named `placed` -4.04 kg. Now the change is taken
    back (PayloadMonitor._take_back_change): the release brings the residual back to the carried part, which is what
    the monitor carries after it (published ok), and nothing is named within the push; the pick and (since h139) the
    real place after it are named."""
    task, (start, end), monitor, events, published = watched(cell, "flange-down-at-rest-5s")
    (t_pick, _, _), (t_place, _, _) = task.truth
    during = [e for e in events if start - 0.1 <= e.t_change <= end + 0.5]
    assert during and all(e.kind is EventKind.CONTACT for e in during), events
    loads = [e for e in events if e.is_load_change]
    assert [e.kind for e in loads] == [EventKind.PICKED, EventKind.PLACED], events    # the place since h139
    assert abs(loads[0].t_change - t_pick) < 0.1 and abs(loads[1].t_change - t_place) < 0.1, events
    assert abs(loads[0].delta_mass - CARRIED) < 3.0 * loads[0].delta_mass_std, loads
    # What the monitor published last before the place (the release re-arms it on the restored part, ok again).
    after = [state for t, state in published if start < t < t_place]
    assert after, published
    est = after[-1].to_estimate("tool0")
    m, std = float(est.phi[0]), float(np.sqrt(est.covariance[0, 0]))
    assert est.quality is Quality.OK and abs(m - CARRIED) <= max(3.0 * std, 0.05 * CARRIED), (m, std, after[-1])


def test_a_refuted_load_with_nothing_to_take_back_to_is_decided_once(cell):
    """`_maybe_publish` refutes a window's load about to be named (push over load by `refute_chi2`) and takes it back to
    the snapshot from before its change; with no snapshot (`_change_from` None) nothing was taken back and the load
    stayed pending: the same refutation said `contact` again every `refine_every_s`, and the change could still be
    named later (h118's note). On the wrist push's rows (push over load by 126-164 from 10.9 s on), the re-estimate
    taken as determined and the snapshot dropped, it is one `contact` (before: nine in 1 s), and the change is decided
    (no load pending)."""
    model, robot = cell
    task = watched(cell, "wrist-down-moving")[0]
    t, q, qd, tau = (np.concatenate([getattr(p, k) for p in task.parts]) for k in ("t", "q", "qd", "tau"))
    monitor = PayloadMonitor(model, robot, FRAME)
    k0, k1 = (int(np.searchsorted(t, x)) for x in (10.8, 11.8))
    feed(monitor, t[:k0], q[:k0], qd[:k0], tau[:k0])
    assert monitor.change.pending is not None and monitor.change.pending.is_load_change, monitor.change.pending
    monitor._change_from = None
    monitor._is_determined = lambda est: True          # the refutation runs at a re-estimate's determination
    events, _ = feed(monitor, t[k0:k1], q[k0:k1], qd[k0:k1], tau[k0:k1])
    assert [e.kind for e in events] == [EventKind.CONTACT], events
    assert "push held through the motion" in events[0].reason, events[0]
    # Decided: nothing pending, and the payload settled (kept, with nothing to go back to), so a next change is one of
    # its own.
    assert monitor.change.pending is None and monitor.change.unnamed is None and monitor.state.determined


def test_a_flange_push_held_at_rest_then_into_a_move_is_no_load(cell):
    """40 N down on the flange, ramped 0.3 s, held 1.5 s at rest and 1.5 s more into a 2 s move (nothing carried): at
    rest its window fits +4.04 kg, and the move under it refutes that (push over load by 185 after 1.6 s of motion;
    with a push on the upper arm in both models, 200). A pending load's refutation counted only under `min_refine_s`
    of motion until h149, so this one was named `picked` +4.04 kg at the push's release and the release `placed`
    -4.01 kg. Now it counts however long the arm moved (PayloadMonitor._refutes_pending): one contact, and nothing
    else."""
    model, robot = cell
    task = Task(model, 3)
    task.rest(0.5)
    task.moves(2)
    push_for(task, "flange", np.array([0.0, 0.0, -40.0]), 0.3, 3.0, move_s=2.0, move_after=1.8)
    task.rest(1.1)
    task.moves(3)
    monitor, events, _ = task.watch(robot)
    assert [e.kind for e in events] == [EventKind.CONTACT], events
    assert "push held through the motion" in events[0].reason, events[0]
