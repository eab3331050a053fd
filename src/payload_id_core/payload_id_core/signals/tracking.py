"""The measured tracking error added back to the commanded motion.

Identification on the commanded q_d, q̇_d, q̈_d (Xu 2024 §3.2) avoids differentiating noisy
measurements, but the arm does not move exactly as commanded: the trajectory controller acts on an
error, and under a payload its feedforward does not know that error grows with the payload's torque.
On the simulated UR10 cell (PID, 25 Hz bandwidth) it is 0.1-0.4 mrad, about 1 % of q̈ at 1.5-3 Hz;
regressing on the command alone put every method's mass +0.9 to +1.1 % off on a noise-free 2 s-period
excitation, and difference-rls's inertia 5.6 % off on the noise-free bundled ur10_payload_inertia run (0.3 %
with this correction; 4.8 → 3.9 % on the noisy cell, bench/payload.py
cell_inertia_rel_err_pct_without_tracking_error against cell_inertia_rel_err_pct_default).

So the regressor gets q = q_d + e, q̇ = q̇_d + ė, q̈ = q̈_d + ë, where e = q_measured − q_d is smoothed
and differentiated by local polynomial fits (Savitzky and Golay 1964, here in true time so jittered
stamps are exact): a quartic over ±HALF_WINDOW_S, whose gain on ë is within 1 % of one up to 5 Hz and
which adds 0.013 rad/s² of noise to q̈ per 10 µrad of encoder noise at 500 Hz. Near the ends of the data
the window stays inside it (the fit is evaluated off-centre), so no sample is lost. A gap in the joint
states (more than GAP_FACTOR sampling intervals) ends the data as far as the fits go: no window spans it
(one that did gave ë 14-34 % wrong). A stretch too short for a fit (under 3 samples) keeps the command alone.

The same fits run offline (tracking_error_motion, on a whole recording) and in the ROS session
(TrackingErrorStream, HALF_WINDOW_S behind the newest joint state): both give the same numbers.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.errors import PayloadIdError

# The largest measured-minus-commanded joint position a controller that follows its trajectory leaves (rad). One
# bound for the ROS session (live joint states) and the offline pipeline (conditioning): a recording beyond it
# does not show the arm playing that command, and its "tracking error" is no correction (the simulated cell
# tracks within 0.4 mrad, the UR10e recordings within 2 mrad).
MAX_TRACKING_ERROR_RAD = 0.2
HALF_WINDOW_S = 0.05
ORDER = 4
GAP_FACTOR = 5.0       # a step this many median intervals long is a gap in the data
ROUNDING_OFFSET = 0.375  # window_samples: HALF_WINDOW_S·rate + this, rounded down


def check_follows_command(t: np.ndarray, measured: np.ndarray, commanded: np.ndarray, joint_names: list[str],
                          source: str = "recording") -> None:
    """Refuse joint states (N, n) further than MAX_TRACKING_ERROR_RAD from the command sampled at the same
    times (N, n), both in `joint_names` order, naming the likely cause: a command whose joint names are in
    another order than the motion's (each commanded joint then follows another measured one: named), else a
    controller that did not play it."""
    err = np.abs(measured - commanded)
    worst = float(err.max()) if err.size else 0.0
    if not worst > MAX_TRACKING_ERROR_RAD:
        return
    k, j = np.unravel_index(np.argmax(err), err.shape)
    problem = (f"{source}: the measured joint positions are up to {worst:.3f} rad away from the commanded ones "
               f"({joint_names[j]}, t = {t[k]:.2f} s; a controller that follows its trajectory stays within "
               f"{MAX_TRACKING_ERROR_RAD:g} rad)")
    # Which measured joint each commanded one moves like: another one for every mismatched joint is a naming slip.
    apart = np.max(np.abs(measured[:, :, None] - commanded[:, None, :]), axis=0)     # [measured, commanded]
    follows = np.argmin(apart, axis=0)
    swapped = [(joint_names[c], joint_names[int(m)]) for c, m in enumerate(follows) if m != c
               and apart[m, c] <= MAX_TRACKING_ERROR_RAD]
    if swapped and sorted(follows.tolist()) == list(range(len(joint_names))):
        pairs = ", ".join(f"'{c}' moves like the measured '{m}'" for c, m in swapped)
        raise PayloadIdError(f"{problem}: the commanded trajectory's joint names look out of order ({pairs})",
                             "record the command with the joint names in the order of its positions (the "
                             "controller matches them by name)")
    raise PayloadIdError(problem, "check that the controller was active and listening on the trajectory topic, and "
                                  "that the recorded command is the one the arm played")


def _median_interval(t: np.ndarray) -> float:
    dt = float(np.median(np.diff(t)))
    if not (np.isfinite(dt) and dt > 0.0) or np.any(np.diff(t) <= 0.0):
        raise PayloadIdError("joint state time stamps do not increase",
                             "record the joint states with their header stamps, in order")
    return dt


def window_samples(t: np.ndarray) -> int:
    """Samples on each side of the centre: HALF_WINDOW_S at the median interval's rate, at least ORDER. The
    session picks it from its first second, identify-payload from the whole recording: both must pick the
    same from one driver's jittered stamps. Rounding half up put 250 Hz (12.5 samples) on a boundary, where
    5 % jitter flipped it on half the runs; adding ROUNDING_OFFSET instead keeps the usual driver rates
    (100-1000 Hz) at least 0.75 % of their rate away from any boundary (250 Hz: 12.875, 13 at +1 %)."""
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        return ORDER
    return max(ORDER, int(np.floor(HALF_WINDOW_S / _median_interval(t) + ROUNDING_OFFSET)))


def gap_seconds(t: np.ndarray) -> float:
    """The step between joint states beyond which no fit spans them (GAP_FACTOR median intervals)."""
    t = np.asarray(t, dtype=float)
    return GAP_FACTOR * _median_interval(t) if t.size >= 2 else np.inf


def _powers(x: np.ndarray, order: int) -> np.ndarray:
    """x⁰ … x^order stacked on a new last axis, by repeated products: `x[..., None] ** np.arange(order + 1)` took
    0.7 s of identify-robot's 3 s on 60 s at 500 Hz (a float power per entry); the products agree with it to a
    few units in the last place (test_speed_paths)."""
    V = np.empty(x.shape + (order + 1,))
    V[..., 0] = 1.0
    if order >= 1:
        V[..., 1] = x
    for k in range(2, order + 1):
        np.multiply(V[..., k - 1], x, out=V[..., k])
    return V


def _fit(t: np.ndarray, e: np.ndarray, centres: np.ndarray, starts: np.ndarray, width: int):
    """e, ė, ë at t[centres] from a polynomial fitted over t[starts[k]:starts[k] + width]."""
    order = min(ORDER, width - 1)
    idx = starts[:, None] + np.arange(width)[None, :]                 # (m, width)
    scale = max(float(np.max(np.abs(t[idx] - t[centres][:, None]))), 1e-9)
    x = (t[idx] - t[centres][:, None]) / scale                         # in [-1, 1]: a well-conditioned fit
    V = _powers(x, order)                                              # (m, width, order+1)
    # Batched matrix products, not einsum: einsum's loops took 0.12 s of identify-robot's 0.9 s (CPU) on 60 s at
    # 500 Hz, the products 0.02 s; they agree with it to round-off (test_speed_paths).
    Vt = V.transpose(0, 2, 1)
    A = np.matmul(Vt, V)
    b = np.matmul(Vt, e[idx])                                          # (m, order+1, n)
    try:
        c = np.linalg.solve(A, b)
    except np.linalg.LinAlgError as err:   # repeated stamps inside one window
        raise PayloadIdError("joint state time stamps repeat: the tracking error cannot be fitted over them",
                             "record the joint states with their header stamps, in order") from err
    value = c[:, 0]
    rate = c[:, 1] / scale if order >= 1 else np.zeros_like(value)
    accel = 2.0 * c[:, 2] / scale**2 if order >= 2 else np.zeros_like(value)
    return value, rate, accel


def tracking_error_motion(t, e, half_samples: int | None = None, gap: float | None = None):
    """(e, ė, ë) smoothed at every sample of a whole signal: t (N,), e (N, n) the measured minus the commanded
    positions. Centred windows of 2·half_samples + 1 samples (default window_samples(t)); near the ends, and
    next to a gap longer than `gap` s (default gap_seconds(t)), the window is the first or last one that fits."""
    t = np.asarray(t, dtype=float)
    e = np.asarray(e, dtype=float)
    n = t.size
    if n < 3:
        raise PayloadIdError(f"only {n} samples to smooth the tracking error over", "record a longer run")
    if not np.all(np.isfinite(e)):
        raise PayloadIdError("the measured joint positions hold NaN or infinite values",
                             "check the robot driver's joint states; the identification needs clean samples")
    h = window_samples(t) if half_samples is None else int(half_samples)
    gap = gap_seconds(t) if gap is None else float(gap)
    out = [np.zeros_like(e) for _ in range(3)]
    for lo, hi in _segments(t, gap):
        if hi - lo < 3:
            continue                         # too short for a fit: the command alone
        width = min(2 * h + 1, hi - lo)
        centres = np.arange(lo, hi)
        starts = np.clip(centres - h, lo, hi - width)
        for o, v in zip(out, _fit(t, e, centres, starts, width)):
            o[lo:hi] = v
    return tuple(out)


def _segments(t: np.ndarray, gap: float) -> list[tuple[int, int]]:
    cuts = np.flatnonzero(np.diff(t) > gap) + 1
    bounds = np.concatenate([[0], cuts, [t.size]])
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


class TrackingErrorStream:
    """tracking_error_motion over joint states arriving in chunks, `half_samples` behind the newest one.

    push() takes the next chunk (times, tracking errors, and any per-sample rows to carry along) and returns
    the samples whose window is complete, with their rows, or None; finish() returns the rest, fitted as
    tracking_error_motion fits the end of a whole signal. A step longer than `gap` s ends one stretch of data
    and starts the next, as in tracking_error_motion. Samples come out in order, each once, with the numbers
    tracking_error_motion gives on everything pushed (same half_samples and gap)."""

    def __init__(self, half_samples: int, gap: float = np.inf):
        self.h = int(half_samples)
        self.gap = float(gap)
        self._stretch: _Stretch | None = None
        self._t_last = -np.inf

    def push(self, t, e, *rows):
        t = np.asarray(t, dtype=float)
        e = np.asarray(e, dtype=float)
        rows = tuple(np.asarray(r, dtype=float) for r in rows)
        if t.size == 0:
            return None
        if not np.all(np.isfinite(e)):
            raise PayloadIdError("the measured joint positions hold NaN or infinite values",
                                 "check the robot driver's joint states; the identification needs clean samples")
        out = []
        steps = np.diff(np.concatenate([[self._t_last], t]))     # steps[k]: from the sample before t[k]
        bounds = np.unique(np.concatenate([[0], np.flatnonzero(steps > self.gap), [t.size]]))
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if self._stretch is None or steps[lo] > self.gap:
                if self._stretch is not None:
                    out.append(self._stretch.finish())
                self._stretch = _Stretch(self.h, e.shape[1], [r.shape[1:] for r in rows])
            out.append(self._stretch.push(t[lo:hi], e[lo:hi], [r[lo:hi] for r in rows]))
        self._t_last = float(t[-1])
        return _joined(out)

    def finish(self):
        """Every sample not yet returned (the end of the data: windows end at the last sample)."""
        return None if self._stretch is None else self._stretch.finish()


def _joined(parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(len(parts[0])))


class _Stretch:
    """One stretch of data without gaps: the buffer, what was returned, and the fits."""

    def __init__(self, h: int, n: int, row_shapes):
        self.h, self.width = h, 2 * h + 1
        self._t = np.zeros(0)
        self._e = np.zeros((0, n))
        self._rows = [np.zeros((0,) + tuple(shape)) for shape in row_shapes]
        self._first = 0        # index (in the stretch) of the buffer's first sample
        self._emitted = 0      # index of the first sample not yet returned
        self._total = 0

    def push(self, t, e, rows):
        self._t = np.concatenate([self._t, t])
        self._e = np.concatenate([self._e, e])
        self._rows = [np.concatenate([a, r]) for a, r in zip(self._rows, rows)]
        self._total += t.size
        # A sample is ready once h samples follow it, and the data hold a whole window.
        ready_end = self._total - self.h if self._total >= self.width else self._emitted
        return self._emit(max(ready_end, self._emitted), final=False)

    def finish(self):
        return self._emit(self._total, final=True)

    def _emit(self, end: int, final: bool):
        if end <= self._emitted:
            return None
        n_total = self._total
        width = min(self.width, n_total)
        centres = np.arange(self._emitted, end)
        local = centres - self._first
        if n_total < 3:            # too short for a fit (only at the end): the command alone
            zeros = np.zeros((local.size, self._e.shape[1]))
            fits = (zeros, zeros, zeros)
        else:
            starts = np.clip(centres - self.h, 0, n_total - width)
            fits = _fit(self._t, self._e, local, starts - self._first, width)
        out = (self._t[local], *fits, *[r[local] for r in self._rows])
        self._emitted = end
        if not final:
            # Keep what later windows still need: h samples before the first sample not yet returned.
            drop = max(0, min(self._emitted - self.h, n_total - width) - self._first)
            if drop:
                self._t, self._e = self._t[drop:], self._e[drop:]
                self._rows = [r[drop:] for r in self._rows]
                self._first += drop
        return out
