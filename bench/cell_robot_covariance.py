"""Does robot.yaml's covariance carry the robot identification's effect on the cell's early mass? (issue 29, h199)

The cell's robot as bench/cell.py and bench/cell_convergence.py identify it, one per noise seed of the unloaded run
(CELL_ROBOT_COV_SEEDS, comma-separated, default 1000-1019: `each` mode's robots): fit_given_model on
ur10_payload_fast's unloaded run, nonlinear friction, gear friction identified. Printed (one JSON object, the last
stdout line):

  robot_cov_param_spread_over_std_median, _max   per identified parameter θ_i: its spread over the robot seeds (the
                       sample std) over its mean reported σ (robot.yaml's covariance); near 1 when the covariance is
                       right, 2 when it is 2x short. _max_name names the largest
  robot_cov_inertial_err_over_std_rms_median, _max   per inertial base parameter (rigid-body base parameters and free
                       rotor inertias, whose truth is the URDF's and the profile's rotor_inertia): |θ̂ − θ| / σ RMS
                       over the seeds; 1 when calibrated and unbiased (friction has no truth in the model's form: the
                       simulated drives' law is another, so only its spread is judged above)
  robot_cov_alpha_spread_over_std, robot_cov_mu_spread_over_std   the friction exponent α's and the kept gear
                       friction μ's spread over their reported σ, per joint (null where not kept)

and, on the loaded runs of CELL_ROBOT_COV_LOADED (default 100,101; the 3.5 kg part on tool0), difference-rls's mass
after 1.0, 1.5, 2.0 and 4.0 s of motion with each robot (prefix robot_cov_mass_):

  robots_spread_pct    the spread of that mass over the robots (sample std, % of the mass), per time, mean over the
                       loaded runs
  J_C_Jt_pct           what robot.yaml's covariance C predicts for it: √(J C Jᵀ), J the mass's sensitivity to θ
                       (finite differences of the estimator on the first robot, its other fields held); the estimator
                       adds the same term to its own σ (difference_rls: P C_a Pᵀ, P its response to θ_a's error)
  J_Semp_Jt_pct        √(J S Jᵀ), S the θ̂'s sample covariance over the seeds: the part of the spread θ explains
  robots_mean_err_pct  the mass error averaged over the robots: what every robot shares (a model error, which no
                       covariance of the identification's noise covers)
  own_std_pct          the estimator's own σ (with include_robot_uncertainty), mean over the robots

Measured (h199): the spread over robots 0.23 / 0.21 / 0.17 / 0.10 % for J C Jᵀ 0.22 / 0.20 / 0.17 / 0.10 %:
robot.yaml's covariance is not short. h188's "2x short" compared σ with and without include_robot_uncertainty,
two estimators that weigh the data differently (with C_a the conversion leans less on the directions C_a says are
uncertain, so its noise part grows): their variances' difference, 0.10 %, is not the robot's share.
"""
from __future__ import annotations

import copy
import json
import os
import sys

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.sim import load_profile, simulate

TRAJECTORY = "ur10_payload_fast"     # payload_id_ros.demo.PAYLOAD_TRAJECTORY
PROFILE = "ur10"
FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
TIMES = (1.0, 1.5, 2.0, 4.0)         # s of motion the mass is read at
BLOCK = 25                           # the convergence check's period, as the cell feeds it


def seeds_from_env(name: str, default: list[int]) -> list[int]:
    value = os.environ.get(name)
    if not value or not value.strip():
        return default
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        sys.exit(f"{name}={value!r} is not a comma-separated list of integers (e.g. {name}=1000,1001,1002)")


def true_inertial(robot: RobotIdentification, model: RobotModel, rotor_inertia: np.ndarray) -> np.ndarray:
    """The inertial entries of θ (base parameters, then the free rotor inertias) the simulated robot has."""
    pi = robot.base.values(model.standard_parameters()) + robot.rotor.absorbed @ rotor_inertia
    return np.concatenate([pi, rotor_inertia[robot.rotor.free]])


def masses_at(model: RobotModel, robot: RobotIdentification, sig, times=TIMES) -> np.ndarray:
    """(len(times), 2): difference-rls's mass and its own variance after each time of motion, fed as the cell feeds
    it (blocks of the check's period)."""
    est = OnlinePayloadEstimator(model, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True)
    out, k = [], 0
    for t in times:
        end = int(np.searchsorted(sig.t - sig.t[0], t - 1e-9))
        while k < end:
            b = min(k + BLOCK, end)
            est.update_batch(sig.t[k:b], sig.q[k:b], sig.qd[k:b], sig.qdd[k:b], sig.tau[k:b])
            k = b
        z, cov, _ = est.payload_solution()
        out.append((z[0], cov[0, 0]))
    return np.array(out)


def mass_sensitivity(model: RobotModel, robot: RobotIdentification, sig, base: np.ndarray, times=TIMES) -> np.ndarray:
    """(len(times), p): ∂mass/∂θ_i by forward differences of one σ_i, the robot's other fields held; `base`: the
    mass at those times with the robot as it is."""
    std = np.sqrt(np.diag(robot.cov))
    J = np.zeros((len(times), std.size))
    for i in range(std.size):
        moved = copy.copy(robot)
        moved.theta = robot.theta.copy()
        moved.theta[i] += std[i]
        J[:, i] = (masses_at(model, moved, sig, times)[:, 0] - base) / std[i]
    return J


def spread_over_std(values: np.ndarray, stds: np.ndarray) -> np.ndarray:
    """Per column: the sample std of `values` (seeds, k) over the mean of `stds` (seeds, k); NaN where no σ."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.std(values, axis=0, ddof=1) / np.mean(stds, axis=0)


def main() -> int:
    limit_blas_threads(1)
    robot_seeds = seeds_from_env("CELL_ROBOT_COV_SEEDS", list(range(1000, 1020)))
    loaded_seeds = seeds_from_env("CELL_ROBOT_COV_LOADED", [100, 101])
    if len(robot_seeds) < 3:
        sys.exit("CELL_ROBOT_COV_SEEDS needs at least 3 robot seeds to measure a spread")
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(TRAJECTORY)
    rotor = np.asarray(load_profile(PROFILE, m.n).rotor_inertia, dtype=float)
    robots = [fit_given_model(m, simulate(m, traj, None, PROFILE, seed=s), friction="nonlinear", gear_friction=True)
              for s in robot_seeds]
    theta = np.array([r.theta for r in robots])
    std = np.array([np.sqrt(np.diag(r.cov)) for r in robots])
    ratio = spread_over_std(theta, std)
    worst = int(np.nanargmax(ratio))
    k = robots[0].n_inertial
    err = np.array([r.theta[:k] - true_inertial(r, m, rotor) for r in robots]) / std[:, :k]
    err_rms = np.sqrt(np.mean(err**2, axis=0))
    alpha = np.array([np.asarray(r.friction.shape, dtype=float)[:, 0] for r in robots])
    alpha_std = np.array([np.asarray(r.shape_std, dtype=float)[:, 0] for r in robots])
    kept = [r.gear is not None and r.gear.mu_std is not None for r in robots]
    mu_ratio = None
    if all(kept):
        mu = np.array([r.gear.mu for r in robots])            # type: ignore[union-attr]
        mu_std = np.array([r.gear.mu_std for r in robots])    # type: ignore[union-attr]
        mu_ratio = [None if not np.isfinite(v) else round(float(v), 3) for v in spread_over_std(mu, mu_std)]
    out: dict = {"robot_cov_robot_seeds": f"{robot_seeds[0]}..{robot_seeds[-1]} ({len(robot_seeds)})",
                 "robot_cov_param_spread_over_std_median": round(float(np.nanmedian(ratio)), 3),
                 "robot_cov_param_spread_over_std_max": round(float(ratio[worst]), 3),
                 "robot_cov_param_spread_over_std_max_name": robots[0].theta_names[worst],
                 "robot_cov_inertial_err_over_std_rms_median": round(float(np.median(err_rms)), 3),
                 "robot_cov_inertial_err_over_std_rms_max": round(float(np.max(err_rms)), 3),
                 "robot_cov_alpha_spread_over_std": np.round(spread_over_std(alpha, alpha_std), 3).tolist(),
                 "robot_cov_mu_spread_over_std": mu_ratio}
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    S = np.cov(theta.T)
    per_run: dict[str, list] = {k: [] for k in ("robots_spread_pct", "J_C_Jt_pct", "J_Semp_Jt_pct",
                                                "robots_mean_err_pct", "own_std_pct")}
    for seed in loaded_seeds:
        rec = simulate(m, traj, truth, PROFILE, seed=seed)
        got = np.array([masses_at(m, r, method_signals(rec, m, PayloadOptions(), r)) for r in robots])
        first = robots[0]
        J = mass_sensitivity(m, first, method_signals(rec, m, PayloadOptions(), first), got[0, :, 0])
        per_run["robots_spread_pct"].append(100 * np.std(got[:, :, 0], axis=0, ddof=1) / MASS)
        per_run["J_C_Jt_pct"].append(100 * np.sqrt(np.einsum("ti,ij,tj->t", J, first.cov, J)) / MASS)
        per_run["J_Semp_Jt_pct"].append(100 * np.sqrt(np.einsum("ti,ij,tj->t", J, S, J)) / MASS)
        per_run["robots_mean_err_pct"].append(100 * (np.mean(got[:, :, 0], axis=0) - MASS) / MASS)
        per_run["own_std_pct"].append(100 * np.sqrt(np.mean(got[:, :, 1], axis=0)) / MASS)
        print(f"loaded seed {seed}: " + ", ".join(f"{k} {np.round(v[-1], 3).tolist()}" for k, v in per_run.items()),
              file=sys.stderr, flush=True)
    out["robot_cov_mass_times_s"] = list(TIMES)
    out["robot_cov_mass_loaded_seeds"] = loaded_seeds
    for key, rows in per_run.items():
        out[f"robot_cov_mass_{key}"] = np.round(np.mean(rows, axis=0), 3).tolist()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
