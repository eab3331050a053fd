"""Excitation benchmark: conditioning of the bundled UR10 trajectories and the time of one optimization.

Figures (last stdout line, JSON):
  ur10_base_cond             Xu 2024 §4.2's figure for the bundled ur10_base trajectory: condition number
                             of the base regressor + linear friction (1000 samples of the period), rows
                             weighted by Λ0^(-1/2), no column scaling (SI units). Λ0 as Xu: per-joint
                             covariance of the OLS residuals of a simulated run of the trajectory on the
                             'ur10' profile (torque noise measured on real UR data). Target < 100 (Xu 79.67).
  ur10_base_cond_profile_noise   the same with the profile's torque_noise_std instead of the OLS estimate
  ur10_base_cond_unit_columns    the same matrix with columns scaled to unit norm (NOT comparable with Xu)
  ur10_noise_std_Nm_j1..j6   the Λ0 estimate (N·m)
  ur10_base_min_peak_velocity_fraction   smallest peak |q̇_j| / (margin-reduced) limit over joints
  ur10_payload_cond          payload regressor W_L (tool frame, L = 0.1 m units, rows / profile noise) of
                             ur10_payload.yaml
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

from payload_id_core.blas import single_threaded_blas
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.excitation.limits import MotionLimits
from payload_id_core.excitation_design import (
    ExcitationDesign,
    RegressorMetrics,
    evaluate_trajectory,
    noise_std_from_run,
    optimize_excitation,
    random_feasible,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with single_threaded_blas():
        figures = _figures(args.repeats)
    print(json.dumps(figures))


def _figures(repeats: int) -> dict:
    ur10 = RobotModel.from_urdf("ur10")
    base_traj = load_trajectory("ur10_base")
    pay_traj = load_trajectory("ur10_payload")
    frame = pay_traj.design["frame"]
    lambda0_std = noise_std_from_run(ur10, base_traj, profile="ur10", seed=0)
    base = evaluate_trajectory(ur10, base_traj, n_samples=1000, noise_std=lambda0_std)
    base_profile = evaluate_trajectory(ur10, base_traj, n_samples=1000)
    pay = evaluate_trajectory(ur10, pay_traj, frame, n_samples=1000)
    limits = MotionLimits.from_model(ur10, margin=0.05)
    _, qd, _ = base_traj.evaluate(base_traj.time_grid(1e-3))
    peak = np.abs(qd).max(axis=0) / limits.velocity

    design = ExcitationDesign(ur10, limits, objective="payload", frame=frame)
    metrics = RegressorMetrics(ur10, frame)
    t = np.linspace(0.0, 10.0, 1000, endpoint=False)
    rng = np.random.default_rng(0)
    random_conds = [metrics.evaluate(*design.motion(random_feasible(design, rng, fill=0.95), t))["payload_cond"]
                    for _ in range(20)]
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        result = optimize_excitation(design, seeds=3, seed=r)
        times.append(time.perf_counter() - start)
        print(f"run {r}: {times[-1]:.1f} s, payload cond {result.metrics['payload_cond']:.3g}")
    rand_med = statistics.median(random_conds)
    out = {
        "ur10_base_cond": round(base["base_cond"], 2),
        "ur10_base_cond_profile_noise": round(base_profile["base_cond"], 2),
        "ur10_base_cond_unit_columns": round(base["base_cond_unit_columns"], 3),
    }
    out.update({f"ur10_noise_std_Nm_j{j + 1}": round(float(v), 3) for j, v in enumerate(lambda0_std)})
    out.update({
        "ur10_base_min_peak_velocity_fraction": round(float(peak.min()), 3),
        "ur10_payload_cond": round(pay["payload_cond"], 3),
        "ur10_payload_cond_random_median": round(rand_med, 1),
        "ur10_payload_cond_factor": round(rand_med / pay["payload_cond"], 2),
        "excite_optimize_s": round(statistics.median(times), 2),
    })
    return out


if __name__ == "__main__":
    main()
