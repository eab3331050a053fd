"""What a payload fit's covariance lacks, and the notes that say why: serially correlated torque residuals (the
Newey–West inflation) and the torque error of the gear friction robot.yaml leaves out; for an online estimate both
from one batch fit on the samples it saw (online_covariance_extra).

Below both the methods (khalil, the online adapter) and the online estimators, whose convergence rule judges the
σ the goal will report (online/base.py): the estimators take it from here, not from the methods above them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import RobotResidual, chi2_sf, chi2_stat, residual_on
from payload_id_core.payload.finish import MODEL_RESOLUTION
from payload_id_core.payload.jacobian import theta_layout
from payload_id_core.payload.linear import LinearSolution, weighted_response
from payload_id_core.payload.load_friction import load_changeable_friction, sign_epsilon, solve_with_load_friction
from payload_id_core.payload.robot_prior import RunOffsetDrift, run_offset_drift
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.model_error import MIN_DECLARING_MOTIONS

# False-alarm rate of the χ² test that opens the run's own offset-drift width in the σ of a method that holds the
# offsets (_run_drift_covariance, h202): on runs whose offsets did not move, σ is main's on all but this share. At
# 0.05 it opened on an honest Panda cross-motion run (p 0.015: σ 0.32 → 0.63 % for a +0.04 % error).
RUN_DRIFT_FALSE_ALARM = 0.01


def measured_model_error(robot: RobotIdentification | None, frame: str, model: RobotModel,
                         method: str | None = None, mass: float | None = None) -> np.ndarray | None:
    """(10, 10) C_me, robot.yaml's model error measured on held-out motions (robot_id/model_error.py) for a
    payload on `frame` (moved there from the frame it was measured in when the two are rigidly attached); None
    when robot.yaml has no usable measurement for that frame. Where it is known it replaces the fit's Newey–West
    inflation and the gear friction's predicted error (both estimates of it). With `method` and `mass` (its
    estimate, kg) the mass variance holds what robot.yaml's held-out loaded runs measured for that method beyond the
    unloaded runs, scaled to that mass (HeldOutModelError.covariance)."""
    me = getattr(robot, "model_error", None)
    moved = None if me is None else me.in_frame(model, frame)
    return None if moved is None else moved.covariance(method, mass)


def loaded_model_error_note(robot: RobotIdentification, frame: str, model: RobotModel, method: str | None,
                            mass: float, with_load: float) -> Note | None:
    """Say that the loaded runs' record raised `method`'s model-error mass variance to `with_load` (kg², the mass
    variance of measured_model_error with `method` and `mass`) above the unloaded runs' (None where robot.yaml has
    no loaded record, or it added nothing). The unloaded runs' variance is looked up only where there is a record:
    the online rule's batch check calls this at every check."""
    me = getattr(robot, "model_error", None)
    if me is None or me.loaded is None or method is None:
        return None
    unloaded_cov = measured_model_error(robot, frame, model)
    unloaded = np.inf if unloaded_cov is None else float(unloaded_cov[0, 0])
    if not with_load > unloaded:
        return None
    return Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                f"{method}'s error on {len(me.loaded.sources)} held-out loaded run(s) of known mass (robot.yaml "
                f"model_error.loaded) beyond the unloaded runs', scaled to this {mass:.4g} kg: model-error mass σ "
                f"{np.sqrt(max(unloaded, 0.0)):.4g} → {np.sqrt(with_load):.4g} kg (part of the model's error grows "
                "with the load, and no unloaded run sees it)")




def single_motion_model_error(robot: RobotIdentification | None, frame: str, model: RobotModel) -> bool:
    """robot.yaml's measured model error, usable for `frame`, rests on fewer than MIN_DECLARING_MOTIONS held-out
    motions that determined the mass (False where it has none: nothing of it is in σ then)."""
    me = getattr(robot, "model_error", None)
    if me is None or measured_model_error(robot, frame, model) is None:
        return False
    return me.mass_motions() < MIN_DECLARING_MOTIONS


def few_motions_note(robot: RobotIdentification | None, frame: str, model: RobotModel, method: str,
                     own_run_fix: bool = False) -> Note | None:
    """The note that makes an estimate whose σ holds robot.yaml's measured model error suspect (finish.judge_quality)
    where that error rests on fewer than MIN_DECLARING_MOTIONS held-out motions (single_motion_model_error); None
    otherwise. The caller has not joined this run's own motion to them (khalil-1 with --unloaded-csv-ur:
    robot_id/model_error.OWN_UNLOADED_RUN).

    With H held-out motions another motion's error over the RMS of the H measured ones is Student-t with H dof: at
    H = 1 no width from that one draw bounds another motion's error at 3σ without withholding every estimate (a t_1
    matched at ±1σ withheld every CoM of the real UR10e's user path, h209). The estimate is reported with its σ, but not
    as a confident answer: real UR10e, robot.yaml given 01_31's unloaded run only, khalil-1 on 15harm read the CoM x
    −48.3 ± 1.3 mm against khalil-3's −41.4 ± 1.2 (4.0σ), converged and ok before. The online rule already refuses to
    declare on such a robot.yaml (online/base.py); this is the same rule for the quality every method reports.
    `own_run_fix`: the method joins a given unloaded run of this motion (khalil-1), so the fix names that too."""
    if not single_motion_model_error(robot, frame, model):
        return None
    motions = robot.model_error.mass_motions() if robot is not None and robot.model_error is not None else 0
    twin = ", or give this run's unloaded twin (identify-payload --unloaded-csv-ur / --unloaded-bag)" \
        if own_run_fix else ""
    return Note(NoteCode.PAYLOAD_MODEL_ERROR_FEW_MOTIONS,
                f"{method}'s σ rests on robot.yaml's model error measured on {motions} held-out motion(s), which "
                f"cannot bound this motion's (a spread between motions needs {MIN_DECLARING_MOTIONS} to be seen): add "
                f"a --held-out-csv-ur / --held-out-bag run of another motion to identify-robot{twin}")


def model_error_frame_note(robot: RobotIdentification | None, frame: str, model: RobotModel) -> Note | None:
    """Why robot.yaml's measured model error is not used: `frame` is on another body than the frame it was
    measured in, so the error there was not measured (None when it is used, or there is none)."""
    me = getattr(robot, "model_error", None)
    if me is None or me.in_frame(model, frame) is not None:
        return None
    return Note(NoteCode.PAYLOAD_MODEL_ERROR_OTHER_FRAME,
                f"robot.yaml's model error was measured for a payload on {me.frame}, which is not rigidly attached "
                f"to {frame}: not used, σ's model error estimated from this run's residuals instead; re-run "
                f"payload-id identify-robot with --payload-frame {frame} to measure it there")


def measured_model_error_note(cov: np.ndarray, mass: float, robot: RobotIdentification) -> Note:
    std = float(np.sqrt(max(cov[0, 0], 0.0)))
    count = len(robot.model_error.sources) if robot.model_error is not None else 0
    share = f" ({100 * std / mass:.2f} % of the mass)" if mass > 0 else ""
    return Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                f"robot model error measured on {count} held-out motions (robot.yaml "
                f"model_error): mass σ {std:.4g} kg{share} added to the covariance, in place of the residuals' "
                "serial-correlation inflation and the gear friction's predicted error")


def prefix_model_error(robot: RobotIdentification, measured: np.ndarray, method: str | None,
                       mass_information_std: float | None, mass: float | None = None
                       ) -> tuple[np.ndarray, Note] | None:
    """(C_me with its mass variance raised to the model error of an online `method`'s estimate whose mass σ at the
    rows' assumed noise is `mass_information_std`, the note that says so): robot.yaml's held-out runs, each run over
    by that method, read HeldOutModelError.prefix_mass_variance (robot_id/model_error.py). None where robot.yaml has
    no such record or it adds nothing (an estimate as well informed as the whole held-out runs). `mass`: the estimate's,
    for the loaded runs' part (robot_id/model_error.py; None: left out)."""
    me = getattr(robot, "model_error", None)
    if me is None or method is None or mass_information_std is None:
        return None
    variance = me.prefix_mass_variance(method, float(mass_information_std), mass)
    if variance is None or not variance > measured[0, 0]:
        return None
    raised = measured.copy()
    raised[0, 0] = variance
    return raised, Note(NoteCode.PAYLOAD_MODEL_ERROR_MEASURED,
                        f"{method} partway through a motion: the held-out runs, run over by {method}, read a model "
                        f"error of mass σ {np.sqrt(variance):.4g} kg once the mass was as well determined as here "
                        f"(robot.yaml model_error.running_mass), against {np.sqrt(max(measured[0, 0], 0.0)):.4g} kg "
                        "over whole runs: the larger in the covariance")


def prefix_mass_excess(robot: RobotIdentification, frame: str, model: RobotModel, method: str | None,
                       information_stds: np.ndarray, mass: float | None = None) -> np.ndarray:
    """(K,) how much more model-error mass variance (kg²) than the whole-run C_me's an online `method`'s estimates
    carried whose mass σ at the rows' assumed noise were `information_stds` (prefix_model_error's raise, ≥ 0): the
    part of each one's reported σ that came from its being partway through a motion. Zero where robot.yaml measured
    no model error usable for `frame` or did not run `method` over its held-out runs (then none is added). `mass`:
    the estimate's (kg), both sides then with the loaded runs' part (measured_model_error; None: left out)."""
    stds = np.asarray(information_stds, dtype=float).reshape(-1)
    me = getattr(robot, "model_error", None)
    measured = measured_model_error(robot, frame, model, method, mass)
    if me is None or method is None or measured is None:
        return np.zeros(stds.size)
    variances = me.prefix_mass_variances(method, stds, mass)
    if variances is None:
        return np.zeros(stds.size)
    return np.maximum(np.nan_to_num(variances - measured[0, 0], nan=0.0), 0.0)


def gear_model_error(robot: RobotIdentification, y_a: np.ndarray, fit: LinearSolution, W: np.ndarray,
                     qd: np.ndarray, gram: bool = False, error: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """(Δz (u,), μ left out): how far the WLS fit y ≈ W z (`fit`, its weights and determined entries) moves for
    the torque error the robot model's unmodelled gear friction would make on these samples
    (robot_id/gear_friction.UnmodelledGear, y_a the robot's rows there); None when robot.yaml shows none. A
    model-error term, Δz Δzᵀ added to the covariance, not a correction of z; but where an estimate is projected
    onto physical parameters (payload/finish.py) the covariance is the projection's metric, so a projected
    estimate moves more freely along Δz. `gram`: linear.weighted_lstsq's (the online rule's batch check). `error`:
    that torque error where the caller has it (RobotResidual.gear_error)."""
    g = robot.unmodelled_gear
    if g is None:
        return None
    if error is None:
        error = g.torque_error(y_a, robot.theta, qd, robot.friction.sign_epsilon)
    return weighted_response(W, error, fit.sigma, fit.prior_info, gram), g.mu


def gear_model_error_note(delta_mass: float, mass: float, unmodelled_mu: np.ndarray) -> Note:
    return Note(NoteCode.PAYLOAD_GEAR_MODEL_ERROR,
                f"robot.yaml leaves out the gear friction μ {np.round(unmodelled_mu, 4).tolist()} its run shows: on "
                f"this motion it would move the mass by {delta_mass:+.4g} kg ({100 * delta_mass / mass:+.2f} %), "
                "added to the covariance (identify-robot --gear-friction identify models it instead)"
                if mass > 0 else f"robot.yaml leaves out the gear friction its run shows ({delta_mass:+.4g} kg)")


def drift_in_measured_error(robot: RobotIdentification, frame: str, model: RobotModel) -> bool:
    """Every drift run of robot.yaml's friction_offset_drift is one of the held-out runs its measured model error
    (measured_model_error, usable for `frame`) came from.

    That error is the payload a fit with robot.yaml's offsets invents on those unloaded runs of other occasions: the
    offsets' change there is in it, and so is what the model mispredicts along the offset columns, which is most of
    what the drift record's width holds where a run's own resolution is coarse (real UR10e, robot.yaml from the 14harm
    pair, the 15harm and 01_31 unloaded runs both held-out and drift runs: spread with the runs' noise taken out 0, 0,
    0.33, 0, 0, 0 N·m, prior std 0.63, 0.48, 0.86, 0.15, 0.16, 0.16 N·m). Added again through this run's response,
    khalil-1's mass σ on 15harm went 0.85 → 2.61 % for an error of +0.12 %, and its projection onto physical parameters
    moved the estimate to −1.03 % with the CoM withheld."""
    spread = getattr(robot, "offset_drift", None)
    if spread is None or measured_model_error(robot, frame, model) is None or robot.model_error is None:
        return False
    return set(spread.runs) <= set(robot.model_error.sources)


def offset_drift_covariance(robot: RobotIdentification, y_a: np.ndarray, fit: LinearSolution, W: np.ndarray,
                            frame: str, model: RobotModel,
                            to_payload: Callable[[np.ndarray], np.ndarray] | None = None, mass: float | None = None,
                            holds_measured_error: bool = True, gram: bool = False,
                            run_drift: RunOffsetDrift | None = None) -> tuple[np.ndarray | None, Note | None]:
    """(u, u) what robot.yaml's measured drift of the constant friction offsets between runs does to the WLS fit
    y ≈ W z (`fit`, its weights and determined entries) of a method that holds them at robot.yaml's values: S_B
    diag(s²) S_Bᵀ, S_B the fit's response to each offset's column of robot.yaml's regressor y_a (a change ΔB_j is
    the torque error y_a[..., B_j] ΔB_j), s the record's drift_std (robot_id/offset_spread.py: the spread between
    runs with their noise and robot.yaml's C_a along the offset column out, widened by the Student-t_H factor; the
    noise, the model's error along the offset column, is in σ's model-error term already, θ̂_a's error in its C_a
    term); and the note that names it. (None, a note saying so) when robot.yaml
    records no drift, or when its measured model error for `frame` already holds it (drift_in_measured_error);
    (None, None) when its friction model has no offsets. σ only: the projection onto physical parameters keeps the
    fit's own metric (a wide term along the offsets' response would move the estimate there).

    Where the run cannot tell an offset from the payload (the offset column nearly collinear with the payload's
    mean gravity torque over the motion) no witness can see a moved offset (payload/offset_drift.py), so σ must
    carry it; where it can, S_B is small and so is the term. Without a record nothing is added: the offsets'
    identification σ (C_a, already in σ through robot_uncertainty) is how well the calibration run fixed them beside
    the gravity parameters they are correlated with, not how far they move between runs, and a constant from one
    robot's drives (the real UR10e's −0.30..+0.55 N·m) is no measure of another's (the simulated Panda's offsets
    are 0.01-0.02 N·m); the note says so and how to measure it.

    `to_payload`: for a method whose payload is not the fit's first unknowns but a map of them (khalil-2: the
    re-identified θ_b through the payload Jacobian; gaz-dtau: ε̂ likewise), that map's linear part, (u, k) fit
    responses → (10, k) payload responses, and `mass` its estimate's mass (for the note); the covariance is then the
    payload's (10, 10).

    `holds_measured_error`: the method's σ takes robot.yaml's measured model error where it has one for `frame`
    (khalil-1, direct-rls); khalil-2 and gaz-dtau keep their own fit's σ (False), and the notes say which.
    `gram`: linear.weighted_lstsq's (the online rule's batch check).

    `run_drift` (h192; run_offset_drift_for): without a record, the drift this run itself shows of the offsets the
    calibration left looser than the run resolves them, the width khalil-1 fits them with (robot_prior.py). A method
    that holds them cannot fit it; its response to them times that width is added in the record's place (the h86
    robot's shoulder lift moved +0.3 N·m: direct-rls −0.95 % at 3.55σ, khalil-2 −0.58 % at 5.0σ, gaz-dtau −0.60 % at
    5.5σ, converged and ok, before), and the note names the offsets and the fix; only where the drift is beyond
    chance over the offsets together (_run_drift_covariance, h202), else nothing, as without `run_drift`."""
    names = list(robot.friction.param_names)
    spread = getattr(robot, "offset_drift", None)
    measured = holds_measured_error and measured_model_error(robot, frame, model) is not None
    if spread is None:
        if not any(name.partition("_")[0] == "B" for name in names):
            return None, None
        term = None if run_drift is None else _run_drift_covariance(robot, run_drift, y_a, fit, W, to_payload, mass,
                                                                    gram)
        if term is not None:
            return term
        held_out = (f"; σ's measured model error (model_error, {len(robot.model_error.sources)} held-out runs) holds "
                    "them only as they moved on those runs" if measured and robot.model_error is not None else "")
        return None, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                          "σ leaves out how far the constant friction offsets move between runs (this method holds "
                          f"them at robot.yaml's values, which records no drift{held_out}): identify-robot "
                          "--drift-bag/--drift-csv-ur on unloaded runs of other occasions measures it and σ then "
                          "carries it")
    if drift_in_measured_error(robot, frame, model):
        if measured:
            return None, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                              "robot.yaml's offsets drift between runs (friction_offset_drift) was measured on the "
                              "held-out runs its model error was measured on (model_error): that error, in σ, holds "
                              "the offsets as they moved there and what the model mispredicts along them; not added "
                              "again")
        return None, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                          "robot.yaml's offsets drift between runs (friction_offset_drift) was measured on the "
                          "held-out runs its model error was measured on (model_error), which this method's σ (its "
                          "own fit's) does not use: the drift is not added either, so σ leaves out how far the "
                          "offsets move between runs (give identify-robot drift runs other than its held-out runs to "
                          "have it added)")
    std = spread.per_offset_parameter(names, spread.drift_std)
    held = np.flatnonzero(np.isfinite(std) & (std > 0))
    if not held.size:
        return None, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                          f"robot.yaml's offsets drift between runs (friction_offset_drift, {len(spread.runs)} drift "
                          "runs) shows no change beyond the runs' own resolution "
                          f"{np.round(spread.resolution, 3).tolist()} N·m and robot.yaml's identification error along "
                          f"the offsets {np.round(spread.identification, 3).tolist()} N·m (in σ through C_a): nothing "
                          "added to σ for it")
    cov, mass_std, share = _drift_term(robot, std, y_a, fit, W, to_payload, mass, gram)
    return cov, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                     f"robot.yaml's offsets drift between runs (friction_offset_drift, {len(spread.runs)} drift runs, "
                     "their noise and robot.yaml's identification error, which σ carries through C_a, out: "
                     f"{np.round(spread.drift_std, 3).tolist()} N·m): held at robot.yaml's values, "
                     f"their drift moves this fit's mass by σ {mass_std:.4g} kg{share}, added to the covariance")


def _drift_term(robot: RobotIdentification, std: np.ndarray, y_a: np.ndarray, fit: LinearSolution, W: np.ndarray,
                to_payload: Callable[[np.ndarray], np.ndarray] | None, mass: float | None, gram: bool
                ) -> tuple[np.ndarray, float, str]:
    """(S_B diag(s²) S_Bᵀ, its mass σ, that σ as a share of the mass for the note): offset_drift_covariance's term for
    the per-friction-parameter widths `std` (the offsets given one > 0)."""
    held = np.flatnonzero(np.isfinite(std) & (std > 0))
    S = _offset_response(robot, held, y_a, fit, W, to_payload, gram)
    mass = float(fit.x[0]) if mass is None else float(mass)
    cov = (S * std[held] ** 2) @ S.T
    mass_std = float(np.sqrt(max(cov[0, 0], 0.0)))
    return cov, mass_std, f" ({100 * mass_std / mass:.2f} % of the mass)" if mass > 0 else ""


def _offset_response(robot: RobotIdentification, held: np.ndarray, y_a: np.ndarray, fit: LinearSolution,
                     W: np.ndarray, to_payload: Callable[[np.ndarray], np.ndarray] | None, gram: bool) -> np.ndarray:
    """(u, k) S_B: the fit's (through `to_payload`, the payload's) move per unit change of the friction parameters
    `held` (indices into robot.friction.param_names), their columns of robot.yaml's regressor `y_a`."""
    columns = np.asarray(y_a, dtype=float)[..., theta_layout(robot).friction][..., held]
    S = weighted_response(W, columns, fit.sigma, fit.prior_info, gram)
    return S if to_payload is None else to_payload(S)


def _drift_unknown(robot: RobotIdentification, frame: str, model: RobotModel, robot_cov: np.ndarray | None) -> bool:
    """robot.yaml knows nothing of its offsets' change (no drift record, no model error measured on held-out runs for
    `frame`) and states its C_a (`robot_cov`): the run's own drift is all there is (khalil-1's robot_prior fit)."""
    return (robot_cov is not None and getattr(robot, "offset_drift", None) is None
            and measured_model_error(robot, frame, model) is None)


def run_offset_drift_for(robot: RobotIdentification, frame: str, model: RobotModel, W: np.ndarray, r: np.ndarray,
                         y_a: np.ndarray, fit: LinearSolution, robot_cov: np.ndarray | None) -> RunOffsetDrift | None:
    """robot_prior.run_offset_drift on the WLS fit r ≈ W z (`fit`) of a method that holds robot.yaml's offsets, where
    robot.yaml has neither a drift record nor a measured model error for `frame` (as khalil-1 fits them only there)
    and its C_a is to enter σ (`robot_cov` not None); None elsewhere."""
    if not _drift_unknown(robot, frame, model, robot_cov):
        return None
    assert robot_cov is not None
    return run_offset_drift(W, r, y_a, fit.sigma, fit.identifiable, robot_cov, robot)


def run_offset_drift_on(model: RobotModel, robot: RobotIdentification, frame: str, q: np.ndarray, qd: np.ndarray,
                        qdd: np.ndarray, tau: np.ndarray, temperature: np.ndarray | None, load_friction: bool,
                        robot_cov: np.ndarray | None) -> RunOffsetDrift | None:
    """run_offset_drift_for on khalil-1's fit of the samples (q, q̇, q̈, τ) (the payload, the friction a load can
    change, the load-dependent friction where the method fits it): for a method whose own fit is not a payload's
    (khalil-2 re-identifies the robot, gaz-dtau fits ε̂ on the base parameters), the drift is the run's against
    robot.yaml, whatever the method does with it."""
    if not _drift_unknown(robot, frame, model, robot_cov):
        return None
    assert robot_cov is not None
    res = residual_on(model, robot, frame, q, qd, qdd, tau, temperature)
    W = np.concatenate([res.w_l, res.fric[..., np.flatnonzero(res.changeable)]], axis=-1)
    sol, W_used, _ = solve_with_load_friction(W, res.r, res.tau_a, qd, sign_epsilon(robot), load_friction)
    return run_offset_drift(W_used, res.r, res.y_a, sol.sigma, sol.identifiable, robot_cov, robot)


def _run_drift_covariance(robot: RobotIdentification, run_drift: RunOffsetDrift, y_a: np.ndarray, fit: LinearSolution,
                          W: np.ndarray, to_payload: Callable[[np.ndarray], np.ndarray] | None, mass: float | None,
                          gram: bool) -> tuple[np.ndarray, Note] | None:
    """offset_drift_covariance's term and note with `run_drift`'s widths in the record's place (its docstring), or
    None where the offsets' drift is not beyond chance over the offsets together.

    The widths d̂_j open on one draw per offset, so on runs whose offsets did not move they open by chance (~32 % of
    the offsets, h191; the Panda's cross-motion run: direct-rls's mass σ 0.32 → 0.53 % for a +0.28 % error, h192's
    revert). They are added only where the Wald statistic of the free changes ΔB̂_L of the offsets L the run resolves
    better than C_a, against their covariance under "not moved" V_LL (noise and C_a), χ² = ΔB̂_Lᵀ V_LL⁺ ΔB̂_L on
    rank(V_LL) degrees of freedom, exceeds chance at RUN_DRIFT_FALSE_ALARM: one test over the offsets, not one draw
    per offset (docs/design.md h202: 0 of 52 honest runs opened; the h86 moved lift's seeds 3 / 4, χ² p 0.066 / 0.078,
    are no more than the Panda's honest runs' 0.078 and 0.015, and stay shut)."""
    L = np.flatnonzero(run_drift.loose)
    if not run_drift.moved.size or not L.size:
        return None
    chi2, dof = chi2_stat(run_drift.offsets[L], run_drift.cov[np.ix_(L, L)])
    if dof == 0 or not chi2_sf(chi2, dof) < RUN_DRIFT_FALSE_ALARM:
        return None
    offsets = np.flatnonzero([name.partition("_")[0] == "B" for name in robot.friction.param_names])
    std = np.zeros(len(robot.friction.param_names))
    std[offsets] = run_drift.drift_std
    cov, mass_std, share = _drift_term(robot, std, y_a, fit, W, to_payload, mass, gram)
    return cov, Note(NoteCode.PAYLOAD_OFFSET_DRIFT_SIGMA,
                     "robot.yaml records no drift of its constant friction offsets, and this run resolves some of "
                     "them better than robot.yaml's calibration and shows them moved beyond its C_a and its noise ("
                     f"{run_drift.shown()}; together χ² {chi2:.1f} on {dof}, p {chi2_sf(chi2, dof):.2g}): this method "
                     "holds them at robot.yaml's values and cannot fit that drift (khalil-1 fits it), so its width "
                     f"from this run moves this fit's mass by σ {mass_std:.4g} kg{share}, added to the covariance; "
                     "identify-robot --drift-bag/--drift-csv-ur on unloaded runs of other occasions measures the drift")


class OnlineExtra(NamedTuple):
    """online_covariance_extra's answer. `lasting` is the part of `extra` that more rows of the motion do not shrink:
    robot.yaml's measured model error (measured on whole held-out runs, it does not depend on this run's rows; zero
    without one). The rest moves with the rows: the Newey–West inflation and the resolution floor are variances of
    their noise and fall like the estimator's own; the unmodelled gear friction's response is computed on the motion
    seen so far and changes with it (on the simulated cell's ur10_payload_inertia excitation, taken as lasting, it
    let difference-rls declare at 2.45 s at −1.8 %, σ 1.3 %, where the rule waited to 1 % before); so does the part of
    `extra`'s mass variance above C_me that an estimate partway through a motion has (prefix_model_error: it falls
    as the motion determines the mass better). `drift` (None where
    not added) is robot.yaml's measured drift of the offsets: it lasts too. The online convergence rule reads the
    split (online/base.py)."""

    extra: np.ndarray
    notes: list[Note]
    drift: np.ndarray | None
    lasting: np.ndarray


def online_covariance_extra(model: RobotModel, robot: RobotIdentification, frame: str, q: np.ndarray,
                            qd: np.ndarray, qdd: np.ndarray, tau: np.ndarray,
                            load_friction: bool = False, friction_prior_var: np.ndarray | None = None,
                            method: str | None = None, mass_information_std: float | None = None,
                            residual: RobotResidual | None = None, gram: bool = False,
                            robot_cov: np.ndarray | None = None) -> OnlineExtra:
    """(extra, notes, offset drift, lasting): what the covariance of φ_L (10, 10) of an online estimate lacks, and
    the notes that say why (the
    Newey–West inflation factor; the gear-friction model error when robot.yaml leaves one out; both replaced by
    the model error robot.yaml measured on held-out motions when it has one: measured_model_error; without one, the
    residual level floored at the model's resolution: resolution_floored_covariance).

    The recursive estimators' covariance assumes independent samples and an exact robot model. The same payload
    regression solved in one batch on the samples the estimator saw (Khalil 2007 method 1 with the friction
    change: τ − Y θ_a ≈ [W_L, F] z) gives both the textbook covariance C and the inflation f (≥ 1) for serially
    correlated residuals, as the textbook WLS one (robot_id/serial_correlation.py): the part the online
    covariance lacks is (f² − 1) C. Then the robot model's unmodelled gear friction: the batch fit's response Δz
    to the torque error it would make on these samples, Δz Δzᵀ. It depends on the motion seen so far, which is
    why it belongs here: on the simulated cell the robot identified on ur10_payload and the payload on
    ur10_payload_fast declared 20 of 20 seeds 1.0-1.5 % off at 3-5σ; this term predicted −1.1..−1.5 % and the
    rule waits (bench/payload.py cell_convergence_cross_robot_*).
    `load_friction`: the regression has the load-dependent Coulomb unknowns too, as the estimator does
    (load_friction.py). Without them C leaves out how much the mass shares with μ, the very share that holds
    an early estimate off: on the simulated cell's ur10_payload run, judged on its own σ, difference-rls
    declared convergence with 30 % of 20 seeds outside 2σ of this σ without them, 20 % with them (none once
    the rule judges this σ too: online/base.py).
    `friction_prior_var` (kf,): how the estimator holds each friction parameter's change: 0 at robot.yaml's value
    (not a column), inf free, else a Gaussian prior of that variance (ridge rows: weighted_lstsq's prior_std); None:
    the load-changeable ones free and the constant offsets at robot.yaml's (direct-rls; batch_friction_prior_var).
    The inflation f and the gear term's response come from the fit with the estimator's unknowns, so that its
    residual is the estimator's: difference-rls frees the offsets (robot.yaml's friction_offset_drift their prior
    when recorded), and fitted at robot.yaml's an offset that moved between robot.yaml's run and this one was a
    constant in the batch residual that the estimator does not see (the session cell's loaded run with every offset
    0.6 N·m off: f² 44.4 against 1.2, mass σ 0.185 → 0.995 %, the estimate unmoved; test_redteam_issue29_h97). C (and
    the resolution floor) stays the fit's with the offsets at robot.yaml's: f² is the largest Newey–West ratio over
    all the unknowns (the friction and μ columns' on the simulated cell, ≈ 5, where the mass's own ratio in the
    free fit is 1.0-1.6), and on the free fit's C, whose mass variance the offsets' collinearity widens early in a
    motion (the estimator's own covariance holds that share), it put the cell's declaration at 2.10 s for 1.95 s
    (bench/cell_convergence.py); (f² − 1) C_fixed stays above the free fit's own-ratio term there (cell, 1.5 / 1.95 /
    3.0 s: mass σ 0.37 / 0.27 / 0.24 % against 0.17 / 0.00 / 0.06 %).
    `residual`: against_robot_fit.residual_on on these samples, when the caller has it (the online rule's FedResidual).
    `gram`: the batch fits from the Gram matrix where that is as good as the SVD (linear.weighted_lstsq): the online
    rule's check, which repeats them over every sample fed (to ~1e-13 relative on the simulated cell, 6x cheaper).
    `method`, `mass_information_std`: the online method and its mass σ at the rows' assumed noise on the samples fed
    (OnlineEstimator.mass_information_std); where robot.yaml ran that method
    over its held-out runs, the measured model error's mass variance is the one of an estimate that far into a motion
    (prefix_model_error), the whole-run C_me staying `lasting` (what more rows do not shrink).
    The offsets' recorded drift (offset_drift_covariance, (10, 10); None where not added) is returned apart from
    `extra`: the estimate's σ holds both, but the projection onto physical parameters keeps the fit's own metric
    (`extra` alone), as khalil-1's does. `robot_cov`: robot.yaml's C_a where it enters the estimator's σ; without a
    drift record or a measured model error the drift the samples themselves show of the offsets the estimator holds is
    carried in its place (offset_drift_covariance's `run_drift`, h192)."""
    res = residual_on(model, robot, frame, q, qd, qdd, tau) if residual is None else residual
    y_a, w_l, friction, tau_a = res.y_a, res.w_l, res.fric, res.tau_a

    def fit(var: np.ndarray) -> tuple[LinearSolution, np.ndarray]:
        """The batch fit with the friction changes `var` holds (friction_prior_var), and its matrix."""
        columns = np.flatnonzero(var > 0)
        # np.take, or the view itself where every column is held: indexing the last axis of every sample fed with an
        # index array cost several times the copy the concatenation makes (the values are the same)
        freed = friction if columns.size == friction.shape[-1] else np.take(friction, columns, axis=-1)
        W = np.concatenate([w_l, freed], axis=-1)
        sol, W_used, _ = solve_with_load_friction(W, res.r, tau_a, qd, sign_epsilon(robot), load_friction,
                                                  prior_std=np.r_[np.full(10, np.inf), np.sqrt(var[columns])],
                                                  gram=gram)
        return sol, W_used

    held = batch_friction_prior_var(robot)
    own_var = held if friction_prior_var is None else np.asarray(friction_prior_var, dtype=float)
    own, W_own = fit(own_var)
    mass = float(own.x[0])
    measured = measured_model_error(robot, frame, model, method, mass)
    if measured is not None:
        extra, lasting, notes = measured, measured, [measured_model_error_note(measured, mass, robot)]
        load_note = loaded_model_error_note(robot, frame, model, method, mass, float(measured[0, 0]))
        notes += [] if load_note is None else [load_note]
        prefix = prefix_model_error(robot, measured, method, mass_information_std, mass)
        if prefix is not None:
            extra = prefix[0]
            notes.append(prefix[1])
    else:
        sol, W_used = (own, W_own) if np.array_equal(own_var, held) else fit(held)
        extra, notes = _residual_model_error(robot, y_a, qd, tau, own, W_own, sol, W_used, gram, res.gear_error)
        lasting = np.zeros((10, 10))
    # Offsets the estimator holds at robot.yaml's (direct-rls): their measured drift between runs (difference-rls
    # holds them by that drift's prior, whose pull its own covariance carries).
    if not offsets_held(robot, own_var):
        return OnlineExtra(extra, notes, None, lasting)
    run_drift = run_offset_drift_for(robot, frame, model, W_own, res.r, y_a, own, robot_cov)
    drift, note = offset_drift_covariance(robot, y_a, own, W_own, frame, model, gram=gram, run_drift=run_drift)
    notes += [] if note is None else [note]
    return OnlineExtra(extra, notes, None if drift is None else drift[:10, :10], lasting)


def lasting_from_robot(model: RobotModel, robot: RobotIdentification, frame: str,
                       friction_prior_var: np.ndarray | None = None) -> float | None:
    """The mass variance of online_covariance_extra's `lasting` plus its offset drift, where robot.yaml alone fixes
    it: its measured model error's (0 without one) when no offset drift can be added; None when the batch fit must
    tell (the estimator holds the offsets at robot.yaml's and robot.yaml records their drift: offset_drift_covariance
    then answers from the fit). The online rule's second route reads it to know, without the batch fit over every
    sample fed, that the share more rows do not shrink is too small to pass (online/base.py)."""
    var = batch_friction_prior_var(robot) if friction_prior_var is None else np.asarray(friction_prior_var, float)
    if offsets_held(robot, var) and getattr(robot, "offset_drift", None) is not None:
        return None
    if getattr(getattr(robot, "model_error", None), "loaded", None) is not None:
        return None     # the loaded runs' part depends on the estimate's mass, which the batch fit gives
    measured = measured_model_error(robot, frame, model)
    return 0.0 if measured is None else float(measured[0, 0])


def _residual_model_error(robot: RobotIdentification, y_a: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                          own: LinearSolution, W_own: np.ndarray, sol: LinearSolution, W_used: np.ndarray,
                          gram: bool = False, gear_error: np.ndarray | None = None) -> tuple[np.ndarray, list[Note]]:
    """online_covariance_extra's model-error terms where robot.yaml has no measured one: the Newey–West inflation of
    the estimator's own batch fit (`own` on `W_own`) on the fixed-offset fit's covariance (`sol` on `W_used`), its
    residual level floored at the model's resolution, and the unmodelled gear friction's response."""
    factor2 = own.inflation**2
    plain = np.nan_to_num(sol.cov[:10, :10]) / sol.inflation**2
    extra = (factor2 - 1.0) * plain
    floored = resolution_floored_covariance(W_used, sol, np.sqrt(np.mean(np.asarray(tau, dtype=float)**2, axis=0)))
    notes = [serial_correlation_note(own.inflation)]
    if floored is not None:
        extra = factor2 * np.nan_to_num(floored[:10, :10]) - plain
        floor_note = resolution_floor_note(sol.sigma, np.sqrt(np.mean(np.asarray(tau, dtype=float)**2, axis=0)))
        notes += [] if floor_note is None else [floor_note]
    gear = gear_model_error(robot, y_a, own, W_own, qd, gram=gram, error=gear_error)
    if gear is None:
        return extra, notes
    shift, mu = gear[0][:10], gear[1]
    notes.append(gear_model_error_note(float(shift[0]), float(own.x[0]), mu))
    return extra + np.outer(shift, shift), notes


def offsets_held(robot: RobotIdentification, friction_prior_var: np.ndarray) -> bool:
    """The friction model has constant offsets and `friction_prior_var` holds every one at robot.yaml's (0)."""
    offsets = np.array([name.partition("_")[0] == "B" for name in robot.friction.param_names], dtype=bool)
    return bool(offsets.any() and np.all(friction_prior_var[offsets] == 0))


def batch_friction_prior_var(robot: RobotIdentification) -> np.ndarray:
    """(kf,) online_covariance_extra's default friction_prior_var: the parameters a load may change free (inf),
    the constant offsets at robot.yaml's (0; load_friction.load_changeable_friction), as direct-rls holds them."""
    return np.where(load_changeable_friction(robot.friction), np.inf, 0.0)


def resolution_floored_covariance(W: np.ndarray, fit: LinearSolution, torque_rms: np.ndarray) -> np.ndarray | None:
    """The textbook covariance of the WLS fit y ≈ W z (`fit`, on W (N, n, u)) with each joint's residual std
    floored at MODEL_RESOLUTION × its effort RMS on the run (`torque_rms`, N·m), without the serial-correlation
    inflation; None when no joint's residual is below its floor (the fit's own covariance is then this one).

    The floor is the quality check's (finish.model_error_reference), on the same physical argument: a rigid-body
    model with identified friction does not resolve a joint's torque better than about 0.5 % of its effort, so a
    residual below that (a noise-free simulation: the residual is then the numerical error of the conditioning)
    does not measure the model's error on another motion. Used only where robot.yaml has no model error measured
    on held-out motions (measured_model_error replaces it there)."""
    floor = MODEL_RESOLUTION * np.asarray(torque_rms, dtype=float).reshape(-1)
    sigma = np.asarray(fit.sigma, dtype=float).reshape(-1)
    if not np.any(sigma < floor):
        return None
    ok = fit.identifiable
    w2 = 1.0 / np.maximum(sigma, floor)**2
    A = np.asarray(W, dtype=float)[..., ok]
    gram = np.einsum("tju,tj,tjv->uv", A, np.broadcast_to(w2, A.shape[:2]), A)
    if fit.prior_info is not None:       # the fit's prior (its ridge rows) holds the unknowns it held here too
        gram = gram + np.diag(fit.prior_info[ok])
    cov = np.full((W.shape[-1],) * 2, np.nan)
    cov[np.ix_(ok, ok)] = np.linalg.pinv(gram)
    return cov


def resolution_floor_note(sigma: np.ndarray, torque_rms: np.ndarray) -> Note | None:
    """The note that the σ's model-error term was floored (resolution_floored_covariance), naming the joints whose
    residual std (`sigma`) was below MODEL_RESOLUTION × their effort RMS (`torque_rms`); None when none was: a σ
    that rests on an assumed resolution rather than a measured error says so."""
    floor = MODEL_RESOLUTION * np.asarray(torque_rms, dtype=float).reshape(-1)
    sigma = np.asarray(sigma, dtype=float).reshape(-1)
    below = np.flatnonzero(sigma < floor)
    if below.size == 0:
        return None
    return Note(NoteCode.PAYLOAD_MODEL_RESOLUTION_FLOOR,
                f"torque residual below the model's resolution ({100 * MODEL_RESOLUTION:g} % of the effort RMS) on "
                f"joint(s) {[int(j) + 1 for j in below]}: the σ's model-error term is that floor, not a measured "
                "error; give identify-robot held-out runs (--held-out-*) to measure it")


def serial_correlation_note(inflation: float) -> Note:
    return Note(NoteCode.PAYLOAD_SERIAL_CORRELATION,
                f"torque residuals serially correlated (Newey–West variance × {inflation**2:.1f}): "
                "the payload's covariance carries the difference")
