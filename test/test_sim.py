"""The simulated cell: MuJoCo dynamics == pinocchio, held torques, payload gravity load, tracking lag,
F/T sensor, friction law, bag round trip, determinism, refused trajectories, `payload-id simulate`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
import yaml

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import FourierTrajectory
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.sim import SimulatedCell, load_profile, simulate
from payload_id_core.sim.drive import ScalarFriction, friction_torque
from payload_id_core.sim.mujoco_backend import MujocoBackend

Q_HOLD = np.array([0.3, -1.2, 1.1, -0.5, 0.8, 0.2])
INERTIA = np.array([[0.02, 0.001, 0.002], [0.001, 0.03, 0.003], [0.002, 0.003, 0.015]])


def payload(mass=5.0, frame="tool0", com=(0.01, 0.02, 0.08)):
    return PayloadEstimate(frame=frame, phi=from_mass_com_inertia(mass, list(com), INERTIA),
                           covariance=np.full((10, 10), np.nan), method="given")


def quiet(profile_name: str, n: int = 6):
    """A profile without measurement noise (friction, rotor inertia and gains kept)."""
    p = load_profile(profile_name, n)
    p.torque_noise_std[:] = 0.0
    p.position_noise_std = p.velocity_noise_std = 0.0
    p.ft.force_noise_std = p.ft.torque_noise_std = 0.0
    return p


def excitation(model, seed=1, scale=0.25, harmonics=5):
    z = np.random.default_rng(seed).standard_normal((model.n, 2 * harmonics - 3)) * scale
    return FourierTrajectory.from_rest_coordinates(model.joint_names, 0.1, np.array([0.0, -1.4, 1.2, -1.0, -1.3, 0.0]),
                                                   z, harmonics)


def with_payload(model: RobotModel, est: PayloadEstimate) -> pin.Model:
    m = model.model.copy()
    j, placement = model.frame_in_joint(est.frame)
    m.inertias[j] = m.inertias[j] + placement.act(pin.Inertia.FromDynamicParameters(est.phi))
    return m


@pytest.mark.parametrize("robot,frame", [("ur10", "tool0"), ("panda", "panda_link8")])
def test_mujoco_inverse_dynamics_equals_rnea(robot, frame):
    model = RobotModel.from_urdf(robot)
    backend = MujocoBackend(model, payload_frame=frame)
    rng = np.random.default_rng(0)
    loaded = with_payload(model, payload(frame=frame))
    loaded_data = loaded.createData()
    worst = [0.0, 0.0]
    for _ in range(20):
        q = rng.uniform(model.limits.lower, model.limits.upper)
        qd, qdd = rng.normal(size=model.n), 3 * rng.normal(size=model.n)
        backend.set_payload(None, frame)
        ref = model.rnea(q, qd, qdd)
        worst[0] = max(worst[0], np.abs(backend.inverse_dynamics(q, qd, qdd) - ref).max() / np.abs(ref).max())
        backend.set_payload(payload(frame=frame).phi, frame)
        ref = pin.rnea(loaded, loaded_data, q, qd, qdd)
        worst[1] = max(worst[1], np.abs(backend.inverse_dynamics(q, qd, qdd) - ref).max() / np.abs(ref).max())
    assert worst[0] < 1e-8 and worst[1] < 1e-8, worst


def test_held_pose_needs_rnea_torque_plus_friction(ur10):
    clean = SimulatedCell(ur10, "clean", q0=Q_HOLD).advance(1000)
    np.testing.assert_allclose(clean.tau[-1], ur10.rnea(clean.q[-1], np.zeros(6), np.zeros(6)), atol=1e-6)
    assert np.abs(clean.q[-1] - Q_HOLD).max() < 1e-9        # the controller's model is exact here
    prof = quiet("ur10")
    s = SimulatedCell(ur10, prof, q0=Q_HOLD).advance(1000)
    # At rest the drive carries gravity plus the friction offset B of Xu eq. 2 (sign(0) = 0).
    gravity = ur10.rnea(s.q[-1], np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(s.tau[-1] - gravity, prof.friction.offset, atol=1e-6)
    # Reported effort is a current: torque / drive gain.
    np.testing.assert_allclose(s.effort[-1] * prof.effort_scale, s.tau[-1], rtol=1e-12)


def test_payload_changes_held_torque_by_its_gravity_load(ur10):
    est = payload(5.0)
    empty = SimulatedCell(ur10, "clean", q0=Q_HOLD).advance(1000)
    cell = SimulatedCell(ur10, "clean", est, q0=Q_HOLD)
    loaded = cell.advance(3000)
    q = loaded.q[-1]
    # The payload's gravity load, independently: -J_c(q)^T m g at its centre of mass.
    model, data = ur10.model, ur10.data
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    fid = ur10.frame_id("tool0")
    com_world = data.oMf[fid].act(est.com)
    jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
    lever = com_world - data.oMf[fid].translation
    jac_c = jac - pin.skew(lever) @ pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[3:]
    gravity_load = -jac_c.T @ (5.0 * np.array([0.0, 0.0, -9.81]))
    robot_part = ur10.rnea(q, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(loaded.tau[-1] - robot_part, gravity_load, atol=1e-6)
    # The integral action removes the sag the unmodelled payload causes.
    assert np.abs(q - Q_HOLD).max() < 1e-6
    assert np.abs((loaded.tau[-1] - empty.tau[-1]) - gravity_load).max() < 0.05 * np.abs(gravity_load).max()
    # Swapping the payload at run time: removing it returns the empty cell's torques.
    cell.set_payload(None)
    after = cell.advance(3000)
    np.testing.assert_allclose(after.tau[-1], ur10.rnea(after.q[-1], np.zeros(6), np.zeros(6)), atol=1e-6)


def test_tracking_error_small_and_lagging(ur10):
    rec = simulate(ur10, excitation(ur10), payload(5.0), quiet("ur10"), seed=0)
    j = rec.joints
    q_cmd, qd_cmd, _ = sample_commanded(rec.commanded, j.t, ur10.joint_names)
    err = q_cmd - j.q
    lag = (err * qd_cmd).sum(0) / (qd_cmd * qd_cmd).sum(0)     # err ≈ lag · q̇_cmd
    assert np.all(lag > 1e-3) and np.all(lag < 10e-3), lag      # a few ms, measured behind commanded
    assert np.abs(err).max() < 0.01
    # The lag explains most of the error (it is a lag, not noise).
    resid = err - lag * qd_cmd
    assert np.all(np.sqrt((resid ** 2).mean(0)) < 0.5 * np.sqrt((err ** 2).mean(0)))


def test_clean_cell_lags_by_exactly_the_controller_delay(ur10):
    rec = simulate(ur10, excitation(ur10), None, "clean", seed=0)
    j = rec.joints
    delay = load_profile("clean", 6).controller.delay
    q_late, _, _ = sample_commanded(rec.commanded, j.t - delay, ur10.joint_names)
    assert np.abs(q_late - j.q).max() < 1e-5       # the 1 ms Euler step leaves a few µrad


def test_physics_carries_the_friction_law(ur10):
    prof = quiet("ur10")
    cell = SimulatedCell(ur10, prof, q0=np.array([0.0, -1.4, 1.2, -1.0, -1.3, 0.0]))
    cell.send(excitation(ur10).to_commanded(100.0, start_time=0.2))
    s = cell.advance(2000)
    rigid = np.array([cell.backend.inverse_dynamics(q, qd, a) for q, qd, a in zip(s.q, s.qd, s.qdd)])
    load = np.vstack([np.zeros(6), s.tau_motor[:-1]])   # the drive's load is the previous step's torque
    law, _ = friction_torque(prof.friction, s.qd, load)
    moving = np.abs(s.qd) > 0.05
    diff = (s.tau_motor - rigid - law)[moving]
    # Implicit integration evaluates the law at the end of the step: differences ≪ the friction itself.
    assert np.median(np.abs(diff)) < 0.02 * np.median(np.abs(law[moving]))
    v = np.random.default_rng(2).normal(size=(50, 6)) * 0.3
    ld = np.random.default_rng(3).normal(size=(50, 6)) * 50
    scalar = ScalarFriction(prof.friction)
    for k in range(50):
        t_ref, s_ref = friction_torque(prof.friction, v[k], ld[k])
        t_s, s_s = scalar(v[k].tolist(), ld[k].tolist())
        np.testing.assert_allclose(t_s, t_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s_s, s_ref, rtol=1e-9)
    # Load-dependent Coulomb: more load torque, more friction at the same speed (Xu 2024 §4.3).
    hi, _ = friction_torque(prof.friction, np.full(6, 0.2), np.full(6, 100.0))
    lo, _ = friction_torque(prof.friction, np.full(6, 0.2), np.zeros(6))
    np.testing.assert_allclose(hi - lo,
                               prof.friction.load_coulomb * 100.0 * np.tanh(0.2 / prof.friction.smoothing_velocity))


def test_ft_sensor_reads_payload_gravity_offset_and_tilt(ur10):
    prof = load_profile("clean", 6)
    prof.ft.force_offset = np.array([1.0, -2.0, 3.0])
    prof.base_tilt = np.array([0.05, -0.03])
    est = payload(5.0, com=(0.0, 0.0, 0.1))
    s = SimulatedCell(ur10, prof, est, q0=Q_HOLD).advance(3000)
    model, data = ur10.model, ur10.data
    pin.forwardKinematics(model, data, s.q[-1])
    pin.updateFramePlacements(model, data)
    g_sensor = data.oMf[ur10.frame_id("tool0")].rotation.T @ prof.gravity()
    np.testing.assert_allclose(s.wrench[-1, :3], 5.0 * g_sensor + [1.0, -2.0, 3.0], atol=1e-6)
    np.testing.assert_allclose(s.wrench[-1, 3:], np.cross([0.0, 0.0, 0.1], 5.0 * g_sensor), atol=1e-6)
    assert abs(np.linalg.norm(prof.gravity()) - 9.81) < 1e-12 and abs(prof.gravity()[1]) > 0.4


def test_ft_sensor_in_motion_is_the_newton_euler_wrench_of_the_payload(ur10):
    """The batched sensor model against classical Newton–Euler at the payload's CoM (world axes):
    F = m (a_c − g), τ_c = I ω̇ + ω × I ω, read as −(F, τ_c + (c − s) × F) in the sensor's axes."""
    prof = load_profile("clean", 6)
    prof.ft.frame = "wrist_3_link"                       # sensor a link away from the payload frame
    prof.base_tilt = np.array([0.02, 0.04])
    com, inertia_c = np.array([0.03, -0.02, 0.09]), np.array([[0.04, 0.003, -0.002], [0.003, 0.05, 0.001],
                                                             [-0.002, 0.001, 0.03]])
    est = PayloadEstimate(frame="tool0", phi=from_mass_com_inertia(4.0, com, inertia_c),
                          covariance=np.full((10, 10), np.nan), method="given")
    traj = excitation(ur10, seed=3, scale=0.4)
    cmd = traj.to_commanded(100.0, start_time=0.0)
    cell = SimulatedCell(ur10, prof, est, q0=cmd.positions[0])
    cell.send(cmd)
    s = cell.advance(1500)
    model, data = ur10.model, ur10.data
    pid, sid = ur10.frame_id("tool0"), ur10.frame_id("wrist_3_link")
    g = prof.gravity()
    worst = 0.0
    for k in range(100, 1500, 70):
        pin.forwardKinematics(model, data, s.q[k], s.qd[k], s.qdd[k])
        pin.updateFramePlacements(model, data)
        frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        w = pin.getFrameVelocity(model, data, pid, frame).angular
        dw = pin.getFrameAcceleration(model, data, pid, frame).angular
        a_o = pin.getFrameClassicalAcceleration(model, data, pid, frame).linear
        rot = data.oMf[pid].rotation
        r = rot @ com
        a_c = a_o + np.cross(dw, r) + np.cross(w, np.cross(w, r))
        force = 4.0 * (a_c - g)
        i_w = rot @ inertia_c @ rot.T
        torque_c = i_w @ dw + np.cross(w, i_w @ w)
        lever = data.oMf[pid].translation + r - data.oMf[sid].translation
        r_s = data.oMf[sid].rotation
        expected = -np.concatenate([r_s.T @ force, r_s.T @ (torque_c + np.cross(lever, force))])
        worst = max(worst, np.abs(s.wrench[k] - expected).max())
    assert np.abs(s.qdd[100:]).max() > 1.0                   # really moving
    assert worst < 1e-9, worst


def test_stepping_one_period_at_a_time_equals_one_chunk(ur10):
    """The node's path (advance(1) with the controller's look-ahead cache, a trajectory arriving mid-way)
    gives the same motion and torques as the offline path (one long advance)."""
    cmd = CommandedTrajectory(0.0, list(ur10.joint_names), np.array([0.3, 0.6]),
                              np.vstack([Q_HOLD + 0.05, Q_HOLD - 0.04]), np.zeros((2, 6)))
    chunked, single = (SimulatedCell(ur10, quiet("ur10"), payload(3.0), q0=Q_HOLD) for _ in range(2))
    first = chunked.advance(37)
    chunked.send(cmd)
    rest = chunked.advance(400)
    steps = []
    for k in range(437):
        if k == 37:
            single.send(cmd)
        steps.append(single.advance(1))
    for key in ("q", "tau", "wrench"):
        whole = np.vstack([getattr(first, key), getattr(rest, key)])
        one_by_one = np.vstack([getattr(s, key) for s in steps])
        np.testing.assert_allclose(one_by_one, whole, rtol=0, atol=1e-9)
    assert np.abs(rest.q[-1] - (Q_HOLD - 0.04)).max() < 1e-3 < np.abs(first.q[-1] - (Q_HOLD - 0.04)).max()


def test_refused_trajectories_leave_the_robot_holding(ur10):
    cell = SimulatedCell(ur10, "clean", q0=Q_HOLD)
    names = ur10.joint_names
    good = dict(start_time=0.0, time_from_start=np.array([0.5, 1.0]), positions=np.vstack([Q_HOLD, Q_HOLD + 0.1]))
    bad = [
        (CommandedTrajectory(joint_names=names[:5] + ["nope"], **good), "unknown joints"),
        (CommandedTrajectory(0.0, names, np.array([0.5, 0.5]), good["positions"]), "not strictly increasing"),
        (CommandedTrajectory(0.0, names, good["time_from_start"], good["positions"] + [0, 0, 10, 0, 0, 0]), "outside"),
    ]
    for traj, why in bad:
        with pytest.raises(PayloadIdError, match=why):
            cell.send(traj)
    s = cell.advance(600)
    assert np.abs(s.q - Q_HOLD).max() < 1e-9
    cell.send(CommandedTrajectory(joint_names=list(reversed(names)),
                                  **{**good, "positions": good["positions"][:, ::-1]}))
    s = cell.advance(600)                                        # joints matched by name, then it moves
    np.testing.assert_allclose(s.q[-1], Q_HOLD + 0.1, atol=1e-4)


def test_bag_round_trip_and_determinism(ur10, tmp_path):
    prof = load_profile("ur10", 6)
    traj = excitation(ur10)
    rec = simulate(ur10, traj, payload(5.0), prof, seed=7, lead_in=0.3, lead_out=0.2)
    again = simulate(ur10, traj, payload(5.0), prof, seed=7, lead_in=0.3, lead_out=0.2)
    other = simulate(ur10, traj, payload(5.0), prof, seed=8, lead_in=0.3, lead_out=0.2)
    assert np.array_equal(rec.joints.tau, again.joints.tau) and np.array_equal(rec.wrench.force, again.wrench.force)
    assert not np.array_equal(rec.joints.tau, other.joints.tau)
    assert np.median(np.diff(rec.joints.t)) == pytest.approx(1 / 500)
    bag = write_bag(tmp_path / "sim", rec, effort_scale=prof.effort_scale)
    back = read_bag(bag, effort_scale=prof.effort_scale, require_trajectory=True, require_wrench=True)
    j = back.joints.reordered(ur10.match_joint_order(back.joints.joint_names), ur10.joint_names)
    np.testing.assert_allclose(j.t, rec.joints.t, atol=1e-9)
    np.testing.assert_allclose(j.q, rec.joints.q, atol=1e-12)
    np.testing.assert_allclose(j.tau, rec.joints.tau, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(back.wrench.force, rec.wrench.force, atol=1e-12)
    assert len(back.commanded) == 1
    np.testing.assert_allclose(back.commanded[0].start_time, 0.3, atol=1e-9)
    np.testing.assert_allclose(back.commanded[0].accelerations, rec.commanded[0].accelerations, atol=1e-12)


def test_cli_simulate(tmp_path, ur10):
    traj = excitation(ur10)
    traj_path = tmp_path / "trajectory.yaml"
    traj.save(traj_path)
    payload_path = tmp_path / "payload.yaml"
    payload_path.write_text(yaml.safe_dump(payload(3.0).to_dict()))
    exe = [sys.executable, "-m", "payload_id_core.cli.main", "simulate", "--urdf", "ur10",
           "--trajectory", str(traj_path)]
    out = tmp_path / "bag"
    res = subprocess.run(exe + ["--payload", str(payload_path), "--profile", "ur10", "--seed", "3", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rec = read_bag(out, effort_scale=load_profile("ur10", 6).effort_scale, require_trajectory=True, require_wrench=True)
    assert len(rec.joints) == int(round((traj.duration + 1.0) * 500)) + 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("frame: tool0\nmass: heavy\n")
    res = subprocess.run(exe + ["--payload", str(bad), "--out", str(tmp_path / "bad_bag")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "payload file is malformed" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "bad_bag").exists()
