"""Joint friction of a geared drive, and its linearisation for a stable implicit physics step."""

from __future__ import annotations

import math

import numpy as np

from payload_id_core.sim.profile import FrictionSettings


def friction_torque(fr: FrictionSettings, qd: np.ndarray, load: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(τ_f, ∂τ_f/∂q̇) for joint velocities qd (..., n) and load torques (..., n).

    Xu 2024 eq. (2), τ_f = (Fc + Fv |q̇|^α) sign(q̇) + B, with the Coulomb level growing with the
    load torque carried by the gears, Fc + μ|τ_load|, and sign(q̇) smoothed to tanh(q̇/v_s) so that
    the law has a finite slope at rest (a joint at rest carries only the offset B).
    """
    vs = fr.smoothing_velocity
    speed = np.abs(qd)
    th = np.tanh(qd / vs)
    power = speed ** fr.alpha
    level = fr.coulomb + fr.load_coulomb * np.abs(load) + fr.viscous * power
    tau = level * th + fr.offset
    # d/dq̇ of Fv|q̇|^α·|tanh|: α Fv |q̇|^(α−1)|tanh| stays finite at 0 because |tanh| ≤ |q̇|/v_s.
    viscous_slope = fr.alpha * fr.viscous * power * np.abs(th) / np.maximum(speed, 1e-300)
    slope = viscous_slope + level * (1.0 - th * th) / vs
    return tau, slope


class ScalarFriction:
    """friction_torque for one state, on Python floats: inside the physics loop a handful of numpy
    ufuncs on 6-vectors cost more than the physics step itself."""

    def __init__(self, fr: FrictionSettings):
        self.inv_vs = 1.0 / fr.smoothing_velocity
        self.rows = list(zip(fr.coulomb.tolist(), fr.load_coulomb.tolist(), fr.viscous.tolist(), fr.alpha.tolist(),
                             (fr.alpha * fr.viscous).tolist(), fr.offset.tolist()))

    def __call__(self, qd: list[float], load: list[float]) -> tuple[list[float], list[float]]:
        inv = self.inv_vs
        taus, slopes = [], []
        for (fc, mu, fv, alpha, afv, b), v, ld in zip(self.rows, qd, load):
            th = math.tanh(v * inv)
            speed = abs(v)
            power = speed ** alpha
            level = fc + mu * abs(ld) + fv * power
            taus.append(level * th + b)
            slopes.append((afv * power * abs(th) / speed if speed > 0.0 else 0.0) + level * (1.0 - th * th) * inv)
        return taus, slopes

    def linearised(self, tau_motor: list[float], qd: list[float], load: list[float]) -> tuple[list[float], list[float]]:
        """(τ_motor − τ_f + slope·q̇, slope): the torque to apply explicitly when the backend integrates
        −slope·q̇_next implicitly (friction linearised about the current speed), in one pass."""
        inv = self.inv_vs
        applied, slopes = [], []
        for (fc, mu, fv, alpha, afv, b), tm, v, ld in zip(self.rows, tau_motor, qd, load):
            th = math.tanh(v * inv)
            speed = abs(v)
            power = speed ** alpha
            level = fc + mu * abs(ld) + fv * power
            slope = (afv * power * abs(th) / speed if speed > 0.0 else 0.0) + level * (1.0 - th * th) * inv
            applied.append(tm - (level * th + b) + slope * v)
            slopes.append(slope)
        return applied, slopes
