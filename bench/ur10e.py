"""Real UR10e figures (issue 9): drive gains from the 14-harmonic pair + the known 2.805 kg, then the
load's mass on the two independent pairs. Prints one JSON object as its last line.

  ur10e_mass_err_pct_15harm / _0131      median over the offline methods (khalil-1..4, gaz-dtau) of the
                                          signed mass error, %
  ur10e_mass_err_pct_max_abs_judged      largest |error| over all methods (incl. RLS) on those pairs, %
  ur10e_val_rmse_nm_max                  largest per-joint torque RMSE of the robot model (nonlinear
                                          friction, 14harm) on the other two unloaded excitations, N·m
  ur10e_<method>_mass_err_pct_<pair>     (issue 12) signed mass error of each dynamic method on 15harm and
                                          0131, robot and drive gains (with their std) from the 14harm pair
  ur10e_<method>_err_over_std_<pair>     |error| / σ of the same estimate, σ including the gains' and the
                                          robot's uncertainty
  ur10e_err_over_std_max                 largest of those over TARGET_METHODS (issue 12: ≤ 2)
  ur10e_cli_<method>_mass_err_pct_<pair> (issue 12 targets) the same through the command line, no gains by
  ur10e_cli_<method>_err_over_std_<pair>  hand: identify-robot --loaded-csv-ur 14harm --known-payload-mass,
  ur10e_cli_err_over_std_max              then identify-payload --robot robot.yaml on each pair
  ur10e_cli_mass_err_pct_max_abs          largest |error| of TARGET_METHODS through the command line (≤ 1)
                                          (issue 29: robot.yaml also measures its model error on the two
                                          judged pairs' unloaded runs, --held-out-csv-ur: other recordings
                                          than the loaded ones judged, the same trajectories)
  ur10e_cli_err_over_std_rms              (issue 29) RMS of |error| / σ over TARGET_METHODS and both pairs
                                          (target 0.5-1.5, none above 2.5)
  ur10e_cli_mass_std_pct_max_<method>     (issue 29) largest mass σ of the method over both pairs, % (≤ 1)
  ur10e_cli_<method>_com_std_mm_max_<pair> (issue 29) khalil-1 and difference-rls on all three loaded runs:
                                          largest CoM σ, mm (≤ 5; NaN: withheld as undetermined)
  ur10e_cli_<method>_com_gap_sigma_<pair> largest |CoM − khalil-3's| over the combined σ of the axis (≤ 2,
                                          or within 3 mm: ..._com_gap_mm_<pair>)
  ur10e_cli_gain_jointJ / _std_pct_jointJ (issue 29 item 5) the drive gains robot.yaml carries and their σ, %
  ur10e_cli_offset_spread_nm_jointJ       (issue 29, h88) the friction offsets' spread between runs robot.yaml records
  ur10e_cli_offset_prior_std_nm_jointJ    from the drift runs (--drift-csv-ur: the 15harm and 01_31 unloaded runs),
                                          and the prior std difference-rls takes from it (UR10E_DRIFT=0: none)
  ur10e_gear_friction_mu_joint2 / 3      gear friction μ (robot_id/gear_friction.py, opt-in) identify-robot
                                          --gear-friction identify finds on the 14harm pair
  ur10e_gear_friction_rmse_ratio_joint2 / 3  torque RMSE with it over without (14harm unloaded, linear friction)
  ur10e_val_rmse_nm_max_gear_friction    ur10e_val_rmse_nm_max with the gear friction identified
  ur10e_cli_gear_friction_mass_err_pct_max_abs  largest |mass error| of TARGET_METHODS through the command line
                                          with that robot.yaml (why it is opt-in)
  ur10e_pipeline_s                       wall time of the whole thing
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import fit_given_model, validate_robot

# The dataset helpers live beside the report script, outside the installed packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

OFFLINE = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "gaz-dtau")
# The dynamic methods issue 12 sets its targets for (khalil-2's figures are printed, not judged).
TARGET_METHODS = ("khalil-1", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")

t0 = time.perf_counter()
data = rd.default_data_dir()
if rd.data_missing_reason(data):
    print(f"bench ur10e: skipped: {rd.data_missing_reason(data)}", file=sys.stderr)
    sys.exit(SKIPPED_EXIT)
model = RobotModel.from_urdf(str(data / "ur10e.urdf"))
raw = rd.load_pairs(data, effort_scale=None)
gains, gains_std = rd.identify_gains(model, raw[rd.GAIN_PAIR], decimate=2)
pairs = {k: rd.PreparedPair(k, rd.rescaled(p.unloaded, gains), rd.rescaled(p.loaded, gains), p.offset_s,
                            p.max_mismatch_rad) for k, p in raw.items()}
fig = {}
worst = 0.0
for k in rd.JUDGED_PAIRS:
    robot, _ = rd.identify_ur10e_robot(model, pairs[k], "linear")
    est = rd.identify_payloads(model, robot, pairs[k])
    errs = {m: 100 * (e.mass / rd.LOAD_MASS_KG - 1) for m, e in est.items() if not isinstance(e, str)}
    print(k, {m: round(v, 3) for m, v in errs.items()})
    fig[f"ur10e_mass_err_pct_{k.replace('_', '')}"] = float(np.median([errs[m] for m in OFFLINE]))
    worst = max(worst, max(abs(v) for v in errs.values()))
fig["ur10e_mass_err_pct_max_abs_judged"] = worst
# Issue 12: the user's path, robot and gains (with their std) from the 14harm pair, payload on the others.
robot14, _ = rd.identify_ur10e_robot(model, pairs[rd.GAIN_PAIR], "linear", gains=gains, gains_std=gains_std)
ratio_max = 0.0
for k in rd.JUDGED_PAIRS:
    for m, e in rd.identify_payloads(model, robot14, pairs[k]).items():
        name = f"ur10e_{m.replace('-', '_')}_{{}}_{k.replace('_', '')}"
        if isinstance(e, str):
            print(k, m, e)
            continue
        err = e.mass - rd.LOAD_MASS_KG
        fig[name.format("mass_err_pct")] = 100 * err / rd.LOAD_MASS_KG
        fig[name.format("err_over_std")] = abs(err) / e.readable_std()[0]
        if m in TARGET_METHODS:
            ratio_max = max(ratio_max, fig[name.format("err_over_std")])
fig["ur10e_err_over_std_max"] = ratio_max
# The same through the command line, as a user runs it: the gains travel in robot.yaml.
CSV = {"15harm": ("ur-20_02_19_15harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv"),
       "01_31": ("ur-20_01_31-load.csv", "ur-20_01_31-unload.csv")}
HELD_OUT = [a for _, unloaded_csv in CSV.values() for a in ("--held-out-csv-ur", str(data / unloaded_csv))]
# The offsets' drift between runs (identify-robot --drift-csv-ur): the other days' unloaded excitations (the static
# validation poses cannot tell an offset from the static friction and are refused). UR10E_DRIFT=0: none, as before.
DRIFT = [] if os.environ.get("UR10E_DRIFT", "1") == "0" else [
    a for _, unloaded_csv in CSV.values() for a in ("--drift-csv-ur", str(data / unloaded_csv))]
COM_PAIRS = {rd.GAIN_PAIR: (rd.PAIRS[rd.GAIN_PAIR][1], rd.PAIRS[rd.GAIN_PAIR][0]), **CSV}
with tempfile.TemporaryDirectory() as tmp:
    robot_yaml = Path(tmp) / "robot.yaml"
    if cli_main(["identify-robot", "--urdf", str(data / "ur10e.urdf"), "--csv-ur",
                 str(data / rd.PAIRS[rd.GAIN_PAIR][0]), "--loaded-csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][1]),
                 "--known-payload-mass", str(rd.LOAD_MASS_KG), *HELD_OUT, *DRIFT, "--out", str(robot_yaml)]) != 0:
        raise SystemExit("bench/ur10e.py: identify-robot refused the user path's recordings (its message above)")
    written = yaml.safe_load(robot_yaml.read_text())
    # The identified gains and their σ robot.yaml carries (issue 29 item 5: they must not move beyond rounding).
    for i, (gain, std) in enumerate(zip(written["effort_scale"], written["effort"]["scale_std"], strict=True)):
        fig[f"ur10e_cli_gain_joint{i + 1}"] = float(gain)
        fig[f"ur10e_cli_gain_std_pct_joint{i + 1}"] = 100.0 * float(std) / float(gain)
    drift = written.get("friction_offset_drift")
    for i, j in enumerate(model.joint_names if drift else ()):
        fig[f"ur10e_cli_offset_spread_nm_joint{i + 1}"] = float(drift["spread"][j])
        fig[f"ur10e_cli_offset_prior_std_nm_joint{i + 1}"] = float(drift["prior_std"][j])
    cli_ratio, cli_err, cli_ratios = 0.0, 0.0, []
    mass_std: dict[str, float] = {}
    payload_runs: dict[tuple[str, str], dict | None] = {}

    def identify_payload(m: str, k: str, loaded_csv: str, unloaded_csv: str) -> dict | None:
        """payload.yaml of the user's command line for method `m` on recording `k` (None: refused, said), each run once
        (the mass and the CoM sections read the same runs)."""
        if (m, k) not in payload_runs:
            out = Path(tmp) / f"{m}_{k}.yaml"
            code = cli_main(["identify-payload", "--urdf", str(data / "ur10e.urdf"), "--robot", str(robot_yaml),
                             "--csv-ur", str(data / loaded_csv), "--unloaded-csv-ur", str(data / unloaded_csv),
                             "--method", m, "--out", str(out)])
            if code != 0:
                print(k, m, "refused, exit code", code)
            payload_runs[m, k] = yaml.safe_load(out.read_text()) if code == 0 else None
        return payload_runs[m, k]

    for k, (loaded_csv, unloaded_csv) in CSV.items():
        for m in (*TARGET_METHODS, "khalil-2"):
            d = identify_payload(m, k, loaded_csv, unloaded_csv)
            if d is None:
                continue
            err = d["mass"] - rd.LOAD_MASS_KG
            name = f"ur10e_cli_{m.replace('-', '_')}_{{}}_{k.replace('_', '')}"
            fig[name.format("mass_err_pct")] = 100 * err / rd.LOAD_MASS_KG
            fig[name.format("err_over_std")] = abs(err) / d["std"]["mass"]
            if m in TARGET_METHODS:
                cli_ratio = max(cli_ratio, fig[name.format("err_over_std")])
                cli_ratios.append(fig[name.format("err_over_std")])
                cli_err = max(cli_err, abs(fig[name.format("mass_err_pct")]))
                mass_std[m] = max(mass_std.get(m, 0.0), 100 * d["std"]["mass"] / rd.LOAD_MASS_KG)
    fig["ur10e_cli_err_over_std_rms"] = float(np.sqrt(np.mean(np.square(cli_ratios))))
    for m, v in mass_std.items():
        fig[f"ur10e_cli_mass_std_pct_max_{m.replace('-', '_')}"] = v
    # The CoM on all three loaded runs (the gains' pair too: its CoM had no say in the gains), against khalil-3's.
    for k, (loaded_csv, unloaded_csv) in COM_PAIRS.items():
        com = {}
        for m in ("khalil-3", "khalil-1", "difference-rls"):
            d = identify_payload(m, k, loaded_csv, unloaded_csv)
            if d is not None:
                com[m] = (np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float))
        for m in ("khalil-1", "difference-rls") if "khalil-3" in com else ():
            if m not in com:
                continue
            c, s_ = com[m]
            gap = np.abs(c - com["khalil-3"][0])
            key = f"ur10e_cli_{m.replace('-', '_')}_{{}}_{k.replace('_', '')}"
            fig[key.format("com_std_mm_max")] = float(1e3 * np.max(s_))
            fig[key.format("com_gap_sigma")] = float(np.max(gap / np.hypot(s_, com["khalil-3"][1])))
            fig[key.format("com_gap_mm")] = float(1e3 * np.max(gap))
    # The gear friction (robot_id/gear_friction.py), opt-in: what it finds on this robot and what it does to the
    # command line's masses (the reason it is not the default).
    cli_main(["identify-robot", "--urdf", str(data / "ur10e.urdf"), "--csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][0]),
              "--loaded-csv-ur", str(data / rd.PAIRS[rd.GAIN_PAIR][1]), "--known-payload-mass", str(rd.LOAD_MASS_KG),
              "--gear-friction", "identify", "--out", str(robot_yaml)])
    gear = yaml.safe_load(robot_yaml.read_text())["friction"]["gear"]["mu"]
    fig["ur10e_gear_friction_mu_joint2"], fig["ur10e_gear_friction_mu_joint3"] = float(gear[1]), float(gear[2])
    gear_err = 0.0
    for k, (loaded_csv, unloaded_csv) in CSV.items():
        for m in TARGET_METHODS:
            out = Path(tmp) / f"gear_{m}_{k}.yaml"
            if cli_main(["identify-payload", "--urdf", str(data / "ur10e.urdf"), "--robot", str(robot_yaml),
                         "--csv-ur", str(data / loaded_csv), "--unloaded-csv-ur", str(data / unloaded_csv),
                         "--method", m, "--out", str(out)]) == 0:
                err = 100 * (yaml.safe_load(out.read_text())["mass"] / rd.LOAD_MASS_KG - 1)
                fig[f"ur10e_cli_gear_friction_{m.replace('-', '_')}_mass_err_pct_{k.replace('_', '')}"] = err
                gear_err = max(gear_err, abs(err))
    fig["ur10e_cli_gear_friction_mass_err_pct_max_abs"] = gear_err
fig["ur10e_cli_err_over_std_max"] = cli_ratio
fig["ur10e_cli_mass_err_pct_max_abs"] = cli_err
geared = fit_given_model(model, raw[rd.GAIN_PAIR].unloaded, friction="linear", delay=0.0, gear_friction=True)
plain = fit_given_model(model, raw[rd.GAIN_PAIR].unloaded, friction="linear", delay=0.0)
for j in (1, 2):
    fig[f"ur10e_gear_friction_rmse_ratio_joint{j + 1}"] = float(geared.rmse[j] / plain.rmse[j])
ident, _ = rd.identify_ur10e_robot(model, pairs["14harm"], "nonlinear")
rmse = [validate_robot(ident, pairs[k].unloaded, model, delay=0.0) for k in rd.JUDGED_PAIRS]
fig["ur10e_val_rmse_nm_max"] = float(np.max(rmse))
ident_g, _ = rd.identify_ur10e_robot(model, pairs["14harm"], "nonlinear", gear_friction=True)
fig["ur10e_val_rmse_nm_max_gear_friction"] = float(np.max(
    [validate_robot(ident_g, pairs[k].unloaded, model, delay=0.0) for k in rd.JUDGED_PAIRS]))
fig["ur10e_pipeline_s"] = time.perf_counter() - t0
print(json.dumps(fig))
