"""The per-joint drive-gain witness (payload/gain_drift.py): its largest statistic on honest runs, and what it catches.

gain_xtraj_<robot>_runs, gain_xtraj_<robot>_false_alarms
    bench/accuracy.py's cross-motion cell (tools/xtraj_cell.py), seeds GAIN_SEEDS (default 10) per robot, two honest
    loaded runs per seed (as recorded, and with friction 3 % higher again: bench/effort_drift.py's honest rows),
    khalil-1 and difference-rls: how many estimates the witness flags (target 0).
gain_xtraj_<robot>_chi2_max, gain_xtraj_<robot>_chi2_median, gain_xtraj_<robot>_limit
    the largest joint's χ² per honest run (the statistic the limit is for), and the family-wise limit.
gain_xtraj_<robot>_<case>_caught, gain_xtraj_<robot>_<case>_confident_wrong
    j2x1.02 / j2x0.98: the second joint's efforts × 1.02 / 0.98; all0.98: every joint's. khalil-1 estimates flagged
    by this witness, and estimates written converged and ok beyond 3σ in mass by every witness together.
gain_cell_false_alarms, gain_cell_chi2_max
    bench/accuracy.py's MuJoCo cell (profile ur10), GAIN_CELL_SEEDS (default 5) loaded runs, khalil-1.
gain_ur10e_<pair>_chi2_max, gain_ur10e_false_alarms
    the real UR10e, robot.yaml as the user path makes it (tools/ur10e_data.user_path_robot), every loaded run judged
    with every method that fits joint efforts through robot.yaml (the quality as main gives it beside).
gain_redteam_<case>_runs, gain_redteam_<case>_not_ok, gain_redteam_<case>_confident_wrong (part `redteam`, h125)
    the red teams' drifts, difference-rls: two_joints (test_redteam_issue29_h86: the UR10 identified on one 8 s
    motion, gains given, shoulder lift and elbow × 1.03, REDTEAM_SEEDS default 3-6) and its honest runs (8s_honest),
    common_0.99 (test_redteam_h120: the MuJoCo cell, every joint × 0.99, REDTEAM_CELL_SEEDS default 111-114) and its
    honest runs (cell_honest). not_ok: not converged and ok (on an honest run: a false alarm); confident_wrong:
    converged and ok beyond 3σ in mass.

The last stdout line is one JSON object; per-run lines go to stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/
from payload_id_core.dynamics.inertia import from_mass_com_inertia  # noqa: E402
from payload_id_core.dynamics.model import RobotModel  # noqa: E402
from payload_id_core.excitation.fourier import load_trajectory  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.notes import Note, NoteCode  # noqa: E402
from payload_id_core.payload.methods import identify_payload, on_same_trajectory  # noqa: E402
from payload_id_core.payload_estimate import PayloadEstimate, Quality  # noqa: E402
from payload_id_core.robot_id import fit_given_model  # noqa: E402
from payload_id_core.sim import simulate  # noqa: E402
from payload_id_core.testing.sim_runs import DRIFT_MASS, drift_run, given_gains_robot  # noqa: E402
from xtraj_cell import PROFILE_CELL_MASS, RATE, cached, profile_cell, xtraj_cell  # noqa: E402 - tools/

SEEDS = tuple(range(int(os.environ.get("GAIN_SEEDS", "10"))))
CELL_SEEDS = tuple(range(2, 2 + int(os.environ.get("GAIN_CELL_SEEDS", "5"))))
XTRAJ = {"ur10": (4.0, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's payloads
         "panda": (1.5, [0.01, -0.02, 0.05], np.diag([0.004, 0.005, 0.003]))}
HONEST_ROWS = (("recorded", 1.03), ("friction x1.03", 1.03 * 1.03))
HONEST_METHODS = ("khalil-1", "difference-rls")
REAL_METHODS = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "direct-rls", "difference-rls", "gaz-dtau")
GAIN_WORDS = "against robot.yaml's model: factor"


def flagged_by_gains(est: PayloadEstimate) -> bool:
    return any(GAIN_WORDS in r for r in est.quality_reasons)


def gain_chi2(est: PayloadEstimate) -> tuple[float, float, str]:
    """(largest joint's χ², limit, the note) from the witness's note on `est` (nan when it did not judge it)."""
    note = next((n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_GAIN_DRIFT), "")
    found = re.search(r"χ² ([0-9.]+), limit ([0-9.]+)", note)
    return (float(found.group(1)), float(found.group(2)), note) if found else (float("nan"), float("nan"), note)


def _scaled(rec, factors: np.ndarray | float):
    return replace(rec, joints=replace(rec.joints, tau=rec.joints.tau * factors))


def cross_motion(out: dict[str, float], name: str) -> None:
    xc = xtraj_cell(name)
    m, frame = xc.model, xc.model.default_payload_frame
    traj = load_trajectory(f"{name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    mass, com, inertia = XTRAJ[name]
    phi = from_mass_com_inertia(mass, np.asarray(com), inertia)
    drifts = {"j2x1.02": np.r_[1.0, 1.02, np.ones(m.n - 2)], "j2x0.98": np.r_[1.0, 0.98, np.ones(m.n - 2)],
              "all0.98": np.full(m.n, 0.98)}
    chis, alarms, runs, limit = [], 0, 0, float("nan")
    caught = dict.fromkeys(drifts, 0)
    wrong = dict.fromkeys(drifts, 0)
    for seed in SEEDS:
        robot = xc.robot(seed)
        for label, scale in HONEST_ROWS:
            rec = xc.recording(motion, (phi, frame), scale, seed)
            for method in HONEST_METHODS:
                est = identify_payload(method, m, robot, rec, frame)
                chi, limit, note = gain_chi2(est)
                chis.append(chi)
                runs += 1
                alarms += flagged_by_gains(est)
                print(f"{name} seed {seed} {label} {method}: {100 * (est.mass / mass - 1):+.3f} % {est.quality.name}"
                      f"{' FLAGGED' if flagged_by_gains(est) else ''}; {note}", file=sys.stderr)
        for case, factors in drifts.items():
            rec = _scaled(xc.recording(motion, (phi, frame), 1.03, seed), factors)
            est = identify_payload("khalil-1", m, robot, rec, frame)
            z = (est.mass - mass) / np.sqrt(est.covariance[0, 0])
            ok = est.converged and est.quality is Quality.OK
            caught[case] += flagged_by_gains(est)
            wrong[case] += bool(ok and abs(z) > 3)
            print(f"{name} seed {seed} {case}: {100 * (est.mass / mass - 1):+.3f} % ({z:+.1f}σ) "
                  f"{'ok' if ok else 'not ok'}{' GAIN' if flagged_by_gains(est) else ''}; {gain_chi2(est)[2]}",
                  file=sys.stderr)
    out[f"gain_xtraj_{name}_runs"] = float(runs)
    out[f"gain_xtraj_{name}_false_alarms"] = float(alarms)
    out[f"gain_xtraj_{name}_chi2_max"] = float(np.nanmax(chis))
    out[f"gain_xtraj_{name}_chi2_median"] = float(np.nanmedian(chis))
    out[f"gain_xtraj_{name}_limit"] = limit
    for case in drifts:
        out[f"gain_xtraj_{name}_{case}_caught"] = float(caught[case])
        out[f"gain_xtraj_{name}_{case}_confident_wrong"] = float(wrong[case])


def cell(out: dict[str, float]) -> None:
    c = profile_cell()
    chis, alarms = [], 0
    for seed in CELL_SEEDS:
        rec = c.run(seed)
        est = identify_payload("khalil-1", c.model, c.robot, rec, c.frame, source="commanded")
        chi, _, note = gain_chi2(est)
        chis.append(chi)
        alarms += flagged_by_gains(est)
        print(f"cell seed {seed}: {100 * (est.mass / PROFILE_CELL_MASS - 1):+.3f} % {est.quality.name}"
              f"{' FLAGGED' if flagged_by_gains(est) else ''}; {note}", file=sys.stderr)
    out["gain_cell_false_alarms"] = float(alarms)
    out["gain_cell_chi2_max"] = float(np.nanmax(chis))


def real(out: dict[str, float]) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"real UR10e figures left out: {rd.data_missing_reason(data)}", file=sys.stderr)
        return
    model, robot = rd.user_path_robot(data)
    alarms = 0
    for pair, (unloaded_file, loaded_file) in rd.PAIRS.items():
        rec = read_ur_csv(data / loaded_file, list(robot.effort_scale))
        un = read_ur_csv(data / unloaded_file, list(robot.effort_scale))
        chis = []
        for method in REAL_METHODS:
            loaded, unloaded, options = on_same_trajectory(method, rec, un)
            est = identify_payload(method, model, robot, loaded, unloaded=unloaded, **options)
            chi, _, note = gain_chi2(est)
            chis.append(chi)
            flagged = flagged_by_gains(est)
            alarms += flagged
            print(f"ur10e {pair} {method}: {100 * (est.mass / rd.LOAD_MASS_KG - 1):+.2f} % "
                  f"± {100 * np.sqrt(est.covariance[0, 0]) / rd.LOAD_MASS_KG:.2f} {est.quality.name}"
                  f"{' FLAGGED' if flagged else ''}; {note}; {est.quality_reasons}", file=sys.stderr)
        out[f"gain_ur10e_{pair}_chi2_max"] = float(np.nanmax(chis))
    out["gain_ur10e_false_alarms"] = float(alarms)


def _redteam_count(out: dict[str, float], case: str, est: PayloadEstimate, mass: float) -> None:
    z = (est.mass - mass) / np.sqrt(est.covariance[0, 0])
    ok = est.converged and est.quality is Quality.OK
    for key, value in (("runs", 1), ("not_ok", not ok), ("confident_wrong", ok and abs(z) > 3)):
        out[f"gain_redteam_{case}_{key}"] = out.get(f"gain_redteam_{case}_{key}", 0.0) + float(value)
    print(f"redteam {case}: {100 * (est.mass / mass - 1):+.2f} % ({z:+.1f}σ) {'ok' if ok else 'not ok'}; "
          f"{[r[:160] for r in est.quality_reasons]}", file=sys.stderr)


def redteam(out: dict[str, float]) -> None:

    model, robot = given_gains_robot("ur10")
    two = np.ones(model.n)
    two[[1, 2]] = 1.03
    for seed in (int(s) for s in os.environ.get("REDTEAM_SEEDS", "3,4,5,6").split(",")):
        for case, factor in (("two_joints", two), ("8s_honest", None)):
            est = identify_payload("difference-rls", model, robot, drift_run(model, seed, factor),
                                   model.default_payload_frame, delay=0.0)
            _redteam_count(out, case, est, DRIFT_MASS)
    m = RobotModel.from_urdf("ur10")
    truth = PayloadEstimate("tool0", from_mass_com_inertia(3.5, np.array([0.03, -0.02, 0.08]),
                                                           np.diag([0.012, 0.015, 0.009])), np.zeros((10, 10)), "truth")
    cell_robot = cached("h120 ur10 ur10_payload_inertia seed 11 nonlinear", lambda: fit_given_model(
        m, simulate(m, load_trajectory("ur10_payload_inertia"), None, "ur10", seed=11), friction="nonlinear"))
    for seed in (int(s) for s in os.environ.get("REDTEAM_CELL_SEEDS", "111,112,113,114").split(",")):
        rec = simulate(m, load_trajectory("ur10_payload_fast"), truth, "ur10", seed=seed)
        for case, scale in (("common_0.99", 0.99), ("cell_honest", 1.0)):
            _redteam_count(out, case, identify_payload("difference-rls", m, cell_robot, _scaled(rec, scale), "tool0"),
                           3.5)


def main() -> None:
    out: dict[str, float] = {}
    parts = sys.argv[1:] or ["real", "cell", "xtraj"]
    if "redteam" in parts:
        redteam(out)
    if "real" in parts:
        real(out)
    if "cell" in parts:
        cell(out)
    if "xtraj" in parts:
        for name in os.environ.get("GAIN_ROBOTS", "ur10,panda").split(","):
            cross_motion(out, name)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
