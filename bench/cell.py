"""Bench of the simulated cell: runs `python -m payload_id_ros.demo` (what `make demo` runs) and reports

  demo_wall_s          wall time of the demo after set-up (its unloaded robot model, of the demo's robot seed, is
                       identified and cached in out/ first: `demo --prepare-only`, keyed as the timed run keys it)
  cell_convergence_s   seconds of motion until the estimator declared convergence
  estimator_cpu_pct    CPU of the payload_estimator process at 500 Hz joint states + 500 Hz wrench, % of one
                       core, median over 0.5 s intervals of the identification (/proc/<pid>/stat); target <= 30
  estimator_cpu_mean_pct  the same averaged over the whole goal, with the end-of-goal computations
  estimator_idle_cpu_pct  the estimator with no goal (2 s after it), joint states still streaming
  cell_mass_err_pct, cell_com_err_mm   accuracy on the hidden 3.5 kg payload
  cell_joint_states    what that run's excitation window received of the joint states (run_delivery below)

all of the first run, with mock_hardware's seed 7 (the demo's). Then the spread over runs: the demo once more
per seed of CELL_SEEDS (comma-separated mock_hardware seeds, default 7-16; fewer while developing, e.g.
CELL_SEEDS=7,8,9; the first run counts as seed 7's when 7 is listed and the robot is shared). A run's noise under the
excitation differs even for one seed (the excitation starts at whatever sample mock_hardware has reached), so these
are ten realisations of the cell as a user meets it, across processes (on CELL_CLOCK below). CELL_ROBOT_SEEDS says which
unloaded robot each run uses: `each` (default) identifies one per run, from the unloaded run of noise seed
ROBOT_SEED_OFFSET + the run's seed, so the runs are independent in the robot identification's error too and the
coverage is over independent runs; `demo` gives every run the demo's one (robot seed 11), as `make demo` does
(then the spread measures that one identification's error, not the robot's):

  cell_convergence_median_s, cell_convergence_max_s   declared convergence time over the runs (a run never
                       declared counts as the motion's whole length, so it raises the max); target: max <= 2
  cell_convergence_within_2s_share   share of runs declared within 2.0 s of motion
  cell_declared_share  share of runs declared converged
  cell_converged_cover_2sigma   share of declared runs whose estimate when declared (the goal's first feedback whose
                       estimate says converged: what a client watching it is shown) is within
                       2σ of the true mass, σ the feedback's (since h188 the σ the rule judged: the estimator's own
                       with the serially correlated / model-error part of its latest batch check); target >= 0.9
  cell_converged_beyond_3sigma   declared runs whose estimate then is more than 3σ off in mass; target 0
  cell_mass_err_pct_median_abs, cell_com_err_mm_median   the final estimates' accuracy over the runs
  cell_runs            how many runs these are over
  cell_robot_seeds     'each' or 'demo' (CELL_ROBOT_SEEDS)
  cell_clock           the cell's clock (CELL_CLOCK: `sim`, the demo's default: mock_hardware owns /clock, at most real
                       time, and slows down under load; `real`: the wall clock, where mock_hardware skips after a
                       stall)

A loaded machine makes the estimator lose joint states (its subscription queue overwritten while it stalls, or
mock_hardware skipping ahead after a stall): a run that lost a stretch of the excitation measured the cell on part of
its motion, so its convergence and accuracy figures are not the cell's. Each run says what it got (run_delivery, from
the estimator's result file and mock_hardware's publish log: demo.joint_state_delivery), and a run is `complete` when
no stretch of its excitation window was lost (the estimator's own test, signals/stamp_holes: no step over GAP_FACTOR
periods; such a run's result carries no node.joint_states_lost note). Every convergence/accuracy figure above is given
over all runs and, under the same name with the suffix `_complete_data`, over the complete runs only (NaN when there
are none); no run is dropped silently:

  cell_runs_complete   runs with complete joint states
  cell_joint_states_covered_min, cell_joint_states_covered_median   share of the window's duration outside lost
                       stretches, over the runs
  cell_joint_states_lost_max_s   the most seconds of the window one run lost
  cell_joint_states_unpublished_max   the most samples of a run's window mock_hardware never published (expected −
                       published, expected: the window over the stream's period; it skips ahead after a 0.1 s stall)
  cell_joint_states_unreceived_max   the most samples mock_hardware published in a run's window that the estimator did
                       not use (published − received: its queue overwritten; null when no publish log was read)
  cell_per_run         one entry per run: seed, robot_seed, expected, published, received, unpublished, unreceived,
                       lost_s, longest_lost_s, covered_share, complete, converged, convergence_time, mass_err_pct

The last stdout line is one JSON object.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
FIRST_SEED = 7          # payload_id_ros.demo.NOISE_SEED (bench stays free of ROS imports)
DEFAULT_SEEDS = tuple(range(7, 17))
TARGET_S = 2.0          # the cell's convergence target (issue 13 item 5)
DEMO_ROBOT_SEED = 11    # payload_id_ros.demo.ROBOT_SEED
ROBOT_SEED_OFFSET = 1000   # CELL_ROBOT_SEEDS=each: run seed s plays its robot's unloaded run with noise seed 1000 + s


def seeds_from_env(value: str | None) -> list[int]:
    """CELL_SEEDS: comma-separated integers; unset or empty: DEFAULT_SEEDS."""
    if not value or not value.strip():
        return list(DEFAULT_SEEDS)
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        sys.exit(f"CELL_SEEDS={value!r} is not a comma-separated list of integers (e.g. CELL_SEEDS=7,8,9)")


def robot_seeds_from_env(value: str | None) -> str:
    """CELL_ROBOT_SEEDS: 'each' (unset or empty) or 'demo'."""
    mode = (value or "").strip() or "each"
    if mode not in ("each", "demo"):
        sys.exit(f"CELL_ROBOT_SEEDS={value!r} is neither 'each' (one robot identification per run) nor 'demo' "
                 f"(the demo's one)")
    return mode


def clock_from_env(value: str | None) -> str:
    """CELL_CLOCK: 'sim' (unset or empty: the demo's default, payload_id_ros.demo.DEFAULT_CLOCK) or 'real'."""
    clock = (value or "").strip() or "sim"
    if clock not in ("sim", "real"):
        sys.exit(f"CELL_CLOCK={value!r} is neither 'sim' (mock_hardware's /clock) nor 'real' (the wall clock)")
    return clock


def robot_seed(mode: str, seed: int) -> int:
    """The unloaded robot's noise seed for the run of mock_hardware seed `seed`."""
    return DEMO_ROBOT_SEED if mode == "demo" else ROBOT_SEED_OFFSET + seed


def declared_estimate(result: dict) -> tuple[float, float] | None:
    """(mass, its σ) the goal's feedback showed when convergence was declared: the first feedback whose estimate says
    converged, or in a history that does not record it the first at or after the declared time (None: not
    declared, or no feedback then). The feedback's elapsed is the goal's clock and the declaration is dated on the
    joint-state stamps the estimator has been fed, which trail it: on the cell (h188) a feedback 0.01 s after the
    declared time still showed the estimate before the declaration, with the estimator's own σ."""
    t = result.get("convergence_time")
    if t is None or not np.isfinite(t):
        return None
    feedback = [fb for fb in result.get("feedback") or [] if fb.get("mass_std") is not None]
    flagged = all("converged" in fb for fb in feedback)
    for fb in feedback:
        if fb["converged"] if flagged else fb["elapsed"] >= t - 1e-9:
            return float(fb["mass"]), float(fb["mass_std"])
    return None


def spread_figures(results: list[dict]) -> dict[str, float]:
    """The figures over demo results (demo_result.yaml contents): module doc."""
    declared, cover, beyond = [], [], 0
    times = []
    for r in results:
        raw = r.get("convergence_time")
        t = float("nan") if raw is None else float(raw)
        ok = bool(r.get("converged")) and bool(np.isfinite(t))
        declared.append(ok)
        length = max((fb["elapsed"] for fb in r.get("feedback") or []), default=float("nan"))
        times.append(t if ok else length)
        got = declared_estimate(r) if ok else None
        if got is not None:
            mass, std = got
            err = abs(mass - float(r["truth"]["mass"]))
            cover.append(err <= 2.0 * std)
            beyond += int(err > 3.0 * std)
    if not results:          # e.g. no run with complete joint states
        return {k: 0 if k in ("cell_runs", "cell_converged_beyond_3sigma") else float("nan") for k in SPREAD_KEYS}
    ts = np.array(times, dtype=float)
    errs = [abs(float(r["errors"]["mass_err_pct"])) for r in results]
    com = [float(r["errors"]["com_err_mm"]) for r in results]
    return {"cell_runs": len(results),
            "cell_convergence_median_s": round(float(np.median(ts)), 3),
            "cell_convergence_max_s": round(float(np.max(ts)), 3),
            "cell_convergence_within_2s_share": round(float(np.mean(np.array(declared) & (ts <= TARGET_S + 1e-9))), 3),
            "cell_declared_share": round(float(np.mean(declared)), 3),
            "cell_converged_cover_2sigma": round(float(np.mean(cover)), 3) if cover else float("nan"),
            "cell_converged_beyond_3sigma": beyond,
            "cell_mass_err_pct_median_abs": round(float(np.median(errs)), 3),
            "cell_com_err_mm_median": round(float(np.median(com)), 2)}


def run_delivery(result: dict) -> dict:
    """One run's joint-state figures (demo_result.yaml joint_states; all None when the run has none, e.g. a result
    written before it was recorded): samples received in the excitation window and published there, the seconds
    lost, the longest lost stretch, the share covered, and `complete` (no stretch lost)."""
    js = result.get("joint_states") or {}
    received, published, period = js.get("received"), js.get("published"), js.get("period_s")
    # What the stream's period puts in the window: mock_hardware publishes fewer when it skips ahead after a stall.
    expected = int(round((js["window"][1] - js["window"][0]) / period)) + 1 if js.get("window") and period else None
    return {"expected": expected, "published": published, "received": received,
            "unpublished": None if expected is None or published is None else expected - int(published),
            "unreceived": None if received is None or published is None else int(published) - int(received),
            "lost_s": _rounded(js.get("lost_s"), 3), "longest_lost_s": _rounded(js.get("longest_lost_s"), 3),
            "covered_share": _rounded(js.get("covered_share"), 4), "complete": bool(js.get("complete", False))}


def _rounded(x, digits: int) -> float | None:
    return None if x is None else round(float(x), digits)


def delivery_figures(results: list[dict]) -> dict:
    """The joint-state figures over the runs (module doc), and the spread figures over the complete runs only."""
    runs = [run_delivery(r) for r in results]
    covered = [d["covered_share"] for d in runs if d["covered_share"] is not None]
    lost = [d["lost_s"] for d in runs if d["lost_s"] is not None]
    unreceived = [d["unreceived"] for d in runs if d["unreceived"] is not None]
    unpublished = [d["unpublished"] for d in runs if d["unpublished"] is not None]
    complete = [r for r, d in zip(results, runs) if d["complete"]]
    figures: dict = {"cell_runs_complete": len(complete),
                     "cell_joint_states_covered_min": round(min(covered), 4) if covered else None,
                     "cell_joint_states_covered_median": round(float(np.median(covered)), 4) if covered else None,
                     "cell_joint_states_lost_max_s": round(max(lost), 3) if lost else None,
                     "cell_joint_states_unpublished_max": max(unpublished) if unpublished else None,
                     "cell_joint_states_unreceived_max": max(unreceived) if unreceived else None}
    figures.update({f"{k}_complete_data": v for k, v in spread_figures(complete).items() if k != "cell_runs"})
    return figures


SPREAD_KEYS = ("cell_runs", "cell_convergence_median_s", "cell_convergence_max_s", "cell_convergence_within_2s_share",
               "cell_declared_share", "cell_converged_cover_2sigma", "cell_converged_beyond_3sigma",
               "cell_mass_err_pct_median_abs", "cell_com_err_mm_median")


def per_run(seed: int, robot: int, result: dict) -> dict:
    """cell_per_run's entry of one run."""
    ct = result.get("convergence_time")
    return {"seed": seed, "robot_seed": robot, **run_delivery(result), "converged": bool(result.get("converged")),
            "convergence_time": None if ct is None else round(float(ct), 3),
            "mass_err_pct": round(float(result["errors"]["mass_err_pct"]), 3)}


def run_demo(out: Path, seed: int, robot: int = DEMO_ROBOT_SEED, clock: str = "sim") -> dict:
    cmd = [sys.executable, "-m", "payload_id_ros.demo", "--out", str(out), "--seed", str(seed), "--clock", clock]
    if robot != DEMO_ROBOT_SEED:
        cmd += ["--robot-seed", str(robot)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return yaml.safe_load((out / "demo_result.yaml").read_text())


def main() -> int:
    out = REPO / "out"
    seeds = seeds_from_env(os.environ.get("CELL_SEEDS"))
    robots = robot_seeds_from_env(os.environ.get("CELL_ROBOT_SEEDS"))
    clock = clock_from_env(os.environ.get("CELL_CLOCK"))
    # The timed run's unloaded robot identified (and cached) first, under the key the timed run looks up: a check for
    # any cached robot.yaml let another robot seed's file pass, and the identification into demo_wall_s.
    subprocess.run([sys.executable, "-m", "payload_id_ros.demo", "--out", str(out), "--prepare-only"], check=True,
                   stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    r = run_demo(out, FIRST_SEED, clock=clock)
    wall = time.monotonic() - t0
    figures = {"demo_wall_s": round(wall, 1),
               "cell_convergence_s": r["convergence_time"],
               "estimator_cpu_pct": round(r["estimator_cpu_pct"], 1),
               "estimator_cpu_mean_pct": round(r["estimator_cpu_pct_mean"], 1),
               "estimator_idle_cpu_pct": round(r["estimator_idle_cpu_pct"], 1),
               "cell_mass_err_pct": round(r["errors"]["mass_err_pct"], 3),
               "cell_com_err_mm": round(r["errors"]["com_err_mm"], 2),
               "cell_joint_states": run_delivery(r)}
    results = [r] if FIRST_SEED in seeds and robots == "demo" else []
    runs = [per_run(FIRST_SEED, DEMO_ROBOT_SEED, r)] if results else []
    for seed in seeds:
        if seed == FIRST_SEED and results:
            continue
        results.append(run_demo(out, seed, robot_seed(robots, seed), clock))
        runs.append(per_run(seed, robot_seed(robots, seed), results[-1]))
        d = runs[-1]
        print(f"cell: seed {seed} (robot seed {d['robot_seed']}): converged {d['converged']} at "
              f"{d['convergence_time']} s; joint states received {d['received']} of {d['published']} published, "
              f"{d['lost_s']} s lost (covered {d['covered_share']})"
              + ("" if d["complete"] else ": INCOMPLETE, see the _complete_data figures"), file=sys.stderr, flush=True)
    figures.update(spread_figures(results))
    figures.update(delivery_figures(results))
    figures["cell_robot_seeds"] = robots
    figures["cell_clock"] = clock
    figures["cell_per_run"] = runs
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
