"""The bounding box on the payload monitor's re-estimates (issue 30 item 2, h193): what ~/payload publishes after a
pick with the node's box, against the part's truth, on the simulated UR10 pick-and-place task (sim.pick_place, the
`ur10` profile, parts of 0.5-5 kg, robot identified as bench/monitor.py's).

Each re-estimate the monitor publishes for a picked part (PayloadState.to_estimate: mass and CoM, the inertia not
identified) is given a box as LiveMonitor._published gives the node's (priors.apply_prior, then judge_quality), one
per setting, built around that part's true CoM c (sim.pick_place.random_part: a block of sides s):
  hull       the part's own hull c ± s/2
  offset     a 20 cm cube, c uniform within its middle (2 cm from every face)
  face       a 20 cm cube, c 1 mm inside one face (axis and side drawn per part): the box binds on that axis
  excluding  the face setting's cube moved so that c lies EXCLUDING_SIGMA of the re-estimate's own CoM σ outside
             that face: a wrong box, which must make the estimate suspect (or be refused), never an ok CoM held in it
monitor_priors_<setting>_com_coverage_2sigma   share of the CoM components within 2σ of the truth (σ first order
                                               through c = h/m), over the re-estimates where the box is applied (not
                                               excluding); _published: over those whose CoM ~/payload publishes with
                                               its σ (determined: σ ≤ 5 mm; the others go out with σ NaN), and
                                               _com_published how many those are
monitor_priors_none_com_coverage_2sigma        the same without the box (the monitor's own)
monitor_priors_<setting>_applied               share of the re-estimates with the box applied (not in
                                               prior_not_applied)
monitor_priors_<setting>_suspect               share published suspect
monitor_priors_<setting>_com_std_ratio_median  median of the bound axis's CoM σ with the box over without (face: the
                                               face's axis; others: the smallest over the three axes)
monitor_priors_excluding_flagged               share of the excluding box's re-estimates suspect or the box refused
monitor_priors_excluding_confident_wrong       share ok with the box applied and the truth beyond 2σ of the CoM on the
                                               excluding face's axis
monitor_priors_apply_ms_median, _max           process time of apply_prior + judge_quality per re-estimate, ms
monitor_priors_re_estimates                    how many re-estimates the figures are over (and parts picked)
MONITOR_PRIORS_SEEDS (default 10) tasks of MONITOR_PRIORS_TASK_S s (default 60) each. The last stdout line is JSON.
MONITOR_LOAD_FRICTION_EXPECTED=1 runs the monitor with MonitorSettings(load_friction_expected=True) (h212; off by
default).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.monitor import MonitorSettings, PayloadMonitor
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.sim.pick_place import pick_and_place

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from env_switch import env_switch  # noqa: E402 - tools/: the on/off spelling, unit-tested in test_env_switch

SEEDS = tuple(range(int(os.environ.get("MONITOR_PRIORS_SEEDS", "10"))))
TASK_S = float(os.environ.get("MONITOR_PRIORS_TASK_S", "60"))
EXPECTED = env_switch("MONITOR_LOAD_FRICTION_EXPECTED")
CUBE_M = 0.2
EXCLUDING_SIGMA = 4.0
SETTINGS = ("hull", "offset", "face", "excluding")


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def part_sides(phi: np.ndarray) -> np.ndarray:
    """The block's sides from its principal moments about the CoM (random_part: I_xx = m (b² + c²) / 12 ...)."""
    m = phi[0]
    c = phi[1:4] / m
    ixx, iyy, izz = (phi[4] - m * (c[1] ** 2 + c[2] ** 2), phi[6] - m * (c[0] ** 2 + c[2] ** 2),
                     phi[9] - m * (c[0] ** 2 + c[1] ** 2))
    sq = 6.0 / m * np.array([iyy + izz - ixx, ixx + izz - iyy, ixx + iyy - izz])
    return np.sqrt(np.maximum(sq, 0.0))


def boxes(com: np.ndarray, sides: np.ndarray, com_std: np.ndarray, rng: np.random.Generator) -> dict:
    """{setting: [x0, y0, z0, x1, y1, z1]} around the true CoM `com` (module docstring)."""
    out = {"hull": np.r_[com - sides / 2, com + sides / 2]}
    lo = com - rng.uniform(0.02, CUBE_M - 0.02, 3)
    out["offset"] = np.r_[lo, lo + CUBE_M]
    axis, side = int(rng.integers(3)), int(rng.integers(2))
    lo = com - rng.uniform(0.02, CUBE_M - 0.02, 3)
    lo[axis] = com[axis] - 0.001 if side == 0 else com[axis] + 0.001 - CUBE_M
    out["face"] = np.r_[lo, lo + CUBE_M]
    shift = EXCLUDING_SIGMA * com_std[axis] + 0.001
    ex = lo.copy()
    ex[axis] += shift if side == 0 else -shift
    out["excluding"] = np.r_[ex, ex + CUBE_M]
    return {k: (v, axis) for k, v in out.items()}


def main() -> int:
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    robot = fit_given_model(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1),
                           friction="nonlinear", estimator="wls")
    rows: dict[str, list] = {k: [] for k in ("none", *SETTINGS)}
    ms: list[float] = []
    parts = 0
    for seed in SEEDS:
        t0 = time.perf_counter()
        run = pick_and_place(model, "ur10", seconds=TASK_S, seed=seed)
        monitor = PayloadMonitor(model, robot, run.frame, settings=MonitorSettings(load_friction_expected=EXPECTED))
        picks = [c for c in run.changes if c.kind == "picked"]
        parts += len(picks)
        rng = np.random.default_rng(1000 + seed)
        for k in range(0, run.t.size, 10):
            update = monitor.update(run.t[k:k + 10], run.q[k:k + 10], run.qd[k:k + 10], run.tau[k:k + 10])
            state = update.estimate
            t_block = float(run.t[min(k + 9, run.t.size - 1)])
            if state is None or state.undecided or state.carries_nothing:
                continue
            # The part carried now (picked last, not placed since), if the re-estimate is of it.
            last = [c for c in run.changes if c.kind in ("picked", "placed") and c.t + 0.1 < t_block]
            part = last[-1].phi if last and last[-1].kind == "picked" else None
            if part is None or state.since < last[-1].t - 0.2:
                continue
            truth = part[1:4] / part[0]
            data = judge_quality(state.to_estimate(run.frame))
            data_std = data.propagated_std()[1:4]
            rows["none"].append({"covered": (np.abs(data.com - truth) <= 2 * data_std).tolist(),
                                 "identified": bool(data.readable_identifiable()[1:4].all())})
            log(f"  t {t_block:.2f} s, part {last[-1].mass:.2f} kg: CoM error / σ "
                f"{np.round((data.com - truth) / data_std, 2).tolist()}, σ {np.round(1e3 * data_std, 2).tolist()} mm"
                f"{'' if rows['none'][-1]['identified'] else ' (CoM undetermined: σ not published)'}")
            for name, (box, axis) in boxes(truth, part_sides(part), data_std, rng).items():
                c0 = time.process_time()
                est = judge_quality(apply_prior(state.to_estimate(run.frame), PayloadPrior.checked(box.tolist())))
                ms.append(1e3 * (time.process_time() - c0))
                std = est.propagated_std()[1:4]
                ratio = std[axis] / data_std[axis] if name in ("face", "excluding") else float(np.min(std / data_std))
                applied = "bounding_box" not in est.prior_not_applied
                rows[name].append({"covered": (np.abs(est.com - truth) <= 2 * std).tolist(), "applied": applied,
                                   "suspect": est.quality.value != "ok", "ratio": ratio, "axis": axis,
                                   "identified": bool(est.readable_identifiable()[1:4].all())})
                if name in ("face", "excluding"):
                    log(f"    {name} on axis {'xyz'[axis]}: applied {applied}, {est.quality.value}, error / σ "
                        f"{(est.com[axis] - truth[axis]) / std[axis]:+.2f} (σ ratio {ratio:.2f})")
        log(f"seed {seed}: {len(picks)} picks, {len(rows['none'])} re-estimates so far, "
            f"{time.perf_counter() - t0:.0f} s")
    out: dict = {"monitor_priors_re_estimates": len(rows["none"]), "monitor_priors_parts_picked": parts}
    def coverage(r: list, identified_only: bool) -> float | None:
        kept = [x["covered"] for x in r if x["identified"] or not identified_only]
        return round(float(np.mean(kept)), 3) if kept else None

    out["monitor_priors_none_com_coverage_2sigma"] = coverage(rows["none"], False)
    out["monitor_priors_none_com_coverage_2sigma_published"] = coverage(rows["none"], True)
    out["monitor_priors_none_com_published"] = sum(x["identified"] for x in rows["none"])
    for name in SETTINGS:
        r = rows[name]
        used = [x for x in r if x["applied"]]
        key = f"monitor_priors_{name}"
        if name != "excluding":
            out[f"{key}_com_coverage_2sigma"] = coverage(used, False)
            out[f"{key}_com_coverage_2sigma_published"] = coverage(used, True)
            out[f"{key}_com_published"] = sum(x["identified"] for x in used)
        out[f"{key}_applied"] = round(float(np.mean([x["applied"] for x in r])), 3)
        out[f"{key}_suspect"] = round(float(np.mean([x["suspect"] for x in r])), 3)
        out[f"{key}_com_std_ratio_median"] = round(float(np.median([x["ratio"] for x in r])), 3)
    ex = rows["excluding"]
    out["monitor_priors_excluding_flagged"] = round(float(np.mean([x["suspect"] or not x["applied"] for x in ex])), 3)
    out["monitor_priors_excluding_confident_wrong"] = round(float(np.mean(
        [x["applied"] and not x["suspect"] and not x["covered"][x["axis"]] for x in ex])), 3)
    out["monitor_priors_apply_ms_median"] = round(float(np.median(ms)), 1)
    out["monitor_priors_apply_ms_max"] = round(float(np.max(ms)), 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
