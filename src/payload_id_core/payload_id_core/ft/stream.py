"""The compensated wrench as a stream: each batch of sensor samples minus offsets, payload gravity and inertia
(ft.compensate, Duan 2022 eq. 25 and 28–30), for a node that receives joint states and wrenches in batches.

The joint state at each wrench stamp is interpolated from the last joint states; q̇ and q̈ come from the
commanded trajectory while one plays (the measured q̇ with q̈ = 0 otherwise). The compensation parameters
follow the payload: a run's own F/T calibration (payload in the sensor frame, offsets, base tilt) when
there is one, else the payload estimated from joint torques moved into the sensor frame, keeping the last
calibration's offsets and tilt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.compensate import FtParameters, compensate_batch
from payload_id_core.ft.storage import ft_parameters_from_payload
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.recording import CommandedTrajectory

RECENT = 256                 # joint states kept to place each wrench sample in time


@dataclass(frozen=True)
class RecentJointStates:
    """The last RECENT joint states (t (N,), q, qd (N, n)), to place each wrench sample in time."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray

    @classmethod
    def empty(cls, n: int) -> RecentJointStates:
        return cls(np.zeros(0), np.zeros((0, n)), np.zeros((0, n)))

    def extended(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray) -> RecentJointStates:
        return RecentJointStates(np.concatenate([self.t, t])[-RECENT:],
                                 np.concatenate([self.q, q])[-RECENT:],
                                 np.concatenate([self.qd, qd])[-RECENT:])

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, q̇) at the stamps t, interpolated (held at the ends)."""
        tq = np.clip(t, self.t[0], self.t[-1])
        n = self.q.shape[1]
        q = np.column_stack([np.interp(tq, self.t, self.q[:, j]) for j in range(n)])
        qd = np.column_stack([np.interp(tq, self.t, self.qd[:, j]) for j in range(n)])
        return q, qd


@dataclass(frozen=True)
class CompensatedWrenches:
    """External wrenches (N, 6) [F, T] at the stamps t (N,), in the sensor frame `frame`."""

    t: np.ndarray
    frame: str
    wrench: np.ndarray


class CompensationStream:
    """The state compensation needs between batches: the parameters, the sensor's frame, the recent joint states
    and the last commanded trajectory. Replacing a field is atomic, so one thread may feed it while another
    compensates."""

    def __init__(self, model: RobotModel, sensor_frame: str = "", inertial: bool = True) -> None:
        self.model = model
        self.inertial = inertial                      # the payload's inertial wrench too, not only its weight
        self.params: FtParameters | None = None       # None: nothing to compensate with yet
        self._sensor_frame = sensor_frame             # given ('' = the wrenches' frame_id)
        self._sensor_name: str | None = None          # decided: a saved calibration's, or the given / heard one
        self._recent: RecentJointStates = RecentJointStates.empty(model.n)
        self._last_cmd: CommandedTrajectory | None = None

    # -- inputs -----------------------------------------------------------------------------------
    def add_joint_states(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray) -> None:
        self._recent = self._recent.extended(t, q, qd)

    def add_commanded(self, cmd: CommandedTrajectory) -> None:
        self._last_cmd = cmd

    def hear_sensor(self, wrench_frame: str) -> None:
        """The frame_id of the wrenches heard: the sensor's frame unless one was given or restored."""
        if self._sensor_name is None:
            self._sensor_name = self._sensor_frame or wrench_frame

    @property
    def sensor(self) -> str | None:
        """The F/T sensor's frame: restored, else the given one, else the first wrench's frame_id (None: none)."""
        return self._sensor_name or self._sensor_frame or None

    # -- the parameters -------------------------------------------------------------------------------
    def restore(self, params: FtParameters) -> None:
        """Parameters saved by an earlier run: its sensor is the sensor from now on."""
        self._sensor_name = params.sensor.name
        self.params = params

    def follow(self, est: PayloadEstimate, calibration: FtParameters | None = None) -> str:
        """Compensate for the payload `est` from now on: with the run's own F/T calibration when given, else
        with `est` moved into the sensor frame. Returns a warning for the operator ('' if none)."""
        warning = ""
        if calibration is None:
            calibration, warning = self._from_payload(est)
        if calibration is not None:
            self.params = calibration             # compensation is on from here
        return warning

    def _from_payload(self, est: PayloadEstimate) -> tuple[FtParameters | None, str]:
        """Compensation parameters for a payload estimated from joint torques: the payload moved into the
        sensor frame (ft_parameters_from_payload), keeping the offsets and base tilt of the last F/T
        calibration (identify_ft on a run's readings) when there is one, else none (zero)."""
        sensor = self.sensor
        if not sensor:
            return None, ""
        prev = self.params if self.params is not None and self.params.sensor.name == sensor else None
        try:
            params = ft_parameters_from_payload(self.model, est, sensor,
                                                offset=None if prev is None else prev.offset,
                                                tilt=(0.0, 0.0) if prev is None else prev.tilt)
        except PayloadIdError as err:
            return None, f"no wrench compensation: {err}"
        if prev is None:
            return params, (f"wrench compensation of {sensor} without sensor offsets or base tilt: no F/T "
                            "calibration yet (an identification that runs to the end calibrates it)")
        params.gravity_norm = prev.gravity_norm
        return params, ""

    # -- output -----------------------------------------------------------------------------------
    def compensate(self, t: np.ndarray, w: np.ndarray) -> CompensatedWrenches | None:
        """External wrench for a batch of sensor samples (t (N,), w (N, 6)); None before there are joint states
        and parameters. Non-finite results are left out."""
        recent, params = self._recent, self.params
        if recent.t.size == 0 or params is None:
            return None
        q, qd = recent.at(t)
        qdd = np.zeros_like(q)
        cmd = self._last_cmd
        if cmd is not None:
            inside = (t >= cmd.start_time) & (t <= cmd.end_time)
            if inside.any():
                _, qd_c, qdd_c = sample_commanded([cmd], t[inside], self.model.joint_names)
                qd[inside], qdd[inside] = qd_c, qdd_c
        ext = compensate_batch(self.model, params, q, qd, qdd, w, inertial=self.inertial)
        finite = np.isfinite(ext).all(axis=1)
        return CompensatedWrenches(t[finite], params.sensor.name, ext[finite])
