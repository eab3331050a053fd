"""How an identify goal ended, and what it delivers: the final estimate, its torque residuals, the run's F/T
calibration and the sentence the goal answers with (IdentificationRun.finish makes it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from payload_id_core.ft.compensate import FtParameters
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.signals.stamp_holes import WindowCoverage


class GoalOutcome(Enum):
    """How an identify goal's motion ended. The value is the result file's `status`."""

    CONVERGED = "converged"      # the goal asked to stop when converged, and it did: motion stopped early
    FINISHED = "finished"        # the excitation played to its end
    CANCELLED = "cancelled"      # the client cancelled: motion stopped, the estimate is partial
    # Ended by the cell, not the client: the estimator shutting down (SIGINT/SIGTERM), the excitation player
    # dead, silent or ending the motion itself, the joint states stopping mid-motion. Motion stopped, the
    # estimate is partial, the goal is aborted with the reason.
    INTERRUPTED = "interrupted"

    @property
    def partial(self) -> bool:
        """The motion was cut short by someone other than the run itself: the estimate covers part of it."""
        return self in (GoalOutcome.CANCELLED, GoalOutcome.INTERRUPTED)


@dataclass
class FinishedGoal:
    """A goal's final numbers."""

    outcome: GoalOutcome
    estimate: PayloadEstimate               # final: projected if inconsistent, quality judged
    played: float                           # s of motion identified
    converged: bool                         # the online rule's, and the estimate not suspect
    torque_rmse_before: np.ndarray          # per joint, N m: measured against the unloaded model ...
    torque_rmse_after: np.ndarray           # ... and with the payload added
    ft_calibration: FtParameters | None = None   # the sensor calibrated on the run's wrenches
    ft_problem: str = ""                    # why that calibration failed ('' if it did not, or was not tried)
    input_drops: str = ""                   # what the goal's inputs lost ('' if nothing)
    interruption: str = ""                  # why an INTERRUPTED goal ended ('' otherwise)
    joint_states: WindowCoverage | None = None   # what the excitation window received of them (None: no window)

    @property
    def cancelled(self) -> bool:
        return self.outcome is GoalOutcome.CANCELLED

    @property
    def partial(self) -> bool:
        return self.outcome.partial

    def summary(self, controller_note: str = "") -> str:
        """One sentence on how the goal ended and what it found; `controller_note`: the apply step's answer."""
        est = self.estimate
        if self.cancelled:
            return f"cancelled after {self.played:.2f} s of motion: partial estimate"
        if self.outcome is GoalOutcome.INTERRUPTED:
            return (f"aborted: {self.interruption}; partial estimate after {self.played:.2f} s of motion: "
                    f"{est.mass:.4f} kg")
        why = "converged; motion stopped early" if self.outcome is GoalOutcome.CONVERGED else "excitation finished"
        quality = ("" if est.quality is Quality.OK
                   else f" ({est.quality.value.upper()}: {'; '.join(est.quality_reasons)})")
        unused = f"; {est.prior_not_applied_text()}" if est.prior_not_applied else ""
        note = f"; {controller_note}" if controller_note else ""
        return f"{why}: {est.mass:.4f} kg with {est.method}{quality}{unused}{note}"

    def result_message(self, controller_note: str = "", not_persisted: str = "") -> str:
        """The goal's result message: the summary, then what the inputs lost and why nothing was saved."""
        return "; ".join(part for part in (self.summary(controller_note), self.input_drops, not_persisted) if part)
