"""Wrist F/T sensor: measurement model, Duan §2 static and Newton–Euler dynamic identification,
compensation, the Recording path (alignment, saturation, frames) and agreement with joint torques.

Simulated with pinocchio: a UR10 with a 2.5 kg tool behind a sensor at tool0 with offsets (Duan
2022 Table 2), a tilted base and Duan's sensor resolution (0.1 N / 0.02 N·m) as noise.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft import (
    Compensator,
    FtParameters,
    compensate,
    compensate_batch,
    ft_parameters_from_payload,
    identify_ft,
    identify_payload_ft,
    load_ft_parameters,
    residual_rmse,
    resolve_sensor_frame,
    save_ft_parameters,
)
from payload_id_core.ft.identify import fit_ft
from payload_id_core.ft.kinematics import (
    gravity_wrench_regressor,
    payload_transform,
    sensor_motion,
    sensor_mount_from_config,
    wrench_regressor,
)
from payload_id_core.notes import NoteCode, has_note, notes_with
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.resources import bundled_dir
from payload_id_core.signals.recording import CommandedTrajectory, WrenchSamples
from payload_id_core.sim import simulate
from payload_id_core.sim.profile import SimProfile
from payload_id_core.testing.ft_data import DUAN_NOISE_STD, sum_of_sines, synthetic_wrench
from payload_id_core.testing.synthetic import synthetic_recording

Q0 = np.array([0.3, -1.2, 1.3, -1.0, -1.4, 0.2])
WRIST = [3, 4, 5]
OFFSET = np.array([-0.6672, 0.8565, 0.3538, 0.0228, 0.0084, 0.0080])   # Duan 2022 Table 2
TILT = (np.radians(0.8), np.radians(-0.5))
PHI_TOOL0 = from_mass_com_inertia(2.5, [0.03, -0.01, 0.08],
                                  np.array([[0.012, 0.001, 0.0], [0.001, 0.015, -0.0005], [0.0, -0.0005, 0.008]]))


@pytest.fixture(scope="module")
def truth(ur10):
    return FtParameters(resolve_sensor_frame(ur10, "tool0"), PHI_TOOL0, OFFSET, TILT)


@pytest.fixture(scope="module")
def duan_excitation(ur10):
    """Duan §4.3: 10 s, joints 4–6 only, 100 Hz."""
    return sum_of_sines(ur10, 10.0, 100.0, joints=WRIST, q0=Q0, speed=0.6, seed=1)


@pytest.fixture(scope="module")
def fast_validation(ur10):
    """All joints, faster (0.2 Hz base): another trajectory than the identification one."""
    return sum_of_sines(ur10, 10.0, 100.0, q0=Q0, speed=0.7, base_frequency_hz=0.2, seed=7)


def _z(est, std, true):
    return np.abs(np.asarray(est) - true) / np.asarray(std)


def test_wrench_regressors_match_pinocchio():
    rng = np.random.default_rng(0)
    v, a = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    ours = wrench_regressor(v, a)
    for k in range(5):
        np.testing.assert_allclose(ours[k], pin.bodyRegressor(pin.Motion(v[k]), pin.Motion(a[k])), atol=1e-12)
    inertia = pin.Inertia.Random()
    g = rng.standard_normal(3)
    np.testing.assert_allclose(gravity_wrench_regressor(g[None])[0] @ inertia.toDynamicParameters(),
                               (inertia * pin.Motion(g, np.zeros(3))).vector, atol=1e-12)


def test_sensor_reads_what_the_joints_carry(ur10, fast_validation):
    """Independent physics check of signs, gravity and inertia: bolting the payload onto the last body
    changes the joint torques by J_Sᵀ f, f = the wrench the sensor applies to the payload = −reading."""
    params = FtParameters(resolve_sensor_frame(ur10, "tool0"), PHI_TOOL0, np.zeros(6), (0.0, 0.0))
    _, q, qd, qdd = (x[::50] for x in fast_validation)
    reading = compensate_batch(ur10, params, q, qd, qdd, np.zeros((len(q), 6)))  # = payload wrench
    loaded = ur10.model.copy()
    joint, placement = ur10.frame_in_joint("tool0")
    loaded.inertias[joint] = loaded.inertias[joint] + placement.act(pin.Inertia.FromDynamicParameters(PHI_TOOL0))
    d0, d1 = ur10.model.createData(), loaded.createData()
    fid = ur10.model.getFrameId("tool0")
    for k in range(len(q)):
        dtau = pin.rnea(loaded, d1, q[k], qd[k], qdd[k]) - pin.rnea(ur10.model, d0, q[k], qd[k], qdd[k])
        jac = pin.computeFrameJacobian(ur10.model, d0, q[k], fid, pin.LOCAL)
        np.testing.assert_allclose(dtau, jac.T @ reading[k], atol=1e-9)


def test_static_identification_recovers_offsets_tilt_mass_com(ur10, truth, duan_excitation):
    """Duan §2 on 200 static poses along the excitation path."""
    _, q, _, _ = duan_excitation
    q = q[::5]
    zero = np.zeros_like(q)
    force, torque = synthetic_wrench(ur10, truth, q, zero, zero, seed=3)
    fit, duan = fit_ft(sensor_motion(ur10, truth.sensor, q, zero, zero), force, torque, 9.81, mode="static")
    std = np.sqrt(np.diag(fit.cov))
    assert np.all(_z(fit.phi[:4], std[:4], PHI_TOOL0[:4]) < 4)
    assert np.all(_z(fit.offset, std[4:10], OFFSET) < 4)
    assert np.all(_z(fit.tilt, std[10:], TILT) < 4)
    assert abs(fit.phi[0] - 2.5) < 0.01 and np.abs(fit.phi[1:4] / fit.phi[0] - [0.03, -0.01, 0.08]).max() < 5e-4
    assert np.abs(np.degrees(fit.tilt) - np.degrees(TILT)).max() < 0.05
    assert np.abs(fit.offset[:3] - OFFSET[:3]).max() < 0.05 and np.abs(fit.offset[3:] - OFFSET[3:]).max() < 0.005
    # The paper's closed form lands close to the ML refinement on static data.
    assert abs(duan.mass - 2.5) < 0.02 and np.abs(duan.com - [0.03, -0.01, 0.08]).max() < 1e-3
    assert np.abs(np.degrees(duan.tilt) - np.degrees(TILT)).max() < 0.1


def test_dynamic_identification_recovers_all_parameters(ur10, truth, duan_excitation):
    """Duan's 10 s joints-4–6 design, fast: all 10 parameters, offsets and tilt within 4 std."""
    _, q, qd, qdd = duan_excitation
    motion = sensor_motion(ur10, truth.sensor, q, qd, qdd)
    force, torque = synthetic_wrench(ur10, truth, q, qd, qdd, seed=4)
    fit, _ = fit_ft(motion, force, torque, 9.81, mode="dynamic")
    std = np.sqrt(np.diag(fit.cov))
    assert np.all(_z(fit.phi, std[:10], PHI_TOOL0) < 4), _z(fit.phi, std[:10], PHI_TOOL0)
    assert np.all(_z(fit.offset, std[10:16], OFFSET) < 4)
    assert np.all(_z(fit.tilt, std[16:], TILT) < 4)
    np.testing.assert_allclose(fit.sigma, DUAN_NOISE_STD, rtol=0.1)
    # Inertia about the tool's CoM to within 10 % of its largest moment.
    assert np.abs(fit.phi[4:] - PHI_TOOL0[4:]).max() < 0.1 * 0.015 + 1e-3


def test_reported_std_match_the_scatter_over_noise_draws(ur10, truth, duan_excitation):
    """The covariance is real: over 25 noise draws, the spread of the estimates matches the reported std."""
    _, q, qd, qdd = duan_excitation
    motion = sensor_motion(ur10, truth.sensor, q, qd, qdd)
    clean = np.hstack(synthetic_wrench(ur10, truth, q, qd, qdd, noise_std=0.0))
    rng = np.random.default_rng(11)
    est, stds = [], []
    for _ in range(25):
        noisy = clean + rng.standard_normal(clean.shape) * DUAN_NOISE_STD
        fit, _ = fit_ft(motion, noisy[:, :3], noisy[:, 3:], 9.81, mode="dynamic")
        est.append(np.concatenate([fit.phi, fit.offset, fit.tilt]))
        stds.append(np.sqrt(np.diag(fit.cov)))
    ratio = np.std(est, axis=0, ddof=1) / np.mean(stds, axis=0)
    assert np.all((ratio > 0.55) & (ratio < 1.6)), ratio
    assert 0.8 < np.median(ratio) < 1.25


def test_compensation_within_noise_while_gravity_only_leaves_inertia(ur10, truth, duan_excitation, fast_validation):
    _, q, qd, qdd = duan_excitation
    force, torque = synthetic_wrench(ur10, truth, q, qd, qdd, seed=5)
    fit, _ = fit_ft(sensor_motion(ur10, truth.sensor, q, qd, qdd), force, torque, 9.81, mode="dynamic")
    est = FtParameters(truth.sensor, fit.phi, fit.offset, tuple(fit.tilt))
    _, qv, qdv, qddv = fast_validation
    meas = np.hstack(synthetic_wrench(ur10, truth, qv, qdv, qddv, seed=6))
    rmse = {k: np.array(v) for k, v in residual_rmse(ur10, est, qv, qdv, qddv, meas).items()}
    print("validation RMSE per axis [Fx Fy Fz Tx Ty Tz]:", {k: np.round(v, 4).tolist() for k, v in rmse.items()})
    # Full compensation leaves the sensor noise (std 0.1 N / 0.02 N·m) ...
    assert np.all(rmse["full"] < 1.15 * DUAN_NOISE_STD)
    # ... gravity-only compensation (Duan §2) leaves the payload's inertial wrench, far above it.
    assert rmse["gravity_only"][:3].max() > 10 * DUAN_NOISE_STD[0]
    assert rmse["gravity_only"][3:].max() > 5 * DUAN_NOISE_STD[3]
    assert np.all(rmse["offset_only"][:3] > rmse["gravity_only"][:3])


def test_single_sample_compensation_matches_batch_and_finds_contact(ur10, truth, fast_validation):
    _, q, qd, qdd = (x[::20] for x in fast_validation)
    contact = np.array([3.0, -2.0, 5.0, 0.1, 0.2, -0.05])
    meas = np.hstack(synthetic_wrench(ur10, truth, q, qd, qdd, noise_std=0.0,
                                      external=np.tile(contact, (len(q), 1))))
    batch = compensate_batch(ur10, truth, q, qd, qdd, meas)
    np.testing.assert_allclose(batch, np.tile(contact, (len(q), 1)), atol=1e-9)
    comp = Compensator(ur10, truth)
    for k in range(len(q)):
        np.testing.assert_allclose(comp(q[k], qd[k], qdd[k], meas[k]), batch[k], atol=1e-9)
        np.testing.assert_allclose(compensate(ur10, truth, q[k], qd[k], qdd[k], meas[k]), batch[k], atol=1e-9)
    grav_only = Compensator(ur10, truth, inertial=False)
    np.testing.assert_allclose(grav_only(q[3], qd[3], qdd[3], meas[3]),
                               compensate_batch(ur10, truth, q[3:4], qd[3:4], qdd[3:4], meas[3:4], inertial=False)[0],
                               atol=1e-9)


def _recording_with_wrench(model, truth, t, q, qd, qdd, *, delay=0.0, frame_id="tool0", seed=0, time_shift=0.0):
    """Joint states at the trajectory rate, F/T readings at the same rate but offset by half a sample."""
    rec = synthetic_recording(model, t, q, qd, qdd, delay=delay, noise_std=0.05, seed=seed)
    tw = rec.joints.t + 0.5 * (t[1] - t[0])
    ts = [np.interp(tw - delay, t, x[:, j]) for x in (q, qd, qdd) for j in range(model.n)]
    qw, qdw, qddw = (np.column_stack(ts[i * model.n:(i + 1) * model.n]) for i in range(3))
    force, torque = synthetic_wrench(model, truth, qw, qdw, qddw, seed=seed + 1)
    rec.wrench = WrenchSamples(tw + time_shift, frame_id, force, torque)
    return rec


@pytest.fixture(scope="module")
def recording(ur10, truth):
    t, q, qd, qdd = sum_of_sines(ur10, 10.0, 250.0, joints=WRIST, q0=Q0, speed=0.6, seed=2)
    return _recording_with_wrench(ur10, truth, t, q, qd, qdd, delay=0.004, seed=3)


def test_identify_payload_ft_from_recording_in_another_payload_frame(ur10, truth, recording):
    """Sensor at tool0, payload expressed in wrist_3_link, commanded motion with a 4 ms controller delay."""
    x_sp = payload_transform(ur10, truth.sensor, "wrist_3_link")
    phi_true = np.linalg.solve(x_sp, PHI_TOOL0)
    ident = identify_ft(ur10, recording, "wrist_3_link")
    est = ident.payload
    assert est.frame == "wrist_3_link" and est.method == "ft" and est.identifiable.all()
    std = np.sqrt(np.diag(est.covariance))
    assert np.all(_z(est.phi, std, phi_true) < 4), _z(est.phi, std, phi_true)
    assert abs(est.mass - 2.5) < 0.01
    assert np.all(_z(ident.offset, ident.offset_std, OFFSET) < 4)
    assert np.all(_z(ident.tilt, ident.tilt_std, TILT) < 4)
    assert ident.counts["used"] >= 2400 and ident.counts["readings_saturated"] == 0
    assert np.all(np.array(ident.fit_rmse["full"]) < 1.2 * DUAN_NOISE_STD)
    assert len(notes_with(est.notes, NoteCode.FT_SUMMARY)) == 4       # offsets, tilt, noise, sample counts
    assert has_note(est.notes, NoteCode.FT_RANGE_UNKNOWN) and not has_note(est.notes, NoteCode.FT_SATURATED)
    # The registry entry returns the same PayloadEstimate.
    np.testing.assert_allclose(identify_payload_ft(ur10, recording, "wrist_3_link").phi, est.phi)


def test_measured_source_and_validation_recording(ur10, truth, recording):
    t, q, qd, qdd = sum_of_sines(ur10, 6.0, 250.0, q0=Q0, speed=0.7, base_frequency_hz=0.25, seed=8)
    validation = _recording_with_wrench(ur10, truth, t, q, qd, qdd, seed=9)
    ident = identify_ft(ur10, recording, "tool0", source="measured", validation=validation)
    assert abs(ident.payload.mass - 2.5) < 0.02
    full, grav = np.array(ident.validation_rmse["full"]), np.array(ident.validation_rmse["gravity_only"])
    assert np.all(full < 1.5 * DUAN_NOISE_STD) and grav[:3].max() > 10 * DUAN_NOISE_STD[0]


def test_static_mode_from_held_poses_reports_mass_and_com_only(ur10, truth):
    """Duan §2 through the Recording path: 40 poses held 0.5 s each; inertia reported as unknown.

    (Slow motion is not enough for the tilt: at 0.3 rad/s the tool's acceleration biases V by 0.1°,
    12 standard deviations. Static mode wants held poses.)"""
    _, q_path, _, _ = sum_of_sines(ur10, 10.0, 4.0, joints=WRIST, q0=Q0, speed=0.6, seed=2)
    q = np.repeat(q_path[:40], 50, axis=0)
    t = np.arange(len(q)) / 100.0
    zero = np.zeros_like(q)
    rec = synthetic_recording(ur10, t, q, zero, zero)
    rec.wrench = WrenchSamples(t, "tool0", *synthetic_wrench(ur10, truth, q, zero, zero, seed=5))
    ident = identify_ft(ur10, rec, "tool0", mode="static", delay=0.0)
    c = ident.counts
    assert c["used"] == c["joint_samples"] - c["dropped_by_conditioning"]
    assert c["dropped_moving"] == 0 and c["used"] > 1990
    est = ident.payload
    assert est.identifiable.tolist() == [True] * 4 + [False] * 6
    d = est.to_dict()
    assert d["inertia"]["ixx"] is None and abs(d["mass"] - 2.5) < 0.01
    assert np.abs(np.array(d["com"]) - [0.03, -0.01, 0.08]).max() < 5e-4
    assert np.all(_z(ident.tilt, ident.tilt_std, TILT) < 4) and np.all(_z(ident.offset, ident.offset_std, OFFSET) < 4)
    assert np.abs(np.degrees(ident.tilt) - np.degrees(TILT)).max() < 0.05


def test_static_mode_refuses_moving_data(ur10, recording):
    with pytest.raises(PayloadIdError, match="held poses"):
        identify_ft(ur10, recording, "tool0", mode="static")


def test_saturated_readings_are_dropped_and_counted(ur10, truth, recording):
    rec = _recording_with_wrench(ur10, truth, *sum_of_sines(ur10, 10.0, 250.0, joints=WRIST, q0=Q0, speed=0.6,
                                                            seed=2), delay=0.004, seed=3)
    bad = np.arange(100, 2400, 97)
    rec.wrench.force[bad] = [0.0, 0.0, 300.0]        # clipped at a 300 N range: garbage if used
    ident = identify_ft(ur10, rec, "tool0", force_range=300.0, torque_range=25.0)
    assert ident.counts["readings_saturated"] == bad.size
    assert ident.counts["dropped_saturated"] >= bad.size
    assert has_note(ident.payload.notes, NoteCode.FT_SATURATED)
    assert not has_note(ident.payload.notes, NoteCode.FT_RANGE_UNKNOWN)
    assert abs(ident.payload.mass - 2.5) < 0.01
    assert np.all(np.array(ident.fit_rmse["full"]) < 1.2 * DUAN_NOISE_STD)


def test_sensor_mounted_by_config_transform(ur10, truth):
    """A sensor frame the URDF lacks, given as a fixed transform from tool0 (2 cm further out)."""
    mount = sensor_mount_from_config({"parent": "tool0", "xyz": [0.0, 0.0, 0.02], "rpy": [0.0, 0.0, 0.5]})
    sensor = resolve_sensor_frame(ur10, "ft_sensor", mount)
    np.testing.assert_allclose(sensor.placement.translation,
                               ur10.frame_in_joint("tool0")[1].act(np.array([0, 0, 0.02])))
    phi_s = payload_transform(ur10, sensor, "tool0") @ PHI_TOOL0
    mounted = FtParameters(sensor, phi_s, OFFSET, TILT)
    t, q, qd, qdd = sum_of_sines(ur10, 10.0, 100.0, joints=WRIST, q0=Q0, speed=0.6, seed=2)
    rec = _recording_with_wrench(ur10, mounted, t, q, qd, qdd, frame_id="ft_sensor", seed=4)
    est = identify_payload_ft(ur10, rec, "tool0", sensor_mount=mount)
    std = np.sqrt(np.diag(est.covariance))
    assert np.all(_z(est.phi, std, PHI_TOOL0) < 4)


def test_ft_and_joint_torque_estimates_agree_within_their_std(ur10, truth):
    """Same payload, two instruments: F/T readings and joint torques (A's payload regressor, known robot)."""
    t, q, qd, qdd = sum_of_sines(ur10, 10.0, 100.0, q0=Q0, speed=0.6, base_frequency_hz=0.2, seed=12)
    frame = "wrist_3_link"
    phi_true = np.linalg.solve(payload_transform(ur10, truth.sensor, frame), PHI_TOOL0)
    # F/T side.
    rec = _recording_with_wrench(ur10, truth, t, q, qd, qdd, seed=13)
    ft_est = identify_payload_ft(ur10, rec, frame)
    # Joint-torque side: torque change caused by the payload (tilted gravity known to the model), noise 0.05 N·m.
    tilted = RobotModel.from_urdf("ur10", gravity=truth.gravity_base)
    y = payload_regressor(tilted, frame, q, qd, qdd)
    tau = y @ phi_true + np.random.default_rng(14).standard_normal(q.shape) * 0.05
    y2, t2 = y.reshape(-1, 10), tau.reshape(-1)
    phi_jt, res = np.linalg.lstsq(y2, t2, rcond=None)[:2]
    sigma2 = float(res[0]) / (t2.size - 10)
    cov_jt = sigma2 * np.linalg.inv(y2.T @ y2)
    diff = ft_est.phi - phi_jt
    both = np.sqrt(np.diag(ft_est.covariance) + np.diag(cov_jt))
    assert np.all(np.abs(diff) < 3.5 * both), np.abs(diff) / both
    assert abs(ft_est.mass - phi_jt[0]) < 0.02


def test_ft_parameters_round_trip_and_payload_from_another_method(ur10, truth, recording, tmp_path):
    mount = ("tool0", pin.SE3(pin.utils.rpyToMatrix(0.1, -0.2, 0.3), np.array([0.0, 0.01, 0.02])))
    mounted = FtParameters(resolve_sensor_frame(ur10, "ft_sensor", mount), PHI_TOOL0, OFFSET, TILT)
    path = tmp_path / "ft.yaml"
    save_ft_parameters(path, ur10, mounted)
    back = load_ft_parameters(path, ur10)
    _, q, qd, qdd = (x[::200] for x in sum_of_sines(ur10, 4.0, 100.0, q0=Q0, seed=3))
    meas = np.zeros((len(q), 6))
    np.testing.assert_allclose(compensate_batch(ur10, back, q, qd, qdd, meas),
                               compensate_batch(ur10, mounted, q, qd, qdd, meas), atol=1e-12)
    # A payload.yaml-style estimate in wrist_3_link + offsets gives the same compensation as the F/T fit.
    est = identify_ft(ur10, recording, "wrist_3_link")
    rebuilt = ft_parameters_from_payload(ur10, est.payload, "tool0", offset=est.offset, tilt=est.tilt)
    np.testing.assert_allclose(rebuilt.phi_sensor, est.params.phi_sensor, atol=1e-10)
    path.write_text(path.read_text().replace(ur10.urdf_sha256, "0" * 64))
    with pytest.raises(PayloadIdError, match="another URDF"):
        load_ft_parameters(path, ur10)


def test_registry_method_ft(ur10, recording):
    est = identify_payload("ft", ur10, None, recording, "tool0")
    assert est.method == "ft" and abs(est.mass - 2.5) < 0.01


# -- bad input -----------------------------------------------------------------------------------

def test_unknown_wrench_frame_names_it_and_lists_known_frames(ur10, truth, recording):
    rec = _recording_with_wrench(ur10, truth, *sum_of_sines(ur10, 2.0, 100.0, joints=WRIST, q0=Q0, seed=2),
                                 frame_id="robotiq_ft_frame_id")
    with pytest.raises(PayloadIdError, match=r"'robotiq_ft_frame_id'.*tool0"):
        identify_ft(ur10, rec, "tool0")


def test_timestamps_that_do_not_overlap_are_an_error(ur10, truth):
    rec = _recording_with_wrench(ur10, truth, *sum_of_sines(ur10, 2.0, 100.0, joints=WRIST, q0=Q0, seed=2),
                                 time_shift=1e9)
    with pytest.raises(PayloadIdError, match="do not overlap"):
        identify_ft(ur10, rec, "tool0")


def test_motion_that_does_not_excite_is_refused(ur10, truth):
    t = np.arange(300) / 100.0
    q = np.tile(Q0, (t.size, 1))
    zero = np.zeros_like(q)
    rec = _recording_with_wrench(ur10, truth, t, q, zero, zero)
    with pytest.raises(PayloadIdError, match="does not excite"):
        identify_ft(ur10, rec, "tool0", source="commanded", delay=0.0)


def test_payload_frame_on_another_body_is_refused(ur10, truth, recording):
    with pytest.raises(PayloadIdError, match="not rigidly attached"):
        identify_ft(ur10, recording, "wrist_2_link")


def test_identifies_from_the_mujoco_cell(ur10):
    """End to end against helper C's simulator (MuJoCo physics, PD controller with tracking lag,
    its own F/T model): commanded motion, tilted base, Duan's noise level."""
    config = bundled_dir("sim") / "ur10.yaml"
    raw = yaml.safe_load(config.read_text())
    raw["base_tilt"] = [float(TILT[0]), float(TILT[1])]
    raw["ft_sensor"].update(frame="tool0", force_noise_std=0.1, torque_noise_std=0.02)
    profile = SimProfile.from_dict(raw, ur10.n, "ur10-tilted", str(config))
    payload = PayloadEstimate(frame="tool0", phi=PHI_TOOL0, covariance=np.zeros((10, 10)), method="truth")

    def run(joints, seed, speed, base_hz):
        t, q, qd, qdd = sum_of_sines(ur10, 10.0, 100.0, joints=joints, q0=Q0, speed=speed,
                                     base_frequency_hz=base_hz, seed=seed)
        return simulate(ur10, CommandedTrajectory(0.0, ur10.joint_names, t, q, qd, qdd), payload, profile, seed=seed)

    ident = identify_ft(ur10, run(WRIST, 1, 0.6, 0.1), "tool0", validation=run(None, 7, 0.7, 0.2))
    est = ident.payload
    std = np.sqrt(np.diag(est.covariance))
    assert np.all(_z(est.phi, std, PHI_TOOL0) < 4), _z(est.phi, std, PHI_TOOL0)
    assert abs(est.mass - 2.5) < 0.01 and np.abs(est.com - [0.03, -0.01, 0.08]).max() < 5e-4
    assert np.abs(np.degrees(ident.tilt) - np.degrees(TILT)).max() < 0.05
    offset_true = np.concatenate([raw["ft_sensor"]["force_offset"], raw["ft_sensor"]["torque_offset"]])
    assert np.all(_z(ident.offset, ident.offset_std, offset_true) < 4)
    full, grav = np.array(ident.validation_rmse["full"]), np.array(ident.validation_rmse["gravity_only"])
    # The commanded motion is not exactly the one the PD controller produced: a little above the noise.
    assert np.all(full < 2.5 * DUAN_NOISE_STD), full
    assert grav[:3].max() > 20 * DUAN_NOISE_STD[0]
