"""Real UR10e: the robot model's choices made on held-out runs (issue 29 item 1), validated on a run none of them saw.

For every calibration pair P (drive gains from its loaded run and the known 2.805 kg) and every order (Q, R) of
the two other pairs: identify-robot on P with Q's unloaded run and the one-joint-at-a-time runs held out (the
friction model's choice and robot.yaml's model error) and Q's loaded run held out with the known mass (each
method's load friction); then identify-payload on R's loaded run, which no choice saw. Six configurations, both
directions of every pair of held-out and judged runs. Prints one JSON object as its last line:

  choice_friction_<P>_<Q>                 the friction model chosen (0 linear, 1 nonlinear, 2 stribeck)
  choice_score_<kind>_<P>_<Q>             its held-out score (1: the best per joint; friction_choice.py)
  choice_load_friction_<method>_<P>_<Q>   1 on, 0 off
  mass_err_pct_<method>_<P>_<R>_chosen    mass error on R with robot.yaml's choices, %
  mass_err_pct_<method>_<P>_<R>_fixed     the same with main's fixed rules: --friction nonlinear, no loaded run
                                          held out (the load friction off because the gains were identified
                                          with the load)
  err_over_std_<method>_<P>_<R>_<which>   |error| / σ of the same
  mass_err_pct_rms_<which>                RMS over methods and configurations
  err_over_std_rms_<which> / _max_<which> over the same
  identify_robot_s_<which>                median wall time of identify-robot (load-dependent: other processes)
"""

import json
import statistics
import sys
import tempfile
import time
from itertools import permutations
from pathlib import Path

import numpy as np
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.payload.load_friction_choice import LOAD_FRICTION_METHODS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

KINDS = ("linear", "nonlinear", "stribeck")
JOINTWISE = [f"jointwise-joint_{j}.csv" for j in range(1, 7)]

data = rd.default_data_dir()
reason = rd.data_missing_reason(data) or next((f"{f} missing" for f in JOINTWISE if not (data / f).is_file()), None)
if reason:
    print(f"bench ur10e_model_choice: skipped: {reason}", file=sys.stderr)
    sys.exit(SKIPPED_EXIT)
urdf = str(data / "ur10e.urdf")
fig: dict[str, float] = {}
errs: dict[str, list[float]] = {"chosen": [], "fixed": []}
ratios: dict[str, list[float]] = {"chosen": [], "fixed": []}
times: dict[str, list[float]] = {"chosen": [], "fixed": []}
with tempfile.TemporaryDirectory() as tmp:
    for p, q in permutations(rd.PAIRS, 2):
        r = next(k for k in rd.PAIRS if k not in (p, q))
        tag = f"{p}_{q}".replace("_31", "31")
        common = ["identify-robot", "--urdf", urdf, "--csv-ur", str(data / rd.PAIRS[p][0]),
                  "--loaded-csv-ur", str(data / rd.PAIRS[p][1]), "--known-payload-mass", str(rd.LOAD_MASS_KG),
                  "--held-out-csv-ur", str(data / rd.PAIRS[q][0])]
        robots = {"chosen": Path(tmp) / f"chosen_{tag}.yaml", "fixed": Path(tmp) / f"fixed_{tag}.yaml"}
        extra = {"chosen": [a for f in JOINTWISE for a in ("--friction-cv-csv-ur", str(data / f))]
                 + ["--held-out-loaded-csv-ur", str(data / rd.PAIRS[q][1])],
                 "fixed": ["--friction", "nonlinear"]}
        for which, out in robots.items():
            t0 = time.perf_counter()
            assert cli_main([*common, *extra[which], "--out", str(out)]) == 0
            times[which].append(time.perf_counter() - t0)
        d = yaml.safe_load(robots["chosen"].read_text())
        fig[f"choice_friction_{tag}"] = float(KINDS.index(d["friction_choice"]["chosen"]))
        for c in d["friction_choice"]["candidates"]:
            fig[f"choice_score_{c['kind']}_{tag}"] = c["score"]
        for m, c in d["load_friction_choice"]["methods"].items():
            fig[f"choice_load_friction_{m.replace('-', '_')}_{tag}"] = float(c["chosen"] == "on")
        for m in LOAD_FRICTION_METHODS:
            for which, robot in robots.items():
                out = Path(tmp) / f"{m}_{tag}_{which}.yaml"
                code = cli_main(["identify-payload", "--urdf", urdf, "--robot", str(robot), "--csv-ur",
                                 str(data / rd.PAIRS[r][1]), "--method", m, "--out", str(out)])
                est = yaml.safe_load(out.read_text()) if code == 0 else None
                if est is None:
                    print(p, q, r, m, which, "exit", code)
                    continue
                mass, std = float(est["mass"]), float(est["std"]["mass"])
                name = f"{m.replace('-', '_')}_{p}_{r}_{which}".replace("_31", "31")
                fig[f"mass_err_pct_{name}"] = 100 * (mass / rd.LOAD_MASS_KG - 1)
                fig[f"err_over_std_{name}"] = abs(mass - rd.LOAD_MASS_KG) / std
                errs[which].append(fig[f"mass_err_pct_{name}"])
                ratios[which].append(fig[f"err_over_std_{name}"])
        print(p, q, r, {k: round(v, 3) for k, v in fig.items() if tag in k or f"_{p}_{r}_".replace("_31", "31") in k},
              flush=True)
for which in errs:
    fig[f"mass_err_pct_rms_{which}"] = float(np.sqrt(np.mean(np.square(errs[which]))))
    fig[f"err_over_std_rms_{which}"] = float(np.sqrt(np.mean(np.square(ratios[which]))))
    fig[f"err_over_std_max_{which}"] = float(np.max(ratios[which]))
    fig[f"identify_robot_s_{which}"] = statistics.median(times[which])
print(json.dumps(fig))
