"""bench/monitor.py's pushed task, seed 9 (issue 31, h122): a person's push in motion named a load.

The first 23.5 s of that task (sim.pick_and_place with HumanContacts at 12 a minute, seed 9; the same as the bench's
600 s run up to there) hold the first of the two pushes main names a load on the bench's seed 9: 121 N on the forearm
(direction (0.00, 0.29, −0.96), ramped 0.66 s, held 2.92 s) during a move, starting at 17.65 s, while the carried
1.26 kg part was still in doubt (found by its lasting misfit at 11.98 s, not yet determined). The ramp's first window
fits +1.24 kg on the doubt (pending); its next window, 0.15 s later, closes that pending load as if it had held
`persist_s` with the arm moving `min_refine_s` under it: both are counted from the doubt's start (11.98 s), not from
the window's own change. It is named `picked` +2.50 ± 0.13 kg (the doubt's part and the push's fit together), "it held
0.15 s". Counting both from the window's own change when it was fitted on a doubt fixes this case (and, with the
window not adopted after a doubt is taken back as a push, the bench's second case at 421.9 s: 48 N on the wrist held
4.8 s in a move, named `picked` +5.07 kg), but picks and places found on the bench's pushed task seed 9 fell 37 → 30
of 60 (each fix alone 37 → 27 and 37 → 34): not kept (design.md, h122).
"""

import pytest

from payload_id_core.sim.pick_place import HumanContacts, pick_and_place

pytestmark = pytest.mark.slow
SECONDS = 23.5
MATCH_S = 0.1          # as bench/monitor.py


@pytest.fixture(scope="module")
def pushed(ur10_cell_robot):
    from payload_id_core.monitor import PayloadMonitor  # noqa: PLC0415

    model, robot = ur10_cell_robot
    run = pick_and_place(model, "ur10", seconds=SECONDS, seed=9, contacts_per_minute=0.0,
                         human=HumanContacts(per_minute=12.0))
    monitor = PayloadMonitor(model, robot, run.frame)
    events = []
    for k in range(0, run.t.size, 10):
        events += monitor.update(run.t[k:k + 10], run.q[k:k + 10], run.qd[k:k + 10], run.tau[k:k + 10]).events
    return run, events


def test_the_task_holds_the_forearm_push_in_motion(pushed):
    run, _ = pushed
    push = [c for c in run.changes if c.kind == "contact" and abs(c.t - 17.65) < 0.01]
    assert len(push) == 1 and push[0].link == "forearm" and push[0].moving and abs(push[0].force - 121.0) < 1.0, \
        run.changes


def test_no_push_is_named_a_load(pushed):
    run, events = pushed

    def true_load(e) -> bool:
        return any(abs(e.t_change - c.t) < MATCH_S and e.kind.value == c.kind for c in run.changes)

    pushes = [c for c in run.changes if c.kind == "contact"]
    called = [(c.t, c.force, c.link, e.kind.value, e.delta_mass) for c in pushes for e in events
              if e.is_load_change and c.t - MATCH_S <= e.t_change <= c.t + c.duration + 0.5 and not true_load(e)]
    assert called == [], called
