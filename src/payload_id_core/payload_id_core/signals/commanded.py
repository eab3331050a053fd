"""The commanded trajectory as ros2_control's joint_trajectory_controller executes it.

With source='commanded' identification (Xu 2024 §3.2: the desired q_d, q̇_d, q̈_d replace noisy
measured derivatives) q, q̇, q̈ come from the JointTrajectory points, interpolated exactly as the
controller does (trajectory.cpp). Recordings that hold no command get a stand-in smoothed from
the measured motion (smoothed_trajectory).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.signals.filtering import filter_on_uniform_grid
from payload_id_core.signals.recording import CommandedTrajectory


def _interpolate(tau: np.ndarray, T: np.ndarray, p0, v0, a0, p1, v1, a1, mode: str):
    """Vectorised Trajectory::interpolate_between_points of ros2_controllers' joint_trajectory_controller.

    tau: (N, 1) time since the segment start, T: (N, 1) segment duration; p0..a1: (N, n).
    mode 'linear' (positions only: constant velocity, zero acceleration), 'cubic' (positions +
    velocities), 'quintic' (positions + velocities + accelerations). Like the controller, a sample
    outside [0, T] is clamped to the segment end and falls back to linear interpolation.
    """
    outside = (tau < 0.0) | (tau > T)
    tau = np.clip(tau, 0.0, T)
    safe_T = np.where(T > 0.0, T, 1.0)
    zero_T = T == 0.0
    lin_v = np.where(zero_T, 0.0, (p1 - p0) / safe_T)
    lin = (p0 + tau * lin_v, np.broadcast_to(lin_v, p0.shape).copy(), np.zeros_like(p0))
    if mode == "linear":
        return lin
    if mode == "cubic":
        c2 = np.where(zero_T, 0.0, (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * T - v1 * T) / safe_T**2)
        c3 = np.where(zero_T, 0.0, (2.0 * p0 - 2.0 * p1 + v0 * T + v1 * T) / safe_T**3)
        q = p0 + v0 * tau + c2 * tau**2 + c3 * tau**3
        qd = v0 + 2.0 * c2 * tau + 3.0 * c3 * tau**2
        qdd = 2.0 * c2 + 6.0 * c3 * tau
    elif mode == "quintic":
        T2 = T**2
        s3, s4, s5 = safe_T**3, safe_T**4, safe_T**5
        c2 = 0.5 * a0
        c3 = np.where(zero_T, 0.0, (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * T2 + a1 * T2 - 12.0 * v0 * T - 8.0 * v1 * T)
                      / (2.0 * s3))
        c4 = np.where(zero_T, 0.0, (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * T2 - 2.0 * a1 * T2 + 16.0 * v0 * T
                                    + 14.0 * v1 * T) / (2.0 * s4))
        c5 = np.where(zero_T, 0.0, (-12.0 * p0 + 12.0 * p1 - a0 * T2 + a1 * T2 - 6.0 * v0 * T - 6.0 * v1 * T)
                      / (2.0 * s5))
        q = p0 + v0 * tau + c2 * tau**2 + c3 * tau**3 + c4 * tau**4 + c5 * tau**5
        qd = v0 + 2.0 * c2 * tau + 3.0 * c3 * tau**2 + 4.0 * c4 * tau**3 + 5.0 * c5 * tau**4
        qdd = 2.0 * c2 + 6.0 * c3 * tau + 12.0 * c4 * tau**2 + 20.0 * c5 * tau**3
    else:  # pragma: no cover - internal
        raise ValueError(mode)
    out = outside.reshape(-1)
    if out.any():
        q[out], qd[out], qdd[out] = lin[0][out], lin[1][out], lin[2][out]
    return q, qd, qdd


def _mode(traj: CommandedTrajectory) -> str:
    if traj.velocities is None:
        return "linear"
    return "cubic" if traj.accelerations is None else "quintic"


def _columns(traj: CommandedTrajectory, joint_names: list[str]) -> np.ndarray:
    missing = [j for j in joint_names if j not in traj.joint_names]
    if missing:
        raise PayloadIdError(
            f"a commanded trajectory (start {traj.start_time:.3f} s) lacks joints {missing}",
            "send every joint in each JointTrajectory (partial trajectories are not supported for identification)")
    return np.array([traj.joint_names.index(j) for j in joint_names])


def _point_arrays(traj: CommandedTrajectory, cols: np.ndarray):
    p = traj.positions[:, cols]
    v = np.zeros_like(p) if traj.velocities is None else traj.velocities[:, cols]
    a = np.zeros_like(p) if traj.accelerations is None else traj.accelerations[:, cols]
    return p, v, a


def _ordered(trajectories: Sequence[CommandedTrajectory]) -> list[CommandedTrajectory]:
    if not trajectories:
        raise PayloadIdError("no commanded trajectory to sample",
                             "record the controller's joint_trajectory topic, or use measured signals")
    # Stable: messages with equal start times keep their order, the later one wins.
    return sorted(trajectories, key=lambda tr: tr.start_time)


def _sample_one(traj: CommandedTrajectory, cols: np.ndarray, t: np.ndarray, before_state):
    """Sample one trajectory at absolute times t (all >= traj.start_time). `before_state` is the
    (q, qd, qdd) command at the trajectory's start time (the controller's state before the
    message), or None for the first trajectory, whose pre-first-point stretch holds the first point."""
    n = cols.size
    p, v, a = _point_arrays(traj, cols)
    tfs = traj.time_from_start
    rel = t - traj.start_time
    q, qd, qdd = np.empty((t.size, n)), np.zeros((t.size, n)), np.zeros((t.size, n))
    mode = _mode(traj)

    pre = rel < tfs[0]
    if pre.any():
        if before_state is None:
            q[pre] = p[0]
        else:
            b_q, b_qd, b_qdd = before_state
            k = int(pre.sum())
            rep = lambda x: np.broadcast_to(x, (k, n))  # noqa: E731
            T = np.full((k, 1), tfs[0])
            q[pre], qd[pre], qdd[pre] = _interpolate(rel[pre, None], T, rep(b_q), rep(b_qd), rep(b_qdd),
                                                     rep(p[0]), rep(v[0]), rep(a[0]), mode)

    post = rel >= tfs[-1]
    # After the last point the arm is held there at rest (the controller forwards the last point,
    # whose velocity and acceleration are zero for a trajectory that ends, as an excitation does).
    q[post] = p[-1]

    mid = ~pre & ~post
    if mid.any():
        seg = np.searchsorted(tfs, rel[mid], side="right") - 1
        T = (tfs[seg + 1] - tfs[seg])[:, None]
        tau = (rel[mid] - tfs[seg])[:, None]
        q[mid], qd[mid], qdd[mid] = _interpolate(tau, T, p[seg], v[seg], a[seg], p[seg + 1], v[seg + 1],
                                                 a[seg + 1], mode)
    return q, qd, qdd


def sample_commanded(trajectories: Sequence[CommandedTrajectory], t, joint_names: Sequence[str] | None = None):
    """Commanded (q, q̇, q̈) at absolute times `t` (N,) -> three (N, n) arrays in `joint_names` order
    (default: the first trajectory's joints).

    Reproduces ros2_control's joint_trajectory_controller (trajectory.cpp, `sample` and
    `interpolate_between_points`): between points, quintic polynomials when the points carry
    positions, velocities and accelerations, cubic with positions and velocities, linear with
    positions only. A later trajectory replaces the earlier one from its start time on; before its
    first point the controller interpolates from the command it was following at that start time.
    Before the first point of the first trajectory (no earlier command is known) the first point is
    held; after the last point the last position is held with zero velocity and acceleration.
    """
    ordered = _ordered(trajectories)
    names = list(joint_names) if joint_names is not None else list(ordered[0].joint_names)
    t = np.asarray(t, dtype=float).reshape(-1)
    n = len(names)
    q, qd, qdd = np.empty((t.size, n)), np.empty((t.size, n)), np.empty((t.size, n))
    starts = np.array([tr.start_time for tr in ordered])
    # Which trajectory governs each sample: the last one started at or before it (the first one
    # also covers earlier samples).
    owner = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(ordered) - 1)
    before = None
    for k, traj in enumerate(ordered):
        cols = _columns(traj, names)
        m = owner == k
        if m.any():
            q[m], qd[m], qdd[m] = _sample_one(traj, cols, t[m], before)
        if k + 1 < len(ordered):
            # The command at the next trajectory's start time is its "state before the message".
            b = _sample_one(traj, cols, np.array([starts[k + 1]]), before)
            before = (b[0][0], b[1][0], b[2][0])
    return q, qd, qdd


def commanded_span(trajectories: Sequence[CommandedTrajectory]) -> tuple[float, float]:
    """[first point of the first trajectory, last point of the last one]: where the command is known."""
    ordered = _ordered(trajectories)
    return ordered[0].start_time + float(ordered[0].time_from_start[0]), ordered[-1].end_time

def smoothed_trajectory(t, q, joint_names: Sequence[str], cutoff_hz: float, order: int = 4) -> CommandedTrajectory:
    """A stand-in commanded trajectory from measured positions, for recordings that hold no command.

    Points on a uniform grid at the median sampling rate (uniform_grid), positions low-pass
    filtered without phase at `cutoff_hz` and differentiated twice (filtered_derivatives' grid
    step): the points' positions, velocities and accelerations are one smooth signal, so the
    controller's quintic segments between them (sample_commanded) reproduce it. Points mixing
    raw positions with filtered derivatives disagree by the logger's quantisation, and a 10 ms
    quintic segment turns a 1e-5 rad disagreement into accelerations of several rad/s²
    (60 δ / T²). The result carries `smoothing_cutoff_hz`, so conditioned_signals filters the
    torques alike and trims the filter's end transients (EDGE_PERIODS).
    """
    t = np.asarray(t, dtype=float)
    grid, (p, v, a) = filter_on_uniform_grid(t, np.asarray(q, dtype=float), cutoff_hz, order, 2)
    return CommandedTrajectory(float(grid[0]), list(joint_names), grid - grid[0], p, v, a,
                               smoothing_cutoff_hz=float(cutoff_hz))
