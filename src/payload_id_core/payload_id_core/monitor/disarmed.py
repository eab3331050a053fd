"""What the payload monitor keeps while it is disarmed, and when a load came in it (issue 31).

A load put on the flange while the monitor is disarmed (a person's push held at rest, a part picked under it) is found
only later, by the misfit that lasts in the moves (PayloadMonitor._put_in_doubt). Its date is looked for in the
residual kept meanwhile: `DisarmedRecord` keeps (t, r₀, F, moving) of every `stride`-th disarmed sample, as segments
(a pause restarts r₀ and F from zero together, so a step seen in one segment is on its own observers' terms), thinned
by two when full rather than forgetting its oldest rows, so a push held longer than `RECORD_ROWS` rows is still
searched at a coarser spacing. `locate_load` finds the step F Δφ there (one step, else a transition of free shape
along F Δφ: a part put on in two steps, a weight ramped on); where neither explains the residual, or two explanations
disagree, the change is not located and the monitor says so (its date is then the start of the disarmed span, the
earliest the change can have come, with the reason) instead of giving a date it cannot stand behind.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

RECORD_ROWS = 2000           # rows kept: 20 s at the 2 ms samples' 5th, before the first thinning
MAX_SPACING_S = 0.04         # s: thinned no coarser than this (a step's windows need ≥ 5 rows), then the oldest go
STEP_BEFORE_S = 0.2          # s of residual before a candidate change ...
STEP_AFTER_S = 0.3           # ... and after it (after its transient, for one step)
TRANSITION_MAX_S = 2.0       # s: the longest a load's coming on is searched as one transition (two grasps, a ramp)
TRANSITION_ONSET = 0.1       # of the step: the transition's date is where the residual first rose this share of it


@dataclass(frozen=True)
class Located:
    """The date of a load found in the record: `t` (s), and how (`one step` or `a transition of <s> s`)."""
    t: float
    how: str


class DisarmedRecord:
    """Rows (t, r₀, F, moving, segment, settled) of the disarmed monitor, every `stride`-th sample. `segment` counts the
    pauses (the observers restart), `settled`: the observers had settled at that row (a restarted observer's residual
    rises from zero to the misfit, which looks like a step). Thinned by two (the stride doubled) when `RECORD_ROWS`
    are held, while the spacing stays within MAX_SPACING_S; beyond that the oldest rows go."""

    def __init__(self, stride: int):
        self.base_stride = stride
        self.stride = stride
        self.rows: deque = deque()
        self.count = 0           # disarmed samples seen (the stride is taken on it, so the spacing stays even)
        self.segment = 0
        self.since = float("nan")    # s: the disarmed span's start (the earliest a change found in it can have come)

    def __len__(self) -> int:
        return len(self.rows)

    def clear(self) -> None:
        """Armed again: nothing of the span is needed."""
        self.rows.clear()
        self.stride = self.base_stride
        self.since = float("nan")

    def pause(self) -> None:
        """The observers restart: the rows from here are a new segment."""
        self.segment += 1

    def disarmed(self, since: float) -> None:
        """The monitor was disarmed by what began at `since` (kept if an earlier start is already held)."""
        if not np.isfinite(self.since) or since < self.since:
            self.since = since

    def add(self, t: float, r0: np.ndarray, F: np.ndarray, moving: float, settled: bool, dt: float) -> None:
        """One disarmed sample (dt: the samples' spacing, for the thinning's limit)."""
        self.count += 1
        if not np.isfinite(self.since):
            self.since = t
        if self.count % self.stride:
            return
        self.rows.append((t, r0, F, moving, self.segment, settled))
        if len(self.rows) < RECORD_ROWS:
            return
        if 2 * self.stride * dt <= MAX_SPACING_S + 1e-12:
            self.stride *= 2
            self.rows = deque(row for k, row in enumerate(self.rows) if k % 2 == 1)
        else:
            self.rows.popleft()


def _window_sums(X: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c1 = np.vstack([np.zeros(X.shape[1]), np.cumsum(X, axis=0)])
    c2 = np.vstack([np.zeros(X.shape[1]), np.cumsum(X**2, axis=0)])
    return c1[hi] - c1[lo], c2[hi] - c2[lo]


def locate_load(T: np.ndarray, R: np.ndarray, U: np.ndarray, w: np.ndarray, still: np.ndarray, segment: np.ndarray,
                settled: np.ndarray, gain: float, span_chi2: float) -> tuple[Located | None, str]:
    """When the load step U (N, n: its filtered torque F Δφ at each row) came in the residual R (N, n) of rows at times
    T, whitened per joint by w; rows `still` (the arm at rest), in `segment`, `settled`. (Located, '') or (None, why).

    A load put on the flange is a step of the residual by F Δφ (the observer's filtered response, rising within 3 time
    constants), flat before and after at rest; a person's push ramps over 0.1-1 s and moves with the hand. Every window
    lies in one segment of settled rows at rest (in motion the model's own error and a hand's push vary with the pose:
    on the real UR10e a step located in a move dated a pick before the recording it came in).
    1. One step: over STEP_BEFORE_S before a candidate time and STEP_AFTER_S after its transient, the residual fitted
       per joint by a constant plus the step; the least misfit is the change, if it leaves at most `span_chi2` per row
       and the step explains at least half of its own size there. Dated within the skipped transient at the first row
       where the residual has risen half the step (the observer's ln 2 / K lag left in: never before the change).
    2. Else a transition: between the constant before and the constant plus the step after, up to TRANSITION_MAX_S of
       rows each fitted by the constant plus a share s ∈ [0, 1] of the step (a part put on in two grasps, a weight
       coming on over a second: any monotone profile filtered by the observer is such a share row by row), its rows'
       component across the step counted as misfit with the same bound. The shortest transition that fits is the
       change, dated at the first row whose share reaches TRANSITION_ONSET; if another transition that fits does not
       overlap it, it is not located."""
    N, n = R.shape
    if N < 8:
        return None, "too few rows were kept"
    X1, X2 = R * w, (R - U) * w          # before the step: the residual; after it: the residual less the step
    Uw = U * w
    dt = float(np.median(np.diff(T)))
    nb = max(2, int(round(STEP_BEFORE_S / dt)))
    na = max(2, int(round(STEP_AFTER_S / dt)))
    gap = int(np.ceil(3.0 / gain / dt))
    # Rows a window may span: at rest, settled, one segment (a window from lo to hi is good when no row in it is bad
    # and the segment at both ends is the same: segments only grow).
    bad = np.cumsum(np.concatenate([[0], ~(still.astype(bool) & settled.astype(bool))]))

    def good(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return (bad[hi] - bad[lo] == 0) & (segment[lo] == segment[np.maximum(hi - 1, lo)])

    m = nb + na
    ks = np.arange(nb, N - gap - na + 1)
    if ks.size:
        b1, b2 = _window_sums(X1, ks - nb, ks)
        a1, a2 = _window_sums(X2, ks + gap, ks + gap + na)
        r1, r2 = _window_sums(X1, ks + gap, ks + gap + na)
        step_cost = np.sum(b2 + a2 - (b1 + a1) ** 2 / m, axis=1)       # a constant per joint plus the step
        flat_cost = np.sum(b2 + r2 - (b1 + r1) ** 2 / m, axis=1)       # a constant per joint, no step
        size = np.sum(_window_sums(Uw, ks + gap, ks + gap + na)[1], axis=1)
        # A step of the right size explains nb na / m of its own sum of squares over the window beyond a constant.
        ok = good(ks - nb, ks + gap + na) & (step_cost <= span_chi2 * m * n) & \
            (flat_cost - step_cost >= 0.5 * size * nb / m)
        if np.any(ok):
            i = int(np.argmin(np.where(ok, step_cost, np.inf)))
            k = int(ks[i])
            apart = ok & (np.abs(ks - k) > gap + na)
            if np.any(apart):
                # Two steps of the load's size and shape, apart: a hand pressed like the part and let go, then the part
                # (or the other way round). The least misfit between them is the noise's pick, not the physics'.
                other = int(ks[np.nonzero(apart)[0][0]])
                return None, (f"steps of the implied load fit at {T[min(k, other)]:.3f} s and at "
                              f"{T[max(k, other)]:.3f} s (at rest a hand pressing on the flange can match a part's "
                              "weight)")
            level_before = b1[i] / nb
            Uw2 = np.sum(Uw[k:k + gap + 1] ** 2, axis=1)
            risen = np.sum((X1[k:k + gap + 1] - level_before) * Uw[k:k + gap + 1], axis=1) / np.maximum(Uw2, 1e-300)
            half = np.nonzero(risen >= 0.5)[0]
            return Located(float(T[k + int(half[0])]) if half.size else float(T[k + gap]), "one step"), ""
    return _locate_transition(T, X1, X2, Uw, good, nb, na, gap, dt, span_chi2)


def _locate_transition(T, X1, X2, Uw, good, nb: int, na: int, gap: int, dt: float,
                       span_chi2: float) -> tuple[Located | None, str]:
    N, n = X1.shape
    lmax = int(round(TRANSITION_MAX_S / dt)) + gap
    ks = np.arange(nb, N - gap - 1 - na + 1)
    if ks.size == 0:
        return None, "the record holds no rest long enough around a change"
    c1 = np.vstack([np.zeros(n), np.cumsum(X1, axis=0)])
    c2 = np.vstack([np.zeros(n), np.cumsum(X1**2, axis=0)])
    d1 = np.vstack([np.zeros(n), np.cumsum(X2, axis=0)])
    d2 = np.vstack([np.zeros(n), np.cumsum(X2**2, axis=0)])
    u2 = np.vstack([np.zeros(n), np.cumsum(Uw**2, axis=0)])
    Uw2 = np.maximum(np.sum(Uw**2, axis=1), 1e-300)
    found: list[tuple[int, float, float, int]] = []   # (transition rows, the before's misfit, date, start row)
    for k in ks.tolist():
        b1, b2 = c1[k] - c1[k - nb], c2[k] - c2[k - nb]
        # The constant before must hold on its own: over the long rows of a transition a step or a push's settling
        # inside it would pass the whole window's bound.
        flat_before = float(np.sum(b2 - b1**2 / nb))
        if not good(np.array([k - nb]), np.array([k + gap + 1]))[0] or flat_before > span_chi2 * nb * n:
            continue
        L = np.arange(gap + 1, min(lmax, N - na - k) + 1)     # transition rows [k, k + L), after: [k + L, k + L + na)
        if L.size == 0:
            continue
        hi = k + L
        fits = good(np.full(L.size, k - nb), hi + na)
        if not np.any(fits):
            continue
        a1, a2 = d1[hi + na] - d1[hi], d2[hi + na] - d2[hi]
        m = nb + na
        ends = np.sum(b2 + a2 - (b1 + a1) ** 2 / m, axis=1)          # the constant before and the constant + step after
        r1, r2 = c1[hi + na] - c1[hi], c2[hi + na] - c2[hi]
        flat = np.sum(b2 + r2 - (b1 + r1) ** 2 / m, axis=1)
        size = np.sum(u2[hi + na] - u2[hi], axis=1)
        # The transition's rows: what the constant before leaves, less the share of the step that fits it best.
        D = X1[k:k + L[-1]] - b1 / nb
        s = np.clip(np.sum(D * Uw[k:k + L[-1]], axis=1) / Uw2[k:k + L[-1]], 0.0, 1.0)
        e = np.sum((D - s[:, None] * Uw[k:k + L[-1]]) ** 2, axis=1)
        inner = np.concatenate([[0.0], np.cumsum(e)])[L]
        after = np.sum(a2 - a1**2 / na, axis=1)                      # ... and so must the constant + step after
        # Each bound on its own rows: the constant before and the constant + step after as one step's are (a weight
        # still coming on after the transition's end passed within the transition's rows), and the transition's.
        ok = fits & (ends <= span_chi2 * m * n) & (after <= span_chi2 * na * n) & (inner <= span_chi2 * L * n) & \
            (flat - ends >= 0.5 * size * nb / m)
        if not np.any(ok):
            continue
        j = int(np.argmax(ok))                                       # the shortest transition from k that fits
        onset = np.nonzero(s[:L[j]] >= TRANSITION_ONSET)[0]
        if onset.size == 0:
            continue
        found.append((int(L[j]), flat_before, float(T[k + int(onset[0])]), k))
    if not found:
        return None, ("neither one step of the implied load nor a transition of up to "
                      f"{TRANSITION_MAX_S:.0f} s to it explains the residual kept at rest")
    # The shortest transition is the change; one that fits and does not overlap it is another explanation of the same
    # residual (a hand pressing down like the part, then the part): not located. Of those overlapping it, the one whose
    # constant before is flattest dates it: the date is measured from that constant, and one that takes in the push's
    # own settling or the load's first rise moves it (0.6 s early, 40 ms late, on a part put on in two grasps).
    shortest = min(found, key=lambda f: (f[0], f[1]))
    lo, hi = shortest[3], shortest[3] + shortest[0]
    other = [f for f in found if f[3] + f[0] <= lo or f[3] >= hi]
    if other:
        return None, (f"transitions to the implied load fit from {T[other[0][3]]:.3f} s and from {T[lo]:.3f} s "
                      "(at rest a hand pressing on the flange can match a part's weight)")
    best = min(found, key=lambda f: f[1])
    return Located(best[2], f"a transition of {shortest[0] * dt:.2f} s"), ""
