"""Prior knowledge of the payload (issue 30): a bounding box and a weighed mass, on short motions and on the real UR10e.

priors_<robot>_<method>_<prior>_com_err_mm          median over PRIORS_SEEDS of the largest |CoM error| component, mm
priors_<robot>_<method>_<prior>_com_determined      fraction of seeds whose CoM the result gives (σ <= 5 mm)
priors_<robot>_<method>_<prior>_inertia_determined  fraction of seeds whose inertia the result gives (σ <= 25 % of the
                                                    inertia scale: finish.judge_determination)
priors_<robot>_<method>_<prior>_inertia_std_frac    median of the largest inertia σ over the largest principal moment
priors_<robot>_<method>_<prior>_coverage_2sigma     fraction of mass and CoM entries within 2σ of the truth
priors_<robot>_<method>_<prior>_coverage_2sigma_inertia   the same for the six inertia entries
priors_<robot>_<method>_<prior>_inertia_pinned      fraction of the inertia entries the prior pinned (σ below half the
                                                    motion's own; PayloadEstimate.prior_pinned)
priors_<robot>_<method>_<prior>_inertia_bounded     fraction of them the box only bounds (prior_bounded)
    <robot> ur10 | panda; <method> khalil_1 | difference_rls; <prior> none | box | mass | box_mass.
    Synthetic data as bench/accuracy.py's cross-trajectory setting (nonlinear friction 3 % higher under load, 3 ms
    lag, 1 N·m torque noise), the robot identified on its calibration excitation (tools/xtraj_cell.py; one
    identification per robot, the cache of bench/accuracy.py's seed 0), the payload on a SHORT_S s motion of another
    seed: a solid block whose 20 cm box (the prior) is not centred on its CoM; the known mass is the true one with
    σ 0.5 %.
ur10e_<pair>_<method>_known_mass_com_std_mm_max     the real UR10e pairs through the command line (robot.yaml from
ur10e_<pair>_<method>_known_mass_com_vs_khalil_3_mm  the 14harm pair and the 2.805 kg), --known-mass 2.805: the
                                                    largest CoM σ, and the largest CoM difference from khalil-3 (the
                                                    same flag) on the same pair; <method> khalil_1 | difference_rls;
                                                    _none: the same without the flag. Skipped without the data.
The last stdout line is one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from payload_id_core.blas import limit_blas_threads
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.priors import PayloadPrior
from payload_id_core.payload_estimate import PayloadEstimate, readable_vector
from payload_id_core.testing.synthetic import sum_of_sines

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/, beside the report script
from xtraj_cell import RATE, xtraj_cell  # noqa: E402 - tools/: bench/accuracy.py's cell and cache

SHORT_S = float(os.environ.get("PRIORS_SHORT_S", "1.5"))
PRIORS_SEEDS = tuple(range(int(os.environ.get("PRIORS_SEEDS", "10"))))
METHODS = ("khalil-1", "difference-rls")
# (mass, CoM, block sides, the 20 cm box holding it: low corner, high corner), payload frame.
PAYLOADS = {
    "ur10": (4.0, np.array([0.05, -0.03, 0.09]), np.array([0.16, 0.14, 0.12]),
             [-0.04, -0.11, 0.0, 0.16, 0.09, 0.2]),
    "panda": (1.5, np.array([0.01, -0.02, 0.05]), np.array([0.10, 0.08, 0.06]),
              [-0.06, -0.09, 0.0, 0.14, 0.11, 0.2]),
}
KNOWN_MASS_REL_STD = 0.005


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def block_phi(mass: float, com: np.ndarray, sides: np.ndarray) -> np.ndarray:
    a, b, c = sides
    return from_mass_com_inertia(mass, com, np.diag(mass / 12 * np.array([b * b + c * c, a * a + c * c,
                                                                          a * a + b * b])))


def simulated(out: dict, robot_name: str) -> None:
    xc = xtraj_cell(robot_name)
    m = xc.model
    frame = m.default_payload_frame
    mass, com, sides, box = PAYLOADS[robot_name]
    phi = block_phi(mass, com, sides)
    truth = readable_vector(phi)
    largest_moment = float(np.max(truth[4:]))
    rec = xc.recording
    robot = xc.robot(0)    # bench/accuracy.py's cross-trajectory seed 0, from the shared cache
    priors = {"none": None, "box": PayloadPrior.checked(box),
              "mass": PayloadPrior.checked(None, mass, KNOWN_MASS_REL_STD * mass),
              "box_mass": PayloadPrior.checked(box, mass, KNOWN_MASS_REL_STD * mass)}
    rows: dict[tuple[str, str], list[dict]] = {(me, p): [] for me in METHODS for p in priors}
    for seed in PRIORS_SEEDS:
        t0 = time.perf_counter()
        loaded = rec(sum_of_sines(m, SHORT_S, RATE, seed=100 + seed), (phi, frame), 1.03, seed)
        for method in METHODS:
            for name, prior in priors.items():
                est: PayloadEstimate = identify_payload(method, m, robot, loaded, frame, payload_prior=prior)
                got, std = readable_vector(est.phi), est.propagated_std()
                known = est.readable_identifiable()
                rows[(method, name)].append({
                    "com_err": float(np.max(np.abs(got[1:4] - truth[1:4]))),
                    "com_det": bool(known[1:4].all()), "inertia_det": bool(known[4:].all()),
                    "inertia_std_frac": float(np.max(std[4:]) / largest_moment),
                    "covered": np.abs(got - truth) <= 2 * std,
                    "inertia_pinned": sum(n.startswith("inertia") for n in est.prior_pinned) / 6,
                    "inertia_bounded": sum(n.startswith("inertia") for n in est.prior_bounded) / 6})
        log(f"{robot_name} seed {seed}: {time.perf_counter() - t0:.1f} s")
    for (method, name), r in rows.items():
        key = f"priors_{robot_name}_{method.replace('-', '_')}_{name}"
        covered = np.array([x["covered"] for x in r])
        out[f"{key}_com_err_mm"] = 1e3 * float(np.median([x["com_err"] for x in r]))
        out[f"{key}_com_determined"] = float(np.mean([x["com_det"] for x in r]))
        out[f"{key}_inertia_determined"] = float(np.mean([x["inertia_det"] for x in r]))
        out[f"{key}_inertia_std_frac"] = float(np.median([x["inertia_std_frac"] for x in r]))
        out[f"{key}_coverage_2sigma"] = float(np.mean(covered[:, :4]))
        out[f"{key}_coverage_2sigma_inertia"] = float(np.mean(covered[:, 4:]))
        out[f"{key}_inertia_pinned"] = float(np.mean([x["inertia_pinned"] for x in r]))
        out[f"{key}_inertia_bounded"] = float(np.mean([x["inertia_bounded"] for x in r]))
        log(f"{key}: CoM err {out[f'{key}_com_err_mm']:.2f} mm, CoM determined {out[f'{key}_com_determined']:.1f}, "
            f"inertia determined {out[f'{key}_inertia_determined']:.1f} (σ/I {out[f'{key}_inertia_std_frac']:.2f}), "
            f"coverage {out[f'{key}_coverage_2sigma']:.2f} / inertia {out[f'{key}_coverage_2sigma_inertia']:.2f}, "
            f"inertia entries pinned {out[f'{key}_inertia_pinned']:.2f} / bounded {out[f'{key}_inertia_bounded']:.2f}")


def real_ur10e(out: dict) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        log(f"real UR10e skipped: {rd.data_missing_reason(data)}")
        return
    urdf = str(data / "ur10e.urdf")
    pairs = {"15harm": ("ur-20_02_19_15harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv"),
             "0131": ("ur-20_01_31-load.csv", "ur-20_01_31-unload.csv")}
    with tempfile.TemporaryDirectory() as tmp:
        robot_yaml = Path(tmp) / "robot.yaml"
        cli_main(["identify-robot", "--urdf", urdf, "--csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][0]),
                  "--loaded-csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][1]),
                  "--known-payload-mass", str(rd.LOAD_MASS_KG), "--out", str(robot_yaml)])
        for pair, (loaded, unloaded) in pairs.items():
            found: dict[tuple[str, str], PayloadEstimate] = {}
            for method in ("khalil-3", *METHODS):
                for flag in ("none", "known_mass"):
                    path = Path(tmp) / f"{pair}_{method}_{flag}.yaml"
                    extra = ["--known-mass", str(rd.LOAD_MASS_KG)] if flag == "known_mass" else []
                    code = cli_main(["identify-payload", "--urdf", urdf, "--robot", str(robot_yaml), "--csv-ur",
                                     str(data / loaded), "--unloaded-csv-ur", str(data / unloaded), "--method", method,
                                     *extra, "--out", str(path)])
                    if code == 0:
                        found[(method, flag)] = PayloadEstimate.from_dict(yaml.safe_load(path.read_text()))
            for method in METHODS:
                for flag in ("none", "known_mass"):
                    est, ref = found.get((method, flag)), found.get(("khalil-3", flag))
                    if est is None or ref is None:
                        continue
                    key = f"ur10e_{pair}_{method.replace('-', '_')}_{flag}"
                    out[f"{key}_com_std_mm_max"] = 1e3 * float(np.max(est.propagated_std()[1:4]))
                    out[f"{key}_com_vs_khalil_3_mm"] = 1e3 * float(np.max(np.abs(est.com - ref.com)))
                    log(f"{key}: CoM σ max {out[f'{key}_com_std_mm_max']:.1f} mm, vs khalil-3 "
                        f"{out[f'{key}_com_vs_khalil_3_mm']:.1f} mm, pinned {est.prior_pinned}")


def main() -> None:
    limit_blas_threads(1)
    t0 = time.perf_counter()
    out: dict = {}
    for robot_name in PAYLOADS:
        simulated(out, robot_name)
    real_ur10e(out)
    out["priors_bench_s"] = time.perf_counter() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
