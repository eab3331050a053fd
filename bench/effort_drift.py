"""The effort-drift check (payload/effort_drift.py) without drift and with one: how far each witness of the run's
effort scale (plain a: a free payload beside the arm; a_f: each joint's friction free as well) sits from 1, its σ,
and what the check decides. Prints one JSON object as its last line (issue 29 item 5).

  drift_xtraj_<robot>_a_loaded_max_dev_pct       largest |a − 1| (plain) on the cross-motion cell's loaded runs
                                                 (tools/xtraj_cell.py: exact gains, friction 3 % higher under load), %
  drift_xtraj_<robot>_a_unloaded_max_dev_pct     the same on unloaded runs of the same motion (no load friction), %
  drift_xtraj_<robot>_af_loaded_max_dev_pct / _af_unloaded_max_dev_pct   the same for a_f, %
  drift_xtraj_<robot>_a_std_pct_median / _af_std_pct_median   median σ the check uses (residual scatter and
                                                 robot.yaml's parameter covariance carried through the fit), %
  drift_xtraj_<robot>_false_alarms               runs without drift (loaded and unloaded) the check calls drifted
  drift_xtraj_<robot>_caught_x<s>                loaded runs with efforts × s the check calls drifted (of the seeds)
  drift_ur10e_a_<kind>_<pair> / _af_<kind>_<pair>  both witnesses on the real UR10e runs, robot.yaml from
                                                 identify-robot on the 14harm pair with the known 2.805 kg (its
                                                 unloaded run is in-sample, the others held out)
  drift_ur10e_std_pct_max                        largest σ of either witness on those runs, %
  drift_ur10e_false_alarms                       real runs without drift the check calls drifted
  drift_ur10e_caught_x<s>                        real loaded runs with their currents × s called drifted (of 3)

What the payload methods (PAYLOAD_METHODS, default khalil-1 and difference-rls) make of it, per case (none: the
loaded run as recorded; fr1.03: its friction 3 % higher still, Coulomb, viscous and offset, simulated on the cells,
robot.yaml's friction model's torque × 0.03 added on the real runs; fr1.03_x0.97: that and the efforts × 0.97;
x<s>: efforts × s):
  drift_<where>_<case>_flagged                   estimates not written converged and ok (of seeds × methods; of 3 ×
                                                 methods on the real runs): a false alarm for `none` and `fr1.03`
                                                 where the mass is right, a catch otherwise
  drift_<where>_<case>_confident_wrong           estimates converged, ok and more than 3σ off in mass (target 0)
  drift_<where>_<case>_max_abs_z_unflagged       largest |mass error| / σ among those written converged and ok
<where> is xtraj_ur10, xtraj_panda or ur10e. The Panda also runs × 0.96, 0.98, 1.03, 1.04 (the 2-4 % its witnesses
cannot tell from its identification's error: each must be flagged or within 3σ).

ACCURACY_XTRAJ_SEEDS sets the seeds per robot (default 5); the real figures are left out without the recordings.
"""

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import ur10e_data as rd  # noqa: E402 - tools/
from payload_id_core.dynamics.inertia import from_mass_com_inertia  # noqa: E402
from payload_id_core.excitation.fourier import load_trajectory  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.payload.effort_drift import RunScale, robot_scale_on_run  # noqa: E402
from payload_id_core.payload.methods import identify_payload  # noqa: E402
from payload_id_core.payload_estimate import PayloadEstimate, Quality  # noqa: E402
from payload_id_core.robot_id import RobotIdentification  # noqa: E402
from xtraj_cell import RATE, xtraj_cell  # noqa: E402 - tools/

SEEDS = tuple(range(int(os.environ.get("ACCURACY_XTRAJ_SEEDS", "5"))))
DRIFTS = (0.97, 1.02, 1.05)
METHODS = tuple(os.environ.get("PAYLOAD_METHODS", "khalil-1,difference-rls").split(","))
FRICTION_CHANGE = 1.03
CASES = {"none": (1.0, 1.0), "fr1.03": (FRICTION_CHANGE, 1.0), "fr1.03_x0.97": (FRICTION_CHANGE, 0.97),
         **{f"x{s}": (1.0, s) for s in DRIFTS}}     # (friction factor, effort factor)
PANDA_CASES = {f"x{s}": (1.0, s) for s in (0.96, 0.98, 1.03, 1.04)}
XTRAJ = {"ur10": (4.0, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's payloads
         "panda": (1.5, [0.01, -0.02, 0.05], np.diag([0.004, 0.005, 0.003]))}


def _on_frame(frame: str) -> PayloadEstimate:
    """robot_scale_on_run reads only the estimate's frame (the payload is fitted free)."""
    return PayloadEstimate(frame, np.zeros(10), np.zeros((10, 10)), "frame only")


def _scaled(rec, s: float):
    """The run's efforts × s (drive gains s × as strong as robot.yaml says)."""
    return replace(rec, joints=replace(rec.joints, tau=rec.joints.tau * s))


def _line(label: str, r: RunScale) -> str:
    return (f"{label}: a {r.plain.a:.4f} ± {r.plain.std:.4f}, a_f {r.friction_free.a:.4f} ± "
            f"{r.friction_free.std:.4f}{'  DRIFTED' if r.drifted else ''}"
            f"{'  MASKED DRIFT' if getattr(r, 'masked_drift', False) else ''}")   # main's RunScale has no masked_drift


def _max_dev_pct(values: list[float]) -> float:
    return 100 * float(np.max(np.abs(np.array(values) - 1)))


class Outcomes:
    """Per case, what the payload methods wrote: flagged (not converged and ok), confidently wrong (converged, ok,
    |mass error| > 3σ), and the largest |error| / σ of those written ok."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[bool, float]]] = {}

    def add(self, case: str, label: str, est: PayloadEstimate, mass: float) -> None:
        ok = est.quality is Quality.OK and est.converged
        z = float((est.mass - mass) / np.sqrt(est.covariance[0, 0]))
        self.rows.setdefault(case, []).append((ok, z))
        print(f"  {label} {case} {est.method}: {100 * (est.mass / mass - 1):+.2f} % ({z:+.1f}σ) "
              f"{'ok' if ok else 'FLAGGED'}" + ("" if ok else f": {est.quality_reasons[-1][:140]}"), file=sys.stderr)

    def figures(self, out: dict[str, float], where: str) -> None:
        for case, rows in self.rows.items():
            out[f"drift_{where}_{case}_flagged"] = float(sum(not ok for ok, _ in rows))
            out[f"drift_{where}_{case}_confident_wrong"] = float(sum(ok and abs(z) > 3 for ok, z in rows))
            out[f"drift_{where}_{case}_max_abs_z_unflagged"] = max((abs(z) for ok, z in rows if ok), default=0.0)


def cross_motion(out: dict[str, float], name: str) -> None:
    xc = xtraj_cell(name)
    m, frame = xc.model, xc.model.default_payload_frame
    traj = load_trajectory(f"{name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    runs: dict[str, list[RunScale]] = {"loaded": [], "unloaded": []}
    caught = dict.fromkeys(DRIFTS, 0)
    outcomes = Outcomes()
    phi = from_mass_com_inertia(*XTRAJ[name])
    cases = {**CASES, **(PANDA_CASES if name == "panda" else {})}
    for seed in SEEDS:
        robot = xc.robot(seed)
        loaded = xc.recording(motion, (phi, frame), 1.03, seed)
        runs["loaded"].append(robot_scale_on_run(robot, m, loaded, _on_frame(frame)))
        runs["unloaded"].append(robot_scale_on_run(robot, m, xc.recording(motion, None, 1.0, 500 + seed),
                                                   _on_frame(frame)))
        print(_line(f"{name} seed {seed} loaded", runs["loaded"][-1]), file=sys.stderr)
        print(_line(f"{name} seed {seed} unloaded", runs["unloaded"][-1]), file=sys.stderr)
        for s in DRIFTS:
            r = robot_scale_on_run(robot, m, _scaled(loaded, s), _on_frame(frame))
            caught[s] += r.drifted
            print(_line(f"{name} seed {seed} loaded x{s}", r), file=sys.stderr)
        for case, (friction, s) in cases.items():
            rec = loaded if friction == 1.0 else xc.recording(motion, (phi, frame), 1.03 * friction, seed)
            rec = rec if s == 1.0 else _scaled(rec, s)
            for method in METHODS:
                outcomes.add(case, f"{name} seed {seed}", identify_payload(method, m, robot, rec, frame), phi[0])
    for kind, rs in runs.items():
        out[f"drift_xtraj_{name}_a_{kind}_max_dev_pct"] = _max_dev_pct([r.plain.a for r in rs])
        out[f"drift_xtraj_{name}_af_{kind}_max_dev_pct"] = _max_dev_pct([r.friction_free.a for r in rs])
    every = runs["loaded"] + runs["unloaded"]
    out[f"drift_xtraj_{name}_a_std_pct_median"] = 100 * float(np.median([r.plain.std for r in every]))
    out[f"drift_xtraj_{name}_af_std_pct_median"] = 100 * float(np.median([r.friction_free.std for r in every]))
    out[f"drift_xtraj_{name}_false_alarms"] = float(sum(r.drifted for r in every))
    for s, count in caught.items():
        out[f"drift_xtraj_{name}_caught_x{s}"] = float(count)
    outcomes.figures(out, f"xtraj_{name}")


def _real_case(robot: RobotIdentification, path: Path, friction: float, s: float):
    """The real run read with robot.yaml's gains × s, robot.yaml's friction torque × (friction − 1) added first
    (friction that changed since identification, as robot.yaml models it)."""
    rec = read_ur_csv(path, [float(g) * s for g in robot.effort_scale])
    if friction == 1.0:
        return rec
    if rec.joints.qd is None:
        raise ValueError(f"{path} holds no joint velocities: the friction change needs them")
    extra = (friction - 1.0) * s * robot.friction_torque(rec.joints.qd)
    return replace(rec, joints=replace(rec.joints, tau=rec.joints.tau + extra))


def real(out: dict[str, float]) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"real UR10e figures left out: {rd.data_missing_reason(data)}", file=sys.stderr)
        return
    model, robot = rd.user_path_robot(data)
    frame = _on_frame(model.default_payload_frame)
    stds, alarms, caught = [], 0, dict.fromkeys(DRIFTS, 0)
    outcomes = Outcomes()
    for pair, files in rd.PAIRS.items():
        for kind, file in zip(("unloaded", "loaded"), files):
            r = robot_scale_on_run(robot, model, read_ur_csv(data / file, list(robot.effort_scale)), frame)
            print(_line(f"{pair} {kind}", r), file=sys.stderr)
            out[f"drift_ur10e_a_{kind}_{pair}"] = r.plain.a
            out[f"drift_ur10e_af_{kind}_{pair}"] = r.friction_free.a
            stds += [r.plain.std, r.friction_free.std]
            alarms += r.drifted
            if kind == "loaded":
                for s in DRIFTS:
                    rs = robot_scale_on_run(robot, model, read_ur_csv(data / file, [float(g) * s for g in
                                                                                   robot.effort_scale]), frame)
                    caught[s] += rs.drifted
                    print(_line(f"{pair} {kind} x{s}", rs), file=sys.stderr)
                for case, (friction, s) in CASES.items():
                    rec = _real_case(robot, data / file, friction, s)
                    for method in METHODS:
                        outcomes.add(case, pair, identify_payload(method, model, robot, rec), rd.LOAD_MASS_KG)
    out["drift_ur10e_std_pct_max"] = 100 * float(np.max(stds))
    out["drift_ur10e_false_alarms"] = float(alarms)
    for s, count in caught.items():
        out[f"drift_ur10e_caught_x{s}"] = float(count)
    outcomes.figures(out, "ur10e")


def main() -> None:
    out: dict[str, float] = {}
    for name in XTRAJ:
        cross_motion(out, name)
    real(out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
