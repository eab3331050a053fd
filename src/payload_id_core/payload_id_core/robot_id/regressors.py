"""The identification model's regressor and the check that a trajectory excites every column.

    τ = Y_b(q, q̇, q̈) π_b + diag(q̈) Ia + F(q̇, T; shape) θ_f,    θ = [π_b, Ia_free, θ_f]
(Xu 2024 eq. 1–4; Khalil 2007 eq. 1–3; Tadese 2022 eq. 4). Columns come in θ's order.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.base_params import BaseParameters
from payload_id_core.dynamics.friction import FrictionModel, all_joint_columns
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.estimators import NormalEquations
from payload_id_core.robot_id.structure import RotorStructure

# A trajectory whose column-normalised regressor has a larger condition number leaves parameters
# unexcited (well-designed excitations reach 10–300; Tadese §3.2.3, Xu §4).
COND_LIMIT = 1e5
_CHUNK = 4096  # samples per regressor chunk: bounds memory to a few MB per chunk


def inertial_regressor(model: RobotModel, base: BaseParameters, rotor: RotorStructure, q, qd, qdd,
                       extra: int = 0, rigid: np.ndarray | None = None) -> np.ndarray:
    """(N, n, b + r [+ extra]): base rigid-body columns and the free rotor-inertia columns, built in
    chunks; `extra` zero columns are left at the end for the caller (friction) to fill in place. `rigid`: the
    standard rigid-body regressor at these samples (N, n, 10 n) when the caller already has it."""
    q, qd, qdd = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd))
    n_samples, n = q.shape
    r = rotor.free.size
    out = np.zeros((n_samples, n, base.b + r + extra))
    if rigid is not None:
        out[:, :, :base.b] = base.reduce(rigid)
    else:
        for s in range(0, n_samples, _CHUNK):
            e = min(s + _CHUNK, n_samples)
            out[s:e, :, :base.b] = base.reduce(rigid_body_regressor(model, q[s:e], qd[s:e], qdd[s:e]))
    out[:, rotor.free, base.b + np.arange(r)] = qdd[:, rotor.free]
    return out


def full_regressor(model: RobotModel, base: BaseParameters, rotor: RotorStructure, friction: FrictionModel,
                   q, qd, qdd, temperature=None, rigid: np.ndarray | None = None) -> np.ndarray:
    """(N, n, p): [base rigid body, free rotor inertias, friction] columns, θ's order (`rigid`: see
    inertial_regressor)."""
    out = inertial_regressor(model, base, rotor, q, qd, qdd, extra=friction.n_params, rigid=rigid)
    k, off = friction.per_joint, base.b + rotor.free.size
    if k:
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        temp = None if temperature is None else np.atleast_2d(np.asarray(temperature, dtype=float))
        cols = all_joint_columns(friction.kind, qd, friction.shape, temp, friction.sign_epsilon)
        for j in range(friction.n):
            out[:, j, off + j * k: off + (j + 1) * k] = cols[:, j]
    return out


def excitation_check(w: np.ndarray | NormalEquations, names: list[str], limit: float = COND_LIMIT) -> float:
    """Condition number of the column-normalised regressor (W (N, n, p) or its NormalEquations);
    PayloadIdError naming the unexcited parameters (large entries of the near-null right singular
    vectors) when above `limit`."""
    ne = w if isinstance(w, NormalEquations) else NormalEquations.from_data(w, np.zeros(w.shape[:2]))
    diag = np.einsum("jii->i", ne.gram)
    dead = [names[i] for i in np.flatnonzero(diag <= 1e-24 * max(diag.max(), 1e-300))]
    if dead:
        raise PayloadIdError(f"the trajectory leaves parameters unexcited: {', '.join(dead)} "
                             "(their regressor columns are zero, condition number infinite)",
                             "move every joint through a rich excitation (payload-id excite)")
    cond, s, vt = ne.condition_number()
    if cond > limit:
        weak = vt[s < s[0] / limit]
        score = np.max(np.abs(weak), axis=0)
        worst = [names[i] for i in np.argsort(-score) if score[i] > 0.2][:8]
        raise PayloadIdError(
            f"the trajectory leaves parameters unexcited: {', '.join(worst)} "
            f"(condition number {cond:.3g} > {limit:.0e})",
            "use a richer excitation trajectory (payload-id excite) that moves every joint over its range")
    return cond
