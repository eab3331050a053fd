"""The friction's sign smoothing ε judged on held-out recordings (issue 29 item 1): is the fixed 0.01 rad/s
(dynamics/friction.DEFAULT_SIGN_EPSILON) worth identifying?

Real UR10e: for each unloaded excitation run R (14harm, 15harm, 01_31) and each ε of GRID, identify-robot's
nonlinear friction (α searched per joint, as robot.yaml's) is fitted on R with the README's drive gains; the torques
of every other unloaded run (the two other excitations and the six one-joint-at-a-time runs) are predicted. Score
of ε on R, the criterion of robot_id/friction_choice.py: mean over joints of (held-out RMSE_j(ε) / min_ε RMSE_j)²,
overall and on the rows where a joint that moves in its run is near rest (|q̇_j| < 0.05 rad/s). Simulation: the same
on two unloaded `simulate --profile ur10` runs (the drives' ε is SIM_EPSILON), each fitted and the other held out.
Prints one JSON object as its last line:

  eps_score_<R>_<ε>             overall held-out score of ε fitted on R (1: every joint at its best ε)
  eps_score_rest_<R>_<ε>        the same near rest
  eps_best_<R> / eps_best_rest_<R>   the ε of the lowest score
  eps_cv_chosen_<R>             ε chosen by robot_id/friction_choice.py's criterion (the one-standard-error rule on
                                the paired held-out loss, batch-means σ) with 0.01 listed first: another ε only
                                where it beats 0.01 by more than SEPARATION_SIGMAS of that σ
  eps_cv_best_<R>, eps_cv_default_excess_sigmas_<R>  its lowest-loss ε and 0.01's excess over it in those σ
  eps_default_excess_pct_<R>    score(0.01) over the best score, −1, in %: what identifying ε could gain
  eps_best_spread_pct           largest − smallest held-out score at ε 0.005–0.02 over the three fits (%)
  sim_eps_best_<fit>            the ε of the lowest held-out torque RMS in simulation (truth SIM_EPSILON)
  sim_rms_<fit>_<ε>             its RMS over joints, N·m
  sim_alpha_joint2_<fit>_<ε>    the shoulder lift's identified α (truth 0.27): α absorbs ε
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel, resolve_urdf
from payload_id_core.io.bag import read_bag
from payload_id_core.robot_id.friction_choice import choose_friction, held_out_residuals
from payload_id_core.robot_id.pipeline import fit_given_model
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.sim.profile import load_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data as rd  # noqa: E402 - found through the sys.path entry above
from run_bench import SKIPPED_EXIT  # noqa: E402 - the same

GRID = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08)   # rad/s
NEAR_REST = 0.05        # rad/s
MOVING = 0.2            # rad/s: a joint whose run never reaches this does not move in it (jointwise runs)
FITS = ("14harm", "15harm", "01_31")
SIM_TRAJECTORIES = ("ur10_base", "ur10_payload")
SIM_GRID = (0.0025, 0.005, 0.01, 0.02)


def scores(rmse: dict[float, np.ndarray]) -> dict[float, float]:
    best = np.min(np.stack(list(rmse.values())), axis=0)
    return {e: float(np.mean((r / best) ** 2)) for e, r in rmse.items()}


data = rd.default_data_dir()
jointwise = [f"jointwise-joint_{j}.csv" for j in range(1, 7)]
reason = rd.data_missing_reason(data) or next((f"{f} missing" for f in jointwise if not (data / f).is_file()), None)
if reason:
    print(f"bench sign_epsilon: skipped: {reason}", file=sys.stderr)
    sys.exit(SKIPPED_EXIT)
model = RobotModel.from_urdf(str(data / "ur10e.urdf"))
files = {k: rd.PAIRS[k][0] for k in FITS} | {f"jw{j + 1}": f for j, f in enumerate(jointwise)}
runs = {k: rd.prepared_run(data / f) for k, f in files.items()}
sigs = {k: conditioned_signals(r, model.joint_names, "commanded", delay=0.0) for k, r in runs.items()}
fig: dict[str, float] = {}
middle = []
for fit in FITS:
    rmse, rmse_rest, idents = {}, {}, {}
    for eps in GRID:
        ident = fit_given_model(model, runs[fit], friction="nonlinear", delay=0.0, sign_epsilon=eps)
        idents[f"{eps:g}"] = ident
        res, rest = [], []
        for k, s in sigs.items():
            if k == fit:
                continue
            e = held_out_residuals(ident, s, model)
            near = (np.abs(s.qd) < NEAR_REST) & (np.max(np.abs(s.qd), axis=0) > MOVING)
            res.append(e)
            rest.append(np.where(near, e, np.nan))
        rmse[eps] = np.sqrt(np.mean(np.concatenate(res) ** 2, axis=0))
        rmse_rest[eps] = np.sqrt(np.nanmean(np.concatenate(rest) ** 2, axis=0))
    tag = fit.replace("_", "")
    # friction_choice's criterion with the default listed first: another ε only where it beats 0.01 by more than
    # SEPARATION_SIGMAS of the paired difference's batch-means σ on the held-out runs.
    order = {"0.01": idents["0.01"]} | {k: v for k, v in idents.items() if k != "0.01"}
    held = [s for k, s in sigs.items() if k != fit]
    choice = choose_friction(order, held, [k for k in sigs if k != fit], model)
    fig[f"eps_cv_chosen_{tag}"] = float(choice.chosen)
    best = min(choice.candidates, key=lambda c: c.score)
    fig[f"eps_cv_default_excess_sigmas_{tag}"] = next(
        c.excess / c.excess_std if c.excess_std > 0 else 0.0 for c in choice.candidates if c.kind == "0.01")
    fig[f"eps_cv_best_{tag}"] = float(best.kind)
    for name, table in (("", rmse), ("rest_", rmse_rest)):
        sc = scores(table)
        for eps, v in sc.items():
            fig[f"eps_score_{name}{tag}_{eps:g}"] = v
        fig[f"eps_best_{name}{tag}"] = min(sc, key=lambda e: sc[e])
        if not name:
            fig[f"eps_default_excess_pct_{tag}"] = 100.0 * (sc[0.01] / min(sc.values()) - 1.0)
            middle += [sc[e] for e in (0.005, 0.01, 0.02)]
fig["eps_best_spread_pct"] = 100.0 * (max(middle) / min(middle) - 1.0)

sim_model = RobotModel.from_urdf(resolve_urdf("ur10"))
profile = load_profile("ur10", sim_model.n)
fig["sim_eps_truth"] = float(profile.friction.smoothing_velocity)
with tempfile.TemporaryDirectory() as tmp:
    sim_runs = {}
    for seed, tr in enumerate(SIM_TRAJECTORIES, start=3):
        bag = Path(tmp) / tr
        assert cli_main(["simulate", "--urdf", "ur10", "--trajectory", tr, "--profile", "ur10", "--rate", "100",
                         "--seed", str(seed), "--out", str(bag)]) == 0
        sim_runs[tr] = read_bag(bag, effort_scale=profile.effort_scale, joint_names=sim_model.joint_names)
sim_sigs = {k: conditioned_signals(r, sim_model.joint_names, "commanded") for k, r in sim_runs.items()}
for fit in SIM_TRAJECTORIES:
    other = next(k for k in SIM_TRAJECTORIES if k != fit)
    total = {}
    for eps in SIM_GRID:
        ident = fit_given_model(sim_model, sim_runs[fit], friction="nonlinear", sign_epsilon=eps)
        total[eps] = float(np.sqrt(np.mean(held_out_residuals(ident, sim_sigs[other], sim_model) ** 2)))
        fig[f"sim_rms_{fit}_{eps:g}"] = total[eps]
        fig[f"sim_alpha_joint2_{fit}_{eps:g}"] = float(np.asarray(ident.friction.shape)[1, 0])
    fig[f"sim_eps_best_{fit}"] = min(total, key=lambda e: total[e])
print(json.dumps(fig))
