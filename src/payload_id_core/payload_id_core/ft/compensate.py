"""The wrench a payload exerts on a wrist F/T sensor, and the external wrench left after removing it.

Measurement model (sensor axes, sensor origin; the sensor reads what the tool side exerts on it):

    w_meas = o − [I_S (a_S − a_g) + v_S ×* I_S v_S] + w_ext + noise

with o the sensor offsets (Duan 2022 §2.2 F_x0 … T_z0), I_S the payload's spatial inertia in the
sensor frame (10 parameters φ_S), v_S, a_S the sensor frame's spatial velocity and acceleration
from forward kinematics, and a_g = (R_BSᵀ g_B, 0) gravity in the sensor frame for a base tilted
by (U, V) (Duan eq. 10–13). Static, this is Duan eq. (14) and (1): force G·g_FT, torque c × G.
The compensated wrench is w_ext = w_meas − o − (payload wrench) (Duan eq. 25 and 28–30, with the
inertial part from kinematics instead of an accelerometer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft.kinematics import (
    SensorFrame,
    SensorMotion,
    gravity_wrench_regressor,
    newton_euler_wrench,
    sensor_motion,
    tilt_gravity,
)


@dataclass
class FtParameters:
    """Everything compensation needs: sensor frame, payload φ in the sensor frame, offsets, base tilt."""

    sensor: SensorFrame
    phi_sensor: np.ndarray            # (10,) payload parameters in the sensor frame, about its origin
    offset: np.ndarray                # (6,) [Fx0, Fy0, Fz0, Tx0, Ty0, Tz0]
    tilt: tuple[float, float] = (0.0, 0.0)   # (U, V) rad, Duan eq. 10
    gravity_norm: float = 9.81
    # Compensators built by compensate(), keyed by (id(model), inertial); treat the fields as read-only.
    _compensators: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def gravity_base(self) -> np.ndarray:
        return tilt_gravity(self.gravity_norm, *self.tilt)


def payload_wrench_batch(model: RobotModel, params: FtParameters, q, qd, qdd, *, inertial: bool = True) -> np.ndarray:
    """(N, 6) wrench the payload exerts on the sensor (gravity, plus inertia when `inertial`), sensor frame."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if not inertial:
        qd = qdd = np.zeros_like(q)
    return payload_wrench_from_motion(sensor_motion(model, params.sensor, q, qd, qdd), params, inertial=inertial)


def payload_wrench_from_motion(motion: SensorMotion, params: FtParameters, *, inertial: bool = True) -> np.ndarray:
    """payload_wrench_batch for sensor kinematics already computed."""
    g_s = np.einsum("nji,j->ni", motion.rotation, params.gravity_base)
    grav = np.einsum("nij,j->ni", gravity_wrench_regressor(g_s), params.phi_sensor)
    if not inertial:
        return grav
    return grav - newton_euler_wrench(motion.velocity, motion.acceleration, params.phi_sensor)


def compensate_batch(model: RobotModel, params: FtParameters, q, qd, qdd, measured, *,
                     inertial: bool = True) -> np.ndarray:
    """(N, 6) external wrench = measured − offsets − payload gravity − payload inertia (vectorised).

    `inertial=False` is Duan 2022 §2.5 (eq. 25): gravity-only compensation.
    """
    measured = np.atleast_2d(np.asarray(measured, dtype=float))
    return measured - params.offset - payload_wrench_batch(model, params, q, qd, qdd, inertial=inertial)


class Compensator:
    """Per-sample compensation at the sensor rate: everything constant is computed once here.

    Holds its own pinocchio Data (not thread-safe: one Compensator per thread).
    """

    def __init__(self, model: RobotModel, params: FtParameters, *, inertial: bool = True):
        self._model = model.model
        self._data = model.model.createData()
        self._joint = params.sensor.joint
        self._x_sj = params.sensor.placement.inverse()
        self._r_js = np.array(params.sensor.placement.rotation)
        self._inertia = pin.Inertia.FromDynamicParameters(np.asarray(params.phi_sensor, dtype=float))
        self._offset = np.asarray(params.offset, dtype=float).copy()
        self._g_base = params.gravity_base
        self._inertial = inertial
        self._zero3 = np.zeros(3)

    def payload_wrench(self, q, qd, qdd) -> np.ndarray:
        """(6,) wrench the payload exerts on the sensor now."""
        d = self._data
        if self._inertial:
            pin.forwardKinematics(self._model, d, q, qd, qdd)
        else:
            pin.forwardKinematics(self._model, d, q)
        g_s = self._r_js.T @ (d.oMi[self._joint].rotation.T @ self._g_base)
        if not self._inertial:
            return -(self._inertia * pin.Motion(-g_s, self._zero3)).vector
        v = self._x_sj.act(d.v[self._joint])
        a = self._x_sj.act(d.a[self._joint])
        a_total = pin.Motion(a.linear - g_s, a.angular)
        inertia = self._inertia
        return -(inertia * a_total + v.cross(inertia * v)).vector

    def __call__(self, q, qd, qdd, measured) -> np.ndarray:
        """(6,) external wrench = measured − offsets − payload wrench."""
        return measured - self._offset - self.payload_wrench(q, qd, qdd)


def compensate(model: RobotModel, params: FtParameters, q, qd, qdd, measured, *, inertial: bool = True) -> np.ndarray:
    """(6,) external wrench for one sample: measured − offsets − payload gravity − payload inertia.

    A Compensator is built once per (model, params) and kept on `params`, so a call allocates no
    pinocchio Data; for a control loop, holding a `Compensator` yourself saves the lookup.
    """
    key = (id(model), inertial)
    entry = params._compensators.get(key)
    if entry is None or entry[0] is not model:
        entry = params._compensators[key] = (model, Compensator(model, params, inertial=inertial))
    return entry[1](q, qd, qdd, np.asarray(measured, dtype=float))


def residual_rmse(model: RobotModel, params: FtParameters, q, qd, qdd, measured, *,
                  motion: SensorMotion | None = None) -> dict[str, list[float]]:
    """Per-axis RMSE of the wrench left over on a contact-free trajectory: raw (minus offsets only),
    after gravity-only compensation (Duan §2), after gravity + inertia compensation.
    `motion`: the sensor kinematics along (q, q̇, q̈) when already computed."""
    measured = np.atleast_2d(np.asarray(measured, dtype=float))
    if motion is None:
        motion = sensor_motion(model, params.sensor, q, qd, qdd)
    rms = lambda r: np.sqrt(np.mean(r ** 2, axis=0)).tolist()  # noqa: E731
    # Gravity depends on the orientation only, so the same kinematics serve both compensations.
    left = measured - params.offset
    return {
        "offset_only": rms(left),
        "gravity_only": rms(left - payload_wrench_from_motion(motion, params, inertial=False)),
        "full": rms(left - payload_wrench_from_motion(motion, params)),
    }
