"""Offline robot identification on synthetic data generated with known parameters."""

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest
import yaml

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia, pseudo_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.robot_id import (
    RobotIdentification,
    fit_given_model,
    identify_effort_scale,
    identify_from_signals,
    validate_robot,
)
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.8, 0.8, 0.5, 0.2, 0.2, 0.1])  # N·m per joint
ALPHA = np.array([0.45, 0.35, 0.6, 0.7, 0.5, 0.4])
THETA_F = np.array([[4.0, 10.0, 0.3], [5.0, 12.0, -0.4], [3.0, 8.0, 0.2],
                    [1.0, 2.0, 0.05], [1.0, 2.0, -0.05], [0.8, 1.5, 0.02]]).reshape(-1)
IA = np.array([0.6, 0.6, 0.3, 0.05, 0.05, 0.05])


def _run(model, seed, duration=12.0, rate=200.0, friction=None, theta_f=THETA_F, noise=NOISE, **kw):
    friction = friction or make_friction_model("nonlinear", model.joint_names, alpha=ALPHA)
    t, q, qd, qdd = sum_of_sines(model, duration, rate, seed=seed)
    return synthetic_recording(model, t, q, qd, qdd, friction=friction, friction_params=theta_f,
                               rotor_inertia=IA, noise_std=noise, seed=seed, **kw)


def _true_theta(ident, model):
    pi = ident.base.values(model.standard_parameters()) + ident.rotor.absorbed @ IA
    return np.concatenate([pi, IA[ident.rotor.free], THETA_F])


@pytest.fixture(scope="module")
def identified(ur10):
    return fit_given_model(ur10, _run(ur10, seed=1), friction="nonlinear", estimator="wls", delay=0.0)


def test_identified_model_predicts_another_trajectory_at_the_noise_level(ur10, identified):
    rmse = validate_robot(identified, _run(ur10, seed=2, duration=10.0), delay=0.0)
    # noise alone gives RMSE = NOISE; a wrong model would add its error on top
    assert np.all(rmse < 1.08 * NOISE), (rmse, NOISE)
    assert np.all(rmse > 0.9 * NOISE)
    np.testing.assert_allclose(identified.sigma, NOISE, rtol=0.06)


def test_identified_parameters_match_the_truth_within_their_uncertainty(ur10, identified):
    truth = _true_theta(identified, ur10)
    z = (identified.theta - truth) / np.sqrt(np.diag(identified.cov))
    # cov is marginal over the identified α, so the friction coefficients are within it too
    assert np.abs(z).max() < 5.0, identified.theta_names[int(np.argmax(np.abs(z)))]
    assert identified.b == 36 and identified.condition_number < 1e3
    assert np.all(np.abs(identified.friction.shape[:, 0] - ALPHA) < 5 * identified.shape_std[:, 0])
    np.testing.assert_allclose(identified.friction.shape[:, 0], ALPHA, atol=0.04)
    v = np.linspace(-1.5, 1.5, 61)[:, None] * np.ones((1, 6))
    true_f = make_friction_model("nonlinear", ur10.joint_names, alpha=ALPHA).torque(THETA_F, v)
    assert np.all(np.abs(identified.friction_torque(v) - true_f).max(axis=0) < 0.5 * NOISE)


def test_with_alpha_known_every_parameter_is_within_its_uncertainty(ur10):
    ident = fit_given_model(ur10, _run(ur10, seed=1), friction="nonlinear", alpha=ALPHA, delay=0.0)
    z = (ident.theta - _true_theta(ident, ur10)) / np.sqrt(np.diag(ident.cov))
    assert np.abs(z).max() < 5.0, ident.theta_names[int(np.argmax(np.abs(z)))]


def test_nonlinear_friction_beats_linear_when_alpha_is_not_one(ur10):
    train, test = _run(ur10, seed=3), _run(ur10, seed=4, duration=8.0)
    lin = fit_given_model(ur10, train, friction="linear", delay=0.0, validate=test)
    nonlin = fit_given_model(ur10, train, friction="nonlinear", delay=0.0, validate=test)
    assert np.all(nonlin.validation_rmse < 1.08 * NOISE)
    # the linear model misfits the |q̇|^α shape on every joint
    assert np.all(lin.validation_rmse > 1.15 * nonlin.validation_rmse), (lin.validation_rmse, nonlin.validation_rmse)


def test_feasible_solution_is_consistent_when_ols_is_not(ur10):
    # 1.5 s at 40 Hz with heavy noise: OLS wanders outside the physically consistent set
    rec = _run(ur10, seed=5, duration=1.5, rate=40.0, noise=NOISE * 8)
    ols = fit_given_model(ur10, rec, friction="linear", estimator="ols", delay=0.0)
    assert ols.physically_consistent is False
    feas = fit_given_model(ur10, rec, friction="linear", estimator="feasible", delay=0.0)
    assert feas.physically_consistent is True
    psi = feas.standard_parameters
    for i in range(ur10.n):
        assert np.linalg.eigvalsh(pseudo_inertia(psi[10 * i:10 * i + 10])).min() > -1e-7
    assert np.all(psi[60:] >= -1e-9)                                   # rotor inertias
    assert np.all(feas.friction_params[feas.friction.nonnegative] >= -1e-9)
    # the feasible θ is exactly what its standard parameters imply
    np.testing.assert_allclose(feas.theta[:feas.n_inertial], feas.inertial_map @ psi, atol=1e-8)
    # and it fits the data almost as well as the unconstrained optimum
    assert np.all(feas.rmse < 1.3 * ols.rmse)


@pytest.mark.parametrize("robot", ["panda", "ur10"])
@pytest.mark.parametrize("estimator", ["wls", "feasible"])
def test_noise_free_data_are_recovered_exactly_by_wls_and_feasible(robot, estimator):
    """No noise: the OLS residual of every joint is rounding (σ_j = 0 on several joints), which
    WLS must not divide by; the weighted and the physically consistent fits both return the
    truth to rounding (θ_wls is consistent, so the SDP's optimum is θ_wls itself)."""
    model = RobotModel.from_urdf(robot)
    fm = make_friction_model("linear", model.joint_names)
    theta_f = np.tile([2.0, 5.0, 0.1], model.n)
    ia = np.linspace(0.05, 0.3, model.n)
    t, q, qd, qdd = sum_of_sines(model, 6.0, 100.0, seed=3)
    rec = synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=theta_f, rotor_inertia=ia)
    ident = fit_given_model(model, rec, friction="linear", estimator=estimator, delay=0.0)
    pi = ident.base.values(model.standard_parameters()) + ident.rotor.absorbed @ ia
    truth = np.concatenate([pi, ia[ident.rotor.free], theta_f])
    assert np.all(np.isfinite(ident.sigma)) and np.all(ident.sigma > 0)
    np.testing.assert_allclose(ident.theta, truth, rtol=0, atol=1e-9 * np.abs(truth).max())
    # The torques themselves, recomputed from θ (ident.rmse comes from the normal equations, whose
    # residual cancels only to ~sqrt(eps) of the torque scale).
    k = np.searchsorted(t, rec.joints.t)
    np.testing.assert_allclose(t[k], rec.joints.t, atol=1e-12)
    pred = ident.predict(q[k], qd[k], qdd[k], model=model)
    assert np.abs(pred - rec.joints.tau).max() < 1e-9 * np.abs(rec.joints.tau).max()


def test_robot_yaml_roundtrip_and_refusals(ur10, identified, tmp_path):
    path = tmp_path / "robot.yaml"
    identified.save(path)
    again = RobotIdentification.load(path, ur10)
    np.testing.assert_allclose(again.theta, identified.theta)
    np.testing.assert_allclose(again.friction.shape, identified.friction.shape)
    assert np.all(identified.shape_std > 0)
    np.testing.assert_allclose(again.shape_std, identified.shape_std)
    np.testing.assert_allclose(again.cov, identified.cov)
    np.testing.assert_allclose(again.base.K, identified.base.K)
    q, qd, qdd = (np.random.default_rng(0).standard_normal((5, 6)) for _ in range(3))
    np.testing.assert_allclose(again.predict(q, qd, qdd), identified.predict(q, qd, qdd), atol=1e-9)
    with pytest.raises(PayloadIdError, match="another URDF"):
        RobotIdentification.load(path, RobotModel.from_urdf("ur10e"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 1\nurdf: {}\n")
    with pytest.raises(PayloadIdError, match="not a valid robot.yaml"):
        RobotIdentification.load(bad, ur10)


def test_robot_yaml_notes_keep_their_codes_and_old_string_notes_still_read(ur10, identified, tmp_path):
    ident = dataclasses.replace(identified, notes=[Note(NoteCode.INFO, "a remark"), "a plain string"])
    assert [n.code for n in ident.notes] == [NoteCode.INFO, NoteCode.INFO]
    path = tmp_path / "robot.yaml"
    ident.save(path)
    d = yaml.safe_load(path.read_text())
    assert d["notes"] == [{"code": "info", "text": "a remark"}, {"code": "info", "text": "a plain string"}]
    assert RobotIdentification.load(path, ur10).notes == ident.notes
    d["notes"] = ["written before notes had codes"]
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(d))
    assert RobotIdentification.load(old, ur10).notes == [Note(NoteCode.INFO, "written before notes had codes")]


def test_robot_yaml_whose_gains_were_edited_after_identification_is_refused(ur10, identified, tmp_path):
    """The parameters are torques in the identification's gain units: an effort_scale edited alone would
    scale every payload (a 15 % edit gave 4.49 kg for 2.805 kg on the real UR10e, quality ok)."""
    path = tmp_path / "robot.yaml"
    dataclasses.replace(identified, effort_scale=np.full(6, 10.0)).save(path)
    assert RobotIdentification.load(path, ur10).effort_scale.tolist() == [10.0] * 6
    d = yaml.safe_load(path.read_text())
    d["effort_scale"] = [11.5] * 6
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="not the drive gains its parameters were identified with"):
        RobotIdentification.load(edited, ur10)
    del d["effort"]["identified_with"]        # a file written before the gains were recorded twice
    older = tmp_path / "older.yaml"
    older.write_text(yaml.safe_dump(d))
    assert RobotIdentification.load(older, ur10).effort_scale.tolist() == [11.5] * 6


def test_a_misspelt_option_is_refused_by_name(ur10):
    t, q, qd, qdd = sum_of_sines(ur10, 2.0, 50.0, seed=7)
    with pytest.raises(TypeError, match="estimater"):
        identify_from_signals(ur10, q, qd, qdd, np.zeros_like(q), estimater="ols")


def test_unexcited_joint_is_named_with_the_condition_number(ur10):
    t, q, qd, qdd = sum_of_sines(ur10, 6.0, 100.0, seed=6)
    q[:, 5], qd[:, 5], qdd[:, 5] = 0.3, 0.0, 0.0   # wrist 3 never moves
    tau = np.array([ur10.rnea(*s) for s in zip(q, qd, qdd)])
    with pytest.raises(PayloadIdError, match=r"unexcited.*condition number|excite parameters") as err:
        identify_from_signals(ur10, q, qd, qdd, tau, friction="linear")
    assert "wrist_3_joint" in str(err.value) or "6" in str(err.value)


def test_nan_samples_are_refused(ur10):
    t, q, qd, qdd = sum_of_sines(ur10, 4.0, 100.0, seed=7)
    tau = np.array([ur10.rnea(*s) for s in zip(q, qd, qdd)])
    tau[10, 2] = np.nan
    with pytest.raises(PayloadIdError, match="NaN.*elbow_joint"):
        identify_from_signals(ur10, q, qd, qdd, tau)


@pytest.mark.parametrize("kind, theta_f", [
    ("stribeck", np.tile([2.0, 3.5, 6.0, 0.1], 2)),
    ("temperature", np.tile([2.0, 12.0, -0.15, 0.1], 2)),
])
def test_stribeck_and_temperature_models_recover_their_shape(kind, theta_f):
    model = RobotModel.from_urdf("planar_2r")
    shape = {"stribeck": [[0.08], [0.08]], "temperature": [[3.0, 0.8], [3.0, 0.8]]}[kind]
    fm = make_friction_model(kind, model.joint_names, shape=shape)
    t, q, qd, qdd = sum_of_sines(model, 20.0, 200.0, seed=8)
    temp = 25.0 + 20.0 * (t / t[-1])[:, None] * np.ones((1, 2))    # the drives warm up
    noise = np.array([0.1, 0.05])
    rec = synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=theta_f, noise_std=noise,
                              temperature=temp, seed=8)
    ident = fit_given_model(model, rec, friction=kind, delay=0.0)
    np.testing.assert_allclose(ident.friction.shape, shape, rtol=0.1)
    assert np.all(np.abs(ident.friction.shape - shape) < 5 * ident.shape_std)
    np.testing.assert_allclose(ident.friction_params, theta_f, rtol=0.1, atol=0.05)
    assert np.all(ident.rmse < 1.05 * noise)


def test_effort_scale_from_a_known_payload_mass(ur10):
    k_true = np.array([11.0, 12.5, 10.0, 4.0, 4.2, 3.9])
    phi_l = from_mass_com_inertia(6.0, [0.01, -0.02, 0.05], np.diag([0.03, 0.03, 0.02]))
    unloaded = _run(ur10, seed=9, duration=10.0, noise=NOISE, effort_scale=k_true)
    loaded = _run(ur10, seed=10, duration=10.0, noise=NOISE, effort_scale=k_true, payload=(phi_l, "tool0"))
    fr = make_friction_model("nonlinear", ur10.joint_names, alpha=ALPHA)
    k, k_std = identify_effort_scale(ur10, unloaded, loaded, 6.0, "tool0", friction=fr, delay=0.0)
    np.testing.assert_allclose(k, k_true, rtol=0.02)
    assert np.all(np.abs(k - k_true) < 5 * k_std + 1e-3)
    with pytest.raises(PayloadIdError, match="not in the URDF"):
        identify_effort_scale(ur10, unloaded, loaded, 6.0, "no_frame", delay=0.0)


def test_reported_std_matches_the_scatter_over_noise_seeds_with_alpha_identified(ur10):
    """cov must describe the real scatter of θ̂ although α is searched from the same data: over 12 noise
    seeds on one trajectory, the errors in units of the reported std have an RMS within a factor 1.5
    of 1 for the base parameters, the friction coefficients and α (whose std robot.yaml reports).
    A covariance conditional on α under-reports Fc and Fv up to 20×."""
    t, q, qd, qdd = sum_of_sines(ur10, 12.0, 200.0, seed=1)
    fm = make_friction_model("nonlinear", ur10.joint_names, alpha=ALPHA)
    tau0 = rigid_body_regressor(ur10, q, qd, qdd) @ ur10.standard_parameters() + IA * qdd + fm.torque(THETA_F, qd)
    z, z_alpha = [], []
    for seed in range(12):
        tau = tau0 + NOISE * np.random.default_rng(100 + seed).standard_normal(tau0.shape)
        ident = identify_from_signals(ur10, q, qd, qdd, tau, friction="nonlinear", check_consistency=False)
        z.append((ident.theta - _true_theta(ident, ur10)) / np.sqrt(np.diag(ident.cov)))
        z_alpha.append((ident.friction.shape[:, 0] - ALPHA) / ident.shape_std[:, 0])
    z, z_alpha = np.array(z), np.array(z_alpha)
    groups = {"base": z[:, :ident.b], "friction": z[:, ident.n_inertial:], "alpha": z_alpha}
    rms = {k: float(np.sqrt(np.mean(v ** 2))) for k, v in groups.items()}
    worst = {k: float(np.sqrt(np.mean(v ** 2, axis=0)).max()) for k, v in groups.items()}
    for k in groups:
        assert 1 / 1.5 < rms[k] < 1.5, (k, rms, worst)
        assert worst[k] < 2.0, (k, rms, worst)     # no single parameter's std far too small either


def test_robot_yaml_records_when_and_how_warm_the_drives_were(tmp_path):
    """Issue 29 item 5: drive gains and friction drift as the drives warm up; robot.yaml says when the robot was
    identified, when its run was recorded (wall-clock stamps) and the drives' mean temperature in it."""
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, 6.0, 100.0, seed=4)
    start = 1.78e9                                              # 2026-05-28, seconds since the epoch
    temperature = 30.0 + np.arange(model.n)[None, :] + 0.5 * np.sin(t)[:, None]
    rec = synthetic_recording(model, t + start, q, qd, qdd, friction=make_friction_model("linear", model.joint_names),
                              friction_params=np.tile([3.0, 2.0, 0.1], model.n), noise_std=0.1, seed=4,
                              temperature=temperature)
    before = datetime.now(UTC)
    ident = fit_given_model(model, rec, friction="linear", delay=0.0)
    path = tmp_path / "robot.yaml"
    ident.save(path)
    back = RobotIdentification.load(path, model)
    assert before.replace(microsecond=0) <= datetime.fromisoformat(back.identified_at) <= datetime.now(UTC)
    assert back.recorded_at == datetime.fromtimestamp(start, UTC).isoformat(timespec="seconds")
    np.testing.assert_allclose(back.drive_temperature, 30.0 + np.arange(model.n), atol=0.1)
    # A simulator's own clock says nothing about when: no recording time, and no temperature where none is reported.
    sim = fit_given_model(model, synthetic_recording(model, t, q, qd, qdd, noise_std=0.1, seed=4), friction="linear",
                         delay=0.0)
    assert sim.recorded_at == "" and sim.drive_temperature is None
    assert sim.to_dict()["identified"]["recorded_at"] is None


def test_robot_yaml_keeps_a_sign_epsilon_other_than_the_default(ur10, identified, tmp_path):
    # The ε the friction was identified with travels with it: a payload fit or the monitor reading robot.yaml
    # predicts the friction near rest (|q̇| ≲ 3ε) exactly as the identification did.
    smoother = dataclasses.replace(identified, friction=dataclasses.replace(identified.friction, sign_epsilon=0.005))
    path = tmp_path / "robot.yaml"
    smoother.save(path)
    again = RobotIdentification.load(path, ur10)
    assert again.friction.sign_epsilon == 0.005
    qd = np.linspace(-0.02, 0.02, 9)[:, None] * np.ones(ur10.n)
    q = qdd = np.zeros_like(qd)
    np.testing.assert_allclose(again.predict(q, qd, qdd), smoother.predict(q, qd, qdd), atol=1e-9)
    assert np.max(np.abs(again.predict(q, qd, qdd) - identified.predict(q, qd, qdd))) > 0.01
