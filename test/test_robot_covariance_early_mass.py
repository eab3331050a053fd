"""robot.yaml's covariance against what the robot identification's error does to the cell's early mass (issue 29,
h199; bench/cell_robot_covariance.py measures it over 20 robot seeds).

The cell's robot (ur10_payload_fast's unloaded run, nonlinear friction, gear friction identified) is identified once
per noise seed; one loaded run (the 3.5 kg part on tool0) is fed to difference-rls with each robot. What the robots
change in the mass after 1.5 s of motion (the estimate the cell declares at 1.5-2.0 s) is the identification's
error seen through the estimator; robot.yaml's covariance C predicts it as √(J C Jᵀ), J the mass's sensitivity to
θ (the estimator adds the same term, P C_a Pᵀ, to its own σ). h188 read it as 2x short: it compared σ with and
without include_robot_uncertainty, two estimators that weigh the data differently. Measured (20 robots, loaded seeds
100 and 101): spread 0.21 % for √(J C Jᵀ) 0.20 %; every parameter's spread over its σ at most 1.41 (median 0.90).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate

pytestmark = pytest.mark.slow     # eight robot identifications and ~70 estimator runs: ~1-2 min of CPU

BENCH = Path(__file__).resolve().parents[1] / "bench" / "cell_robot_covariance.py"
ROBOT_SEEDS = tuple(range(1000, 1008))
LOADED_SEED = 100
AT = (1.5,)                       # s of motion


def _bench():
    spec = importlib.util.spec_from_file_location("bench_cell_robot_covariance", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cell():
    """(bench module, model, robots, the loaded run)."""
    bench = _bench()
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(bench.TRAJECTORY)
    robots = [fit_given_model(m, simulate(m, traj, None, bench.PROFILE, seed=s), friction="nonlinear",
                              gear_friction=True) for s in ROBOT_SEEDS]
    truth = PayloadEstimate(bench.FRAME, from_mass_com_inertia(bench.MASS, bench.COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    return bench, m, robots, simulate(m, traj, truth, bench.PROFILE, seed=LOADED_SEED)


def test_the_robots_spread_of_the_early_mass_is_what_robot_yaml_predicts(cell):
    """Over 8 robots the mass after 1.5 s spreads as √(J C Jᵀ) says, within a factor 1.5 either way (20 robots: 1.03;
    a covariance 2x short would read 2). The spread is a real effect, not noise below σ: it is at least 0.1 % (0.21 %
    over 20 robots), and the estimator's own σ holds √(J C Jᵀ) (σ² ≥ J C Jᵀ)."""
    bench, m, robots, rec = cell
    got = np.array([bench.masses_at(m, r, method_signals(rec, m, PayloadOptions(), r), AT)[0] for r in robots])
    spread = float(np.std(got[:, 0], ddof=1))
    first = robots[0]
    J = bench.mass_sensitivity(m, first, method_signals(rec, m, PayloadOptions(), first), got[:1, 0], AT)[0]
    predicted = float(np.sqrt(J @ first.cov @ J))
    assert 1 / 1.5 < spread / predicted < 1.5, (spread, predicted)
    assert spread > 0.001 * bench.MASS
    assert got[0, 1] >= predicted**2


def test_every_identified_parameter_spreads_as_its_sigma_says(cell):
    """Each of θ's entries (base parameters, rotor inertias, friction) spreads over the 8 seeds by its reported σ:
    median ratio 0.7-1.3 (here 0.85), none above 2 (here 1.80, the shoulder pan's inertia group; 20 seeds: median 0.90,
    largest 1.41). A covariance 2x short would read 2 throughout."""
    bench, _, robots, _ = cell
    theta = np.array([r.theta for r in robots])
    std = np.array([np.sqrt(np.diag(r.cov)) for r in robots])
    ratio = bench.spread_over_std(theta, std)
    assert 0.7 < float(np.median(ratio)) < 1.3, np.round(ratio, 2)
    assert float(np.max(ratio)) < 2.0, (robots[0].theta_names[int(np.argmax(ratio))], float(np.max(ratio)))


WRIST_BIAS = ("the wrist's identified first moments are biased against the URDF's beyond their σ (20 seeds, mean "
              "error: mcx5 +3.0σ, mcx6 −2.8σ, Ixy5 −2.1σ, Ixz5 +2.0σ; |error|/σ RMS here mcx5 3.2, mcx6 2.9): a model "
              "error of the simulated cell's identification, not its noise; its share of the early mass ≤ 0.15 % "
              "(h199). The cause (h214, ur10 profile with torque noise only, seeds 1000-1002, mcx5 / mcx6 in σ): the "
              "simulated drives' viscous friction Fv |q̇|^0.3, whose slope is unbounded at the reversals, evaluated "
              "by the fit on the commanded motion the drives follow 2 ms late through a 25 Hz loop: +1.7/+3.0/+3.1 "
              "and −1.7/−2.1/−1.2; with α = 1 in the simulator −1.5/−0.1/+0.2 and +1.5/+0.3/+1.0; with the drives "
              "following closely (60 Hz, no delay, 0.5 ms step; true α and ε given) −0.1/+1.5/+1.2 and +0.6/−0.1/+0.7; "
              "not α's identification (true α given +3.0/+4.2/+3.8), not the sign smoothing (the sim's ε "
              "+2.6/+3.6/+3.0), not the gear friction μ. C_a holds no such term: robot.yaml's model_error, measured "
              "on held-out runs, is the project's place for it")


@pytest.mark.xfail(strict=True, reason=WRIST_BIAS)
def test_the_inertial_parameters_lie_within_their_sigma_of_the_truth(cell):
    """The inertial entries, whose truth is known (the URDF's base parameters, the profile's rotor inertias), lie within
    their σ of it: |error|/σ RMS over the 8 seeds below 2 for every one."""
    bench, m, robots, _ = cell
    std = np.array([np.sqrt(np.diag(r.cov)) for r in robots])
    k = robots[0].n_inertial
    rotor = np.asarray(bench.load_profile(bench.PROFILE, m.n).rotor_inertia, dtype=float)
    err = np.array([r.theta[:k] - bench.true_inertial(r, m, rotor) for r in robots]) / std[:, :k]
    rms = np.sqrt(np.mean(err**2, axis=0))
    assert float(np.max(rms)) < 2.0, (robots[0].theta_names[int(np.argmax(rms))], float(np.max(rms)))
