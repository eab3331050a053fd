#!/usr/bin/env python3
"""robot.yaml's model error with a held-out LOADED run of known mass, left one out on the real UR10e (issues 29-31).
Prints one JSON object as its last line.

robot.yaml as bench/ur10e.py's user path makes it (tools/ur10e_data.user_path_robot_yaml: gains from the 14harm pair
with the known 2.805 kg, model error and offsets' drift on the 15harm and 01_31 unloaded runs) plus one loaded run of
another motion carrying the same 2.805 kg (--held-out-loaded-csv-ur): 15harm-load as the record, 01_31-load tested,
and the other way round. The tested run is never the record.

  ur10e_lr_<record>_<when>_<method>_err_pct / _std_pct / _err_over_std
                                                                 identify-payload on the tested loaded run (with its
                                                                 unloaded twin), every method
  ur10e_lr_<record>_err_over_std_rms / _max                      over the methods (target RMS 0.5-1.5, none > 2.5)
  ur10e_lr_<record>_std_pct_max                                  largest mass σ, % (target ≤ 1)
  ur10e_lr_<record>_online_<method>_declared_s / _declared_err_pct / _declared_err_over_std / _final_err_pct /
      _final_std_pct / _err_over_std_max / _err_over_std_rms     the online methods on the tested run as a goal feeds
                                                                 them (tools/ur10e_data.online_on_real_run; the
                                                                 figures bench/ur10e_online.py names, OnlineRun.figures)
  ur10e_lr_<record>_monitor_max_z_<a>_<b>s                       the monitor replaying the tested run from the start
                                                                 (told nothing is carried): largest |mass − 2.805|/σ
                                                                 published over [a, b) s of the run while a load above
                                                                 1 kg is carried with σ under 1 kg
  ur10e_lr_<record>_monitor_pick_z                               the named pick's |Δm − 2.805| / its σ (the first)

Each case's figures twice from the same identify-robot run: `..._before_...` with robot.yaml's model_error.loaded
taken out (what identify-robot wrote before it: the same command, the loaded run choosing each method's load friction
only), `..._after_...` as written. UR10E_LR_CASES: which records to run (default "15harm,01_31"); UR10E_LR_PARTS:
which figures (default "payload,online,monitor"); UR10E_LR_KEEP: a directory where each case's robot.yaml is kept and,
when there, reused (the figures of another part without identifying the robot again). The methods whose σ does not
read robot.yaml's model error (khalil-2, khalil-3, khalil-4, gaz-dtau) run once, their figures the same before and
after.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.monitor import EventKind
from payload_id_core.monitor.replay import replay
from payload_id_core.robot_id.result import RobotIdentification

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

METHODS = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")
ONLINE = ("difference-rls", "direct-rls")
UNREAD = ("khalil-2", "khalil-3", "khalil-4", "gaz-dtau")      # their σ does not read robot.yaml's model error
OTHER = {"15harm": "01_31", "01_31": "15harm"}
WINDOWS = ((0.0, 9.0), (9.0, 21.0), (21.0, 40.0))


def payload_figures(data: Path, robot_yaml: Path, tested: str, prefix: str, tmp: Path, known: dict) -> dict:
    """`known`: the figures of the methods that do not read the model error, filled on the first call."""
    fig: dict = {}
    unloaded_csv, loaded_csv = rd.PAIRS[tested]
    ratios, stds = [], []
    for m in METHODS:
        if m in known:
            err, std = known[m]
        else:
            err, std = _mass(data, robot_yaml, loaded_csv, unloaded_csv, m, tmp / f"{prefix}_{m}.yaml")
            if m in UNREAD:
                known[m] = (err, std)
        if err is None:
            fig[f"{prefix}_{m}_refused"] = True
            continue
        key = f"{prefix}_{m.replace('-', '_')}"
        fig.update({f"{key}_err_pct": 100 * err / rd.LOAD_MASS_KG, f"{key}_std_pct": 100 * std / rd.LOAD_MASS_KG,
                    f"{key}_err_over_std": abs(err) / std})
        ratios.append(abs(err) / std)
        stds.append(100 * std / rd.LOAD_MASS_KG)
    fig[f"{prefix}_err_over_std_rms"] = float(np.sqrt(np.mean(np.square(ratios))))
    fig[f"{prefix}_err_over_std_max"] = float(np.max(ratios))
    fig[f"{prefix}_std_pct_max"] = float(np.max(stds))
    return fig


def _mass(data: Path, robot_yaml: Path, loaded_csv: str, unloaded_csv: str, m: str, out: Path):
    """(mass − 2.805, its σ) kg from identify-payload (None, None: refused)."""
    code = cli_main(["identify-payload", "--urdf", str(data / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", str(data / loaded_csv), "--unloaded-csv-ur", str(data / unloaded_csv),
                     "--method", m, "--out", str(out)])
    if code != 0:
        return None, None
    d = yaml.safe_load(out.read_text())
    return d["mass"] - rd.LOAD_MASS_KG, d["std"]["mass"]


def online_figures(data: Path, robot_yaml: Path, tested: str, prefix: str) -> dict:
    fig: dict = {}
    for m in ONLINE:
        run = rd.online_on_real_run(robot_yaml, data / rd.PAIRS[tested][1], m, every_s=1.0)
        fig.update(run.figures(f"{prefix}_online_{m.replace('-', '_')}"))
    return fig


def monitor_figures(data: Path, robot_yaml: Path, tested: str, prefix: str) -> dict:
    model = RobotModel.from_urdf(str(data / "ur10e.urdf"))
    robot = RobotIdentification.load(str(robot_yaml), model)
    rec = read_ur_csv(str(data / rd.PAIRS[tested][1]), [float(k) for k in robot.effort_scale],
                      joint_names=model.joint_names)
    result = replay(model, robot, model.payload_frame(None), rec.joints, rated_payload_kg=12.5)
    fig: dict = {}
    t = result.t - rec.joints.t[0]
    carried = (result.mass > 1.0) & np.isfinite(result.mass_std) & (result.mass_std < 1.0)
    z = np.abs(result.mass - rd.LOAD_MASS_KG) / result.mass_std
    for a, b in WINDOWS:
        inside = carried & (t >= a) & (t < b)
        fig[f"{prefix}_monitor_max_z_{a:g}_{b:g}s"] = float(z[inside].max()) if inside.any() else None
    picks = [e for e in result.events if e.kind is EventKind.PICKED]
    fig[f"{prefix}_monitor_pick_z"] = (abs(picks[0].delta_mass - rd.LOAD_MASS_KG) / picks[0].delta_mass_std
                                       if picks else None)
    fig[f"{prefix}_monitor_pick"] = (f"{picks[0].delta_mass:+.3f} ± {picks[0].delta_mass_std:.3f} kg"
                                     if picks else None)
    fig[f"{prefix}_monitor_events"] = [e.kind.value for e in result.events]
    return fig


def main() -> int:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"bench ur10e_loaded_record: skipped: {rd.data_missing_reason(data)}", file=sys.stderr)
        return SKIPPED_EXIT
    parts = os.environ.get("UR10E_LR_PARTS", "payload,online,monitor").split(",")
    fig: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for record in os.environ.get("UR10E_LR_CASES", "15harm,01_31").split(","):
            tested = OTHER[record]
            keep = os.environ.get("UR10E_LR_KEEP")
            after = Path(keep or tmp) / f"robot_{record}.yaml"
            if not (keep and after.is_file()):
                rd.user_path_robot_yaml(data, after, rd.USER_PATH_HELD_OUT, (rd.PAIRS[record][1],))
            written = yaml.safe_load(after.read_text())
            fig[f"ur10e_lr_{record.replace('_', '')}_loaded_record"] = written["model_error"].get("loaded")
            written["model_error"].pop("loaded", None)
            before = Path(tmp) / f"robot_{record}_before.yaml"
            before.write_text(yaml.safe_dump(written, sort_keys=False))
            known: dict = {}
            for name in ("payload", "online", "monitor"):
                for when, robot_yaml in (("before", before), ("after", after)):
                    if name not in parts:
                        continue
                    prefix = f"ur10e_lr_{record.replace('_', '')}_{when}"
                    part = (payload_figures(data, robot_yaml, tested, prefix, Path(tmp), known)
                            if name == "payload" else online_figures(data, robot_yaml, tested, prefix)
                            if name == "online" else monitor_figures(data, robot_yaml, tested, prefix))
                    fig.update(part)
                    print(json.dumps(part), file=sys.stderr, flush=True)
    print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
