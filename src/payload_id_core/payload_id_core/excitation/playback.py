"""Playing an excitation through a joint_trajectory_controller: the rest-to-rest move to the start
pose, the excitation points after it, time scaling (speed_scale) and the decelerating stop a cancel
sends. Pure functions, unit-tested without a ROS graph; the excitation_player node calls them.
"""

from __future__ import annotations

import math

import numpy as np

from payload_id_core import signals  # the lazy face: sample_commanded loads scipy.signal on first use only
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import FourierTrajectory
from payload_id_core.excitation.limits import MotionLimits
from payload_id_core.signals.recording import CommandedTrajectory

# Peak speed and acceleration of the rest-to-rest quintic s(u) = 10u³ - 15u⁴ + 6u⁵ per unit distance and time.
_QUINTIC_PEAK_VEL = 1.875
_QUINTIC_PEAK_ACC = 10.0 / math.sqrt(3.0)


def move_to_start(q_current, trajectory: FourierTrajectory, limits: MotionLimits, rate_hz: float = 100.0,
                  start_time: float = 0.0, min_duration: float = 1.0) -> CommandedTrajectory:
    """A rest-to-rest quintic move from `q_current` (joint order of `limits`) to the trajectory's offsets,
    slow enough for every joint's velocity and acceleration limits, sampled at `rate_hz`.

    Joints move monotonically along a straight line in joint space; Cartesian limits are not checked
    here (the start pose satisfies them; the path from an arbitrary pose is the operator's concern)."""
    names = list(limits.joint_names)
    traj = trajectory.for_model(names)
    q0 = np.asarray(q_current, dtype=float).reshape(-1)
    if q0.shape != (len(names),) or not np.all(np.isfinite(q0)):
        raise PayloadIdError(f"current pose {q0.tolist()} is not {len(names)} finite joint positions",
                             f"give positions for {names}")
    # The move stays on the segment between q_current and the (inside) offsets, so a pose inside the
    # URDF range but within the margin is fine; only a pose outside the URDF range is refused.
    slack = 0.5 * limits.margin / (1.0 - limits.margin) * (limits.upper - limits.lower) + 1e-6
    outside = [n for n, x, lo, hi, s in zip(names, q0, limits.lower, limits.upper, slack)
               if not lo - s <= x <= hi + s]
    if outside:
        raise PayloadIdError(f"the current pose is outside the URDF joint range for {outside}",
                             "jog the robot back inside its joint limits first")
    dist = np.abs(traj.offsets - q0)
    duration = max(min_duration,
                   float(np.max(_QUINTIC_PEAK_VEL * dist / limits.velocity)),
                   float(np.max(np.sqrt(_QUINTIC_PEAK_ACC * dist / limits.acceleration))))
    step = 1.0 / rate_hz
    k = int(math.ceil(duration / step - 1e-9))
    duration = k * step                        # whole number of samples: the excitation follows on the same grid
    t = np.arange(k + 1) * step
    u = t / duration
    s = u**3 * (10 - 15 * u + 6 * u**2)
    sd = 30 * u**2 * (1 - u) ** 2 / duration
    sdd = 60 * u * (1 - u) * (1 - 2 * u) / duration**2
    delta = traj.offsets - q0
    return CommandedTrajectory(start_time, names, t, q0 + np.outer(s, delta), np.outer(sd, delta),
                               np.outer(sdd, delta))


def playback_points(q_current, trajectory: FourierTrajectory, limits: MotionLimits, rate_hz: float = 100.0,
                    repetitions: int = 1, start_time: float = 0.0) -> CommandedTrajectory:
    """The move to the start pose followed by `repetitions` back-to-back periods of the excitation, one
    CommandedTrajectory (positions, velocities, accelerations at `rate_hz`) for a joint_trajectory_controller.
    The excitation starts at time_from_start = end - repetitions * duration."""
    if repetitions < 1:
        raise PayloadIdError(f"{repetitions} repetitions", "play the excitation at least once")
    move = move_to_start(q_current, trajectory, limits, rate_hz, start_time)
    exc = trajectory.for_model(list(limits.joint_names)).to_commanded(rate_hz)
    # Both are sampled from analytic motions, so both carry velocities and accelerations.
    assert move.velocities is not None and move.accelerations is not None
    assert exc.velocities is not None and exc.accelerations is not None
    ts, qs, vs, acs = [move.time_from_start], [move.positions], [move.velocities], [move.accelerations]
    t0 = float(move.time_from_start[-1])
    for _ in range(repetitions):
        # The first excitation point equals the last point before it (rest at the offsets): skip it.
        ts.append(t0 + exc.time_from_start[1:])
        qs.append(exc.positions[1:])
        vs.append(exc.velocities[1:])
        acs.append(exc.accelerations[1:])
        t0 += trajectory.duration
    return CommandedTrajectory(start_time, list(limits.joint_names), np.concatenate(ts), np.vstack(qs),
                               np.vstack(vs), np.vstack(acs))


def time_scaled(trajectory: FourierTrajectory, speed_scale: float) -> FourierTrajectory:
    """The same path played `speed_scale` times faster: q_s(t) = q(s t). `a`, `b` are velocity amplitudes,
    so they scale by s while the base frequency does too (the position amplitudes a/(ω l) stay)."""
    s = 1.0 if speed_scale == 0 else float(speed_scale)
    if not (math.isfinite(s) and s > 0):
        raise PayloadIdError(f"speed_scale {speed_scale} is not positive", "use e.g. 0.5 (slower) or 1.0")
    if s == 1.0:
        return trajectory
    return FourierTrajectory(list(trajectory.joint_names), trajectory.base_frequency_hz * s, trajectory.offsets,
                             trajectory.a * s, trajectory.b * s, trajectory.duration / s, dict(trajectory.design))


def quintic_coefficients(q0, v0, a0, q1, v1, a1, T: float) -> np.ndarray:
    """(6, n) coefficients c with q(t) = Σ c_k t^k meeting position, velocity, acceleration at 0 and T."""
    q0, v0, a0, q1, v1, a1 = (np.asarray(x, dtype=float) for x in (q0, v0, a0, q1, v1, a1))
    T2, T3, T4, T5 = T**2, T**3, T**4, T**5
    m = np.array([[T3, T4, T5], [3 * T2, 4 * T3, 5 * T4], [6 * T, 12 * T2, 20 * T3]])
    rhs = np.vstack([q1 - (q0 + v0 * T + 0.5 * a0 * T2), v1 - (v0 + a0 * T), a1 - a0])
    c345 = np.linalg.solve(m, rhs)
    return np.vstack([q0, v0, 0.5 * a0, c345])


def _eval_poly(c: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.arange(6)
    tp = t[:, None] ** k                                          # (N, 6)
    dc = c[1:] * k[1:, None]
    ddc = dc[1:] * k[1:-1, None]
    return tp @ c, tp[:, :5] @ dc, tp[:, :4] @ ddc


def stop_trajectory(joint_names, q0, v0, a0, acceleration_limit, rate_hz: float = 100.0,
                    min_duration: float = 0.2, position_limits=None) -> CommandedTrajectory:
    """A decelerating stop from the commanded state (q0, q̇0, q̈0) to rest, as JointTrajectory points.

    Quintic in time per joint ending at q0 + q̇0 T/2 (the distance a linear velocity ramp covers) with
    zero velocity and acceleration; T grows until the peak acceleration of every joint stays within
    its limit, so the arm slows down instead of jumping to a held position.

    `position_limits` (lower, upper): the stop stays inside them, shortened (harder braking than the
    acceleration limit) when the gentle one would cross one. A controller refuses a trajectory that leaves
    its joint range, and a refused stop is no stop: the arm went on with the excitation at 3 rad/s (an
    elbow moving towards its limit when the goal was cancelled; the excitation itself was turning round)."""
    q0, v0, a0 = (np.asarray(x, dtype=float) for x in (q0, v0, a0))
    acc = np.asarray(acceleration_limit, dtype=float)
    T = max(min_duration, float(np.max((2.0 * np.abs(v0) + 0.5 * np.abs(a0) * 0.2) / acc)))
    for _ in range(30):
        c = quintic_coefficients(q0, v0, a0, q0 + 0.5 * v0 * T, 0 * v0, 0 * v0, T)
        t = np.linspace(0.0, T, 101)
        _, _, qdd = _eval_poly(c, t)
        if np.all(np.max(np.abs(qdd), axis=0) <= np.maximum(acc, np.abs(a0)) + 1e-9):
            break
        T *= 1.25
    if position_limits is not None:
        lower, upper = (np.asarray(x, dtype=float) for x in position_limits)
        for _ in range(60):
            q = _eval_poly(c, np.linspace(0.0, T, 101))[0]
            if np.all((q >= lower) & (q <= upper)) or T <= 0.02:
                break
            T *= 0.9
            c = quintic_coefficients(q0, v0, a0, q0 + 0.5 * v0 * T, 0 * v0, 0 * v0, T)
    k = max(2, int(math.ceil(T * rate_hz)))
    t = np.linspace(0.0, T, k + 1)[1:]            # the first point lies ahead: the controller starts from now
    q, qd, qdd = _eval_poly(c, t)
    if position_limits is not None:
        q = np.clip(q, lower, upper)               # the commanded state itself at a limit: hold there
    return CommandedTrajectory(0.0, list(joint_names), t, q, qd, qdd)


def stop_from_commanded(commanded: list[CommandedTrajectory], t: float, acceleration_limit, rate_hz: float = 100.0,
                        position_limits=None) -> CommandedTrajectory | None:
    """The decelerating stop (stop_trajectory) from the state the controller is commanded at absolute time `t`
    by the trajectories sent to it (`commanded`, as joint_trajectory_controller executes them), starting at
    `t`; None when nothing is commanded or the last trajectory has ended by then (the arm holds, at rest).
    For whoever must stop an arm whose player is gone: the trajectories are what it heard on the topic."""
    if not commanded:
        return None
    end = max(c.start_time + float(c.time_from_start[-1]) for c in commanded)
    if t >= end:
        return None
    q, qd, qdd = signals.sample_commanded(commanded, np.array([t]))
    stop = stop_trajectory(commanded[-1].joint_names, q[0], qd[0], qdd[0], acceleration_limit, rate_hz,
                           position_limits=position_limits)
    return CommandedTrajectory(t, stop.joint_names, stop.time_from_start, stop.positions, stop.velocities,
                               stop.accelerations)
