"""The payload Jacobian: how a payload's 10 parameters change the robot's base parameters.

Gaz 2017 eq. 21 and 27: adding a payload φ_L (10 parameters in the payload frame, about its
origin) to the body that carries that frame changes the base parameters by

    ε = π_b − π_a = J_ε · φ_L,   J_ε = K[:, block of the carrying body] · X(frame placement)

where K is the base-parameter map (π = K φ for every standard parameter vector φ) and X moves a
body's parameters from the payload frame to the carrying joint's frame (inertia.transform_matrix).
The papers derive J_ε symbolically for one robot each (Xu 2024 eq. 12–16 for the UR10, Gaz 2017
eq. 31–33 for a planar 2R); here it comes numerically from pinocchio for any URDF, in the base
of payload_id_core.dynamics.base_params, which may differ from the papers' but has the same structure.

Which payload parameters a robot and a motion can determine is a rank question: entry i of φ_L
is identifiable iff the unit vector e_i lies in the row space of J_ε (structure) and of the
stacked payload regressor (motion). `identifiable_entries` answers it on column-scaled matrices
so that kilograms and kg·m² compare fairly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.inertia import PARAM_NAMES
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id import RobotIdentification

# Relative singular-value threshold below which a direction counts as not determined. Structural
# zeros of J_ε are exact to ~1e-15; motion-related deficiencies (a joint that never moves) leave
# singular values at round-off of the regressor, far below this.
RANK_RTOL = 1e-8
LIVE_RTOL = 1e-10


def payload_jacobian(model: RobotModel, K: np.ndarray, frame: str) -> np.ndarray:
    """(b, 10) J_ε with π_b − π_a = J_ε φ_L (Gaz 2017 eq. 27) for the base map K (b, 10n)."""
    joint, X = payload_transform(model, frame)
    block = slice(10 * (joint - 1), 10 * joint)
    return np.asarray(K)[:, block] @ X


@dataclass(frozen=True)
class ThetaLayout:
    """Where the blocks of a RobotIdentification's θ = [π_b, rotor inertia, friction] sit."""

    base: slice
    rotor: slice
    friction: slice
    p: int


def theta_layout(robot: RobotIdentification) -> ThetaLayout:
    """Blocks of robot.theta: b base parameters first, then rotor inertias, then friction parameters."""
    b = int(robot.base.b)
    p = int(np.asarray(robot.theta).size)
    k = len(robot.friction.param_names)
    n_rotor = p - b - k
    if n_rotor < 0:
        raise PayloadIdError("robot.yaml holds fewer parameters than its base and friction definitions need",
                             "re-run payload-id identify-robot")
    return ThetaLayout(slice(0, b), slice(b, b + n_rotor), slice(b + n_rotor, p), p)


def difference_jacobian(model: RobotModel, robot: RobotIdentification, frame: str,
                        friction_change: bool = True, changeable: np.ndarray | None = None) -> np.ndarray:
    """(p, 10 [+k]) map from [φ_L, Δφ_f] to the change of the whole θ of `robot` (Xu 2024 eq. 5–6).

    The payload moves only the base block (through J_ε); Δφ_f, the change of the friction parameters
    under load, moves the friction block one to one; rotor inertias do not change. `changeable` (kf,) bool:
    which friction parameters Δφ_f holds (default all; load_friction.load_changeable_friction leaves out the
    offsets a load cannot change): the others keep θ_a's value, up to the covariance of ε.
    """
    lay = theta_layout(robot)
    kf = lay.friction.stop - lay.friction.start if friction_change else 0
    free = np.ones(kf, dtype=bool) if changeable is None or not kf else np.asarray(changeable, dtype=bool)
    if free.shape != (kf,):
        raise ValueError(f"changeable has shape {free.shape}, the friction block {kf} parameters")
    J = np.zeros((lay.p, 10 + int(free.sum())))
    J[lay.base, :10] = payload_jacobian(model, robot.base.K, frame)
    if kf:
        J[lay.friction, 10:] = np.eye(kf)[:, free]
    return J


def identifiable_entries(A: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """Which unknowns x_i are determined by A x (e_i in the row space of A); A is (rows, u).

    Columns are scaled to unit norm first (row-space membership is invariant to that scaling,
    the threshold is not), then e_i is tested against the right singular vectors kept.
    """
    A = np.asarray(A, dtype=float).reshape(-1, np.shape(A)[-1])
    norms = np.linalg.norm(A, axis=0)
    # Columns at round-off of the largest one (1e-17 from the frame transform) are structural zeros.
    live = norms > LIVE_RTOL * norms.max() if norms.size and norms.max() > 0 else np.zeros(norms.size, dtype=bool)
    ok = np.zeros(A.shape[1], dtype=bool)
    if not live.any():
        return ok
    As = A[:, live] / norms[live]
    _, s, vt = np.linalg.svd(As, full_matrices=False)
    ok[np.flatnonzero(live)] = in_row_space(s, vt, rtol)
    return ok


def in_row_space(s: np.ndarray, vt: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """identifiable_entries from the SVD (s, vt) of the column-scaled matrix of live columns: which e_i lie in the
    row space its singular vectors above rtol · s[0] span."""
    keep = s > rtol * s[0]
    V = vt[keep].T                      # orthonormal basis of the row space (scaled coordinates)
    resid = 1.0 - np.sum(V**2, axis=1)  # |e_i - V V^T e_i|^2 for each live column
    return resid < 1e-6


def unidentifiable_names(mask: np.ndarray) -> list[str]:
    return [n for n, ok in zip(PARAM_NAMES, np.asarray(mask)[:10]) if not ok]


def gravity_columns() -> slice:
    """φ_L entries a static pose can see: mass and first moments (Gaz 2017 eq. 40)."""
    return slice(0, 4)
