"""Conversions between the 10 inertial parameters and what people read (mass, CoM, inertia about the CoM).

Inside the core a rigid body is φ = [m, m·cx, m·cy, m·cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] in
pinocchio's order, inertia about the frame origin (pinocchio `Inertia.toDynamicParameters`).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

PARAM_NAMES = ["m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"]


def skew(v: np.ndarray) -> np.ndarray:
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def inertia_matrix(phi: np.ndarray) -> np.ndarray:
    """3×3 inertia about the frame origin from φ."""
    _, _, _, _, ixx, ixy, iyy, ixz, iyz, izz = phi
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def to_mass_com_inertia(phi: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, CoM, inertia about the CoM) from φ (parallel-axis theorem)."""
    phi = np.asarray(phi, dtype=float)
    m = float(phi[0])
    c = phi[1:4] / m if m != 0 else np.zeros(3)
    i_o = inertia_matrix(phi)
    i_c = i_o + m * skew(c) @ skew(c)
    return m, c, i_c


def from_mass_com_inertia(mass: float, com, inertia_com) -> np.ndarray:
    """φ from mass, CoM and the 3×3 inertia about the CoM (frame axes). Other shapes are a ValueError saying
    which (pinocchio's own refusal is its C++ signature dump, not a message for a user)."""
    com, inertia_com = np.asarray(com, float), np.asarray(inertia_com, float)
    if com.shape != (3,):
        raise ValueError(f"the centre of mass has {com.size} values, not 3")
    if inertia_com.shape != (3, 3):
        raise ValueError(f"the inertia about the centre of mass has shape {inertia_com.shape}, not (3, 3)")
    inertia = pin.Inertia(float(mass), com, inertia_com)
    return np.array(inertia.toDynamicParameters())


def transform_matrix(placement: pin.SE3) -> np.ndarray:
    """10×10 matrix X with φ_parent = X·φ_child for a body whose frame sits at `placement` in the parent.

    The map (m, h, I_O) -> (m', h', I'_O') is linear, but pinocchio stores (m, c, I_c) and cannot hold
    a massless basis vector, so X is solved from the action on 10 generic physical bodies. It is solved once
    per placement (a copy is returned): the payload monitor needs it for every block of joint states.
    """
    key = placement.homogeneous.tobytes()
    x = _TRANSFORMS.get(key)
    if x is None:
        x = _TRANSFORMS[key] = _transform_matrix(placement)
    return x.copy()


_TRANSFORMS: dict[bytes, np.ndarray] = {}


def _transform_matrix(placement: pin.SE3) -> np.ndarray:
    rng = np.random.default_rng(0)
    bodies = [pin.Inertia(1.0 + rng.random(), rng.standard_normal(3) * 0.3, _random_spd(rng)) for _ in range(10)]
    phi_child = np.array([b.toDynamicParameters() for b in bodies]).T
    phi_parent = np.array([placement.act(b).toDynamicParameters() for b in bodies]).T
    return np.linalg.solve(phi_child.T, phi_parent.T).T


def _random_spd(rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal((3, 3))
    return a @ a.T + np.eye(3)


def pseudo_inertia(phi: np.ndarray) -> np.ndarray:
    """4×4 pseudo-inertia J(φ) (Wensing 2017): φ is physically consistent iff J ⪰ 0 (and m > 0)."""
    m, h = phi[0], np.asarray(phi[1:4])
    i_o = inertia_matrix(phi)
    sigma = 0.5 * np.trace(i_o) * np.eye(3) - i_o
    j = np.zeros((4, 4))
    j[:3, :3] = sigma
    j[:3, 3] = h
    j[3, :3] = h
    j[3, 3] = m
    return j


def is_physically_consistent(phi: np.ndarray, tol: float = 1e-9) -> bool:
    return bool(phi[0] > 0 and np.linalg.eigvalsh(pseudo_inertia(phi)).min() >= -tol * max(1.0, abs(phi[0])))


def equivalent_box(mass: float, inertia_com: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dims (3,), rotation (3, 3)) of the uniform box with this mass and inertia about its CoM.

    Principal moments I_k = m/12 (d_j² + d_l²) give d_k² = 6 (I_j + I_l − I_k) / m; the box axes are
    the principal axes (columns of the rotation, right-handed). Moments that no box can have (an
    inconsistent estimate) give 0-length sides instead of NaN."""
    ic = 0.5 * (inertia_com + inertia_com.T)
    moments, axes = np.linalg.eigh(ic)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    total = moments.sum()
    sq = 6.0 * (total - 2.0 * moments) / mass if mass > 1e-9 else np.zeros(3)
    return np.sqrt(np.clip(sq, 0.0, None)), axes


def rotation_quaternion_xyzw(rot: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w), the geometry_msgs order, of a rotation matrix."""
    x, y, z, w = Rotation.from_matrix(rot).as_quat()
    return float(x), float(y), float(z), float(w)
