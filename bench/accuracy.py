"""Accuracy and honest uncertainty of every payload method (issue 13): the cell, σ coverage, other trajectories.

cell_<method>_mass_err_pct, cell_<method>_com_err_mm
    the MuJoCo cell with profile 'ur10' (load-dependent Coulomb friction μ = 0.02, rotor inertia, measured
    torque noise, 2 ms lag), bundled ur10_payload excitation, a 3.5 kg payload; the robot identified on the
    unloaded run of the same excitation (seed 1); loaded seeds CELL_SEEDS (unloaded runs for khalil-3/4 and
    gaz-dtau: seed + 100). Medians of |error|; cell_mass_err_pct_max / cell_com_err_mm_max their worst.
coverage_2sigma_<method>, coverage_2sigma_min
    over COVERAGE_SEEDS loaded runs of the same cell: the fraction of mass and CoM entries whose error is
    within twice the reported standard deviation (the worse of the mass fraction and the CoM fraction).
    coverage_2sigma_inertia_<method>: the same for the six inertia entries (the inertia bias is helper
    A1's part of issue 13; reported here so that it is visible).
xtraj_<robot>_<method>_mass_err_pct, xtraj_<robot>_<method>_com_err_mm
    the robot identified on one excitation (the bundled <robot>_payload_inertia, three 10 s periods: how the README
    tells a user to calibrate a robot whose payload goals play other motions; tools/xtraj_cell.py), the payload on
    another (the bundled <robot>_payload excitation): synthetic data with nonlinear friction 3 % higher under load,
    3 ms lag, 1 N·m torque noise (the setting of bench/payload.py), UR10 and Panda; medians over XTRAJ_SEEDS. Each seed
    has its own robot identification (the same excitation, torque noise seed 1000 + seed): the robot's
    identification error is common to every payload fitted with it, so one identification for all seeds
    measured that one draw of θ_a, not the methods (issue 13 item 2, docs/design.md "The methods").
    ACCURACY_XTRAJ_DRIFT_RUNS (default 3): each seed's robot.yaml also records the friction offsets' drift measured
    on that many unloaded runs of other excitations (10 s sums of sines, their own seeds), as identify-robot
    --drift-bag does; difference-rls holds its offsets' change by it. 0: no record, the offsets free (as before).
xtraj_confident_beyond_3sigma
    (issue 29 item 4) over both robots, every method and XTRAJ_SEEDS: the number of estimates declared
    `converged` with quality ok whose mass, or a CoM axis it reports, is more than 3σ (its own reported σ) off
    the truth: a confident wrong answer off the robot's own motion. Target 0.
xtraj_confident_checks, xtraj_confident_beyond_3sigma_expected
    how many such comparisons (mass, and each CoM axis reported, of the converged ok estimates) the count above
    made, and the count a calibrated Gaussian σ gives on them (checks × P(|z| > 3) = checks × 0.0027): with 7
    methods × 2 robots × 10 seeds about 500 checks, ~1.4 expected, so a single event does not by itself show a σ
    that fails to cover; xtraj_<robot>_<method>_z_rms says whether it does.
xtraj_<robot>_<method>_z_rms_mass, xtraj_<robot>_<method>_z_rms_com
    |error|/σ RMS over XTRAJ_SEEDS of the mass and of the CoM axes (those reported; 1 for a calibrated σ).
xtraj_<robot>_<method>_mass_std_pct, xtraj_<robot>_<method>_com_std_mm, xtraj_<robot>_<method>_confident_beyond_3sigma
    the median reported σ of the mass (% of it) and of the CoM axes (those reported): a σ that grows shows here; and
    that method's share of xtraj_confident_beyond_3sigma.
xtraj_abs_z_p99, xtraj_<method>_z_rms, xtraj_confident_beyond_2sigma(_expected)
    (issue 29, h98) the confident checks' |error|/σ against the normal's: the 99th percentile of |z| (2.58 for a
    calibrated Gaussian σ), per method the RMS over both robots, and the count beyond 2σ with what a calibrated σ
    leaves there (checks × 0.0455: a tail heavier than Gaussian, or a bias, shows there long before it reaches 3σ).
    stderr prints the quantiles p50/p90/p95/p99 of |z| next to the normal's (a QQ summary).
xtraj_mass_err_pct_max, xtraj_com_err_mm_max
    (issue 29) the largest of those medians over both robots and every method (targets 0.25 % and 3 mm).
xtraj_<robot>_difference_rls_com_within_3mm
    (issue 29 item 3) the fraction of XTRAJ_SEEDS on which difference-rls reports the CoM (determined)
    within 3 mm of the truth (target 1).
xtraj_<robot>_difference_rls_com_std_over_direct_rls_max
    (issue 29 item 3) over the seeds where direct-rls reports the CoM: the largest ratio of difference-rls's CoM σ
    (largest axis) to direct-rls's on the same data, inf where difference-rls withholds it (target ≤ 1).
xtraj_online_over_khalil_1_max
    the issue's criterion in one number: the largest ratio of an online method's (direct-rls, difference-rls)
    median error to khalil-1's, over both robots and over mass and CoM (target ≤ 2). XTRAJ_SEEDS defaults to
    20 (ACCURACY_XTRAJ_SEEDS): a ratio of two medians over 5 draws was 2.25× with one identification for all
    seeds and 3.1× with one per seed, 1.0× over 20.

ACCURACY_XTRAJ_FIRST_SEED, ACCURACY_XTRAJ_ROBOTS, ACCURACY_XTRAJ_METHODS (comma-separated) run a part of the xtraj
figures, e.g. seeds 10-19 beside 0-9; the figures over robots and methods are printed only for the whole.
ACCURACY_XTRAJ_DUMP: a file each estimate's error, σ and verdict are appended to, one JSON line each.

Robot identifications are cached in out/accuracy_cache (pickles keyed by the setting). The last stdout
line is one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.held_out_error import measure_offset_spread
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate, Quality, readable_vector
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.synthetic import sum_of_sines

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from xtraj_cell import RATE, cached, xtraj_cell  # noqa: E402 - tools/: the cell and cache bench/priors.py shares

CELL_MASS, CELL_COM, CELL_INERTIA = 3.5, np.array([0.03, -0.02, 0.08]), np.diag([0.012, 0.015, 0.009])
CELL_SEEDS = tuple(range(2, 2 + int(os.environ.get("ACCURACY_CELL_SEEDS", "5"))))
COVERAGE_SEEDS = tuple(range(2, 2 + int(os.environ.get("ACCURACY_COVERAGE_SEEDS", "20"))))
XTRAJ_FIRST_SEED = int(os.environ.get("ACCURACY_XTRAJ_FIRST_SEED", "0"))   # another block of seeds, run alongside
XTRAJ_SEEDS = tuple(range(XTRAJ_FIRST_SEED, XTRAJ_FIRST_SEED + int(os.environ.get("ACCURACY_XTRAJ_SEEDS", "20"))))
XTRAJ_DRIFT_RUNS = int(os.environ.get("ACCURACY_XTRAJ_DRIFT_RUNS", "3"))
METHODS = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")
# A part of the xtraj figures (comma-separated; default all): to run robots or methods alongside each other.
XTRAJ_METHODS = tuple(os.environ.get("ACCURACY_XTRAJ_METHODS", ",".join(METHODS)).split(","))
NEEDS_UNLOADED = frozenset({"khalil-3", "khalil-4", "gaz-dtau"})
DUMP = Path(os.environ["ACCURACY_XTRAJ_DUMP"]) if os.environ.get("ACCURACY_XTRAJ_DUMP") else None
XTRAJ = {"ur10": (4.0, np.array([0.02, -0.03, 0.08]), np.diag([0.02, 0.03, 0.015])),
         "panda": (1.5, np.array([0.01, -0.02, 0.05]), np.diag([0.004, 0.005, 0.003]))}
XTRAJ_ROBOTS = tuple(os.environ.get("ACCURACY_XTRAJ_ROBOTS", ",".join(XTRAJ)).split(","))


# |error|/σ of every confident check (converged, quality ok: mass and each reported CoM axis), per method over
# both robots: the tail that xtraj_confident_beyond_3sigma counts, seen whole.
confident_z: dict[str, list[float]] = {}


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def errors(est: PayloadEstimate, truth_phi: np.ndarray) -> dict[str, Any]:
    """Mass error (%), CoM error (mm), and the readable entries' error over their reported σ."""
    true = readable_vector(truth_phi)
    got = readable_vector(est.phi)
    std = est.readable_std()
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(got - true) / std
    return {"mass_pct": abs(got[0] - true[0]) / true[0] * 100,
            "com_mm": float(np.linalg.norm(got[1:4] - true[1:4])) * 1e3, "z": np.where(np.isfinite(z), z, np.inf)}


def cell(out: dict[str, float]) -> None:
    m = RobotModel.from_urdf("ur10")
    frame = "wrist_3_link"
    traj = load_trajectory("ur10_payload")
    phi = from_mass_com_inertia(CELL_MASS, CELL_COM, CELL_INERTIA)
    truth = PayloadEstimate(frame, phi, np.zeros((10, 10)), "truth")
    robot = cached("cell ur10 ur10_payload seed 1 nonlinear wls", lambda: fit_given_model(
        m, simulate(m, traj, None, "ur10", seed=1), friction="nonlinear", estimator="wls"))
    res: dict[str, list[dict]] = {method: [] for method in METHODS}
    for seed in sorted(set(CELL_SEEDS) | set(COVERAGE_SEEDS)):
        t0 = time.perf_counter()
        loaded = simulate(m, traj, truth, "ur10", seed=seed)
        unloaded = simulate(m, traj, None, "ur10", seed=seed + 100)
        for method in METHODS:
            est = identify_payload(method, m, robot, loaded, frame, source="commanded",
                                   unloaded=unloaded if method in NEEDS_UNLOADED else None)
            res[method].append({"seed": seed, **errors(est, phi)})
        log(f"cell seed {seed}: {time.perf_counter() - t0:.1f} s")
    for method, rows in res.items():
        key = method.replace("-", "_")
        first = [r for r in rows if r["seed"] in CELL_SEEDS]
        out[f"cell_{key}_mass_err_pct"] = float(np.median([r["mass_pct"] for r in first]))
        out[f"cell_{key}_com_err_mm"] = float(np.median([r["com_mm"] for r in first]))
        cov = [r for r in rows if r["seed"] in COVERAGE_SEEDS]
        z = np.array([r["z"] for r in cov])
        mass_cov = float(np.mean(z[:, 0] <= 2))
        com_cov = float(np.mean(z[:, 1:4] <= 2))
        out[f"coverage_2sigma_{key}"] = min(mass_cov, com_cov)
        out[f"coverage_2sigma_inertia_{key}"] = float(np.mean(z[:, 4:] <= 2))
        log(f"cell {method:15s} |mass err| {out[f'cell_{key}_mass_err_pct']:.3f} %  |CoM err| "
            f"{out[f'cell_{key}_com_err_mm']:.2f} mm  coverage mass {mass_cov:.2f} CoM {com_cov:.2f} "
            f"inertia {out[f'coverage_2sigma_inertia_{key}']:.2f} ({len(cov)} seeds)")
    out["cell_mass_err_pct_max"] = max(out[f"cell_{m_.replace('-', '_')}_mass_err_pct"] for m_ in METHODS)
    out["cell_com_err_mm_max"] = max(out[f"cell_{m_.replace('-', '_')}_com_err_mm"] for m_ in METHODS)
    out["coverage_2sigma_min"] = min(out[f"coverage_2sigma_{m_.replace('-', '_')}"] for m_ in METHODS)


def confident_beyond(est: PayloadEstimate, truth_phi: np.ndarray, sigmas: float = 3.0) -> bool:
    """Declared converged with quality ok, yet the mass or a reported CoM axis more than `sigmas` σ off."""
    if not (est.converged and est.quality is Quality.OK):
        return False
    std = est.readable_std()
    mass = float(truth_phi[0])
    off = [abs(est.mass - mass) > sigmas * std[0]]
    if est.determined is None or est.determined[1]:
        off += list(np.abs(est.com - truth_phi[1:4] / mass) > sigmas * std[1:4])
    return bool(any(off))


def with_drift_runs(xc, robot, seed: int):
    """`robot` with the offsets' drift measured as identify-robot --drift-bag does, on XTRAJ_DRIFT_RUNS unloaded runs
    of other excitations (10 s sums of sines, their own seeds and noise draws; the friction as at calibration);
    unchanged without (XTRAJ_DRIFT_RUNS 0: difference-rls's offsets free, as before issue 29's h88)."""
    if not XTRAJ_DRIFT_RUNS:
        return robot
    runs = [xc.recording(sum_of_sines(xc.model, 10.0, RATE, seed=3000 + 10 * seed + i), None, 1.0, 4000 + 10 * seed + i)
            for i in range(XTRAJ_DRIFT_RUNS)]
    return replace(robot, offset_drift=measure_offset_spread(xc.model, robot, runs))


def cross_trajectory(out: dict[str, float], robot_name: str) -> None:
    xc = xtraj_cell(robot_name)
    m = xc.model
    frame = m.default_payload_frame
    mass, com, inertia = XTRAJ[robot_name]
    phi = from_mass_com_inertia(mass, com, inertia)
    rec = xc.recording
    robot_for = xc.robot

    robots = {seed: with_drift_runs(xc, robot_for(seed), seed) for seed in XTRAJ_SEEDS}
    traj = load_trajectory(f"{robot_name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    com_seen: dict[str, list[tuple[bool, float, float]]] = {"difference-rls": [], "direct-rls": []}
    for method in XTRAJ_METHODS:
        key = method.replace("-", "_")
        errs_m, errs_c = [], []
        std_m, std_c = [], []
        z_mass: list[float] = []
        z_com: list[float] = []
        beyond = 0
        for seed in XTRAJ_SEEDS:
            loaded = rec(motion, (phi, frame), 1.03, seed)
            unloaded = rec(motion, None, 1.0, 500 + seed) if method in NEEDS_UNLOADED else None
            est = identify_payload(method, m, robots[seed], loaded, frame, unloaded=unloaded)
            e = errors(est, phi)
            reported = est.determined is None or bool(est.determined[1])   # (mass, CoM, inertia) reported
            z_mass.append(float(e["z"][0]))
            z_com += [float(v) for v in e["z"][1:4]] if reported else []
            if est.converged and est.quality is Quality.OK:
                out["xtraj_confident_checks"] = out.get("xtraj_confident_checks", 0.0) + 1.0 + 3.0 * reported
                confident_z.setdefault(method, []).extend(
                    [float(e["z"][0])] + ([float(v) for v in e["z"][1:4]] if reported else []))
            if DUMP:
                std = est.readable_std()
                signed = (readable_vector(est.phi) - readable_vector(phi))[:4] / std[:4]
                with DUMP.open("a") as f:
                    f.write(json.dumps({"robot": robot_name, "method": method, "seed": seed,
                                        "converged": bool(est.converged), "quality": est.quality.name,
                                        "com_reported": reported, "mass": est.mass, "std": std[:4].tolist(),
                                        "err": (readable_vector(est.phi) - readable_vector(phi))[:4].tolist(),
                                        "z": signed.tolist(), "notes": [str(n) for n in getattr(est, "notes", [])]})
                            + "\n")
            if confident_beyond(est, phi):
                beyond += 1
                out["xtraj_confident_beyond_3sigma"] = out.get("xtraj_confident_beyond_3sigma", 0.0) + 1.0
                log(f"xtraj {robot_name} {method} seed {seed}: converged, ok, beyond 3σ: {est.mass:.4g} kg "
                    f"± {est.readable_std()[0]:.2g}, CoM {np.round(1e3 * est.com, 2).tolist()} mm")
            errs_m.append(e["mass_pct"])
            std_m.append(float(est.readable_std()[0]) / mass * 100)
            std_c += [float(v) * 1e3 for v in est.readable_std()[1:4]] if reported else []
            errs_c.append(e["com_mm"])
            if method in com_seen:
                com_seen[method].append((reported, e["com_mm"], float(1e3 * np.max(est.readable_std()[1:4]))))
        out[f"xtraj_{robot_name}_{key}_mass_err_pct"] = float(np.median(errs_m))
        out[f"xtraj_{robot_name}_{key}_com_err_mm"] = float(np.median(errs_c))
        out[f"xtraj_{robot_name}_{key}_z_rms_mass"] = float(np.sqrt(np.mean(np.square(z_mass))))
        out[f"xtraj_{robot_name}_{key}_z_rms_com"] = float(np.sqrt(np.mean(np.square(z_com)))) if z_com else np.nan
        out[f"xtraj_{robot_name}_{key}_mass_std_pct"] = float(np.median(std_m))
        out[f"xtraj_{robot_name}_{key}_confident_beyond_3sigma"] = float(beyond)
        out[f"xtraj_{robot_name}_{key}_com_std_mm"] = float(np.median(std_c)) if std_c else np.nan
        log(f"xtraj {robot_name} {method:15s} |mass err| {np.median(errs_m):.3f} %  "
            f"|CoM err| {np.median(errs_c):.2f} mm  |err|/σ RMS mass {out[f'xtraj_{robot_name}_{key}_z_rms_mass']:.2f} "
            f"CoM {out[f'xtraj_{robot_name}_{key}_z_rms_com']:.2f}  σ median mass {np.median(std_m):.3f} % CoM "
            f"{out[f'xtraj_{robot_name}_{key}_com_std_mm']:.2f} mm")
    diff, direct = com_seen["difference-rls"], com_seen["direct-rls"]
    if not (diff and direct):   # a part of the methods only
        return
    out[f"xtraj_{robot_name}_difference_rls_com_within_3mm"] = float(np.mean(
        [reported and err <= 3.0 for reported, err, _ in diff]))
    # Never less precise than direct-rls on the same data: its CoM σ (largest axis) over direct-rls's; a CoM
    # withheld where direct-rls reports one counts as infinitely less precise.
    ratios = [(d_std / r_std if d_rep else np.inf) for (d_rep, _, d_std), (r_rep, _, r_std) in zip(diff, direct)
              if r_rep]
    out[f"xtraj_{robot_name}_difference_rls_com_std_over_direct_rls_max"] = float(max(ratios, default=np.nan))
    log(f"xtraj {robot_name} difference-rls CoM reported within 3 mm on "
        f"{out[f'xtraj_{robot_name}_difference_rls_com_within_3mm']:.2f} of {len(diff)} seeds; its CoM σ over "
        f"direct-rls's at most {out[f'xtraj_{robot_name}_difference_rls_com_std_over_direct_rls_max']:.2f}")


# Quantiles of |z| for a standard normal z: what a calibrated Gaussian σ gives at each level.
NORMAL_ABS_Z = {0.5: 0.6745, 0.9: 1.6449, 0.95: 1.9600, 0.99: 2.5758}


def confident_tail(out: dict[str, float]) -> None:
    """The confident checks' |error|/σ distribution against the normal's: its QQ summary (the quantiles of |z| at
    NORMAL_ABS_Z's levels), p99 as a figure, per method the RMS over both robots, and the count beyond 2σ with what
    a calibrated σ leaves there (a heavier tail than Gaussian shows here long before it reaches 3σ)."""
    every = np.concatenate([np.asarray(v) for v in confident_z.values()]) if confident_z else np.zeros(0)
    if not every.size:
        return
    qq = {level: float(np.quantile(every, level)) for level in NORMAL_ABS_Z}
    out["xtraj_abs_z_p99"] = qq[0.99]
    out["xtraj_confident_beyond_2sigma"] = float(np.sum(every > 2.0))
    out["xtraj_confident_beyond_2sigma_expected"] = every.size * 0.0455
    for method, z in confident_z.items():
        out[f"xtraj_{method.replace('-', '_')}_z_rms"] = float(np.sqrt(np.mean(np.square(z))))
    log("xtraj confident |z| quantiles (normal): " + ", ".join(
        f"p{round(100 * level)} {q:.2f} ({NORMAL_ABS_Z[level]:.2f})" for level, q in qq.items())
        + f"; beyond 2σ {out['xtraj_confident_beyond_2sigma']:.0f} ({out['xtraj_confident_beyond_2sigma_expected']:.1f}"
        f" expected) of {every.size}")
    log("xtraj confident |z| RMS per method: " + ", ".join(
        f"{method} {np.sqrt(np.mean(np.square(z))):.2f}" for method, z in confident_z.items()))


def main() -> None:
    limit_blas_threads()  # small matrices: BLAS threads only cost here
    out: dict[str, float] = {}
    parts = sys.argv[1:] or ["xtraj", "cell"]
    t0 = time.perf_counter()
    if "xtraj" in parts:
        out["xtraj_confident_beyond_3sigma"] = 0.0
        out["xtraj_confident_checks"] = 0.0
        for robot_name in XTRAJ_ROBOTS:
            cross_trajectory(out, robot_name)
        # P(|z| > 3) for a standard normal: what a calibrated σ leaves beyond 3σ on the checks made.
        out["xtraj_confident_beyond_3sigma_expected"] = out["xtraj_confident_checks"] * 0.0027
        confident_tail(out)
        log(f"cross-trajectory: {time.perf_counter() - t0:.1f} s")
    if "xtraj" in parts and set(XTRAJ_ROBOTS) == set(XTRAJ) and set(XTRAJ_METHODS) == set(METHODS):
        out["xtraj_mass_err_pct_max"] = max(out[f"xtraj_{r}_{m_.replace('-', '_')}_mass_err_pct"]
                                            for r in XTRAJ for m_ in METHODS)
        out["xtraj_com_err_mm_max"] = max(out[f"xtraj_{r}_{m_.replace('-', '_')}_com_err_mm"]
                                          for r in XTRAJ for m_ in METHODS)
        out["xtraj_online_over_khalil_1_max"] = max(
            out[f"xtraj_{r}_{m_}_{what}"] / out[f"xtraj_{r}_khalil_1_{what}"]
            for r in XTRAJ for m_ in ("direct_rls", "difference_rls") for what in ("mass_err_pct", "com_err_mm"))
    if "cell" in parts:
        cell(out)
        log(f"total: {time.perf_counter() - t0:.1f} s")
    print(json.dumps({k: round(v, 4) for k, v in out.items()}))


if __name__ == "__main__":
    main()
