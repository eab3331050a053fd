"""The alarm's floor: the smallest mass step at the flange the monitor's alarm is sure to see, at rest at a pose
(mass_floor_at_rest) and as the samples came (AlarmFloor: the last half second of it, and minutes of it to bound when
a load nobody could see came)."""

from __future__ import annotations

from collections import deque

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.monitor.detect import DetectorSettings


def mass_floor_at_rest(model: RobotModel, frame: str, q: np.ndarray, sigma: np.ndarray, alarm_level: np.ndarray,
                       detector: DetectorSettings) -> tuple[float, int]:
    """(kg, joint): the smallest mass change at the flange the alarm can see with the arm at rest at `q`,
    and the joint that sees it first. At rest a point mass Δm at the frame changes joint j's torque by
    Δm g_j, g = the mass column of the payload regressor (the flange's gravity Jacobian Jᵥᵀ g); the CUSUM
    only accumulates what exceeds its per-sample allowance ν_j σ_j (max(drift, drift_levels √level_j / σ_j),
    PayloadMonitor._step), so a step below min_j ν_j σ_j / |g_j| never alarms, however long it holds. A change of a
    CoM offset moves the floor by the lever's share; this is the mass column's."""
    d = detector
    g = np.abs(payload_regressor(model, frame, np.asarray(q, dtype=float), np.zeros(model.n),
                                 np.zeros(model.n))[0, :, 0])
    allowance = np.maximum(d.drift * sigma, d.drift_levels * np.sqrt(alarm_level))
    with np.errstate(divide="ignore"):
        per_joint = np.where(g > 1e-9, allowance / np.maximum(g, 1e-12), np.inf)
    j = int(np.argmin(per_joint))
    return float(per_joint[j]), j


class AlarmFloor:
    """The floor as the alarm stood, sample by sample (`note`): the last `recent_s` of it (`recent`) and `record_s` of
    it (`unseen_span`). `lookback_s`: how long before the CUSUM's change time a change may have come."""

    def __init__(self, recent_s: float, record_s: float, lookback_s: float):
        self.recent_s, self.record_s, self.lookback_s = recent_s, record_s, lookback_s
        self._recent: deque = deque()       # (t, kg), recent_s of it
        self._record: deque = deque()       # the same, record_s of it
        self._first = float("nan")          # s: the first row noted (before it, nothing was watched)

    def note(self, t: float, F: np.ndarray, w: np.ndarray, drift: np.ndarray, sigma: np.ndarray) -> None:
        """The floor as the alarm stands at t: mass_floor_at_rest's min_j ν_j σ_j / |F_j,m| with the allowance ν of
        this sample (`drift`: the running level, and the carried payload's own uncertainty F Σ Fᵀ) and F's mass column
        as the motion has it (gravity and the accelerations), over the trusted joints only (`w`: a creeping joint
        alarms on nothing)."""
        col = np.abs(F[:, 0])
        ok = (w > 0) & (col > 1e-9)
        floor = float(np.min(drift[ok] * sigma[ok] / col[ok])) if np.any(ok) else float("inf")
        self._recent.append((t, floor))
        while self._recent and self._recent[0][0] < t - self.recent_s:
            self._recent.popleft()
        self._record.append((t, floor))
        if np.isnan(self._first):
            self._first = t
        while self._record and self._record[0][0] < t - self.record_s:
            self._record.popleft()

    def recent(self) -> float:
        """kg: the smallest mass step the alarm is sure to see over the last `recent_s` of samples watched, in motion
        or at rest (the largest noted there; NaN before any). Fast moves raise it above mass_floor_at_rest's figure
        (the level learnt on them, joints left out while they creep), and so does a payload still being re-estimated
        (its σ widens the allowance): a change below it can pass unseen."""
        return max(f for _, f in self._recent) if self._recent else float("nan")

    def unseen_span(self, t_change: float, dm: float, since: float) -> tuple[float, str] | None:
        """(earliest, why) for a load of `dm` kg whose window fitted less than held (steps.split_steps): the window saw
        only part of the step, so the rest may have been on before it, put on where no joint could feel it. A flange
        mass changes the joint torques through F's mass column (its gravity and the motion's accelerations); where the
        alarm's floor (`note`: min_j ν_j σ_j / |F_j,m|) was above |dm|, or where the alarm did not watch at all
        (disarmed, paused: no floor noted for more than `recent_s`), a step of |dm| raises no alarm. Such a load shows
        only once the motion makes it visible, as a residual that grows with F, and the alarm dates that growth, after
        as long as its CUSUM takes, which the floor of the mass column alone does not bound (the load's moments may
        cancel its mass on a joint): the real UR10e, a 2.8 kg pick with the arm upright at rest, seen 8.2 s later once
        the arm had moved out of the pose, its window fitting +0.89 kg of it (h143). For the same reason a row where the
        floor was below |dm| does not exclude the load either, so no row of the floor dates it: `since`, when the
        payload carried before the change was named or confirmed (PayloadState.since of the payload before it; the
        monitor's first sample, or the last one watched before a restart, for the payload it started on), does. A load
        that came before it would be in that payload's re-estimate, or in the start's. None: every row kept from
        `since` to the change could see the load, the alarm watching throughout (the floor answers whether the load
        can have gone unseen, not when it came). The rows kept reach `record_s` back (monitor.FLOOR_RECORD_S): a
        blindness wholly before them is not seen, and the event stays dated at its window."""
        rows = [(t, f) for t, f in self._record if since <= t < t_change - self.lookback_s]
        # Nothing noted from `since` to the first row ever noted: the monitor started after it (a restart on a saved
        # payload last watched at `since`); or, the record reaching back to `since`, to the first row after it (paused).
        unwatched_from_since = self._first - since > self.recent_s or \
            (bool(rows) and self._record[0][0] <= since and rows[0][0] - since > self.recent_s)
        blind = unwatched_from_since or any(floor > abs(dm) for _, floor in rows) or \
            any(t - t_prev > self.recent_s for (t_prev, _), (t, _) in zip(rows, rows[1:]))
        if not blind:
            return None
        return since, (f"its time is not located after {since:.3f} s: the alarm could not see {abs(dm):.3f} kg at the "
                       "flange at some time since (its floor above it, or the joints not watched), and a load put on "
                       "where no joint feels it shows only once the motion makes it visible, not as a step; it cannot "
                       f"have come before {since:.3f} s, when the payload before it was named or confirmed")
