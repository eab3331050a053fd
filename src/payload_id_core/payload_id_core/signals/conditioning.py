"""From a Recording to regressor inputs: commanded-trajectory sampling, filtering, differentiation,
decimation and time alignment.

`conditioned_signals` is the one pipeline every identification uses. With source='commanded'
(Xu 2024 §3.2: the desired q_d, q̇_d, q̈_d replace noisy measured derivatives) q, q̇, q̈ come from
the JointTrajectory points, interpolated exactly as ros2_control's joint_trajectory_controller
does, at the measured sample times shifted by the command-to-motion delay. With
source='measured' the positions are low-pass filtered without phase shift and differentiated
(Gautier's practice, Khalil 2007 §III).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import signal
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize_scalar

from payload_id_core.signals.recording import CommandedTrajectory, Recording
from payload_id_core.errors import PayloadIdError

# Default low-pass cutoff for differentiated measured positions (Hz), capped at a quarter of the
# sampling rate: well above the bandwidth of identification excitations (< 2 Hz harmonics) and
# below the noise that double differentiation amplifies.
DEFAULT_MEASURED_CUTOFF_HZ = 10.0


# -- commanded trajectory sampling (joint_trajectory_controller semantics) ----------------------

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


# -- filtering and differentiation --------------------------------------------------------------

def sampling_rate(t) -> float:
    """Nominal sampling rate (Hz): 1 / median sample interval (robust to a few dropped samples)."""
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        raise PayloadIdError(f"only {t.size} sample(s)", "record at least a few seconds of motion")
    return 1.0 / float(np.median(np.diff(t)))


def lowpass(x, fs: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass along axis 0 (forward-backward: sosfiltfilt, so the
    effective order is 2·order and there is no phase lag)."""
    x = np.asarray(x, dtype=float)
    nyq = 0.5 * fs
    if not 0.0 < cutoff_hz < nyq:
        raise PayloadIdError(f"low-pass cutoff {cutoff_hz} Hz is not between 0 and the Nyquist frequency {nyq:.1f} Hz",
                             "choose a cutoff below half the sampling rate")
    sos = signal.butter(order, cutoff_hz / nyq, btype="low", output="sos")
    padlen = 3 * (2 * len(sos) + 1)
    if x.shape[0] <= padlen:
        raise PayloadIdError(f"{x.shape[0]} samples are too few to filter (need more than {padlen})",
                             "record a longer run")
    return signal.sosfiltfilt(sos, x, axis=0)


def central_difference(x, t) -> np.ndarray:
    """dx/dt along axis 0 for non-uniform t: second-order central differences inside, second-order
    one-sided at the ends (numpy.gradient with coordinates)."""
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    if t.size < 3:
        raise PayloadIdError(f"only {t.size} samples to differentiate", "record a longer run")
    return np.gradient(x, t, axis=0, edge_order=2)


def is_uniform(t, tolerance: float = 0.01) -> bool:
    """True when every sample interval is within `tolerance` (relative) of the median one."""
    dt = np.diff(np.asarray(t, dtype=float))
    med = float(np.median(dt))
    return bool(np.all(np.abs(dt - med) <= tolerance * med))


def uniform_grid(t) -> np.ndarray:
    """`t` itself when uniformly sampled, else a uniform grid at the median rate over [t[0], t[-1]]."""
    t = np.asarray(t, dtype=float)
    if is_uniform(t):
        return t
    fs = sampling_rate(t)
    return t[0] + np.arange(int(np.floor((t[-1] - t[0]) * fs)) + 1) / fs


def _filtered_on_grid(t, x, cutoff_hz: float, order: int, derivatives: int):
    grid = uniform_grid(t)
    xg = x if grid is t else CubicSpline(t, x, axis=0)(grid)
    out = [lowpass(xg, sampling_rate(grid), cutoff_hz, order)]
    for _ in range(derivatives):
        out.append(central_difference(out[-1], grid))
    return grid, out


def filtered_derivatives(t, x, cutoff_hz: float, order: int = 4, derivatives: int = 2) -> list[np.ndarray]:
    """[x filtered, dx/dt, d²x/dt²] (up to `derivatives`) at the sample times t, for uniform or
    irregular sampling.

    A digital filter treats samples as equally spaced. Loggers such as the UR's write at irregular
    instants (10 ms and 12 ms steps mixed, with exact time stamps): filtering those samples by
    index warps the time axis, and differentiating against the true stamps then turns the warp
    into noise (an acceleration RMS three times too large on the real UR10e files). So irregular
    data are first interpolated (cubic spline) onto a uniform grid at the median rate, filtered and
    differentiated there, and the results are interpolated back to t.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    grid, out = _filtered_on_grid(t, x, cutoff_hz, order, derivatives)
    if grid is t:
        return out
    return [CubicSpline(grid, y, axis=0, extrapolate=True)(t) for y in out]


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
    grid, (p, v, a) = _filtered_on_grid(t, np.asarray(q, dtype=float), cutoff_hz, order, 2)
    return CommandedTrajectory(float(grid[0]), list(joint_names), grid - grid[0], p, v, a,
                               smoothing_cutoff_hz=float(cutoff_hz))


# Samples within EDGE_PERIODS / cutoff seconds of either end of a zero-phase-filtered signal are
# dropped. At the ends filtfilt runs on its padding and central differences become one-sided:
# with motion at the ends, q̈ is wrong by 2–5× its RMS in the last sample, 4–6 % of it 2/fc
# in, and below 1 % beyond 3/fc (fourth-order Butterworth, 0.3–1.1 Hz sines, 100 and 500 Hz,
# cutoffs 5 and 10 Hz; test_conditioning.test_filter_edges_are_trimmed).
EDGE_PERIODS = 3.0


def edge_seconds(cutoff_hz: float) -> float:
    """Time trimmed at each end of a signal filtered at `cutoff_hz` (EDGE_PERIODS periods)."""
    return EDGE_PERIODS / float(cutoff_hz)


def decimate_parallel(tau, Y, fs: float, factor: int, cutoff_hz: float | None = None, order: int = 4):
    """Khalil 2007 §III parallel filtering: torques `tau` (N, ...) and every column of the
    observation matrix `Y` (N, ...) pass the same zero-phase low-pass filter, then one sample in
    `factor` is kept. Default cutoff 0.8·fs/(2·factor), as Matlab's `decimate` (a Butterworth
    here). Returns (tau_d, Y_d, kept_indices).
    """
    factor = int(factor)
    if factor < 1:
        raise PayloadIdError(f"decimation factor {factor} is not a positive integer", "use 1 (none) or more")
    tau = np.asarray(tau, dtype=float)
    Y = np.asarray(Y, dtype=float)
    idx = np.arange(0, tau.shape[0], factor)
    if factor == 1:
        return tau, Y, idx
    fc = 0.8 * fs / (2.0 * factor) if cutoff_hz is None else cutoff_hz
    tau_f = lowpass(tau, fs, fc, order)
    Y_f = lowpass(Y.reshape(Y.shape[0], -1), fs, fc, order).reshape(Y.shape)
    return tau_f[idx], Y_f[idx], idx


# -- time alignment -----------------------------------------------------------------------------

def estimate_delay(t_meas, q_meas, t_cmd, q_cmd, max_delay: float = 0.1) -> float:
    """Constant delay d (s) such that q_meas(t) ≈ q_cmd(t − d) (positive: measurement lags command).

    Least squares over d of q_meas(t) − q_cmd(t − d) − c_j, where q_cmd is a cubic spline of its
    samples and c_j a constant per joint (a steady tracking offset does not bias d). The cost is
    evaluated on a grid of one measurement interval over ±max_delay, then the best cell is refined
    with a bounded scalar search, which resolves a fraction of the sample interval. (A velocity
    cross-correlation peak is too flat for slow excitations: noise moves it by whole samples.)
    """
    t_meas = np.asarray(t_meas, float)
    t_cmd = np.asarray(t_cmd, float)
    q_meas = np.asarray(q_meas, float).reshape(t_meas.size, -1)
    q_cmd = np.asarray(q_cmd, float).reshape(t_cmd.size, -1)
    if q_meas.shape[1] != q_cmd.shape[1]:
        raise PayloadIdError(f"delay estimation: {q_meas.shape[1]} measured joints against {q_cmd.shape[1]} commanded",
                             "give the same joints in the same order")
    dt = 1.0 / sampling_rate(t_meas)
    lo, hi = max(t_meas[0], t_cmd[0]), min(t_meas[-1], t_cmd[-1])
    inner = (t_meas >= lo + max_delay + dt) & (t_meas <= hi - max_delay - dt)
    if inner.sum() < 10:
        raise PayloadIdError(f"commanded and measured motion overlap for only {max(hi - lo, 0.0):.3f} s",
                             "record the joint states while the commanded trajectory plays")
    spline = CubicSpline(t_cmd, q_cmd, axis=0, extrapolate=False)
    tm, qm = t_meas[inner], q_meas[inner]
    motion = q_cmd - q_cmd.mean(axis=0)
    if np.sum(motion**2) <= 1e-16 * motion.size:
        raise PayloadIdError("the commanded trajectory does not move, so no delay can be estimated",
                             "give the delay explicitly or record a moving trajectory")

    def cost(d: float, stride: int = 1) -> float:
        r = qm[::stride] - spline(tm[::stride] - d)
        r -= r.mean(axis=0)
        return float(np.sum(r * r))

    stride = max(1, tm.size // 5000)  # the coarse scan needs no more than a few thousand samples
    grid = np.arange(-max_delay, max_delay + 0.5 * dt, dt)
    best = grid[int(np.argmin([cost(d, stride) for d in grid]))]
    res = minimize_scalar(cost, bounds=(best - dt, best + dt), method="bounded", options={"xatol": 1e-7})
    return float(res.x)


# -- the pipeline -------------------------------------------------------------------------------

@dataclass
class Signals:
    """Regressor inputs on one time base: q, q̇, q̈, torque (and drive temperature when recorded)."""

    t: np.ndarray                      # (N,) s, measurement times
    q: np.ndarray                      # (N, n)
    qd: np.ndarray                     # (N, n)
    qdd: np.ndarray                    # (N, n)
    tau: np.ndarray                    # (N, n) N·m
    temperature: np.ndarray | None
    delay_used: float                  # s, command-to-motion delay applied (0 for measured)
    notes: list[str] = field(default_factory=list)
    joint_names: list[str] = field(default_factory=list)
    source: str = "commanded"

    def __len__(self) -> int:
        return self.t.size


def _smoothing_cutoff(commanded: Sequence[CommandedTrajectory]) -> float | None:
    """The stand-in trajectories' smoothing cutoff (the lowest, when several carry one)."""
    cutoffs = [tr.smoothing_cutoff_hz for tr in commanded if tr.smoothing_cutoff_hz is not None]
    return min(cutoffs) if cutoffs else None


def conditioned_signals(recording: Recording, joint_names: Sequence[str], source: str = "commanded",
                        cutoff_hz: float | None = None, decimate: int = 1, delay: str | float = "estimate") -> Signals:
    """The pipeline from a Recording to regressor inputs (joints in `joint_names` order, matched by name).

    source='commanded' (Xu 2024 §3.2): q, q̇, q̈ = the commanded trajectory sampled at t − delay
    (t: measurement times; samples outside the commanded span are dropped); `delay` is
    'estimate' (estimate_delay on positions) or seconds. `cutoff_hz`, when given, low-passes the
    torques (zero phase). When the command is a stand-in smoothed from the measured motion
    (smoothed_trajectory, e.g. a UR CSV) the torques pass the same filter by default (parallel
    filtering of both sides of τ = Y θ, Khalil 2007 §III).
    source='measured': positions low-pass filtered at `cutoff_hz` (default
    DEFAULT_MEASURED_CUTOFF_HZ, at most fs/4) without phase shift, then q̇, q̈ by central
    differences; torques pass the same filter (irregular sampling: see filtered_derivatives).
    Whenever a zero-phase filter ran here (measured motion, smoothed stand-in or filtered
    torques), samples within edge_seconds(cutoff) of either end are dropped (EDGE_PERIODS).
    decimate > 1: every signal passes the same anti-alias filter (cutoff 0.8·fs/(2·decimate))
    before one sample in `decimate` is kept (Khalil 2007 §III). Exact parallel filtering of the
    regressor columns is `decimate_parallel`, for callers who build Y at full rate.
    """
    joint_names = list(joint_names)
    joints = recording.joints
    lacking = [j for j in joint_names if j not in joints.joint_names]
    if lacking:
        raise PayloadIdError(f"{recording.source or 'recording'}: joint states lack joints {lacking} "
                             f"(they have {joints.joint_names})", "record all the robot's joints or pass the right URDF")
    joints = joints.reordered(np.array([joints.joint_names.index(j) for j in joint_names]), joint_names)
    notes: list[str] = list(recording.notes)
    t = joints.t
    fs = sampling_rate(t)
    temperature = joints.temperature
    filtered_at = None     # cutoff (Hz) of the zero-phase filter applied here, if any

    if source == "commanded":
        if not recording.commanded:
            raise PayloadIdError(f"{recording.source or 'recording'} holds no commanded trajectory",
                                 "record the controller's joint_trajectory topic, or use measured signals")
        t0, t1 = commanded_span(recording.commanded)
        if delay == "estimate":
            inside = (t >= t0) & (t <= t1)
            q_cmd_at_t, _, _ = sample_commanded(recording.commanded, t[inside], joint_names)
            try:
                d = estimate_delay(t[inside], joints.q[inside], t[inside], q_cmd_at_t)
                notes.append(f"command-to-motion delay estimated: {d * 1e3:.2f} ms")
            except PayloadIdError as err:
                d = 0.0
                notes.append(f"delay not estimated ({err.problem}); 0 used")
        elif isinstance(delay, (int, float)) and np.isfinite(delay):
            d = float(delay)
        else:
            raise PayloadIdError(f"delay {delay!r} is neither 'estimate' nor a number of seconds",
                                 "pass delay='estimate' or the delay in seconds")
        ts = t - d
        keep = (ts >= t0) & (ts <= t1)
        if keep.sum() < 3:
            raise PayloadIdError(f"{recording.source or 'recording'}: no joint state falls inside the commanded "
                                 f"trajectory ({t0:.3f} s to {t1:.3f} s)",
                                 "record the joint states while the trajectory plays (same clock for both topics)")
        dropped = int((~keep).sum())
        if dropped:
            notes.append(f"{dropped} samples outside the commanded trajectory were dropped")
        q, qd, qdd = sample_commanded(recording.commanded, ts[keep], joint_names)
        tau = joints.tau
        smoothing = _smoothing_cutoff(recording.commanded)
        fc = cutoff_hz if cutoff_hz is not None else smoothing
        if fc is not None:
            # Filtered over the whole record (then cut), against the true time stamps.
            tau = filtered_derivatives(t, tau, fc, derivatives=0)[0]
            filtered_at = fc if smoothing is None else min(fc, smoothing)
            why = " like the measured motion standing in for the command" if cutoff_hz is None else ""
            notes.append(f"torques low-pass filtered at {fc:g} Hz (zero phase){why}")
        elif smoothing is not None:
            filtered_at = smoothing
        t, tau = t[keep], tau[keep]
        temperature = None if temperature is None else temperature[keep]
    elif source == "measured":
        d = 0.0
        fc = cutoff_hz if cutoff_hz is not None else min(DEFAULT_MEASURED_CUTOFF_HZ, fs / 4.0)
        q, qd, qdd = filtered_derivatives(t, joints.q, fc)
        tau = filtered_derivatives(t, joints.tau, fc, derivatives=0)[0]
        filtered_at = fc
        notes.append(f"measured positions and torques low-pass filtered at {fc:g} Hz (zero phase), "
                     "velocities and accelerations by central differences")
    else:
        raise PayloadIdError(f"unknown signal source '{source}'", "use 'commanded' or 'measured'")

    if filtered_at is not None:
        edge = edge_seconds(filtered_at)
        inner = (t >= t[0] + edge) & (t <= t[-1] - edge)
        if inner.sum() < 3:
            raise PayloadIdError(f"{recording.source or 'recording'}: {t[-1] - t[0]:.2f} s of signal is too short "
                                 f"for a {filtered_at:g} Hz filter, whose first and last {edge:.2f} s are not trusted",
                                 "record a longer run, or raise the cutoff")
        t, q, qd, qdd, tau = t[inner], q[inner], qd[inner], qdd[inner], tau[inner]
        temperature = None if temperature is None else temperature[inner]
        notes.append(f"{int((~inner).sum())} samples within {edge:.3g} s of the ends dropped "
                     f"(transients of the {filtered_at:g} Hz zero-phase filter and of differentiation)")

    if decimate != 1:
        factor = int(decimate)
        tau, stacked, idx = decimate_parallel(tau, np.concatenate([q, qd, qdd], axis=1), fs, factor)
        n = len(joint_names)
        q, qd, qdd = stacked[:, :n], stacked[:, n:2 * n], stacked[:, 2 * n:]
        t = t[idx]
        if temperature is not None:
            temperature = temperature[idx]
        notes.append(f"decimated by {factor} after a common {0.8 * fs / (2.0 * factor):.3g} Hz zero-phase low-pass")

    return Signals(t=t, q=q, qd=qd, qdd=qdd, tau=tau, temperature=temperature, delay_used=d, notes=notes,
                   joint_names=joint_names, source=source)
