"""Excitation trajectories: rest at both ends, limits on a 1 ms grid, YAML, playback, optimization, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import FourierTrajectory, load_trajectory, rest_basis
from payload_id_core.excitation.limits import CartesianLimit, MotionLimits, limit_violations
from payload_id_core.excitation.playback import move_to_start, playback_points

UR10_HOME = [0.0, -np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0]


def random_trajectory(model, seed=0, scale=0.1, harmonics=5, offsets=UR10_HOME):
    z = scale * np.random.default_rng(seed).standard_normal((model.n, 2 * harmonics - 3))
    return FourierTrajectory.from_rest_coordinates(model.joint_names, 0.1, offsets, z, harmonics)


def test_every_rest_coordinate_starts_and_ends_at_rest_and_repeats(ur10):
    traj = random_trajectory(ur10, scale=0.3)
    q, qd, qdd = traj.evaluate([0.0, traj.duration])
    np.testing.assert_allclose(q, np.tile(UR10_HOME, (2, 1)), atol=1e-12)
    np.testing.assert_allclose(qd, 0.0, atol=1e-12)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    # back to back: the second period is the first one again (periodic with 1/f)
    t = np.linspace(0, 10, 101)
    q1 = traj.offsets + traj.basis(t)[0] @ np.hstack([traj.a, traj.b]).T
    w = traj.omega * np.arange(1, 6)
    t2 = t + 10.0
    basis = np.hstack([np.sin(np.outer(t2, w)) / w, -np.cos(np.outer(t2, w)) / w])
    q2 = traj.offsets + basis @ np.hstack([traj.a, traj.b]).T
    np.testing.assert_allclose(q1, q2, atol=1e-12)
    assert rest_basis(5).shape == (10, 7)
    np.testing.assert_allclose(traj.rest_coordinates(), FourierTrajectory.from_rest_coordinates(
        ur10.joint_names, 0.1, UR10_HOME, traj.rest_coordinates(), 5).rest_coordinates(), atol=1e-12)


def test_analytic_derivatives_match_finite_differences(ur10):
    traj = random_trajectory(ur10, seed=3, scale=0.3)
    t = np.linspace(0.5, 9.5, 50)
    h = 1e-5
    q_p, qd_p, _ = traj.evaluate(t + h)
    q_m, qd_m, _ = traj.evaluate(t - h)
    _, qd, qdd = traj.evaluate(t)
    np.testing.assert_allclose((q_p - q_m) / (2 * h), qd, atol=1e-7)
    np.testing.assert_allclose((qd_p - qd_m) / (2 * h), qdd, atol=1e-6)


def test_coefficients_not_at_rest_are_refused():
    with pytest.raises(PayloadIdError, match="rest"):
        FourierTrajectory(["j1"], 0.1, [0.0], [[0.1, 0.0, 0.0]], [[0.0, 0.0, 0.0]])
    with pytest.raises(PayloadIdError, match="whole number of periods"):
        FourierTrajectory(["j1"], 0.1, [0.0], [[0.0, 0.0]], [[0.0, 0.0]], duration=7.0)
    with pytest.raises(PayloadIdError, match="not positive"):
        FourierTrajectory(["j1"], 0.1, [0.0], [[0.0, 0.0]], [[0.0, 0.0]], duration=-10.0)


def test_yaml_round_trip_and_to_commanded(ur10, tmp_path):
    traj = random_trajectory(ur10, seed=1)
    traj.design = {"objective": "test", "cond": np.float64(12.5)}
    path = tmp_path / "t.yaml"
    traj.save(path)
    back = load_trajectory(str(path))
    assert back.joint_names == traj.joint_names and back.design["cond"] == 12.5
    for name in ("offsets", "a", "b"):
        np.testing.assert_array_equal(getattr(back, name), getattr(traj, name))
    cmd = back.to_commanded(125.0, start_time=3.0)
    assert cmd.start_time == 3.0 and cmd.time_from_start[0] == 0.0 and cmd.time_from_start[-1] == 10.0
    assert cmd.positions.shape == (1251, 6)
    q, qd, qdd = traj.evaluate(cmd.time_from_start)
    np.testing.assert_array_equal(cmd.positions, q)
    np.testing.assert_array_equal(cmd.velocities, qd)
    np.testing.assert_array_equal(cmd.accelerations, qdd)
    with pytest.raises(PayloadIdError, match="unknown trajectory"):
        load_trajectory("no_such_trajectory")


def test_move_to_start_is_a_smooth_rest_to_rest_move_within_limits(ur10):
    limits = MotionLimits.from_model(ur10, margin=0.05)
    traj = random_trajectory(ur10, seed=2)
    q_now = np.array([1.0, -1.0, 1.5, 0.0, 1.0, -2.0])
    move = move_to_start(q_now, traj, limits, rate_hz=500.0)
    np.testing.assert_allclose(move.positions[0], q_now)
    np.testing.assert_allclose(move.positions[-1], UR10_HOME, atol=1e-12)
    for arr in (move.velocities, move.accelerations):
        np.testing.assert_allclose(arr[[0, -1]], 0.0, atol=1e-12)
    assert np.all(np.abs(move.velocities) <= limits.velocity + 1e-9)
    assert np.all(np.abs(move.accelerations) <= limits.acceleration + 1e-9)
    # the limiting joint actually uses its limit (the move is not needlessly slow)
    ratio = max((np.abs(move.velocities) / limits.velocity).max(),
                (np.abs(move.accelerations) / limits.acceleration).max())
    assert ratio > 0.95
    pb = playback_points(q_now, traj, limits, rate_hz=500.0, repetitions=2)
    assert np.all(np.diff(pb.time_from_start) > 0)
    np.testing.assert_allclose(pb.time_from_start[-1], move.time_from_start[-1] + 20.0)
    # continuity across the joins: steps no larger than the velocity limit allows
    assert np.all(np.abs(np.diff(pb.positions, axis=0)) <= limits.velocity * (1 / 500.0) + 1e-9)
    with pytest.raises(PayloadIdError, match="outside the URDF joint range"):
        move_to_start(np.array([0, 0, 3.2, 0, 0, 0]), traj, limits)
    # inside the URDF range but within the 5 % margin: allowed, the move heads inward
    inside_margin = move_to_start(np.array([0, 0, 3.1, 0, 0, 0]), traj, limits)
    assert np.all(np.abs(inside_margin.positions[:, 2]) <= 3.1 + 1e-12)


def test_limit_check_finds_violations_on_a_dense_grid(ur10):
    limits = MotionLimits.from_model(ur10, margin=0.05)
    slow = random_trajectory(ur10, seed=4, scale=0.05)
    assert limit_violations(slow, ur10, limits) == []
    fast = random_trajectory(ur10, seed=4, scale=3.0)
    bad = limit_violations(fast, ur10, limits)
    assert any("velocity" in b for b in bad) and any("acceleration" in b for b in bad)
    # the upright UR10 keeps tool0 above 1 m; 10 m is impossible
    assert limit_violations(slow, ur10, limits, [CartesianLimit("tool0", lower=1.0)]) == []
    assert any("below 10" in b for b in limit_violations(slow, ur10, limits, [CartesianLimit("tool0", lower=10.0)]))


# -- optimization ---------------------------------------------------------------------------------
from payload_id_core.cli.main import main as cli_main  # noqa: E402
from payload_id_core.excitation.fourier import bundled_trajectories  # noqa: E402
from payload_id_core.excitation.limits import check_trajectory, design_cartesian_limits  # noqa: E402
from payload_id_core.excitation_design import (  # noqa: E402
    ExcitationDesign,
    RegressorMetrics,
    evaluate_trajectory,
    optimize_excitation,
    random_feasible,
)

BUNDLED = ["ur10_payload", "ur10_base", "ur10e_payload", "panda_payload", "ur10_ft_wrist", "ur10_payload_inertia",
           "panda_payload_inertia", "ur10_payload_fast", "panda_payload_fast"]
# (period s, harmonics) each bundled trajectory was designed with (its recorded command)
BUNDLED_SHAPE = {"ur10_payload_inertia": (10.0, 8), "panda_payload_inertia": (10.0, 8), "ur10_payload_fast": (4.0, 6),
                 "panda_payload_fast": (4.0, 6)}


def test_optimized_payload_condition_is_far_lower_than_random_feasible(ur10):
    limits = MotionLimits.from_model(ur10, margin=0.05)
    design = ExcitationDesign(ur10, limits, objective="payload", frame="tool0", harmonics=3, n_samples=80,
                              n_constraint_samples=120)
    result = optimize_excitation(design, seeds=1, maxiter=25)
    assert limit_violations(result.trajectory, ur10, limits, dt=1e-3) == []
    metrics = RegressorMetrics(ur10, "tool0")
    t = np.linspace(0, 10, 400, endpoint=False)
    rng = np.random.default_rng(7)
    random_conds = [metrics.evaluate(*design.motion(random_feasible(design, rng, fill=0.95), t))["payload_cond"]
                    for _ in range(5)]
    optimized = metrics.evaluate(*result.trajectory.evaluate(t))["payload_cond"]
    factor = np.median(random_conds) / optimized
    print(f"payload cond: optimized {optimized:.3g}, random feasible median {np.median(random_conds):.3g}, "
          f"factor {factor:.1f}")
    assert factor > 3.0
    assert result.trajectory.design["payload_cond"] == pytest.approx(result.metrics["payload_cond"])


def test_joint_subset_moves_only_those_joints_and_cartesian_limit_holds(ur10):
    limits = MotionLimits.from_model(ur10, margin=0.05)
    wrist = ["wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
    table = [CartesianLimit("tool0", lower=1.0)]
    design = ExcitationDesign(ur10, limits, objective="payload", harmonics=2, joints=wrist, cartesian=table,
                              n_samples=60, n_constraint_samples=100)
    traj = optimize_excitation(design, seeds=1, maxiter=10).trajectory
    q, _, _ = traj.evaluate(traj.time_grid(1e-3))
    np.testing.assert_array_equal(q[:, :3], np.tile(UR10_HOME[:3], (q.shape[0], 1)))
    assert np.ptp(q[:, 3:], axis=0).min() > 0.1
    assert limit_violations(traj, ur10, limits, table, dt=1e-3) == []


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_trajectories_respect_limits_on_1ms_grid_and_rest_at_ends(name):
    assert name in bundled_trajectories()
    traj = load_trajectory(name)
    model = RobotModel.from_urdf(traj.design["urdf"])
    # generated with the robot's default limits and a 5 % margin, tool above a 0.3 m table
    limits = MotionLimits.from_model(model, margin=0.05)
    np.testing.assert_allclose(limits.acceleration, traj.design["acceleration_limits"])
    cart = design_cartesian_limits(traj)
    assert [(c.axis, c.lower) for c in cart] == [(2, 0.3)]
    assert limit_violations(traj, model, limits, cart, dt=1e-3) == []
    q, qd, qdd = traj.evaluate([0.0, traj.duration])
    np.testing.assert_allclose(q, np.tile(traj.offsets, (2, 1)), atol=1e-9)
    np.testing.assert_allclose(qd, 0.0, atol=1e-9)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-9)
    assert (traj.duration, traj.harmonics) == BUNDLED_SHAPE.get(name, (10.0, 5))
    assert traj.design["command"].startswith("payload-id excite")


def test_bundled_payload_trajectory_conditioning(ur10):
    traj = load_trajectory("ur10_payload")
    # evaluated with the row weights it was designed with (older designs: rows / effort limit)
    noise = traj.design.get("noise_std", np.asarray(ur10.limits.effort))
    m = evaluate_trajectory(ur10, traj, traj.design["frame"], n_samples=500, noise_std=noise)
    assert m["payload_cond"] == pytest.approx(traj.design["payload_cond"], rel=0.05)
    assert m["payload_cond"] < 40


def test_bundled_base_trajectory_meets_xu_rule_of_thumb_in_si_units(ur10):
    """Xu 2024 §4.2: rows / per-joint noise std (the design's Λ0 estimate), columns NOT scaled, < 100."""
    traj = load_trajectory("ur10_base")
    noise = np.array(traj.design["noise_std"])
    m = evaluate_trajectory(ur10, traj, n_samples=500, noise_std=noise)
    assert m["base_cond"] == pytest.approx(traj.design["base_cond"], rel=0.05)
    assert m["base_cond"] < 100
    # the unit-column figure is a different, much smaller number: the two must not be confused
    assert m["base_cond_unit_columns"] < m["base_cond"] / 3


def test_si_condition_number_is_invariant_to_a_common_noise_scale_but_not_to_column_units(ur10):
    traj = load_trajectory("ur10_base")
    noise = np.array(traj.design["noise_std"])
    a = evaluate_trajectory(ur10, traj, n_samples=200, noise_std=noise)
    b = evaluate_trajectory(ur10, traj, n_samples=200, noise_std=7.0 * noise)
    assert b["base_cond"] == pytest.approx(a["base_cond"], rel=1e-9)
    # reweighting one joint changes the SI figure; unit columns hide nothing of this kind
    c = evaluate_trajectory(ur10, traj, n_samples=200, noise_std=noise * [1, 1, 1, 1, 1, 100])
    assert c["base_cond"] > 2 * a["base_cond"]


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_trajectories_move_every_joint(name):
    """Base parameters of a joint that barely moves are identified from nothing: every moving joint
    reaches >= 30 % of its margin-reduced velocity limit (joints outside a subset design hold still)."""
    traj = load_trajectory(name)
    model = RobotModel.from_urdf(traj.design["urdf"])
    traj = traj.for_model(list(model.joint_names))
    limits = MotionLimits.from_model(model, margin=0.05)
    _, qd, _ = traj.evaluate(traj.time_grid(1e-3))
    peak = np.abs(qd).max(axis=0) / limits.velocity
    moving = [model.joint_names.index(j) for j in traj.design["moving_joints"]]
    held = [j for j in range(model.n) if j not in moving]
    assert peak[moving].min() >= 0.3, dict(zip(model.joint_names, peak.round(2)))
    assert np.all(peak[held] == 0.0)
    assert (name == "ur10_ft_wrist") == bool(held)


def test_velocity_excitation_constraint_forces_a_joint_to_move(ur10):
    """Every moving joint reaches the requested RMS velocity (peak >= RMS), within all limits."""
    limits = MotionLimits.from_model(ur10, margin=0.05)
    design = ExcitationDesign(ur10, limits, objective="payload", frame="tool0", harmonics=3, n_samples=60,
                              n_constraint_samples=100, min_rms_velocity_fraction=0.3)
    result = optimize_excitation(design, seeds=1, maxiter=20)
    _, qd, _ = result.trajectory.evaluate(result.trajectory.time_grid(1e-3))
    rms = np.sqrt((qd**2).mean(axis=0)) / limits.velocity
    assert rms.min() >= 0.3 * 0.99
    assert (np.abs(qd).max(axis=0) / limits.velocity).min() >= 0.3 * 0.99
    assert limit_violations(result.trajectory, ur10, limits, dt=1e-3) == []
    # more RMS velocity than a limit-respecting sine can give (0.707) is refused up front
    with pytest.raises(PayloadIdError, match="RMS velocity fraction"):
        ExcitationDesign(ur10, limits, min_rms_velocity_fraction=0.8)


def test_check_trajectory_checks_joint_and_design_cartesian_limits(ur10):
    traj = load_trajectory("ur10_payload")
    check_trajectory(traj, ur10)                      # as designed: passes
    table_high = FourierTrajectory.from_dict({**traj.to_dict(), "design": {
        **traj.design, "cartesian": [{"frame": "tool0", "axis": "z", "lower": 1.3}]}})
    with pytest.raises(PayloadIdError, match="tool0 z = .* below 1.3 m"):
        check_trajectory(table_high, ur10)
    tight = MotionLimits.from_model(ur10, margin=0.05, acceleration=1.0)
    with pytest.raises(PayloadIdError, match="acceleration"):
        check_trajectory(traj, ur10, tight)


def test_cli_writes_a_trajectory_within_limits(tmp_path, ur10):
    out = tmp_path / "t.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--harmonics", "2", "--seeds", "1", "--maxiter", "5",
                   "--noise-std", "ur10", "--out", str(out)])
    assert rc == 0
    traj = load_trajectory(out)
    # rows weighted by the ur10 simulation profile's measured torque noise, columns in SI units
    assert traj.design["noise_std"] == [1.6, 2.0, 1.1, 0.23, 0.38, 0.30]
    assert traj.design["column_scaling"] == "none"
    assert limit_violations(traj, ur10, MotionLimits.from_model(ur10, margin=0.05), dt=1e-3) == []


@pytest.mark.parametrize("args, message", [
    (["--duration", "-10"], "not positive"),
    (["--joints", "wrist_1_joint,elbow_jiont"], "elbow_jiont"),
    (["--min-height", "5.0", "--height-frame", "tool0"], "no trajectory can keep tool0"),
    (["--acceleration-limit", "1e-5"], "too tight for the duration"),
    (["--joints", "wrist_1_joint", "--objective", "base"], "needs every joint to move"),
    (["--frame", "no_such_frame"], "no_such_frame"),
    (["--noise-std", "1,2"], "--noise-std gives [1.0, 2.0] for 6 joints"),
    (["--noise-std", "no_such_profile"], "unknown simulation profile 'no_such_profile'"),
    (["--min-velocity-fraction", "0.9"], "RMS velocity fraction 0.9"),
    (["--objective", "convergence", "--horizon", "12"],
     "horizon 12.0 s is not a duration within the trajectory's (0, 10] s"),
    (["--objective", "convergence", "--horizon", "0"], "--horizon"),
])
def test_cli_refuses_bad_or_infeasible_requests(tmp_path, capsys, args, message):
    out = tmp_path / "t.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--harmonics", "2", "--seeds", "1", "--maxiter", "5",
                   "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and not out.exists()


def test_cli_refuses_urdf_without_limits(tmp_path, capsys):
    urdf = tmp_path / "nolimits.urdf"
    urdf.write_text("""<robot name="r"><link name="base"/><link name="l1">
<inertial><mass value="1"/><origin xyz="0.1 0 0"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>
<limit effort="10" velocity="0" lower="0" upper="0"/></joint></robot>""")
    out = tmp_path / "t.yaml"
    rc = cli_main(["excite", "--urdf", str(urdf), "--out", str(out)])
    assert rc == 2 and "no usable position/velocity limits" in capsys.readouterr().err and not out.exists()


def test_cli_copies_a_bundled_excitation_for_several_periods(tmp_path, ur10):
    """README's calibration advice: the inertia excitation played three periods, written by one command."""
    out = tmp_path / "calibration.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--from", "ur10_payload_inertia", "--periods", "3", "--out", str(out)])
    assert rc == 0
    source, copy = load_trajectory("ur10_payload_inertia"), load_trajectory(out)
    period = 1.0 / source.base_frequency_hz
    assert copy.duration == pytest.approx(3 * period)
    assert copy.design["copied_from"] == "ur10_payload_inertia" and copy.design["periods"] == 3
    np.testing.assert_array_equal(copy.a, source.a)
    np.testing.assert_array_equal(copy.b, source.b)
    t = np.array([0.37, 1.9, 0.5 * period])
    np.testing.assert_allclose(copy.evaluate(t + 2 * period)[0], source.evaluate(t)[0], atol=1e-12)
    assert limit_violations(copy, ur10, MotionLimits.from_model(ur10, margin=0.05), dt=1e-3) == []


@pytest.mark.parametrize("args, message", [
    (["--from", "ur10_payload_inertia", "--duration", "30"], "--duration designs a new trajectory"),
    (["--from", "ur10_payload_inertia", "--objective", "inertia"], "--objective designs a new trajectory"),
    (["--periods", "3"], "--periods repeats an existing trajectory"),
    (["--from", "ur10_payload_inertia", "--periods", "0"], "--periods"),
    (["--from", "ur10_payload_inertia", "--periods", "1000"], "--periods"),
    (["--from", "no_such_trajectory", "--periods", "3"], "unknown trajectory 'no_such_trajectory'"),
    (["--from", "panda_payload_inertia", "--periods", "3"], "do not match the robot's"),
])
def test_cli_copy_refuses_what_it_cannot_honour(tmp_path, capsys, args, message):
    out = tmp_path / "t.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and not out.exists()
