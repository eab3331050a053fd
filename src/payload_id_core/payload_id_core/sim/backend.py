"""The physics engine behind the simulated robot cell, as an interface.

The cell (cell.py) only talks to a `PhysicsBackend`: MuJoCo today (mujoco_backend.py); a Gazebo
(gz_ros2_control) backend can be added for cells that have Gazebo by implementing these methods.
The backend owns the rigid-body dynamics only: links, payload, rotor inertia and gravity. Friction,
noise, drive gains and the controller live in the cell, so every backend gets the same ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from payload_id_core.errors import PayloadIdError


class SimulationDiverged(PayloadIdError):
    """The physics engine could not integrate the model (MuJoCo warned); the run has no physical meaning."""


class PhysicsBackend(ABC):
    """Rigid-body dynamics of the robot's actuated joints (model order = `joint_names`)."""

    joint_names: list[str]
    timestep: float                  # s, one call of step()

    @abstractmethod
    def reset(self, q: np.ndarray, qd: np.ndarray | None = None) -> None:
        """Put the robot at joint positions q (velocities qd, default zero)."""

    @abstractmethod
    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, qd) now (copies)."""

    @property
    @abstractmethod
    def time(self) -> float:
        """Simulated time, s."""

    @abstractmethod
    def step(self, tau: np.ndarray, implicit_damping: np.ndarray | None = None) -> np.ndarray:
        """Advance one timestep with joint torques `tau` applied; returns the joint acceleration used.

        `implicit_damping` (n,) N·m·s/rad: extra viscous torque −d·qd_next integrated implicitly, so a
        stiff friction law (caller linearises it) stays stable at any timestep; the caller has already
        subtracted d·qd from `tau`.
        """

    def read(self) -> tuple[list[float], list[float]]:
        """(q, qd) now as Python floats: the cell's per-step path, where numpy on 6-vectors costs more
        than the physics. Backends override it to skip the array copies."""
        q, qd = self.state()
        return q.tolist(), qd.tolist()

    def apply(self, tau: list[float], implicit_damping: list[float] | None = None) -> None:
        """step() for the per-step path: the cell takes the acceleration from the velocity change."""
        self.step(np.asarray(tau, float), None if implicit_damping is None else np.asarray(implicit_damping, float))

    def warning_count(self) -> int:
        """How many times the physics engine warned that it could not integrate (a diverging step it
        reset or clamped); 0 for a backend that never warns."""
        return 0

    @abstractmethod
    def set_payload(self, phi: np.ndarray | None, frame: str) -> None:
        """Rigidly attach a body with parameters φ (pinocchio order, about `frame`'s origin, `frame` axes)
        at URDF frame `frame`; None removes it."""

    @abstractmethod
    def set_armature(self, armature: np.ndarray) -> None:
        """Rotor inertia reflected to each joint (kg·m²), added to the mass matrix diagonal."""

    @abstractmethod
    def set_gravity(self, gravity: np.ndarray) -> None:
        """Gravity vector in the robot's base frame (a tilted base rotates it)."""

    @abstractmethod
    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Joint torques the rigid bodies (links, payload, rotor inertia) need for (q, qd, qdd)."""
