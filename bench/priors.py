"""Prior knowledge of the payload (issue 30): a bounding box and a weighed mass, on short motions and on the real UR10e.

priors_<robot>_<method>_<prior>_com_err_mm          median over PRIORS_SEEDS of the largest |CoM error| component, mm
priors_<robot>_<method>_<prior>_com_std_mm          median over PRIORS_SEEDS of the largest CoM σ, mm (with <prior>
                                                    none: what the motion alone determines)
priors_<robot>_<method>_<prior>_com_determined      fraction of seeds whose CoM the result gives (σ <= 5 mm)
priors_<robot>_<method>_<prior>_inertia_determined  fraction of seeds whose inertia the result gives (σ <= 0.4 of the
                                                    inertia scale: finish.judge_determination, inertia_scale)
priors_<robot>_<method>_<prior>_inertia_std_frac    median of the largest inertia σ over the largest principal moment
priors_<robot>_<method>_<prior>_coverage_2sigma     fraction of mass and CoM entries within 2σ of the truth
priors_<robot>_<method>_<prior>_coverage_2sigma_inertia   the same for the six inertia entries
priors_<robot>_<method>_<prior>_inertia_pinned      fraction of the inertia entries the prior pinned (σ below half the
                                                    motion's own; PayloadEstimate.prior_pinned)
priors_<robot>_<method>_<prior>_inertia_bounded     fraction of them the box only bounds (prior_bounded)
priors_<robot>_<method>_<prior>_com_within_3mm      fraction of seeds whose CoM is reported, within 3 mm on each axis
priors_<robot>_<method>_<prior>_com_reported_off_2sigma  fraction of seeds whose CoM is reported (determined) with
                                                    a component more than 2σ from the truth: the box narrows the
                                                    CoM's σ through the inertia; this counts where it overreaches
priors_<robot>_<method>_<prior>_moment_bias_sigma   median over seeds and ixx, iyy, izz of (estimate − truth) / σ: the
                                                    pull of a prior flat in φ on the moments (> 0: upward)
    <robot> ur10 | panda; <method> khalil_1 | difference_rls; <prior> none | box | mass | box_mass.
    Synthetic data as bench/accuracy.py's cross-trajectory setting (nonlinear friction 3 % higher under load, 3 ms
    lag, 1 N·m torque noise), the robot identified on its calibration excitation (tools/xtraj_cell.py; one
    identification per seed, the cache of bench/accuracy.py's seeds: the robot's identification error is common to
    every payload fitted with it, so one identification for every seed measured that one draw, not the σ), the payload
    on what a user plays: PRIORS_MOTION=config (default) the whole of the trajectory config/<robot>.yaml's
    payload_estimator plays by default (ur10_payload, panda_payload: 10 s); PRIORS_MOTION=sines a random sum of sines
    of period SHORT_S, another per seed, at up to 15 rad/s² on every joint (testing.synthetic.sum_of_sines: beyond the
    Panda's own limits of 3.6-9.5 rad/s²); PRIORS_MOTION=designed the first SHORT_S s of what a user plays for a fast
    payload goal, the bundled <robot>_payload_fast (`payload-id excite --objective convergence`, within the robot's
    limits). On the Panda no 1.5 s motion determines the CoM to 3 mm (docs/design.md "Prior knowledge of the
    payload"). The payload: a solid block whose 20 cm box (the prior) is not centred on its CoM; the known mass
    is the true one with σ 0.5 %.
ur10e_<pair>_<method>_<flag>_com_std_mm_<axis>      the real UR10e through the user's path (bench/ur10e.py's robot.yaml:
ur10e_<pair>_<method>_<flag>_com_vs_khalil_3_mm     the 14harm pair and the 2.805 kg, its model error measured on the
ur10e_<pair>_<method>_<flag>_com_vs_khalil_3_sigma  15harm and 01_31 unloaded runs), on all three loaded runs: the
                                                    CoM σ per axis (x, y, z), the largest |CoM − khalil-3's| (khalil-3
                                                    without the flag, the motion's own reference, same recording) in
                                                    mm and over the axis's combined σ (NaN: withheld as undetermined);
                                                    <pair> 14harm | 15harm | 0131; <method> khalil_1 | difference_rls;
                                                    <flag> known_mass (--known-mass 2.805) | none (without it).
ur10e_known_mass_com_std_mm_max                     the largest CoM σ of khalil-1 and difference-rls with the flag
ur10e_known_mass_com_vs_khalil_3_sigma_max          over the three runs (issue 30: ≤ 5 mm, agreeing with khalil-3),
ur10e_known_mass_com_vs_khalil_3_mm_max             the largest gap in σ and in mm. Skipped without the data.
priors_cell_<window>s_<prior>_...                   the simulated cell as `make demo` runs it (MuJoCo, profile ur10,
                                                    the bundled 4 s ur10_payload_fast, the demo's hidden 3.5 kg
                                                    payload in a 20 cm box off its CoM, the robot identified on the
                                                    same motion's unloaded run with its gear friction, one such run
                                                    per seed: seed 100 with test_priors_cell's), difference-rls
                                                    on the first <window> s of the motion (1.5 | 2 | 3 | 4: whole),
                                                    PRIORS_CELL_SEEDS loaded seeds (default 10); <prior> none | box |
                                                    box_mass; the figures above (inertia_std_frac: the largest inertia
                                                    σ over the largest principal moment, the issue's 25 %). Where the
                                                    box can make the inertia determined and where it cannot.
PRIORS_PARTS (default "ur10,panda,cell,real") chooses the parts run.
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
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.priors import PayloadPrior
from payload_id_core.payload_estimate import PayloadEstimate, readable_vector
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.synthetic import first_seconds, sum_of_sines

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/, beside the report script
from xtraj_cell import RATE, xtraj_cell  # noqa: E402 - tools/: bench/accuracy.py's cell and cache

SHORT_S = float(os.environ.get("PRIORS_SHORT_S", "1.5"))
MOTION = os.environ.get("PRIORS_MOTION", "config")
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
MOMENTS = [4, 7, 9]     # ixx, iyy, izz in readable_vector


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def run_figures(est: PayloadEstimate, truth: np.ndarray, largest_moment: float) -> dict:
    """One estimate's figures against the payload it was simulated with (readable_vector order)."""
    got, std, known = readable_vector(est.phi), est.propagated_std(), est.readable_identifiable()
    com_err = float(np.max(np.abs(got[1:4] - truth[1:4])))
    return {"com_err": com_err, "com_std": float(np.max(std[1:4])), "com_det": bool(known[1:4].all()),
            "inertia_det": bool(known[4:].all()),
            "com_within_3mm": bool(known[1:4].all()) and com_err <= 3e-3,
            "com_off_2sigma": bool(known[1:4].all()) and bool(np.any(np.abs(got[1:4] - truth[1:4]) > 2 * std[1:4])),
            "moment_z": (got[MOMENTS] - truth[MOMENTS]) / std[MOMENTS],
            "inertia_std_frac": float(np.max(std[4:]) / largest_moment),
            "covered": np.abs(got - truth) <= 2 * std,
            "inertia_pinned": sum(n.startswith("inertia") for n in est.prior_pinned) / 6,
            "inertia_bounded": sum(n.startswith("inertia") for n in est.prior_bounded) / 6}


def summarise(out: dict, key: str, r: list[dict]) -> None:
    """The figures every part prints, over its runs `r` (run_figures), as out[<key>_<figure>]."""
    covered = np.array([x["covered"] for x in r])
    out[f"{key}_com_err_mm"] = 1e3 * float(np.median([x["com_err"] for x in r]))
    out[f"{key}_com_std_mm"] = 1e3 * float(np.median([x["com_std"] for x in r]))
    out[f"{key}_com_within_3mm"] = float(np.mean([x["com_within_3mm"] for x in r]))
    out[f"{key}_com_reported_off_2sigma"] = float(np.mean([x["com_off_2sigma"] for x in r]))
    out[f"{key}_inertia_determined"] = float(np.mean([x["inertia_det"] for x in r]))
    out[f"{key}_inertia_std_frac"] = float(np.median([x["inertia_std_frac"] for x in r]))
    out[f"{key}_coverage_2sigma"] = float(np.mean(covered[:, :4]))
    out[f"{key}_coverage_2sigma_inertia"] = float(np.mean(covered[:, 4:]))
    out[f"{key}_moment_bias_sigma"] = float(np.median(np.concatenate([x["moment_z"] for x in r])))


def block_phi(mass: float, com: np.ndarray, sides: np.ndarray) -> np.ndarray:
    a, b, c = sides
    return from_mass_com_inertia(mass, com, np.diag(mass / 12 * np.array([b * b + c * c, a * a + c * c,
                                                                          a * a + b * b])))


def config_trajectory(robot_name: str) -> str:
    """The excitation config/<robot>.yaml's payload_estimator plays by default (its `trajectory` parameter)."""
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / f"{robot_name}.yaml").read_text())
    return str(config["/**/payload_estimator"]["ros__parameters"]["trajectory"])


def payload_motion(m: RobotModel, robot_name: str, seed: int):
    """(t, q, q̇, q̈) of the loaded run (MOTION): the whole of config/<robot>.yaml's trajectory, the first SHORT_S s of
    <robot>_payload_fast, or a sum of sines. The designed motions are the same on every seed (the noise is not)."""
    if MOTION == "sines":
        return sum_of_sines(m, SHORT_S, RATE, seed=100 + seed)
    if MOTION not in ("designed", "config"):
        raise SystemExit(f"PRIORS_MOTION={MOTION}: config, designed or sines")
    traj = load_trajectory(config_trajectory(robot_name) if MOTION == "config" else f"{robot_name}_payload_fast")
    traj = traj.for_model(list(m.joint_names))
    t = np.arange(int(round((traj.duration if MOTION == "config" else SHORT_S) * RATE))) / RATE
    return (t, *traj.evaluate(t))


def simulated(out: dict, robot_name: str) -> None:
    xc = xtraj_cell(robot_name)
    m = xc.model
    frame = m.default_payload_frame
    mass, com, sides, box = PAYLOADS[robot_name]
    phi = block_phi(mass, com, sides)
    truth = readable_vector(phi)
    largest_moment = float(np.max(truth[4:]))
    rec = xc.recording
    priors = {"none": None, "box": PayloadPrior.checked(box),
              "mass": PayloadPrior.checked(None, mass, KNOWN_MASS_REL_STD * mass),
              "box_mass": PayloadPrior.checked(box, mass, KNOWN_MASS_REL_STD * mass)}
    rows: dict[tuple[str, str], list[dict]] = {(me, p): [] for me in METHODS for p in priors}
    for seed in PRIORS_SEEDS:
        t0 = time.perf_counter()
        loaded = rec(payload_motion(m, robot_name, seed), (phi, frame), 1.03, seed)
        # One robot identification per seed (bench/accuracy.py's, from the shared cache): with one for every seed
        # (until h78) its error, one draw of θ̂_a, moved every seed's CoM alike, and the Panda's CoM x sat −1.2σ off
        # on average, read then as a model error in m·c (docs/design.md, "Prior knowledge of the payload").
        robot = xc.robot(seed)
        for method in METHODS:
            for name, prior in priors.items():
                est: PayloadEstimate = identify_payload(method, m, robot, loaded, frame, payload_prior=prior)
                rows[(method, name)].append(run_figures(est, truth, largest_moment))
        log(f"{robot_name} seed {seed}: {time.perf_counter() - t0:.1f} s")
    for (method, name), r in rows.items():
        key = f"priors_{robot_name}_{method.replace('-', '_')}_{name}"
        summarise(out, key, r)
        out[f"{key}_com_determined"] = float(np.mean([x["com_det"] for x in r]))
        out[f"{key}_inertia_pinned"] = float(np.mean([x["inertia_pinned"] for x in r]))
        out[f"{key}_inertia_bounded"] = float(np.mean([x["inertia_bounded"] for x in r]))
        log(f"{key}: CoM err {out[f'{key}_com_err_mm']:.2f} mm (σ {out[f'{key}_com_std_mm']:.2f}), "
            f"CoM determined {out[f'{key}_com_determined']:.1f}, "
            f"inertia determined {out[f'{key}_inertia_determined']:.1f} (σ/I {out[f'{key}_inertia_std_frac']:.2f}), "
            f"coverage {out[f'{key}_coverage_2sigma']:.2f} / inertia {out[f'{key}_coverage_2sigma_inertia']:.2f}, "
            f"inertia entries pinned {out[f'{key}_inertia_pinned']:.2f} / bounded {out[f'{key}_inertia_bounded']:.2f}, "
            f"CoM within 3 mm {out[f'{key}_com_within_3mm']:.1f} (reported > 2σ off "
            f"{out[f'{key}_com_reported_off_2sigma']:.1f}), moments {out[f'{key}_moment_bias_sigma']:+.2f}σ")


# The demo's hidden payload (payload_id_ros.demo.HIDDEN_PAYLOAD: the bench stays free of ROS imports), at tool0;
# as a block its sides are 14 × 10 × 18 cm about the CoM, inside this 20 cm box whose centre is 2-3 cm off the CoM.
CELL_PAYLOAD = (3.5, np.array([0.03, -0.02, 0.08]), np.diag([0.012, 0.015, 0.009]))
CELL_BOX = [-0.05, -0.09, -0.01, 0.15, 0.11, 0.19]
CELL_TRAJECTORY = "ur10_payload_fast"
CELL_WINDOWS_S = (1.5, 2.0, 3.0, 4.0)
CELL_SEEDS = tuple(range(100, 100 + int(os.environ.get("PRIORS_CELL_SEEDS", "10"))))
CELL_ROBOT_SEED0 = 11      # the unloaded run of the first loaded seed (test_priors_cell's pair); one more per seed


def cell(out: dict) -> None:
    m = RobotModel.from_urdf("ur10")
    frame = "tool0"
    mass, com, inertia = CELL_PAYLOAD
    phi = from_mass_com_inertia(mass, com, inertia)
    truth = readable_vector(phi)
    largest_moment = float(np.max(np.linalg.eigvalsh(inertia)))
    traj = load_trajectory(CELL_TRAJECTORY)
    priors = {"none": None, "box": PayloadPrior.checked(CELL_BOX),
              "box_mass": PayloadPrior.checked(CELL_BOX, mass, KNOWN_MASS_REL_STD * mass)}
    rows: dict[tuple[float, str], list[dict]] = {(w, p): [] for w in CELL_WINDOWS_S for p in priors}
    for seed in CELL_SEEDS:
        t0 = time.perf_counter()
        # The robot identified on its own unloaded run per seed, as the simulated parts above (h78): with one for
        # every seed (until h157) the seeds' coverage measured one draw of θ̂_a's error, common to all of them.
        robot = fit_given_model(m, simulate(m, traj, None, "ur10", seed=CELL_ROBOT_SEED0 + seed - CELL_SEEDS[0]),
                                friction="nonlinear", gear_friction=True)
        loaded = simulate(m, traj, PayloadEstimate(frame, phi, np.zeros((10, 10)), "truth"), "ur10", seed=seed)
        for window in CELL_WINDOWS_S:
            rec = first_seconds(loaded, window)
            for name, prior in priors.items():
                est = identify_payload("difference-rls", m, robot, rec, frame, payload_prior=prior)
                rows[(window, name)].append(run_figures(est, truth, largest_moment))
        log(f"cell seed {seed}: {time.perf_counter() - t0:.1f} s")
    for (window, name), r in rows.items():
        key = f"priors_cell_{window:g}s_{name}"
        summarise(out, key, r)
        log(f"{key}: CoM err {out[f'{key}_com_err_mm']:.2f} mm (within 3 mm {out[f'{key}_com_within_3mm']:.1f}), "
            f"inertia determined {out[f'{key}_inertia_determined']:.1f} (σ/I {out[f'{key}_inertia_std_frac']:.2f}), "
            f"coverage {out[f'{key}_coverage_2sigma']:.2f} / inertia {out[f'{key}_coverage_2sigma_inertia']:.2f}, "
            f"moments {out[f'{key}_moment_bias_sigma']:+.2f}σ")


def _com(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """payload.yaml's CoM and its σ, NaN where withheld."""
    as_array = lambda v: np.array([np.nan if x is None else x for x in v], dtype=float)  # noqa: E731
    return as_array(d["com"]), as_array(d["std"]["com"])


def real_ur10e(out: dict) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        log(f"real UR10e skipped: {rd.data_missing_reason(data)}")
        return
    urdf = str(data / "ur10e.urdf")
    held_out = ("15harm", "01_31")
    flags = {"none": [], "known_mass": ["--known-mass", str(rd.LOAD_MASS_KG)]}
    worst: dict[str, list[float]] = {"std": [], "sigma": [], "mm": []}
    with tempfile.TemporaryDirectory() as tmp:
        robot_yaml = Path(tmp) / "robot.yaml"
        # bench/ur10e.py's robot.yaml: the user's path, model error measured on held-out unloaded runs.
        cli_main(["identify-robot", "--urdf", urdf, "--csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][0]),
                  "--loaded-csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][1]),
                  "--known-payload-mass", str(rd.LOAD_MASS_KG),
                  *[a for k in held_out for a in ("--held-out-csv-ur", str(data / rd.PAIRS[k][0]))],
                  "--out", str(robot_yaml)])
        for pair, (unloaded, loaded) in rd.PAIRS.items():
            found: dict[tuple[str, str], dict] = {}
            for method in ("khalil-3", *METHODS):
                for flag, extra in (flags.items() if method != "khalil-3" else [("none", [])]):
                    path = Path(tmp) / f"{pair}_{method}_{flag}.yaml"
                    code = cli_main(["identify-payload", "--urdf", urdf, "--robot", str(robot_yaml), "--csv-ur",
                                     str(data / loaded), "--unloaded-csv-ur", str(data / unloaded), "--method", method,
                                     *extra, "--out", str(path)])
                    if code == 0:
                        found[(method, flag)] = yaml.safe_load(path.read_text())
            for method in METHODS:
                for flag in flags:
                    est, ref = found.get((method, flag)), found.get(("khalil-3", "none"))
                    if est is None or ref is None:
                        continue
                    (com, std), (ref_com, ref_std) = _com(est), _com(ref)
                    gap = np.abs(com - ref_com)
                    key = f"ur10e_{pair.replace('_', '')}_{method.replace('-', '_')}_{flag}"
                    for axis, s in zip("xyz", std):
                        out[f"{key}_com_std_mm_{axis}"] = 1e3 * float(s)
                    out[f"{key}_com_vs_khalil_3_mm"] = 1e3 * float(np.max(gap))
                    out[f"{key}_com_vs_khalil_3_sigma"] = float(np.max(gap / np.hypot(std, ref_std)))
                    if flag == "known_mass":
                        worst["std"].append(1e3 * float(np.max(std)))
                        worst["mm"].append(out[f"{key}_com_vs_khalil_3_mm"])
                        worst["sigma"].append(out[f"{key}_com_vs_khalil_3_sigma"])
                    log(f"{key}: mass {est['mass']:.4f} ± {est['std']['mass']:.4f} kg, CoM σ "
                        f"{np.round(1e3 * std, 2)} mm, vs khalil-3 {np.round(1e3 * gap, 1)} mm "
                        f"({out[f'{key}_com_vs_khalil_3_sigma']:.2f}σ), "
                        f"pinned {(est.get('prior') or {}).get('pinned')}")
    # np.max, not max(): a CoM withheld (NaN) on any run makes the figure NaN instead of vanishing.
    for name, values in worst.items():
        key = {"std": "com_std_mm_max", "sigma": "com_vs_khalil_3_sigma_max", "mm": "com_vs_khalil_3_mm_max"}[name]
        out[f"ur10e_known_mass_{key}"] = float(np.max(values)) if values else float("nan")


def main() -> None:
    limit_blas_threads(1)
    t0 = time.perf_counter()
    out: dict = {}
    parts = os.environ.get("PRIORS_PARTS", "ur10,panda,cell,real").split(",")
    for robot_name in PAYLOADS:
        if robot_name in parts:
            simulated(out, robot_name)
    if "cell" in parts:
        cell(out)
    if "real" in parts:
        real_ur10e(out)
    out["priors_bench_s"] = time.perf_counter() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
