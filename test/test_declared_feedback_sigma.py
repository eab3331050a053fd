"""The estimate a client is shown when the simulated cell's online estimator declares convergence, judged against the
σ it is shown with (h188; bench/cell.py's cell_converged_cover_2sigma / cell_converged_beyond_3sigma, measured there
over ROS on the goal's feedback).

The cell as bench/cell_convergence.py runs it in-process: difference-rls on ur10_payload_fast, the 3.5 kg part on
tool0, the robot identified with its gear friction on the same excitation's unloaded run of noise seed 1007 (the
robot bench/cell.py's run seed 7 uses), samples fed in blocks of the check's period until it declares. What a goal's
feedback shows then is IdentificationRun.estimate: the estimator's estimate() with the covariance the rule judged
(OnlineEstimator.judged_covariance: covariance_extra's serially correlated and model-error part added). Before h188
it showed the estimator's own covariance (with the robot identification's) alone.

Measured (h188, 21 robot seeds 11, 1000-1019 × loaded seeds 100-119, 420 runs, all declared, median 1.75 s): the
declared mass within 2σ of the own σ 94.8 %, none beyond 3σ, but the CoM's x / y / z within 2σ 78.6 / 94.8 / 62.9 %,
beyond 3σ 8 / 0 / 31 runs (x +2-5 mm, z −3-5 mm at declaration, σ ~1.2 mm: the early transient every robot shares);
with the σ the rule judged 97.6 / 100 / 98.3 %, none beyond 3σ. With robot 1007 the CoM x is beyond 2σ on 12 of 20
loaded seeds, beyond 3σ on seed 104 (+4.78 mm at 3.41σ, declared at 1.80 s). Over ROS (demo --seed 7 --robot-seed
1007 --clock sim) the first feedback after the declaration (1.70 s) read 3.5333 ± 0.0124 kg: +0.95 % at 2.7σ.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.online_feed import feed_until_converged

FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
ROBOT_SEED = 1007          # bench/cell.py: run seed 7's robot (ROBOT_SEED_OFFSET + 7)
LOADED_SEEDS = (100, 104, 108, 110, 112)


@pytest.fixture(scope="module")
def declared() -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]:
    """(declared time, |error| of [mass, CoM x, y, z], their σ as a goal's feedback shows them, the estimator's own σ
    of them) per loaded seed."""
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory("ur10_payload_fast")
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    robot = fit_given_model(m, simulate(m, traj, None, "ur10", seed=ROBOT_SEED), friction="nonlinear",
                            gear_friction=True)
    out = []
    for seed in LOADED_SEEDS:
        sig = method_signals(simulate(m, traj, truth, "ur10", seed=seed), m, PayloadOptions(), robot)
        est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=500.0,
                                     include_robot_uncertainty=True)
        feed_until_converged(est, sig)
        shown = est.estimate()
        own = shown.readable_std()[:4]
        shown.covariance = est.judged_covariance(shown.covariance)
        err = np.abs(np.r_[shown.mass - MASS, shown.com - COM])
        out.append((est.convergence_time if est.converged else float("nan"), err, shown.readable_std()[:4], own))
    return out


def test_every_run_declares_within_the_cells_target(declared):
    """The runs below are declarations, not runs the rule refused: each declared within 2.0 s of motion (h188: 1.55-
    1.80 s), the mass within 1 % (+0.35..+0.71 %)."""
    for t, err, _, _ in declared:
        assert t <= 2.0 + 1e-9
        assert err[0] < 0.01 * MASS


def test_the_shown_estimate_is_within_3_sigma_of_the_shown_sigma(declared):
    """Shown with the σ the rule judged (judged_covariance, what IdentificationRun.estimate gives the feedback), every
    run's mass and CoM lie within 3σ (h188, 420 runs: none beyond; seed 104's CoM x 2.12σ), and that σ is the
    rule's: the mass σ below its 0.5 % (0.44-0.50 % here), not a σ grown past what the declaration judged."""
    for _, err, std, _ in declared:
        assert np.all(err <= 3.0 * std), (err, std)
        assert std[0] < 0.005 * MASS


def test_the_estimators_own_sigma_alone_is_beyond_3_sigma(declared):
    """What the feedback showed before h188 (the estimator's own covariance): seed 104's CoM x +4.78 mm at 3.41σ.
    The case the judged σ answers, so that the test above is not passing on easy seeds."""
    assert any(np.any(err > 3.0 * own) for _, err, _, own in declared)
