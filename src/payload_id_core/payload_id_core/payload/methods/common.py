"""What every offline payload method shares: its inputs checked, its signals, its payload rows, the
load-friction solve, the robot identification's share of the covariance, and the finishing call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform, rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode, has_note
from payload_id_core.payload.finish import finish as finish_estimate
from payload_id_core.payload.jacobian import theta_layout
from payload_id_core.payload.linear import LinearSolution
from payload_id_core.payload.load_friction import (
    load_changeable_friction,
)
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.options import SIGNAL_OPTIONS, PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.align import (
    MOTION_VELOCITY_RAD_S,
    SAME_TRAJECTORY_TOL_RAD,
    aligned_pair,
    needs_alignment,
    padded_motion_window,
    stand_in_cutoff,
    trajectory_offset,
)
from payload_id_core.signals.conditioning import Signals, SignalSource, commanded_span, conditioned_signals
from payload_id_core.signals.recording import Recording

# Joint samples must cover the commanded excitation to within this fraction of its duration.
COVERAGE_TOL = 0.02
# Largest joint position difference between the two runs when their motion is the commanded one
# (a recorded command: both runs sample the same points).
SAME_COMMAND_TOL_RAD = 1e-3


def load_friction_on(default: bool, options: PayloadOptions, robot: RobotIdentification | None = None,
                     method: str = "") -> tuple[bool, list[Note]]:
    """Whether the load-dependent Coulomb columns join the fit (options.load_friction when given, else the
    method's `default`: registry.MethodSpec.load_friction_default), and a note when the default was overruled.

    Drive gains identified from a loaded run with a known mass (identify_effort_scale) were fitted
    without these columns: a friction that grows with the load torque and a gain that scales the load
    torque are nearly collinear on such a run, so the gains have absorbed it. Adding the columns again
    moves the mass by the part the gains already explain (real UR10e, 15harm / 01_31, difference-rls:
    +3.0 / +4.7 % with them, +0.05 / -0.07 % without); the default is then off. Gains fitted with a load-dependent
    friction of their own (robot.yaml effort.gain_model chose it: RobotIdentification.gains_absorbed_load_friction
    false) have not absorbed it, and the method's default stands.
    Where robot.yaml records the choice for `method` (measured on held-out loaded runs of known mass,
    payload/load_friction_choice.py), that choice is the default instead of either rule."""
    if options.load_friction is not None:
        return bool(options.load_friction), []
    chosen = None if robot is None or robot.load_friction_choice is None else \
        robot.load_friction_choice.for_method(method)
    if default and chosen is not None:
        return chosen.on, [Note(NoteCode.PAYLOAD_LOAD_FRICTION_CHOSEN,
                                f"load-dependent friction {'on' if chosen.on else 'off'}, as robot.yaml records it "
                                f"for {method} (chosen on held-out loaded runs of known mass: {chosen.reason})")]
    on = default
    if on and robot is not None and robot.gains_absorbed_load_friction:
        return False, [Note(NoteCode.PAYLOAD_LOAD_FRICTION_OFF,
                            "load-dependent friction not modelled: the drive gains were identified from a loaded "
                            "run without it and have absorbed it (load_friction=True to model it anyway)")]
    return on, []


@dataclass
class FrictionChangeSpread:
    """What the fit with the friction's change under load (Δφ_f among the unknowns) says about one without it."""
    outer: np.ndarray                  # (10, 10) d dᵀ, d the two estimates' difference (their common entries)
    with_change_cov: np.ndarray | None  # (10, 10) that fit's covariance; None where it leaves an entry open
    notes: list[Note]

    def applied(self, reported: np.ndarray, metric: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the covariance to report, the projection's metric) of the fit without Δφ_f, from its `reported`
        covariance (each parameter's own Newey–West one) and its weighting `metric` (the fit's covariance).

        Reported: the fit with Δφ_f's covariance plus d dᵀ. The error of the estimate without Δφ_f is that
        fit's error plus d, d measured: the friction's change, which the fit without it leaves in its residuals,
        is not noise, and a Newey–West covariance of those residuals counts it as slow noise (UR10e pairs: the
        khalil-3 mass's variance ×32-42 with it in the residuals, ×13-20 with it fitted; σ 0.63-1.10 % where the
        fit with Δφ_f measures 0.34-0.56 %). Where that fit leaves an entry open, the fallback is the reported
        covariance plus d dᵀ. The metric gets d dᵀ added, as before, so the projected estimate is unchanged."""
        reported = np.array(reported, dtype=float)
        metric = np.array(metric, dtype=float)
        metric[:10, :10] += self.outer
        if self.with_change_cov is None:
            reported[:10, :10] += self.outer
            return reported, metric
        ok = np.isfinite(np.diag(reported)[:10])
        block = reported[:10, :10]
        block[np.ix_(ok, ok)] = (self.with_change_cov + self.outer)[np.ix_(ok, ok)]
        reported[:10, :10] = block
        return reported, metric


def friction_change_spread(z: np.ndarray, ok: np.ndarray, options: PayloadOptions,
                           robot: RobotIdentification | None, assumes_friction_unchanged: bool,
                           with_friction_change: Callable[[PayloadOptions], PayloadEstimate]
                           ) -> FrictionChangeSpread | None:
    """What the fit with Δφ_f says (FrictionChangeSpread) for a fit with the friction assumed unchanged under load
    (one that subtracts an unloaded run of the same trajectory, or khalil-1 on robot.yaml's model); None when the
    friction change was asked for or against (options.friction_change given), or cannot be fitted (no robot
    identification: no friction regressor), or the fit does not make that assumption.

    Loaded minus unloaded on one trajectory cancels the robot model, the lag and the filters; what is left besides
    the payload is the friction's change under load (Xu 2024 §4.3: joint 2's Coulomb level 15.07 → 15.87 N·m), a
    deterministic error. The same fit with Δφ_f among the unknowns (`with_friction_change`, unprojected) measures
    it: the two estimates' difference d. The estimate itself is kept, because the fit with Δφ_f is not better on
    real drives: on the UR10e pairs it moves every mass by −0.3 point (khalil-3 15harm −0.75 → −1.06 %). On
    bench/accuracy.py's cross-trajectory UR10 (friction 3 % higher under load) d is the −0.095 % the friction
    change causes, and seed 0's −3.4σ becomes −2.7σ (its noise draw alone). khalil-1 makes the same assumption on
    robot.yaml's model (issue 29, h98): there the change moved the CoM x by −0.45 mm, 2σ of its white-noise σ on every
    seed (bench/accuracy.py's UR10 over 20 seeds, two of them beyond 3σ, converged and ok)."""
    if options.friction_change is not None or robot is None or not assumes_friction_unchanged:
        return None
    other = with_friction_change(options.with_changes(friction_change=True, project=False, payload_prior=None))
    both = np.asarray(ok[:10], dtype=bool) & np.asarray(other.identifiable, dtype=bool)
    d = np.where(both, np.asarray(z[:10], dtype=float) - other.phi, 0.0)
    mass = float(z[0])
    share = f" ({100 * d[0] / mass:+.2f} % of the mass)" if mass > 0 else ""
    other_cov = np.asarray(other.covariance, dtype=float)
    ok10 = np.asarray(ok[:10], dtype=bool)
    usable = bool(np.all(both[ok10])) and bool(np.all(np.isfinite(other_cov[np.ix_(ok10, ok10)])))
    return FrictionChangeSpread(
        np.outer(d, d), other_cov if usable else None,
        [Note(NoteCode.PAYLOAD_FRICTION_CHANGE_SPREAD,
              f"the same fit with the friction's change under load estimated moves the mass by {-d[0]:+.4g} kg{share}: "
              "σ is that fit's, with the move added (friction_change=True fits it)")])


# -- inputs -------------------------------------------------------------------------------------
def check_robot_matches(model: RobotModel, robot: RobotIdentification) -> None:
    names = list(robot.joint_names)
    if names != list(model.joint_names):
        raise PayloadIdError(f"the robot identification is for joints {names}, the URDF has {model.joint_names}",
                             "use the robot.yaml identified with this URDF (payload-id identify-robot)")
    if robot.urdf_sha256 and robot.urdf_sha256 != model.urdf_sha256:
        raise PayloadIdError("the robot identification was made for another URDF (hash differs)",
                             "re-run payload-id identify-robot with this URDF")


def check_covers_excitation(recording: Recording, what: str = "loaded recording") -> None:
    """A recording cut short (bag stopped early) cannot carry the excitation it was meant to."""
    if not recording.commanded:
        return
    t0, t1 = commanded_span(recording.commanded)
    t = recording.joints.t
    if t.size == 0:
        raise PayloadIdError(f"{what} {recording.source} holds no joint states", "record /joint_states")
    tol = max(COVERAGE_TOL * (t1 - t0), 0.05)
    if t[-1] < t1 - tol or t[0] > t0 + tol:
        covered = max(0.0, min(t[-1], t1) - max(t[0], t0))
        raise PayloadIdError(
            f"{what} {recording.source or ''} covers only {covered:.2f} s of its {t1 - t0:.2f} s commanded excitation "
            f"(joint states from {t[0]:.2f} s to {t[-1]:.2f} s, command from {t0:.2f} s to {t1:.2f} s)",
            "record the whole excitation: start the bag before the trajectory and stop it after the end")


def method_signals(recording: Recording, model: RobotModel, options: PayloadOptions,
                   robot: RobotIdentification | None) -> Signals:
    """The conditioned signals a method fits: commanded motion when the recording holds it, else measured;
    the measured tracking error added and the torques without the gear friction as the robot
    identification's were (signals/tracking.py, robot_id/gear_friction.py; without a robot: tracking error
    added, no gear friction)."""
    kw = options.given(SIGNAL_OPTIONS)
    notes: list[Note] = []
    if "source" not in kw:
        kw["source"] = "commanded" if recording.commanded else "measured"
        if not recording.commanded:
            notes.append(Note(NoteCode.PAYLOAD_MEASURED_SIGNALS,
                              "no commanded trajectory recorded: measured motion (filtered, differentiated) used"))
    sig = conditioned_signals(recording, model.joint_names, **kw,
                              tracking_error=robot.tracking_error if robot is not None else True)
    sig.notes = list(sig.notes) + notes
    if robot is not None:
        sig.tau = robot.gear_corrected(sig.tau, sig.qd)
    if len(sig) < 10:
        raise PayloadIdError(f"{recording.source or 'recording'} has only {len(sig)} usable samples",
                             "record a longer excitation")
    return sig


def moving_rows(sig: Signals) -> tuple[Signals, int]:
    """The samples where the arm moves (some joint faster than signals.align.MOTION_VELOCITY_RAD_S, the speed
    that says an excitation is playing), and how many at rest were left out.

    At rest a drive's static friction holds the arm with any torque within its breakaway level, set by how the
    arm came to rest, not by the state: no friction model of q̇ describes it (sgn q̇ of a joint at rest is its
    noise's). A fit that frees the gravity parameters (khalil-2's re-identification of the loaded robot) takes
    that hold as gravity where a run rests long at one pose: the real UR10e 15harm loaded run rests 10 s at its
    end pose (18 % of its samples, its unloaded twin 3 s), and khalil-2's mass moved from −0.9 % to −2.5 % with
    those samples (01_31 and 14harm, rests of 2-4 s: within 0.1 point either way)."""
    moving = np.max(np.abs(sig.qd), axis=1) > MOTION_VELOCITY_RAD_S
    if moving.all():
        return sig, 0
    if np.count_nonzero(moving) < 10:
        raise PayloadIdError(f"{len(sig)} samples of which only {int(np.count_nonzero(moving))} in motion",
                             "record the excitation: the arm must move")
    return sig.rows(moving), int(np.count_nonzero(~moving))


def motion_duration(sig: Signals) -> float:
    """Seconds of motion the signals span (what the offline methods report as convergence time)."""
    return float(sig.t[-1] - sig.t[0] + (np.median(np.diff(sig.t)) if sig.t.size > 1 else 0.0))


def aligned_runs(loaded: Recording, unloaded: Recording | None) -> tuple[Recording, Recording | None, dict]:
    """The loaded and unloaded runs as a method that subtracts them sample by sample (registry.MethodSpec.
    same_trajectory) should receive them, and the options that go with them.

    When nothing recorded their time base (stand-in
    commands, e.g. UR CSV files) while they start or last differently, the loaded run is aligned on the
    unloaded one and both are resampled on the common trajectory time (signals.align; the loaded run
    then carries a signals.runs_aligned note); their motion is then their command, so the options say
    delay 0 (estimating it would find rounding noise, and a sample dropped at one end of one run only
    would shift it by a whole sample against the other). Otherwise both are returned unchanged with no
    options: a recorded command fixes the time base itself. Refuses two different trajectories."""
    if unloaded is None or not needs_alignment(unloaded, loaded):
        return loaded, unloaded, {}
    pair = aligned_pair(unloaded, loaded)
    return pair.loaded, pair.unloaded, {"delay": 0.0}


def same_trajectory_tolerance(loaded_sig: Signals, unloaded_sig: Signals) -> float:
    """Position tolerance (rad) for "same trajectory": tight when both motions are a recorded command,
    the measured motion's (tracking differs with the load) when either is measured or stands in for one."""
    measured = any(sig.source != SignalSource.COMMANDED or has_note(sig.notes, NoteCode.SIGNALS_MEASURED_AS_COMMANDED)
                   for sig in (loaded_sig, unloaded_sig))
    return SAME_TRAJECTORY_TOL_RAD if measured else SAME_COMMAND_TOL_RAD


def trajectory_time(sig: Signals) -> np.ndarray:
    """Seconds into the trajectory of each sample: since the command's start, less the command-to-motion delay,
    with a recorded command; since the first sample without one. The first kept sample is not the start: the
    delay is estimated per run, and under a load it came out 1.55 ms where the unloaded run's was 2.0 ms on
    the clean cell, so one run kept the sample at 0.502 s and the other began at 0.504 s, and a comparison
    sample by sample was one sample (4.7 mrad) apart."""
    if sig.command_start is None:
        return sig.t - sig.t[0]
    return sig.t - sig.delay_used - sig.command_start


def shared_trajectory_slots(unloaded_sig: Signals, loaded_sig: Signals, unloaded: Recording,
                            loaded: Recording) -> np.ndarray | None:
    """The slot on one trajectory clock of every sample of the stacked [unloaded; loaded] signals when the two runs
    are one trajectory (LinearSolution's time_slots: samples at the same point of it share one), else None.

    The robot model's error is a function of the motion: two runs of one trajectory carry it at the same points
    of it, their residuals there as correlated as neighbouring samples of one run. The runs are put on one clock
    as the methods that subtract them are (trajectory_time; runs without a recorded time base, a UR CSV's
    stand-in command: the clock offset fitted on the joint positions, signals.align.trajectory_offset) and judged
    on their commanded positions there (same_trajectory_tolerance, over at least half the loaded run); runs of
    different trajectories get None (each run its own time axis, as before)."""
    t_a, t_b = trajectory_time(unloaded_sig), trajectory_time(loaded_sig)
    if stand_in_cutoff(unloaded) is not None and stand_in_cutoff(loaded) is not None:
        try:
            offset = trajectory_offset(unloaded, loaded, padded_motion_window(unloaded)).offset_s
        except PayloadIdError:
            return None
        t_a, t_b = unloaded_sig.t - unloaded_sig.delay_used, loaded_sig.t - loaded_sig.delay_used - offset
    inside = (t_b >= t_a[0]) & (t_b <= t_a[-1])
    if np.count_nonzero(inside) < 0.5 * t_b.size or t_a.size < 2:
        return None
    q_a = unloaded_sig.commanded_positions
    q_at_b = np.column_stack([np.interp(t_b[inside], t_a, q_a[:, j]) for j in range(q_a.shape[1])])
    if float(np.max(np.abs(q_at_b - loaded_sig.commanded_positions[inside]))) > \
            same_trajectory_tolerance(loaded_sig, unloaded_sig):
        return None
    step = float(np.median(np.diff(loaded_sig.t)))
    start = min(float(t_a[0]), float(t_b[0]))
    return np.rint((np.concatenate([t_a, t_b]) - start) / step).astype(int)


def same_trajectory_torques(model: RobotModel, loaded_sig: Signals, unloaded: Recording, options: PayloadOptions,
                            method: PayloadMethod, robot: RobotIdentification | None) -> np.ndarray:
    """Unloaded torques at the loaded samples' trajectory times; refuses another trajectory.

    Both runs are put on the time of their own trajectory start (the first commanded point, or the
    first sample when nothing was commanded) and their motions compared sample by sample.
    """
    check_covers_excitation(unloaded, "unloaded recording")
    un = method_signals(unloaded, model, options.with_changes(source=loaded_sig.source), robot)
    t_l, t_u = trajectory_time(loaded_sig), trajectory_time(un)
    tol_rad = options.same_trajectory_tol_rad
    tol = float(tol_rad if tol_rad is not None else same_trajectory_tolerance(loaded_sig, un))
    dur_l, dur_u = t_l[-1], t_u[-1]
    if abs(dur_l - dur_u) > max(0.02 * dur_l, 0.05):
        raise PayloadIdError(f"{method} needs the unloaded run on the same trajectory, but it lasts {dur_u:.2f} s "
                             f"and the loaded one {dur_l:.2f} s",
                             "replay the same trajectory without payload, or use khalil-4 or difference-rls")
    inside = t_l <= dur_u
    # The commands are compared: the measured tracking error in q (signals/tracking.py) differs between the
    # runs with the load (24 mrad at a wrist on the clean cell) on the one trajectory.
    q_cmd_u, q_cmd_l = un.commanded_positions, loaded_sig.commanded_positions
    q_u = np.column_stack([np.interp(t_l, t_u, q_cmd_u[:, j]) for j in range(model.n)])
    dev = float(np.max(np.abs(q_u[inside] - q_cmd_l[inside])))
    if dev > tol:
        raise PayloadIdError(f"{method} needs the unloaded run on the same trajectory, but the two motions differ by "
                             f"up to {dev:.3g} rad", "replay the same trajectory without payload, or use khalil-4 or "
                             "difference-rls")
    return np.column_stack([np.interp(t_l, t_u, un.tau[:, j]) for j in range(model.n)])


# -- the fit ------------------------------------------------------------------------------------
@overload
def payload_rows(model: RobotModel, robot: RobotIdentification, frame: str, sig: Signals,
                 friction_change: bool) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def payload_rows(model: RobotModel, robot: None, frame: str, sig: Signals,
                 friction_change: bool) -> tuple[np.ndarray, None]: ...
def payload_rows(model: RobotModel, robot: RobotIdentification | None, frame: str, sig: Signals,
                 friction_change: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """W_L (N, n, 10) [+ the friction change's columns: those a load can change, load_friction.load_changeable_friction]
    and the robot's full regressor (N, n, p)."""
    y_rb = rigid_body_regressor(model, sig.q, sig.qd, sig.qdd)
    joint, X = payload_transform(model, frame)
    w_l = y_rb[..., 10 * (joint - 1):10 * joint] @ X
    if robot is None:
        if friction_change:
            raise TypeError("the friction change columns need the robot identification's regressor")
        return w_l, None
    y_a = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    if friction_change:
        lay = theta_layout(robot)
        changeable = np.flatnonzero(load_changeable_friction(robot.friction))
        w_l = np.concatenate([w_l, y_a[..., lay.friction][..., changeable]], axis=-1)
    return w_l, y_a


def robot_covariance(robot: RobotIdentification) -> np.ndarray:
    """The robot identification's covariance of θ_a, with the entries it left undetermined at 0."""
    cov = np.asarray(robot.cov, dtype=float)
    return np.where(np.isfinite(cov), cov, 0.0)


def robot_uncertainty(robot: RobotIdentification, options: PayloadOptions) -> np.ndarray | None:
    """cov(θ_a) when it is to enter the payload's covariance (include_robot_uncertainty), else None."""
    return robot_covariance(robot) if options.include_robot_uncertainty else None


def robot_sensitivity_cov(W: np.ndarray, sigma: np.ndarray, y_a: np.ndarray, sol: LinearSolution,
                          robot_cov: np.ndarray) -> np.ndarray:
    """Covariance that θ_a's uncertainty adds to x = W^# (τ − Y_a θ_a): S C_a Sᵀ, S = (WᵀΣ⁻¹W)^# WᵀΣ⁻¹ Y_a."""
    N, n, u = W.shape
    w = 1.0 / sigma
    Ww = (W * w[None, :, None]).reshape(N * n, u)
    Yw = (y_a * w[None, :, None]).reshape(N * n, -1)
    ok = sol.identifiable
    A = Ww[:, ok]
    S = np.zeros((u, Yw.shape[1]))
    S[ok] = np.linalg.lstsq(A, Yw, rcond=None)[0]
    return S @ robot_cov @ S.T


def finish(frame: str, method: PayloadMethod, z: np.ndarray, cov: np.ndarray, ok: np.ndarray,
           notes: Sequence[Note | str], options: PayloadOptions, **kw) -> PayloadEstimate:
    """finish.finish with the priors (φ for undetermined entries, the box and known mass) and the projection switch
    the options carry."""
    return finish_estimate(frame, method.value, z, cov, ok, notes, prior=options.prior,
                           payload_prior=options.payload_prior, project=options.project, **kw)


