"""Periodic Fourier excitation trajectories: the motion a robot plays so its dynamics can be identified.

A trajectory is a finite Fourier series per joint (Swevers et al. 1997; Xu 2024 eq. 17;
Tadese 2022 eq. 25)::

    q_j(t) = q_j0 + sum_l [ a_jl / (w l) sin(w l t) - b_jl / (w l) cos(w l t) ],   w = 2 pi f

so `a` and `b` are velocity amplitudes (rad/s) of the sine and cosine terms of q̇. Xu eq. 18's
equality constraints make every joint start and end at rest at its offset pose::

    sum_l b_jl / l = 0   (q(0) = q_j0),   sum_l a_jl = 0   (q̇(0) = 0),   sum_l l b_jl = 0   (q̈(0) = 0)

and because the duration is a whole number of periods, q(T) = q(0), q̇(T) = q̈(T) = 0 too, so the
trajectory can be repeated back to back. The optimizer (excitation_design) never sees these
constraints: it moves in the null space of the 3 x 2H constraint matrix (`rest_basis`), so they
hold to machine precision for every candidate.

This module holds the trajectory itself: evaluation, the trajectory YAML (save/load), the limit
check on a dense time grid, and playback sampling (a quintic move to the start pose followed by
the excitation) as CommandedTrajectory points for a joint_trajectory_controller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.linalg

from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.errors import PayloadIdError
from payload_id_core.resources import config_dir
from payload_id_core.io.files import atomic_write_yaml

# Relative tolerance on the rest conditions of a loaded trajectory (YAML stores floats with repr,
# so a saved trajectory round-trips far below this).
_REST_TOL = 1e-7


def rest_basis(harmonics: int) -> np.ndarray:
    """(2H, 2H-3) orthonormal basis of the coefficient vectors c = [a_1..a_H, b_1..b_H] that satisfy
    Xu 2024 eq. 18's equality constraints (start and end at rest at the offset pose)."""
    if harmonics < 2:
        raise PayloadIdError(f"{harmonics} harmonic(s) cannot start and end at rest",
                             "use at least 2 harmonics (5 is usual)")
    return scipy.linalg.null_space(rest_constraints(harmonics))


def rest_constraints(harmonics: int) -> np.ndarray:
    """(3, 2H) matrix C with C c = 0 <=> q(0) = offset, q̇(0) = 0, q̈(0) = 0 (Xu 2024 eq. 18, divided by w)."""
    h = np.arange(1, harmonics + 1, dtype=float)
    z = np.zeros(harmonics)
    return np.array([
        np.concatenate([z, 1.0 / h]),        # -q(0) + q0 = sum b_l / (w l)
        np.concatenate([np.ones(harmonics), z]),  # q̇(0) = sum a_l
        np.concatenate([z, h]),              # q̈(0) = w sum l b_l
    ])


@dataclass
class FourierTrajectory:
    """One excitation: n joints, H harmonics of `base_frequency_hz`, `duration` = k periods.

    Attributes:
        joint_names: joints the trajectory drives (all of the robot's actuated joints; joints that
            do not move have zero coefficients and hold their offset).
        base_frequency_hz: f, the fundamental frequency (w = 2 pi f).
        offsets: (n,) rad, the start and end pose.
        a, b: (n, H) rad/s, sine and cosine coefficients of Xu 2024 eq. 17.
        duration: s, a whole number of periods 1/f (default one period).
        design: informational record of how it was made (objective, condition numbers, command).
    """

    joint_names: list[str]
    base_frequency_hz: float
    offsets: np.ndarray
    a: np.ndarray
    b: np.ndarray
    duration: float | None = None
    design: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.joint_names = [str(j) for j in self.joint_names]
        n = len(self.joint_names)
        self.offsets = np.asarray(self.offsets, dtype=float).reshape(-1)
        self.a = np.atleast_2d(np.asarray(self.a, dtype=float))
        self.b = np.atleast_2d(np.asarray(self.b, dtype=float))
        if len(set(self.joint_names)) != n or n == 0:
            raise PayloadIdError(f"trajectory joint names {self.joint_names} are empty or repeated",
                                 "list each joint once")
        if self.offsets.shape != (n,) or self.a.shape[0] != n or self.a.shape != self.b.shape:
            raise PayloadIdError(
                f"trajectory shapes do not match {n} joints: offsets {self.offsets.shape}, a {self.a.shape}, "
                f"b {self.b.shape}", "give offsets (n,) and a, b (n, harmonics)")
        for name in ("offsets", "a", "b"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise PayloadIdError(f"trajectory {name} contain NaN or infinity", "regenerate it with payload-id excite")
        f = float(self.base_frequency_hz)
        if not (math.isfinite(f) and f > 0):
            raise PayloadIdError(f"base frequency {self.base_frequency_hz} Hz is not positive",
                                 "use e.g. 0.1 Hz (one 10 s period)")
        self.base_frequency_hz = f
        period = 1.0 / f
        self.duration = period if self.duration is None else float(self.duration)
        periods = self.duration / period
        if not (math.isfinite(self.duration) and self.duration > 0):
            raise PayloadIdError(f"trajectory duration {self.duration} s is not positive", "use e.g. 10 s")
        if abs(periods - round(periods)) > 1e-6 or round(periods) < 1:
            raise PayloadIdError(
                f"duration {self.duration} s is not a whole number of periods of {f} Hz ({period:g} s)",
                "set the base frequency to k/duration so the trajectory ends at rest where it started")
        self._check_rest()

    # -- construction ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.joint_names)

    @property
    def harmonics(self) -> int:
        return self.a.shape[1]

    @property
    def omega(self) -> float:
        return 2.0 * math.pi * self.base_frequency_hz

    @classmethod
    def from_rest_coordinates(cls, joint_names, base_frequency_hz, offsets, z, harmonics, duration=None,
                              design=None) -> "FourierTrajectory":
        """Build from null-space coordinates z (n, 2H-3): every such z starts and ends at rest."""
        basis = rest_basis(harmonics)
        c = np.asarray(z, dtype=float).reshape(len(joint_names), basis.shape[1]) @ basis.T
        return cls(joint_names, base_frequency_hz, offsets, c[:, :harmonics], c[:, harmonics:], duration,
                   dict(design or {}))

    def rest_coordinates(self) -> np.ndarray:
        """(n, 2H-3) the inverse of from_rest_coordinates."""
        return np.hstack([self.a, self.b]) @ rest_basis(self.harmonics)

    def _check_rest(self) -> None:
        if self.harmonics < 2:
            if np.any(self.a) or np.any(self.b):
                raise PayloadIdError("a one-harmonic trajectory cannot start and end at rest",
                                     "use at least 2 harmonics")
            return
        c = np.hstack([self.a, self.b])
        residual = c @ rest_constraints(self.harmonics).T
        scale = max(1.0, float(np.abs(c).max()))
        if np.abs(residual).max() > _REST_TOL * scale:
            raise PayloadIdError(
                "the trajectory coefficients do not start and end at rest at the offsets (Xu 2024 eq. 18)",
                "regenerate the trajectory with payload-id excite")

    # -- evaluation -----------------------------------------------------------------------------
    def basis(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N, 2H) rows mapping c = [a, b] of one joint to q - offset, q̇, q̈ at times t (clamped to [0, T])."""
        t = np.clip(np.asarray(t, dtype=float).reshape(-1), 0.0, self.duration)
        h = np.arange(1, self.harmonics + 1, dtype=float)
        wl = self.omega * h
        s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
        pos = np.hstack([s / wl, -c / wl])
        vel = np.hstack([c, s])
        acc = np.hstack([-s * wl, c * wl])
        return pos, vel, acc

    def evaluate(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Analytic (q, q̇, q̈), each (N, n), at times t (s). Outside [0, duration] the robot rests at the offsets."""
        pos, vel, acc = self.basis(t)
        coef = np.hstack([self.a, self.b]).T          # (2H, n)
        return self.offsets + pos @ coef, vel @ coef, acc @ coef

    def time_grid(self, dt: float) -> np.ndarray:
        """Times 0, dt, ..., duration (the last one exactly `duration`)."""
        if not dt > 0:
            raise PayloadIdError(f"sample period {dt} s is not positive", "use a positive rate")
        k = int(math.ceil(self.duration / dt - 1e-9))
        return np.minimum(np.arange(k + 1) * dt, self.duration)

    def to_commanded(self, rate_hz: float, start_time: float = 0.0) -> CommandedTrajectory:
        """JointTrajectory points (positions, velocities, accelerations) at `rate_hz`, first at 0, last at duration."""
        if not rate_hz > 0:
            raise PayloadIdError(f"playback rate {rate_hz} Hz is not positive", "use e.g. 100 Hz")
        t = self.time_grid(1.0 / rate_hz)
        q, qd, qdd = self.evaluate(t)
        return CommandedTrajectory(start_time, list(self.joint_names), t, q, qd, qdd)

    # -- YAML -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "kind": "fourier",
            "joint_names": list(self.joint_names),
            "base_frequency_hz": float(self.base_frequency_hz),
            "duration": float(self.duration),
            "offsets": [float(x) for x in self.offsets],
            "a": [[float(x) for x in row] for row in self.a],
            "b": [[float(x) for x in row] for row in self.b],
            "design": _plain(self.design),
        }

    @classmethod
    def from_dict(cls, d: dict, source: str = "trajectory") -> "FourierTrajectory":
        if not isinstance(d, dict) or d.get("kind", "fourier") != "fourier":
            raise PayloadIdError(f"{source} is not a Fourier trajectory YAML (kind: fourier)",
                                 "write one with payload-id excite")
        missing = [k for k in ("joint_names", "base_frequency_hz", "offsets", "a", "b") if k not in d]
        if missing:
            raise PayloadIdError(f"{source} lacks the keys {missing}", "write it with payload-id excite")
        try:
            return cls(list(d["joint_names"]), float(d["base_frequency_hz"]), d["offsets"], d["a"], d["b"],
                       d.get("duration"), dict(d.get("design") or {}))
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{source} has malformed values: {err}", "write it with payload-id excite") from err

    def save(self, path) -> None:
        """Write the trajectory YAML (atomic: a failure leaves no file)."""
        atomic_write_yaml(path, self.to_dict())

    @classmethod
    def load(cls, path) -> "FourierTrajectory":
        import yaml  # noqa: PLC0415

        path = Path(path)
        if not path.is_file():
            raise PayloadIdError(f"trajectory file {path} does not exist", "check the path or use a bundled name")
        try:
            d = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            raise PayloadIdError(f"cannot parse trajectory YAML {path}: {err}", "check the file") from err
        return cls.from_dict(d, str(path))

    def for_model(self, joint_names: list[str]) -> "FourierTrajectory":
        """The same trajectory with joints reordered to `joint_names` (matched by name)."""
        missing = [j for j in joint_names if j not in self.joint_names]
        extra = [j for j in self.joint_names if j not in joint_names]
        if missing or extra:
            raise PayloadIdError(
                f"trajectory joints {self.joint_names} do not match the robot's {list(joint_names)}",
                "use a trajectory made for this robot (payload-id excite --urdf ...)")
        idx = [self.joint_names.index(j) for j in joint_names]
        return FourierTrajectory(list(joint_names), self.base_frequency_hz, self.offsets[idx], self.a[idx],
                                 self.b[idx], self.duration, dict(self.design))


def _plain(x):
    """Design records may hold numpy scalars/arrays; YAML wants plain Python."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


def trajectories_dir() -> Path:
    """config/trajectories of the source checkout, or share/payload_id_ros/config/trajectories when installed."""
    return config_dir("trajectories")


def bundled_trajectories() -> list[str]:
    d = trajectories_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def load_trajectory(name_or_path) -> FourierTrajectory:
    """A trajectory YAML path, or the name of a bundled one (config/trajectories/<name>.yaml, e.g. 'ur10_payload')."""
    path = Path(name_or_path)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        return FourierTrajectory.load(path)
    cand = trajectories_dir() / f"{name_or_path}.yaml"
    if cand.is_file():
        return FourierTrajectory.load(cand)
    raise PayloadIdError(f"unknown trajectory '{name_or_path}'",
                         f"give a trajectory YAML path or one of: {', '.join(bundled_trajectories()) or '(none bundled)'}")


# -- limits -------------------------------------------------------------------------------------
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
    def from_model(cls, model, margin: float = 0.05, acceleration=None) -> "MotionLimits":
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
    def from_dict(cls, d: dict) -> "CartesianLimit":
        axis = d.get("axis", "z")
        return cls(str(d["frame"]), "xyz".index(axis) if isinstance(axis, str) else int(axis),
                   None if d.get("lower") is None else float(d["lower"]),
                   None if d.get("upper") is None else float(d["upper"]))

    def describe(self) -> str:
        ax = "xyz"[self.axis]
        parts = []
        if self.lower is not None:
            parts.append(f"{ax} >= {self.lower:g} m")
        if self.upper is not None:
            parts.append(f"{ax} <= {self.upper:g} m")
        return f"{self.frame} {' and '.join(parts)}"


def design_cartesian_limits(trajectory: "FourierTrajectory") -> list[CartesianLimit]:
    """The Cartesian limits a trajectory was designed for (its YAML design block), e.g. to re-check them."""
    return [CartesianLimit.from_dict(d) for d in trajectory.design.get("cartesian") or [] if isinstance(d, dict)]


def frame_positions(model, frame: str, q: np.ndarray) -> np.ndarray:
    """(N, 3) world position of `frame` at each configuration q (N, n)."""
    import pinocchio as pin  # noqa: PLC0415

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
        checks = [
            ("position", q[:, j] < limits.lower[j] - tol, q[:, j], f"[{limits.lower[j]:.4g}, {limits.upper[j]:.4g}] rad"),
            ("position", q[:, j] > limits.upper[j] + tol, q[:, j], f"[{limits.lower[j]:.4g}, {limits.upper[j]:.4g}] rad"),
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
    margin = float(trajectory.design.get("margin", 0.05))
    acc = trajectory.design.get("acceleration_limits")
    if acc is not None:
        acc = np.asarray(acc, dtype=float)
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


# -- playback -----------------------------------------------------------------------------------
# Peak speed and acceleration of the rest-to-rest quintic s(u) = 10u³ - 15u⁴ + 6u⁵ per unit distance and time.
_QUINTIC_PEAK_VEL = 1.875
_QUINTIC_PEAK_ACC = 10.0 / math.sqrt(3.0)


def move_to_start(q_current, trajectory: FourierTrajectory, limits: MotionLimits, rate_hz: float = 100.0,
                  start_time: float = 0.0, min_duration: float = 1.0) -> CommandedTrajectory:
    """A rest-to-rest quintic move from `q_current` (joint order of `limits`) to the trajectory's offsets,
    slow enough for every joint's velocity and acceleration limits, sampled at `rate_hz`.

    Joints move monotonically along a straight line in joint space; Cartesian limits are not checked
    here (the start pose satisfies them; the path from an arbitrary pose is the operator's concern)."""
    names = list(limits.joint_names)
    traj = trajectory.for_model(names)
    q0 = np.asarray(q_current, dtype=float).reshape(-1)
    if q0.shape != (len(names),) or not np.all(np.isfinite(q0)):
        raise PayloadIdError(f"current pose {q0.tolist()} is not {len(names)} finite joint positions",
                             f"give positions for {names}")
    # The move stays on the segment between q_current and the (inside) offsets, so a pose inside the
    # URDF range but within the margin is fine; only a pose outside the URDF range is refused.
    slack = 0.5 * limits.margin / (1.0 - limits.margin) * (limits.upper - limits.lower) + 1e-6
    outside = [n for n, x, lo, hi, s in zip(names, q0, limits.lower, limits.upper, slack)
               if not lo - s <= x <= hi + s]
    if outside:
        raise PayloadIdError(f"the current pose is outside the URDF joint range for {outside}",
                             "jog the robot back inside its joint limits first")
    dist = np.abs(traj.offsets - q0)
    duration = max(min_duration,
                   float(np.max(_QUINTIC_PEAK_VEL * dist / limits.velocity)),
                   float(np.max(np.sqrt(_QUINTIC_PEAK_ACC * dist / limits.acceleration))))
    step = 1.0 / rate_hz
    k = int(math.ceil(duration / step - 1e-9))
    duration = k * step                        # whole number of samples: the excitation follows on the same grid
    t = np.arange(k + 1) * step
    u = t / duration
    s = u**3 * (10 - 15 * u + 6 * u**2)
    sd = 30 * u**2 * (1 - u) ** 2 / duration
    sdd = 60 * u * (1 - u) * (1 - 2 * u) / duration**2
    delta = traj.offsets - q0
    return CommandedTrajectory(start_time, names, t, q0 + np.outer(s, delta), np.outer(sd, delta),
                               np.outer(sdd, delta))


def playback_points(q_current, trajectory: FourierTrajectory, limits: MotionLimits, rate_hz: float = 100.0,
                    repetitions: int = 1, start_time: float = 0.0) -> CommandedTrajectory:
    """The move to the start pose followed by `repetitions` back-to-back periods of the excitation, one
    CommandedTrajectory (positions, velocities, accelerations at `rate_hz`) for a joint_trajectory_controller.
    The excitation starts at time_from_start = end - repetitions * duration."""
    if repetitions < 1:
        raise PayloadIdError(f"{repetitions} repetitions", "play the excitation at least once")
    move = move_to_start(q_current, trajectory, limits, rate_hz, start_time)
    exc = trajectory.for_model(list(limits.joint_names)).to_commanded(rate_hz)
    ts, qs, vs, acs = [move.time_from_start], [move.positions], [move.velocities], [move.accelerations]
    t0 = float(move.time_from_start[-1])
    for _ in range(repetitions):
        # The first excitation point equals the last point before it (rest at the offsets): skip it.
        ts.append(t0 + exc.time_from_start[1:])
        qs.append(exc.positions[1:])
        vs.append(exc.velocities[1:])
        acs.append(exc.accelerations[1:])
        t0 += trajectory.duration
    return CommandedTrajectory(start_time, list(limits.joint_names), np.concatenate(ts), np.vstack(qs),
                               np.vstack(vs), np.vstack(acs))
