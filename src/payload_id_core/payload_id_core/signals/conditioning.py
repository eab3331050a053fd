"""From a Recording to regressor inputs: the one pipeline every identification uses.

With source='commanded' (Xu 2024 §3.2: the desired q_d, q̇_d, q̈_d replace noisy measured
derivatives) q, q̇, q̈ come from the JointTrajectory points, interpolated exactly as ros2_control's
joint_trajectory_controller does (signals.commanded), at the measured sample times shifted by the
command-to-motion delay (signals.delay). With source='measured' the positions are low-pass filtered
without phase shift and differentiated (signals.filtering; Gautier's practice, Khalil 2007 §III).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from payload_id_core.errors import Choice, PayloadIdError, parse_choice
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.commanded import commanded_span, sample_commanded
from payload_id_core.signals.delay import estimate_delay
from payload_id_core.signals.filtering import (
    decimate_parallel,
    edge_seconds,
    filtered_derivatives,
    nominal_grid,
    sampling_rate,
)
from payload_id_core.signals.recording import CommandedTrajectory, Recording
from payload_id_core.signals.tracking import check_follows_command, tracking_error_motion

# Default low-pass cutoff for differentiated measured positions (Hz), capped at a quarter of the
# sampling rate: well above the bandwidth of identification excitations (< 2 Hz harmonics) and
# below the noise that double differentiation amplifies.
DEFAULT_MEASURED_CUTOFF_HZ = 10.0
# Stamps further than this fraction of the interval from their nominal grid are replaced by it (below: the same).
STAMP_JITTER_NOTABLE = 1e-3


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
    notes: list[Note] = field(default_factory=list)
    joint_names: list[str] = field(default_factory=list)
    source: str = "commanded"
    q_commanded: np.ndarray | None = None   # (N, n) the command alone, when the tracking error was added
    command_start: float | None = None      # s, the commanded trajectory's start (commanded source)

    @property
    def tracking_error(self) -> bool:
        """Whether the measured deviation from the command is in q, q̇, q̈ (signals/tracking.py)."""
        return self.q_commanded is not None

    @property
    def commanded_positions(self) -> np.ndarray:
        """The commanded positions: q without the measured tracking error (two runs of one command share them)."""
        return self.q if self.q_commanded is None else self.q_commanded

    def __len__(self) -> int:
        return self.t.size

    def rows(self, keep: np.ndarray) -> Signals:
        """These signals at the samples `keep` (a boolean mask or indices) only."""
        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[keep]
        return replace(self, t=self.t[keep], q=self.q[keep], qd=self.qd[keep], qdd=self.qdd[keep],
                       tau=self.tau[keep], temperature=pick(self.temperature), q_commanded=pick(self.q_commanded),
                       notes=list(self.notes))


def _smoothing_cutoff(commanded: Sequence[CommandedTrajectory]) -> float | None:
    """The stand-in trajectories' smoothing cutoff (the lowest, when several carry one)."""
    cutoffs = [tr.smoothing_cutoff_hz for tr in commanded if tr.smoothing_cutoff_hz is not None]
    return min(cutoffs) if cutoffs else None


class SignalSource(Choice):
    """Where the regressor's motion comes from; the value is what users type (identify-payload --signals)."""

    COMMANDED = "commanded"     # the recorded command, delay-corrected (Xu 2024 §3.2)
    MEASURED = "measured"       # the measured positions, filtered and differentiated


def on_nominal_grid(t: np.ndarray, notes: list[Note]) -> np.ndarray:
    """The joint states' sampling instants: their nominal grid when the stamps are one read with jitter
    (filtering.nominal_grid: the values were sampled on the controller's period, the stamps wander), else the
    stamps. Both sides of τ = Y θ then sit on the instants the samples were taken, and the command is sampled there."""
    grid = nominal_grid(t)
    if grid is None:
        return t
    off = np.abs(grid - t)
    step = float(grid[-1] - grid[0]) / max(round(float(grid[-1] - grid[0]) / float(np.median(np.diff(grid)))), 1)
    if float(off.max()) <= STAMP_JITTER_NOTABLE * step:
        return t
    notes.append(Note(NoteCode.SIGNALS_STAMPS_ON_GRID,
                      f"joint-state stamps jitter by {1e3 * float(np.sqrt(np.mean(off ** 2))):.3g} ms rms (largest "
                      f"{1e3 * float(off.max()):.3g} ms) about a {1.0 / step:.4g} Hz grid: the samples are placed on "
                      "the grid, where the driver took them"))
    return grid


def conditioned_signals(recording: Recording, joint_names: Sequence[str], source: SignalSource | str = "commanded",
                        cutoff_hz: float | None = None, decimate: int = 1, delay: str | float = "estimate",
                        tracking_error: bool = False) -> Signals:
    """The pipeline from a Recording to regressor inputs (joints in `joint_names` order, matched by name).

    Joint-state stamps that jitter about a uniform grid are replaced by the grid first (on_nominal_grid).
    source='commanded' (Xu 2024 §3.2): q, q̇, q̈ = the commanded trajectory sampled at t − delay
    (t: measurement times; samples outside the commanded span are dropped); `delay` is
    'estimate' (estimate_delay on positions) or seconds. `cutoff_hz`, when given, low-passes the
    torques (zero phase). When the command is a stand-in smoothed from the measured motion
    (smoothed_trajectory, e.g. a UR CSV) the torques pass the same filter by default (parallel
    filtering of both sides of τ = Y θ, Khalil 2007 §III). `tracking_error`: the measured deviation from
    a recorded command, smoothed (signals.tracking), is added to q, q̇, q̈; not with a stand-in command,
    which is the measured motion already (Signals.tracking_error says whether it was added).
    source='measured': positions low-pass filtered at `cutoff_hz` (default
    DEFAULT_MEASURED_CUTOFF_HZ, at most fs/4) without phase shift, then q̇, q̈ by central
    differences; torques pass the same filter (irregular sampling: see filtered_derivatives).
    Whenever a zero-phase filter ran here (measured motion, smoothed stand-in or filtered
    torques), samples within edge_seconds(cutoff) of either end are dropped (EDGE_PERIODS).
    decimate > 1: every signal passes the same anti-alias filter (cutoff 0.8·fs/(2·decimate))
    before one sample in `decimate` is kept (Khalil 2007 §III). Exact parallel filtering of the
    regressor columns is `decimate_parallel`, for callers who build Y at full rate.
    """
    source = parse_choice(SignalSource, source, "signal source")
    joint_names = list(joint_names)
    joints = recording.joints
    lacking = [j for j in joint_names if j not in joints.joint_names]
    if lacking:
        raise PayloadIdError(f"{recording.source or 'recording'}: joint states lack joints {lacking} "
                             f"(they have {joints.joint_names})",
                             "record all the robot's joints or pass the right URDF")
    joints = joints.reordered(np.array([joints.joint_names.index(j) for j in joint_names]), joint_names)
    notes = [Note.from_any(n) for n in recording.notes]
    t = on_nominal_grid(joints.t, notes)
    fs = sampling_rate(t)
    temperature = joints.temperature
    filtered_at = None     # cutoff (Hz) of the zero-phase filter applied here, if any

    if source is SignalSource.COMMANDED:
        if not recording.commanded:
            raise PayloadIdError(f"{recording.source or 'recording'} holds no commanded trajectory",
                                 "record the controller's joint_trajectory topic, or use measured signals")
        t0, t1 = commanded_span(recording.commanded)
        if delay == "estimate":
            inside = (t >= t0) & (t <= t1)
            q_cmd_at_t, _, _ = sample_commanded(recording.commanded, t[inside], joint_names)
            try:
                d = estimate_delay(t[inside], joints.q[inside], t[inside], q_cmd_at_t)
                notes.append(Note(NoteCode.SIGNALS_DELAY_ESTIMATED,
                                  f"command-to-motion delay estimated: {d * 1e3:.2f} ms"))
            except PayloadIdError as err:
                d = 0.0
                notes.append(Note(NoteCode.SIGNALS_DELAY_NOT_ESTIMATED, f"delay not estimated ({err.problem}); 0 used"))
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
            notes.append(Note(NoteCode.SIGNALS_OUTSIDE_COMMAND_DROPPED,
                              f"{dropped} samples outside the commanded trajectory were dropped"))
        q, qd, qdd = sample_commanded(recording.commanded, ts[keep], joint_names)
        check_follows_command(t[keep], joints.q[keep], q, joint_names, recording.source or "recording")
        smoothing = _smoothing_cutoff(recording.commanded)
        added = tracking_error and smoothing is None
        q_cmd = q if added else None
        if added:
            e, ed, edd = tracking_error_motion(t[keep], joints.q[keep] - q)
            q, qd, qdd = q + e, qd + ed, qdd + edd
            worst = np.max(np.abs(e), axis=0)
            notes.append(Note(NoteCode.SIGNALS_TRACKING_ERROR_ADDED,
                              "measured tracking error added to the commanded motion (largest "
                              f"{float(worst.max()) * 1e3:.3g} mrad, {joint_names[int(np.argmax(worst))]})"))
        tau = joints.tau
        fc = cutoff_hz if cutoff_hz is not None else smoothing
        if fc is not None:
            # Filtered over the whole record (then cut), against the true time stamps.
            tau = filtered_derivatives(t, tau, fc, derivatives=0)[0]
            filtered_at = fc if smoothing is None else min(fc, smoothing)
            if cutoff_hz is None:
                notes.append(Note(NoteCode.SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN,
                                  f"torques low-pass filtered at {fc:g} Hz (zero phase) like the measured motion "
                                  "standing in for the command"))
            else:
                notes.append(Note(NoteCode.SIGNALS_TORQUES_FILTERED,
                                  f"torques low-pass filtered at {fc:g} Hz (zero phase)"))
        elif smoothing is not None:
            filtered_at = smoothing
        t, tau = t[keep], tau[keep]
        temperature = None if temperature is None else temperature[keep]
    else:
        d, q_cmd = 0.0, None
        fc = cutoff_hz if cutoff_hz is not None else min(DEFAULT_MEASURED_CUTOFF_HZ, fs / 4.0)
        q, qd, qdd = filtered_derivatives(t, joints.q, fc)
        tau = filtered_derivatives(t, joints.tau, fc, derivatives=0)[0]
        filtered_at = fc
        notes.append(Note(NoteCode.SIGNALS_MEASURED_FILTERED,
                          f"measured positions and torques low-pass filtered at {fc:g} Hz (zero phase), "
                          "velocities and accelerations by central differences"))

    if filtered_at is not None:
        edge = edge_seconds(filtered_at)
        inner = (t >= t[0] + edge) & (t <= t[-1] - edge)
        if inner.sum() < 3:
            raise PayloadIdError(f"{recording.source or 'recording'}: {t[-1] - t[0]:.2f} s of signal is too short "
                                 f"for a {filtered_at:g} Hz filter, whose first and last {edge:.2f} s are not trusted",
                                 "record a longer run, or raise the cutoff")
        t, q, qd, qdd, tau = t[inner], q[inner], qd[inner], qdd[inner], tau[inner]
        temperature = None if temperature is None else temperature[inner]
        q_cmd = None if q_cmd is None else q_cmd[inner]
        notes.append(Note(NoteCode.SIGNALS_EDGES_TRIMMED,
                          f"{int((~inner).sum())} samples within {edge:.3g} s of the ends dropped "
                          f"(transients of the {filtered_at:g} Hz zero-phase filter and of differentiation)"))

    if decimate != 1:
        factor = int(decimate)
        together = [q, qd, qdd] if q_cmd is None else [q, qd, qdd, q_cmd]
        tau, stacked, idx = decimate_parallel(tau, np.concatenate(together, axis=1), fs, factor)
        n = len(joint_names)
        q, qd, qdd = stacked[:, :n], stacked[:, n:2 * n], stacked[:, 2 * n:3 * n]
        q_cmd = None if q_cmd is None else stacked[:, 3 * n:]
        t = t[idx]
        if temperature is not None:
            temperature = temperature[idx]
        notes.append(Note(NoteCode.SIGNALS_DECIMATED,
                          f"decimated by {factor} after a common {0.8 * fs / (2.0 * factor):.3g} Hz "
                          "zero-phase low-pass"))

    return Signals(t=t, q=q, qd=qd, qdd=qdd, tau=tau, temperature=temperature, delay_used=d, notes=notes,
                   joint_names=joint_names, source=source.value, q_commanded=q_cmd,
                   command_start=t0 if source is SignalSource.COMMANDED else None)
