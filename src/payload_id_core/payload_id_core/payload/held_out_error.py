"""Measure robot.yaml's model error on held-out unloaded recordings (robot_id/model_error.py): khalil-1's
regression (Khalil 2007 eq. 23, τ − Y θ_a ≈ W_L φ, rows weighted per joint) on a run with no payload, whose
answer φ_h should be 0. What it returns instead is the model error's image in the payload parameters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.linear import weighted_lstsq
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods import identify_payload, payload_request
from payload_id_core.payload.methods.common import (
    check_covers_excitation,
    method_signals,
    payload_rows,
    robot_covariance,
)
from payload_id_core.payload.methods.online import judge_moments_on, online_estimator
from payload_id_core.payload.online import DifferenceRLS
from payload_id_core.payload.options import SIGNAL_OPTIONS, PayloadOptions
from payload_id_core.robot_id import RobotIdentification, serial_correlation
from payload_id_core.robot_id.model_error import (
    DATA_ONLY,
    MAX_MASS_SIGMAS,
    WITH_ROBOT_COVARIANCE,
    DifferenceRLSConversion,
    HeldOutModelError,
    LoadedModelError,
)
from payload_id_core.robot_id.offset_spread import OffsetSpread
from payload_id_core.signals.recording import Recording

# Two recordings hold one run (a copy, re-exported with its numbers rounded, or cut by some samples at either end)
# when, over the samples they share (at least SAME_RUN_MIN_SHARED of the shorter one's), the positions agree within
# SAME_RUN_Q_TOL and the efforts within SAME_RUN_EFFORT_TOL of each joint's RMS effort. A CSV's rounding (4 decimals
# of an ampere: 1e-4 of a UR10e's RMS current) stays inside; another occasion of the same motion differs by the
# drives' noise (the simulated ur10's currents: ~1 % of their RMS; the real UR10e's more) at nearly every sample.
# Before (h133), only byte-identical samples were one run: the simulated UR10's one check run given again with its
# efforts rounded to 1e-4 A, or without its first sample, counted as a second occasion (elbow gain σ 0.84 → 0.28).
SAME_RUN_Q_TOL = 1e-5                 # rad
SAME_RUN_EFFORT_TOL = 1e-3            # of each joint's RMS effort
SAME_RUN_MIN_SHARED = 0.5
SAME_RUN_MAX_STARTS = 64              # where the other run may start (a run that rests first matches at many)


def _same_run(a: Recording, b: Recording) -> bool:
    """Whether `a` and `b` hold the same run's samples (positions and raw efforts), whatever file, copy, rounding or
    cut they were read from (SAME_RUN_* above)."""
    qa, ta = (np.asarray(x, dtype=float) for x in (a.joints.q, a.joints.tau))
    qb, tb = (np.asarray(x, dtype=float) for x in (b.joints.q, b.joints.tau))
    if qa.shape[1:] != qb.shape[1:] or ta.shape[1:] != tb.shape[1:] or not (len(qa) and len(qb)):
        return False
    rms = np.maximum(np.sqrt(np.mean(ta**2, axis=0)), np.sqrt(np.mean(tb**2, axis=0)))
    tol = SAME_RUN_EFFORT_TOL * np.where(rms > 0, rms, 1.0)
    shared_min = SAME_RUN_MIN_SHARED * min(len(qa), len(qb))
    with np.errstate(invalid="ignore"):
        for xq, xt, yq, yt in ((qa, ta, qb, tb), (qb, tb, qa, ta)):     # y starting at x's sample k
            starts = np.flatnonzero(np.all(np.abs(xq - yq[0]) <= SAME_RUN_Q_TOL, axis=1)
                                    & np.all(np.abs(xt - yt[0]) <= tol, axis=1))
            for k in starts[:SAME_RUN_MAX_STARTS]:
                n = min(len(xq) - k, len(yq))
                if (n >= shared_min and np.all(np.abs(xq[k:k + n] - yq[:n]) <= SAME_RUN_Q_TOL)
                        and np.all(np.abs(xt[k:k + n] - yt[:n]) <= tol)):
                    return True
    return False


@dataclass(frozen=True)
class HeldOutKind:
    """One kind of identify-robot run that must be another run than the robot's fit (refuse_fitted_runs): `name` as
    the message names the run, `measures` what that run would read on a fitted run instead of what it measures,
    `fix` the run to give instead."""

    name: str
    measures: str
    fix: str


HELD_OUT = HeldOutKind("held-out run", "its error there is the fit's own residual, not the model's error",
                       "give an unloaded run of another motion as --held-out-csv-ur/--held-out-bag")
FRICTION_CV = HeldOutKind("friction-choice run", "each friction model's error there is its own fit's residual, which "
                          "favours the model with the most parameters", "give an unloaded run of another motion as "
                          "--friction-cv-csv-ur/--friction-cv-bag")
HELD_OUT_LOADED = HeldOutKind("held-out loaded run", "each method's load friction would be chosen on the motion the "
                              "drive gains were fitted to", "give a loaded run of another motion as "
                              "--held-out-loaded-csv-ur/--held-out-loaded-bag")
DRIFT = HeldOutKind("drift run", "its friction offsets there are the fit's own, not another occasion's",
                    "give an unloaded run of another occasion as --drift-csv-ur/--drift-bag")
GAIN_CHECK = HeldOutKind("gain check run", "its drive gains there are the calibration's own fit, not another "
                         "occasion's, and would narrow the gains' σ", "leave it out, or give a loaded run of another "
                         "occasion as --gain-check-csv-ur/--gain-check-bag")


def refuse_fitted_runs(held_out: Sequence[Recording], fitted: Sequence[Recording],
                       kind: HeldOutKind = HELD_OUT) -> None:
    """A held-out run of `kind` must be one the robot was not fitted to: on its own calibration run the model's error
    is the in-sample residual, which the fit has already minimised (the payload it invents there is ~1e-4 kg on the
    UR10e's 14harm run, where held-out runs show 0.02-0.03 kg), so it would collapse every payload's σ; a drift or
    gain check run there reads the fit's own offsets or gains (h126: the message named the held-out runs' fix for
    all of them)."""
    fitted_paths = {Path(r.source).resolve(): r.source for r in fitted if r.source}
    for r in held_out:
        same = fitted_paths.get(Path(r.source).resolve()) if r.source else None
        same = same or next((f.source or "a fitted run" for f in fitted if _same_run(r, f)), None)
        if same is not None:
            raise PayloadIdError(f"{kind.name} {r.source} is (or holds the same samples as) {same}, a run the robot "
                                 f"is fitted to: {kind.measures}", kind.fix)


def refuse_repeated_runs(runs: Sequence[Recording], option: str) -> None:
    """Each held-out run of one kind must be another run: the spreads taken over them (the offsets' drift, the gains'
    check) count H independent runs in their Student-t_H width (offset_spread.predictive_factor), so one run given
    twice would narrow it as a second occasion would (one real UR10e check run given three times: t_1 12.7 -> t_3
    3.18, the gains' width 4x narrower on the same evidence). A copy rounded or cut is the same run (_same_run)."""
    for i, r in enumerate(runs):
        first = next((runs[j] for j in range(i) if _same_run(r, runs[j])), None)
        if first is not None:
            raise PayloadIdError(f"{option}: {r.source} is (or holds the same samples as) "
                                 f"{first.source or f'run {runs.index(first) + 1}'}, given "
                                 "already: one run counted twice would narrow the spread it measures",
                                 f"give each run once ({option}), each recorded on another occasion")

# A held-out run measures the model error only where its own fit determines the payload's parameters well below
# what that error could be: per group (mass kg, first moments kg·m, inertia kg·m²) its σ must stay under these.
# Real UR10e: the full excitations (14harm, 15harm, 01_31) reach at most 0.04 kg, 0.016 kg·m, 0.13 kg·m²; the
# runs that cannot measure it go 18× to 600× past them (static poses validation-p1/p2: first moments 7-25 kg·m;
# one joint at a time: jointwise-joint_2 inertia 290 kg·m², jointwise-joint_5 mass 49 kg).
MAX_OWN_STD = (0.4, 0.4, 1.0)
_GROUPS = (slice(0, 1), slice(1, 4), slice(4, 10))
# A drift run is refused as loaded beyond this many σ of its spurious mass (offsets free): wider than the held-out
# runs' 5σ, because a drift run need not be an excitation that resolves the model's error from a load. Honest
# unloaded drift runs: bench/accuracy.py's xtraj (UR10 and Panda, seeds 0-2, three 10 s sums of sines each) up to
# 5.0σ; the real UR10e's 15harm and 01_31 unloaded runs pass; their loaded twins read 2.8 kg at 36-57σ.
MAX_DRIFT_MASS_SIGMAS = 10.0


def spurious_payload(model: RobotModel, robot: RobotIdentification, unloaded: Recording, frame: str,
                     options: PayloadOptions | None = None) -> np.ndarray:
    """(10,) φ the payload fit finds on an unloaded run (conditioned with `options`, default the payload fits'
    defaults); PayloadIdError when the run's own fit shows it cannot measure the model error there (too little motion)
    or carries a load."""
    check_covers_excitation(unloaded, "held-out recording")
    phi, std, determined = _payload_fit(model, robot, unloaded, frame, options)
    worst = [float(np.max(np.where(determined[g], std[g], np.inf))) for g in _GROUPS]
    if any(w > limit for w, limit in zip(worst, MAX_OWN_STD)):
        raise PayloadIdError(
            f"held-out run {unloaded.source}: too little motion to measure the model error: its own fit determines "
            f"the payload's mass, first moments, inertia only to σ {worst[0]:.3g} kg, {worst[1]:.3g} kg·m, "
            f"{worst[2]:.3g} kg·m² (limits {MAX_OWN_STD[0]:g}, {MAX_OWN_STD[1]:g}, {MAX_OWN_STD[2]:g})",
            "use a run of the excitation kind (all joints moving, e.g. one payload-id excite wrote), unloaded")
    if abs(phi[0]) > MAX_MASS_SIGMAS * std[0]:
        raise PayloadIdError(
            f"held-out run {unloaded.source} carries a load: its spurious payload mass {phi[0]:.4g} kg is "
            f"{abs(phi[0]) / std[0]:.0f} σ from zero (σ {std[0]:.3g} kg; the model's error stays within "
            f"{MAX_MASS_SIGMAS:g} σ)",
            "give an unloaded run (nothing on the flange) as --held-out-csv-ur/--held-out-bag")
    return np.where(determined, phi, np.nan)


def _payload_fit(model: RobotModel, robot: RobotIdentification, run: Recording, frame: str,
                 options: PayloadOptions | None = None, offsets_free: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((10,), (10,), (10,)): the payload φ a fit against robot.yaml finds on `run` (conditioned with `options`), its
    σ, and which are determined; with `offsets_free` the constant friction offsets' change is fitted with it
    (robot.yaml's B_j columns)."""
    sig = method_signals(run, model, options or PayloadOptions(), robot)
    W, y_a = payload_rows(model, robot, frame, sig, False)
    if offsets_free:
        lay_friction = robot.friction.param_names
        start = y_a.shape[-1] - len(lay_friction)
        cols = [start + i for i, p in enumerate(lay_friction) if p.startswith("B_")]
        W = np.concatenate([W, y_a[..., cols]], axis=-1)
    sol = weighted_lstsq(W, sig.tau - y_a @ np.asarray(robot.theta, dtype=float))
    phi, std = sol.x[:10], np.sqrt(np.abs(np.diag(sol.cov)[:10]))
    return phi, std, sol.identifiable[:10] & np.isfinite(std)


# How often each online method's running spurious mass is kept along a held-out run (model_error.HeldOutModelError's
# `running`): finer than the seconds over which the model error moves a running estimate (real UR10e: several % over
# 2-4 s), a few hundred numbers per run in robot.yaml.
RUNNING_EVERY_S = 0.5
ONLINE_METHODS = (PayloadMethod.DIRECT_RLS, PayloadMethod.DIFFERENCE_RLS)


def running_spurious_mass(model: RobotModel, robot: RobotIdentification, unloaded: Recording, frame: str,
                          method: PayloadMethod, options: PayloadOptions | None = None) -> np.ndarray:
    """(K, 2) [mass σ at the rows' assumed noise, mass] (kg) of the online `method` (its default options) fed the
    unloaded held-out run, every RUNNING_EVERY_S of motion: the model error's image in a running estimate (true mass
    0), against how well the motion so far determines the mass (OnlineEstimator.mass_information_std;
    HeldOutModelError.prefix_mass_variance). Fed a loaded run, the mass is the load's plus that error; the last
    point is the whole run's."""
    request = payload_request(method, model, robot, frame, **(options or PayloadOptions()).given(SIGNAL_OPTIONS))
    sig = method_signals(unloaded, model, request.options, robot)
    dt = float(np.median(np.diff(sig.t)))
    est = online_estimator(method, model, robot, request.frame, request.options, rate_hz=1.0 / dt)
    est.serial_check = False      # only the running estimate is wanted: no batch fit per check
    every = max(1, int(round(RUNNING_EVERY_S / dt)))
    points = []
    for k in range(0, sig.t.size, every):
        est.update_batch(sig.t[k:k + every], sig.q[k:k + every], sig.qd[k:k + every], sig.qdd[k:k + every],
                         sig.tau[k:k + every])
        points.append((est.mass_information_std(), float(est._quick_payload()[0][0])))
    return np.array(points, dtype=float).reshape(-1, 2)


# The methods whose σ takes robot.yaml's measured model error (khalil-1's C_me; the online methods' running record):
# the ones a held-out loaded run is scored for (LoadedModelError).
LOADED_RECORD_METHODS = (PayloadMethod.KHALIL_1, *ONLINE_METHODS)


def measure_loaded_model_error(model: RobotModel, robot: RobotIdentification, loaded: Sequence[Recording],
                               known_mass: float, frame: str | None = None,
                               options: PayloadOptions | None = None) -> LoadedModelError:
    """robot.yaml's model error on held-out loaded runs of `known_mass` kg (motions it was not fitted to, efforts in
    its torque units, conditioned with `options`' signal options): each LOADED_RECORD_METHODS method as robot.yaml
    sets it (its load friction choice included) run over each, its mass − known_mass whole-run (khalil-1) and along
    the run with its information σ (the online methods, running_spurious_mass). PayloadIdError (one line) for a run
    that cannot measure it: too little motion."""
    frame = model.payload_frame(frame)
    conditioning = (options or PayloadOptions()).given(SIGNAL_OPTIONS)
    running: dict[str, list[np.ndarray]] = {m.value: [] for m in LOADED_RECORD_METHODS}
    for i, run in enumerate(loaded):
        check_covers_excitation(run, "held-out loaded recording")
        _, std, determined = _payload_fit(model, robot, run, frame, options)
        if not (determined[0] and std[0] <= MAX_OWN_STD[0]):
            raise PayloadIdError(
                f"held-out loaded run {run.source or i + 1}: too little motion to measure the model error: its own fit "
                f"determines the payload's mass only to σ {std[0]:.3g} kg (limit {MAX_OWN_STD[0]:g})",
                "use a run of the excitation kind (all joints moving), carrying the --known-payload-mass payload")
        est = identify_payload(PayloadMethod.KHALIL_1.value, model, robot, run, frame, **conditioning)
        running[PayloadMethod.KHALIL_1.value].append(np.array([[float(std[0]), est.mass - known_mass]]))
        for m in ONLINE_METHODS:
            points = running_spurious_mass(model, robot, run, frame, m, options)
            running[m.value].append(np.column_stack([points[:, 0], points[:, 1] - known_mass]))
    return LoadedModelError([r.source or f"held-out loaded {i + 1}" for i, r in enumerate(loaded)],
                            np.full(len(loaded), float(known_mass)), running)


def measure_model_error(model: RobotModel, robot: RobotIdentification, held_out: Sequence[Recording],
                        frame: str | None = None, options: PayloadOptions | None = None) -> HeldOutModelError:
    """The spurious payloads of `held_out` (unloaded recordings of motions robot.yaml was not fitted to, their
    efforts already in robot.yaml's torque units) on `frame` (default: the model's payload frame), and
    difference-rls's moments conversion chosen on them (difference_rls_conversion); every run conditioned with
    `options`' signal options (the calibration's; default the payload fits' defaults)."""
    frame = model.payload_frame(frame)
    rows = np.array([spurious_payload(model, robot, r, frame, options) for r in held_out],
                    dtype=float).reshape(-1, 10)
    try:
        conversion: DifferenceRLSConversion | None = difference_rls_conversion(model, robot, held_out, frame,
                                                                               options)
    except PayloadIdError:
        conversion = None   # difference-rls cannot run on these runs: nothing chosen, its default conversion stays
    try:
        running = {m.value: [running_spurious_mass(model, robot, r, frame, m, options) for r in held_out]
                   for m in ONLINE_METHODS}
    except PayloadIdError:
        running = {}        # the online methods cannot run on these runs: their σ keeps the whole-run error
    return HeldOutModelError(str(frame), [r.source or f"held-out {i + 1}" for i, r in enumerate(held_out)], rows,
                             difference_rls=conversion, running=running)


def difference_rls_spurious(model: RobotModel, robot: RobotIdentification, unloaded: Recording, frame: str,
                            robot_covariance: bool, options: PayloadOptions | None = None) -> tuple[np.ndarray, float]:
    """(10,) the raw φ difference-rls (its default options, the final solution) finds on an unloaded run, its moments
    converted with or without the robot identification's covariance (NaN where undetermined); and the χ² (3 dof) of
    the difference between these first moments and the other conversion's, against the covariance the noise (as it
    is, serially correlated) and an error of θ̂_a distributed as C_a predict for that difference (NaN when it cannot
    be judged: a first moment undetermined, no C_a, that covariance not definite). `options`: the signal options
    the run is conditioned with (the calibration's), the method's others its defaults."""
    request = payload_request(PayloadMethod.DIFFERENCE_RLS, model, robot, frame,
                              **(options or PayloadOptions()).given(SIGNAL_OPTIONS))
    sig = method_signals(unloaded, model, request.options, robot)
    est = online_estimator(PayloadMethod.DIFFERENCE_RLS, model, robot, request.frame, request.options,
                           rate_hz=1.0 / float(np.median(np.diff(sig.t))))
    chi2 = float("nan")
    if isinstance(est, DifferenceRLS):   # always: the method is difference-rls
        est.moments_robot_covariance = robot_covariance
        est.compare_conversions = True
    est.update_batch(sig.t, sig.q, sig.qd, sig.qdd, sig.tau)
    judge_moments_on(est, sig.q, sig.qd, sig.qdd, sig.tau)
    z, _, ok = est.payload_solution()
    difference = getattr(est, "conversion_difference", None)
    if difference is not None and ok[1:4].all():
        m6, c6 = difference
        L = np.hstack([np.eye(3), -np.eye(3)])
        d, c = L @ m6, L @ c6 @ L.T
        if np.all(np.isfinite(c)) and np.all(np.linalg.eigvalsh(0.5 * (c + c.T)) > 0):
            chi2 = float(d @ np.linalg.solve(c, d))
    return np.where(ok[:10], z[:10], np.nan), chi2


def difference_rls_conversion(model: RobotModel, robot: RobotIdentification, held_out: Sequence[Recording],
                              frame: str, options: PayloadOptions | None = None) -> DifferenceRLSConversion:
    """difference-rls's first moments converted with and without C_a on each held-out unloaded run (true value 0),
    the χ² of their difference (summed over the runs), and the conversion robot_id/model_error.CONVERSION_CRITERION
    chooses."""
    runs = {key: [difference_rls_spurious(model, robot, r, frame, key == WITH_ROBOT_COVARIANCE, options)
                  for r in held_out]
            for key in (WITH_ROBOT_COVARIANCE, DATA_ONLY)}
    spurious = {key: np.array([phi for phi, _ in rows], dtype=float).reshape(-1, 10) for key, rows in runs.items()}
    chi2 = float(sum(c for _, c in runs[WITH_ROBOT_COVARIANCE]))
    return DifferenceRLSConversion.choose(spurious, chi2)


# A drift run needs this many samples per offset it measures (one per joint) before its Newey–West σ means anything:
# the long-run covariance's bandwidth alone reaches tens of samples on real drives.
MIN_DRIFT_SAMPLES = 200
# Each joint must move this share of a drift run's samples in each direction: a joint standing still or moving one
# way leaves its offset collinear with the static (stiction, holding) torque or the Coulomb term, and reads the
# gravity model's error there as drift (the UR10e's static validation poses: −3.2..+5.0 N·m, against −0.3..+0.55
# N·m on its excitations).
MIN_EACH_WAY = 0.15


def offset_change(model: RobotModel, robot: RobotIdentification, unloaded: Recording,
                  options: PayloadOptions | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((n,), (n,), (n,)) N·m: the run's constant friction offsets against robot.yaml's, each joint's ΔB_j fitted
    alone on τ_j − (Y θ̂_a)_j (robot.yaml's whole model, only the offsets free), its Newey–West σ, and the std
    robot.yaml's C_a gives it (θ̂_a's error seen along the offset column: robot_id/offset_spread.py), the run
    conditioned with `options`. PayloadIdError when the run cannot give them: non-finite samples, too few, a joint
    without an offset column."""
    what = f"drift run {unloaded.source or '(unnamed)'}"
    joints = unloaded.joints
    if not all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in (joints.t, joints.q, joints.tau)):
        raise PayloadIdError(f"{what} holds non-finite samples (NaN or inf) in its time, positions or efforts",
                             "give a complete recording of an unloaded run")
    sig = method_signals(unloaded, model, options or PayloadOptions(), robot)
    N = sig.q.shape[0]
    if N < MIN_DRIFT_SAMPLES:
        raise PayloadIdError(f"{what}: {N} samples after conditioning, fewer than the {MIN_DRIFT_SAMPLES} the offsets' "
                             "σ needs", "give a longer unloaded run (tens of seconds)")
    eps = robot.friction.sign_epsilon
    sgn = np.tanh(sig.qd / eps) if eps > 0 else np.sign(sig.qd)
    each_way = np.minimum(np.mean(sgn > 0.5, axis=0), np.mean(sgn < -0.5, axis=0))
    if np.any(each_way < MIN_EACH_WAY):
        j = int(np.argmin(each_way))
        raise PayloadIdError(f"{what}: {model.joint_names[j]} moves each way on only {100 * each_way[j]:.0f} % of the "
                             f"samples (needs {100 * MIN_EACH_WAY:.0f} %): standing still or moving one way, its "
                             "friction offset cannot be told from the static friction and the gravity model's error",
                             "give an unloaded run of an exciting motion, every joint moving both ways (another "
                             "excitation, recorded another time)")
    lay_friction = robot.friction.param_names
    y_a = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    r = sig.tau - y_a @ np.asarray(robot.theta, dtype=float)
    friction_start = y_a.shape[-1] - len(lay_friction)
    offsets, std, identification = np.zeros(model.n), np.zeros(model.n), np.zeros(model.n)
    theta_cov = robot_covariance(robot)
    for j, name in enumerate(model.joint_names):
        col = [i for i, p in enumerate(lay_friction) if p == f"B_{name}"]
        if not col:
            raise PayloadIdError(f"robot.yaml's friction model ({robot.friction.kind}) has no constant offset for "
                                 f"{name}: there is no offset drift to measure",
                                 "identify the robot with a friction model that has offsets (e.g. --friction "
                                 "nonlinear), or leave out the --drift runs")
        c = y_a[:, j, friction_start + col[0]]
        cc = float(c @ c)
        if not cc > 0:
            raise PayloadIdError(f"{what}: {name}'s offset column is zero on this run", "give a run of the arm")
        offsets[j] = float(c @ r[:, j]) / cc
        e = r[:, j] - c * offsets[j]
        scores = (c * e)[:, None]
        lrv = float(serial_correlation.long_run_covariance(scores, serial_correlation.bandwidth(e[:, None]))[0, 0])
        white = float(e @ e) / max(N - 1, 1) * cc
        std[j] = np.sqrt(max(lrv, white)) / cc
        g = c @ y_a[:, j, :] / cc                      # ΔB_j's response to θ̂_a's error
        identification[j] = np.sqrt(max(float(g @ theta_cov @ g), 0.0))
    return offsets, std, identification


def refuse_a_loaded_drift_run(model: RobotModel, robot: RobotIdentification, run: Recording, frame: str,
                              options: PayloadOptions | None = None) -> None:
    """A drift run with a load on the flange is no measure of the offsets' drift: the load's torque projects on the
    offset columns and its residual widens their σ (the real UR10e's loaded 15harm and 01_31 runs as drift runs: the
    shoulder lift's prior std 22.8 N·m against 0.48 from their unloaded twins, difference-rls's mass σ 0.87 -> 2.4 %
    and its CoM withheld). The held-out runs' test (spurious_payload), the load only and at MAX_DRIFT_MASS_SIGMAS: a
    drift run need not determine the inertia. The offsets are free in that fit: a moved offset is the drift
    measured, and with them fixed a planar 2R's joint-1 offset moved 0.05 N·m read as 5 g at 19 σ."""
    phi, std, determined = _payload_fit(model, robot, run, frame, options, offsets_free=True)
    if determined[0] and abs(phi[0]) > MAX_DRIFT_MASS_SIGMAS * std[0]:
        raise PayloadIdError(
            f"drift run {run.source or '(unnamed)'} carries a load: its spurious payload mass {phi[0]:.4g} kg is "
            f"{abs(phi[0]) / std[0]:.0f} σ from zero (σ {std[0]:.3g} kg; the model's error stays within "
            f"{MAX_DRIFT_MASS_SIGMAS:g} σ)",
            "give an unloaded run (nothing on the flange) as --drift-csv-ur/--drift-bag")


def measure_offset_spread(model: RobotModel, robot: RobotIdentification, runs: Sequence[Recording],
                          frame: str | None = None, options: PayloadOptions | None = None) -> OffsetSpread:
    """robot.yaml's friction_offset_drift from held-out unloaded runs (efforts in robot.yaml's torque units,
    conditioned with `options`: the calibration's); a run that carries a load on `frame` (default: the model's payload
    frame) is refused."""
    frame = model.payload_frame(frame)
    pairs = [offset_change(model, robot, r, options) for r in runs]
    for r in runs:
        refuse_a_loaded_drift_run(model, robot, r, frame, options)
    return OffsetSpread(list(model.joint_names), [r.source or f"drift run {i + 1}" for i, r in enumerate(runs)],
                        np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]),
                        identification_std=np.array([p[2] for p in pairs]))
