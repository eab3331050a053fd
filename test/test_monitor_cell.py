"""The payload monitor on the realistic simulated cell (issue 17): a pick-and-place task, MuJoCo physics with
the `ur10` profile (nonlinear load-dependent friction, rotor inertia, measured noise, 2 ms lag), measured
joint positions and velocities, the robot identified once on the bundled excitation.

What a cell must be able to trust: every event the monitor reports is a real change of that kind (no false
alarm, no contact called a load, no load called a contact), a part of 1 kg or more is found within 50 ms of
the grasp with its mass, the mass is re-estimated to 2 % from 5 s of task motion, and nothing is reported on
task motion without changes.
"""

import numpy as np
import pytest

from payload_id_core.monitor import EventKind, PayloadMonitor
from payload_id_core.sim.pick_place import pick_and_place

pytestmark = pytest.mark.slow
MATCH_S = 0.1              # an event belongs to a true change when it dates the change this close


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    return ur10_cell_robot


def _monitor(cell, run, settings=None):
    model, robot = cell
    monitor = PayloadMonitor(model, robot, run.frame, settings=settings)
    events, estimates, masses = [], [], []
    for k in range(0, run.t.size, 10):
        u = monitor.update(run.t[k:k + 10], run.q[k:k + 10], run.qd[k:k + 10], run.tau[k:k + 10])
        events += u.events
        estimates += [u.estimate] if u.estimate is not None else []
        masses.append((float(run.t[min(k + 9, run.t.size - 1)]), float(monitor.state.part[0][0])))
    monitor.published = estimates
    monitor.masses = np.array(masses)
    return monitor, events


def _mass_after(monitor, run, kind, seconds):
    """The monitor's mass `seconds` after each change of `kind` held at least that long, with the truth."""
    out = []
    for i, c in enumerate(run.changes):
        nxt = run.changes[i + 1].t if i + 1 < len(run.changes) else run.t[-1]
        if c.kind == kind and nxt - c.t > seconds:
            k = int(np.searchsorted(monitor.masses[:, 0], c.t + seconds))
            out.append((monitor.masses[k, 1], c.mass if kind == "picked" else 0.0))
    return np.array(out)


def test_pick_and_place_events_are_real_and_parts_of_a_kilogram_are_found_within_50_ms(cell):
    run = pick_and_place(cell[0], "ur10", seconds=50.0, seed=5)
    _, events = _monitor(cell, run)
    picks = [c for c in run.changes if c.kind in ("picked", "placed") and c.mass >= 1.0]
    assert len(picks) >= 8 and any(c.kind == "contact" for c in run.changes)
    for e in events:                     # nothing invented, nothing misnamed
        truth = [c for c in run.changes if abs(c.t - e.t_change) < MATCH_S]
        assert truth, f"false event: {e}"
        assert truth[0].kind == e.kind.value, (truth[0], e)
    # A load is named once it holds (a second until the next change, or the re-estimate determined): a pick in the
    # run's last seconds may not be named yet. Every earlier one is.
    held = [c for c in picks if run.t[-1] - c.t > 3.0]
    assert len(held) >= len(picks) - 1
    for c in held:
        (e,) = [e for e in events if abs(c.t - e.t_change) < MATCH_S]
        assert 0.0 <= e.t_alarm - c.t < 0.05, (c, e)
        sign = 1.0 if c.kind == "picked" else -1.0
        assert abs(e.delta_mass - sign * c.mass) < 0.1 * c.mass, (c, e)


def test_task_motion_without_changes_raises_nothing(cell):
    run = pick_and_place(cell[0], "ur10", seconds=120.0, seed=11, picks=False, contacts_per_minute=0.0)
    monitor, events = _monitor(cell, run)
    assert events == [] and monitor.published == []
    assert np.all(monitor.state.phi == 0.0)


def test_a_contact_is_never_taken_for_a_load(cell):
    run = pick_and_place(cell[0], "ur10", seconds=60.0, seed=3, picks=False, contacts_per_minute=8.0)
    contacts = [c for c in run.changes if c.kind == "contact"]
    assert len(contacts) >= 4
    monitor, events = _monitor(cell, run)
    assert all(e.kind is EventKind.CONTACT for e in events), events
    # A residual too small to call an event may be folded into the monitor's working estimate, but nothing
    # is published, and it stays below the mass the monitor resolves on this cell.
    assert monitor.published == []
    assert abs(monitor.state.part[0][0]) < monitor.s.detector.mass_resolution_kg


def test_the_mass_is_re_estimated_to_2_percent_in_5_s_despite_load_dependent_friction(cell):
    """The `ur10` profile's gear friction grows with the transmitted torque (μ = 0.02). Fitted on F alone, the
    re-estimate took both its effects for mass: the payload's share of it, and the error the unloaded
    identification (which has no μ) leaves at every move, which made the empty flange weigh −0.075 kg. Without
    the load-friction columns this run's parts are 3.8 % off (median) 5 s after the grasp, all of them
    by more than their 2σ."""
    run = pick_and_place(cell[0], "ur10", seconds=180.0, seed=5)
    monitor, _ = _monitor(cell, run)
    picked = _mass_after(monitor, run, "picked", 5.0)
    assert len(picked) >= 4
    err = np.abs(picked[:, 0] - picked[:, 1]) / picked[:, 1]
    assert np.median(err) < 0.02, err
    empty = _mass_after(monitor, run, "placed", 3.0)
    assert len(empty) >= 5
    assert abs(np.median(empty[:, 0])) < 0.03, empty
