"""The identify goal's feedback stream on the simulated cell, as test_cell_e2e's goal runs it: the 10 s ur10_payload
excitation, difference-rls (config/ur10.yaml's default), the hidden 3.5 kg part, the robot identified on the same
excitation's unloaded run without gear friction (seed 11), mock_hardware seed 3. One goal through `payload-id identify
--ros` (payload_id_ros.demo.run_cell), and from the feedback it received (each stamped on arrival):

  feedback_with_estimate    how many feedback messages carried an estimate (test_feedback_streams_during_the_run
                            asserts >= 20; the node sends one every FEEDBACK_PERIOD, 0.2 s)
  feedback_gap_max_s, feedback_gap_median_s   the wall time between consecutive ones
  feedback_gaps_over_0_4s   how many gaps were longer than two feedback periods
  feedback_gap_max_at_s     the motion's elapsed time at the feedback that ended the longest gap
  estimator_cpu_pct, estimator_cpu_mean_pct   the payload_estimator's CPU during the goal, % of one core
                            (median over 0.5 s intervals / mean with the end of the goal: demo.run_cell)
  converged, convergence_time_s, mass_err_pct   the goal's answer

CELL_FEEDBACK_RUNS (default 1) goals, each in a fresh cell; with more than one the figures are medians over the runs
(feedback_gap_max_s: the largest); failed_runs counts the goals that failed (the reason on stderr: on a starved
machine a goal may abort on stale joint states). Wall-clock figures: say the machine's load with them (`uptime`).

Prints one JSON object as the last stdout line.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.io import atomic_write_yaml
from payload_id_ros.demo import HIDDEN_PAYLOAD, run_cell, unloaded_robot_yaml

REPO = Path(__file__).resolve().parents[1]
TRAJECTORY = "ur10_payload"     # config/ur10.yaml's default excitation: test_cell_e2e's goal
METHOD = "difference-rls"       # config/ur10.yaml's default method
SEED = 3                        # test_cell_e2e's mock_hardware seed


def gap_figures(result: dict) -> dict:
    """The feedback figures of one goal's result (payload-id identify --out, with each feedback's arrival `wall`)."""
    fb = [f for f in result.get("feedback") or [] if f.get("mass", 0.0) != 0.0]
    wall = np.array([f["wall"] for f in fb], dtype=float)
    gaps = np.diff(wall)
    if gaps.size == 0:
        return {"feedback_with_estimate": len(fb)}
    longest = int(np.argmax(gaps))
    truth = float(result["truth"]["mass"])
    return {"feedback_with_estimate": len(fb),
            "feedback_gap_max_s": round(float(gaps.max()), 3),
            "feedback_gap_median_s": round(float(np.median(gaps)), 3),
            "feedback_gaps_over_0_4s": int(np.sum(gaps > 0.4)),
            "feedback_gap_max_at_s": round(float(fb[longest + 1]["elapsed"]), 2),
            "estimator_cpu_pct": round(float(result["estimator_cpu_pct"]), 1),
            "estimator_cpu_mean_pct": round(float(result["estimator_cpu_pct_mean"]), 1),
            "converged": bool(result.get("converged")),
            "convergence_time_s": result.get("convergence_time"),
            "mass_err_pct": round(100.0 * (float(result["estimate"]["mass"]) - truth) / truth, 3)}


def summary(runs: list[dict]) -> dict:
    """One run's figures, or the medians over several (the largest gap's max)."""
    if len(runs) == 1:
        return runs[0]
    out: dict = {"runs": len(runs)}
    for key in runs[0]:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        if values:
            out[key] = round(float(np.max(values) if key == "feedback_gap_max_s" else np.median(values)), 3)
    out["converged_share"] = float(np.mean([bool(r.get("converged")) for r in runs]))
    return out


def main() -> int:
    runs = int(os.environ.get("CELL_FEEDBACK_RUNS", "1"))
    cache = REPO / "out" / "demo_cache"
    robot_yaml = unloaded_robot_yaml(cache, TRAJECTORY)
    figures = []
    with tempfile.TemporaryDirectory(prefix="cell_feedback_") as tmp:
        out = Path(tmp)
        (out / "demo_cache").mkdir()
        truth = out / "demo_cache" / "hidden_payload.yaml"
        atomic_write_yaml(truth, HIDDEN_PAYLOAD)
        failed = []
        for k in range(runs):
            try:
                result = run_cell(out, robot_yaml, TRAJECTORY, truth, METHOD, seed=SEED)
            except PayloadIdError as err:      # e.g. a goal aborted on stale joint states on a starved machine
                failed.append(str(err))
                print(f"cell_feedback: run {k + 1} failed: {err}", file=sys.stderr, flush=True)
                continue
            result["truth"] = HIDDEN_PAYLOAD
            figures.append(gap_figures(result))
            print(f"cell_feedback: run {k + 1}: {figures[-1]}", file=sys.stderr, flush=True)
    print(json.dumps({**(summary(figures) if figures else {}), "failed_runs": len(failed)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
