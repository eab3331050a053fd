"""What the payload monitor holds and says: the carried payload (PayloadState, published as a PayloadEstimate), a
change seen and not decided (Undecided), and what one update returns (MonitorUpdate)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.monitor.detect import Event, EventKind
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload_estimate import PayloadEstimate, Quality


@dataclass(frozen=True)
class PayloadState:
    """What the monitor holds as the carried payload."""
    phi: np.ndarray
    cov: np.ndarray
    determined: bool           # mass and CoM known to the settings' σ (False right after a change)
    since: float               # s: time of the change it follows (NaN: the initial payload)
    seconds_of_motion: float   # of task motion in the re-estimate
    # The empty flange's mass as last re-estimated, and its variance (PayloadMonitor._tare): the robot model's
    # own error as a payload, taken off what is reported, never off what the residual is computed with.
    tare_mass: float = 0.0
    tare_var: float = 0.0
    # Why the payload is in doubt ('' when it is not): a misfit that persisted in motion, not explained by it
    # (PayloadMonitor._put_in_doubt); reported as suspect until a re-estimate is determined.
    doubt: str = ""
    # Why a payload restored after a refuted re-estimate is not confirmed yet ('' when it is): the rows that refuted
    # the change contradict it too until the residual comes back within its allowance (PayloadMonitor._step).
    # Reported as suspect; the state machine treats it as settled.
    unconfirmed: str = ""
    # Why a change may have happened that the monitor could not decide ('' : none), the variance (kg²) that possible
    # mass change adds to the published mass, and when it came (PayloadMonitor._say_undecided). Kept through later
    # changes until a re-estimate over rows all after it has its mass determined (it weighs the whole payload carried
    # then: PayloadMonitor._mass_decides_undecided).
    undecided: str = ""
    undecided_var: float = 0.0
    undecided_since: float = float("nan")
    # Why the joints are not watched now ('' : they are): another publisher of the same joints paused the monitor
    # (PayloadMonitor.stop_watching). The payload is kept, not called determined, and published suspect meanwhile: a
    # change made during the pause is seen only once watching resumes.
    unwatched: str = ""
    # What the published covariance adds to `cov` (refine.RefinedCovariance.extra of the re-estimate behind it; None:
    # nothing): published, never decided with. Carried into the states built on `cov` (a doubt's, a window's adoption).
    published_extra: np.ndarray | None = None
    # kg²: robot.yaml's held-out model error beyond its whole-run part at the re-estimate's information
    # (refine.RefinedCovariance.held_out_mass_var; in published_extra's mass already): in a change's named σ.
    held_out_var: float = 0.0
    # The initial payload's inertia was identified (an identify goal's, PayloadMonitor's `inertia_identified`): it is
    # published with its covariance, as the goal published it, not as a point mass. A change's re-estimate holds the
    # inertia near a prior (task motion seldom excites it), so every state a change builds leaves this False.
    inertia_identified: bool = False
    # What the alarm's allowance takes as this payload's covariance in place of `cov` (None: `cov`). A doubt's
    # (PayloadMonitor._put_in_doubt): its `cov` holds the implied step's square, so that the σ published covers the
    # whole step from the payload before; that is a hypothesis about what is carried, not how far the residual may
    # wander, and in the allowance it hid a real place 2.3 s later for 88 s (bench/monitor.py's pushed task, seed 8).
    # Gone with the first re-estimate that replaces the doubt's payload (a new state).
    alarm_cov: np.ndarray | None = None

    @property
    def alarm_covariance(self) -> np.ndarray:
        """The covariance the alarm's allowance takes in (F Σ Fᵀ): `alarm_cov`, else `cov`."""
        return self.cov if self.alarm_cov is None else self.alarm_cov

    @property
    def undecided_fields(self) -> dict:
        """The undecided change as carried into the next state."""
        return {"undecided": self.undecided, "undecided_var": self.undecided_var,
                "undecided_since": self.undecided_since}

    @property
    def part(self) -> tuple[np.ndarray, np.ndarray]:
        """(φ, Σ) of what is carried: the fit less the tare (its mass, and the mass's variance)."""
        phi, cov = self.phi.copy(), self.cov.copy()
        phi[0] -= self.tare_mass
        cov[0, 0] += self.tare_var
        return phi, cov

    @property
    def published_part(self) -> tuple[np.ndarray, np.ndarray]:
        """`part` with the covariance a user or a controller reads (published_extra added)."""
        phi, cov = self.part
        return phi, cov if self.published_extra is None else cov + self.published_extra

    @property
    def carries_nothing(self) -> bool:
        """The mass is within 3σ of zero: nothing is on the flange (a part was put down)."""
        phi, cov = self.part
        return abs(float(phi[0])) <= 3.0 * float(np.sqrt(max(cov[0, 0], 0.0)))

    def to_estimate(self, frame: str) -> PayloadEstimate:
        """As the identify path reports a payload: mass and CoM determined, the inertia not (task motion
        seldom excites it, and it is held near the previous value by a prior), so it is reported as not
        identified. Nothing carried is reported as exactly nothing (φ = 0, the mass's σ kept; the CoM of no
        mass is not identified), which a controller takes as the empty payload."""
        empty = self.carries_nothing
        part_phi, part_cov = self.published_part
        inertia = self.inertia_identified and not empty
        ident = np.array([True] + [not empty] * 3 + [inertia] * 6)
        cov = part_cov.copy()
        if self.undecided:
            # Published, not carried into the residual or the named changes: both hypotheses (the change came, or
            # not) lie within 1σ of the mass said.
            cov[0, 0] += self.undecided_var
        cov[~ident, :] = np.nan
        cov[:, ~ident] = np.nan
        # The inertia is not identified: reported as a point mass (zero about the CoM, what UR's set_payload
        # assumes from mass and CoG alone), not the prior-held value, which need not be a body's. An identified one
        # (the goal's the monitor started on, no change since) is reported as identified.
        phi = np.zeros(10) if empty else part_phi.copy() if inertia else \
            from_mass_com_inertia(float(part_phi[0]), part_phi[1:4] / part_phi[0], np.zeros((3, 3)))
        what = "nothing carried" if empty else "re-estimated"
        est = PayloadEstimate(frame, phi, cov, "monitor", identifiable=ident, converged=True,
                              convergence_time=self.seconds_of_motion,
                              notes=[Note(NoteCode.PAYLOAD_MONITOR, f"{what} by the payload monitor from "
                                          f"{self.seconds_of_motion:.1f} s of task motion after the change at "
                                          f"{self.since:.3f} s")],
                              determined=np.array([True, not empty, inertia]))
        # A payload (not the deliberate nothing above) is judged as the identify path judges its own: a mass
        # not significantly above 0 (a negative re-estimate within the refutation's model-error allowance) is
        # suspect and not converged, never a confident number on ~/payload.
        est = est if empty else judge_quality(est)
        if self.unwatched:
            est.mark(Quality.SUSPECT, f"not watched: {self.unwatched}; a change made meanwhile is seen only once the "
                     "monitor resumes")
            est.converged = False
        if self.doubt or self.unconfirmed:
            est.mark(Quality.SUSPECT, self.doubt or self.unconfirmed)
            est.converged = False
        elif not self.determined and not np.isnan(self.since):
            # A change still being re-estimated (a recording that ends within seconds of a strike: the real UR10e's
            # 3rd-link run ended at "0.000 ± 0.283 kg", the σ of the strike's 0.1 s window fit, 7× a settled one's).
            est.converged = False
            est.notes.append(Note(NoteCode.PAYLOAD_MONITOR, f"not settled: the change at {self.since:.3f} s is still "
                                  f"being re-estimated ({self.seconds_of_motion:.1f} s of task motion so far); its σ "
                                  "is the fit's so far"))
        if self.undecided:
            est.converged = False
            est.notes.append(Note(NoteCode.PAYLOAD_MONITOR, f"undecided: {self.undecided}; the mass σ covers it "
                                  f"(±{np.sqrt(self.undecided_var):.3f} kg) until a re-estimate over the motion "
                                  "since decides"))
        return est


@dataclass(frozen=True)
class Undecided:
    """A change the monitor has seen but not decided yet (PayloadMonitor.undecided): at a recording's end, what a replay
    must say rather than drop. `kind` is what its window fitted (picked / placed / changed), or None when nothing was
    fitted yet; the mass change and its σ are that fit's (NaN: none)."""
    kind: EventKind | None
    t_change: float
    t_alarm: float
    delta_mass: float
    delta_mass_std: float
    reason: str
    # As Event.t_change_located: False when the change's time was not located, t_change the earliest it can have come.
    t_change_located: bool = True


@dataclass
class MonitorUpdate:
    events: list[Event] = field(default_factory=list)
    estimate: PayloadState | None = None      # a newly determined (or improved) payload, to publish
    paused: str | None = None                 # why the monitor paused (reported once per pause)
    residual: tuple[float, np.ndarray] | None = None   # (t, r N·m) of the block's last sample, to watch
    # (t, r N·m) at the block's first sample in each RESIDUAL_PERIOD_S of the stamps (~/monitor_residual): the
    # stream's resolution is the data's, however late and large the node's batches come on a loaded machine.
    residuals: list[tuple[float, np.ndarray]] = field(default_factory=list)
