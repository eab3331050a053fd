"""Noise, friction, drive and controller settings of a simulated cell (bundled: payload_id_core/data/sim/*.yaml).

A profile says how far the simulated robot is from the ideal rigid-body model: joint friction
(Xu 2024 eq. 2 with a load-dependent Coulomb term), rotor inertia, drive gains (effort reported as
current), measurement noise, the wrist F/T sensor and the trajectory controller's tuning.
Per-joint entries are lists in the model's joint order or one number for every joint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import read_yaml_mapping
from payload_id_core.resources import bundled_dir, bundled_names


@dataclass
class FrictionSettings:
    """τ_f = (Fc + μ|τ_load| + Fv|q̇|^α)·sign(q̇) + B (Xu 2024 eq. 2; μ: Coulomb growth with the load)."""

    coulomb: np.ndarray          # Fc, N·m
    viscous: np.ndarray          # Fv, N·m/(rad/s)^α
    alpha: np.ndarray            # α
    offset: np.ndarray           # B, N·m
    load_coulomb: np.ndarray     # μ, N·m of Coulomb per N·m of load torque
    smoothing_velocity: float    # rad/s: sign(q̇) → tanh(q̇/v_s), so the law is differentiable at rest

    @property
    def active(self) -> bool:
        return bool(np.any(self.coulomb) or np.any(self.viscous) or np.any(self.offset) or np.any(self.load_coulomb))


@dataclass
class FtSettings:
    enabled: bool
    frame: str | None            # sensor frame (None: the payload frame)
    force_offset: np.ndarray     # N
    torque_offset: np.ndarray    # N·m
    force_noise_std: float       # N
    torque_noise_std: float      # N·m


@dataclass
class ControllerSettings:
    bandwidth_hz: float          # each joint's triple closed-loop pole (PID), Hz
    delay: float                 # s, reference applied this late (one read→write cycle of ros2_control)
    feedforward: str             # 'model' (rnea of the robot without payload), 'gravity', 'none'


@dataclass
class SimProfile:
    name: str
    timestep: float                       # s, physics step
    friction: FrictionSettings
    rotor_inertia: np.ndarray             # kg·m² per joint
    effort_scale: np.ndarray              # N·m per unit of reported effort (UR: per A)
    torque_noise_std: np.ndarray          # N·m, on the reported effort (current measurement)
    position_noise_std: float             # rad
    velocity_noise_std: float             # rad/s
    base_tilt: np.ndarray                 # (U, V) rad, base tilt about x then y (Duan 2022 eq. 10)
    ft: FtSettings
    controller: ControllerSettings
    source: str = ""
    raw: dict = field(default_factory=dict)

    def gravity(self, g: float = 9.81) -> np.ndarray:
        """Gravity in the base frame, g_B = R_WBᵀ [0, 0, −g] with R_WB = Rx(U) Ry(V) (Duan 2022 eq. 10, 13)."""
        u, v = self.base_tilt
        return g * np.array([np.cos(u) * np.sin(v), -np.sin(u), -np.cos(u) * np.cos(v)])

    @classmethod
    def from_dict(cls, d: dict, n: int, name: str = "", source: str = "") -> SimProfile:
        def joints(value, default, key):
            arr = np.asarray(default if value is None else value, dtype=float).reshape(-1)
            if arr.size == 1:
                arr = np.full(n, arr[0])
            if arr.size != n or not np.all(np.isfinite(arr)):
                raise PayloadIdError(f"profile {source or name}: '{key}' has {arr.size} finite values "
                                     f"for a {n}-joint robot",
                                     "give one number or one per joint")
            return arr

        def vec3(value, key):
            arr = np.asarray(value if value is not None else [0, 0, 0], dtype=float).reshape(-1)
            if arr.size != 3:
                raise PayloadIdError(f"profile {source or name}: '{key}' must have 3 values", "write [x, y, z]")
            return arr

        try:
            fr = d.get("friction") or {}
            friction = FrictionSettings(
                coulomb=joints(fr.get("coulomb"), 0.0, "friction.coulomb"),
                viscous=joints(fr.get("viscous"), 0.0, "friction.viscous"),
                alpha=joints(fr.get("alpha"), 1.0, "friction.alpha"),
                offset=joints(fr.get("offset"), 0.0, "friction.offset"),
                load_coulomb=joints(fr.get("load_coulomb"), 0.0, "friction.load_coulomb"),
                smoothing_velocity=float(fr.get("smoothing_velocity", 0.01)))
            ft = d.get("ft_sensor") or {}
            ftset = FtSettings(enabled=bool(ft.get("enabled", True)), frame=ft.get("frame"),
                               force_offset=vec3(ft.get("force_offset"), "ft_sensor.force_offset"),
                               torque_offset=vec3(ft.get("torque_offset"), "ft_sensor.torque_offset"),
                               force_noise_std=float(ft.get("force_noise_std", 0.0)),
                               torque_noise_std=float(ft.get("torque_noise_std", 0.0)))
            c = d.get("controller") or {}
            ctrl = ControllerSettings(bandwidth_hz=float(c.get("bandwidth_hz", 10.0)),
                                      delay=float(c.get("delay", 0.002)),
                                      feedforward=str(c.get("feedforward", "model")))
            tilt = np.asarray(d.get("base_tilt", [0.0, 0.0]), dtype=float).reshape(-1)
            prof = cls(name=name or str(d.get("name", "")), timestep=float(d.get("timestep", 0.001)),
                       friction=friction, rotor_inertia=joints(d.get("rotor_inertia"), 0.0, "rotor_inertia"),
                       effort_scale=joints(d.get("effort_scale"), 1.0, "effort_scale"),
                       torque_noise_std=joints(d.get("torque_noise_std"), 0.0, "torque_noise_std"),
                       position_noise_std=float(d.get("position_noise_std", 0.0)),
                       velocity_noise_std=float(d.get("velocity_noise_std", 0.0)),
                       base_tilt=tilt, ft=ftset, controller=ctrl, source=source, raw=dict(d))
        except (TypeError, ValueError, AttributeError) as err:
            raise PayloadIdError(f"simulation profile {source or name} is malformed ({err})",
                                 "compare it with the bundled profile ur10 (payload_id_core/data/sim/ur10.yaml)"
                                 ) from err
        if tilt.size != 2:
            raise PayloadIdError(f"profile {source or name}: base_tilt must be [U, V] in rad",
                                 "write base_tilt: [0.0, 0.0]")
        if ctrl.feedforward not in ("model", "gravity", "none"):
            raise PayloadIdError(f"profile {source or name}: controller.feedforward '{ctrl.feedforward}' is unknown",
                                 "use model, gravity or none")
        if not 0.0 < prof.timestep <= 0.005:
            raise PayloadIdError(f"profile {source or name}: timestep {prof.timestep} s", "use 0.001 or 0.002")
        if np.any(prof.effort_scale == 0):
            raise PayloadIdError(f"profile {source or name}: effort_scale has a zero",
                                 "give the drive gains in N·m per unit")
        return prof


def load_profile(name_or_path: str | Path, n: int) -> SimProfile:
    """A bundled profile ('clean', 'ur10' → payload_id_core/data/sim/<name>.yaml) or a YAML file, for an
    n-joint robot."""
    path = Path(name_or_path)
    if not path.suffix:
        path = bundled_dir("sim") / f"{name_or_path}.yaml"
        if not path.is_file():
            raise PayloadIdError(f"unknown simulation profile '{name_or_path}'",
                                 f"use one of {', '.join(bundled_profiles())} or a YAML path")
    # An empty file is refused too: the defaults have a name ('clean'), an empty profile is a mistake.
    data = read_yaml_mapping(path, "simulation profile", "check the --profile path, or use a bundled name "
                                                         f"({', '.join(bundled_profiles())})")
    return SimProfile.from_dict(data, n, name=path.stem.removeprefix("sim_"), source=str(path))


def bundled_profiles() -> list[str]:
    """The profiles load_profile knows by name."""
    return bundled_names("sim", ".yaml")
