"""Regenerate docs/ur10e_report.md's numbers and plots from the real UR10e data (issue 9).

    .venv/bin/python tools/ur10e_report.py [--data ../shared/data/ur10e] [--out docs] [--json results.json]

Prints the tables (markdown) the report quotes and writes docs/ur10e_*.png. Takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import ur10e_data as rd  # tools/ur10e_data.py: this script's directory is on sys.path
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import README_DRIVE_GAINS, read_ur_csv
from payload_id_core.payload.methods import identify_payload
from payload_id_core.robot_id import validate_robot

FRICTIONS = ("linear", "nonlinear", "stribeck")
PUBLISHED = {"Xu 2024": 0.04, "Gaz 2017": 0.43, "Khalil 2007": 2.7}


def scaled_pairs(raw: dict, gains) -> dict:
    return {k: rd.PreparedPair(k, rd.rescaled(p.unloaded, gains), rd.rescaled(p.loaded, gains), p.offset_s,
                               p.max_mismatch_rad, p.notes) for k, p in raw.items()}


def robot_study(model, pairs, data: Path, gains) -> dict:
    """Each friction model identified on the 14-harmonic unloaded run; RMSE on it, on the other two
    unloaded excitations and on the three static validation poses."""
    static = {v: read_ur_csv(data / v, gains) for v in rd.VALIDATION}
    others = {k: pairs[k].unloaded for k in ("15harm", "01_31")}
    out = {}
    for fr in FRICTIONS:
        t0 = time.perf_counter()
        ident, _ = rd.identify_ur10e_robot(model, pairs["14harm"], fr)
        wall = time.perf_counter() - t0
        rel = np.asarray(ident.rel_std, dtype=float)
        inertial = rel[:ident.n_inertial]
        out[fr] = {
            "train_rmse": ident.rmse.tolist(),
            "cv_rmse": {k: validate_robot(ident, r, model, delay=0.0).tolist() for k, r in others.items()},
            "static_rmse": {v: validate_robot(ident, r, model, delay=0.0).tolist() for v, r in static.items()},
            "rel_std_median_pct": float(np.nanmedian(inertial[np.isfinite(inertial)])),
            "rel_std_below_10pct": int(np.sum(inertial < 10)), "n_inertial": int(ident.n_inertial),
            "friction_rel_std_median_pct": float(np.nanmedian(rel[ident.n_inertial:])),
            "condition_number": float(ident.condition_number), "seconds": wall,
            "shape": np.asarray(ident.friction.shape).tolist() if ident.friction.shape is not None else None,
            "_ident": ident,
        }
    return out


def payload_study(model, pairs) -> dict:
    res: dict[str, dict[str, dict]] = {}
    for k, p in pairs.items():
        robot, _ = rd.identify_ur10e_robot(model, p, "linear")
        res[k] = {}
        for m, e in rd.identify_payloads(model, robot, p).items():
            if isinstance(e, str):
                res[k][m] = {"error": e}
                continue
            s = e.readable_std()
            res[k][m] = {"mass": e.mass, "mass_std": float(s[0]), "com": e.com.tolist(), "com_std": s[1:4].tolist(),
                         "err_pct": 100 * (e.mass / rd.LOAD_MASS_KG - 1), "converged": bool(e.converged),
                         "convergence_time": float(e.convergence_time)}
    return res


def gaz_static_study(model, data: Path, gains) -> dict:
    """gaz-static needs rest in several poses; the loaded files rest only at their start/end pose."""
    out: dict[str, dict[str, float | str]] = {}
    for k, (unloaded_file, loaded_file) in rd.PAIRS.items():
        loaded = read_ur_csv(data / loaded_file, gains)
        unloaded = read_ur_csv(data / unloaded_file, gains)
        robot, _ = rd.identify_ur10e_robot(model, rd.prepared_run(data / unloaded_file, recording=unloaded), "linear")
        try:
            e = identify_payload("gaz-static", model, robot, loaded, None, unloaded=unloaded, delay=0.0)
            out[k] = {"mass": e.mass, "mass_std": float(e.readable_std()[0]),
                      "err_pct": 100 * (e.mass / rd.LOAD_MASS_KG - 1)}
        except PayloadIdError as err:
            out[k] = {"error": str(err)}
    return out


def plots(out: Path, robots: dict, pairs: dict, model, payload: dict, payload_readme: dict) -> list[str]:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    names = [j.replace("_joint", "") for j in model.joint_names]
    files = []
    # 1. friction models: RMSE per joint, training and cross-validation
    fig, ax = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    x = np.arange(6)
    for i, fr in enumerate(FRICTIONS):
        ax[0].bar(x + (i - 1) * 0.27, robots[fr]["train_rmse"], 0.27, label=fr)
        cv = np.mean([robots[fr]["cv_rmse"][k] for k in robots[fr]["cv_rmse"]], axis=0)
        ax[1].bar(x + (i - 1) * 0.27, cv, 0.27, label=fr)
    for a, title in zip(ax, ["identification run (14-harmonic, unloaded)",
                             "cross-validation (15-harmonic and 01_31 unloaded, mean)"]):
        a.set_xticks(x, names, rotation=20)
        a.set_title(title, fontsize=10)
        a.grid(axis="y", alpha=0.3)
    ax[0].set_ylabel("torque RMSE [N·m]")
    ax[0].legend()
    fig.tight_layout()
    fig.savefig(out / "ur10e_friction_rmse.png", dpi=90)
    files.append("ur10e_friction_rmse.png")
    plt.close(fig)
    # 2. torque prediction on an unseen trajectory
    ident = robots["nonlinear"]["_ident"]
    run = pairs["15harm"].unloaded
    c = run.commanded[0]
    pred = ident.predict(c.positions, c.velocities, c.accelerations)
    fig, axes = plt.subplots(6, 1, figsize=(11, 12), sharex=True)
    for j, a in enumerate(axes):
        a.plot(run.joints.t, run.joints.tau[:, j], lw=1, label="measured (current × gain)")
        a.plot(run.joints.t, pred[:, j], lw=1, label="predicted (identified on 14-harmonic)")
        a.set_ylabel(f"{names[j]}\n[N·m]", fontsize=8)
        a.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle("Cross-validation: 15-harmonic unloaded run, nonlinear friction model", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "ur10e_torque_validation.png", dpi=80)
    files.append("ur10e_torque_validation.png")
    plt.close(fig)
    # 3. payload mass per method and pair
    fig, ax = plt.subplots(figsize=(11, 4.5))
    methods = list(rd.PAYLOAD_METHODS)
    keys = list(payload)
    for i, k in enumerate(keys):
        ms = [payload[k][m].get("mass", np.nan) for m in methods]
        ss = [payload[k][m].get("mass_std", np.nan) for m in methods]
        ax.errorbar(np.arange(len(methods)) + (i - 1) * 0.2, ms, yerr=ss, fmt="o", capsize=3,
                    label=f"{k} (own gains from 14harm)" + (" — gain pair" if k == rd.GAIN_PAIR else ""))
    ms = [payload_readme["15harm"][m].get("mass", np.nan) for m in methods]
    ax.plot(np.arange(len(methods)) + 0.3, ms, "x", color="grey", label="15harm, README gains")
    ax.axhline(rd.LOAD_MASS_KG, color="k", lw=1)
    ax.axhspan(rd.LOAD_MASS_KG * 0.98, rd.LOAD_MASS_KG * 1.02, color="g", alpha=0.1, label="±2 %")
    ax.set_xticks(np.arange(len(methods)), methods)
    ax.set_ylabel("identified mass [kg]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("Load mass (2.805 kg) per method and trajectory pair", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "ur10e_payload_mass.png", dpi=90)
    files.append("ur10e_payload_mass.png")
    plt.close(fig)
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(rd.default_data_dir()))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = RobotModel.from_urdf(str(data / "ur10e.urdf"))

    raw = rd.load_pairs(data, effort_scale=None)
    gains_by_pair = {k: rd.identify_gains(model, p, decimate=2) for k, p in raw.items()}
    gains, gains_std = gains_by_pair[rd.GAIN_PAIR]
    own = scaled_pairs(raw, gains)
    readme = scaled_pairs(raw, README_DRIVE_GAINS)

    robots = robot_study(model, own, data, gains)
    payload = payload_study(model, own)
    payload_readme = payload_study(model, readme)
    gaz = gaz_static_study(model, data, gains)
    files = plots(out, robots, own, model, payload, payload_readme)

    result = {"gains": {k: {"k": g.tolist(), "std": s.tolist()} for k, (g, s) in gains_by_pair.items()},
              "readme_gains": list(README_DRIVE_GAINS),
              "alignment": {k: {"offset_s": p.offset_s, "max_mismatch_mrad": 1e3 * p.max_mismatch_rad}
                            for k, p in raw.items()},
              "robots": {fr: {k: v for k, v in r.items() if not k.startswith("_")} for fr, r in robots.items()},
              "payload_own_gains": payload, "payload_readme_gains": payload_readme, "gaz_static": gaz,
              "plots": files}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))

    f = lambda v: " | ".join(f"{x:.3g}" for x in v)  # noqa: E731
    print("## drive gains [N·m/A]")
    print(f"README | {f(README_DRIVE_GAINS)}")
    for k, (g, s) in gains_by_pair.items():
        print(f"{k} | " + " | ".join(f"{a:.3f} ± {b:.3f}" for a, b in zip(g, s)))
    print("\n## friction models (identified on 14harm unloaded, own gains)")
    for fr, r in robots.items():
        print(f"{fr} train | {f(r['train_rmse'])}")
        for k, v in r["cv_rmse"].items():
            print(f"{fr} cv {k} | {f(v)}")
        for k, v in r["static_rmse"].items():
            print(f"{fr} static {k} | {f(v)}")
        print(f"{fr}: rel std median {r['rel_std_median_pct']:.3g} %, {r['rel_std_below_10pct']}/{r['n_inertial']} "
              f"inertial < 10 %, friction median {r['friction_rel_std_median_pct']:.3g} %, cond "
              f"{r['condition_number']:.3g}, {r['seconds']:.1f} s, shape {r['shape']}")
    for title, res in (("own gains (14harm + known mass)", payload), ("README gains", payload_readme)):
        print(f"\n## payload, {title}")
        for k, rows in res.items():
            for m, v in rows.items():
                if "error" in v:
                    print(f"{k} | {m} | n/a: {v['error']}")
                else:
                    c = 1e3 * np.asarray(v["com"])
                    cs = 1e3 * np.asarray(v["com_std"])
                    print(f"{k} | {m} | {v['mass']:.4f} ± {v['mass_std']:.4f} | {v['err_pct']:+.2f} % | "
                          f"[{c[0]:.1f}, {c[1]:.1f}, {c[2]:.1f}] ± [{cs[0]:.1f}, {cs[1]:.1f}, {cs[2]:.1f}]")
    print("\n## gaz-static")
    for k, v in gaz.items():
        print(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
