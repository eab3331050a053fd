"""The gear friction robot.yaml leaves out, counted as model error of the payload fits (issue 13: never a
confident wrong answer; robot_id/gear_friction.UnmodelledGear, payload/covariance_extra.gear_model_error).

The simulated cell's drives lose μ = 0.02 of the torque they carry. identify-robot leaves that out by default
(real data: gear_friction.py), so the robot model's Coulomb levels are those of its own run. A cell identifies
the robot once and payloads on other motions: robot from ur10_payload, payload on ur10_payload_fast put every
seed's mass 1.0-1.5 % off at 3-5σ, declared converged. The identification now keeps what it left out, and the
payload fits add the error it predicts on their motion to their covariance.
"""

import dataclasses

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.covariance_extra import online_covariance_extra
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification, fit_given_model

MASS = 3.5
FRAME = "tool0"
MU_CELL = 0.02


@pytest.fixture(scope="module")
def cross():
    """(model, robot identified on ur10_payload's unloaded run (seed 11, default: no gear friction), the unloaded
    ur10_payload_fast run (seed 12), loaded ur10_payload_fast runs of seeds 100-102)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    m = RobotModel.from_urdf("ur10")
    fast = load_trajectory("ur10_payload_fast")
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, [0.03, -0.02, 0.08], np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    robot = fit_given_model(m, simulate(m, load_trajectory("ur10_payload"), None, "ur10", seed=11),
                           friction="nonlinear")
    return (m, robot, simulate(m, fast, None, "ur10", seed=12),
            [simulate(m, fast, truth, "ur10", seed=s) for s in (100, 101, 102)])


def test_the_identification_keeps_the_gear_friction_it_leaves_out(cross):
    m, robot, _, _ = cross
    assert robot.gear is None
    g = robot.unmodelled_gear
    assert g is not None
    np.testing.assert_allclose(g.mu[1:3], MU_CELL, atol=0.004)
    assert np.all(g.mu[[0, 3, 4, 5]] == 0)       # not determined there (gear_friction.kept)
    assert g.theta_shift.shape == robot.theta.shape and np.all(np.isfinite(g.theta_shift))


def test_the_error_it_predicts_is_the_robot_models_error_on_another_motion(cross):
    """On the unloaded ur10_payload_fast run the model identified on ur10_payload misses the drives' friction where
    their torques differ from its run's; the predicted error takes most of that off the shoulder and elbow."""
    m, robot, unloaded, _ = cross
    sig = method_signals(unloaded, m, PayloadOptions(), robot)
    y = robot.regressor(sig.q, sig.qd, sig.qdd)
    residual = sig.tau - y @ robot.theta
    assert robot.unmodelled_gear is not None
    predicted = robot.unmodelled_gear.torque_error(y, robot.theta, sig.qd, robot.friction.sign_epsilon)
    # the slowly varying part (0.2 s means): the noise (1.6-2 N·m) hides it sample by sample
    k = 100
    n = residual.shape[0] // k * k
    slow = residual[:n].reshape(-1, k, 6).mean(axis=1)
    slow_left = (residual - predicted)[:n].reshape(-1, k, 6).mean(axis=1)
    before, after = np.sqrt(np.mean(slow**2, axis=0)), np.sqrt(np.mean(slow_left**2, axis=0))
    assert np.all(after[1:3] < 0.6 * before[1:3]), (before, after)


def test_robot_yaml_keeps_it_and_refuses_a_damaged_one(cross, tmp_path):
    m, robot, _, _ = cross
    path = tmp_path / "robot.yaml"
    robot.save(path)
    back = RobotIdentification.load(path, m)
    assert back.unmodelled_gear is not None and robot.unmodelled_gear is not None
    np.testing.assert_array_equal(back.unmodelled_gear.mu, robot.unmodelled_gear.mu)
    np.testing.assert_array_equal(back.unmodelled_gear.theta_shift, robot.unmodelled_gear.theta_shift)
    # Written before it existed: none, and the payload fits add nothing.
    d = robot.to_dict()
    del d["friction"]["gear_unmodelled"]
    assert RobotIdentification.from_dict(d, m, "robot.yaml").unmodelled_gear is None
    p = robot.theta.size
    good = robot.to_dict()["friction"]["gear_unmodelled"]
    for bad in (5, {"mu": [0.02] * 6}, {**good, "theta_shift": [0.0] * (p - 1)},
                {**good, "theta_shift": [float("nan")] * p}, {**good, "theta_shift": "x"},
                {**good, "mu_std": [-1.0] * 6}, {**good, "mu": [0.02, -0.1, 0, 0, 0, 0]},
                {**good, "theta_shift": [1e200] * p}):
        d = robot.to_dict()
        d["friction"]["gear_unmodelled"] = bad
        with pytest.raises(PayloadIdError, match="robot.yaml"):
            RobotIdentification.from_dict(d, m, "robot.yaml")
    d = robot.to_dict()
    d["friction"]["gear"] = {"mu": [0.0, 0.02, 0.02, 0.0, 0.0, 0.0], "mu_std": [None] * 6}
    with pytest.raises(PayloadIdError, match="both gear and gear_unmodelled"):
        RobotIdentification.from_dict(d, m, "robot.yaml")


@pytest.mark.parametrize("index", [0, 1, 2])
def test_on_another_motion_the_mass_error_is_within_the_sigma_and_not_declared(cross, index):
    m, robot, _, loaded = cross
    rec = loaded[index]
    for method in ("difference-rls", "khalil-1", "khalil-2"):
        est = identify_payload(method, m, robot, rec, FRAME)
        err, std = est.mass - MASS, est.readable_std()[0]
        assert abs(err) <= 2.0 * std, (method, err, std)
        assert has_note(est.notes, NoteCode.PAYLOAD_GEAR_MODEL_ERROR), method
        if method == "difference-rls":
            assert not est.converged
    # What it prevents: the same robot.yaml written before (no gear_unmodelled) gives a mass wrong beyond its σ.
    # On two of the three runs the effort-drift check's masked-drift witness (its friction-free scale reads the
    # unmodelled gear loss as efforts ~1.8 % low) now flags it suspect as well; on the third it is converged and ok.
    old = dataclasses.replace(robot, unmodelled_gear=None)
    est = identify_payload("difference-rls", m, old, rec, FRAME)
    assert abs(est.mass - MASS) > 3.0 * est.readable_std()[0] and abs(est.mass - MASS) > 0.008 * MASS
    assert not has_note(est.notes, NoteCode.PAYLOAD_GEAR_MODEL_ERROR)
    caught = any(n.code is NoteCode.PAYLOAD_QUALITY and "with each joint's friction free" in n.text for n in est.notes)
    assert caught or (est.converged and est.quality is Quality.OK), est.notes


def test_the_response_is_the_weighted_fits_estimate(cross):
    """gear_model_error's solve is weighted_lstsq's estimate without its covariance (what a fit moves by), its own
    rank truncation the fit's: the two duplicated columns share their direction equally (minimum norm), with no
    `identifiable` to pass (the argument it took was never read, h198)."""
    from payload_id_core.payload.linear import weighted_lstsq, weighted_response  # noqa: PLC0415

    rng = np.random.default_rng(3)
    W, y, sigma = rng.normal(size=(200, 3, 5)), rng.normal(size=(200, 3)), np.array([0.5, 1.0, 2.0])
    W[..., 4] = W[..., 3]                                   # one undetermined direction: minimum norm alike
    fit = weighted_lstsq(W, y, sigma=sigma)
    assert not fit.identifiable.all()
    response = weighted_response(W, y, sigma)
    np.testing.assert_allclose(response, fit.x, rtol=1e-10)
    assert response[3] == pytest.approx(response[4], rel=1e-9)


def test_on_its_own_motion_the_term_is_small(cross):
    """A payload run on the identification's own excitation: over the whole run the error the model makes there
    is what its fit left orthogonal to its columns, and the term stays below a quarter of a percent."""
    from payload_id_core.sim import simulate  # noqa: PLC0415

    m, robot, _, _ = cross
    traj = load_trajectory("ur10_payload")
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, [0.03, -0.02, 0.08], np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    sig = method_signals(simulate(m, traj, truth, "ur10", seed=100), m, PayloadOptions(), robot)
    with_term, *_ = online_covariance_extra(m, robot, FRAME, sig.q, sig.qd, sig.qdd, sig.tau, load_friction=True)
    without, *_ = online_covariance_extra(m, dataclasses.replace(robot, unmodelled_gear=None), FRAME, sig.q, sig.qd,
                                            sig.qdd, sig.tau, load_friction=True)
    assert 0.0 < np.sqrt(with_term[0, 0] - without[0, 0]) < 0.0025 * MASS
