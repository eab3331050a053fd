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

This module holds the trajectory itself: evaluation, sampling as JointTrajectory points, the
trajectory YAML (save/load) and the bundled trajectories. Limits and their checks live in
excitation.limits, playback (the move to the start pose, time scaling, the decelerating stop) in
excitation.playback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.linalg

from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_yaml, read_yaml_mapping
from payload_id_core.resources import bundled_dir, bundled_names
from payload_id_core.signals.recording import CommandedTrajectory

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
    # None means one period (1 / base_frequency_hz), resolved in __post_init__: afterwards always a float.
    duration: float = None  # type: ignore[assignment]
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
                raise PayloadIdError(f"trajectory {name} contain NaN or infinity",
                                     "regenerate it with payload-id excite")
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
                              design=None) -> FourierTrajectory:
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
    def from_dict(cls, d: dict, source: str = "trajectory") -> FourierTrajectory:
        if not isinstance(d, dict) or d.get("kind", "fourier") != "fourier":
            raise PayloadIdError(f"{source} is not a Fourier trajectory YAML (kind: fourier)",
                                 "write one with payload-id excite")
        missing = [k for k in ("joint_names", "base_frequency_hz", "offsets", "a", "b") if k not in d]
        if missing:
            raise PayloadIdError(f"{source} lacks the keys {missing}", "write it with payload-id excite")
        try:
            return cls(list(d["joint_names"]), float(d["base_frequency_hz"]), d["offsets"], d["a"], d["b"],
                       d.get("duration"),  # type: ignore[arg-type]  # None (not in the file): one period
                       dict(d.get("design") or {}))
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{source} has malformed values: {err}", "write it with payload-id excite") from err

    def save(self, path) -> None:
        """Write the trajectory YAML (atomic: a failure leaves no file)."""
        atomic_write_yaml(path, self.to_dict())

    @classmethod
    def load(cls, path) -> FourierTrajectory:
        path = Path(path)
        d = read_yaml_mapping(path, "trajectory file", "check the path or use a bundled name "
                                                       "(payload-id excite writes trajectory files)")
        return cls.from_dict(d, str(path))

    def for_model(self, joint_names: list[str]) -> FourierTrajectory:
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
    """The bundled trajectories: payload_id_core/data/trajectories."""
    return bundled_dir("trajectories")


def bundled_trajectories() -> list[str]:
    return bundled_names("trajectories", ".yaml")


def load_trajectory(name_or_path) -> FourierTrajectory:
    """A trajectory YAML path, or the name of a bundled one (data/trajectories/<name>.yaml, e.g. 'ur10_payload')."""
    path = Path(name_or_path)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        return FourierTrajectory.load(path)
    cand = trajectories_dir() / f"{name_or_path}.yaml"
    if cand.is_file():
        return FourierTrajectory.load(cand)
    bundled = ", ".join(bundled_trajectories()) or "(none bundled)"
    raise PayloadIdError(f"unknown trajectory '{name_or_path}'", f"give a trajectory YAML path or one of: {bundled}")
