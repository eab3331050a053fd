"""Torque residuals of a loaded recording: with the unloaded robot model, and with the payload added.

The one check every consumer shows (the identify goal's result, `payload-id report`, its plots): if
the identified payload is right, adding its torque Y_L(q, q̇, q̈) φ_L to the unloaded prediction brings
the residual back to the robot identification's own level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor


def rmse_per_joint(residual: np.ndarray) -> np.ndarray:
    """(n,) root mean square over the samples of an (N, n) residual."""
    return np.sqrt(np.mean(residual**2, axis=0))


@dataclass
class TorqueResiduals:
    """Measured torques against the unloaded model (before) and with the identified payload (after)."""

    t: np.ndarray            # (N,) s
    joint_names: list[str]
    measured: np.ndarray     # (N, n) N·m
    before: np.ndarray       # (N, n) predicted by the unloaded robot model
    payload: np.ndarray      # (N, n) the payload's torque Y_L φ_L (NaN: no payload estimate)

    @property
    def after(self) -> np.ndarray:
        """(N, n) predicted with the payload added."""
        return self.before + self.payload

    @property
    def residual_before(self) -> np.ndarray:
        return self.measured - self.before

    @property
    def residual_after(self) -> np.ndarray:
        return self.residual_before - self.payload

    @property
    def rmse_before(self) -> np.ndarray:
        return rmse_per_joint(self.residual_before)

    @property
    def rmse_after(self) -> np.ndarray:
        return rmse_per_joint(self.residual_after)


def torque_residuals(model: RobotModel, robot, frame: str, phi: np.ndarray | None, t, q, qd, qdd, tau,
                     temperature=None) -> TorqueResiduals:
    """Residuals of the measured torque `tau` (N, n) with the unloaded robot identification `robot`, and
    with the payload φ_L (in `frame`) added; phi None gives NaN for the latter."""
    before = np.asarray(robot.predict(q, qd, qdd, temperature))
    if phi is None:
        payload = np.full_like(before, np.nan)
    else:
        payload = payload_regressor(model, frame, q, qd, qdd) @ np.asarray(phi, dtype=float)
    return TorqueResiduals(np.asarray(t, dtype=float), list(model.joint_names), np.asarray(tau, dtype=float), before,
                           payload)
