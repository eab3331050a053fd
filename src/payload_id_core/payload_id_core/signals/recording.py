"""The data a recording holds, independent of where it came from (rosbag2, UR CSV, simulation).

Readers (io.bag, io.ur_csv) produce a Recording; the identification code consumes it. Arrays are
float64, time in seconds, joint columns in the order of `joint_names` (callers reorder to the
model's order by name with RobotModel.match_joint_order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.errors import BadSamples, PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.effort import EffortUnit


@dataclass
class JointSamples:
    """Measured joint states: /joint_states. `tau` is effort × effort_scale (N·m).

    `effort_unit` is what the raw efforts were (a UR's currents, a simulation's torques, or not
    declared); `effort_scale` the drive gains already applied to them (ones when none), so a
    consumer can apply other gains (Recording.with_drive_gains) without reading the source again."""

    t: np.ndarray                     # (N,) s, strictly increasing
    joint_names: list[str]
    q: np.ndarray                     # (N, n) rad
    qd: np.ndarray | None             # (N, n) rad/s, None when the source has no velocities
    tau: np.ndarray                   # (N, n) N·m
    temperature: np.ndarray | None = None  # (N, n) °C, when the drives report it
    effort_unit: EffortUnit = EffortUnit.UNKNOWN
    effort_scale: np.ndarray | None = None  # (n,) gains applied to get tau; None -> ones

    def __post_init__(self) -> None:
        self.t = np.asarray(self.t, dtype=float)
        n = len(self.joint_names)
        self.effort_unit = EffortUnit.parse(self.effort_unit)
        self.effort_scale = (np.ones(n) if self.effort_scale is None
                             else np.broadcast_to(np.asarray(self.effort_scale, dtype=float), (n,)).copy())
        for name in ("q", "qd", "tau", "temperature"):
            arr = getattr(self, name)
            if arr is None:
                continue
            arr = np.asarray(arr, dtype=float)
            if arr.shape != (self.t.size, n):
                raise PayloadIdError(f"joint samples: {name} has shape {arr.shape}, expected {(self.t.size, n)}",
                                     "every sample must carry one value per joint")
            setattr(self, name, arr)

    def __len__(self) -> int:
        return self.t.size

    def refuse_non_finite(self, what: str) -> None:
        """BadSamples naming the field, its first bad row (time, joint) and the fix when a time stamp, q, q̇ or τ is NaN
        or inf (a Recording built by hand: the file loaders refuse such samples first). Unrefused, a NaN torque made
        the fit fail inside numpy (LinAlgError: eigenvalues did not converge) or reach the estimate."""
        for name in ("t", "q", "qd", "tau"):
            arr = getattr(self, name)
            bad = None if arr is None else ~np.isfinite(arr)
            if bad is None or not bad.any():
                continue
            per_row = bad if bad.ndim == 1 else bad.any(axis=1)
            k = int(np.argmax(per_row))
            joint = "" if bad.ndim == 1 else f", joint {self.joint_names[int(np.argmax(bad[k]))]}"
            raise BadSamples(f"{what}: {name} is NaN or inf in {int(per_row.sum())} of {self.t.size} samples, the "
                             f"first at row {k} (t = {float(self.t[k]):.6f} s{joint})",
                             "drop or repair those rows of the recording before identifying the payload")

    def reordered(self, idx: np.ndarray, names: list[str]) -> JointSamples:
        """Columns picked by `idx` (see RobotModel.match_joint_order)."""
        pick = lambda a: None if a is None else a[:, idx]  # noqa: E731
        return JointSamples(self.t, list(names), self.q[:, idx], pick(self.qd), self.tau[:, idx],
                            pick(self.temperature), self.effort_unit, self.applied_scale[idx])

    def slice_time(self, t0: float, t1: float) -> JointSamples:
        m = (self.t >= t0) & (self.t <= t1)
        pick = lambda a: None if a is None else a[m]  # noqa: E731
        return JointSamples(self.t[m], self.joint_names, self.q[m], pick(self.qd), self.tau[m], pick(self.temperature),
                            self.effort_unit, self.applied_scale)

    @property
    def applied_scale(self) -> np.ndarray:
        """(n,) the drive gains tau was computed with (effort_scale, never None after construction)."""
        if self.effort_scale is None:  # only when assigned None after construction
            return np.ones(len(self.joint_names))
        return self.effort_scale


@dataclass
class CommandedTrajectory:
    """One trajectory_msgs/JointTrajectory as sent to a joint_trajectory_controller.

    Point k is due at `start_time + time_from_start[k]` (start_time = header.stamp, or the
    message's log time when the stamp is zero, as the controller does).
    """

    start_time: float                 # s, same clock as JointSamples.t
    joint_names: list[str]
    time_from_start: np.ndarray       # (M,) s, strictly increasing
    positions: np.ndarray             # (M, n)
    velocities: np.ndarray | None = None      # (M, n)
    accelerations: np.ndarray | None = None   # (M, n)
    # Set when no command was recorded and the points are the measured motion smoothed by a
    # zero-phase low-pass at this cutoff (Hz) as a stand-in (signals.commanded.smoothed_trajectory):
    # conditioned_signals then passes the torques through the same filter and trims its end transients.
    smoothing_cutoff_hz: float | None = None

    def __post_init__(self) -> None:
        self.time_from_start = np.asarray(self.time_from_start, dtype=float)
        self.positions = np.asarray(self.positions, dtype=float)
        if self.velocities is not None:
            self.velocities = np.asarray(self.velocities, dtype=float)
        if self.accelerations is not None:
            self.accelerations = np.asarray(self.accelerations, dtype=float)

    @property
    def end_time(self) -> float:
        return self.start_time + float(self.time_from_start[-1])


@dataclass
class WrenchSamples:
    """geometry_msgs/WrenchStamped readings of a wrist F/T sensor, in its own frame."""

    t: np.ndarray                     # (N,) s
    frame_id: str
    force: np.ndarray                 # (N, 3) N
    torque: np.ndarray                # (N, 3) N·m

    def __post_init__(self) -> None:
        self.t = np.asarray(self.t, dtype=float)
        self.force = np.asarray(self.force, dtype=float).reshape(-1, 3)
        self.torque = np.asarray(self.torque, dtype=float).reshape(-1, 3)


@dataclass
class Recording:
    """Everything one run recorded. `commanded` holds every JointTrajectory sent, in order."""

    joints: JointSamples
    commanded: list[CommandedTrajectory] = field(default_factory=list)
    wrench: WrenchSamples | None = None
    source: str = ""                  # file it came from, for messages
    notes: list[Note] = field(default_factory=list)  # e.g. SIGNALS_MEASURED_AS_COMMANDED (plain str: INFO)

    def for_model(self, model) -> Recording:
        """The same recording with joint columns in `model.joint_names` order, matched by name
        (RobotModel.match_joint_order: joints the model lacks are dropped, missing ones are an error).
        Commanded trajectories keep their own joint lists (sampling matches them by name) and the
        wrench is untouched."""
        idx = model.match_joint_order(self.joints.joint_names)
        return Recording(self.joints.reordered(idx, list(model.joint_names)), list(self.commanded), self.wrench,
                         self.source, list(self.notes))

    def with_drive_gains(self, scale: np.ndarray) -> Recording:
        """The same recording with torques = raw effort × `scale` ((n,), in joint order) instead of the
        gains applied so far. A reader's note that the torques are raw currents no longer holds then."""
        joints = self.joints
        scale = np.asarray(scale, dtype=float)
        tau = joints.tau / joints.applied_scale * scale
        scaled = JointSamples(joints.t, list(joints.joint_names), joints.q, joints.qd, tau, joints.temperature,
                              joints.effort_unit, scale)
        notes = self.notes
        if not np.allclose(scale, 1.0, rtol=0.0, atol=0.0):
            notes = [n for n in self.notes if Note.from_any(n).code is not NoteCode.IO_CURRENTS_AS_TORQUES]
        return Recording(scaled, list(self.commanded), self.wrench, self.source, list(notes))
