"""Real UR10e: the drive gains' σ from held-out loaded runs (issue 29 item 5, h101), leave-one-out over the three
loaded/unloaded pairs. For every pair P: identify-robot on P with the known 2.805 kg, without and with the other two
pairs' loaded runs as --gain-check-csv-ur; each robot.yaml's gain σ judged against the gains the other pairs identify
on their own (the same command without check runs). Prints one JSON object as its last line:

  gain_err_over_std_max_<joint>_<before|after>   largest |k_Q − k_P| / σ_P over P and Q ≠ P (target ≤ 3)
  gain_err_over_std_rms_<joint>_<before|after>   RMS of the same over the six comparisons
  gain_std_pct_mean_<joint>_<before|after>       σ_P / k_P, mean over P, %
  gain_err_over_std_rms_determined_<before|after> RMS over the joints the check runs determine (all but the pan)
  check_mass_10pct_high_refused  pairs (of 3) where the same checks with --gain-check-mass 10 % high exit 2 (h114:
                                 the runs' own mass contradicts it; before, accepted and read as drift, h108)
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

from payload_id_core.cli.main import main as cli_main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

data = rd.default_data_dir()
if rd.data_missing_reason(data):
    print(f"bench ur10e_gain_check: skipped: {rd.data_missing_reason(data)}", file=sys.stderr)
    sys.exit(SKIPPED_EXIT)
names = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
gains: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
refused: dict[str, bool] = {}
with tempfile.TemporaryDirectory() as tmp:
    for p, (unloaded, loaded) in rd.PAIRS.items():
        checks = [a for q, (_, other) in rd.PAIRS.items() if q != p for a in ("--gain-check-csv-ur", str(data / other))]
        for which, extra in (("before", []), ("after", checks)):
            out = Path(tmp) / f"{p}_{which}.yaml"
            assert cli_main(["identify-robot", "--urdf", str(data / "ur10e.urdf"), "--csv-ur", str(data / unloaded),
                             "--loaded-csv-ur", str(data / loaded), "--known-payload-mass", str(rd.LOAD_MASS_KG),
                             *extra, "--out", str(out)]) == 0
            d = yaml.safe_load(out.read_text())
            gains[p, which] = np.array(d["effort_scale"]), np.array(d["effort"]["scale_std"])
        high = Path(tmp) / f"{p}_high.yaml"
        refused[p] = cli_main(["identify-robot", "--urdf", str(data / "ur10e.urdf"), "--csv-ur", str(data / unloaded),
                               "--loaded-csv-ur", str(data / loaded), "--known-payload-mass", str(rd.LOAD_MASS_KG),
                               *checks, "--gain-check-mass", str(1.1 * rd.LOAD_MASS_KG), "--out", str(high)]) == 2
        assert refused[p] != high.exists()
fig = {}
for which in ("before", "after"):
    ratios = np.array([np.abs(gains[q, "before"][0] - gains[p, which][0]) / gains[p, which][1]
                       for p in rd.PAIRS for q in rd.PAIRS if q != p])
    std_pct = np.mean([100 * gains[p, which][1] / gains[p, which][0] for p in rd.PAIRS], axis=0)
    for j, name in enumerate(names):
        fig[f"gain_err_over_std_max_{name}_{which}"] = float(np.max(ratios[:, j]))
        fig[f"gain_err_over_std_rms_{name}_{which}"] = float(np.sqrt(np.mean(ratios[:, j] ** 2)))
        fig[f"gain_std_pct_mean_{name}_{which}"] = float(std_pct[j])
    fig[f"gain_err_over_std_rms_determined_{which}"] = float(np.sqrt(np.mean(ratios[:, 1:] ** 2)))
fig["check_mass_10pct_high_refused"] = sum(refused.values())
print(json.dumps(fig))
