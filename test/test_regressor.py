"""Regressor, base parameters, friction columns and synthetic data: numbers against pinocchio and known truths."""

import numpy as np
import pinocchio as pin
import pytest

from payload_id_core.dynamics.base_params import BaseParameters, compute_base_parameters
from payload_id_core.dynamics.friction import KINDS, make_friction_model, rotor_inertia_columns
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor, rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

ROBOTS = ["ur10", "ur10e", "panda", "planar_2r"]


@pytest.fixture(scope="module", params=ROBOTS)
def model(request):
    return RobotModel.from_urdf(request.param)


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-np.pi, np.pi, (n, model.n)), 2 * rng.standard_normal((n, model.n)),
            5 * rng.standard_normal((n, model.n)))


def test_regressor_times_true_parameters_is_rnea(model):
    q, qd, qdd = _states(model, 40)
    y = rigid_body_regressor(model, q, qd, qdd)
    tau = np.array([model.rnea(*s) for s in zip(q, qd, qdd)])
    assert y.shape == (40, model.n, 10 * model.n)
    np.testing.assert_allclose(y @ model.standard_parameters(), tau, rtol=0, atol=1e-9)


def test_regressor_follows_a_tilted_gravity():
    model = RobotModel.from_urdf("ur10", gravity=[2.0, -1.0, -9.5])
    q, qd, qdd = _states(model, 10, seed=3)
    tau = np.array([model.rnea(*s) for s in zip(q, qd, qdd)])
    np.testing.assert_allclose(rigid_body_regressor(model, q, qd, qdd) @ model.standard_parameters(), tau, atol=1e-9)


def test_payload_regressor_matches_rnea_of_the_loaded_robot(model):
    frame = "tool0" if model.model.existFrame("tool0") else model.default_payload_frame
    phi_l = from_mass_com_inertia(2.5, [0.03, -0.02, 0.08], np.diag([0.02, 0.03, 0.015]))
    loaded = RobotModel.from_urdf(model.urdf_path, joint_names=model.joint_names)
    joint, placement = loaded.frame_in_joint(frame)
    payload_inertia = placement.act(pin.Inertia.FromDynamicParameters(phi_l))
    loaded.model.inertias[joint] = loaded.model.inertias[joint] + payload_inertia
    q, qd, qdd = _states(model, 20, seed=1)
    extra = np.array([loaded.rnea(*s) - model.rnea(*s) for s in zip(q, qd, qdd)])
    np.testing.assert_allclose(payload_regressor(model, frame, q, qd, qdd) @ phi_l, extra, atol=1e-9)


def test_payload_regressor_refuses_an_unknown_frame():
    with pytest.raises(PayloadIdError, match="not in the URDF"):
        payload_regressor(RobotModel.from_urdf("ur10"), "no_such_frame", np.zeros(6), np.zeros(6), np.zeros(6))


@pytest.mark.parametrize("name, count", [("ur10", 36), ("ur10e", 36), ("planar_2r", 6)])
def test_base_parameter_count(name, count):
    assert compute_base_parameters(RobotModel.from_urdf(name)).b == count


def test_base_parameters_regroup_every_standard_vector(model):
    base = compute_base_parameters(model)
    q, qd, qdd = _states(model, 30, seed=7)
    y = rigid_body_regressor(model, q, qd, qdd)
    rng = np.random.default_rng(0)
    for _ in range(3):
        phi = rng.standard_normal(10 * model.n)
        np.testing.assert_allclose(y @ phi, base.reduce(y) @ base.values(phi), atol=1e-9)
    # The base regressor has full column rank on generic data.
    assert np.linalg.matrix_rank(base.reduce(y).reshape(-1, base.b)) == base.b


def test_planar_2r_base_parameters_are_gaz_coefficients():
    """Gaz 2017 §IV: with a1 = 1 m the 2R's coefficients are ZZ1 + a1² m2, MX1 + a1 m2, MY1, ZZ2, MX2, MY2."""
    model = RobotModel.from_urdf("planar_2r")
    base = compute_base_parameters(model)
    assert base.names == ["mcx1 + m2", "mcy1", "Izz1 + m2", "mcx2", "mcy2", "Izz2"]
    pi = base.values(model.standard_parameters())
    # link frames at the joints: mcx1 = 3·0.4, Izz1 = 0.25 + 3·(0.4² + 0.01²)
    np.testing.assert_allclose(pi, [1.2 + 2, 0.03, 0.7303 + 2, 0.6, 0.04, 0.0416667 + 2 * (0.09 + 0.0004)], atol=1e-6)


def test_base_parameters_depend_on_gravity():
    """Tilting the base makes joint 1 feel gravity: more parameters become identifiable."""
    upright = compute_base_parameters(RobotModel.from_urdf("ur10")).b
    tilted = compute_base_parameters(RobotModel.from_urdf("ur10", gravity=[0, 4.0, -8.9])).b
    assert tilted > upright


def test_base_parameters_roundtrip_through_dict():
    base = compute_base_parameters(RobotModel.from_urdf("ur10"))
    again = BaseParameters.from_dict(base.to_dict(), base.standard_names)
    np.testing.assert_array_equal(again.independent, base.independent)
    np.testing.assert_allclose(again.K, base.K, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_friction_columns_reproduce_the_friction_torque(kind):
    names = ["a", "b"]
    fm = make_friction_model(kind, names)
    rng = np.random.default_rng(0)
    qd = rng.standard_normal((50, 2))
    temp = 25 + 10 * rng.random((50, 2))
    theta = rng.random(fm.n_params)
    cols = fm.columns(qd, temp)
    assert cols.shape == (50, 2, fm.n_params) and len(fm.param_names) == fm.n_params
    np.testing.assert_allclose(cols @ theta, fm.torque(theta, qd, temp), atol=1e-12)
    if fm.n_params:  # block diagonal: joint b's parameters never move joint a's torque
        k = fm.per_joint
        assert not cols[:, 0, k:].any() and not cols[:, 1, :k].any()


def test_nonlinear_friction_is_xu_equation_2():
    fm = make_friction_model("nonlinear", ["j"], alpha=0.3, sign_epsilon=0.0)
    qd = np.array([[-2.0], [0.5], [1.5]])
    fc, fv, b = 1.2, 4.0, -0.1
    expect = (fc + fv * np.abs(qd[:, 0]) ** 0.3) * np.sign(qd[:, 0]) + b
    np.testing.assert_allclose(fm.torque([fc, fv, b], qd)[:, 0], expect, atol=1e-12)


def test_temperature_model_needs_temperature():
    with pytest.raises(PayloadIdError, match="temperature"):
        make_friction_model("temperature", ["j"]).columns(np.ones((3, 1)))


def test_rotor_inertia_columns():
    qdd = np.array([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_allclose(rotor_inertia_columns(qdd) @ np.array([0.5, 2.0]), qdd * [0.5, 2.0])


def test_sum_of_sines_stays_within_limits_and_is_consistent():
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, 10.0, 500.0, seed=2)
    lim = model.limits
    assert t.size == 5000
    assert np.all(q >= np.maximum(lim.lower, -np.pi)) and np.all(q <= np.minimum(lim.upper, np.pi))
    assert np.all(np.abs(qd) <= lim.velocity)
    # velocities and accelerations are the derivatives of the positions
    np.testing.assert_allclose(np.gradient(q, t, axis=0)[5:-5], qd[5:-5], atol=2e-3)
    np.testing.assert_allclose(np.gradient(qd, t, axis=0)[5:-5], qdd[5:-5], atol=2e-2)


def test_synthetic_recording_adds_the_known_effects():
    model = RobotModel.from_urdf("planar_2r")
    t, q, qd, qdd = sum_of_sines(model, 4.0, 200.0, seed=1)
    fm = make_friction_model("linear", model.joint_names)
    theta_f = np.array([1.0, 0.5, 0.1, 0.8, 0.3, -0.2])
    phi_l = from_mass_com_inertia(1.5, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.1813 - 1.5 * 0.1]))
    rec = synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=theta_f, rotor_inertia=[0.2, 0.1],
                              payload=(phi_l, "tool0"), effort_scale=[2.0, 4.0], delay=0.01)
    qm = np.column_stack([np.interp(t - 0.01, t, q[:, j]) for j in range(2)])
    np.testing.assert_allclose(rec.joints.q, qm[:-1])
    np.testing.assert_allclose(rec.commanded[0].positions, q)
    k = 300
    qk, qdk = rec.joints.q[k:k + 1], rec.joints.qd[k:k + 1]
    qddk = np.array([[np.interp(t[k] - 0.01, t, qdd[:, j]) for j in range(2)]])
    expect = model.rnea(qk[0], qdk[0], qddk[0])
    expect += payload_regressor(model, "tool0", qk, qdk, qddk)[0] @ phi_l
    expect += np.array([0.2, 0.1]) * qddk[0]
    expect += fm.torque(theta_f, qdk)[0]
    np.testing.assert_allclose(rec.joints.tau[k] * [2.0, 4.0], expect, atol=1e-9)
