"""The payload-change witness (payload/payload_change.py): what it names, and its statistic on runs with one payload.

change_<case>_named, change_<case>_t_err_s
    h133's two cases (test_redteam_h133): 4.0 then 4.5 kg from half the 8 s UR10 run (direct-rls, offline) and from
    0.5 s into a goal that stops when converged (difference-rls, IdentificationRun): whether the first reason names
    the change, and the located time's error (s).
change_sim_<case>_chi2_max, change_sim_<case>_ratio_max, change_sim_<case>_named
    sim_runs' 8 s UR10 runs, seeds CHANGE_SEEDS (default 2-6), khalil-1 and difference-rls: honest, h86's two joints
    × 1.03, every joint × 0.97: the step's χ² at the split furthest beyond its limit, the largest χ² over its limit
    (`ratio`: 1 is the alarm), and how many estimates name a change.
change_step_<t>s_named, change_step_<t>s_ratio_min, change_step_<t>s_t_err_s
    0.3 kg steps on the 4 kg part at t = 2, 4, 5.7, 6 s of the 8 s run (test_payload_change's), seeds CHANGE_SEEDS,
    difference-rls: how many estimates name the change first, the smallest χ² over limit, the largest |time error|.
change_cell_chi2_max, change_cell_ratio_max, change_cell_named
    bench/gain_drift.py's MuJoCo cell (profile ur10, seeds 2-4), khalil-1.
change_ur10e_<robot>_<pair>_chi2_max, change_ur10e_<robot>_<pair>_ratio_max, change_ur10e_named, change_ur10e_not_ok
    the real UR10e, robot.yaml as the command line makes it (`cli`) and with --gear-friction identify (`gear`), every
    loaded run and the seven methods: the step's largest χ², how many estimates name a change, how many are not ok.

The last stdout line is one JSON object; per-run lines go to stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/
from payload_id_core.cli.main import main as cli_main  # noqa: E402
from payload_id_core.dynamics.inertia import from_mass_com_inertia  # noqa: E402
from payload_id_core.dynamics.model import RobotModel  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.notes import Note, NoteCode  # noqa: E402
from payload_id_core.payload.methods import identify_payload, on_same_trajectory  # noqa: E402
from payload_id_core.payload_estimate import PayloadEstimate, Quality  # noqa: E402
from payload_id_core.robot_id import RobotIdentification  # noqa: E402
from payload_id_core.testing.sim_runs import (  # noqa: E402
    drift_run,
    given_gains_robot,
    goal_stopped_when_converged,
    linear_friction_run,
)
from xtraj_cell import profile_cell  # noqa: E402 - tools/

CHANGE_WORDS = "the payload changed during"
SEEDS = tuple(int(s) for s in os.environ.get("CHANGE_SEEDS", "2,3,4,5,6").split(","))


def named(est: PayloadEstimate) -> bool:
    return bool(est.quality_reasons) and est.quality_reasons[0].startswith(CHANGE_WORDS)


def _note(est: PayloadEstimate) -> str:
    code = getattr(NoteCode, "PAYLOAD_CHANGE", None)        # None on a commit before the witness ("before" runs)
    return next((n.text for n in map(Note.from_any, est.notes) if code is not None and n.code is code), "")


def chi2_of(est: PayloadEstimate) -> float:
    found = re.search(r"largest χ² ([0-9.]+)", _note(est))
    return float(found.group(1)) if found else float("nan")


def ratio_of(est: PayloadEstimate) -> float:
    """The note's χ² over its limit (at the split furthest beyond its own limit; h146: the largest χ², one limit)."""
    found = re.search(r"\(limit ([0-9.inf]+)", _note(est))
    return chi2_of(est) / float(found.group(1)) if found else float("nan")


def h133(out: dict[str, float]) -> None:
    model, robot = given_gains_robot("ur10")
    frame = model.default_payload_frame
    heavier = linear_friction_run(model, 2, payload=from_mass_com_inertia(4.5, [0.02, -0.03, 0.08],
                                                                          np.diag([0.02, 0.03, 0.015])), frame=frame)
    for case, t_change in (("half", 4.0), ("goal_0.5s", 0.5)):
        rec = drift_run(model, 2)
        later = rec.joints.t - rec.joints.t[0] > t_change
        rec.joints.tau[later] = heavier.joints.tau[later]
        if case == "half":
            est = identify_payload("direct-rls", model, robot, rec, frame)
            first_t = rec.joints.t[0]
        else:
            goal = goal_stopped_when_converged(model, robot, frame, rec)
            est = goal.finished.estimate
            first_t = goal.run.arrays()[0][0]
        first = est.quality_reasons[0] if est.quality_reasons else ""
        out[f"change_{case}_named"] = float(named(est))
        if named(est):
            located = float(first.split("near t = ")[1].split(" s")[0])
            out[f"change_{case}_t_err_s"] = located - (t_change - (first_t - rec.joints.t[0]))
        print(f"h133 {case}: {est.mass:.3f} kg {est.quality.name}; {first[:200]}", file=sys.stderr)


def sim(out: dict[str, float]) -> None:
    model, robot = given_gains_robot("ur10")
    two = np.ones(model.n)
    two[[1, 2]] = 1.03
    for case, factor in (("honest", None), ("two_joints", two), ("all0.97", np.full(model.n, 0.97))):
        chis, ratios, count = [], [], 0
        for seed in SEEDS:
            for method in ("khalil-1", "difference-rls"):
                est = identify_payload(method, model, robot, drift_run(model, seed, factor),
                                       model.default_payload_frame, delay=0.0)
                chis.append(chi2_of(est))
                ratios.append(ratio_of(est))
                count += named(est)
                print(f"sim {case} seed {seed} {method}: χ² {chis[-1]:.1f} {est.quality.name} "
                      f"{[r[:100] for r in est.quality_reasons]}", file=sys.stderr)
        out[f"change_sim_{case}_chi2_max"] = float(np.nanmax(chis))
        out[f"change_sim_{case}_ratio_max"] = float(np.nanmax(ratios))
        out[f"change_sim_{case}_named"] = float(count)


def steps(out: dict[str, float]) -> None:
    model, robot = given_gains_robot("ur10")
    frame = model.default_payload_frame
    for t_change in (2.0, 4.0, 5.7, 6.0):
        count, ratios, errs = 0, [], []
        for seed in SEEDS:
            rec = drift_run(model, seed)
            heavier = linear_friction_run(model, seed, payload=from_mass_com_inertia(
                4.3, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015])), frame=frame)
            later = rec.joints.t - rec.joints.t[0] > t_change
            rec.joints.tau[later] = heavier.joints.tau[later]
            est = identify_payload("difference-rls", model, robot, rec, frame, delay=0.0)
            count += named(est)
            ratios.append(ratio_of(est))
            if named(est):
                errs.append(abs(float(est.quality_reasons[0].split("near t = ")[1].split(" s")[0]) - t_change))
            print(f"step {t_change} s seed {seed}: {est.mass:.3f} kg {est.quality.name} χ²/limit {ratios[-1]:.2f} "
                  f"{[r[:100] for r in est.quality_reasons]}", file=sys.stderr)
        out[f"change_step_{t_change:g}s_named"] = float(count)
        out[f"change_step_{t_change:g}s_ratio_min"] = float(np.nanmin(ratios))
        if errs:
            out[f"change_step_{t_change:g}s_t_err_s"] = float(max(errs))


def cell(out: dict[str, float]) -> None:
    c = profile_cell()
    chis, ratios, count = [], [], 0
    for seed in (2, 3, 4):
        est = identify_payload("khalil-1", c.model, c.robot, c.run(seed), c.frame, source="commanded")
        chis.append(chi2_of(est))
        ratios.append(ratio_of(est))
        count += named(est)
        print(f"cell seed {seed}: χ² {chis[-1]:.1f} {est.quality.name}", file=sys.stderr)
    out["change_cell_chi2_max"] = float(np.nanmax(chis))
    out["change_cell_ratio_max"] = float(np.nanmax(ratios))
    out["change_cell_named"] = float(count)


def real(out: dict[str, float]) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"real UR10e figures left out: {rd.data_missing_reason(data)}", file=sys.stderr)
        return
    urdf = str(data / "ur10e.urdf")
    model = RobotModel.from_urdf(urdf)
    count = not_ok = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant, extra in (("cli", []), ("gear", ["--gear-friction", "identify"])):
            path = Path(tmp) / f"robot_{variant}.yaml"
            unloaded, loaded = (str(data / f) for f in rd.PAIRS[rd.GAIN_PAIR])
            if cli_main(["identify-robot", "--urdf", urdf, "--csv-ur", unloaded, "--loaded-csv-ur", loaded,
                         "--known-payload-mass", str(rd.LOAD_MASS_KG), "--out", str(path), *extra]) != 0:
                raise RuntimeError("identify-robot failed")
            robot = RobotIdentification.load(path, model)
            for pair, (unloaded_file, loaded_file) in rd.PAIRS.items():
                rec = read_ur_csv(data / loaded_file, list(robot.effort_scale))
                un = read_ur_csv(data / unloaded_file, list(robot.effort_scale))
                chis, ratios = [], []
                for method in rd.PAYLOAD_METHODS:
                    lo, unl, options = on_same_trajectory(method, rec, un)
                    est = identify_payload(method, model, robot, lo, unloaded=unl, **options)
                    chis.append(chi2_of(est))
                    ratios.append(ratio_of(est))
                    count += named(est)
                    not_ok += est.quality is not Quality.OK
                    print(f"ur10e {variant} {pair} {method}: {100 * (est.mass / rd.LOAD_MASS_KG - 1):+.2f} % "
                          f"{est.quality.name} χ² {chis[-1]:.1f}{' NAMED' if named(est) else ''} "
                          f"{[r[:120] for r in est.quality_reasons]}", file=sys.stderr, flush=True)
                out[f"change_ur10e_{variant}_{pair}_chi2_max"] = float(np.nanmax(chis))
                out[f"change_ur10e_{variant}_{pair}_ratio_max"] = float(np.nanmax(ratios))
    out["change_ur10e_named"] = float(count)
    out["change_ur10e_not_ok"] = float(not_ok)


def main() -> None:
    out: dict[str, float] = {}
    parts = sys.argv[1:] or ["h133", "sim", "steps", "cell", "real"]
    for name, part in (("h133", h133), ("sim", sim), ("steps", steps), ("cell", cell), ("real", real)):
        if name in parts:
            part(out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
