"""The cell's convergence offline, as `make demo` runs it and bench/cell.py measures it over ROS (issue 29: the cell's
convergence ≤ 2 s): difference-rls on the bundled ur10_payload_fast, the 3.5 kg part on tool0, the robot identified
with its gear friction on the same excitation's unloaded run, the samples fed in blocks of 25 until it declares
convergence, then the rest of the 4 s run. Seeds CELL_CONVERGENCE_SEEDS (comma-separated, default 100-119: the
loaded runs' noise), each twice:

  demo     every run with the one robot identification the demo uses (unloaded run seed 11), as bench/payload.py's
           cell_convergence_*: the spread is that one identification's, and its coverage is not over independent runs
  each     run s with its own robot identification (unloaded run seed 1000 + s): independent runs

and for each mode (prefix cell_convergence_<mode>_):

  declared_median_s, declared_max_s  the declared convergence time (seconds of motion; a run never declared counts as
                       the run's length), and within_2s_share, the share declared within 2.0 s
  declared_within_1pct, declared_cover_2sigma  share of runs whose mass when declared is within 1 % / within 2σ,
                       σ as the rule judges it (the estimator's with covariance_extra's part);
                       declared_beyond_3sigma: how many are beyond 3σ
  mass_err_pct_median_abs, mass_err_pct_max_abs, com_err_mm_median, com_err_mm_max   the final estimate's errors

Prints one JSON object as the last stdout line.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia, to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.covariance_extra import online_covariance_extra
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import identify_robot
from payload_id_core.sim import simulate

TRAJECTORY = "ur10_payload_fast"     # payload_id_ros.demo.PAYLOAD_TRAJECTORY (bench stays free of ROS imports)
FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
DEMO_ROBOT_SEED = 11                 # payload_id_ros.demo.ROBOT_SEED
ROBOT_SEED_OFFSET = 1000             # mode 'each': run s's robot from the unloaded run of seed 1000 + s
TARGET_S = 2.0
BLOCK = 25                           # the convergence check's period in samples


def seeds_from_env(value: str | None) -> list[int]:
    if not value or not value.strip():
        return list(range(100, 120))
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        sys.exit(f"CELL_CONVERGENCE_SEEDS={value!r} is not a comma-separated list of integers")


def run(m: RobotModel, robot, rec) -> dict[str, float]:
    """One loaded run: declared time, the declared mass's error over its σ, the final errors."""
    sig = method_signals(rec, m, PayloadOptions(), robot)
    est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True)
    k = 0
    while k < sig.t.size and not est.converged:
        est.update_batch(sig.t[k:k + BLOCK], sig.q[k:k + BLOCK], sig.qd[k:k + BLOCK], sig.qdd[k:k + BLOCK],
                         sig.tau[k:k + BLOCK])
        k += BLOCK
    z, cov, _ = est.payload_solution()
    extra, _ = online_covariance_extra(m, robot, FRAME, sig.q[:k], sig.qd[:k], sig.qdd[:k], sig.tau[:k],
                                       load_friction=est.n_lf > 0)
    declared = est.convergence_time if est.converged else float(sig.t[-1] - sig.t[0])
    err, std = z[0] - MASS, float(np.sqrt(cov[0, 0] + extra[0, 0]))
    est.update_batch(sig.t[k:], sig.q[k:], sig.qd[k:], sig.qdd[k:], sig.tau[k:])
    mass, com, _ = to_mass_com_inertia(est.estimate().phi)
    return {"t": declared, "declared": bool(est.converged), "err_pct": 100 * err / MASS, "z": abs(err) / std,
            "mass_pct": 100 * (mass - MASS) / MASS, "com_mm": 1e3 * float(np.linalg.norm(com - COM))}


def figures(rows: list[dict[str, float]], prefix: str) -> dict[str, float]:
    t = np.array([r["t"] for r in rows])
    declared = np.array([r["declared"] for r in rows])
    out = {"declared_median_s": float(np.median(t)), "declared_max_s": float(np.max(t)),
           "within_2s_share": float(np.mean(declared & (t <= TARGET_S + 1e-9))),
           "declared_within_1pct": float(np.mean([abs(r["err_pct"]) < 1.0 for r in rows])),
           "declared_cover_2sigma": float(np.mean([r["z"] <= 2.0 for r in rows])),
           "declared_beyond_3sigma": int(sum(r["z"] > 3.0 for r in rows)),
           "mass_err_pct_median_abs": float(np.median([abs(r["mass_pct"]) for r in rows])),
           "mass_err_pct_max_abs": float(np.max([abs(r["mass_pct"]) for r in rows])),
           "com_err_mm_median": float(np.median([r["com_mm"] for r in rows])),
           "com_err_mm_max": float(np.max([r["com_mm"] for r in rows])),
           "runs": len(rows)}
    return {f"{prefix}_{k}": round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def main() -> int:
    limit_blas_threads(1)
    seeds = seeds_from_env(os.environ.get("CELL_CONVERGENCE_SEEDS"))
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(TRAJECTORY)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")

    def robot(seed: int):
        return identify_robot(m, simulate(m, traj, None, "ur10", seed=seed), friction="nonlinear", gear_friction=True)

    shared = robot(DEMO_ROBOT_SEED)
    rows: dict[str, list] = {"demo": [], "each": []}
    for seed in seeds:
        rec = simulate(m, traj, truth, "ur10", seed=seed)
        rows["demo"].append(run(m, shared, rec))
        rows["each"].append(run(m, robot(ROBOT_SEED_OFFSET + seed), rec))
        for mode in rows:
            r = rows[mode][-1]
            print(f"{mode} seed {seed}: declared {r['t']:.2f} s at {r['err_pct']:+.2f} % ({r['z']:.2f}σ), final "
                  f"{r['mass_pct']:+.3f} %, CoM {r['com_mm']:.2f} mm", file=sys.stderr, flush=True)
    out: dict[str, float] = {}
    for mode, r in rows.items():
        out.update(figures(r, f"cell_convergence_{mode}"))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
