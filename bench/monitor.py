"""Bench of the payload monitor (issue 17) on the simulated UR10 cell (sim.pick_place, `ur10` profile).

  monitor_detect_latency_ms_median, _p95   alarm time − true change, picks and places of ≥ 1 kg found
  monitor_found_fraction                   of those picks and places, the share reported (same kind, ±0.1 s)
  monitor_false_events_task                events with no true change behind them, on the pick-and-place task
  monitor_false_alarms_per_hour            events on task motion without any change (MONITOR_QUIET_S s of it,
                                           default 3600: one hour, simulated faster than real time)
  monitor_contact_misclassified_fraction   contacts reported as a load change, over the contacts reported
  monitor_mass_err_pct_after_5s            median |mass − truth| / truth 5 s after a pick (picks with 5 s of
                                           task motion before the next change)
  monitor_update_us                        monitor time per joint-state sample (20 ms blocks)
  monitor_published_mass_err_pct           median |mass − truth| / truth of the re-estimates published after picks
  monitor_published_coverage_2sigma        share of published re-estimates (picks and places) within 2σ of the
                                           truth (σ that covers the error: ≥ 0.9)
  monitor_published_com_coverage_2sigma    of those published after picks, with a CoM (identified on ~/payload), the
                                           share of CoM axes within 2σ of the part's (σ first order through
                                           c = (m c)/m, as published: refine.RefinedCovariance.published; ≥ 0.9)
  monitor_published_com_coverage_2sigma_all  the same over ALL re-estimates published after picks (each one
                                           until the next change, not only the first): issue 31's "published
                                           re-estimates' 2σ coverage ≥ 0.9" (h201)
  monitor_published_coverage_2sigma_all    the mass's, over all re-estimates published after picks and places
  monitor_published_after_s                median time from a change to its published re-estimate
  monitor_human_contacts                   a person's pushes on the task (sim.pick_place.HumanContacts: 10-150 N,
                                           any direction, flange / wrist / forearm / upper arm, ramped, held, at rest
                                           and moving, some repeated; MONITOR_HUMAN_S s of task, default 1500,
                                           on each seed of MONITOR_HUMAN_SEEDS, default 7,8,9; figures pooled)
  monitor_human_contact_called_load_fraction  of those, the share with a load event (picked / placed / changed)
                                           dated within the push (from its start to 0.5 s after its end)
  monitor_contact_found_fraction           of the pushes above 30 N, the share reported as a contact within it
  monitor_human_picks_found_fraction       picks and places of ≥ 1 kg on that task, found (kind, ±0.1 s)
  monitor_human_per_seed                   the counts behind those figures, per seed (pushes, called_load, strong:
                                           above 30 N, found, loads, loads_found)
  monitor_named_after_s                    median time from a pick or place to the event naming it (a load is
                                           named once it holds: monitor.PayloadMonitor._decide)
  monitor_not_located_events               events on the task and the human task whose change time was not located
                                           (Event.t_change_located false: it came while the monitor was disarmed, at
                                           some time between t_change and t_alarm). Such an event names the one true
                                           change in that span wherever a date is matched (tools/monitor_match.py),
                                           except for monitor_found_fraction and the latency, which ask for the date
                                           (±0.1 s)
  monitor_unlocated_events                 of those, on each task (task, human, light) and in total, the events whose
                                           span holds two or more true changes: they name none (never several), and
                                           are no false event either
  monitor_load_events_without_a_change     load events (picked / placed / changed) with no true change at their date
                                           or in their span, per task (task, human: not within a push either, those
                                           are the pushes called a load; light; quiet) and in total (target 0)
  monitor_load_events_without_a_change_detail  each of those events: task, seed, kind, dates, Δm ± σ, reason,
                                           and what the truth was doing then (the nearest true pick or place and
                                           how far, a push in progress, moving or at rest; also on stderr)
  monitor_light_part_changes               picks and places of 0.2-1 kg (sim.pick_place, no contacts; seeds of
                                           MONITOR_LIGHT_SEEDS, default 21,22, each with the usual 1-2 s moves
                                           and with fast 0.6-0.9 s ones; MONITOR_LIGHT_S s of task each, default 120)
  monitor_light_part_within_3sigma_fraction  of those named (a load event of the right kind dated at it), the share
                                           whose Δm is within 3σ of the truth
  monitor_light_part_confident_wrong       light changes named with a mass more than 3σ off, or named the wrong kind
  monitor_light_part_named_fraction        of the light changes, the share named (the others: no load event: a
                                           contact, or a change below what the monitor can tell)
  monitor_light_part_unnamed_above_floor   light changes not named whose mass is above the floor at their pose
  monitor_mass_floor_kg                    median over those changes of the smallest step at rest the alarm can see
                                           there (PayloadMonitor.mass_floor, at the change's pose)
  monitor_light_part_unnamed_uncovered     light changes neither named nor covered: ~/payload as it stands at the
                                           next change (the last published, its mass σ raised to half the floor
                                           there as the node raises it) is more than 2σ off what is carried (target 0)
  monitor_light_part_floor_there_kg        median of that floor: the alarm's over the half second after the change
                                           as the monitor had it (PayloadMonitor.recent_floor: the motion's level and
                                           the payload's σ raise it; the at-rest mass_floor where none was kept)
  monitor_light_part_carry_std_kg          median published mass σ (before the floor) standing at the next change,
                                           over the carries without an undecided change (must not grow)
  monitor_light_part_undecided_carries     carries whose standing payload says an undecided change
MONITOR_LOAD_FRICTION_VETO=1 runs every task with MonitorSettings(load_friction_veto=True) (off by default, as the
monitor is; h154 measured it with a wrapper). MONITOR_FRICTION_SIGN_DOUBT=1 likewise with friction_sign_doubt (h182),
MONITOR_LOAD_FRICTION_EXPECTED=1 with load_friction_expected (h212), MONITOR_SINCE_CHANGE_ALARM=1 with
since_change_alarm (h206), MONITOR_DOUBT_ALARM_COV=1 with doubt_alarm_cov (h211).
Targets (issue 17): latency ≤ 50 ms median, 0 false alarms per hour, mass within 2 % after 5 s; (issue 31): no
person's push called a load, ≥ 0.9 of the pushes above 30 N found.
The last stdout line is one JSON object.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.monitor import EventKind, MonitorSettings, PayloadMonitor
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.sim.pick_place import HumanContacts, pick_and_place

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from env_switch import env_switch  # noqa: E402 - tools/: the on/off spelling, unit-tested in test_env_switch
from monitor_match import Match, match_events  # noqa: E402 - tools/: the matching, unit-tested in test_monitor_match

TASK_S = float(os.environ.get("MONITOR_TASK_S", "600"))
QUIET_S = float(os.environ.get("MONITOR_QUIET_S", "3600"))
HUMAN_S = float(os.environ.get("MONITOR_HUMAN_S", "1500"))
# Three seeds of the pushed task: 600 s of one gives ~100 pushes, and issue 31 asks the figures over ≥ 200. Seed 9 is
# in since h122: on seeds 7 and 8 main calls 0 of 209 pushes a load, on seed 9 2 of 101 (pushes in motion named
# `picked`, test_monitor_pushed_task_seed9), and the figure of record is not to hide them.
HUMAN_SEEDS = tuple(int(s) for s in os.environ.get("MONITOR_HUMAN_SEEDS", "7,8,9").split(","))
LIGHT_S = float(os.environ.get("MONITOR_LIGHT_S", "120"))
LIGHT_SEEDS = tuple(int(s) for s in os.environ.get("MONITOR_LIGHT_SEEDS", "21,22").split(","))
VETO = env_switch("MONITOR_LOAD_FRICTION_VETO")
EXPECTED = env_switch("MONITOR_LOAD_FRICTION_EXPECTED")
SIGN_DOUBT = env_switch("MONITOR_FRICTION_SIGN_DOUBT")
SINCE_CHANGE = env_switch("MONITOR_SINCE_CHANGE_ALARM")
DOUBT_ALARM_COV = env_switch("MONITOR_DOUBT_ALARM_COV")
MATCH_S = 0.1
FOUND_ABOVE_N = 30.0


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def watch(model, robot, run, floors: list | None = None):
    """(events, [(t, mass)] after each block, [(t, mass, σ, undecided, (CoM, its σ) or None) published], µs per
    sample); `floors`: if given,
    [(t, kg)] of the alarm's floor over the samples just watched (PayloadMonitor.recent_floor) after each block."""
    monitor = PayloadMonitor(model, robot, run.frame, settings=MonitorSettings(load_friction_veto=VETO,
                                                                               load_friction_expected=EXPECTED,
                                                                               friction_sign_doubt=SIGN_DOUBT,
                                                                               since_change_alarm=SINCE_CHANGE,
                                                                               doubt_alarm_cov=DOUBT_ALARM_COV))
    events, masses, published = [], [], []
    t0 = time.perf_counter()
    for k in range(0, run.t.size, 10):
        update = monitor.update(run.t[k:k + 10], run.q[k:k + 10], run.qd[k:k + 10], run.tau[k:k + 10])
        events += update.events
        t_block = float(run.t[min(k + 9, run.t.size - 1)])
        masses.append((t_block, float(monitor.state.part[0][0])))     # as reported (less the tare)
        if update.estimate is not None:
            est = update.estimate.to_estimate(run.frame)
            com = (est.com, est.readable_std()[1:4]) if est.readable_identifiable()[1:4].all() else None
            published.append((t_block, est.mass, float(np.sqrt(est.covariance[0, 0])),
                              bool(getattr(update.estimate, "undecided", "")), com))
        if floors is not None and hasattr(monitor, "recent_floor"):
            floors.append((t_block, monitor.recent_floor()))
    return events, np.array(masses), published, (time.perf_counter() - t0) / run.t.size * 1e6


def matched(events, changes) -> list[Match]:
    """The true change each event names (tools/monitor_match.py: at most one; an unlocated span over several names
    none)."""
    return match_events(events, [c.t for c in changes], MATCH_S)


def load_events_without_a_change(events, matches: list[Match]) -> int:
    """Load events with no true change at their date or in their span."""
    return sum(1 for e, m in zip(events, matches) if e.is_load_change and m.without_a_change)


def without_a_change_detail(events, matches: list[Match], run, task: str, seed: int, moves: str = "") -> list[dict]:
    """Each load event with no true change at its date or in its span (the events load_events_without_a_change
    counts), with what the truth was doing then: the true change nearest its date (kind, kg, time, how far), a push
    in progress (a person's or the task's contact), and whether the arm moved. Logged, and listed in the JSON."""
    out = []
    for e, m in zip(events, matches):
        if not (e.is_load_change and m.without_a_change):
            continue
        k = min(int(np.searchsorted(run.t, e.t_change)), run.t.size - 1)
        loads = [c for c in run.changes if c.kind in ("picked", "placed")]
        near = min(loads, key=lambda c: abs(c.t - e.t_change)) if loads else None
        pushes = [c for c in run.changes if c.kind == "contact" and c.t - 0.5 <= e.t_change <= c.t + c.duration + 0.5]
        row = {"task": task, "seed": seed, **({"moves_s": moves} if moves else {}),
               "kind": e.kind.value, "t_change": round(e.t_change, 3), "t_alarm": round(e.t_alarm, 3),
               "located": bool(getattr(e, "t_change_located", True)),
               "delta_mass": round(e.delta_mass, 3), "delta_mass_std": round(e.delta_mass_std, 3),
               "reason": e.reason[:240],
               "truth_nearest": None if near is None else {"kind": near.kind, "mass": round(near.mass, 3),
                                                           "t": round(near.t, 3), "dt": round(e.t_change - near.t, 3)},
               "truth_push": [{"t": round(c.t, 3), "s": round(c.duration, 2), "N": round(c.force),
                               "link": c.link or "joints"} for c in pushes],
               "truth_moving": bool(np.linalg.norm(run.qd[k]) > 0.05)}
        log(f"{task} seed {seed}{' moves ' + moves if moves else ''}: load event without a change: {e.kind.value} "
            f"{e.mass_change_text} dated {e.t_change:.3f} s (alarm {e.t_alarm:.3f}); truth: "
            + (f"{near.kind} {near.mass:.3f} kg at {near.t:.3f} s ({e.t_change - near.t:+.3f} s)" if near else "none")
            + f", {'moving' if row['truth_moving'] else 'at rest'}, pushes {row['truth_push']} ({e.reason[:160]})")
        out.append(row)
    return out


def unlocated(matches: list[Match]) -> int:
    """Events not located whose span holds two or more true changes."""
    return sum(m.unlocated for m in matches)


def human_contacts_seed(model, robot, seed: int) -> dict:
    """One seed's pushed task: the counts behind the figures of human_contacts."""
    run = pick_and_place(model, "ur10", seconds=HUMAN_S, seed=seed, contacts_per_minute=0.0,
                         human=HumanContacts(per_minute=12.0))
    events, _, _, _ = watch(model, robot, run)
    matches = matched(events, run.changes)
    pushes = [c for c in run.changes if c.kind == "contact"]

    def during(e, c) -> bool:
        return c.t - MATCH_S <= e.t_change <= c.t + c.duration + 0.5

    def within(e, m: Match, c) -> bool:
        """The load event is the push's: it names it, or it is dated within it (a push's release is no change of its
        own; a span not located is no date)."""
        named = m.change is not None and run.changes[m.change] is c
        return named or (getattr(e, "t_change_located", True) and during(e, c))

    def true_load(m: Match, e) -> bool:          # a part really picked or placed while the person pushed
        return m.change is not None and e.kind.value == run.changes[m.change].kind

    def pushed(e, m: Match) -> list:
        return [c for c in pushes if e.is_load_change and within(e, m, c) and not true_load(m, e)]

    called_load = [c for c in pushes if any(c in pushed(e, m) for e, m in zip(events, matches))]
    without = [e for e, m in zip(events, matches) if e.is_load_change and m.without_a_change and not pushed(e, m)]
    mine = [(e, m) for e, m in zip(events, matches) if any(e is x for x in without)]
    detail = without_a_change_detail([e for e, _ in mine], [m for _, m in mine], run, "human", seed)
    strong = [c for c in pushes if c.force > FOUND_ABOVE_N]
    found = [c for c in strong if any(e.kind is EventKind.CONTACT and during(e, c) for e in events)]
    loads = [c for c in run.changes if c.kind in ("picked", "placed") and c.mass >= 1.0]
    loads_found = [c for c in loads if any(abs(e.t_change - c.t) < MATCH_S and e.kind.value == c.kind for e in events)]
    for c in called_load:
        log(f"seed {seed}: push called a load: t {c.t:.2f} s, {c.force:.0f} N on the {c.link}, {c.duration:.2f} s, "
            f"{'moving' if c.moving else 'at rest'}: "
            + "; ".join(f"{e.kind.value} {e.mass_change_text} ({e.reason})" for e, m in zip(events, matches)
                        if c in pushed(e, m)))
    missed = [c for c in strong if c not in found]
    log(f"human task seed {seed}, {HUMAN_S:.0f} s: {len(pushes)} pushes, {len(called_load)} called a load, "
        f"{len(found)} of {len(strong)} above {FOUND_ABOVE_N:.0f} N found; missed (N, link, moving): "
        f"{[(round(c.force), c.link, c.moving) for c in missed][:20]}; {len(loads_found)}/{len(loads)} loads found")
    return {"pushes": len(pushes), "called_load": len(called_load), "strong": len(strong), "found": len(found),
            "loads": len(loads), "loads_found": len(loads_found),
            "not_located": sum(1 for e in events if not getattr(e, "t_change_located", True)),
            "unlocated": unlocated(matches), "without_a_change": len(without), "without_detail": detail}


def human_contacts(model, robot) -> dict:
    """The figures of a person's pushes on the pick-and-place task (module docstring), pooled over HUMAN_SEEDS."""
    per_seed = {seed: human_contacts_seed(model, robot, seed) for seed in HUMAN_SEEDS}

    def total(key: str) -> int:
        return sum(counts[key] for counts in per_seed.values())

    pushes, strong, loads = total("pushes"), total("strong"), total("loads")
    return {
        "monitor_human_contacts": pushes,
        "monitor_human_contact_called_load_fraction": round(total("called_load") / pushes, 3) if pushes else None,
        "monitor_contact_found_fraction": round(total("found") / strong, 3) if strong else None,
        "monitor_human_picks_found_fraction": round(total("loads_found") / loads, 3) if loads else None,
        "monitor_human_per_seed": {str(seed): {k: v for k, v in counts.items()
                                               if k not in ("not_located", "unlocated", "without_a_change",
                                                            "without_detail")}
                                   for seed, counts in per_seed.items()},
        **{key: total(key) for key in ("not_located", "unlocated", "without_a_change")},
        "without_detail": [row for counts in per_seed.values() for row in counts["without_detail"]],
    }


def light_parts(model, robot) -> dict:
    """The figures of light parts (0.2-1 kg) picked and placed at rest and carried through usual and fast moves:
    named with the right mass within 3σ, or not named; never a confident wrong mass (module docstring)."""
    changes, within, wrong, floors = 0, 0, 0, []
    named, unnamed_above, uncovered, running, carry_std, undecided_carries = 0, 0, 0, [], [], 0
    unlocated_events, without, detail = 0, 0, []
    for seed in LIGHT_SEEDS:
        for move_s in ((1.0, 2.0), (0.6, 0.9)):
            run = pick_and_place(model, "ur10", seconds=LIGHT_S, seed=seed, masses=(0.2, 1.0), contacts_per_minute=0.0,
                                 move_s=move_s)
            seen: list = []
            events, _, published, _ = watch(model, robot, run, seen)
            matches = matched(events, run.changes)
            unlocated_events += unlocated(matches)
            without += load_events_without_a_change(events, matches)
            detail += without_a_change_detail(events, matches, run, "light", seed, f"{move_s[0]}-{move_s[1]}")
            floor_monitor = PayloadMonitor(model, robot, run.frame)
            loads = [c for c in run.changes if c.kind in ("picked", "placed")]
            for i, c in enumerate(loads):
                changes += 1
                k = min(int(np.searchsorted(run.t, c.t)), run.t.size - 1)
                floors.append(floor_monitor.mass_floor(run.q[k])[0])
                # ~/payload as it stands when the next change comes (or the run ends): the last published, its mass σ
                # raised to half the alarm's floor there as the node raises it (LiveMonitor.floored), the floor as the
                # monitor had it over the half second after the change (recent_floor; at rest where none is kept).
                t_next = loads[i + 1].t if i + 1 < len(loads) else float(run.t[-1])
                standing = [p for p in published if p[0] < t_next]
                m_p, s_p, undecided = standing[-1][1:4] if standing else (0.0, 0.0, False)
                there = [f for t_f, f in seen if c.t <= t_f <= c.t + 0.5 and np.isfinite(f)]
                floor_there = max(there) if there else floors[-1]
                running.append(floor_there)
                truth = run.carried_mass(c.t + 1e-6)
                covered = abs(m_p - truth) <= 2.0 * max(s_p, floor_there / 2.0)
                if undecided:
                    undecided_carries += 1
                else:
                    carry_std.append(s_p)
                said = [e for e, m in zip(events, matches) if e.is_load_change and m.change is not None
                        and run.changes[m.change] is c]
                if not said:
                    unnamed_above += c.mass > floors[-1]
                    if not covered:
                        uncovered += 1
                        log(f"light part neither named nor covered (seed {seed}, moves {move_s} s): {c.kind} "
                            f"{c.mass:.3f} kg at {c.t:.2f} s, carried {truth:.3f} kg until {t_next:.2f} s; published "
                            f"{m_p:.3f} ± {s_p:.3f} kg, floor there {floor_there:.3f} kg")
                    continue
                e = said[0]
                truth = c.mass if c.kind == "picked" else -c.mass
                named += e.kind.value == c.kind
                ok = e.kind.value == c.kind and abs(e.delta_mass - truth) <= 3.0 * e.delta_mass_std
                within += ok
                wrong += not ok
                if not ok:
                    log(f"light part named wrong (seed {seed}, moves {move_s} s): {c.kind} {c.mass:.3f} kg at "
                        f"{c.t:.2f} s said {e.kind.value} {e.mass_change_text} ({e.reason})")
    log(f"light parts: {changes} changes, {named} named, {within} within 3σ, {wrong} wrong, {unnamed_above} not "
        f"named above the floor, {uncovered} neither named nor covered; floor median "
        f"{float(np.median(floors)) if floors else float('nan'):.3f} kg at rest, "
        f"{float(np.median(running)) if running else float('nan'):.3f} kg as the monitor had it")
    return {
        "monitor_light_part_changes": changes,
        "monitor_light_part_within_3sigma_fraction": round(within / named, 3) if named else None,
        "monitor_light_part_confident_wrong": wrong,
        "monitor_light_part_named_fraction": round(named / changes, 3) if changes else None,
        "monitor_light_part_unnamed_above_floor": unnamed_above,
        "monitor_mass_floor_kg": round(float(np.median(floors)), 3) if floors else None,
        "monitor_light_part_unnamed_uncovered": uncovered,
        "monitor_light_part_floor_there_kg": round(float(np.median(running)), 3) if running else None,
        "monitor_light_part_carry_std_kg": round(float(np.median(carry_std)), 3) if carry_std else None,
        "monitor_light_part_undecided_carries": undecided_carries,
        "unlocated": unlocated_events, "without_a_change": without, "without_detail": detail,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """No options of its own: its settings are the MONITOR_* environment variables above. Parsed so that --help
    prints this and exits 0 (it ran the whole bench) and an unknown argument exits 2, before any work."""
    parser = argparse.ArgumentParser(prog="bench/monitor.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Environment (the lengths and seeds; defaults in parentheses): "
                                            "MONITOR_TASK_S (600), MONITOR_QUIET_S (3600), MONITOR_HUMAN_S (1500), "
                                            "MONITOR_HUMAN_SEEDS (7,8,9), MONITOR_LIGHT_S (120), "
                                            "MONITOR_LIGHT_SEEDS (21,22), MONITOR_LOAD_FRICTION_VETO (0), "
                                            "MONITOR_FRICTION_SIGN_DOUBT (0), MONITOR_SINCE_CHANGE_ALARM (0), "
                                            "MONITOR_LOAD_FRICTION_EXPECTED (0), MONITOR_DOUBT_ALARM_COV (0).")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    parse_args(argv)
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    robot = fit_given_model(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1),
                           friction="nonlinear", estimator="wls")
    run = pick_and_place(model, "ur10", seconds=TASK_S, seed=5)
    events, masses, published, us = watch(model, robot, run)
    changes = run.changes
    loads = [c for c in changes if c.kind in ("picked", "placed") and c.mass >= 1.0]
    latency, found = [], 0
    for c in loads:
        hit = [e for e in events if abs(e.t_change - c.t) < MATCH_S and e.kind.value == c.kind]
        if hit:
            found += 1
            latency.append(hit[0].t_alarm - c.t)
    matches = matched(events, changes)
    false_task = sum(m.without_a_change for m in matches)
    contacts_reported = [e for e, m in zip(events, matches)
                         if m.change is not None and changes[m.change].kind == "contact"]
    misclassified = sum(1 for e in contacts_reported if e.kind is not EventKind.CONTACT)
    after5 = []
    for i, c in enumerate(changes):
        nxt = changes[i + 1].t if i + 1 < len(changes) else run.t[-1]
        if c.kind == "picked" and nxt - c.t > 5.0:
            k = int(np.searchsorted(masses[:, 0], c.t + 5.0))
            after5.append(abs(masses[k, 1] - c.mass) / c.mass * 100)
    pub_err, covered, pub_after, com_covered = [], [], [], []
    covered_all, com_covered_all = [], []
    for i, c in enumerate(changes):
        if c.kind not in ("picked", "placed"):
            continue
        nxt = changes[i + 1].t if i + 1 < len(changes) else run.t[-1]
        # Published after the change's verdict window: one determined just before the change was detected
        # belongs to the payload before it.
        after = [p for p in published if c.t + MATCH_S < p[0] < nxt and not p[3]]   # re-estimates, not undecided
        if not after:
            continue
        t_p, m_p, s_p, _, com = after[0]
        truth = run.carried_mass(c.t + 1e-6)
        for _, m_k, s_k, _, com_k in after:
            covered_all.append(abs(m_k - truth) <= 2 * s_k)
            if c.kind == "picked" and com_k is not None and c.phi is not None:
                com_covered_all += (np.abs(com_k[0] - c.phi[1:4] / c.phi[0]) <= 2 * com_k[1]).tolist()
        covered.append(abs(m_p - truth) <= 2 * s_p)
        if c.kind == "picked" and com is not None and c.phi is not None:
            com_covered += (np.abs(com[0] - c.phi[1:4] / c.phi[0]) <= 2 * com[1]).tolist()
        pub_after.append(t_p - c.t)
        if c.kind == "picked":
            pub_err.append(abs(m_p - truth) / truth * 100)
    log(f"published re-estimates: {len(covered)} of {sum(c.kind in ('picked', 'placed') for c in changes)} "
        f"changes, {sum(covered)} within 2σ")
    log(f"task {TASK_S:.0f} s: {len(loads)} loads ≥ 1 kg, {found} found, {false_task} false, "
        f"{misclassified}/{len(contacts_reported)} contacts misclassified, {us:.0f} µs/sample")
    named_after = [e.t_verdict - e.t_change for e in events if e.is_load_change]
    human = human_contacts(model, robot)
    not_located = human.pop("not_located") + sum(1 for e in events if not getattr(e, "t_change_located", True))
    quiet = pick_and_place(model, "ur10", seconds=QUIET_S, seed=11, picks=False, contacts_per_minute=0.0)
    quiet_events, _, _, _ = watch(model, robot, quiet)
    log(f"quiet {QUIET_S:.0f} s: {len(quiet_events)} events")
    light = light_parts(model, robot)
    detail = (without_a_change_detail(events, matches, run, "task", 5) + human.pop("without_detail")
              + light.pop("without_detail")
              + without_a_change_detail(quiet_events, [Match(None)] * len(quiet_events), quiet, "quiet", 11))
    without = {"task": load_events_without_a_change(events, matches), "human": human.pop("without_a_change"),
               "light": light.pop("without_a_change"), "quiet": sum(e.is_load_change for e in quiet_events)}
    unlocated_events = {"task": unlocated(matches), "human": human.pop("unlocated"), "light": light.pop("unlocated")}
    out = {
        "monitor_detect_latency_ms_median": round(float(np.median(latency)) * 1e3, 1) if latency else None,
        "monitor_detect_latency_ms_p95": round(float(np.percentile(latency, 95)) * 1e3, 1) if latency else None,
        "monitor_found_fraction": round(found / len(loads), 3) if loads else None,
        "monitor_false_events_task": false_task,
        "monitor_false_alarms_per_hour": round(len(quiet_events) * 3600.0 / QUIET_S, 2),
        "monitor_contact_misclassified_fraction": round(misclassified / len(contacts_reported), 3)
        if contacts_reported else 0.0,
        "monitor_mass_err_pct_after_5s": round(float(np.median(after5)), 2) if after5 else None,
        "monitor_update_us": round(us, 1),
        "monitor_published_mass_err_pct": round(float(np.median(pub_err)), 2) if pub_err else None,
        "monitor_published_coverage_2sigma": round(float(np.mean(covered)), 3) if covered else None,
        "monitor_published_com_coverage_2sigma": round(float(np.mean(com_covered)), 3) if com_covered else None,
        "monitor_published_com_coverage_2sigma_all": round(float(np.mean(com_covered_all)), 3)
        if com_covered_all else None,
        "monitor_published_coverage_2sigma_all": round(float(np.mean(covered_all)), 3) if covered_all else None,
        "monitor_published_after_s": round(float(np.median(pub_after)), 2) if pub_after else None,
        "monitor_named_after_s": round(float(np.median(named_after)), 2) if named_after else None,
        "monitor_not_located_events": not_located,
        "monitor_unlocated_events": {**unlocated_events, "total": sum(unlocated_events.values())},
        "monitor_load_events_without_a_change": {**without, "total": sum(without.values())},
        "monitor_load_events_without_a_change_detail": detail,
        **human,
        **light,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
