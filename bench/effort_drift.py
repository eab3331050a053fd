"""How far the effort-drift check's scale a (payload/effort_drift.py) sits from 1 without any drift, against its σ:
the robot model's own error in a, which σ of a (residual scatter only) leaves out. Prints one JSON object as its
last line (issue 29 item 5).

  drift_xtraj_<robot>_a_loaded_max_dev_pct    largest |a − 1| on the cross-motion cell's loaded runs (tools/
                                              xtraj_cell.py: exact gains, friction 3 % higher under load), %
  drift_xtraj_<robot>_a_unloaded_max_dev_pct  the same on unloaded runs of the same motion (no load friction), %
  drift_xtraj_<robot>_a_std_pct_median        median σ of a the check uses, %
  drift_xtraj_<robot>_false_alarms            loaded runs without drift the check calls drifted
  drift_ur10e_a_loaded_<pair> / _unloaded_<pair>  a on the real UR10e runs, robot.yaml from identify-robot on the
                                              14harm pair with the known 2.805 kg (its unloaded run is in-sample)
  drift_ur10e_a_std_pct_max                   largest σ of a on those runs, %

ACCURACY_XTRAJ_SEEDS sets the seeds per robot (default 3); the real figures are left out without the recordings.
"""

import json
import os
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
from payload_id_core.excitation.fourier import load_trajectory  # noqa: E402
from payload_id_core.io.ur_csv import read_ur_csv  # noqa: E402
from payload_id_core.payload.effort_drift import drift_reason, robot_scale_on_run  # noqa: E402
from payload_id_core.payload_estimate import PayloadEstimate  # noqa: E402
from payload_id_core.robot_id import RobotIdentification  # noqa: E402
from xtraj_cell import RATE, xtraj_cell  # noqa: E402 - tools/

SEEDS = tuple(range(int(os.environ.get("ACCURACY_XTRAJ_SEEDS", "3"))))
XTRAJ = {"ur10": (4.0, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's payloads
         "panda": (1.5, [0.01, -0.02, 0.05], np.diag([0.004, 0.005, 0.003]))}


def _on_frame(frame: str) -> PayloadEstimate:
    """robot_scale_on_run reads only the estimate's frame (the payload is fitted free)."""
    return PayloadEstimate(frame, np.zeros(10), np.zeros((10, 10)), "frame only")


def cross_motion(out: dict[str, float], name: str) -> None:
    xc = xtraj_cell(name)
    m, frame = xc.model, xc.model.default_payload_frame
    traj = load_trajectory(f"{name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    loaded, unloaded, stds, alarms = [], [], [], 0
    for seed in SEEDS:
        robot = xc.robot(seed)
        a, std = robot_scale_on_run(robot, m, xc.recording(motion, (from_mass_com_inertia(*XTRAJ[name]), frame),
                                                           1.03, seed), _on_frame(frame))
        loaded.append(a)
        stds.append(std)
        alarms += bool(drift_reason(a, std, "run"))
        unloaded.append(robot_scale_on_run(robot, m, xc.recording(motion, None, 1.0, 500 + seed), _on_frame(frame))[0])
        print(f"{name} seed {seed}: a loaded {a:.4f} ± {std:.4f}, unloaded {unloaded[-1]:.4f}", file=sys.stderr)
    out[f"drift_xtraj_{name}_a_loaded_max_dev_pct"] = 100 * float(np.max(np.abs(np.array(loaded) - 1)))
    out[f"drift_xtraj_{name}_a_unloaded_max_dev_pct"] = 100 * float(np.max(np.abs(np.array(unloaded) - 1)))
    out[f"drift_xtraj_{name}_a_std_pct_median"] = 100 * float(np.median(stds))
    out[f"drift_xtraj_{name}_false_alarms"] = float(alarms)


def real(out: dict[str, float]) -> None:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"real UR10e figures left out: {rd.data_missing_reason(data)}", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "robot.yaml"
        unloaded, loaded = (str(data / f) for f in rd.PAIRS[rd.GAIN_PAIR])
        assert cli_main(["identify-robot", "--urdf", str(data / "ur10e.urdf"), "--csv-ur", unloaded,
                         "--loaded-csv-ur", loaded, "--known-payload-mass", str(rd.LOAD_MASS_KG),
                         "--out", str(path)]) == 0
        model = RobotModel.from_urdf(str(data / "ur10e.urdf"))
        robot = RobotIdentification.load(path, model)
    stds = []
    for pair, files in rd.PAIRS.items():
        for kind, file in zip(("unloaded", "loaded"), files):
            a, std = robot_scale_on_run(robot, model, read_ur_csv(data / file, list(robot.effort_scale)),
                                        _on_frame(model.default_payload_frame))
            out[f"drift_ur10e_a_{kind}_{pair}"] = a
            stds.append(std)
    out["drift_ur10e_a_std_pct_max"] = 100 * float(np.max(stds))


def main() -> None:
    out: dict[str, float] = {}
    for name in XTRAJ:
        cross_motion(out, name)
    real(out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
