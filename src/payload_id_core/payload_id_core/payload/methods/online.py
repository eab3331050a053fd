"""difference-rls and direct-rls offline: the online estimator (payload/online/) fed with a whole recording,
and the one way both identify-payload and the cell session (session.IdentificationRun) build it from
PayloadOptions and finish its covariance.

  difference-rls  Xu 2024 Algorithm 1: RLS on θ_b from θ_a, payload from ε = θ_b − θ_a.
  direct-rls      RLS on [φ_L, Δφ_f] from τ − Y θ_a.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import RobotResidual
from payload_id_core.payload.finish import prior_phi
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import (
    check_covers_excitation,
    finish,
    method_signals,
    motion_duration,
)
from payload_id_core.payload.online import OnlineEstimator, OnlinePayloadEstimator
from payload_id_core.payload.options import ONLINE_OPTIONS, PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording


def online_estimator(method: PayloadMethod, model: RobotModel, robot: RobotIdentification, frame: str,
                     options: PayloadOptions, rate_hz: float | None = None) -> OnlineEstimator:
    """The online estimator of `method` set up from `options` (the ones given; the estimator's defaults for the
    others). `options.load_friction` is already decided (registry.prepared_options: the method's default
    unless given); `rate_hz` the sample rate when it is known in advance (a recording's)."""
    kw = options.given(ONLINE_OPTIONS)
    if rate_hz is not None:
        kw["rate_hz"] = rate_hz
    kw["include_robot_uncertainty"] = options.include_robot_uncertainty
    kw["load_friction"] = bool(options.load_friction)
    return OnlinePayloadEstimator(model, robot, frame, method.value, prior=prior_phi(options.prior), **kw)


def covariance_extra(estimator: OnlineEstimator, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     tau: np.ndarray, residual: RobotResidual | None = None
                     ) -> tuple[np.ndarray, list[Note], np.ndarray | None]:
    """(extra, notes, offset drift): what the estimator's covariance of φ_L lacks after the samples (q, q̇, q̈, τ)
    it was fed, and why (OnlineEstimator.covariance_extra_parts: serially correlated residuals, the robot model's
    unmodelled gear friction), and apart the offsets' recorded drift (σ only: not the projection's metric).
    `residual`: robot.yaml's residual on those samples, when the caller has it (against_robot.JudgedRun.residual)."""
    parts = estimator.covariance_extra_parts(q, qd, qdd, tau, residual)
    return parts.extra, parts.notes, parts.drift


def judge_moments_on(estimator: OnlineEstimator, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     tau: np.ndarray) -> None:
    """Give difference-rls the samples it was fed, so that its final solution judges its two weightings'
    disagreement against the serially correlated noise they hold (DifferenceRLS.judge_moments_on)."""
    judge = getattr(estimator, "judge_moments_on", None)
    if judge is not None:
        judge(q, qd, qdd, tau)


def with_covariance_extra(cov: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """`cov` (φ_L's block first) with `extra` added where it is known (NaN: an entry the motion left undetermined)."""
    out = cov.copy()
    block = out[:10, :10]
    known = np.isfinite(block)
    block[known] += extra[known]
    return out


def run_online(method: PayloadMethod, model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
               options: PayloadOptions) -> PayloadEstimate:
    """The online estimator `method` over the whole loaded recording, finished like the offline methods."""
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    estimator = online_estimator(method, model, robot, frame, options,
                                 rate_hz=1.0 / float(np.median(np.diff(sig.t))))
    estimator.update_batch(sig.t, sig.q, sig.qd, sig.qdd, sig.tau)
    judge_moments_on(estimator, sig.q, sig.qd, sig.qdd, sig.tau)   # before the estimate: its notes say the check
    raw = estimator.estimate()
    z, cov, ok = estimator.payload_solution()
    extra, extra_notes, drift = covariance_extra(estimator, sig.q, sig.qd, sig.qdd, sig.tau)
    metric = with_covariance_extra(cov, extra)
    cov = metric if drift is None else with_covariance_extra(metric, drift)
    notes = [*sig.notes, *raw.notes, *extra_notes]
    if not estimator.converged:
        notes.append(Note(NoteCode.PAYLOAD_NOT_CONVERGED, f"not converged after {motion_duration(sig):.2f} s of motion "
                          f"({estimator.convergence_rule} rule)"))
    return finish(frame, method, z, cov, ok, notes, options, converged=estimator.converged,
                  convergence_time=estimator.convergence_time, history=raw.history,
                  projection_cov=None if drift is None else metric)


def difference_rls(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
                   unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """`difference-rls`: Xu 2024 Algorithm 1 over the whole recording."""
    return run_online(PayloadMethod.DIFFERENCE_RLS, model, robot, loaded, frame, options)


def direct_rls(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
               unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """`direct-rls`: RLS on [φ_L, Δφ_f] over the whole recording."""
    return run_online(PayloadMethod.DIRECT_RLS, model, robot, loaded, frame, options)
