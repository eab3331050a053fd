"""The drive gains' share of a payload's covariance (issue 12): torque = k ⊙ effort, k known to σ_k.

A relative gain error r_j = δk_j / k_j moves joint j's torque by r_j τ_j. The robot model θ_a was
identified from efforts scaled by the same gains, so the error moves its torque as well: to first
order the identification absorbs the relative change of its own torque (a common factor r scales θ_a
by 1 + r exactly), and what remains for the payload is the load's own torque on joint j,
(W_L φ_L)_j, scaled by r_j. Fitting that extra torque with the payload rows,

    δφ_L = Σ_j G_j r_j,   G_j = I⁻¹ I_j φ_L,   I_j = Σ_t W_L,tjᵀ W_L,tj / σ_j²,   I = Σ_j I_j,

so a common r scales the whole payload by 1 + r (δφ_L = r φ_L), and a gain error on a joint the load
barely loads moves it little. Here the gains enter as independent, with robot.yaml's standard deviations.

robot.yaml's gain σ also holds the uncertainty of the friction model the gains were fitted with (effort.gain_model's
choice_weight: the other candidate's distance, one shift of the determined gains together). The payloads take the
gains' share without it (gain_relative_covariance, gain_load_only_covariance): on the real UR10e it took khalil-1's
mass σ from 0.93 to 1.20 % and difference-rls's from 0.89 to 1.05 % for unchanged errors (largest 0.84 %, |err|/σ
RMS 0.63 → 0.56), past issue 29's 1 %; no real or simulated payload was beyond 1.7σ without it (docs/design.md,
"the model choice in the σ"). Nor do they take what held-out loaded runs of known mass added to it (effort.gain_check,
robot_id/gain_spread.py: the spread of the gains those runs find with robot.yaml's model fixed): that spread is
largely robot.yaml's model error on another motion projected on the gains, which the payloads' model-error term
(robot.yaml model_error) already counts; taken whole on the real UR10e it doubled every mass σ (0.42-0.99 % ->
1.35-2.12 %, |err|/σ RMS 0.63 -> 0.34), withheld every CoM and moved no error closer (docs/design.md, "the gains'
σ from held-out loaded runs"). The --effort-scale agreement judges against the whole σ; the per-joint gain witness
against the calibration's (gain_calibration_relative_std: one check run cannot tell a wrong mass from a drift, h126).

Where robot.yaml also gives θ's response to the gains, S = ∂θ/∂r (format 2), a fit of x on τ − Y_a θ_a (khalil-1)
takes the gain error exactly once, through what θ absorbs and what it leaves on this run (joint_gain_covariance):

    δx = P (r ⊙ τ − Y_a S r) = Σ_j r_j P (e_j τ_j − Y_a S_j),   P = (WᵀΣ⁻¹W)⁺ WᵀΣ⁻¹,

τ the run's measured torques (robot and load), r with its covariance C_r, the correlations the calibration fit
found between the gains kept (robot_id/result.GainCovariance): a common r still gives δx = r x, and a per-joint
error the base parameters absorb on the calibration motion moves the payload only by what they fail to absorb on
this one. The other methods keep the load-only rule with independent gains: the gains' positive correlations on the
real UR10e (+0.6 shoulder lift-elbow, the wrists +0.6-0.9) took gaz-dtau's 15harm mass σ from 0.993 to 1.003 %
through it, past the 1 % its error (−0.39 %) does not need; they wait for their own response to θ's absorption.
"""

from __future__ import annotations

import numpy as np


def gain_relative_std(robot) -> np.ndarray | None:
    """σ(k_j) / k_j of the drive gains the torques were computed with; None when robot.yaml gives no
    standard deviation (gains given by hand, or torques measured directly) or all of them are zero."""
    std = getattr(robot, "effort_scale_std", None)
    if std is None:
        return None
    std = np.asarray(std, dtype=float).reshape(-1)
    k = np.asarray(getattr(robot, "effort_scale", np.ones(std.size)), dtype=float).reshape(-1)
    if k.size != std.size or not np.all(np.isfinite(std)) or not np.all(k > 0) or not np.any(std > 0):
        return None
    return std / k


def gain_check_excess(robot) -> np.ndarray:
    """(n,) the relative variance held-out gain check runs added to robot.yaml's gain σ (effort.gain_check, module
    docstring); zeros without them."""
    check = getattr(robot, "gain_check", None)
    rel = gain_relative_std(robot)
    if check is None or rel is None:
        return np.zeros(0 if rel is None else rel.size)
    return np.maximum(rel ** 2 - (check.calibration_std / check.reference) ** 2, 0.0)


def gain_calibration_relative_std(robot) -> np.ndarray | None:
    """σ(k_j) / k_j as the calibration measured it: gain_relative_std without what held-out gain check runs added
    (effort.gain_check's calibration_std); None as gain_relative_std.

    What the per-joint gain witness (payload/gain_drift.py) takes as "not drifted" (h126). A check run whose given
    mass disagrees with the calibration reads, on one run, as a wrong mass or as the gains' drift alike (only
    robot.yaml's θ, fixed, anchors the gains there, and on the real UR10e its error on another motion does not
    allow freeing the mass, h114); one run's change beyond the calibration's σ is widened to its Student-t_1
    predictive, 6.48× (simulated: a mass 6 % high moved the elbow's check gain +1.07 %, its σ 0.81 → 6.96 %, and
    the witness judging against that passed a −3.5 % elbow drift: khalil-1 −3.19 % at 3.6σ, ok). The payloads take
    the calibration's share too (gain_check_excess, module docstring), so this is also the σ their covariance holds:
    a factor beyond it that moves the payload beyond its own σ is a drift the estimate's σ does not count."""
    rel = gain_relative_std(robot)
    excess = gain_check_excess(robot)
    if rel is None or excess.shape != rel.shape:
        return rel
    return np.sqrt(np.maximum(rel ** 2 - excess, 0.0))


def gain_check_widening(robot) -> str:
    """A sentence naming the joints whose σ held-out gain check runs widened beyond the calibration's
    (effort.gain_check), and that the per-joint witness does not judge against it; empty without such a joint."""
    check = getattr(robot, "gain_check", None)
    rel = gain_relative_std(robot)
    if check is None or rel is None:
        return ""
    before = np.asarray(check.calibration_std, dtype=float) / np.asarray(check.reference, dtype=float)
    wider = np.flatnonzero(rel > before * (1.0 + 1e-9))
    if wider.size == 0:
        return ""
    runs = check.runs_determining
    joints = ", ".join(f"{check.joint_names[j]} {100 * before[j]:.3g} → {100 * rel[j]:.3g} % ({runs[j]} run(s))"
                       for j in wider)
    return (f"robot.yaml's drive gain check runs widen the gains' σ on {joints}; the per-joint gain witness and the "
            "payload's σ take the calibration's: a check run's wrong --gain-check-mass widens it as a drift does")


def model_choice_shift(robot) -> np.ndarray | None:
    """(n,) the relative gain shift robot.yaml's σ holds for the friction model the gains were fitted with
    (effort.gain_model.choice_spread), None without one."""
    gm = getattr(robot, "gain_model", None)
    names = getattr(robot, "joint_names", None)
    if gm is None or names is None:
        return None
    shift = gm.choice_spread(names)
    return shift if np.any(shift != 0.0) else None


def load_friction_spread(robot, n: int) -> np.ndarray:
    """(n,) the relative gain std robot.yaml's σ holds for the load friction its gains were fitted without and the
    calibration run could not separate from them (effort.gain_model.load_friction_spread); zeros without one. The
    payloads leave it out as they leave out the model choice: the gains absorbed that load friction, and the payload
    fits leave its columns out (payload.load_friction_off), so on a joint whose torque keeps the sign of its velocity
    the payload run reads the same combination of gain and μ_j the calibration fixed."""
    gm = getattr(robot, "gain_model", None)
    spread = None if gm is None else gm.load_friction_spread
    if spread is None or np.asarray(spread).size != n:
        return np.zeros(n)
    return np.asarray(spread, dtype=float)


def gain_relative_covariance(robot) -> np.ndarray | None:
    """cov(r), r_j = δk_j / k_j, for joint_gain_covariance: robot.yaml's (format 2, correlations kept) or diag of
    gain_relative_std, without the friction model's choice (model_choice_shift, module docstring); None as
    gain_relative_std."""
    rel = gain_relative_std(robot)
    if rel is None:
        return None
    joint = getattr(robot, "gain_covariance", None)
    shift = model_choice_shift(robot)
    shift = np.zeros(rel.size) if shift is None or shift.size != rel.size else shift
    excess = gain_check_excess(robot) + load_friction_spread(robot, rel.size) ** 2
    if joint is not None and np.asarray(joint.relative).shape == (rel.size, rel.size):
        return np.asarray(joint.relative, dtype=float) - np.outer(shift, shift) - np.diag(excess)
    return np.diag(np.maximum(rel ** 2 - excess - shift ** 2, 0.0))


def gain_load_only_covariance(robot) -> np.ndarray | None:
    """cov(r) for the load-only rule: the gains independent, with robot.yaml's σ less the friction model's choice
    (model_choice_shift) and the held-out check runs' excess (gain_check_excess, module docstring). None as
    gain_relative_std."""
    rel = gain_relative_std(robot)
    if rel is None:
        return None
    shift = model_choice_shift(robot)
    shift = np.zeros(rel.size) if shift is None or shift.size != rel.size else shift
    return np.diag(np.maximum(rel ** 2 - gain_check_excess(robot) - load_friction_spread(robot, rel.size) ** 2
                              - shift ** 2, 0.0))


def joint_information(payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """(n, 10, 10) I_j: the information each joint's payload rows W_L (N, n, 10) carry, rows weighted 1/σ_j."""
    w = np.asarray(payload_rows, dtype=float)[..., :10] / np.asarray(sigma, dtype=float).reshape(1, -1, 1)
    return np.einsum("tji,tjk->jik", w, w)


def gain_covariance(info: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, rel_std: np.ndarray) -> np.ndarray:
    """(10, 10) covariance the gains' relative std `rel_std` (n,), or their relative covariance (n, n), adds to φ_L
    (module docstring); zero on the entries the motion leaves undetermined. `info` (n, 10, 10) from
    joint_information."""
    ok = np.asarray(identifiable, dtype=bool)[:10]
    cov = np.zeros((10, 10))
    if not ok.any():
        return cov
    info = np.asarray(info, dtype=float)
    total = info.sum(axis=0)[np.ix_(ok, ok)]
    pulls = np.einsum("jik,k->ji", info, np.asarray(phi, dtype=float)[:10])[:, ok]   # (n, ok): I_j φ_L
    G = np.linalg.lstsq(total, pulls.T, rcond=None)[0]                               # (ok, n): columns G_j
    cov[np.ix_(ok, ok)] = G @ _as_covariance(rel_std) @ G.T
    return cov


def _as_covariance(rel: np.ndarray) -> np.ndarray:
    rel = np.asarray(rel, dtype=float)
    return rel if rel.ndim == 2 else np.diag(rel ** 2)


def joint_gain_covariance(W: np.ndarray, sigma: np.ndarray, identifiable: np.ndarray, tau: np.ndarray,
                          y_a: np.ndarray, robot, response_of=None) -> np.ndarray | None:
    """(u, u) covariance the gains add to x = P (τ − Y_a θ_a) through their joint covariance with θ_a (module
    docstring); W (N, n, u) the fit's rows, τ (N, n) the run's torques, Y_a (N, n, p) the robot's regressor.
    `response_of`: the fit's own map when it is not W's weighted least squares (robot_prior.RobotPriorFit.response:
    (N, n, k) torque changes → (u, k)). None when robot.yaml has no S (format 1, gains given): the caller then takes
    with_gain_uncertainty."""
    joint = getattr(robot, "gain_covariance", None)
    rel = gain_relative_covariance(robot)
    if joint is None or rel is None:
        return None
    sens = np.asarray(joint.theta_sensitivity, dtype=float)
    N, n, u = W.shape
    if sens.shape != (y_a.shape[-1], n):
        return None
    w = 1.0 / np.asarray(sigma, dtype=float)
    response = -(y_a @ sens)                                            # (N, n, n): column j, −Y_a S_j
    response[:, np.arange(n), np.arange(n)] += tau
    if response_of is not None:
        G = np.nan_to_num(response_of(response))
        return G @ rel @ G.T
    ok = np.asarray(identifiable, dtype=bool)
    A = (W * w[None, :, None]).reshape(N * n, u)[:, ok]
    G = np.zeros((u, n))
    G[ok] = np.linalg.lstsq(A, (response * w[None, :, None]).reshape(N * n, n), rcond=None)[0]
    return G @ rel @ G.T


def with_gain_uncertainty(cov: np.ndarray, phi: np.ndarray, identifiable: np.ndarray, robot,
                          payload_rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """`cov` (of z = [φ_L, …]) with the gains' share added to its φ_L block; unchanged without a gain std."""
    rel = gain_load_only_covariance(robot)
    if rel is None or rel.shape[0] != np.asarray(sigma).size:
        return cov
    out = np.array(cov, dtype=float)
    out[:10, :10] = out[:10, :10] + gain_covariance(joint_information(payload_rows, sigma), phi, identifiable, rel)
    return out
