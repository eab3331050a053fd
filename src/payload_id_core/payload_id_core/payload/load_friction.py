"""Coulomb friction that grows with the load a drive carries, as extra unknowns of the payload fit.

Xu 2024 §4.3 reports joint 2's Coulomb level going from 15.07 to 15.87 N·m with the payload, and
models it as a constant friction change Δφ_f (its ε, and direct-rls's friction-change columns). Gear
friction, however, grows with the torque transmitted: τ_f,j = (Fc_j + μ_j |τ_j| + …)·sgn(q̇_j). Under a
payload the extra friction is μ_j (|τ_b,j| − |τ_a,j|)·sgn(q̇_j), which changes with the pose and follows
the payload's gravity torque: a constant Δφ_f cannot absorb it, and what is left leaks into the mass
(+0.8 % on the simulated UR10 cell with μ = 0.02, 4–5 standard deviations).

This module gives that change as one column per joint with unknown μ_j,

    c_j = (|τ̂_b,j| − |τ̂_a,j|) · tanh(q̇_j / ε),

τ̂_a the unloaded robot's model torque (its identification Y θ_a, or the nominal URDF when there is none)
and τ̂_b the loaded one predicted with the current payload estimate (τ̂_a + W_L φ̂_L, or Y θ̂_b for the
difference form). The column is linear in μ once φ̂_L is fixed, so the offline methods solve once
without it and once more with it (one iteration is enough: the second changes the mass by < 0.01 %),
and the online ones use their previous estimate. Model torques, not measured ones: |τ_meas| carries
the same noise as the fitted torque (errors in variables), which biased the mass by −2.7 % on the cell.
Only the change under load is modelled: whatever μ|τ_a| did to the unloaded identification is in θ_a
already.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.linear import LinearSolution, weighted_lstsq
from payload_id_core.robot_id import RobotIdentification

# Offline methods: solves with the column after the first one without it.
ITERATIONS = 1

# The friction parameter a load cannot change: the constant offset B (dynamics/friction.py), a current or
# torque-sensor offset. As an unknown of the friction change it is collinear with the load's mean gravity
# torque over the motion and takes part of the mass with it (direct-rls, friction change on: −1.9 % on the
# UR10e 15harm pair, robot and gains from 14harm; −0.9 % with the offsets left out: bench/ur10e.py).
LOAD_INDEPENDENT_FRICTION = frozenset({"B"})


def load_changeable_friction(friction) -> np.ndarray:
    """(kf,) bool: which of the friction model's parameters (param_names order) a load may change."""
    return np.array([name.split("_", 1)[0] not in LOAD_INDEPENDENT_FRICTION for name in friction.param_names],
                    dtype=bool)


def load_friction_values(tau_a: np.ndarray, tau_b: np.ndarray, qd: np.ndarray, sign_epsilon: float) -> np.ndarray:
    """(..., n): (|τ̂_b| − |τ̂_a|)·sgn_ε(q̇), each joint's coefficient of its μ_j."""
    sgn = np.tanh(qd / sign_epsilon) if sign_epsilon > 0 else np.sign(qd)
    return (np.abs(tau_b) - np.abs(tau_a)) * sgn


def load_friction_columns(tau_a: np.ndarray, tau_b: np.ndarray, qd: np.ndarray, sign_epsilon: float) -> np.ndarray:
    """(N, n, n): the values on the diagonal of each sample's rows (joint j only sees μ_j)."""
    v = load_friction_values(tau_a, tau_b, qd, sign_epsilon)
    n = v.shape[-1]
    out = np.zeros(v.shape + (n,))
    out[..., np.arange(n), np.arange(n)] = v
    return out


def load_friction_names(joint_names) -> list[str]:
    return [f"load_coulomb_{j}" for j in joint_names]


def sign_epsilon(robot: RobotIdentification | None) -> float:
    """The robot identification's sign smoothing (rad/s); the friction module's default without one."""
    return float(robot.friction.sign_epsilon if robot is not None else DEFAULT_SIGN_EPSILON)


def prior_std(robot: RobotIdentification | None, n: int) -> np.ndarray:
    """(n,): σ of each joint's load-friction μ_j where robot.yaml already models the joint's gear friction, NaN
    where μ_j is a free unknown.

    A joint whose gear friction μ̂_j|τ| robot.yaml identified (robot_id/gear_friction.py) has it taken off the
    loaded torques with the measured |τ|, the payload's share included (RobotIdentification.gear_corrected): the
    change under load is modelled already, and what is left of μ_j is μ_j − μ̂_j, zero with the identification's
    σ. Left free, the column has one sign until the joint first reverses and is then nearly collinear with the
    payload's torque on that joint, so the robot model's own error there is split between μ_j and the mass
    (the simulated cell's mass jumped −0.2 → +0.75 % at the shoulder's and elbow's first reversal, 1.06-1.08 s
    into ur10_payload_fast). Known to its σ, the column cannot trade itself against the mass, and its σ still
    enters the payload's covariance (online/difference_rls.py)."""
    out = np.full(n, np.nan)
    gear = getattr(robot, "gear", None)
    if gear is None or not gear.active:
        return out
    std = np.asarray(gear.mu_std, dtype=float).reshape(-1)
    mu = np.asarray(gear.mu, dtype=float).reshape(-1)
    if std.size != n:
        return out
    known = (mu > 0) & np.isfinite(std) & (std > 0)
    out[known] = std[known]
    return out


def load_friction_note(mu: np.ndarray, mu_std: np.ndarray) -> Note:
    """The estimated μ per joint as a note (one wording for the offline and the online methods)."""
    return Note(NoteCode.PAYLOAD_LOAD_FRICTION, "load-dependent Coulomb friction μ per joint (N·m per N·m of load "
                f"change): {np.round(mu, 4).tolist()} ± {np.round(mu_std, 4).tolist()}")


def solve_with_load_friction(W: np.ndarray, y: np.ndarray, tau_a: np.ndarray | None, qd: np.ndarray, eps: float,
                             use: bool, loaded_torque: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                             prior_std: np.ndarray | None = None, gram: bool = False
                             ) -> tuple[LinearSolution, np.ndarray, list[Note]]:
    """Per-joint WLS of y ≈ W z; with `use` the load-dependent Coulomb columns
    (load_friction.py) are built from the unloaded model torque `tau_a` and the loaded model torque the
    first solution predicts, and the fit repeated (`tau_a` may be None without `use`). The loaded torque
    is `loaded_torque(W, x)` (W without the μ columns, x the first solution); by default the payload's
    rows are W's first 10 columns: τ̂_b = τ̂_a + W_L φ̂_L. The μ_j are the last n unknowns of the result.
    `prior_std` (W's columns): a Gaussian prior on W's unknowns (weighted_lstsq; the μ_j are free). `gram`:
    weighted_lstsq's (the online convergence rule's batch check).
    Returns (solution, the matrix actually used, notes: one line when the columns were used)."""
    # With the columns, the first solve's x alone builds them (its covariance is never read)
    sol = weighted_lstsq(W, y, prior_std=prior_std, gram=gram, covariance=not (use and ITERATIONS > 0))
    if not use:
        return sol, W, []
    if tau_a is None:
        raise TypeError("the load-dependent friction columns need the unloaded model torque tau_a")
    n = W.shape[1]
    W0 = W
    for _ in range(ITERATIONS):
        tau_b = (tau_a + W0[..., :10] @ sol.x[:10]) if loaded_torque is None else loaded_torque(W0, sol.x)
        W = np.concatenate([W0, load_friction_columns(tau_a, tau_b, qd, eps)], axis=-1)
        sol = weighted_lstsq(W, y, prior_std=None if prior_std is None else np.r_[prior_std, np.full(n, np.inf)],
                             gram=gram)
    mu = sol.x[-n:]
    mu_std = np.sqrt(np.diag(sol.cov)[-n:])
    return sol, W, [load_friction_note(mu, mu_std)]
