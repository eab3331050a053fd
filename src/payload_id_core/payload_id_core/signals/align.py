"""Two runs of one trajectory put on one trajectory clock, when nothing recorded that clock.

A recording that holds the commanded trajectory carries its own time base: the command says when
each point is due. A recording without one (a UR CSV: the measured motion, smoothed, stands in for
the command) does not, and the rest before and after the motion differs between runs, so the
loaded and the unloaded run of the same excitation start and end at different times. Methods that
subtract the two runs sample by sample (Khalil 2007 eq. 29, Gaz 2017 eq. 26) need them on the same
trajectory time. This module:

  * finds each run's motion window (any joint faster than a threshold),
  * finds the loaded run's clock offset by least squares on the joint positions, to a fraction of
    a sample (`trajectory_offset`), and refuses runs whose positions still differ after the best
    shift (they are not the same trajectory),
  * resamples both onto the common trajectory time (`resampled`: the stand-in command sampled as
    the controller would, the torques filtered as conditioned_signals filters them for a stand-in).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.filtering import filtered_derivatives
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording

MOTION_VELOCITY_RAD_S = 0.02   # any joint faster than this: the excitation is playing
MOTION_PAD_S = 0.3             # rest kept on each side of the motion (the start and stop transients)
DEFAULT_RATE_HZ = 50.0         # identification excitations hold their energy below 2 Hz
# The offset is searched within this distance of the one the motion windows' starts suggest.
OFFSET_SEARCH_S = 0.5
# Largest joint position difference (rad) between two measured runs of one trajectory after alignment.
# With the 2.805 kg load a UR10e tracks its excitation up to 1.7 mrad differently from the unloaded run;
# a different trajectory differs by tenths of a radian. Same value as the tolerance the payload methods
# use for measured motion.
SAME_TRAJECTORY_TOL_RAD = 2e-2
# The common window must hold at least this fraction of the unloaded run's motion: less leaves the offset fit and
# the same-trajectory check too little to judge by. A shorter overlap than the whole motion is said in the note.
MIN_OVERLAP_FRACTION = 0.5
# Below this fraction of the unloaded run's motion missing, the overlap is the whole motion (rounding of the ends).
COVERAGE_TOL = 0.02


@dataclass(frozen=True)
class OffsetFit:
    """other(t + offset_s) ≈ reference(t): the shift and the joint position mismatch left after it."""

    offset_s: float
    rms_rad: float      # RMS over joints and samples
    max_rad: float      # largest single joint difference


@dataclass
class AlignedPair:
    """The unloaded and the loaded run on the same trajectory grid (same length, both starting at 0 s)."""

    unloaded: Recording
    loaded: Recording
    fit: OffsetFit
    rate_hz: float
    dropped_unloaded: tuple[int, int]   # original samples left out before / after the common window
    dropped_loaded: tuple[int, int]
    note: Note


def stand_in_cutoff(recording: Recording) -> float | None:
    """The smoothing cutoff (Hz) of the recording's stand-in command, None when a command was recorded."""
    cutoffs = [c.smoothing_cutoff_hz for c in recording.commanded if c.smoothing_cutoff_hz is not None]
    return min(cutoffs) if cutoffs else None


def motion_window(recording: Recording, velocity: float = MOTION_VELOCITY_RAD_S) -> tuple[float, float]:
    """First and last time any joint moves faster than `velocity` (rad/s)."""
    qd = recording.joints.qd
    if qd is None:
        raise PayloadIdError(f"{recording.source}: no joint velocities to find the motion in",
                             "read the recording with read_ur_csv, which differentiates the positions")
    moving = np.flatnonzero(np.abs(qd).max(axis=1) > velocity)
    if moving.size == 0:
        raise PayloadIdError(f"{recording.source}: the arm does not move (no joint faster than {velocity} rad/s)",
                             "give a recording of an excitation trajectory")
    t = recording.joints.t
    return float(t[moving[0]]), float(t[moving[-1]])


def _positions_at(recording: Recording, t: np.ndarray) -> np.ndarray:
    j = recording.joints
    return np.column_stack([np.interp(t, j.t, j.q[:, k]) for k in range(j.q.shape[1])])


def trajectory_offset(reference: Recording, other: Recording, window: tuple[float, float]) -> OffsetFit:
    """The time s such that other(t + s) ≈ reference(t) on `window` (reference's clock), by least squares.

    A coarse start from the motion windows' starts, then a bounded scalar search of the squared
    position mismatch (positions interpolated linearly: millisecond resolution at excitation speeds)."""
    t_ref = reference.joints.t
    s0 = motion_window(other)[0] - motion_window(reference)[0]
    # Only where `other` was recorded for every shift searched: beyond its ends np.interp would hold its last
    # sample, and a run cut short would look like another trajectory (1.35 rad on a UR10e run cut at 74 %).
    t_other = other.joints.t
    lo = max(window[0], float(t_other[0]) - (s0 - OFFSET_SEARCH_S))
    hi = min(window[1], float(t_other[-1]) - (s0 + OFFSET_SEARCH_S))
    inside = (t_ref >= lo) & (t_ref <= hi)
    if np.count_nonzero(inside) < 3:
        raise PayloadIdError(f"{other.source} and {reference.source} share no stretch of motion to align them on",
                             "give the loaded and the unloaded run of the same excitation, each recorded whole")
    t, q_ref = t_ref[inside], reference.joints.q[inside]

    def mismatch(s: float) -> np.ndarray:
        return _positions_at(other, t + s) - q_ref

    res = minimize_scalar(lambda s: float(np.sum(mismatch(s) ** 2)),
                          bounds=(s0 - OFFSET_SEARCH_S, s0 + OFFSET_SEARCH_S), method="bounded",
                          options={"xatol": 1e-5})
    d = mismatch(float(res.x))
    return OffsetFit(float(res.x), float(np.sqrt(np.mean(d ** 2))), float(np.max(np.abs(d))))


def uniform_grid(t0: float, t1: float, rate_hz: float) -> np.ndarray:
    """t0, t0 + 1/rate, ... up to t1."""
    return t0 + np.arange(int(np.floor((t1 - t0) * rate_hz)) + 1) / rate_hz


def resampled(recording: Recording, t_grid: np.ndarray, cutoff_hz: float | None = None,
              t_zero: float | None = None) -> Recording:
    """`recording` (with a stand-in command) on the times `t_grid` (inside its span); the clock is shifted
    so that t_grid[0] becomes `t_zero` (default unchanged).

    Nothing of its own: the motion is the stand-in command sampled as the controller would
    (sample_commanded) and the torques are filtered as conditioned_signals filters them
    (filtered_derivatives at `cutoff_hz`, default the stand-in's smoothing cutoff, against the true
    time stamps), then interpolated onto the grid. The result is already conditioned: its command
    is a plain trajectory (no smoothing_cutoff_hz), so conditioned_signals neither filters its
    torques again nor trims it."""
    j = recording.joints
    t_grid = np.asarray(t_grid, dtype=float)
    if t_grid[0] < j.t[0] or t_grid[-1] > j.t[-1]:
        raise PayloadIdError(f"{recording.source}: resampling grid {t_grid[0]:.2f}..{t_grid[-1]:.2f} s outside the "
                             f"recording {j.t[0]:.2f}..{j.t[-1]:.2f} s", "cut the window inside the recording")
    if not recording.commanded:
        raise PayloadIdError(f"{recording.source}: no (stand-in) commanded trajectory to resample",
                             "read the recording with read_ur_csv, which smooths the measured motion into one")
    if cutoff_hz is None:
        cutoff_hz = stand_in_cutoff(recording)
    names = list(j.joint_names)
    q, qd, qdd = sample_commanded(recording.commanded, t_grid, names)
    tau_f = j.tau if cutoff_hz is None else filtered_derivatives(j.t, j.tau, cutoff_hz, derivatives=0)[0]
    tau = np.column_stack([np.interp(t_grid, j.t, tau_f[:, k]) for k in range(tau_f.shape[1])])
    shift = 0.0 if t_zero is None else t_zero - t_grid[0]
    t = t_grid + shift
    joints = JointSamples(t, names, q, qd, tau)
    commanded = CommandedTrajectory(float(t[0]), names, t - t[0], q, qd, qdd)
    # The measured-as-commanded note stays last, as read_ur_csv puts it.
    notes = [n for n in map(Note.from_any, recording.notes) if n.code is not NoteCode.SIGNALS_MEASURED_AS_COMMANDED]
    measured = [n for n in map(Note.from_any, recording.notes) if n.code is NoteCode.SIGNALS_MEASURED_AS_COMMANDED]
    notes.append(Note(NoteCode.SIGNALS_RESAMPLED,
                      f"{Path(recording.source).name}: motion window resampled at {1 / np.median(np.diff(t)):.4g} Hz"
                      + (f", torques low-pass filtered at {cutoff_hz:g} Hz (zero phase)" if cutoff_hz else "")))
    notes.extend(measured[:1])
    return Recording(joints=joints, commanded=[commanded], wrench=None, source=recording.source, notes=notes)


def padded_motion_window(recording: Recording) -> tuple[float, float]:
    """The motion window ± MOTION_PAD_S, inside the recording."""
    a, b = motion_window(recording)
    t = recording.joints.t
    return max(a - MOTION_PAD_S, float(t[0])), min(b + MOTION_PAD_S, float(t[-1]))


def _dropped(t: np.ndarray, a: float, b: float) -> tuple[int, int]:
    return int(np.sum(t < a - 1e-9)), int(np.sum(t > b + 1e-9))


def aligned_pair(unloaded: Recording, loaded: Recording, *, rate_hz: float = DEFAULT_RATE_HZ,
                 cutoff_hz: float | None = None, tol_rad: float = SAME_TRAJECTORY_TOL_RAD,
                 name: str = "") -> AlignedPair:
    """The two runs of one trajectory on one trajectory clock, same grid, same length; refuses two
    different trajectories (position mismatch after the best shift above `tol_rad`, judged where both were
    recorded) and a loaded run overlapping less than MIN_OVERLAP_FRACTION of the unloaded run's motion; a
    shorter overlap than the whole motion (a run cut short) is used, and said in the note. `cutoff_hz`: the
    torque filter (default: each run's stand-in smoothing cutoff)."""
    a, b = padded_motion_window(unloaded)
    fit = trajectory_offset(unloaded, loaded, (a, b))
    s = fit.offset_s
    fix = "give the unloaded run of the same excitation trajectory, or use khalil-4 or difference-rls"
    if fit.max_rad > tol_rad:
        raise PayloadIdError(f"the loaded and unloaded runs are not the same trajectory: after the best time shift "
                             f"({s:+.3f} s) their joint positions still differ by up to {fit.max_rad:.3g} rad "
                             f"(RMS {fit.rms_rad:.3g} rad, limit {tol_rad:g} rad)", fix)
    # The common window, inside both recordings.
    motion = b - a
    a = max(a, float(loaded.joints.t[0]) - s)
    b = min(b, float(loaded.joints.t[-1]) - s)
    if b - a < MIN_OVERLAP_FRACTION * motion:
        raise PayloadIdError(f"the loaded run {loaded.source} covers only {max(b - a, 0.0):.2f} s of the unloaded "
                             f"run's {motion:.2f} s of motion (at least {MIN_OVERLAP_FRACTION:.0%} needed)",
                             "record the whole excitation in both runs")
    partial = b - a < (1.0 - COVERAGE_TOL) * motion
    grid = uniform_grid(a, b, rate_hz)
    un = resampled(unloaded, grid, cutoff_hz, t_zero=0.0)
    lo = resampled(loaded, grid + s, cutoff_hz, t_zero=0.0)
    d = _positions_at(loaded, grid + s) - _positions_at(unloaded, grid)
    fit = OffsetFit(s, float(np.sqrt(np.mean(d ** 2))), float(np.max(np.abs(d))))
    drop_u = _dropped(unloaded.joints.t, grid[0], grid[-1])
    drop_l = _dropped(loaded.joints.t, grid[0] + s, grid[-1] + s)
    label = f"pair {name}: " if name else ""
    note = Note(NoteCode.SIGNALS_RUNS_ALIGNED,
                f"{label}loaded run aligned on the unloaded one: clock offset {s:+.4f} s, {grid.size} samples at "
                f"{rate_hz:g} Hz ({grid[-1] - grid[0]:.2f} s); samples dropped before/after: unloaded "
                f"{drop_u[0]}/{drop_u[1]}, loaded {drop_l[0]}/{drop_l[1]}; joint position difference after "
                f"alignment RMS {fit.rms_rad * 1e3:.2f} mrad, largest {fit.max_rad * 1e3:.2f} mrad"
                + (f"; the runs overlap on {b - a:.2f} s of the unloaded run's {motion:.2f} s of motion (one was cut "
                   "short): the identification uses that overlap" if partial else ""))
    lo.notes = [note, *lo.notes]
    return AlignedPair(un, lo, fit, rate_hz, drop_u, drop_l, note)


def needs_alignment(unloaded: Recording, loaded: Recording, rate_hz: float = DEFAULT_RATE_HZ) -> bool:
    """Whether the two runs must be aligned before a sample-by-sample comparison: both hold a stand-in
    command (no recorded time base) and their motions start or last differently by half a grid
    step or more. A recorded command fixes the time base itself: never aligned."""
    if stand_in_cutoff(unloaded) is None or stand_in_cutoff(loaded) is None:
        return False
    (a_u, b_u), (a_l, b_l) = motion_window(unloaded), motion_window(loaded)
    half_step = 0.5 / rate_hz
    starts = (a_u - float(unloaded.joints.t[0])) - (a_l - float(loaded.joints.t[0]))
    return abs(starts) >= half_step or abs((b_u - a_u) - (b_l - a_l)) >= half_step

