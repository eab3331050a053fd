"""Excitation benchmark: conditioning of the bundled UR10 trajectories and the time of one optimization.

Figures (last stdout line, JSON):
  ur10_base_cond             base regressor + linear friction of config/trajectories/ur10_base.yaml
                             (rows / effort limit, columns unit norm; target < 100, Xu 2024 reached 79.67)
  ur10_base_cond_unscaled_columns   the same without column scaling (for comparison with papers)
  ur10_payload_cond          payload regressor W_L (tool frame, L = 0.1 m units) of ur10_payload.yaml
  ur10_payload_cond_random_median   the same for 20 random trajectories filling 95 % of the limits
  ur10_payload_cond_factor   random median / optimized
  excite_optimize_s          median wall time of a full default optimization (UR10, 6 joints, 10 s,
                             5 harmonics, payload objective, 3 seeds x 60 SLSQP iterations); target <= 60 s
Usage: .venv/bin/python bench/excite.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from payload_id_core.excitation import MotionLimits, load_trajectory
from payload_id_core.excitation_design import (
    ExcitationDesign, RegressorMetrics, evaluate_trajectory, optimize_excitation, random_feasible,
)
from payload_id_core.model import RobotModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ur10 = RobotModel.from_urdf("ur10")
    base_traj = load_trajectory("ur10_base")
    pay_traj = load_trajectory("ur10_payload")
    frame = pay_traj.design["frame"]
    base = evaluate_trajectory(ur10, base_traj, n_samples=1000)
    pay = evaluate_trajectory(ur10, pay_traj, frame, n_samples=1000)

    limits = MotionLimits.from_model(ur10, margin=0.05)
    design = ExcitationDesign(ur10, limits, objective="payload", frame=frame)
    metrics = RegressorMetrics(ur10, frame)
    t = np.linspace(0.0, 10.0, 1000, endpoint=False)
    rng = np.random.default_rng(0)
    random_conds = [metrics.evaluate(*design.motion(random_feasible(design, rng, fill=0.95), t))["payload_cond"]
                    for _ in range(20)]
    times = []
    for r in range(args.repeats):
        start = time.perf_counter()
        result = optimize_excitation(design, seeds=3, seed=r)
        times.append(time.perf_counter() - start)
        print(f"run {r}: {times[-1]:.1f} s, payload cond {result.metrics['payload_cond']:.3g}")
    rand_med = statistics.median(random_conds)
    print(json.dumps({
        "ur10_base_cond": round(base["base_cond"], 3),
        "ur10_base_cond_unscaled_columns": round(base["base_cond_unscaled_columns"], 1),
        "ur10_payload_cond": round(pay["payload_cond"], 3),
        "ur10_payload_cond_random_median": round(rand_med, 1),
        "ur10_payload_cond_factor": round(rand_med / pay["payload_cond"], 2),
        "excite_optimize_s": round(statistics.median(times), 2),
    }))


if __name__ == "__main__":
    main()
