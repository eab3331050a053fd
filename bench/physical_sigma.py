"""Physical consistency's σ without a box (issues 29/30, h194: payload/physical_posterior.py), before and after.

The cell of bench/priors.py's `priors_cell_*` (the demo's 3.5 kg part, ur10_payload_fast, the robot identified on its
own unloaded run per loaded seed: 11 + s − 100), no prior; each estimate made twice in this process, with
finish.narrow_to_physical switched off (the projected point with the data's σ, as before h194) and on. Prints one JSON
object as its last line:

  physical_cell_<w>s_<method>_inertia_std_frac_{before,after}   median largest inertia σ over the largest moment
  physical_cell_<w>s_<method>_coverage_2sigma_inertia_{before,after}   inertia entries within 2σ of the truth
  physical_cell_<w>s_<method>_coverage_2sigma_{before,after}     mass and CoM within 2σ
  physical_cell_<w>s_<method>_inertia_determined_{before,after}  fraction of seeds
  physical_cell_<w>s_<method>_narrowed                           fraction of seeds with an entry narrowed
  physical_cell_<w>s_<method>_mass_com_std_change_max            largest |σ_after / σ_before − 1| of mass and CoM
  physical_cell_<w>s_<method>_time_ms                            median process time of narrow_to_physical
    <w> the seconds of motion (PHYSICAL_WINDOWS, default 2,3: the demo's convergence and 3 s); <method>
    PHYSICAL_METHODS (default difference-rls, direct-rls, khalil-1, khalil-3: khalil-3 on the same seconds of the
    unloaded run). PHYSICAL_SEEDS: how many loaded seeds from 100 (default 10).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import payload_id_core.payload.finish as finish
from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.physical_posterior import narrow_to_physical
from payload_id_core.payload_estimate import PayloadEstimate, readable_vector
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.synthetic import first_seconds

PAYLOAD = (3.5, np.array([0.03, -0.02, 0.08]), np.diag([0.012, 0.015, 0.009]))   # bench/priors.py CELL_PAYLOAD
WINDOWS = tuple(float(w) for w in os.environ.get("PHYSICAL_WINDOWS", "2,3").split(","))
METHODS = tuple(os.environ.get("PHYSICAL_METHODS", "difference-rls,direct-rls,khalil-1,khalil-3").split(","))
SEEDS = tuple(range(100, 100 + int(os.environ.get("PHYSICAL_SEEDS", "10"))))
UNLOADED_TWIN = frozenset({"khalil-2", "khalil-3", "khalil-4", "gaz-dtau"})
TIMES: list[float] = []


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def timed(est: PayloadEstimate, raw: np.ndarray) -> PayloadEstimate:
    t0 = time.process_time()
    out = narrow_to_physical(est, raw)
    TIMES.append(time.process_time() - t0)
    return out


def figures(est: PayloadEstimate, truth: np.ndarray, largest: float) -> dict:
    std = est.propagated_std()
    return {"std": std, "covered": np.abs(readable_vector(est.phi) - truth) <= 2 * std,
            "frac": float(np.max(std[4:]) / largest), "det": bool(est.readable_identifiable()[4:].all()),
            "narrowed": bool(est.physically_narrowed)}


def main() -> None:
    limit_blas_threads(1)
    m = RobotModel.from_urdf("ur10")
    frame = "tool0"
    mass, com, inertia = PAYLOAD
    phi = from_mass_com_inertia(mass, com, inertia)
    truth = readable_vector(phi)
    largest = float(np.max(np.linalg.eigvalsh(inertia)))
    traj = load_trajectory("ur10_payload_fast")
    rows: dict[tuple[float, str], list[tuple[dict, dict, float]]] = {(w, k): [] for w in WINDOWS for k in METHODS}
    for seed in SEEDS:
        t0 = time.perf_counter()
        unloaded = simulate(m, traj, None, "ur10", seed=11 + seed - SEEDS[0])
        robot = fit_given_model(m, unloaded, friction="nonlinear", gear_friction=True)
        loaded = simulate(m, traj, PayloadEstimate(frame, phi, np.zeros((10, 10)), "truth"), "ur10", seed=seed)
        for window in WINDOWS:
            rec, twin = first_seconds(loaded, window), first_seconds(unloaded, window)
            for method in METHODS:
                kw = {"unloaded": twin} if method in UNLOADED_TWIN else {}
                out = []
                for narrow in (lambda est, raw: est, timed):
                    finish.narrow_to_physical = narrow   # type: ignore[assignment]
                    out.append(figures(identify_payload(method, m, robot, rec, frame, **kw), truth, largest))
                finish.narrow_to_physical = narrow_to_physical
                rows[(window, method)].append((out[0], out[1], TIMES[-1]))
        log(f"physical cell seed {seed}: {time.perf_counter() - t0:.1f} s")
    result: dict[str, float] = {}
    for (window, method), r in rows.items():
        key = f"physical_cell_{window:g}s_{method.replace('-', '_')}"
        for side, runs in (("before", [x[0] for x in r]), ("after", [x[1] for x in r])):
            covered = np.array([x["covered"] for x in runs])
            result[f"{key}_inertia_std_frac_{side}"] = float(np.median([x["frac"] for x in runs]))
            result[f"{key}_coverage_2sigma_inertia_{side}"] = float(np.mean(covered[:, 4:]))
            result[f"{key}_coverage_2sigma_{side}"] = float(np.mean(covered[:, :4]))
            result[f"{key}_inertia_determined_{side}"] = float(np.mean([x["det"] for x in runs]))
        result[f"{key}_narrowed"] = float(np.mean([x[1]["narrowed"] for x in r]))
        result[f"{key}_mass_com_std_change_max"] = float(max(np.max(np.abs(x[1]["std"][:4] / x[0]["std"][:4] - 1))
                                                              for x in r))
        result[f"{key}_time_ms"] = 1e3 * float(np.median([x[2] for x in r]))
        log(f"{key}: σ/I {result[f'{key}_inertia_std_frac_before']:.3f} → "
            f"{result[f'{key}_inertia_std_frac_after']:.3f}, "
            f"inertia coverage {result[f'{key}_coverage_2sigma_inertia_before']:.2f} → "
            f"{result[f'{key}_coverage_2sigma_inertia_after']:.2f}, determined "
            f"{result[f'{key}_inertia_determined_before']:.1f} → {result[f'{key}_inertia_determined_after']:.1f}, "
            f"{result[f'{key}_time_ms']:.0f} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
