"""When the monitor's carried state is worth saving between its publications (issue 31 item 4, h197).

The node saves the monitor's state (PayloadMonitor.carried_fields, result_file.MonitorCarried) with every estimate it
publishes, so a restart mid-carry starts from it. But the state changes without a publication: after a change its fit
is replaced by the re-estimate every `refine_every_s` and published only once determined, and a settled payload goes on
being re-estimated unpublished. On the simulated UR10 (3 kg picked at 4.70 s) a restart 5 s after the pick started
from the window's fit saved at 4.818 s, not the 3.036 ± 0.032 kg the monitor held then.

`CarriedSaves` keeps a mark of what was saved last and says when the state differs from it materially:
  at once    what decides something differs: determined, since when, the undecided change, why the payload is not
             confirmed, the doubt, the inertia identified, the change being re-estimated (when it began, its pending
             load, whether that was named). A restart on the older state would decide it again (a pick named twice);
  rate-limited (`SAVE_INTERVAL_S` of joint-state time)  the fit's mass or a first moment moved by more than
             `SHIFT_SIGMAS` of its σ, or one of those σ changed by more than `SIGMA_RATIO`: the re-estimate's numbers,
             which a restart would otherwise take up from older ones (and the alarm's F Σ Fᵀ with them).
A save is an atomic rewrite of the result file (io.files.atomic_write_yaml), milliseconds of process time: the rate
limit keeps it to a small share of the monitor's own time (design.md gives the measured share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from payload_id_core.monitor.monitor import PayloadMonitor

SAVE_INTERVAL_S = 1.0   # s of joint-state time between two saves for the fit's numbers alone
SHIFT_SIGMAS = 0.5      # a fit entry (mass, m c) moved by this many of its σ since the last save is a material change
SIGMA_RATIO = 0.8       # a σ of those below this ratio of the saved one (or above its inverse) is one too
MOMENTS = 4             # φ's mass and first moments: what the residual's gravity wrench and a named change read


@dataclass(frozen=True)
class CarriedMark:
    """What one save held: the deciding fields (`key`), the fit's mass and first moments and their σ."""

    key: tuple
    fit: np.ndarray
    std: np.ndarray

    @classmethod
    def of(cls, monitor: PayloadMonitor) -> CarriedMark:
        st = monitor.state
        return cls(monitor.carried_key(), st.phi[:MOMENTS].copy(),
                   np.sqrt(np.maximum(np.diag(st.cov)[:MOMENTS], 0.0)))

    def numbers_moved(self, other: CarriedMark) -> bool:
        """The fit moved by more than SHIFT_SIGMAS of the smaller σ, or a σ changed by more than SIGMA_RATIO."""
        std = np.minimum(self.std, other.std)
        if np.any(np.abs(other.fit - self.fit) > SHIFT_SIGMAS * std):
            return True
        lo, hi = np.minimum(self.std, other.std), np.maximum(self.std, other.std)
        return bool(np.any(lo < SIGMA_RATIO * hi))


class CarriedSaves:
    """`due(monitor, t)` after each batch: why the state is to be saved now ('' : not); `saved(monitor, t)` once it
    was (every publication is saved too, LiveMonitor). `start(monitor)`: a new monitor, its state as saved (a node
    restarted on the file, or a goal's estimate the node published and saved)."""

    def __init__(self, interval: float = SAVE_INTERVAL_S) -> None:
        self.interval = interval
        self._mark: CarriedMark | None = None
        self._at = -math.inf          # joint-state s of the last save
        self.count = 0                # saves said due (for the bench's cost)

    def start(self, monitor: PayloadMonitor) -> None:
        self._mark, self._at = CarriedMark.of(monitor), -math.inf

    def due(self, monitor: PayloadMonitor, t: float) -> str:
        now = CarriedMark.of(monitor)
        if self._mark is None:
            return "the monitor's state was never saved"
        if now.key != self._mark.key:
            return "what the monitor decides with changed"
        if t - self._at >= self.interval and self._mark.numbers_moved(now):
            return "the carried fit's numbers moved"
        return ""

    def saved(self, monitor: PayloadMonitor, t: float) -> None:
        self._mark, self._at = CarriedMark.of(monitor), t
        self.count += 1
