"""The cell's convergence offline, as `make demo` runs it and bench/cell.py measures it over ROS (issue 29: the cell's
convergence ≤ 2 s): difference-rls on the bundled ur10_payload_fast, the 3.5 kg part on tool0, the robot identified
with its gear friction on the same excitation's unloaded run, the samples fed in blocks of 25 until it declares
convergence, then the rest of the 4 s run. Seeds CELL_CONVERGENCE_SEEDS (comma-separated, default 100-119: the
loaded runs' noise), each three times:

  demo     every run with the one robot identification the demo uses (unloaded run seed 11), as bench/payload.py's
           cell_convergence_*: the spread is that one identification's, and its coverage is not over independent runs
  each     run s with its own robot identification (unloaded run seed 1000 + s): independent runs
  cross    the robot identified once on another excitation (ur10_payload's unloaded run, seed 11, with its gear
           friction), as bench/payload.py's cell_convergence_cross_robot_gear_friction_*: a cell that identifies
           its robot once

and for each mode (prefix cell_convergence_<mode>_):

  declared_median_s, declared_max_s  the declared convergence time (seconds of motion; a run never declared counts as
                       the run's length), and within_2s_share, the share declared within 2.0 s
  declared_within_1pct, declared_cover_2sigma  share of runs whose mass when declared is within 1 % / within 2σ,
                       σ as the rule judges it (the estimator's with covariance_extra's part);
                       declared_beyond_3sigma: how many are beyond 3σ
  mass_err_pct_median_abs, mass_err_pct_max_abs, com_err_mm_median, com_err_mm_max   the final estimate's errors
  held_by_settle_share, held_by_sigma_share, held_by_reported_share  which part of the 'covariance' rule held the
                       declaration last (what_held_it: the estimator's own σ below 0.5 %, the last second's checks
                       within 2 of base.settle_band's σ, the σ with the serially correlated part), and
                       sigma_below_median_s when the own σ first fell below 0.5 %

                       own_std_pct_at_1s_median: the estimator's own mass σ after 1 s (% of the mass)

and cell_convergence_first_reversal_s, the seconds until each joint's commanded velocity first changes sign (until
then its load-friction and Coulomb columns keep one sign); cell_convergence_design_mass_std_pct_{1,2}s[_with_load_
friction]: the mass σ the excitation design's measure predicts after 1 and 2 s, without and with every joint's
load-friction μ_j (design_mass_std_pct). Per run (stderr) also the check that held the settling last: its time and
mass error.

CELL_CONVERGENCE_NEAR_REST (default 0): difference-rls's near_rest_epsilons, the joints' rows left out while they
pass within that many sign-smoothing widths of rest (payload/online/difference_rls.NEAR_REST_EPSILONS, opt-in: 3).

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
from payload_id_core.excitation_design import RegressorMetrics
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.base import SETTLE_SIGMAS, settle_band
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.online_feed import feed_until_converged, reported_mass_std

TRAJECTORY = "ur10_payload_fast"     # payload_id_ros.demo.PAYLOAD_TRAJECTORY (bench stays free of ROS imports)
FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
DEMO_ROBOT_SEED = 11                 # payload_id_ros.demo.ROBOT_SEED
CROSS_TRAJECTORY = "ur10_payload"    # mode 'cross': the robot identified on this excitation instead
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


def what_held_it(t: np.ndarray, mass: np.ndarray, std: np.ndarray, declared: float, converged: bool,
                 rel_std: float, settle: float, sigmas: float) -> dict:
    """Which part of the 'covariance' rule (payload/online/base.py) held the declaration back, from the
    estimator's history (its checks: t, mass, own σ): t_sigma, the first check with σ below rel_std of the mass;
    t_settled, the first check whose last `settle` seconds (and the check before them) lie within sigmas of
    settle_band's σ of it (the current σ, or the nested estimates' spread √(σ_i² − σ²) where larger);
    last, the part that held last ('reported': both held before the declaration, so the σ with the serially
    correlated part did); at the check before t_settled, the latest check outside that band (blocking_t, its
    mass error blocking_err_pct)."""
    ok_sigma = (mass > 0) & (std < rel_std * mass)
    settled = np.zeros(t.size, dtype=bool)
    for i in range(t.size):
        start = t[i] - settle
        before = np.flatnonzero(t <= start + 1e-9)
        if before.size:
            window = slice(before[-1], i + 1)
            settled[i] = bool(np.all(np.abs(mass[window] - mass[i]) <= sigmas * settle_band(std[window], std[i])))

    def first(ok: np.ndarray) -> float:
        return float(t[np.argmax(ok)]) if ok.any() else float("nan")

    t_sigma, t_settled, t_both = first(ok_sigma), first(settled), first(ok_sigma & settled)
    if converged and t_both + 1e-9 < declared - 0.003:
        last = "reported"
    else:
        last = "sigma" if not t_settled > t_sigma else "settle"
    blocking_t, blocking_err = float("nan"), float("nan")
    i = int(np.argmax(ok_sigma & settled)) - 1 if (ok_sigma & settled).any() else t.size - 1
    if i > 0:
        outside = np.abs(mass[:i + 1] - mass[i]) > sigmas * settle_band(std[:i + 1], std[i])
        band = np.flatnonzero(outside & (t[:i + 1] > t[i] - settle - 0.1))
        if band.size:
            blocking_t, blocking_err = float(t[band[-1]]), float(100 * (mass[band[-1]] - MASS) / MASS)
    return {"t_sigma": t_sigma, "t_settled": t_settled, "last": last, "blocking_t": blocking_t,
            "blocking_err_pct": blocking_err}


def first_reversals(traj) -> list[float]:
    """Seconds from the start until each joint's commanded velocity first changes sign (beyond 0.02 rad/s)."""
    t = np.arange(0.0, traj.duration, 1e-3)
    _, qd, _ = traj.evaluate(t)
    out = []
    for v in qd.T:
        moving = np.flatnonzero(np.abs(v) > 0.02)
        back = moving[np.sign(v[moving]) == -np.sign(v[moving[0]])] if moving.size else moving
        out.append(round(float(t[back[0]]), 3) if back.size else float("nan"))
    return out


def run(m: RobotModel, robot, rec, near_rest: float = 0.0) -> dict[str, float]:
    """One loaded run: declared time, the declared mass's error over its σ, the final errors, what held it."""
    sig = method_signals(rec, m, PayloadOptions(), robot)
    # history_every = the check's period: the history holds what each check saw (cached, nothing changes)
    est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=500.0, include_robot_uncertainty=True,
                                 history_every=BLOCK, near_rest_epsilons=near_rest)
    k = feed_until_converged(est, sig, BLOCK)
    z, cov, _ = est.payload_solution()
    declared = est.convergence_time if est.converged else float(sig.t[-1] - sig.t[0])
    err, std = z[0] - MASS, reported_mass_std(est, cov[0, 0], sig, k)
    converged = bool(est.converged)
    est.update_batch(sig.t[k:], sig.q[k:], sig.qd[k:], sig.qdd[k:], sig.tau[k:])
    final = est.estimate()
    mass, com, _ = to_mass_com_inertia(final.phi)
    h = final.history
    assert h is not None, "history_every records the checks"
    held = what_held_it(h["t"], h["phi"][:, 0], h["std"][:, 0], declared, converged, est.mass_rel_std,
                        est.settle_time, SETTLE_SIGMAS)
    at_1s = int(np.argmin(np.abs(h["t"] - 1.0)))
    return {"t": declared, "declared": converged, "err_pct": 100 * err / MASS, "z": abs(err) / std,
            "mass_pct": 100 * (mass - MASS) / MASS, "com_mm": 1e3 * float(np.linalg.norm(com - COM)),
            "std_1s_pct": 100 * float(h["std"][at_1s, 0]) / MASS, **held}


def design_mass_std_pct(m: RobotModel, traj) -> dict[str, float]:
    """The mass σ (% of MASS) the difference method has after 1 s and 2 s of the excitation by the design's own
    measure (excitation_design.RegressorMetrics, the design's torque noise, 500 Hz), without and with every
    joint's load-friction μ_j among the unknowns."""
    out = {}
    for lf in (False, True):
        metrics = RegressorMetrics(m, FRAME, noise_std=traj.design["noise_std"], load_friction=lf)
        for seconds in (1.0, 2.0):
            t = np.arange(1, int(round(seconds * 500)) + 1) / 500.0
            key = f"design_mass_std_pct_{seconds:g}s{'_with_load_friction' if lf else ''}"
            out[key] = round(100 * float(np.sqrt(metrics.mass_variance(*traj.evaluate(t)))) / MASS, 4)
    return out


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
           "held_by_settle_share": float(np.mean([r["last"] == "settle" for r in rows])),
           "held_by_sigma_share": float(np.mean([r["last"] == "sigma" for r in rows])),
           "held_by_reported_share": float(np.mean([r["last"] == "reported" for r in rows])),
           "sigma_below_median_s": float(np.median([r["t_sigma"] for r in rows])),
           "own_std_pct_at_1s_median": float(np.median([r["std_1s_pct"] for r in rows])),
           "runs": len(rows)}
    return {f"{prefix}_{k}": round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def main() -> int:
    limit_blas_threads(1)
    seeds = seeds_from_env(os.environ.get("CELL_CONVERGENCE_SEEDS"))
    try:
        near_rest = float(os.environ.get("CELL_CONVERGENCE_NEAR_REST") or 0.0)
    except ValueError:
        sys.exit(f"CELL_CONVERGENCE_NEAR_REST={os.environ['CELL_CONVERGENCE_NEAR_REST']!r} is not a number")
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(TRAJECTORY)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")

    def robot(seed: int, on=traj):
        return fit_given_model(m, simulate(m, on, None, "ur10", seed=seed), friction="nonlinear", gear_friction=True)

    shared = robot(DEMO_ROBOT_SEED)
    cross = robot(DEMO_ROBOT_SEED, load_trajectory(CROSS_TRAJECTORY))
    rows: dict[str, list] = {"demo": [], "each": [], "cross": []}
    for seed in seeds:
        rec = simulate(m, traj, truth, "ur10", seed=seed)
        rows["demo"].append(run(m, shared, rec, near_rest))
        rows["each"].append(run(m, robot(ROBOT_SEED_OFFSET + seed), rec, near_rest))
        rows["cross"].append(run(m, cross, rec, near_rest))
        for mode in rows:
            r = rows[mode][-1]
            print(f"{mode} seed {seed}: declared {r['t']:.2f} s at {r['err_pct']:+.2f} % ({r['z']:.2f}σ), final "
                  f"{r['mass_pct']:+.3f} %, CoM {r['com_mm']:.2f} mm; σ < 0.5 % at {r['t_sigma']:.2f} s, "
                  f"settled at {r['t_settled']:.2f} s, held last by {r['last']} (check at {r['blocking_t']:.2f} s "
                  f"{r['blocking_err_pct']:+.2f} %)", file=sys.stderr, flush=True)
    out: dict[str, float | list[float]] = {"cell_convergence_first_reversal_s": first_reversals(traj),
                             **{f"cell_convergence_{k}": v for k, v in design_mass_std_pct(m, traj).items()}}
    for mode, r in rows.items():
        out.update(figures(r, f"cell_convergence_{mode}"))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
