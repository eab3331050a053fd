"""Simulated wrist F/T data for tests and benches: smooth joint motion and the wrench a known payload
exerts on the sensor (gravity + inertia), plus offsets, base tilt, noise and optional contact."""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft.compensate import FtParameters, payload_wrench_batch

# Duan 2022 Table 1: resolution 0.1 N / 0.02 N·m; used as the sensor noise standard deviation.
DUAN_NOISE_STD = np.array([0.1, 0.1, 0.1, 0.02, 0.02, 0.02])


def sum_of_sines(model: RobotModel, duration: float, rate_hz: float, *, joints=None, base_frequency_hz: float = 0.1,
                 harmonics: int = 5, speed: float = 0.6, q0=None, seed: int = 0):
    """Smooth periodic motion (t, q, qd, qdd) of `joints` (indices; default all) about `q0`.

    A finite Fourier series per joint (Duan 2022 eq. 47–49, Swevers 1997) whose peak velocity is
    `speed` × the joint's velocity limit; positions are clipped to the limits by construction
    (amplitudes shrink when the limits are narrow). Starts and ends at q0 with zero velocity.
    """
    rng = np.random.default_rng(seed)
    n = model.n
    joints = list(range(n)) if joints is None else list(joints)
    q0 = np.zeros(n) if q0 is None else np.asarray(q0, dtype=float)
    t = np.arange(int(round(duration * rate_hz)) + 1) / rate_hz
    w = 2 * np.pi * base_frequency_hz * np.arange(1, harmonics + 1)
    q, qd, qdd = np.tile(q0, (t.size, 1)), np.zeros((t.size, n)), np.zeros((t.size, n))
    lim = model.limits
    for j in joints:
        a = rng.standard_normal(harmonics) / np.arange(1, harmonics + 1)
        b = rng.standard_normal(harmonics) / np.arange(1, harmonics + 1)
        # q = Σ a/w sin(wt) − b/w cos(wt) + const; shift so q(0) = q0 and remove the mean velocity at 0.
        a -= a.sum() / harmonics        # qd(0) = Σ a = 0
        sin, cos = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
        pos = sin @ (a / w) - cos @ (b / w) + np.sum(b / w)
        vel = cos @ a + sin @ b
        acc = -sin @ (a * w) + cos @ (b * w)
        scale = speed * lim.velocity[j] / max(np.abs(vel).max(), 1e-12)
        room = min(lim.upper[j] - q0[j], q0[j] - lim.lower[j])
        scale = min(scale, 0.95 * room / max(np.abs(pos).max(), 1e-12))
        q[:, j] += scale * pos
        qd[:, j] = scale * vel
        qdd[:, j] = scale * acc
    return t, q, qd, qdd


def synthetic_wrench(model: RobotModel, params: FtParameters, q, qd, qdd, *, noise_std=DUAN_NOISE_STD,
                     external=None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(force, torque) a sensor reads: offsets + payload wrench (+ external wrench) + white noise."""
    w = payload_wrench_batch(model, params, q, qd, qdd) + params.offset
    if external is not None:
        w = w + external
    w = w + np.random.default_rng(seed).standard_normal(w.shape) * np.asarray(noise_std, dtype=float)
    return w[:, :3], w[:, 3:]
