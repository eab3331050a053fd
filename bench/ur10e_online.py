"""The online methods' convergence along the real UR10e loaded runs (issue 29): when difference-rls and direct-rls
declare, and whether the σ they report covers their error along the way. Prints one JSON object as its last line.

robot.yaml as bench/ur10e.py's user path makes it (tools/ur10e_data.user_path_robot_yaml: gains from the 14harm pair
with the known 2.805 kg, model error and offsets' drift measured on the 15harm and 01_31 unloaded runs), then each
method on each of the three loaded runs fed 25 samples at a time as a goal that stops when converged feeds it, its
reported mass σ (the estimator's with the gains' and covariance_extra's parts, what identify-payload writes)
computed every ~UR10E_ONLINE_EVERY_S (default 1.0) seconds of motion (tools/ur10e_data.online_on_real_run).

  ur10e_online_<method>_<pair>_declared_s            seconds of motion when it declared (null: never)
  ur10e_online_<method>_<pair>_declared_err_pct      the mass error then, % of 2.805 kg
  ur10e_online_<method>_<pair>_declared_err_over_std |error| / reported σ then
  ur10e_online_<method>_<pair>_err_over_std_max      largest |error(t)| / σ(t) from 8 s of motion on (before, the
                                                     estimate rests on a handful of reversals)
  ur10e_online_<method>_<pair>_err_over_std_rms      RMS of the same
  ur10e_online_<method>_<pair>_final_err_pct / _final_std_pct   at the end of the run
  ur10e_online_declared                              how many of the six cases declared
  ur10e_online_declared_beyond_2sigma                how many of those declared more than 2σ off (target 0)
  ur10e_online_declared_err_pct_max_abs              largest |error| at a declaration, %

UR10E_ONLINE_HELD_OUT: comma-separated unloaded recordings robot.yaml measures its model error on (default the two
above; e.g. ur-20_01_31-unload.csv alone is the cross-validation where 15harm's own unloaded twin is not among them).
UR10E_ONLINE_ROBOT: a robot.yaml to use instead of making one.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

# The dataset helpers live beside the report script, outside the installed packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

METHODS = ("difference-rls", "direct-rls")


def main() -> int:
    data = rd.default_data_dir()
    if rd.data_missing_reason(data):
        print(f"bench ur10e_online: skipped: {rd.data_missing_reason(data)}", file=sys.stderr)
        return SKIPPED_EXIT
    every = float(os.environ.get("UR10E_ONLINE_EVERY_S", "1.0"))
    held_out = tuple(os.environ.get("UR10E_ONLINE_HELD_OUT", ",".join(rd.USER_PATH_HELD_OUT)).split(","))
    fig: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        robot_yaml = os.environ.get("UR10E_ONLINE_ROBOT") or rd.user_path_robot_yaml(data, Path(tmp) / "robot.yaml",
                                                                                       held_out)
        for pair, (_, loaded_csv) in rd.PAIRS.items():
            for method in METHODS:
                prefix = f"ur10e_online_{method.replace('-', '_')}_{pair.replace('_', '')}"
                run = rd.online_on_real_run(robot_yaml, data / loaded_csv, method, every_s=every)
                fig.update(run.figures(prefix))
                print(prefix, {k.removeprefix(prefix + "_"): v if v is None else round(v, 3)
                               for k, v in fig.items() if k.startswith(prefix)}, file=sys.stderr, flush=True)
    declared = [(fig[k], fig[k.replace("_declared_err_over_std", "_declared_err_pct")]) for k in fig
                if k.endswith("_declared_err_over_std") and fig[k] is not None]
    fig["ur10e_online_declared"] = len(declared)
    fig["ur10e_online_declared_beyond_2sigma"] = sum(r > 2.0 for r, _ in declared)
    fig["ur10e_online_declared_err_pct_max_abs"] = max((abs(e) for _, e in declared), default=None)
    print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
