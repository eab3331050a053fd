"""Measure robot.yaml's model error on held-out unloaded recordings (robot_id/model_error.py): khalil-1's
regression (Khalil 2007 eq. 23, τ − Y θ_a ≈ W_L φ, rows weighted per joint) on a run with no payload, whose
answer φ_h should be 0. What it returns instead is the model error's image in the payload parameters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.linear import weighted_lstsq
from payload_id_core.payload.methods.common import check_covers_excitation, method_signals, payload_rows
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.model_error import HeldOutModelError
from payload_id_core.signals.recording import Recording


def spurious_payload(model: RobotModel, robot: RobotIdentification, unloaded: Recording, frame: str) -> np.ndarray:
    """(10,) φ the payload fit finds on an unloaded run (NaN where the motion does not determine an entry)."""
    check_covers_excitation(unloaded, "held-out recording")
    sig = method_signals(unloaded, model, PayloadOptions(), robot)
    W, y_a = payload_rows(model, robot, frame, sig, False)
    sol = weighted_lstsq(W, sig.tau - y_a @ np.asarray(robot.theta, dtype=float))
    return np.where(sol.identifiable[:10], sol.x[:10], np.nan)


def measure_model_error(model: RobotModel, robot: RobotIdentification, held_out: Sequence[Recording],
                        frame: str | None = None) -> HeldOutModelError:
    """The spurious payloads of `held_out` (unloaded recordings of motions robot.yaml was not fitted to, their
    efforts already in robot.yaml's torque units) on `frame` (default: the model's payload frame)."""
    frame = model.payload_frame(frame)
    rows = np.array([spurious_payload(model, robot, r, frame) for r in held_out], dtype=float).reshape(-1, 10)
    return HeldOutModelError(str(frame), [r.source or f"held-out {i + 1}" for i, r in enumerate(held_out)], rows)
