"""The one path from a solver's raw solution to the PayloadEstimate a user sees.

Every method (offline, the online estimators' running estimate, an identify goal's final result)
goes through the same steps:
  1. undetermined entries of φ_L take the prior's value and a NaN standard deviation (undetermined);
  2. the model-error check compares the fit's residual with the robot identification's own;
  3. a physically inconsistent raw estimate (mass <= 0 or pseudo-inertia not positive semidefinite,
     Wensing 2017) is projected onto the feasible set (consistency.project_feasible), and says so; the inertia's σ
     are those of the data's Gaussian restricted to that set (physical_posterior.narrow_to_physical), where no box
     has restricted it already;
  4. the quality (ok | suspect | failed, with reasons) is judged from those checks, and from the
     robot identification's and the recordings' scale against the URDF (robot_id/scale_check.py) when the
     method fits joint efforts (methods/registry.py MethodSpec.fits_joint_efforts: not the F/T method).
  A PayloadPrior (a bounding box, a weighed mass: payload/priors.py) is applied between 1 and 3: the estimate
  conditioned on it, its σ with it, a prior the data contradict making it suspect.
     An estimate that is not ok is never `converged`: the rule is never a confident wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from payload_id_core.dynamics.consistency import MIN_MASS, PROJECTION_SIGMA_NOTABLE, project_feasible
from payload_id_core.dynamics.inertia import PARAM_NAMES, is_physically_consistent
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode, has_note
from payload_id_core.payload.gain_uncertainty import gain_relative_std
from payload_id_core.payload.physical_posterior import narrow_to_physical
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification, check_scale
from payload_id_core.robot_id.scale_check import (
    SCALE_DISAGREEMENT_SIGMAS,
    URDF_SCALE_STD,
    other_unit_reason,
    payload_scale_std,
    recording_scale_factor,
)
from payload_id_core.signals.recording import Recording

MODEL_ERROR_RATIO_LIMIT = 1.5  # residual RMS over the robot identification's: above it, unmodelled effects dominate
# Quality thresholds, from the real UR10e pairs (../shared/data/ur10e, 15harm, robot from 14harm):
# with the right drive gains the model-error ratio is at most 1.79 (khalil-1, one joint) and the
# projection at most 8.5 σ away (difference-rls); with currents read as torques against a robot in
# N·m the ratio is 4.2–14.6 and the projection 197–1440 σ away.
MODEL_ERROR_RATIO_SUSPECT = 3.0      # twice the limit: the payload model does not explain the loaded run
# The finest torque error the rigid-body model can be held to, as a fraction of each joint's effort RMS: the ratio's
# reference is the robot identification's RMSE but not below this. Without a floor, noise-free efforts (a simulator)
# make the reference the model's numerical error (the `clean` cell: integration and differentiated motion leave
# 0.001-0.1 % of the effort RMS on the unloaded run, 0.08-0.26 % on the loaded run), so an accurate estimate read
# as a model error (ratio 2.5-141, SUSPECT). At 0.5 %: that run's ratio at most 0.5, a drive gain 5 % off 1.2-36;
# real drives are far above it (UR10e RMSE 0.4-3.4 N·m, 2-20 % of their effort RMS), so nothing moves there.
MODEL_RESOLUTION = 0.005
PROJECTION_SIGMA_SUSPECT = 50.0      # the raw estimate is this far (Mahalanobis) from any physical body
MASS_SIGNIFICANCE = 3.0              # mass below this many standard deviations: not shown to be > 0
# What the recorded data determine (judge_determination), against physical scales of the payload:
NO_PAYLOAD_SIGMA = 3.0               # |mass| within this many σ of zero: no payload detected
COM_STD_LIMIT = 0.005                # m: a CoM component known worse than this is not an answer for a controller
# σ of an inertia entry above this fraction of the inertia scale (inertia_scale: a 3σ lower bound, not the estimate):
# undetermined. 0.25 was the fraction of the estimate itself (σ ≤ λ/4); of a 3σ lower bound it asked σ ≤ λ/7 and
# called the demo's cell undetermined (ur10_payload_fast, σ/λ 0.18-0.20, every entry within 2σ of the truth). 0.4 asks
# λ ≥ 5.5σ, or σ ≤ 0.4·m·(5 cm)² for a compact payload; issue 29's over-estimate (0.058 ± 0.011 for 0.012: 0.4 ×
# 0.025) and khalil-3 on a weak motion (0.023 ± 0.007) stay undetermined (test_identifiability.py).
INERTIA_STD_FRACTION = 0.4
PAYLOAD_SIZE_FLOOR = 0.05            # m: the smallest radius of gyration the inertia scale m·r² assumes
INERTIA_LOWER_BOUND_SIGMA = 3.0      # the inertia scale is the largest moment less this many σ


def prior_phi(prior: PayloadEstimate | Sequence[float] | np.ndarray | None) -> np.ndarray:
    """φ for the entries the data leave undetermined: a PayloadEstimate, a 10-vector, or None (zeros)."""
    if prior is None:
        return np.zeros(10)
    return np.asarray(prior.phi if isinstance(prior, PayloadEstimate) else prior, dtype=float).reshape(10)


def undetermined_to_prior(z: np.ndarray, cov: np.ndarray, ok: np.ndarray, prior: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Note]]:
    """(φ_L, its covariance, which entries are determined, notes) from a solution z = [φ_L, …]."""
    phi = np.array(z[:10], dtype=float)
    ok10 = np.array(ok[:10], dtype=bool)
    phi[~ok10] = prior[~ok10]
    cov10 = np.array(cov[:10, :10], dtype=float)
    cov10[~ok10, :] = np.nan
    cov10[:, ~ok10] = np.nan
    notes = []
    if not ok10.all():
        notes.append(Note(NoteCode.PAYLOAD_NOT_IDENTIFIABLE,
                          "not identifiable from this robot and motion (fixed to the prior): "
                          + ", ".join(n for n, k in zip(PARAM_NAMES, ok10) if not k)))
    return phi, cov10, ok10, notes


def model_error_reference(rmse: np.ndarray, torque_rms: np.ndarray | None) -> np.ndarray:
    """Per joint: the residual RMS a model that explains the run may leave, the unloaded identification's torque
    RMSE floored at MODEL_RESOLUTION × the joint's effort RMS on the run judged (`torque_rms`, N·m; None: no floor)."""
    rmse = np.asarray(rmse, dtype=float).reshape(-1)
    if torque_rms is None:
        return rmse
    return np.maximum(rmse, MODEL_RESOLUTION * np.asarray(torque_rms, dtype=float).reshape(-1))


def model_error_ratio(sigma: np.ndarray, robot: RobotIdentification | None,
                      torque_rms: np.ndarray | None = None) -> np.ndarray | None:
    """Per joint: the fit's residual RMS over the unloaded identification's torque RMSE, that floored by the
    model's resolution against the run's effort RMS `torque_rms` (model_error_reference); None if unknown."""
    rmse = np.asarray(robot.rmse if robot is not None else [], dtype=float).reshape(-1)
    sigma = np.asarray(sigma, dtype=float).reshape(-1)
    if rmse.size != sigma.size or not np.all(rmse > 0):
        return None
    return sigma / model_error_reference(rmse, torque_rms)


def model_error_notes(ratio: np.ndarray | float | None) -> list[Note]:
    """The residual-based model-error check (one rule for every method).

    Near 1 the payload model explains the loaded run as well as the robot model explained its own run;
    well above 1 something unmodelled remains, and the reported std (from the residual scatter, assumed
    white) understates the error: then the note's code is PAYLOAD_MODEL_ERROR_HIGH."""
    if ratio is None:
        return []
    r = np.atleast_1d(np.asarray(ratio, dtype=float))
    if not np.all(np.isfinite(r)):
        return []
    values = f"{float(r[0]):.2f}" if r.size == 1 else f"per joint {np.round(r, 2).tolist()}"
    text = f"model-error check: residual RMS / unloaded identification RMS {values}"
    if np.max(r) > MODEL_ERROR_RATIO_SUSPECT:
        return [Note(NoteCode.PAYLOAD_MODEL_ERROR_SEVERE,
                     text + f" (above {MODEL_ERROR_RATIO_SUSPECT}: the payload model does not explain the loaded "
                     "run; wrong drive gains or effort unit, or a robot.yaml from another robot state)")]
    if np.max(r) > MODEL_ERROR_RATIO_LIMIT:
        return [Note(NoteCode.PAYLOAD_MODEL_ERROR_HIGH,
                     text + f" (above {MODEL_ERROR_RATIO_LIMIT}: unmodelled effects, the std understates the error)")]
    return [Note(NoteCode.PAYLOAD_MODEL_ERROR, text)]


def project_if_inconsistent(est: PayloadEstimate, metric: np.ndarray | None = None) -> PayloadEstimate:
    """Project a physically inconsistent φ_L onto the feasible set; the covariance stays the raw estimate's.
    `metric`: the covariance whose shape the projection's distance uses, when it is not est.covariance's (a method
    that reports each parameter's own Newey–West covariance keeps its fit's weighting: finish)."""
    if is_physically_consistent(est.phi) and est.phi[0] >= MIN_MASS:
        return est  # saves the semidefinite program; project_feasible would agree
    projected, consistent, dist = project_feasible(est.phi, est.covariance if metric is None else metric,
                                                   est.identifiable)
    if consistent:
        return est
    est.phi = np.asarray(projected, dtype=float)
    est.physically_consistent = False
    if dist <= PROJECTION_SIGMA_NOTABLE:
        est.notes.append(Note(NoteCode.PAYLOAD_PROJECTED_WITHIN_NOISE,
                              f"raw estimate just outside the physically consistent set: projected onto it, {dist:.3g} "
                              "standard deviations away (within the noise); covariance is the raw estimate's"))
    else:   # NaN too: the projection itself failed
        est.notes.append(Note(NoteCode.PAYLOAD_PROJECTED,
                              "raw estimate not physically consistent (pseudo-inertia not positive semidefinite or "
                              f"mass <= 0): projected onto the feasible set, {dist:.3g} standard deviations away; "
                              "covariance is the raw estimate's"))
    if not dist <= PROJECTION_SIGMA_SUSPECT:   # NaN too: the projection itself failed
        est.mark(Quality.SUSPECT, f"the raw estimate is {dist:.3g} standard deviations from any physical body "
                 f"(limit {PROJECTION_SIGMA_SUSPECT:g}): the torques do not fit this robot model (effort unit, "
                 "drive gains?)")
    return est


def _box_applied(est: PayloadEstimate) -> bool:
    """Whether a bounding box restricted the estimate already (priors.apply_prior: its set is J ⪰ 0 cut further)."""
    return "bounding_box" in (est.prior or {}) and "bounding_box" not in est.prior_not_applied


def make_physical(est: PayloadEstimate, metric: np.ndarray | None = None) -> PayloadEstimate:
    """Step 3: the point projected onto the physically consistent bodies (project_if_inconsistent, `metric` as
    there), and, unless a box has restricted the estimate, the inertia's σ those of the data's Gaussian restricted to
    them (physical_posterior.narrow_to_physical: never wider than the data's, the mass and CoM left the data's)."""
    raw = np.array(est.phi, dtype=float)
    est = project_if_inconsistent(est, metric)
    return est if _box_applied(est) else narrow_to_physical(est, raw)


def inertia_scale(est: PayloadEstimate) -> float:
    """kg·m² against which the inertia's σ is judged: what the data show the payload's largest principal moment
    about the CoM to be at least (the estimate less INERTIA_LOWER_BOUND_SIGMA × the largest σ of an inertia
    entry), and at least m·r² with r = PAYLOAD_SIZE_FLOOR (a compact payload's moments are small, and known to
    a small σ). Not the estimate itself: that let an over-estimated inertia raise its own bar (khalil-3 on the
    simulated ur10 cell, issue 29: ixx 0.058 ± 0.011 kg·m² for 0.012 passed as σ ≤ 0.25 × 0.058). With the
    lower bound an estimate lifts the bar above the compact payload's only as far as it is significant: the
    test σ ≤ INERTIA_STD_FRACTION × (λ − 3σ) asks σ ≤ λ / 5.5.

    The compact payload's m·r² is an assumption about the part's size, so it is never taken above what the data show
    the largest moment to be at least at 1σ (λ̂ − σ): a part the data say is more compact than r is judged against
    its own moments (through the floor the test then asks λ̂ ≥ 3.5σ, σ ≤ 0.29 λ̂). Without that cap the Panda's 1.5 kg
    block (10 × 8 × 6 cm, largest moment 2.05e-3 kg·m² = m·(3.7 cm)², bench/priors.py on the 10 s panda_payload) was
    "determined" on every seed at a largest σ of 0.62-0.67 × its moment, under the floor's 0.4 × m·(5 cm)² = 1.5e-3:
    a number of the order of its own σ, which issue 30 counts as not determined (σ ≤ 25 %). λ̂ − σ, not λ̂: the box's
    flat prior pulls a compact part's moments up (+1σ on that Panda), and λ̂ alone let that pull raise the bar again
    (determined on 8 of 10 seeds with the box). The cap only lowers the scale, so issue 29's over-estimate stays
    undetermined; the UR10's and the cell's floors (4 and 3.5 kg, moments 0.011-0.015 kg·m²) are not lowered."""
    largest = float(np.max(np.linalg.eigvalsh(est.inertia_about_com)))
    std = est.propagated_std()[4:]
    largest_std = float(np.max(std)) if np.all(np.isfinite(std)) else math.inf
    lower = largest - INERTIA_LOWER_BOUND_SIGMA * largest_std if math.isfinite(largest_std) else 0.0
    at_one_sigma = largest - largest_std if math.isfinite(largest_std) else largest
    return max(lower, min(abs(est.mass) * PAYLOAD_SIZE_FLOOR ** 2, at_one_sigma))


def judge_determination(est: PayloadEstimate) -> PayloadEstimate:
    """Which of mass, CoM and inertia the recorded data determine (est.determined), and no payload.

    The structural answer (`identifiable`: the regressor's row space) says nothing about how well a
    direction is excited: a motion that barely moves the wrist leaves the inertia's singular values near
    the noise level, its σ of the order of the inertia itself, and a number that means nothing. Judged
    from the covariance of φ_L (the noise through the regressor's singular values, first-order
    propagated to mass, CoM and inertia about the CoM) against the payload's own scales: a mass within
    NO_PAYLOAD_SIGMA σ of zero is no payload (then CoM and inertia mean nothing); a CoM component with
    σ above COM_STD_LIMIT, or an inertia entry with σ above INERTIA_STD_FRACTION of inertia_scale (what the data
    show the inertia to be at least, not the estimate itself), is undetermined. Re-judged from scratch on every call (a
    running estimate is finished repeatedly); an estimate without a covariance (a hand-written file, a
    message) keeps what it says."""
    judged = (NoteCode.PAYLOAD_UNDETERMINED, NoteCode.PAYLOAD_NO_PAYLOAD)
    # A previous verdict goes (a projection may have moved the mass since), its quality reason with it.
    earlier = [n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_NO_PAYLOAD]
    est.notes = [n for n in est.notes if Note.from_any(n).code not in judged]
    if earlier and any(r in earlier for r in est.quality_reasons):
        est.quality_reasons = [r for r in est.quality_reasons if r not in earlier]
        if not est.quality_reasons:
            est.quality = Quality.OK
            est.notes = [n for n in est.notes if Note.from_any(n).code is not NoteCode.PAYLOAD_QUALITY]
    var_m = est.covariance[0, 0]
    if not (est.identifiable[0] and np.isfinite(var_m)):
        return est
    std_m = float(np.sqrt(max(var_m, 0.0)))
    if abs(est.mass) <= NO_PAYLOAD_SIGMA * std_m:
        est.determined = np.array([True, False, False])
        reason = (f"no payload detected (mass {est.mass:.4f} ± {std_m:.4f} kg within {NO_PAYLOAD_SIGMA:g}σ of "
                  "zero): CoM and inertia undetermined")
        est.notes.append(Note(NoteCode.PAYLOAD_NO_PAYLOAD, reason))
        if reason not in est.quality_reasons:
            est.mark(Quality.SUSPECT, reason)
        return est
    std = est.propagated_std()
    com_known = est.identifiable[1:4]
    com_det = bool(np.all(std[1:4][com_known] <= COM_STD_LIMIT))
    scale = inertia_scale(est)
    inertia_det = bool(np.all(std[4:] <= INERTIA_STD_FRACTION * scale)) if est.identifiable.all() else True
    est.determined = np.array([True, com_det, inertia_det])
    why = []
    if not com_det:
        why.append(f"CoM (σ {np.round(1e3 * std[1:4], 1).tolist()} mm, limit {1e3 * COM_STD_LIMIT:g} mm)")
    if not inertia_det:
        why.append(f"inertia (largest σ {np.max(std[4:]):.2g} kg·m², limit {INERTIA_STD_FRACTION:g} × "
                   f"{scale:.2g} kg·m²)")
    if why:
        if has_note(est.notes, NoteCode.PAYLOAD_GEAR_MODEL_ERROR):
            cause = ("the recorded motion excites them too little against the noise and the robot model's error (the "
                     "gear friction robot.yaml leaves out: identify-robot on this excitation, or with "
                     "--gear-friction identify; or excite the wrist joints: payload-id excite)")
        else:
            cause = ("the recorded motion excites them too little against the noise (excite the wrist joints: "
                     "payload-id excite)")
        est.notes.append(Note(NoteCode.PAYLOAD_UNDETERMINED, "undetermined by this motion: " + "; ".join(why)
                              + ": " + cause))
    return est


def with_scale_uncertainty(est: PayloadEstimate, robot: RobotIdentification, model: RobotModel) -> PayloadEstimate:
    """`est` with the measured scale error of robot.yaml's efforts (scale_check.payload_scale_std) in its covariance:
    a common relative error r scales φ_L by 1 + r, so σ_r² φ_L φ_Lᵀ joins the entries the motion determines; the
    note says by how much. Once per estimate (the note marks it done).

    Only for gains given by hand (identify-robot --effort-scale: robot.yaml's source "given"): they carry no σ, and
    the factor is the only measurement of their scale. Gains identified with a known mass measure it to 0.3 % on
    the real UR10e, better than the factor, which with those right gains reads 1.010, 1.007 and 1.023 on the three
    real unloaded motions: a 2.3 % factor is no evidence against them (the ±3.5 % band still guards gross errors).
    Torques measured directly (source "none") need no gains."""
    if has_note(est.notes, NoteCode.PAYLOAD_SCALE_UNCERTAINTY) or robot.effort_scale_source != "given":
        return est
    check = check_scale(robot, model)
    rel = gain_relative_std(robot)
    extra = payload_scale_std(check, float(np.median(rel)) if rel is not None else 0.0)
    ok = np.asarray(est.identifiable, dtype=bool)[:10]
    if extra <= 0.0 or not ok.any():
        return est
    cov = np.array(est.covariance, dtype=float)
    phi = np.asarray(est.phi, dtype=float)[:10]
    cov[np.ix_(ok, ok)] += extra**2 * np.outer(phi[ok], phi[ok])
    before = est.readable_std()[0]
    est.covariance = cov
    est.notes.append(Note(
        NoteCode.PAYLOAD_SCALE_UNCERTAINTY,
        f"robot.yaml's gravity parameters are {check.factor:.4g} × the URDF's, {extra:.1%} from 1 and beyond their "
        f"noise ({SCALE_DISAGREEMENT_SIGMAS:g} × {URDF_SCALE_STD:.0%} and the gains' σ): the drive gains may be off by "
        f"as much, so σ includes it (mass σ {before:.2g} → {est.readable_std()[0]:.2g} kg); to sharpen it, identify "
        "the gains with a known mass (identify-robot --loaded-csv-ur/--loaded-bag --known-payload-mass)"))
    return est


def judge_quality(est: PayloadEstimate, robot: RobotIdentification | None = None,
                  model: RobotModel | None = None, recordings: Sequence[Recording | None] = ()) -> PayloadEstimate:
    """Lower est.quality for every failed check, and make a not-ok estimate not converged (step 4).

    Checks: what the recorded data determine, and no payload (judge_determination); the model-error
    ratio far above its limit (the note's code, set by model_error_notes); σ's model error measured on fewer held-out
    motions than bound another motion's (covariance_extra.few_motions_note: its text is the reason);
    the mass not significantly above 0; the robot identification's scale against the URDF; each of
    `recordings`' efforts against the URDF's gravity torques (currents read as torques). The
    projection distance is judged where it is known (project_if_inconsistent). Idempotent: a check
    already recorded is not recorded twice. First, with `robot`, a scale factor that disagrees with 1 beyond its
    noise joins the covariance (with_scale_uncertainty), so every judgement below sees the σ that is reported."""
    def mark(quality: Quality, reason: str) -> None:
        if reason not in est.quality_reasons:
            est.mark(quality, reason)

    model = model if model is not None else (robot.model if robot is not None else None)
    if robot is not None and model is not None:
        with_scale_uncertainty(est, robot, model)
    if has_note(est.notes, NoteCode.PAYLOAD_MODEL_ERROR_SEVERE):
        mark(Quality.SUSPECT, f"model-error ratio above {MODEL_ERROR_RATIO_SUSPECT}: the payload model does not "
             "explain the loaded run")
    # σ's model error measured on too few held-out motions to bound this one's (covariance_extra.few_motions_note):
    # reported, never withheld for it, but not as a confident answer; the note's text is the reason and the fix.
    for note in map(Note.from_any, est.notes):
        if note.code is NoteCode.PAYLOAD_MODEL_ERROR_FEW_MOTIONS:
            mark(Quality.SUSPECT, note.text)
    judge_determination(est)
    std_m = float(np.sqrt(est.covariance[0, 0])) if np.isfinite(est.covariance[0, 0]) else float("nan")
    no_payload = has_note(est.notes, NoteCode.PAYLOAD_NO_PAYLOAD)   # its own reason, said once
    if est.identifiable[0] and np.isfinite(std_m) and not no_payload and not est.mass > MASS_SIGNIFICANCE * std_m:
        mark(Quality.SUSPECT, f"mass {est.mass:.4g} kg is not significantly above 0 "
             f"(std {std_m:.2g} kg, needs {MASS_SIGNIFICANCE:g} std)")
    if robot is not None and model is not None:
        scale = check_scale(robot, model)
        if not scale.plausible:
            mark(Quality.SUSPECT, "robot identification: " + scale.reason())
    for recording in recordings:
        if recording is not None and model is not None:
            reason = other_unit_reason(recording_scale_factor(model, recording), recording.source or "a recording")
            if reason:
                mark(Quality.SUSPECT, reason)
    if est.quality is not Quality.OK:
        est.converged = False
        # One quality note, rebuilt: a running estimate's (online methods) may be finished again.
        est.notes = [n for n in est.notes if Note.from_any(n).code is not NoteCode.PAYLOAD_QUALITY]
        est.notes.append(Note(NoteCode.PAYLOAD_QUALITY,
                              f"quality {est.quality.value}: " + "; ".join(est.quality_reasons)))
    return est


def finish(frame: str, method: str, z: np.ndarray, cov: np.ndarray, ok: np.ndarray, notes: Sequence[Note | str], *,
           prior=None, payload_prior: PayloadPrior | None = None, project: bool = True, converged: bool = True,
           convergence_time: float = float("nan"),
           history: dict | None = None, friction_unknowns: int = 0,
           projection_cov: np.ndarray | None = None) -> PayloadEstimate:
    """PayloadEstimate from a solution z = [φ_L, Δφ_f, …] with covariance `cov` and determined entries `ok`.
    `projection_cov` (z's shape): the metric of the projection onto physical bodies when it is not `cov` (a
    reported covariance with each parameter's own Newey–West variance, the fit weighted by a common factor:
    the projected estimate is the fit's, whatever σ is reported)."""
    if not bool(np.asarray(ok)[0]):
        raise PayloadIdError("the motion does not determine the payload mass",
                             "play an exciting trajectory that moves the joints against gravity (payload-id excite)")
    phi, cov10, ok10, prior_notes = undetermined_to_prior(z, cov, ok, prior_phi(prior))
    all_notes: list[Note | str] = [*notes, *prior_notes]
    if friction_unknowns:
        all_notes.append(Note(NoteCode.PAYLOAD_FRICTION_CHANGE,
                              f"friction change under load estimated ({friction_unknowns} parameters)"))
    est = PayloadEstimate(frame=frame, phi=phi, covariance=cov10, method=method, identifiable=ok10,
                          converged=converged, convergence_time=convergence_time, notes=all_notes, history=history)
    if payload_prior is not None:   # the box and known mass (payload/priors.py): before the projection
        est = apply_prior(est, payload_prior)
    metric = None if projection_cov is None else undetermined_to_prior(z, projection_cov, ok, prior_phi(prior))[1]
    return judge_quality(make_physical(est, metric) if project else est)
