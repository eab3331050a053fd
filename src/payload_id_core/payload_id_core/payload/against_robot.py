"""Does the run an estimate came from agree with robot.yaml? Every witness, in the one place both paths call.

A payload run whose drives drifted since robot.yaml was identified, or whose friction offsets moved, is read as
payload, confidently (issue 29, Bad input: such an estimate is suspect with the reason and the fix, never written as
converged and ok, never pushed to a controller). The witnesses that see it (payload/effort_drift.py,
payload/offset_drift.py, payload/gear_drift.py, payload/gain_drift.py) judge the estimate against robot.yaml on the
signals it was fitted to. identify-payload (methods.estimate_payload) and an identify goal
(session.IdentificationRun.finish) both call judge_against_robot before judge_quality decides converged, so the
offline and the ROS path give one verdict on one run: before, the goal ran neither witness, and a drifted cell's
estimate was converged, ok and applied to the controller where identify-payload on the same data said suspect.

A witness is three functions: `<x>_witness(...)` (what it measured on the run, or None when robot.yaml gives it
nothing to judge), `<x>_reason(witness, est, what, joint_names)` (a sentence naming the problem and the fix when the
estimate took it, else ''), and optionally `<x>_note(witness)` (what it saw and can see, on every estimate it
judged). Adding one is one `_verdict` line in judge_against_robot. One is judged apart: a payload that changed during
the run (payload/payload_change.py) is named first, before the reasons the others read from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import RobotResidual, robot_residual
from payload_id_core.payload.effort_drift import effort_drift_reason, robot_scale_on_signals
from payload_id_core.payload.gain_drift import gain_drift_note, gain_drift_reason, gain_drift_witness
from payload_id_core.payload.gain_uncertainty import gain_check_widening
from payload_id_core.payload.gear_drift import GEAR_KNOWING, gear_drift_note, gear_drift_reason, gear_drift_witness
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.offset_drift import (
    OFFSET_KEEPING,
    offset_drift_note,
    offset_drift_reason,
    offset_drift_witness,
)
from payload_id_core.payload.payload_change import (
    payload_change_note,
    payload_change_reason,
    payload_change_witness,
)
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.conditioning import Signals


@dataclass(frozen=True)
class JudgedRun:
    """The run an estimate was fitted to, as the witnesses read it: `sig` the signals the method fitted (offline:
    methods.common.method_signals with the request's options; a goal: the samples its online estimator was fed, at
    their rate, unfiltered), torques gear-corrected as robot.yaml's parameters were fitted; `what` names the run in
    the reasons. `with_unloaded`: the method had an unloaded run of the same trajectory (gaz-dtau then takes its
    offsets from it, not from robot.yaml)."""

    model: RobotModel
    robot: RobotIdentification
    sig: Signals
    frame: str
    method: PayloadMethod
    load_friction: bool
    what: str
    with_unloaded: bool = False

    @cached_property
    def residual(self) -> RobotResidual:
        """robot_residual on the run, made once for every witness that judges it (each made its own before)."""
        return robot_residual(self.model, self.robot, self.sig, self.frame)

    @property
    def keeps_robot_offsets(self) -> bool:
        """The method fits the run against robot.yaml's constant friction offsets (offset_drift.OFFSET_KEEPING)."""
        return self.method in OFFSET_KEEPING and not (self.method is PayloadMethod.GAZ_DTAU and self.with_unloaded)


def judge_against_robot(run: JudgedRun, est: PayloadEstimate) -> PayloadEstimate:
    """`est` marked suspect with each witness's reason where the run disagrees with robot.yaml beyond the noise and
    the estimate took it, and each witness's note; the estimate's numbers are not changed. Converged is decided
    after this, by finish.judge_quality (a not-ok estimate is not converged)."""
    names = list(run.model.joint_names)
    already = len(est.quality_reasons)
    # One payload over the whole run (payload/payload_change.py): a change during the run misleads every witness below.
    change = None
    if est.phi is not None and run.method is not PayloadMethod.GAZ_STATIC:
        change = payload_change_witness(run.model, run.robot, run.sig, run.frame, np.asarray(est.phi, dtype=float),
                                        run.load_friction, run.residual)
        if change is not None:
            est.notes.append(payload_change_note(change))
    # The drive gains: the run's efforts against robot.yaml's model of the arm, a free payload beside it.
    _verdict(est, run, names, robot_scale_on_signals(run.robot, run.model, run.sig, run.frame), effort_drift_reason)
    # The constant friction offsets, for a method that keeps robot.yaml's (the payload with them fixed against free).
    if run.keeps_robot_offsets and est.phi is not None:
        _verdict(est, run, names, offset_drift_witness(run.model, run.robot, run.sig, run.frame,
                                                       np.asarray(est.phi, dtype=float), run.load_friction,
                                                       residual=run.residual),
                 offset_drift_reason, offset_drift_note)
    # difference-rls holds them by robot.yaml's measured drift where it has one (the payload with that prior against
    # free): an offset beyond the recorded drift is read as payload otherwise.
    elif run.method is PayloadMethod.DIFFERENCE_RLS and run.robot.offset_drift is not None and est.phi is not None:
        _verdict(est, run, names, offset_drift_witness(run.model, run.robot, run.sig, run.frame,
                                                       np.asarray(est.phi, dtype=float), run.load_friction,
                                                       prior_std=run.robot.offset_drift.prior_std,
                                                       residual=run.residual),
                 offset_drift_reason, offset_drift_note)
    # robot.yaml's gear friction μ̂, for a method that takes it as the load friction it knows (against the run's μ).
    if run.method in GEAR_KNOWING and run.load_friction and est.phi is not None:
        _verdict(est, run, names, gear_drift_witness(run.model, run.robot, run.sig, run.frame,
                                                     np.asarray(est.phi, dtype=float), run.residual),
                 gear_drift_reason, gear_drift_note)
    # Each joint's drive gain (the payload with the joint's factor of its effort fixed against free); gaz-static has
    # no motion to tell a joint's factor from the payload's gravity.
    if est.phi is not None and run.method is not PayloadMethod.GAZ_STATIC:
        _verdict(est, run, names, gain_drift_witness(run.model, run.robot, run.sig, run.frame,
                                                     np.asarray(est.phi, dtype=float), run.load_friction,
                                                     run.residual),
                 gain_drift_reason, gain_drift_note)
        # It judges against the calibration's gain σ; what --gain-check runs widened it to is said, not judged against
        # (a wrong --gain-check-mass widens it as a drift does: gain_uncertainty.gain_calibration_relative_std).
        widening = gain_check_widening(run.robot)
        if widening:
            est.notes.append(Note(NoteCode.PAYLOAD_GAIN_CHECK_WIDENING, widening))
    # Named on its own where a split beyond its own limit (each split referred to its effective number of stretches,
    # payload_change.small_sample_scatter; h146 referred every split to all 20 and named a 1 g step on
    # test_gain_drift_witness's noise-free Panda run, which reads 0.49 of its limit now). On an estimate another witness
    # already refuted, h146's pooled limit still puts the change first (the cause named, not the verdict).
    if change is not None:
        _change_first(est, payload_change_reason(change, est, run.what, suspect=est.quality is not Quality.OK),
                      already)
    return est


def _change_first(est: PayloadEstimate, why: str, already: int) -> None:
    """A payload that changed during the run named first on a suspect estimate (its cause misleads every other
    witness); the reasons the witnesses gave on this run follow as what they read with one payload over it (a gain
    or offset "drift" is then the change's image)."""
    if not why:
        return
    est.mark(Quality.SUSPECT, why)
    earlier, ours = est.quality_reasons[:already], est.quality_reasons[already:-1]
    est.quality_reasons = [why, *earlier, *(f"read with one payload over the whole run: {r}" for r in ours)]


def _verdict(est: PayloadEstimate, run: JudgedRun, joint_names: list[str], witness: Any,
             reason: Callable[..., str], note: Callable[[Any], Note] | None = None) -> None:
    """One witness's note on `est`, and its reason as a suspect mark when it gives one (None: nothing judged)."""
    if witness is None:
        return
    if note is not None:
        est.notes.append(note(witness))
    why = reason(witness, est, run.what, joint_names)
    if why:
        est.mark(Quality.SUSPECT, why)
