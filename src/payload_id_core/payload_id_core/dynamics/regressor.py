"""Joint-torque regressors: τ = Y(q, q̇, q̈) φ, linear in the inertial parameters.

Rigid-body columns come from pinocchio's joint torque regressor (Khalil 2007 eq. 1; Gaz 2017
eq. 8), 10 per moving body in pinocchio's order [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]
about the joint frame origin, gravity taken from the model (tilted bases work). The payload
regressor expresses the payload's 10 parameters in any URDF frame rigidly attached to a body.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.inertia import transform_matrix
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError


def _as_batch(model: RobotModel, *arrays) -> list[np.ndarray]:
    out = []
    for a in arrays:
        a = np.asarray(a, dtype=float)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != model.n:
            raise PayloadIdError(f"joint arrays must be (N, {model.n}), got {a.shape}",
                                 f"give one column per joint of {model.joint_names}")
        out.append(np.ascontiguousarray(a))
    if len({a.shape[0] for a in out}) != 1:
        raise PayloadIdError("q, qd and qdd have different numbers of samples", "pass arrays of equal length")
    return out


def rigid_body_regressor(model: RobotModel, q, qd, qdd) -> np.ndarray:
    """(N, n, 10 n) with Y[k] @ model.standard_parameters() == rnea(q[k], qd[k], qdd[k]).

    One pinocchio call per sample into a reused Data object (~8 µs per UR10 sample); a numpy
    re-implementation of the recursion would not beat pinocchio's C++ on batches of this size.
    """
    q, qd, qdd = _as_batch(model, q, qd, qdd)
    n_samples, n = q.shape
    out = np.empty((n_samples, n, 10 * n))
    pm, pd = model.model, model.data
    reg = pin.computeJointTorqueRegressor
    for k in range(n_samples):
        out[k] = reg(pm, pd, q[k], qd[k], qdd[k])
    return out


def rotor_inertia_columns(qdd) -> np.ndarray:
    """(N, n, n): τ_j += Ia_j q̈_j, the reflected rotor inertia of each drive (Khalil 2007 §II, 'Ia_j')."""
    qdd = np.atleast_2d(np.asarray(qdd, dtype=float))
    n_samples, n = qdd.shape
    out = np.zeros((n_samples, n, n))
    idx = np.arange(n)
    out[:, idx, idx] = qdd
    return out


def payload_transform(model: RobotModel, frame: str) -> tuple[int, np.ndarray]:
    """(joint index 1..n carrying `frame`, 10×10 X) with φ_body = X φ_L for a payload φ_L given in `frame`."""
    joint, placement = model.frame_in_joint(frame)
    if joint < 1:
        raise PayloadIdError(f"frame '{frame}' is fixed to the robot base, a payload there does not move",
                             "choose a frame on the moving chain, e.g. the flange or tool0")
    return joint, transform_matrix(placement)


def payload_columns(model: RobotModel, frame: str, y_rigid: np.ndarray) -> np.ndarray:
    """Payload regressor from an already computed rigid-body regressor (N, n, 10 n) -> (N, n, 10)."""
    joint, x = payload_transform(model, frame)
    block = y_rigid[..., 10 * (joint - 1): 10 * joint]
    return block @ x


def payload_regressor(model: RobotModel, frame: str, q, qd, qdd) -> np.ndarray:
    """(N, n, 10): joint torques per unit of φ_L, the payload's parameters in `frame` about its origin.

    A payload rigidly fixed to body j adds X φ_L to that body's parameters (inertia.transform_matrix),
    so its columns are the body's rigid-body block times X (Khalil 2007 §III, Gaz 2017 eq. 21).
    """
    joint, x = payload_transform(model, frame)
    q, qd, qdd = _as_batch(model, q, qd, qdd)
    n_samples, n = q.shape
    out = np.empty((n_samples, n, 10))
    pm, pd = model.model, model.data
    cols = slice(10 * (joint - 1), 10 * joint)
    for k in range(n_samples):
        out[k] = pin.computeJointTorqueRegressor(pm, pd, q[k], qd[k], qdd[k])[:, cols]
    return out @ x
