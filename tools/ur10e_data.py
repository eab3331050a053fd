"""The real UR10e recordings of ../shared/data/ur10e as identification inputs, and the whole pipeline on them.

Dataset-specific, so not part of the installed core: imported by bare name from tools/ (test/conftest.py
and bench/ur10e.py put tools/ on sys.path; tools/ur10e_report.py sits beside it).

The files (ur_csv.read_ur_csv) are logged at irregular instants (10 and 12 ms steps), start and end
with seconds of rest whose length differs between the loaded and the unloaded run of a pair, and
hold no commanded trajectory. What this module adds, shared by test/test_ur10e_real.py,
tools/ur10e_report.py and bench/ur10e.py:

  * `prepared_run`: the motion window only (rest cut, a little padding), resampled on a uniform grid
    (`rate_hz`, default 50 Hz: the excitations hold their energy below 2 Hz): read_ur_csv's smoothed
    stand-in command sampled there, torques (current × drive gain) filtered as conditioned_signals
    does for such recordings (`resampled`).
  * `prepared_pair`: the unloaded and loaded run of one trajectory put on the same trajectory time
    (the loaded run's offset found by least squares on the joint positions, to a fraction of a
    sample), so methods that subtract the two runs sample by sample (khalil-3) can.
  * `identify_ur10e_robot`, `identify_gains`, `identify_payloads`: the project's own
    identification code (payload_id_core.robot_id, payload_id_core.payload.methods) on those inputs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import MEASURED_AS_COMMANDED_NOTE, README_DRIVE_GAINS, SMOOTHING_CUTOFF_HZ, read_ur_csv
from payload_id_core.notes import Note, NoteCode, notes_with
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.methods import identify_payload
from payload_id_core.robot_id import identify_effort_scale, identify_robot, validate_robot
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.signals.filtering import filtered_derivatives
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording

LOAD_MASS_KG = 2.805   # ../shared/data/ur10e/README.md
PAIRS: dict[str, tuple[str, str]] = {
    "14harm": ("ur-20_02_19_14harm50sec.csv", "ur-20_02_19_14harm50secLoad.csv"),
    "15harm": ("ur-20_02_19_15harm50sec.csv", "ur-20_02_19_15harm50secLoad.csv"),
    "01_31": ("ur-20_01_31-unload.csv", "ur-20_01_31-load.csv"),
}
VALIDATION = ("validation-p1.csv", "validation-p2.csv", "validation-p3.csv")
# The pair the README's drive gains were fitted on (with the known mass): it cannot confirm the mass.
GAIN_PAIR = "14harm"
JUDGED_PAIRS = ("15harm", "01_31")

DEFAULT_RATE_HZ = 50.0
# Torques are filtered like the stand-in motion ur_csv smooths (and conditioned_signals would filter
# them): parallel filtering of both sides of τ = Y θ.
DEFAULT_CUTOFF_HZ = SMOOTHING_CUTOFF_HZ
MOTION_VELOCITY_RAD_S = 0.02   # any joint faster than this: the excitation is playing
MOTION_PAD_S = 0.3             # rest kept on each side of the motion (the start and stop transients)


def default_data_dir() -> Path:
    """../shared/data/ur10e beside the repository (env PAYLOAD_ID_UR10E_DATA overrides)."""
    env = os.environ.get("PAYLOAD_ID_UR10E_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ur10e"


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


def resampled(recording: Recording, t_grid: np.ndarray, cutoff_hz: float | None = DEFAULT_CUTOFF_HZ,
              t_zero: float | None = None) -> Recording:
    """`recording` (read_ur_csv's, with its smoothed stand-in command) on the times `t_grid` (inside
    its span); the Recording's clock is shifted so that t_grid[0] becomes `t_zero` (default unchanged).

    Nothing of its own: the motion is the stand-in command sampled as the controller would
    (conditioning.sample_commanded) and the torques are filtered as conditioned_signals filters them
    (conditioning.filtered_derivatives at `cutoff_hz`, against the true time stamps), then
    interpolated onto the grid. The result is already conditioned: its command is a plain
    trajectory (no smoothing_cutoff_hz), so conditioned_signals neither filters its torques again
    nor trims it."""
    j = recording.joints
    t_grid = np.asarray(t_grid, dtype=float)
    if t_grid[0] < j.t[0] or t_grid[-1] > j.t[-1]:
        raise PayloadIdError(f"{recording.source}: resampling grid {t_grid[0]:.2f}..{t_grid[-1]:.2f} s outside the "
                             f"recording {j.t[0]:.2f}..{j.t[-1]:.2f} s", "cut the window inside the recording")
    names = list(j.joint_names)
    q, qd, qdd = sample_commanded(recording.commanded, t_grid, names)
    tau_f = j.tau if cutoff_hz is None else filtered_derivatives(j.t, j.tau, cutoff_hz, derivatives=0)[0]
    tau = np.column_stack([np.interp(t_grid, j.t, tau_f[:, k]) for k in range(tau_f.shape[1])])
    shift = 0.0 if t_zero is None else t_zero - t_grid[0]
    t = t_grid + shift
    joints = JointSamples(t, names, q, qd, tau)
    commanded = CommandedTrajectory(float(t[0]), names, t - t[0], q, qd, qdd)
    # The measured-as-commanded note stays last, as read_ur_csv puts it.
    measured = notes_with(recording.notes, NoteCode.SIGNALS_MEASURED_AS_COMMANDED) or [MEASURED_AS_COMMANDED_NOTE]
    notes = [n for n in map(Note.from_any, recording.notes) if n.code is not NoteCode.SIGNALS_MEASURED_AS_COMMANDED]
    notes.append(Note(NoteCode.INFO,
                      f"{Path(recording.source).name}: motion window resampled at {1 / np.median(np.diff(t)):.4g} Hz"
                      + (f", torques low-pass filtered at {cutoff_hz:g} Hz (zero phase)" if cutoff_hz else "")))
    notes.extend(measured[:1])
    return Recording(joints=joints, commanded=[commanded], wrench=None, source=recording.source, notes=notes)


def _grid(t0: float, t1: float, rate_hz: float) -> np.ndarray:
    return t0 + np.arange(int(np.floor((t1 - t0) * rate_hz)) + 1) / rate_hz


def prepared_run(path: str | os.PathLike, effort_scale=README_DRIVE_GAINS, *, rate_hz: float = DEFAULT_RATE_HZ,
                 cutoff_hz: float | None = DEFAULT_CUTOFF_HZ, recording: Recording | None = None) -> Recording:
    """One file's motion window (± MOTION_PAD_S) on a uniform grid; see the module docstring.
    `recording`: that file already read (read_ur_csv(path, effort_scale)), so it is not read again."""
    rec = recording if recording is not None else read_ur_csv(path, effort_scale)
    a, b = motion_window(rec)
    a, b = max(a - MOTION_PAD_S, rec.joints.t[0]), min(b + MOTION_PAD_S, rec.joints.t[-1])
    return resampled(rec, _grid(a, b, rate_hz), cutoff_hz, t_zero=0.0)


def trajectory_offset(reference: Recording, other: Recording, window: tuple[float, float]) -> tuple[float, float]:
    """Time s (and the largest position mismatch, rad) such that other(t + s) ≈ reference(t) on `window`.

    A coarse start from the motion windows, then a bounded scalar search of the squared position
    mismatch (positions interpolated linearly: millisecond resolution at these speeds)."""
    t_ref = reference.joints.t
    inside = (t_ref >= window[0]) & (t_ref <= window[1])
    t, q_ref = t_ref[inside], reference.joints.q[inside]
    t_o, q_o = other.joints.t, other.joints.q
    s0 = motion_window(other)[0] - motion_window(reference)[0]

    def mismatch(s: float) -> np.ndarray:
        return np.column_stack([np.interp(t + s, t_o, q_o[:, k]) for k in range(q_o.shape[1])]) - q_ref

    res = minimize_scalar(lambda s: float(np.sum(mismatch(s) ** 2)), bounds=(s0 - 0.5, s0 + 0.5), method="bounded",
                          options={"xatol": 1e-5})
    return float(res.x), float(np.max(np.abs(mismatch(res.x))))


@dataclass
class PreparedPair:
    name: str
    unloaded: Recording
    loaded: Recording
    offset_s: float            # loaded clock − unloaded clock for the same trajectory time
    max_mismatch_rad: float    # largest joint position difference between the runs after alignment
    notes: list[str] = field(default_factory=list)


def prepared_pair(unloaded_path, loaded_path, effort_scale=README_DRIVE_GAINS, *, name: str = "",
                  rate_hz: float = DEFAULT_RATE_HZ, cutoff_hz: float | None = DEFAULT_CUTOFF_HZ) -> PreparedPair:
    """The two runs of one trajectory on one trajectory clock, same grid, same length."""
    ru = read_ur_csv(unloaded_path, effort_scale)
    rl = read_ur_csv(loaded_path, effort_scale)
    a, b = motion_window(ru)
    a, b = max(a - MOTION_PAD_S, ru.joints.t[0]), min(b + MOTION_PAD_S, ru.joints.t[-1])
    s, dev = trajectory_offset(ru, rl, (a, b))
    # Keep the window inside both recordings.
    a = max(a, rl.joints.t[0] - s)
    b = min(b, rl.joints.t[-1] - s)
    grid = _grid(a, b, rate_hz)
    un = resampled(ru, grid, cutoff_hz, t_zero=0.0)
    lo = resampled(rl, grid + s, cutoff_hz, t_zero=0.0)
    note = (f"pair {name}: loaded run aligned on the unloaded one ({s:+.4f} s clock offset, largest position "
            f"difference {dev * 1e3:.2f} mrad), {grid.size} samples at {rate_hz:g} Hz")
    return PreparedPair(name, un, lo, s, dev, [note])


def load_pairs(data_dir=None, effort_scale=README_DRIVE_GAINS, names: Sequence[str] = tuple(PAIRS), **kw
               ) -> dict[str, PreparedPair]:
    d = Path(data_dir) if data_dir is not None else default_data_dir()
    return {k: prepared_pair(d / PAIRS[k][0], d / PAIRS[k][1], effort_scale, name=k, **kw) for k in names}


def rescaled(recording: Recording, factor) -> Recording:
    """The same recording with torques × factor (per joint): new drive gains = factor × old ones."""
    j = recording.joints
    joints = JointSamples(j.t, list(j.joint_names), j.q, j.qd, j.tau * np.asarray(factor, dtype=float), j.temperature)
    return Recording(joints, list(recording.commanded), recording.wrench, recording.source, list(recording.notes))


# -- the pipeline ---------------------------------------------------------------------------------

PAYLOAD_METHODS = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")
# Both runs of a pair follow the same commanded trajectory, but what the files hold is the measured
# motion: with the load the UR tracks it up to 1.7 mrad differently (prepared_pair's alignment), so
# "same trajectory" is judged with the tolerance for measured signals, not the commanded one's 1 mrad.
SAME_TRAJECTORY_TOL_RAD = 2e-2
# No load-dependent friction column (payload/load_friction.py): the drive gains are identified from the
# known mass without it, and a friction term proportional to the load torque is nearly collinear with a
# gain error, so modelling it in the payload step only would count the same effect twice (measured on
# 15harm / 01_31: difference-rls +3.9 % / +4.3 % with the column, +1.5 % / −0.8 % without).
PAYLOAD_OPTIONS = {"delay": 0.0, "same_trajectory_tol_rad": SAME_TRAJECTORY_TOL_RAD, "load_friction": False}


def identify_ur10e_robot(model, pair_or_run, friction: str = "linear", validate: Sequence[Recording] = (),
                         gains=None, gains_std=None):
    """identification.identify_robot on a prepared unloaded run (the stand-in commanded motion,
    no delay: it is the measured motion itself); validation RMSE per joint for each `validate` run.
    `gains`, `gains_std`: the drive gains the run's torques were computed with and their std
    (identify_gains), recorded in the result as robot.yaml records them, so the payload methods
    propagate the gains' uncertainty (payload/gain_uncertainty.py)."""
    run = pair_or_run.unloaded if isinstance(pair_or_run, PreparedPair) else pair_or_run
    ident = identify_robot(model, run, friction=friction, delay=0.0, effort_scale=gains)
    if gains is not None:
        ident.effort_unit = EffortUnit.CURRENT.value
        ident.effort_scale_std = None if gains_std is None else np.asarray(gains_std, dtype=float)
        ident.effort_scale_source = "identified from the 14harm pair and the known load mass"
    rmse = [validate_robot(ident, v, model, delay=0.0) for v in validate]
    return ident, rmse


def identify_gains(model, pair: PreparedPair, mass: float = LOAD_MASS_KG, frame: str | None = None,
                   friction: str = "linear", decimate: int = 2):
    """Drive gains (N·m per unit of the pair's efforts) from one pair and the known load mass
    (identification.identify_effort_scale, Gautier & Briot 2014). `decimate` thins both runs
    first (the excitations hold their energy below 2 Hz; the filter already ran at 5 Hz)."""
    frame = frame or model.default_payload_frame
    un, lo = (thinned(r, decimate) for r in (pair.unloaded, pair.loaded))
    return identify_effort_scale(model, un, lo, mass, frame, friction=friction, delay=0.0)


def thinned(recording: Recording, every: int) -> Recording:
    """One sample in `every` (the signals were already low-passed well below the new Nyquist rate)."""
    if every <= 1:
        return recording
    j = recording.joints
    c = recording.commanded[0]
    k = slice(None, None, every)
    joints = JointSamples(j.t[k], list(j.joint_names), j.q[k], _every(j.qd, k), j.tau[k])
    cmd = CommandedTrajectory(c.start_time, list(c.joint_names), c.time_from_start[k], c.positions[k],
                              _every(c.velocities, k), _every(c.accelerations, k))
    return Recording(joints, [cmd], None, recording.source, list(recording.notes))


def _every(samples: np.ndarray | None, k: slice) -> np.ndarray | None:
    return None if samples is None else samples[k]


def identify_payloads(model, robot, pair: PreparedPair, methods: Sequence[str] = PAYLOAD_METHODS,
                      frame: str | None = None, **options) -> dict[str, PayloadEstimate | str]:
    """method -> PayloadEstimate (or the PayloadIdError's text when the method does not apply)."""
    out: dict[str, PayloadEstimate | str] = {}
    for method in methods:
        try:
            out[method] = identify_payload(method, model, robot, pair.loaded, frame, unloaded=pair.unloaded,
                                           **{**PAYLOAD_OPTIONS, **options})
        except PayloadIdError as err:
            out[method] = str(err)
    return out
