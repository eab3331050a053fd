"""Reader for UR CSV recordings in the layout of the dynamic_calibration toolbox
(github.com/shamilmamedov/dynamic_calibration; its UR10e recordings are the project's real data).

31 comma-separated columns, no header, about 100 Hz: controller time; measured q1..q6 (rad);
measured q̇1..q̇6 (rad/s); motor currents i1..i6 (A); target currents (A); target torques of the
controller's own model (N·m). The toolbox's collision recordings (contact-*.csv) have 25: the same first
19, then six the source does not document, which are read past (nothing here depends on them).
Torque = current × drive gain (effort_scale). The files hold no
commanded trajectory, so the measured motion, smoothed, stands in for it
(signals.commanded.smoothed_trajectory: positions low-pass filtered without phase at SMOOTHING_CUTOFF_HZ
on a uniform grid, velocities and accelerations their derivatives), which lets source='commanded'
pipelines run on them; the torques stay raw here and conditioned_signals filters them alike.
Recording.notes says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.commanded import smoothed_trajectory
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.signals.filtering import sampling_rate
from payload_id_core.signals.recording import JointSamples, Recording

N_COLUMNS = 31
# The collision-test layout: time, q, q̇, currents (the first 19 columns as above) and six undocumented ones.
N_COLUMNS_COLLISION = 25
LAYOUTS = (N_COLUMNS, N_COLUMNS_COLLISION)
UR_JOINT_NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                  "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
# Drive gains (N·m/A) identified by the data's source from the 14-harmonic pair and the known
# 2.805 kg load (the recordings' README).
README_DRIVE_GAINS = [10.0, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232]
# Zero-phase low-pass cutoff (Hz) of the stand-in commanded motion (and, through conditioned_signals,
# of the torques): the excitations of these files hold 99.9 % of their velocity energy below 0.4 Hz;
# 5 Hz keeps the motion and drops the 1e-4 rad quantisation steps of the logged positions and the
# current ripple, which is not rigid-body dynamics.
SMOOTHING_CUTOFF_HZ = 5.0
ACCELERATION_CUTOFF_HZ = SMOOTHING_CUTOFF_HZ   # former name
# Below this largest joint travel (rad) a file is a static pose (the validation-p* files are).
STATIC_TRAVEL_RAD = 1e-3
# Programs test for the code (notes.has_note), never for this wording.
MEASURED_AS_COMMANDED_NOTE = Note(NoteCode.SIGNALS_MEASURED_AS_COMMANDED,
                                  "measured motion used as commanded: the file holds no commanded trajectory")

_COLUMN_NAMES = (["time"] + [f"q{i}" for i in range(1, 7)] + [f"qd{i}" for i in range(1, 7)]
                 + [f"i{i}" for i in range(1, 7)] + [f"i_target{i}" for i in range(1, 7)]
                 + [f"tau_target{i}" for i in range(1, 7)])
_COLLISION_COLUMN_NAMES = _COLUMN_NAMES[:19] + [f"undocumented{i}" for i in range(20, 26)]
_LAYOUT_TEXT = ("31 columns (time, q1-6, qd1-6, currents 1-6, target currents 1-6, target torques 1-6) or the "
                "collision recordings' 25 (the same first 19 and six more)")


def _parse(path: Path) -> tuple[np.ndarray, list[Note]]:
    """Rows of floats; a last line cut short by the logger (no newline, fewer fields) is dropped
    with a note, any other malformed line is an error naming its line number."""
    try:
        text = path.read_text()
    except UnicodeDecodeError as err:
        raise PayloadIdError(f"{path} is not a text CSV file", f"give a UR CSV recording ({_LAYOUT_TEXT})") from err
    lines = text.splitlines()
    notes: list[Note] = []
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise PayloadIdError(f"{path} is empty", f"give a UR CSV recording ({_LAYOUT_TEXT})")
    counts = [line.count(",") + 1 for line in lines]
    # The layout is the one the first line has (a file is one layout throughout).
    width = counts[0] if counts[0] in LAYOUTS else N_COLUMNS
    if counts[-1] < width and not text.endswith("\n") and len(lines) > 1 and counts[-2] == width:
        notes.append(Note(NoteCode.IO_TRUNCATED_LINE,
                          f"{path.name}: the last line was cut short ({counts[-1]} of {width} fields) "
                          "and was ignored"))
        lines.pop()
        counts.pop()
    bad = [k for k, c in enumerate(counts) if c != width]
    if bad:
        k = bad[0]
        expected = " or ".join(str(n) for n in LAYOUTS) if len(bad) == len(lines) else str(width)
        if len(bad) == len(lines):
            problem = f"{path} has {counts[0]} columns, expected {expected}"
        else:
            problem = f"{path}: line {k + 1} has {counts[k]} columns, expected {expected} ({len(bad)} such lines)"
        raise PayloadIdError(problem, f"give a UR CSV in the dynamic_calibration toolbox's layout: {_LAYOUT_TEXT}")
    try:
        data = np.array([[float(v) for v in line.split(",")] for line in lines])
    except ValueError as err:
        k = next(k for k, line in enumerate(lines) if not _is_numeric_row(line))
        raise PayloadIdError(f"{path}: line {k + 1} holds a value that is not a number ({err})",
                             "the file must be numbers only, without a header line") from err
    return data, notes


def _is_numeric_row(line: str) -> bool:
    try:
        [float(v) for v in line.split(",")]
    except ValueError:
        return False
    return True


# Corrupt rows (a few in ur-20_02_19_15harm50secLoad.csv: time -0.12 s or 1e154 s, temperatures
# in the position columns) are dropped only while they stay this rare; more means a broken file.
MAX_GARBAGE_FRACTION = 0.01


def _drop_logger_garbage(path: Path, data: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Rows whose time lies far outside the recording are logger garbage: dropped if rare.

    The recording's span is bounded from the bulk of the rows, which garbage cannot move: median
    time ± (number of rows × median positive time step). A row inside that window that goes back
    in time is not garbage but a file out of order, which is an error (the caller checks)."""
    t = data[:, 0]
    if np.all(np.diff(t) > 0):
        return data, []
    steps = np.diff(t)
    steps = steps[(steps > 0) & np.isfinite(steps)]
    if steps.size == 0:
        return data, []
    half_span = t.size * float(np.median(steps))
    centre = float(np.median(t))
    off = np.flatnonzero(np.abs(t - centre) > half_span)
    if off.size == 0 or off.size > MAX_GARBAGE_FRACTION * t.size:
        return data, []
    return np.delete(data, off, axis=0), off.tolist()


def read_ur_csv(path: str | os.PathLike, effort_scale: Sequence[float] | float | None = None,
                joint_names: Sequence[str] | None = None,
                smoothing_cutoff_hz: float = SMOOTHING_CUTOFF_HZ) -> Recording:
    """Read a UR CSV (31 columns, or the collision recordings' 25: only the first 19 are used) into a Recording.

    Args:
        effort_scale: drive gains (N·m/A), one per joint or one for all; tau = current × gain.
            None keeps currents (gain 1) and says so in the notes (e.g. to identify the gains).
        joint_names: names of the six columns, default UR_JOINT_NAMES (the UR URDFs' names).
        smoothing_cutoff_hz: zero-phase low-pass of the measured positions that become the stand-in
            commanded trajectory (capped at 0.4 × the sampling rate); torques get the same filter in
            conditioned_signals.
    """
    path = Path(path)
    if not path.is_file():
        raise PayloadIdError(f"UR CSV file {path} does not exist", "check the --csv-ur path")
    names = list(joint_names) if joint_names is not None else list(UR_JOINT_NAMES)
    if len(names) != 6:
        raise PayloadIdError(f"{len(names)} joint names given for the 6 joints of a UR CSV", "give six names")
    data, notes = _parse(path)
    if data.shape[0] < 10:
        raise PayloadIdError(f"{path} holds only {data.shape[0]} rows", "give a recording of the motion")

    finite = np.isfinite(data)
    if not finite.all():
        rows = np.flatnonzero(~finite.all(axis=1))
        names_of = _COLUMN_NAMES if data.shape[1] == N_COLUMNS else _COLLISION_COLUMN_NAMES
        cols = [names_of[j] for j in np.flatnonzero(~finite.all(axis=0))]
        raise PayloadIdError(f"{path}: {rows.size} of {data.shape[0]} rows hold NaN or inf "
                             f"(columns {', '.join(cols)}), the first at line {rows[0] + 1}",
                             "fix the file or cut the bad rows out")
    data, dropped = _drop_logger_garbage(path, data)
    if dropped:
        notes.append(Note(NoteCode.IO_CORRUPT_ROWS_DROPPED,
                          f"{path.name}: dropped {len(dropped)} corrupt logger rows whose time lies outside the "
                          f"recording (lines {', '.join(str(k + 1) for k in dropped[:10])}"
                          f"{' ...' if len(dropped) > 10 else ''})"))
    t = data[:, 0]
    dt = np.diff(t)
    if np.any(dt <= 0):
        k = int(np.flatnonzero(dt <= 0)[0])
        raise PayloadIdError(f"{path}: time does not increase after row {k + 1} of the recording ({t[k + 1]} s "
                             f"after {t[k]} s; {int(np.sum(dt <= 0))} such rows)",
                             "give the rows in recording order, each with its own time stamp")

    if effort_scale is None:
        scale = np.ones(6)
        notes.append(Note(NoteCode.IO_CURRENTS_AS_TORQUES, "no drive gains given: torques are the motor currents (A)"))
    else:
        given = np.atleast_1d(np.asarray(effort_scale, dtype=float)).reshape(-1)
        if given.size not in (1, 6) or not np.all(np.isfinite(given)) or np.any(given <= 0):
            raise PayloadIdError(f"effort scale {given.tolist()} is not six finite, positive drive gains",
                                 "give one gain (N·m/A) per joint, e.g. --effort-scale 10,10.7,8.5,9,9.5,10.1")
        scale = np.broadcast_to(given, (6,)).copy()
    q, qd, current = data[:, 1:7], data[:, 7:13], data[:, 13:19]
    joints = JointSamples(t, names, q, qd, current * scale, effort_unit=EffortUnit.CURRENT, effort_scale=scale)
    fc = min(smoothing_cutoff_hz, 0.4 * sampling_rate(t))
    commanded = smoothed_trajectory(t, q, names, fc)
    notes.append(MEASURED_AS_COMMANDED_NOTE)
    grid_hz = 1.0 / float(np.median(np.diff(commanded.time_from_start)))
    notes.append(Note(NoteCode.SIGNALS_STAND_IN_SMOOTHING,
                      f"stand-in command: measured positions low-pass filtered at {fc:g} Hz (zero phase) on a uniform "
                      f"{grid_hz:.4g} Hz grid, torques to be filtered alike"))
    travel = float(np.max(np.ptp(q, axis=0)))
    if travel < STATIC_TRAVEL_RAD:
        notes.append(Note(NoteCode.SIGNALS_STATIC_RECORDING,
                          f"{path.name}: the arm does not move (largest joint travel {travel * 1e3:.2f} mrad): "
                          "these torques check gravity and friction at rest, not dynamics"))
    return Recording(joints=joints, commanded=[commanded], wrench=None, source=str(path), notes=notes)
