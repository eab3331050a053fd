"""The measured tracking error added back to the commanded motion.

Identification on the commanded q_d, q̇_d, q̈_d (Xu 2024 §3.2) avoids differentiating noisy
measurements, but the arm does not move exactly as commanded: the trajectory controller acts on an
error, and under a payload its feedforward does not know that error grows with the payload's torque.
On the simulated UR10 cell (PID, 25 Hz bandwidth) it is 0.1-0.4 mrad, about 1 % of q̈ at 1.5-3 Hz;
regressing on the command alone put every method's mass +0.9 to +1.1 % off on a noise-free 2 s-period
excitation, and difference-rls's inertia 4.8 % off on the bundled ur10_payload_inertia run (3.8 % with
this correction; bench/payload.py cell_tracking_*).

So the regressor gets q = q_d + e, q̇ = q̇_d + ė, q̈ = q̈_d + ë, where e = q_measured − q_d is smoothed
and differentiated by local polynomial fits (Savitzky and Golay 1964, here in true time so jittered
stamps are exact): a quartic over ±HALF_WINDOW_S, whose gain on ë is within 1 % of one up to 5 Hz and
which adds 0.013 rad/s² of noise to q̈ per 10 µrad of encoder noise at 500 Hz. Near the ends of the data
the window stays inside it (the fit is evaluated off-centre), so no sample is lost.

The same fits run offline (tracking_error_motion, on a whole recording) and in the ROS session
(TrackingErrorStream, HALF_WINDOW_S behind the newest joint state): both give the same numbers.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.errors import PayloadIdError

HALF_WINDOW_S = 0.05
ORDER = 4


def window_samples(t: np.ndarray) -> int:
    """Samples on each side of the centre: HALF_WINDOW_S at the median sampling interval, at least ORDER."""
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        return ORDER
    dt = float(np.median(np.diff(t)))
    if not (np.isfinite(dt) and dt > 0.0):
        raise PayloadIdError("joint state time stamps do not increase",
                             "record the joint states with their header stamps, in order")
    return max(ORDER, int(round(HALF_WINDOW_S / dt)))


def _fit(t: np.ndarray, e: np.ndarray, centres: np.ndarray, starts: np.ndarray, width: int):
    """e, ė, ë at t[centres] from a polynomial fitted over t[starts[k]:starts[k] + width]."""
    order = min(ORDER, width - 1)
    idx = starts[:, None] + np.arange(width)[None, :]                 # (m, width)
    scale = max(float(np.max(np.abs(t[idx] - t[centres][:, None]))), 1e-9)
    x = (t[idx] - t[centres][:, None]) / scale                         # in [-1, 1]: a well-conditioned fit
    V = x[:, :, None] ** np.arange(order + 1)[None, None, :]          # (m, width, order+1)
    A = np.einsum("mwi,mwj->mij", V, V)
    b = np.einsum("mwi,mwn->min", V, e[idx])                          # (m, order+1, n)
    c = np.linalg.solve(A, b)
    value = c[:, 0]
    rate = c[:, 1] / scale if order >= 1 else np.zeros_like(value)
    accel = 2.0 * c[:, 2] / scale**2 if order >= 2 else np.zeros_like(value)
    return value, rate, accel


def tracking_error_motion(t, e, half_samples: int | None = None):
    """(e, ė, ë) smoothed at every sample of a whole signal: t (N,), e (N, n) the measured minus the commanded
    positions. Centred windows of 2·half_samples + 1 samples (default window_samples(t)); near the ends
    the window is the first or last one that fits."""
    t = np.asarray(t, dtype=float)
    e = np.asarray(e, dtype=float)
    h = window_samples(t) if half_samples is None else int(half_samples)
    n = t.size
    if n < 3:
        raise PayloadIdError(f"only {n} samples to smooth the tracking error over", "record a longer run")
    width = min(2 * h + 1, n)
    centres = np.arange(n)
    starts = np.clip(centres - h, 0, n - width)
    return _fit(t, e, centres, starts, width)


class TrackingErrorStream:
    """tracking_error_motion over joint states arriving in chunks, `half_samples` behind the newest one.

    push() takes the next chunk (times, tracking errors, and any per-sample rows to carry along) and returns
    the samples whose window is complete, with their rows; finish() returns the rest, fitted as
    tracking_error_motion fits the end of a whole signal. Samples come out in order, each once, with the
    numbers tracking_error_motion gives on everything pushed."""

    def __init__(self, half_samples: int):
        self.h = int(half_samples)
        self.width = 2 * self.h + 1
        self._t = np.zeros(0)
        self._e: np.ndarray | None = None
        self._rows: list[np.ndarray] | None = None
        self._first = 0        # global index of the buffer's first sample
        self._emitted = 0      # global index of the first sample not yet returned
        self._total = 0

    def push(self, t, e, *rows):
        t = np.asarray(t, dtype=float)
        e = np.asarray(e, dtype=float)
        if self._e is None:
            self._e = np.zeros((0, e.shape[1]))
            self._rows = [np.zeros((0,) + np.shape(r)[1:]) for r in rows]
        assert self._rows is not None
        self._t = np.concatenate([self._t, t])
        self._e = np.concatenate([self._e, e])
        self._rows = [np.concatenate([a, np.asarray(r, dtype=float)]) for a, r in zip(self._rows, rows)]
        self._total += t.size
        # A sample is ready once h samples follow it, and the data hold a whole window.
        ready_end = self._total - self.h if self._total >= self.width else self._emitted
        return self._emit(max(ready_end, self._emitted), final=False)

    def finish(self):
        """Every sample not yet returned (the end of the data: windows end at the last sample)."""
        return self._emit(self._total, final=True)

    def _emit(self, end: int, final: bool):
        if self._e is None or end <= self._emitted:
            return None
        assert self._rows is not None
        n_total = self._total
        if n_total < 3:
            raise PayloadIdError(f"only {n_total} samples to smooth the tracking error over", "record a longer run")
        width = min(self.width, n_total)
        centres = np.arange(self._emitted, end)
        starts = np.clip(centres - self.h, 0, n_total - width)
        local = centres - self._first
        value, rate, accel = _fit(self._t, self._e, local, starts - self._first, width)
        out = (self._t[local], value, rate, accel, *[r[local] for r in self._rows])
        self._emitted = end
        if not final:
            # Keep what later windows still need: h samples before the first sample not yet returned.
            drop = max(0, min(self._emitted - self.h, n_total - width) - self._first)
            if drop:
                self._t, self._e = self._t[drop:], self._e[drop:]
                self._rows = [r[drop:] for r in self._rows]
                self._first += drop
        return out
