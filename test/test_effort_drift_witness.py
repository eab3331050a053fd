"""Issue 29 item 5: the effort-drift check (payload/effort_drift.py) tells a drive-gain drift (every torque scaled,
gravity included) from friction that changed since robot.yaml was identified (odd in velocity).

The cross-motion cell's loaded runs, friction 3 % higher under load, read the plain factor a at 1.009-1.015 (UR10
seed 2: 1.0153, a false alarm; bench/effort_drift.py). The same cause on a run small enough for a test: the UR10
identified with linear friction on one 8 s motion, the payload run on another with every joint's friction 3 %
higher. On main the plain a read 1.019, beyond the 1.5 % limit, and the estimate was suspect ("efforts are 1.019 ×
robot.yaml's model of the arm") although its mass was within 0.4 %."""

import numpy as np
import pytest
from sim_runs import NOISE
from sim_runs import linear_friction_run as _run

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload import effort_drift
from payload_id_core.payload.effort_drift import DRIFT_TOLERANCE, RunScale, ScaleWitness
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import identify_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

MASS = 4.0
PHI = from_mass_com_inertia(MASS, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015]))
DRIFT_WORDS = "× robot.yaml's model of the arm"
FRICTION = np.array([3.0, 2.0, 0.1])          # linear_friction_run's Coulomb, viscous, offset per joint


@pytest.fixture(scope="module")
def ur10():
    return RobotModel.from_urdf("ur10")


@pytest.fixture(scope="module")
def robot(ur10):
    robot = identify_robot(ur10, _run(ur10, 1), friction="linear", delay=0.0)
    robot.effort_scale_source = "given"
    return robot


def _run_with_friction(model, seed: int, friction_factor: float, drift: float = 1.0):
    """linear_friction_run's motion and noise with the payload, Coulomb and viscous friction × `friction_factor`
    (the offset is no friction a load or temperature changes) and efforts × `drift`."""
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=seed)
    params = np.tile(FRICTION * [friction_factor, friction_factor, 1.0], model.n)
    return synthetic_recording(model, t, q, qd, qdd, friction=make_friction_model("linear", model.joint_names),
                               friction_params=params, noise_std=NOISE, seed=seed, payload=(PHI, "tool0"),
                               effort_scale=1.0 / drift)


def _drift_reason(est: PayloadEstimate) -> str:
    return next((r for r in est.quality_reasons if DRIFT_WORDS in r), "")


def _frame_only() -> PayloadEstimate:
    return PayloadEstimate("tool0", np.zeros(10), np.zeros((10, 10)), "frame only")


@pytest.mark.parametrize("seed", [3, 4])
def test_friction_higher_than_at_identification_is_not_called_a_drift(ur10, robot, seed):
    rec = _run_with_friction(ur10, seed, 1.03)
    scale = effort_drift.robot_scale_on_run(robot, ur10, rec, _frame_only())
    # The premise: the plain factor, all main had, is beyond the limit (main called the run drifted).
    assert scale.plain.a - 1 > DRIFT_TOLERANCE and scale.plain.beyond, scale.plain
    # With each joint's friction free the factor reads no drift, to its σ.
    assert abs(scale.friction_free.a - 1) < 3 * scale.friction_free.std < DRIFT_TOLERANCE, scale.friction_free
    assert not scale.drifted and not effort_drift.drift_reason(scale, "run")
    est = identify_payload("khalil-1", ur10, robot, rec, "tool0", delay=0.0)
    assert not _drift_reason(est) and est.quality is Quality.OK and est.converged, est.quality_reasons
    assert est.mass == pytest.approx(MASS, rel=0.01)


@pytest.mark.parametrize("drift", [1.02, 1.05])
def test_a_drift_on_top_of_changed_friction_is_still_named(ur10, robot, drift):
    rec = _run_with_friction(ur10, 3, 1.03, drift)
    est = identify_payload("khalil-1", ur10, robot, rec, "tool0", delay=0.0)
    assert abs(est.mass / MASS - 1) > 0.015                       # the premise: the drift is in the mass
    reason = _drift_reason(est)
    assert reason and "identify-robot" in reason, est.quality_reasons
    assert est.quality is Quality.SUSPECT and not est.converged
    # The friction-free witness reads the drift itself; the plain one reads it times the friction's 1.019 (× 0.97:
    # 0.988, inside the limit: not caught, as on main; module docstring).
    free = float(reason.split("model of the arm, and ")[1].split()[0])
    assert free == pytest.approx(drift, abs=0.003), reason


def _witness(a: float, std: float = 0.001) -> ScaleWitness:
    return ScaleWitness(a, std, 0.0)


@pytest.mark.parametrize("plain, free, drifted", [
    (0.97, 0.97, True),          # a drift: both witnesses beyond, on one side
    (1.02, 1.004, False),        # friction that changed (the cell's loaded runs): only the plain one beyond
    (1.009, 1.02, False),        # load friction the free one cannot free (real 15harm, linear friction): only it
    (1.03, 0.97, False),         # beyond on opposite sides: no common scale
])
def test_drift_is_called_only_when_both_witnesses_agree(plain, free, drifted):
    assert RunScale(_witness(plain), _witness(free)).drifted is drifted


def test_the_limit_is_three_sigma_where_sigma_exceeds_the_floor():
    """σ² = residual scatter² + robot.yaml's parameter covariance carried through the fit (the Panda cell: σ 1.3 %,
    a 3 % drift cannot be told from the identified model's error there and is not called one)."""
    wide = ScaleWitness(0.965, 0.002, 0.013)
    assert wide.std == pytest.approx(np.hypot(0.002, 0.013))
    assert wide.limit == pytest.approx(3 * wide.std) and not wide.beyond
    assert ScaleWitness(0.965, 0.002, 0.002).limit == DRIFT_TOLERANCE


def test_the_robot_covariance_is_carried_into_sigma(ur10, robot):
    """The witness's response to robot.yaml's parameter error: 100 × the covariance, 10 × model_std."""
    rec = _run_with_friction(ur10, 3, 1.0)
    base = effort_drift.robot_scale_on_run(robot, ur10, rec, _frame_only())
    robot.cov = robot.cov * 100
    try:
        wide = effort_drift.robot_scale_on_run(robot, ur10, rec, _frame_only())
    finally:
        robot.cov = robot.cov / 100
    assert base.plain.model_std > 0 and base.friction_free.model_std > 0
    assert wide.plain.model_std == pytest.approx(10 * base.plain.model_std, rel=1e-6)
    assert wide.friction_free.model_std == pytest.approx(10 * base.friction_free.model_std, rel=1e-6)
    assert wide.plain.a == base.plain.a and wide.friction_free.a == base.friction_free.a
