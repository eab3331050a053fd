"""The heaviest payload an arm can hold at full reach, from its URDF alone (issue 30: a known mass above it is
impossible whatever the robot is called).

Holding a point mass m at the flange's origin at rest in pose q needs, at joint j, the torque
τ_j(q) = G_j(q) + m u_j(q): G the arm's own gravity torque (pinocchio's generalized gravity), u = J_v(q)ᵀ (−g) the
torque one kilogram at the flange needs (J_v the flange origin's linear Jacobian, world-aligned). With the URDF's
effort limit τ̄_j the mass joint j can hold in pose q is

    m_j(q) = (τ̄_j − sign(u_j) G_j(q)) / |u_j(q)|,

and the arm holds m in every pose its position limits allow only if m ≤ min_j min_q m_j(q): the pose that sets it
is the arm at full reach, stretched out horizontally, where the lever arms and the arm's own torque are largest.
That minimum is found by sampling poses within the limits (a fixed seed) and refining the best per joint
(L-BFGS-B within the limits). A sample or a local minimum can only miss a lower pose, so the capacity found is never
below the true one: the bound errs towards letting a mass through. Joints whose limit is missing, zero or infinite,
or that gravity cannot load (an axis along gravity), bound nothing.

The rated payload a maker quotes is lower (it keeps margins for motion, CoM offset and life); this is the physical
ceiling, which needs no name: a URDF named "ur" (ur_description's default) or not in the rated table still gets one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from payload_id_core.dynamics.model import RobotModel

SAMPLES = 2000          # random poses within the position limits (with the zero pose)
REFINED = 3             # the best poses per joint refined by L-BFGS-B ...
# ... for the joints whose best sample is within this factor of the best over all joints: refining moves a joint's
# minimum by a few % (Panda joint 2 4.00 → 3.83 kg; the UR10's zero pose is its stretch, 16.45 → 16.43), not by half.
REFINE_WITHIN = 1.5
SEED = 30
# A joint whose torque per kilogram at the flange never exceeds this (N·m/kg: 1 mm of lever under 9.81 m/s²) is
# not loaded by the payload's gravity in any pose (the shoulder pan of an upright arm).
MIN_LEVER_TORQUE = 9.81e-3
# Continuous joints or ±2π limits: one turn covers every pose.
_TURN = np.pi


@dataclass(frozen=True)
class HoldingCapacity:
    """The heaviest point mass at the flange every joint holds against gravity in every pose its limits allow."""

    mass: float             # kg
    joint: str              # the joint that sets it
    effort_limit: float     # N·m, its limit in the URDF
    arm_torque: float       # N·m, the arm's own gravity torque there, in the pose that sets it
    per_kg: float           # N·m per kg at the flange, in that pose
    pose: tuple[float, ...]  # rad, the pose that sets it (the arm stretched out)

    def describe(self) -> str:
        return (f"{self.mass:.1f} kg at full reach ({self.joint}'s effort limit {self.effort_limit:g} N·m, "
                f"{abs(self.arm_torque):.0f} N·m of it the arm's own weight, {self.per_kg:.2f} N·m per kg)")


def _torques(model: RobotModel, frame_id: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G(q), u(q)): the arm's own gravity torque and the torque per kilogram at the frame's origin."""
    m, d = model.model, model.data
    gravity = np.array(pin.computeGeneralizedGravity(m, d, q))
    jac = pin.computeFrameJacobian(m, d, q, frame_id, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
    return gravity, jac.T @ (-model.gravity)


def _joint_capacity(g: np.ndarray, u: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """m_j per joint (inf where gravity does not load the joint or its limit bounds nothing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = (limit - np.sign(u) * g) / np.abs(u)
    return np.where((np.abs(u) > MIN_LEVER_TORQUE) & np.isfinite(limit), m, np.inf)


# The capacities found, by what they depend on (_content_key): the search takes 0.5-1 s, and a process builds many
# models of one URDF (each node's monitor, each replay, each test) that need it.
_FOUND: dict[tuple, HoldingCapacity | None] = {}


def _content_key(model: RobotModel, frame: str) -> tuple:
    """Everything the capacity depends on: the URDF (its kinematics and the joints kept), the frame, gravity, and the
    inertias and limits as they are now (a model whose links were changed after loading is another arm)."""
    m = model.model
    numbers = np.concatenate([model.link_parameters().ravel(), model.gravity, np.asarray(m.effortLimit, dtype=float),
                              np.asarray(m.lowerPositionLimit, dtype=float),
                              np.asarray(m.upperPositionLimit, dtype=float)])
    return model.urdf_sha256, tuple(model.joint_names), frame, numbers.tobytes()


def holding_capacity(model: RobotModel, frame: str | None = None) -> HoldingCapacity | None:
    """The arm's holding capacity at `frame`'s origin (default: the flange, model.default_payload_frame); None when
    no joint's effort limit bounds it (a URDF without limits, a model gravity cannot load). Searched once per arm in a
    process (_FOUND)."""
    frame = frame or model.default_payload_frame
    key = _content_key(model, frame)
    if key not in _FOUND:
        _FOUND[key] = _search(model, frame)
    return _FOUND[key]


def _search(model: RobotModel, frame: str) -> HoldingCapacity | None:
    limit = np.array(model.model.effortLimit, dtype=float)
    limit = np.where((limit > 0) & np.isfinite(limit), limit, np.inf)
    if not np.isfinite(limit).any() or not np.any(model.gravity):
        return None
    frame_id = model.frame_id(frame)
    lower = np.maximum(np.array(model.model.lowerPositionLimit, dtype=float), -_TURN)
    upper = np.minimum(np.array(model.model.upperPositionLimit, dtype=float), _TURN)
    lower, upper = np.minimum(lower, upper), np.maximum(lower, upper)
    rng = np.random.default_rng(SEED)
    poses = np.vstack([np.clip(np.zeros(model.n), lower, upper),
                       lower + (upper - lower) * rng.random((SAMPLES, model.n))])
    caps = np.array([_joint_capacity(*_torques(model, frame_id, q), limit) for q in poses])
    best: tuple[float, int, np.ndarray] = (np.inf, -1, poses[0])
    bounds = list(zip(lower, upper))
    lowest = caps.min(axis=0)
    for joint in (int(k) for k in np.flatnonzero(np.isfinite(lowest) & (lowest <= REFINE_WITHIN * lowest.min()))):
        def capacity_j(q: np.ndarray, j: int = joint) -> float:
            value = _joint_capacity(*_torques(model, frame_id, q), limit)[j]
            return float(value) if np.isfinite(value) else 1e12
        for start in poses[np.argsort(caps[:, joint])[:REFINED]]:
            res = minimize(capacity_j, start, method="L-BFGS-B", bounds=bounds)
            found = (float(res.fun), joint, res.x) if res.fun < capacity_j(start) else (capacity_j(start), joint, start)
            best = min(best, found, key=lambda b: b[0])
    mass, j, q = best
    if not np.isfinite(mass) or j < 0:
        return None
    g, u = _torques(model, frame_id, q)
    return HoldingCapacity(mass=max(mass, 0.0), joint=model.joint_names[j], effort_limit=float(limit[j]),
                           arm_torque=float(g[j]), per_kg=float(abs(u[j])), pose=tuple(float(v) for v in q))


__all__ = ["HoldingCapacity", "holding_capacity"]
