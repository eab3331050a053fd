"""Excitation trajectories: rest at both ends, limits on a 1 ms grid, YAML, playback, optimization, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation import (
    CartesianLimit, FourierTrajectory, MotionLimits, limit_violations, load_trajectory, move_to_start,
    playback_points, rest_basis,
)
from payload_id_core.model import RobotModel

UR10_HOME = [0.0, -np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0]


@pytest.fixture(scope="module")
def ur10():
    return RobotModel.from_urdf("ur10")


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
    q2 = traj.offsets + np.hstack([np.sin(np.outer(t2, w)) / w, -np.cos(np.outer(t2, w)) / w]) @ np.hstack([traj.a, traj.b]).T
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
    ratio = max((np.abs(move.velocities) / limits.velocity).max(), (np.abs(move.accelerations) / limits.acceleration).max())
    assert ratio > 0.95
    pb = playback_points(q_now, traj, limits, rate_hz=500.0, repetitions=2)
    assert np.all(np.diff(pb.time_from_start) > 0)
    np.testing.assert_allclose(pb.time_from_start[-1], move.time_from_start[-1] + 20.0)
    # continuity across the joins: steps no larger than the velocity limit allows
    assert np.all(np.abs(np.diff(pb.positions, axis=0)) <= limits.velocity * (1 / 500.0) + 1e-9)
    with pytest.raises(PayloadIdError, match="outside the allowed joint range"):
        move_to_start(np.array([0, 0, 4.0, 0, 0, 0]), traj, limits)


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
