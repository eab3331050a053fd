"""Limits an excitation must respect and the checks against them: joint position, velocity and
acceleration limits (URDF, with a margin and per-robot acceleration defaults) and Cartesian limits on a
frame's origin (e.g. the tool above a table), checked on a dense time grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import FourierTrajectory

# URDFs carry no acceleration limits. Defaults per bundled robot (rad/s², joint order of the URDF):
# UR: Universal Robots publish none for joint space; 3 rad/s² on the three big joints (shoulder,
# elbow sizes) and 6 rad/s² on the wrist are moderate values the controllers track well.
# Panda: Franka's datasheet joint acceleration limits (15, 7.5, 10, 12.5, 15, 20, 20 rad/s²), halved
# for margin since the excitation runs near several limits at once.
DEFAULT_ACCELERATION_LIMITS: dict[str, list[float]] = {
    "ur3": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "ur5": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "ur10": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "ur10e": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "ur5e": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "ur3e": [3.0, 3.0, 4.0, 6.0, 6.0, 6.0],
    "panda": [7.5, 3.75, 5.0, 6.25, 7.5, 10.0, 10.0],
}
# Any other robot: acceleration limit = this many times its velocity limit (per s), i.e. the
# velocity limit is reached from rest in 1 / factor seconds.
ACCELERATION_PER_VELOCITY = 1.5


def robot_key(model) -> str:
    """'ur10', 'ur10e', 'panda', ... from the URDF file name (example-robot-data names them ur10_robot.urdf)."""
    stem = Path(model.urdf_path).stem.lower()
    return stem[: -len("_robot")] if stem.endswith("_robot") else stem


def default_acceleration_limits(model) -> tuple[np.ndarray, str]:
    """(n,) rad/s² and where they came from (acceleration limits are not part of URDFs)."""
    key = robot_key(model)
    if key in DEFAULT_ACCELERATION_LIMITS and len(DEFAULT_ACCELERATION_LIMITS[key]) == model.n:
        return np.array(DEFAULT_ACCELERATION_LIMITS[key], dtype=float), f"payload_id default for {key}"
    vel = np.asarray(model.limits.velocity, dtype=float)
    return ACCELERATION_PER_VELOCITY * vel, f"{ACCELERATION_PER_VELOCITY} x URDF velocity limit"


@dataclass
class MotionLimits:
    """Joint limits a trajectory must respect, margin already applied.

    `from_model` reads position and velocity limits from the URDF and refuses a URDF without them.
    """

    joint_names: list[str]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    margin: float = 0.0
    acceleration_source: str = ""

    @classmethod
    def from_model(cls, model, margin: float = 0.05, acceleration=None) -> MotionLimits:
        """Limits of `model` shrunk by `margin` (fraction: velocity and acceleration limits x (1 - margin),
        position range reduced by margin x half-range on each side). `acceleration`: scalar or (n,) rad/s²,
        default `default_acceleration_limits`."""
        if not (0.0 <= margin < 1.0):
            raise PayloadIdError(f"limit margin {margin} is outside [0, 1)", "use a fraction such as 0.05")
        lim = model.limits
        lower, upper = np.asarray(lim.lower, float), np.asarray(lim.upper, float)
        vel = np.asarray(lim.velocity, float)
        bad = [j for j, lo, hi, v in zip(model.joint_names, lower, upper, vel)
               if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo and np.isfinite(v) and v > 0)
               or (hi - lo) > 1e6]
        if bad:
            raise PayloadIdError(
                f"the URDF {Path(model.urdf_path).name} gives no usable position/velocity limits for joints {bad}",
                "add <limit lower= upper= velocity= effort=/> to those joints in the URDF")
        if acceleration is None:
            acc, source = default_acceleration_limits(model)
        else:
            acc = np.broadcast_to(np.asarray(acceleration, dtype=float), (model.n,)).copy()
            source = "given"
            if not np.all(np.isfinite(acc) & (acc > 0)):
                raise PayloadIdError(f"acceleration limits {acc.tolist()} are not all positive",
                                     "give positive rad/s² values, one per joint or one for all")
        shrink = 0.5 * margin * (upper - lower)
        return cls(list(model.joint_names), lower + shrink, upper - shrink, (1 - margin) * vel,
                   (1 - margin) * acc, margin, source)

    def subset(self, idx) -> tuple[np.ndarray, ...]:
        return self.lower[idx], self.upper[idx], self.velocity[idx], self.acceleration[idx]


@dataclass
class CartesianLimit:
    """Keep a frame's origin inside a slab of the world frame, e.g. the tool above a table:
    CartesianLimit('tool0', axis=2, lower=0.1)."""

    frame: str
    axis: int = 2
    lower: float | None = None
    upper: float | None = None

    def to_dict(self) -> dict:
        return {"frame": self.frame, "axis": "xyz"[self.axis], "lower": self.lower, "upper": self.upper}

    @classmethod
    def from_dict(cls, d: dict) -> CartesianLimit:
        axis = d.get("axis", "z")
        try:
            index = "xyz".index(axis) if isinstance(axis, str) and axis else int(axis)
            if index not in (0, 1, 2):
                raise ValueError(f"axis {axis!r}")
            return cls(str(d["frame"]), index, None if d.get("lower") is None else float(d["lower"]),
                       None if d.get("upper") is None else float(d["upper"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise PayloadIdError(f"the Cartesian limit {d} is malformed ({exc!r})",
                                 "give frame, axis (x, y or z) and lower/upper in m, or write it with payload-id "
                                 "excite") from None

    def describe(self) -> str:
        ax = "xyz"[self.axis]
        parts = []
        if self.lower is not None:
            parts.append(f"{ax} >= {self.lower:g} m")
        if self.upper is not None:
            parts.append(f"{ax} <= {self.upper:g} m")
        return f"{self.frame} {' and '.join(parts)}"


def design_cartesian_limits(trajectory: FourierTrajectory) -> list[CartesianLimit]:
    """The Cartesian limits a trajectory was designed for (its YAML design block), e.g. to re-check them."""
    return [CartesianLimit.from_dict(d) for d in trajectory.design.get("cartesian") or [] if isinstance(d, dict)]


def frame_positions(model, frame: str, q: np.ndarray) -> np.ndarray:
    """(N, 3) world position of `frame` at each configuration q (N, n)."""
    fid = model.frame_id(frame)
    data = model.model.createData()
    out = np.empty((q.shape[0], 3))
    for k, qk in enumerate(q):
        pin.forwardKinematics(model.model, data, qk)
        out[k] = pin.updateFramePlacement(model.model, data, fid).translation
    return out


def limit_violations(trajectory: FourierTrajectory, model, limits: MotionLimits,
                     cartesian: list[CartesianLimit] | tuple = (), dt: float = 1e-3,
                     tol: float = 1e-9) -> list[str]:
    """Every limit the trajectory breaks on a `dt` grid (default 1 ms), as readable sentences; [] when none."""
    traj = trajectory.for_model(list(model.joint_names))
    t = traj.time_grid(dt)
    q, qd, qdd = traj.evaluate(t)
    out = []
    names = traj.joint_names
    for j, name in enumerate(names):
        position_range = f"[{limits.lower[j]:.4g}, {limits.upper[j]:.4g}] rad"
        checks = [
            ("position", q[:, j] < limits.lower[j] - tol, q[:, j], position_range),
            ("position", q[:, j] > limits.upper[j] + tol, q[:, j], position_range),
            ("velocity", np.abs(qd[:, j]) > limits.velocity[j] + tol, qd[:, j], f"±{limits.velocity[j]:.4g} rad/s"),
            ("acceleration", np.abs(qdd[:, j]) > limits.acceleration[j] + tol, qdd[:, j],
             f"±{limits.acceleration[j]:.4g} rad/s²"),
        ]
        for kind, bad, vals, allowed in checks:
            if np.any(bad):
                k = int(np.argmax(bad))
                out.append(f"{name} {kind} {vals[k]:.4g} at t={t[k]:.3f} s outside {allowed}")
    for lim in cartesian:
        p = frame_positions(model, lim.frame, q)[:, lim.axis]
        if lim.lower is not None and np.any(p < lim.lower - tol):
            k = int(np.argmin(p))
            out.append(f"{lim.frame} {'xyz'[lim.axis]} = {p[k]:.4g} m at t={t[k]:.3f} s below {lim.lower:g} m")
        if lim.upper is not None and np.any(p > lim.upper + tol):
            k = int(np.argmax(p))
            out.append(f"{lim.frame} {'xyz'[lim.axis]} = {p[k]:.4g} m at t={t[k]:.3f} s above {lim.upper:g} m")
    return out


def check_limits(trajectory: FourierTrajectory, model, limits: MotionLimits,
                 cartesian: list[CartesianLimit] | tuple = (), dt: float = 1e-3) -> None:
    """Raise PayloadIdError naming the first violations when the trajectory breaks a limit on the `dt` grid."""
    bad = limit_violations(trajectory, model, limits, cartesian, dt)
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise PayloadIdError(f"the trajectory breaks limits: {'; '.join(bad[:3])}{more}",
                             "regenerate it with payload-id excite for these limits, or lower the margin")


def design_limits(trajectory: FourierTrajectory, model) -> MotionLimits:
    """The joint limits a trajectory was designed for: the URDF's, with the margin and acceleration
    limits of its design block (defaults: 5 % margin, the robot's default acceleration limits)."""
    # The design block is read from a file (a player's YAML, `excite --from`): a value that is no number is bad input.
    try:
        margin = float(trajectory.design.get("margin", 0.05))
        acc = trajectory.design.get("acceleration_limits")
        acc = None if acc is None else np.asarray(acc, dtype=float)
    except (TypeError, ValueError) as exc:
        raise PayloadIdError(f"the trajectory's design block has a margin or acceleration_limits that is not a number "
                             f"({exc})", "write it with payload-id excite, or fix those values in the YAML") from None
    if acc is not None:
        if acc.shape != (model.n,):
            acc = None
        else:
            acc = acc / (1.0 - margin)  # the design block stores them with the margin applied
    return MotionLimits.from_model(model, margin=margin, acceleration=acc)


def check_trajectory(trajectory: FourierTrajectory, model, limits: MotionLimits | None = None,
                     dt: float = 1e-3) -> None:
    """Raise PayloadIdError unless `trajectory` respects, on a `dt` (1 ms) grid, the joint limits
    (`limits`, default `design_limits`: the URDF's with the design margin) AND the Cartesian limits
    of its design block (e.g. the tool above the table). What a player calls before sending it."""
    if limits is None:
        limits = design_limits(trajectory, model)
    check_limits(trajectory, model, limits, design_cartesian_limits(trajectory), dt)

