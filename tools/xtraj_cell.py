"""The synthetic cross-trajectory cell of bench/accuracy.py and bench/priors.py: a robot with nonlinear friction 3 %
higher under load, 3 ms lag and 1 N·m torque noise, identified on a 30 s sum of sines (cached in out/accuracy_cache,
so both benches share each identification), the payload fitted on another motion."""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_id_core.dynamics.friction import FrictionModel, make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import identify_robot
from payload_id_core.robot_id.pipeline import IDENTIFICATION_VERSION
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "out" / "accuracy_cache"
RATE = 500.0


def cached(key: str, make):
    """make() once per key (a robot identification takes tens of seconds), then from out/accuracy_cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    # The identification code's version is part of the key: a pickle from older code is never reused.
    path = CACHE / (hashlib.sha256(f"{key} v{IDENTIFICATION_VERSION}".encode()).hexdigest()[:16] + ".pkl")
    if path.is_file():
        return pickle.loads(path.read_bytes())
    value = make()
    path.write_bytes(pickle.dumps(value))
    return value


@dataclass
class XtrajCell:
    name: str
    model: RobotModel
    friction: FrictionModel
    friction_params: np.ndarray

    def recording(self, motion, payload, scale: float, seed: int):
        """A run of `motion` (t, q, q̇, q̈) carrying `payload` ((φ, frame) or None), friction × `scale`."""
        return synthetic_recording(self.model, *motion, friction=self.friction,
                                   friction_params=self.friction_params * scale, rotor_inertia=0.1, payload=payload,
                                   noise_std=1.0, delay=0.003, seed=seed)

    def robot(self, seed: int = 0):
        """The robot identified on the unloaded 30 s sum of sines with torque noise seed 1000 + seed (seed 0 keeps
        the key of the single identification the benches used before)."""
        key = f"xtraj {self.name} sum_of_sines 30 s seed 1 v1" + (f" noise seed {1000 + seed}" if seed else "")
        excitation = sum_of_sines(self.model, 30.0, RATE, seed=1)
        return cached(key, lambda: identify_robot(self.model, self.recording(excitation, None, 1.0, 1000 + seed),
                                                  friction="nonlinear"))


def xtraj_cell(robot_name: str) -> XtrajCell:
    m = RobotModel.from_urdf(robot_name)
    fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
    fp = np.tile([3.0, 2.0, 0.3], m.n) * np.linspace(2.0, 0.8, m.n).repeat(3) * (1.0 if robot_name == "ur10" else 0.3)
    return XtrajCell(robot_name, m, fm, fp)
