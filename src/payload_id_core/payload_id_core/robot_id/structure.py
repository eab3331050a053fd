"""Which unknowns the data can see: rotor inertias free or absorbed into the base parameters.

A drive's rotor inertia Ia_j whose column q̈_j e_j already lies in the span of the base columns
(joint 1 of a robot whose first axis is vertical: it acts exactly like Izz1) cannot be told apart;
it is absorbed into that base parameter and only the others are separate unknowns (Khalil 2007
eq. 1–3; Xu 2024 eq. 1). θ's inertial part is then θ_I = [π_b, Ia_free].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.base_params import BaseParameters
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor


@dataclass
class RotorStructure:
    """Rotor inertias: `free` joints get their own unknown; absorbed ones add C[:, j] Ia_j to π_b."""

    free: np.ndarray          # (r,) joint indices with an own Ia unknown
    absorbed: np.ndarray      # (b, n) π_b += absorbed @ Ia (zero columns for free joints)


def rotor_structure(model: RobotModel, base: BaseParameters, seed: int = 1) -> RotorStructure:
    """Which rotor-inertia columns are independent of the base regressor (numerically, random states)."""
    rng = np.random.default_rng(seed)
    n = model.n
    n_samples = max(40, 3 * (base.b + n) // n)
    q = rng.uniform(-np.pi, np.pi, (n_samples, n))
    qd, qdd = rng.standard_normal((n_samples, n)), rng.standard_normal((n_samples, n))
    wb = base.reduce(rigid_body_regressor(model, q, qd, qdd)).reshape(-1, base.b)
    absorbed = np.zeros((base.b, n))
    free = []
    basis = wb
    for j in range(n):
        col = np.zeros((n_samples, n))
        col[:, j] = qdd[:, j]
        col = col.reshape(-1)
        coef = np.linalg.lstsq(basis, col, rcond=None)[0]
        if np.linalg.norm(basis @ coef - col) > 1e-7 * np.linalg.norm(col):
            free.append(j)
            basis = np.column_stack([basis, col])
        else:
            c = coef[:base.b]
            c[np.abs(c) < 1e-9] = 0.0
            absorbed[:, j] = c
    return RotorStructure(np.array(free, dtype=int), absorbed)


def inertial_map(base: BaseParameters, rotor: RotorStructure, n: int) -> np.ndarray:
    """A with θ_I = [π_b, Ia_free] = A ψ, ψ = [φ (10 n), Ia (n)] (the SDP's variables)."""
    r = rotor.free.size
    a = np.zeros((base.b + r, 11 * n))
    a[:base.b, :10 * n] = base.K
    a[:base.b, 10 * n:] = rotor.absorbed
    a[base.b + np.arange(r), 10 * n + rotor.free] = 1.0
    return a


def base_parameter_names(base: BaseParameters, rotor: RotorStructure, joint_names: list[str]) -> list[str]:
    """π_b's names with the rotor inertias absorbed into each spelled out ("Izz1 + Ia1")."""
    names = list(base.names)
    for j in range(len(joint_names)):
        for i in np.flatnonzero(rotor.absorbed[:, j]):
            c = rotor.absorbed[i, j]
            names[i] += f" + Ia{j + 1}" if abs(c - 1) < 1e-9 else f" + {c:.6g}*Ia{j + 1}"
    return names
