"""The payload monitor's publication on the real UR10e's loaded runs replayed from nothing carried (issue 31): how far
what ~/payload says is from the 2.805 kg load, in its own σ. Prints one JSON object as its last line.

robot.yaml as bench/ur10e.py's user path makes it (tools/ur10e_data.user_path_robot_yaml: model error measured on the
15harm and 01_31 unloaded runs held out), each loaded run replayed as `payload-id monitor` replays it
(monitor/replay.py, rated payload 12.5 kg), the monitor told nothing is carried: the load is on from the start and
the monitor finds it.
At each block's end the last publication stands (Replay.published: what ~/payload was given); per segment of the run
(seconds from its start) and for the whole run:

  monitor_real_<run>_<seg>_published_err_over_std_max   largest |mass − 2.805| / σ of a publication standing there
                                                        while the mass published is above 0.5 kg (carrying)
  monitor_real_<run>_<seg>_confident_err_over_std_max   the same over publications ok and converged only (the target:
                                                        none beyond 3)
  monitor_real_<run>_<seg>_state_err_over_std_max       the same on the monitor's state at every block (Replay.mass,
                                                        mass_std: h162's figure, what the residual is computed with)
  monitor_real_<run>_carry_published_std_median         median σ of the publications standing while carrying
  monitor_real_<run>_end_mass / _end_std / _end_floor   the carried payload at the end as the replay publishes it
                                                        (Replay.payload, σ floored) and the alarm's floor there
  monitor_real_<run>_events                             "kind Δm ± σ @ t" of every event
  monitor_real_confident_beyond_3sigma                  publications ok and converged beyond 3σ over all runs

MONITOR_REAL_ROBOT: a robot.yaml to use instead of making one.
"""

import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

# The dataset helpers live beside the report script, outside the installed packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from payload_id_core.dynamics.model import RobotModel  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.monitor.replay import Replay, replay  # noqa: E402
from payload_id_core.payload_estimate import Quality  # noqa: E402
from payload_id_core.robot_id.result import RobotIdentification  # noqa: E402
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

RUNS = {"01_31": "ur-20_01_31-load.csv", "14harm": "ur-20_02_19_14harm50secLoad.csv",
        "15harm": "ur-20_02_19_15harm50secLoad.csv"}
SEGMENTS = {"0_9": (0.0, 9.0), "9_21": (9.0, 21.0), "21_40": (21.0, 40.0), "whole": (0.0, math.inf)}
RATED_PAYLOAD_KG = 12.5
CARRYING_KG = 0.5


def standing(result: Replay) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mass, σ, confident) of the publication standing at each block's end (NaN before the first)."""
    n = result.t.size
    mass, std, confident = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=bool)
    stamps = np.array([t for t, _ in result.published])
    for k, t in enumerate(result.t):
        i = int(np.searchsorted(stamps, t, side="right")) - 1
        if i < 0:
            continue
        est = result.published[i][1]
        mass[k], std[k] = est.mass, math.sqrt(max(float(est.covariance[0, 0]), 0.0))
        confident[k] = est.quality is Quality.OK and bool(est.converged)
    return mass, std, confident


def run_figures(result: Replay, t0: float, prefix: str) -> tuple[dict, int]:
    truth = rd.LOAD_MASS_KG
    s = result.t - t0
    mass, std, confident = standing(result)
    carrying = np.nan_to_num(mass) > CARRYING_KG
    ratio = np.abs(mass - truth) / np.maximum(std, 1e-12)
    state_ratio = np.abs(result.mass - truth) / np.maximum(result.mass_std, 1e-12)
    fig: dict = {}

    def worst(values: np.ndarray, sel: np.ndarray):
        return round(float(np.max(values[sel])), 2) if np.any(sel) else None

    for seg, (a, b) in SEGMENTS.items():
        inside = (s >= a) & (s < b)
        fig[f"{prefix}_{seg}_published_err_over_std_max"] = worst(ratio, inside & carrying)
        fig[f"{prefix}_{seg}_confident_err_over_std_max"] = worst(ratio, inside & carrying & confident)
        fig[f"{prefix}_{seg}_state_err_over_std_max"] = worst(state_ratio, inside & (result.mass > CARRYING_KG))
    fig[f"{prefix}_carry_published_std_median"] = round(float(np.median(std[carrying])), 4) if np.any(carrying) \
        else None
    end = result.payload
    fig[f"{prefix}_end_mass"] = None if end is None else round(end.mass, 4)
    fig[f"{prefix}_end_std"] = None if end is None else round(math.sqrt(float(end.covariance[0, 0])), 4)
    fig[f"{prefix}_end_floor"] = round(result.floor_kg, 4)
    fig[f"{prefix}_events"] = [f"{e.kind.value} {e.delta_mass:+.3f} ± {e.delta_mass_std:.3f} @ {e.t_change - t0:.2f}"
                               for e in result.events]
    beyond = int(np.count_nonzero(carrying & confident & (ratio > 3.0)))
    return fig, beyond


def main() -> int:
    data = rd.default_data_dir()
    missing = rd.data_missing_reason(data)
    if missing is not None:
        print(json.dumps({"skipped": missing}))
        return SKIPPED_EXIT
    with tempfile.TemporaryDirectory() as tmp:
        robot_yaml = os.environ.get("MONITOR_REAL_ROBOT") or str(
            rd.user_path_robot_yaml(data, Path(tmp) / "robot.yaml"))
        model = RobotModel.from_urdf(data / "ur10e.urdf")
        robot = RobotIdentification.load(robot_yaml, model)
    frame = model.payload_frame(None)
    figures: dict = {}
    beyond = 0
    for name, csv in RUNS.items():
        rec = read_ur_csv(data / csv, [float(k) for k in robot.effort_scale], joint_names=model.joint_names)
        result = replay(model, robot, frame, rec.joints, rated_payload_kg=RATED_PAYLOAD_KG)
        fig, n = run_figures(result, float(rec.joints.t[0]), f"monitor_real_{name}")
        figures.update(fig)
        beyond += n
    figures["monitor_real_confident_beyond_3sigma"] = beyond
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
