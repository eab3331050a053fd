"""The data path of one Identify goal, free of ROS: samples in, payload estimate out.

The payload_estimator node hands over the commanded trajectories it heard and the measured joint states in batches.
This class aligns them by time the way the controller executed them (signals.commanded.sample_commanded:
commanded q, q̇, q̈ at each joint-state stamp less the command-to-motion delay, Xu 2024 §3.1 uses the
commanded signals), keeps only the excitation itself (not the move to the start pose), feeds the online
method in blocks,
and checks the inputs (NaN, stale stamps, a controller that does not move). At the end (finish) it makes the
final estimate, judged against robot.yaml by the witnesses identify-payload runs (against_robot.py) on the samples
the estimator was fed, computes the torque RMSE with the unloaded model and with the identified payload added
(residuals.py), and calibrates the wrist F/T sensor on the run's readings (ft.identify_ft) for compensation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError, parse_choice
from payload_id_core.ft.api import identify_ft
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot import JudgedRun, judge_against_robot
from payload_id_core.payload.finish import judge_quality, make_physical
from payload_id_core.payload.goal_outcome import FinishedGoal, GoalOutcome
from payload_id_core.payload.mass_limit import MassLimit
from payload_id_core.payload.methods import online_spec, prepared_options
from payload_id_core.payload.methods.online import (
    covariance_extra,
    judge_moments_on,
    online_estimator,
    with_covariance_extra,
)
from payload_id_core.payload.online.base import ConvergenceRule
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.payload.residuals import torque_residuals
from payload_id_core.payload_estimate import PayloadEstimate, readable_vector
from payload_id_core.robot_id.drive_gains import DriveGains, resolve_drive_gains
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.conditioning import Signals
from payload_id_core.signals.delay import estimate_delay
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples
from payload_id_core.signals.stamp_holes import Hole, StampHoles, WindowCoverage, describe_holes
from payload_id_core.signals.tracking import MAX_TRACKING_ERROR_RAD, TrackingErrorStream, gap_seconds, window_samples

MATCH_TOL = 0.05           # s: a commanded trajectory this close to the excitation's length is the excitation
NO_MOTION_AFTER = 1.0      # s into the excitation without measured motion -> the controller does not respond
NO_MOTION_RAD = 2e-3       # rad the arm must have moved by then
TRACKING_LIMIT = MAX_TRACKING_ERROR_RAD   # rad between commanded and measured: the offline pipeline's bound too
DELAY_FROM = 1.0           # s of the excitation's joint states the command-to-motion delay is estimated from
GOAL_RUN = "the identify goal"   # how the robot.yaml witnesses' reasons name the run (against_robot.py)
MIN_JUDGED = 10            # samples below which the witnesses judge nothing (identify-payload refuses such a run)


def goal_options(convergence: str = "", forgetting: float = 0.0, noise_std: Sequence[float] = (),
                 n_joints: int | None = None, prior: PayloadPrior | None = None) -> PayloadOptions:
    """The online estimator's options an Identify goal sets, checked once here at its acceptance: empty / 0 is
    "not given" (the estimator's default); an unknown rule, a forgetting factor outside (0, 1] or a noise that is
    not one positive value or one per joint is bad input naming the goal field. `prior`: what is known of the
    payload (goal_prior), applied to the goal's final estimate."""
    given: dict = {} if prior is None else {"payload_prior": prior}
    if convergence:
        given["convergence"] = parse_choice(ConvergenceRule, convergence, "convergence rule")
    if forgetting != 0.0:
        if not (math.isfinite(forgetting) and 0.0 < forgetting <= 1.0):
            raise PayloadIdError(f"forgetting {forgetting!r} is not a forgetting factor",
                                 "give λ in (0, 1] (1: none), or 0 for the default")
        given["forgetting"] = float(forgetting)
    noise = [float(v) for v in noise_std]
    if noise:
        if not all(math.isfinite(v) and v > 0 for v in noise) or (
                len(noise) != 1 and n_joints is not None and len(noise) != n_joints):
            raise PayloadIdError(f"noise_std {noise} is not one positive N·m value or one per joint",
                                 f"give one value or {n_joints or 'one per joint'} positive values, or none for the "
                                 "default")
        given["noise_std"] = noise[0] if len(noise) == 1 else noise
    return PayloadOptions(**given)


def goal_prior(bounding_box: Sequence[float] = (), known_mass: float = 0.0, known_mass_std: float = 0.0,
               fallback: PayloadPrior | None = None,
               rated_payload: float | MassLimit | None = None) -> PayloadPrior | None:
    """The prior an Identify goal's fields give (bounding_box, known_mass, known_mass_std; empty / 0 = not given),
    each field not given taken from `fallback` (the node's parameters); bad values are refused (PayloadIdError,
    naming the field) before anything moves."""
    box = [float(v) for v in bounding_box]
    if not box and fallback is not None and fallback.has_box:
        box = [*fallback.lo, *fallback.hi]
    mass: float | None = float(known_mass) if known_mass != 0.0 else None
    std: float | None = float(known_mass_std) if known_mass_std != 0.0 else None
    if mass is None and fallback is not None and fallback.known_mass is not None:
        mass, std = fallback.known_mass, std if std is not None else fallback.known_mass_std
    if not box and mass is None and std is None:
        return None
    return PayloadPrior.checked(box or None, mass, std, rated_payload)


@dataclass
class IdentificationRun:
    model: RobotModel
    robot: RobotIdentification       # of the unloaded robot
    frame: str
    method: str
    excitation_duration: float       # s, as the player will publish it
    max_duration: float = 0.0        # s of motion at most (0: the whole excitation)
    effort_scale: np.ndarray | None = None    # gains given by the caller (node parameter); None: robot.yaml's
    effort_unit: EffortUnit | str = EffortUnit.UNKNOWN   # what the driver's efforts are, when declared
    # The online estimator's options (PayloadOptions fields it reads: convergence, forgetting, noise_std, ...);
    # the goal's, checked against the method at acceptance. Not given: the estimator's defaults.
    options: PayloadOptions = field(default_factory=PayloadOptions)
    # The drive gains resolved once at the edge (the node, at start: resolve_drive_gains); None: resolved here
    # from effort_scale and effort_unit.
    drive_gains: DriveGains | None = None
    commanded: list[CommandedTrajectory] = field(default_factory=list)
    window: tuple[float, float] | None = None
    samples: int = 0
    _t: list = field(default_factory=list)
    _q: list = field(default_factory=list)
    _qd: list = field(default_factory=list)
    _qdd: list = field(default_factory=list)
    _tau: list = field(default_factory=list)
    _qm: list = field(default_factory=list)
    _q_meas_first: np.ndarray | None = None
    _moved: float = 0.0
    history: list = field(default_factory=list)   # (elapsed, readable value (10,), readable std (10,))
    delay: float | None = None       # s, command-to-motion delay (estimated from the first DELAY_FROM s)
    delay_note: Note | None = None
    _pending: list = field(default_factory=list)   # (t, q_meas, tau) received before the delay is known
    _model_notes: list = field(default_factory=list)   # why the payload model differs from the method's default
    # The measured tracking error smoothed as identify-payload smooths it (signals/tracking.py), when robot.yaml's
    # parameters were fitted with it; samples reach the estimator its half window after they arrive.
    _tracking: TrackingErrorStream | None = None
    _wrenches: list = field(default_factory=list)   # (t (N,), wrench (N, 6)) of the F/T sensor, as received
    # Stretches of joint states that never arrived (a subscriber queue overwritten in a stall, a driver's pause),
    # found from the stamps of those that did: reported with the goal's input drops (lost_joint_states).
    stamp_holes: StampHoles = field(default_factory=StampHoles)

    def __post_init__(self) -> None:
        spec = online_spec(self.method)
        # NaN compares false with everything: without this a NaN or negative limit read as "the whole trajectory".
        if not (math.isfinite(self.max_duration) and self.max_duration >= 0.0):
            raise PayloadIdError(f"max_duration {self.max_duration} is not a duration",
                                 "give 0 (the whole trajectory) or a positive number of seconds")
        # Built as identify-payload builds it (methods/online.online_estimator, from the same options): the robot
        # identification's covariance in σ, and no load-dependent friction columns when the gains were identified
        # with a load (they absorbed it; with them the real UR10e pairs' difference-rls mass is +3.0 / +4.7 %,
        # without +0.1 / −0.1 %). history_every=0: the node samples the estimate itself at the feedback rate.
        options, self._model_notes = prepared_options(spec, self.options, self.robot)
        self.payload_method = spec.method
        self.online = online_estimator(spec.method, self.model, self.robot, self.frame,
                                       options.with_changes(history_every=0))
        # The same rule as identify-payload's (resolve_drive_gains): robot.yaml's gains by default, a
        # conflicting parameter or currents without gains refused before anything moves.
        self.gains: DriveGains = self.drive_gains or resolve_drive_gains(
            self.effort_unit, self.robot, self.effort_scale, self.model.n,
            recording_source="the driver's joint states", given_name="the effort_scale parameter")
        self.effort_scale = self.gains.scale

    # -- inputs -----------------------------------------------------------------------------------
    def add_commanded(self, cmd: CommandedTrajectory) -> None:
        """A JointTrajectory heard on the controller topic; the one as long as the excitation opens the window."""
        self.commanded.append(cmd)
        if self.window is None and abs(float(cmd.time_from_start[-1]) - self.excitation_duration) < MATCH_TOL:
            length = float(cmd.time_from_start[-1])
            if self.max_duration > 0:
                length = min(length, self.max_duration)
            self.window = (cmd.start_time, cmd.start_time + length)

    def end_window(self, t: float) -> None:
        """The goal ends the motion early (converged, cancelled): samples after `t` are the decelerating stop,
        where the arm lags the command most; they would only bias the estimate, so they are left out."""
        if self.window is not None:
            self.window = (self.window[0], max(self.window[0], min(self.window[1], t)))
            for k, (ts, qm, tau) in enumerate(self._pending):
                keep = ts <= self.window[1]
                self._pending[k] = (ts[keep], qm[keep], tau[keep])
            self._pending = [p for p in self._pending if p[0].size]
            self._settle(force=True)

    def feed(self, t: np.ndarray, q_meas: np.ndarray, effort: np.ndarray) -> int:
        """Joint states (model order) received so far; returns how many were used for identification."""
        if t.size == 0:
            return 0
        bad = ~(np.all(np.isfinite(q_meas), axis=1) & np.all(np.isfinite(effort), axis=1) & np.isfinite(t))
        if bad.any():
            raise PayloadIdError(f"{int(bad.sum())} joint states carry NaN or infinite positions or efforts",
                                 "check the robot driver; the identification needs clean samples")
        if self.window is None:
            return 0
        self.stamp_holes.push(t)
        t0, t1 = self.window
        m = (t >= t0) & (t <= t1)
        if not m.any():
            return 0
        ts, qm, tau = t[m], q_meas[m], effort[m] * self.effort_scale
        q, _, _ = sample_commanded(self.commanded, ts, self.model.joint_names)
        if self._q_meas_first is None:
            self._q_meas_first = qm[0].copy()
        self._moved = max(self._moved, float(np.max(np.abs(qm - self._q_meas_first))))
        err = np.abs(qm - q)
        tracking = float(err.max())
        if tracking > TRACKING_LIMIT:
            k, j = np.unravel_index(np.argmax(err), err.shape)
            raise PayloadIdError(f"the measured joint positions are {tracking:.3f} rad away from the commanded ones "
                                 f"({self.model.joint_names[j]}, {ts[k] - t0:.2f} s into the excitation; "
                                 f"{len(self.commanded)} commanded trajectories heard)",
                                 "the controller does not follow the trajectory: check that it is active and "
                                 "listening on the trajectory topic")
        self.samples += ts.size
        self._pending.append((ts, qm, tau))
        self._settle(force=False)
        return int(ts.size)

    def lost_joint_states(self, holes: list[Hole] | None = None) -> str:
        """What the excitation window lost of its joint states (`holes`, default all found so far), '' if nothing:
        'lost 0.62 s of joint states (309 samples) at 3.10 s of motion'.

        A lost stretch does not make the rest wrong, so the goal goes on and may converge: each row of the
        identification is the inverse dynamics at one instant (τ = Y(q, q̇, q̈)·θ, with q, q̇, q̈ the command's,
        analytic at every stamp), valid on its own whatever came before it; the only signal derived across
        samples, the smoothed tracking error, is never fitted across a hole (signals/tracking.py: the same
        threshold). The information matrix and so σ hold only the rows that arrived: the lost stretch costs
        precision, which σ shows, never accuracy. It is said, not refused."""
        if self.window is None:
            return ""
        return describe_holes(self.stamp_holes.holes if holes is None else holes, *self.window)

    def joint_state_coverage(self) -> WindowCoverage | None:
        """What the excitation window received of its joint states (None: no window yet): the samples used and the
        stretches lost, for the result file (a reader, bench/cell.py among them, tells a run that got the whole
        motion from one that lost part of it without parsing the note)."""
        if self.window is None:
            return None
        # The samples identified: those fed after an early end (end_window) are not.
        used = sum(t.size for t in self._t)
        return WindowCoverage.of(self.stamp_holes.holes, *self.window, received=used, period=self.stamp_holes.period)

    def add_wrenches(self, t: np.ndarray, wrench: np.ndarray) -> None:
        """F/T sensor readings (t (N,), [F, T] (N, 6)) received during the goal: the sensor is calibrated on those
        of the excitation window when the goal ends."""
        self._wrenches.append((t, wrench))

    def _settle(self, force: bool) -> None:
        """Feed the joint states waiting for the delay once it is known: estimated (signals.delay, as
        conditioned_signals does for recordings) from the first DELAY_FROM s of the excitation, or from what
        there is when the window is complete or `force`. Without it every torque is paired with the command
        ~2 ms early (the simulated UR10's controller delay): on the cell that put difference-rls's mass
        −1.4 % off (median, 10 seeds) at 3 s of motion instead of −0.6 %, and only 5 % of 20 seeds within
        1 % when it declared convergence (bench/payload.py cell_convergence_no_delay_*)."""
        if not self._pending or self.window is None:
            return
        if self.delay is None:
            t = np.concatenate([p[0] for p in self._pending])
            complete = t[-1] >= self.window[1] - 1e-9
            if not (force or complete or t[-1] - t[0] >= DELAY_FROM):
                return
            qm = np.concatenate([p[1] for p in self._pending])
            q_cmd, _, _ = sample_commanded(self.commanded, t, self.model.joint_names)
            try:
                self.delay = float(estimate_delay(t, qm, t, q_cmd))
                self.delay_note = Note(NoteCode.SIGNALS_DELAY_ESTIMATED,
                                       f"command-to-motion delay estimated: {self.delay * 1e3:.2f} ms")
            except PayloadIdError as err:
                self.delay = 0.0
                self.delay_note = Note(NoteCode.SIGNALS_DELAY_NOT_ESTIMATED,
                                       f"delay not estimated ({err.problem}); 0 used")
        pending, self._pending = self._pending, []
        if self.robot.tracking_error and self._tracking is None:
            first = np.concatenate([p[0] for p in pending])
            self._tracking = TrackingErrorStream(window_samples(first), gap_seconds(first))
        for ts, qm, tau in pending:
            shifted = ts - self.delay
            keep = shifted >= self.window[0]        # the command had not started yet
            if not keep.any():
                continue
            ts, qm, tau, shifted = ts[keep], qm[keep], tau[keep], shifted[keep]
            q, qd, qdd = sample_commanded(self.commanded, shifted, self.model.joint_names)
            if self._tracking is None:
                self._identify(ts, q, qd, qdd, tau, qm)
            else:
                self._identify_tracked(self._tracking.push(ts, qm - q, q, qd, qdd, tau, qm))

    def _identify_tracked(self, ready) -> None:
        if ready is not None:
            ts, e, ed, edd, q, qd, qdd, tau, qm = ready
            self._identify(ts, q + e, qd + ed, qdd + edd, tau, qm)

    def _identify(self, ts, q, qd, qdd, tau, qm) -> None:
        tau = self.robot.gear_corrected(tau, qd)          # as the robot's parameters were fitted
        self.online.update_batch(ts, q, qd, qdd, tau)     # block RLS: the same state as per-sample updates
        for lst, arr in ((self._t, ts), (self._q, q), (self._qd, qd), (self._qdd, qdd), (self._tau, tau),
                         (self._qm, qm)):
            lst.append(arr)

    def flush(self) -> None:
        """Feed every joint state received, estimating the delay from what there is if still unknown: the end
        of the data (the last joint states wait for no later ones to smooth the tracking error over)."""
        self._settle(force=True)
        if self._tracking is not None and self.delay is not None:
            self._identify_tracked(self._tracking.finish())

    def check_motion(self, now: float) -> None:
        """Raise when the excitation should have moved the arm by now but the joint states did not change."""
        if self.window is None or now < self.window[0] + NO_MOTION_AFTER:
            return
        if self.samples == 0:
            raise PayloadIdError(f"no joint states during the first {NO_MOTION_AFTER:g} s of the excitation",
                                 "the robot driver stopped publishing /joint_states")
        if self._moved < NO_MOTION_RAD:
            raise PayloadIdError(f"the arm has not moved {NO_MOTION_AFTER:g} s into the excitation "
                                 f"(at most {self._moved:.4f} rad)",
                                 "the controller does not respond: check that it is active and listens on the "
                                 "trajectory topic")

    # -- progress ---------------------------------------------------------------------------------
    def elapsed(self, now: float) -> float:
        if self.window is None:
            return 0.0
        return float(min(max(now - self.window[0], 0.0), self.window[1] - self.window[0]))

    def finished(self, now: float) -> bool:
        return self.window is not None and now > self.window[1]

    @property
    def converged(self) -> bool:
        return bool(self.online.converged)

    def estimate(self) -> PayloadEstimate | None:
        """The running estimate a goal's feedback shows (None before the first sample), its covariance the one the
        convergence rule last judged (OnlineEstimator.judged_covariance: with the serially correlated and model-error
        part), not the estimator's own alone: shown at the declaration with its own σ, the simulated cell's CoM was
        beyond 3σ on 38 of 420 runs (docs/design.md, h188)."""
        est = self._online_estimate()
        if est is not None:
            est.covariance = self.online.judged_covariance(est.covariance)
        return est

    def _online_estimate(self) -> PayloadEstimate | None:
        """The estimator's estimate with the session's notes, its own covariance (finish adds the extra on every
        sample)."""
        if self.online.samples == 0:
            return None
        est = self.online.estimate()
        est.notes.extend(Note.from_any(n) for n in (*self.gains.notes, *self._model_notes))
        if self.delay_note is not None:
            est.notes.append(self.delay_note)
        return est

    def record_history(self, elapsed: float, est: PayloadEstimate) -> None:
        self.history.append((elapsed, readable_vector(est.phi), est.readable_std()))

    # -- results ----------------------------------------------------------------------------------
    def arrays(self):
        if not self._t:
            return None
        return tuple(np.concatenate(x) for x in (self._t, self._q, self._qd, self._qdd, self._tau))

    def judged_run(self) -> JudgedRun | None:
        """The samples the online estimator was fed, as robot.yaml's witnesses judge them (against_robot.py): the
        commanded motion at each joint-state stamp less the delay (with the tracking error when robot.yaml was fitted
        with it), the efforts through the drive gains and gear-corrected, at the joint states' rate and unfiltered, as
        the estimate used them. None with fewer than MIN_JUDGED."""
        data = self.arrays()
        if data is None or data[0].size < MIN_JUDGED:
            return None
        t, q, qd, qdd, tau = data
        sig = Signals(t, q, qd, qdd, tau, None, self.delay or 0.0, joint_names=list(self.model.joint_names))
        return JudgedRun(self.model, self.robot, sig, self.frame, self.payload_method, self.online.n_lf > 0, GOAL_RUN)

    def with_online_covariance_extra(self, est: PayloadEstimate, run: JudgedRun | None = None
                                     ) -> tuple[PayloadEstimate, np.ndarray | None]:
        """(`est` with the covariance serially correlated residuals and the robot model's unmodelled gear friction
        add to the recursive estimator's (methods.common.online_covariance_extra, on every sample the run fed), the
        projection's metric when it is not that covariance: the offsets' recorded drift is in σ only). `run`: the
        judged_run, whose robot.yaml residual (on the same samples) the witnesses read too: made once."""
        data = self.arrays()
        if data is None or data[0].size < 50:
            return est, None
        _, q, qd, qdd, tau = data
        extra, extra_notes, drift = covariance_extra(self.online, q, qd, qdd, tau,
                                                     None if run is None else run.residual)
        metric = with_covariance_extra(est.covariance, extra)
        est.covariance = metric if drift is None else with_covariance_extra(metric, drift)
        est.notes.extend(extra_notes)
        return est, None if drift is None else metric

    def torque_rmse(self, est: PayloadEstimate | None) -> tuple[np.ndarray, np.ndarray]:
        """Per-joint RMSE of the measured torque against the unloaded model, and with the payload added."""
        data = self.arrays()
        if data is None:
            nan = np.full(self.model.n, np.nan)
            return nan, nan
        t, q, qd, qdd, tau = data
        res = torque_residuals(self.model, self.robot, self.frame, None if est is None else est.phi, t, q, qd, qdd, tau)
        return res.rmse_before, res.rmse_after

    def finish(self, now: float, outcome: GoalOutcome, sensor_frame: str | None = None,
               input_drops: str = "", interruption: str = "") -> FinishedGoal | None:
        """The goal's final numbers from every sample fed (the motion has stopped, `now`): the estimate made
        consistent and judged (finalize) with the covariance the online rule leaves out, the torque residuals,
        and, unless the goal was cut short (cancelled, interrupted), the F/T sensor calibrated on the window's
        wrenches (a failed calibration is reported in `ft_problem`, not raised). None: cut short before the
        excitation started; a goal that ended otherwise without samples raises. `interruption`: why an
        INTERRUPTED goal ended."""
        self.flush()                       # joint states still waiting for the delay estimate (a short window)
        data = self.arrays()
        if data is not None:
            judge_moments_on(self.online, *data[1:])
        est = self._online_estimate()
        cancelled = outcome is GoalOutcome.CANCELLED
        if est is None:
            if outcome.partial:
                return None
            raise PayloadIdError("no samples were identified", "check the joint states and trajectory topics")
        judged = self.judged_run()
        est, metric = self.with_online_covariance_extra(est, judged)
        est = finalize(est, self.robot, self.options.payload_prior, judged, metric)
        if input_drops:
            est.notes.append(Note(NoteCode.NODE_INPUTS_DROPPED, input_drops))
        lost = self.lost_joint_states()
        if lost:      # its own code: a gap in the data, not malformed traffic; the result message says both
            est.notes.append(Note(NoteCode.NODE_JOINT_STATES_LOST, lost))
            input_drops = "; ".join(part for part in (input_drops, lost) if part)
        before, after = self.torque_rmse(est)
        calibration, problem = None, ""
        # A cut-short run's wrenches cover only part of the excitation: too little to calibrate the sensor.
        if not outcome.partial and sensor_frame and self._wrenches and self.window is not None:
            try:
                calibration = self.ft_calibration(sensor_frame)
            except PayloadIdError as err:
                problem = str(err)
        played = self.elapsed(now)
        if cancelled:
            est.notes.append(Note(NoteCode.GOAL_CANCELLED,
                                  f"partial: the goal was cancelled after {played:.2f} s of motion"))
        elif outcome is GoalOutcome.INTERRUPTED:
            est.notes.append(Note(NoteCode.GOAL_INTERRUPTED,
                                  f"partial: {interruption or 'interrupted'} after {played:.2f} s of motion"))
        # A suspect estimate is not converged whatever the online rule said (finish.judge_quality).
        return FinishedGoal(outcome, est, played, self.converged and est.converged, before, after,
                            calibration, problem, input_drops, interruption, self.joint_state_coverage())

    def ft_calibration(self, sensor_frame: str) -> FtParameters:
        """FtParameters for compensation from the wrist sensor's own readings during the excitation window:
        payload in the sensor frame, offsets and base tilt (Duan 2022 §2 + Atkeson 1986 Newton–Euler,
        ft.identify_ft).

        The joint-torque estimate is what the goal reports; the sensor is calibrated on its own data because
        a joint-torque estimate off by 1-2 % of the mass would leave ~1 N in the compensated force."""
        data = self.arrays()
        t_w = np.concatenate([t for t, _ in self._wrenches]) if self._wrenches else np.zeros(0)
        wrench = np.concatenate([w for _, w in self._wrenches]) if self._wrenches else np.zeros((0, 6))
        if self.window is not None:
            keep = (t_w >= self.window[0]) & (t_w <= self.window[1])
            t_w, wrench = t_w[keep], wrench[keep]
        if data is None or t_w.size < 50:
            raise PayloadIdError("too few F/T readings during the excitation to calibrate the sensor",
                                 "check the wrench topic")
        t, _, _, _, tau = data
        joints = JointSamples(t, list(self.model.joint_names), np.concatenate(self._qm), None, tau)
        rec = Recording(joints=joints, commanded=list(self.commanded),
                        wrench=WrenchSamples(t_w, sensor_frame, wrench[:, :3], wrench[:, 3:]),
                        source="identify goal")
        return identify_ft(self.model, rec, self.frame, sensor_frame, source="commanded", delay=0.0,
                           project=False).params


def finalize(est: PayloadEstimate, robot: RobotIdentification | None = None,
             prior: PayloadPrior | None = None, run: JudgedRun | None = None,
             metric: np.ndarray | None = None) -> PayloadEstimate:
    """The goal's final estimate, finished in identify-payload's order: with what is known of the payload (`prior`,
    priors.apply_prior, as finish.finish applies it), physically consistent (finish.make_physical), judged
    against robot.yaml on the run it came from (`run`: against_robot.judge_against_robot, the witnesses
    methods.estimate_payload runs), then its quality (finish.judge_quality; with `robot`, also the robot
    identification's scale against the URDF), which makes a suspect estimate not converged. `metric`: the
    projection's when it is not the estimate's covariance (finish.project_if_inconsistent)."""
    if prior is not None:
        est = apply_prior(est, prior)
    est = make_physical(est, metric)
    if run is not None:
        judge_against_robot(run, est)
    return judge_quality(est, robot)


def nan_if_none(x) -> float:
    return float("nan") if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
