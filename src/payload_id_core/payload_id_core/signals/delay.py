"""Time alignment of the measured motion with the command (the command-to-motion delay)."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize_scalar

from payload_id_core.errors import PayloadIdError
from payload_id_core.signals.filtering import sampling_rate


def estimate_delay(t_meas, q_meas, t_cmd, q_cmd, max_delay: float = 0.1) -> float:
    """Constant delay d (s) such that q_meas(t) ≈ q_cmd(t − d) (positive: measurement lags command).

    Least squares over d of q_meas(t) − q_cmd(t − d) − c_j, where q_cmd is a cubic spline of its
    samples and c_j a constant per joint (a steady tracking offset does not bias d). The cost is
    evaluated on a grid of one measurement interval over ±max_delay, then the best cell is refined
    with a bounded scalar search, which resolves a fraction of the sample interval. (A velocity
    cross-correlation peak is too flat for slow excitations: noise moves it by whole samples.)
    """
    t_meas = np.asarray(t_meas, float)
    t_cmd = np.asarray(t_cmd, float)
    q_meas = np.asarray(q_meas, float).reshape(t_meas.size, -1)
    q_cmd = np.asarray(q_cmd, float).reshape(t_cmd.size, -1)
    if q_meas.shape[1] != q_cmd.shape[1]:
        raise PayloadIdError(f"delay estimation: {q_meas.shape[1]} measured joints against {q_cmd.shape[1]} commanded",
                             "give the same joints in the same order")
    dt = 1.0 / sampling_rate(t_meas)
    lo, hi = max(t_meas[0], t_cmd[0]), min(t_meas[-1], t_cmd[-1])
    inner = (t_meas >= lo + max_delay + dt) & (t_meas <= hi - max_delay - dt)
    if inner.sum() < 10:
        raise PayloadIdError(f"commanded and measured motion overlap for only {max(hi - lo, 0.0):.3f} s",
                             "record the joint states while the commanded trajectory plays")
    spline = CubicSpline(t_cmd, q_cmd, axis=0, extrapolate=False)
    tm, qm = t_meas[inner], q_meas[inner]
    motion = q_cmd - q_cmd.mean(axis=0)
    if np.sum(motion**2) <= 1e-16 * motion.size:
        raise PayloadIdError("the commanded trajectory does not move, so no delay can be estimated",
                             "give the delay explicitly or record a moving trajectory")

    def cost(d: float, stride: int = 1) -> float:
        r = qm[::stride] - spline(tm[::stride] - d)
        r -= r.mean(axis=0)
        return float(np.sum(r * r))

    stride = max(1, tm.size // 5000)  # the coarse scan needs no more than a few thousand samples
    grid = np.arange(-max_delay, max_delay + 0.5 * dt, dt)
    best = grid[int(np.argmin([cost(d, stride) for d in grid]))]
    res = minimize_scalar(cost, bounds=(best - dt, best + dt), method="bounded", options={"xatol": 1e-7})
    return float(res.x)
