"""The friction-offset witness (payload/offset_drift.py): false alarms on honest runs, and what it catches.

offset_xtraj_<robot>_false_alarms, offset_xtraj_<robot>_runs
    bench/accuracy.py's cross-motion cell (tools/xtraj_cell.py: robot identified on <robot>_payload_inertia, payload
    on <robot>_payload, friction 3 % higher under load, 3 ms lag, 1 N·m noise), seeds OFFSET_SEEDS (default 10) per
    robot, two honest loaded runs per seed (as recorded, and with friction 3 % higher again: bench/effort_drift.py's
    honest rows): how many khalil-1 estimates the witness flags (target 0).
offset_xtraj_<robot>_chi2_median, offset_xtraj_<robot>_chi2_max
    the witness's χ² on those honest runs (4 dof: 99.9 % quantile 18.5).
offset_xtraj_<robot>_moved<B>_caught, offset_xtraj_<robot>_moved<B>_confident_wrong
    every joint's offset moved by B N·m in the sign of the payload's mean torque on it (test_reidentified_offsets):
    how many khalil-1 estimates are flagged, and how many are written converged and ok beyond 3σ in mass.
offset_xtraj_<robot>_mass_shift_std_pct_median
    the witness's power: σ of the mass shift it compares, % of the mass (3× it is about the smallest shift it sees).
offset_cell_false_alarms, offset_cell_chi2_max
    bench/accuracy.py's MuJoCo cell (profile ur10), OFFSET_CELL_SEEDS (default 5) loaded runs.
offset_ur10e_<pair>_chi2, offset_ur10e_<pair>_flagged_<method>, offset_ur10e_false_alarms
    the real UR10e, robot.yaml from the 14harm pair through the command line (as bench/effort_drift.py), each loaded
    run judged by every method that keeps robot.yaml's offsets, with khalil-3's mass beside it.

The last stdout line is one JSON object; per-run lines go to stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/
from payload_id_core.dynamics.inertia import from_mass_com_inertia  # noqa: E402
from payload_id_core.excitation.fourier import load_trajectory  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.notes import Note, NoteCode  # noqa: E402
from payload_id_core.payload.methods import identify_payload, on_same_trajectory  # noqa: E402
from payload_id_core.payload.methods.common import method_signals  # noqa: E402
from payload_id_core.payload.offset_drift import OffsetWitness, offset_drift_witness  # noqa: E402
from payload_id_core.payload.options import PayloadOptions  # noqa: E402
from payload_id_core.payload_estimate import PayloadEstimate, Quality  # noqa: E402
from xtraj_cell import PROFILE_CELL_MASS, RATE, profile_cell, xtraj_cell  # noqa: E402 - tools/

FIRST_SEED = int(os.environ.get("OFFSET_FIRST_SEED", "0"))
SEEDS = tuple(range(FIRST_SEED, FIRST_SEED + int(os.environ.get("OFFSET_SEEDS", "10"))))
CELL_SEEDS = tuple(range(2, 2 + int(os.environ.get("OFFSET_CELL_SEEDS", "5"))))
MOVES = tuple(float(v) for v in os.environ.get("OFFSET_MOVES", "0.1,0.3").split(",") if v)   # N·m per joint
XTRAJ = {"ur10": (4.0, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's payloads
         "panda": (1.5, [0.01, -0.02, 0.05], np.diag([0.004, 0.005, 0.003]))}
HONEST_ROWS = (("recorded", 1.03), ("friction x1.03", 1.03 * 1.03))[:int(os.environ.get("OFFSET_HONEST_ROWS", "2"))]
REAL_METHODS = ("khalil-1", "khalil-2", "direct-rls", "gaz-dtau")


def flagged_by_offsets(est: PayloadEstimate) -> bool:
    return any("constant friction offsets differ" in r for r in est.quality_reasons)


def offset_note(est: PayloadEstimate) -> str:
    """The witness's note on `est` ('' when it did not judge it)."""
    return next((n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_OFFSET_DRIFT), "")


def witness_of(model, robot, rec, est: PayloadEstimate) -> OffsetWitness:
    sig = method_signals(rec, model, PayloadOptions.from_kwargs(), robot)
    w = offset_drift_witness(model, robot, sig, est.frame, np.asarray(est.phi), True)
    assert w is not None
    return w


def moved_offsets_run(xc, motion, phi, frame, seed: int, move: float):
    """The loaded run with every joint's constant offset B_j moved by `move` in the sign of the payload's mean
    torque on that joint (the twin without payload, same noise seed, gives that torque)."""
    loaded = xc.recording(motion, (phi, frame), 1.03, seed)
    payload_torque = loaded.joints.tau - xc.recording(motion, None, 1.03, seed).joints.tau
    fp = xc.friction_params * 1.03
    fp[2::3] += move * np.sign(payload_torque.mean(axis=0))
    shifted = replace(xc, friction_params=fp)
    return shifted.recording(motion, (phi, frame), 1.0, seed)


def cross_motion(out: dict[str, float], name: str) -> None:
    xc = xtraj_cell(name)
    m, frame = xc.model, xc.model.default_payload_frame
    traj = load_trajectory(f"{name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    mass, com, inertia = XTRAJ[name]
    phi = from_mass_com_inertia(mass, np.asarray(com), inertia)
    honest_chi2, alarms, runs, powers = [], 0, 0, []
    caught = dict.fromkeys(MOVES, 0)
    wrong = dict.fromkeys(MOVES, 0)
    for seed in SEEDS:
        robot = xc.robot(seed)
        for label, scale in HONEST_ROWS:
            rec = xc.recording(motion, (phi, frame), scale, seed)
            t0 = time.perf_counter()
            est = identify_payload("khalil-1", m, robot, rec, frame)
            note = offset_note(est)
            found = re.search(r"χ² ([0-9.]+) on .* about ([0-9.e+-]+) %", note)
            assert found, note
            chi, power = (float(v) for v in found.groups())
            honest_chi2.append(chi)
            powers.append(power / 3)
            runs += 1
            alarms += flagged_by_offsets(est)
            print(f"{name} seed {seed} {label}: est {100 * (est.mass / mass - 1):+.3f} % {est.quality.name}"
                  f"{' FLAGGED' if flagged_by_offsets(est) else ''} ({time.perf_counter() - t0:.1f} s); {note}",
                  file=sys.stderr)
        for move in MOVES:
            rec = moved_offsets_run(xc, motion, phi, frame, seed, move)
            est = identify_payload("khalil-1", m, robot, rec, frame)
            w = witness_of(m, robot, rec, est)
            z = (est.mass - mass) / np.sqrt(est.covariance[0, 0])
            ok = est.converged and est.quality is Quality.OK
            caught[move] += flagged_by_offsets(est)
            wrong[move] += bool(ok and abs(z) > 3)
            print(f"{name} seed {seed} offsets moved {move}: χ² {w.chi2:.1f}, est {100 * (est.mass / mass - 1):+.3f} % "
                  f"({z:+.1f}σ) {'ok' if ok else 'flagged'}", file=sys.stderr)
    out[f"offset_xtraj_{name}_runs"] = float(runs)
    out[f"offset_xtraj_{name}_false_alarms"] = float(alarms)
    out[f"offset_xtraj_{name}_chi2_median"] = float(np.median(honest_chi2))
    out[f"offset_xtraj_{name}_chi2_max"] = float(np.max(honest_chi2))
    out[f"offset_xtraj_{name}_mass_shift_std_pct_median"] = float(np.median(powers))
    for move in MOVES:
        out[f"offset_xtraj_{name}_moved{move}_caught"] = float(caught[move])
        out[f"offset_xtraj_{name}_moved{move}_confident_wrong"] = float(wrong[move])


def cell(out: dict[str, float]) -> None:
    c = profile_cell()
    chis, alarms = [], 0
    for seed in CELL_SEEDS:
        rec = c.run(seed)
        est = identify_payload("khalil-1", c.model, c.robot, rec, c.frame, source="commanded")
        w = witness_of(c.model, c.robot, rec, est)
        chis.append(w.chi2)
        alarms += flagged_by_offsets(est)
        print(f"cell seed {seed}: χ² {w.chi2:.1f} on {w.dof}, est {100 * (est.mass / PROFILE_CELL_MASS - 1):+.3f} % "
              f"{est.quality.name}{' FLAGGED' if flagged_by_offsets(est) else ''}", file=sys.stderr)
    out["offset_cell_false_alarms"] = float(alarms)
    out["offset_cell_chi2_max"] = float(np.max(chis))


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
        k3_loaded, k3_unloaded, k3_options = on_same_trajectory("khalil-3", rec, un)
        k3 = identify_payload("khalil-3", model, robot, k3_loaded, unloaded=k3_unloaded, **k3_options)
        print(f"ur10e {pair} khalil-3: {100 * (k3.mass / rd.LOAD_MASS_KG - 1):+.2f} % com {np.round(1000 * k3.com, 1)}",
              file=sys.stderr)
        for method in REAL_METHODS:
            est = identify_payload(method, model, robot, rec)
            note = offset_note(est)
            flagged = flagged_by_offsets(est)
            alarms += flagged
            out[f"offset_ur10e_{pair}_flagged_{method.replace('-', '_')}"] = float(flagged)
            chi = re.search(r"χ² ([0-9.]+) on", note)
            out[f"offset_ur10e_{pair}_chi2"] = float(chi.group(1)) if chi else float("nan")
            print(f"ur10e {pair} {method}: {100 * (est.mass / rd.LOAD_MASS_KG - 1):+.2f} % "
                  f"com {np.round(1000 * est.com, 1)} "
                  f"± {100 * np.sqrt(est.covariance[0, 0]) / rd.LOAD_MASS_KG:.2f} {est.quality.name}"
                  f"{' FLAGGED' if flagged else ''}; {note}; {est.quality_reasons}", file=sys.stderr)
    out["offset_ur10e_false_alarms"] = float(alarms)


def main() -> None:
    out: dict[str, float] = {}
    parts = sys.argv[1:] or ["xtraj", "cell", "real"]
    if "real" in parts:
        real(out)
    if "xtraj" in parts:
        for name in os.environ.get("OFFSET_ROBOTS", "ur10,panda").split(","):
            cross_motion(out, name)
    if "cell" in parts:
        cell(out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
