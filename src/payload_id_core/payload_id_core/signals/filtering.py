"""Filtering and differentiation of sampled signals: zero-phase low-pass, central differences,
irregular sampling handled on a uniform grid, end-transient trimming and parallel decimation
(Khalil 2007 §III: both sides of τ = Y θ pass the same filter).
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline

from payload_id_core.errors import PayloadIdError


def sampling_rate(t) -> float:
    """Nominal sampling rate (Hz): 1 / median sample interval (robust to a few dropped samples)."""
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        raise PayloadIdError(f"only {t.size} sample(s)", "record at least a few seconds of motion")
    return 1.0 / float(np.median(np.diff(t)))


def lowpass(x, fs: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass along axis 0 (forward-backward: sosfiltfilt, so the
    effective order is 2·order and there is no phase lag)."""
    x = np.asarray(x, dtype=float)
    nyq = 0.5 * fs
    if not 0.0 < cutoff_hz < nyq:
        raise PayloadIdError(f"low-pass cutoff {cutoff_hz} Hz is not between 0 and the Nyquist frequency {nyq:.1f} Hz",
                             "choose a cutoff below half the sampling rate")
    # scipy.signal loads scipy.stats with it: half a second of CPU that a command filtering nothing (identify-payload
    # on a recorded command) does not spend (issue 35).
    from scipy import signal  # noqa: PLC0415 - 0.5 s of import, only for the commands that filter

    sos = signal.butter(order, cutoff_hz / nyq, btype="low", output="sos")
    padlen = 3 * (2 * len(sos) + 1)
    if x.shape[0] <= padlen:
        raise PayloadIdError(f"{x.shape[0]} samples are too few to filter (need more than {padlen})",
                             "record a longer run")
    return signal.sosfiltfilt(sos, x, axis=0)


def central_difference(x, t) -> np.ndarray:
    """dx/dt along axis 0 for non-uniform t: second-order central differences inside, second-order
    one-sided at the ends (numpy.gradient with coordinates)."""
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    if t.size < 3:
        raise PayloadIdError(f"only {t.size} samples to differentiate", "record a longer run")
    return np.gradient(x, t, axis=0, edge_order=2)


def is_uniform(t, tolerance: float = 0.01) -> bool:
    """True when every sample interval is within `tolerance` (relative) of the median one."""
    dt = np.diff(np.asarray(t, dtype=float))
    med = float(np.median(dt))
    return bool(np.all(np.abs(dt - med) <= tolerance * med))


# A uniform grid may hold gaps the samples leave (a logger's pause), within these bounds: GRID_GROWTH times the
# samples plus GRID_EXTRA_POINTS (an hour's pause at 250 Hz). A stamp of -1e30 s asked numpy for 1e32 points.
GRID_GROWTH = 10
GRID_EXTRA_POINTS = 1_000_000


def uniform_grid(t) -> np.ndarray:
    """`t` itself when uniformly sampled, else a uniform grid at the median rate over [t[0], t[-1]]."""
    t = np.asarray(t, dtype=float)
    if is_uniform(t):
        return t
    fs = sampling_rate(t)
    points = (t[-1] - t[0]) * fs
    if not points <= GRID_GROWTH * t.size + GRID_EXTRA_POINTS:
        k = int(np.argmax(np.diff(t)))
        raise PayloadIdError(f"the time stamps span {t[-1] - t[0]:.6g} s for {t.size} samples at {fs:.4g} Hz: a gap of "
                             f"{t[k + 1] - t[k]:.6g} s after sample {k} (t = {t[k]:.6g} s) is no pause of a logger",
                             "fix or cut out the samples with wrong time stamps")
    return t[0] + np.arange(int(np.floor(points)) + 1) / fs


# Stamps read with jitter: every stamp within this fraction of the sampling interval of its slot on a straight
# line through them (time against sample index). ±0.5 ms of a 500 Hz driver is 0.25; the real UR10e logger's
# mixed 10/12 ms steps wander 4-60 ms (0.4-6 intervals) off any line, and its residual is a random walk.
GRID_JITTER_LIMIT = 0.5


def nominal_grid(t) -> np.ndarray | None:
    """The nominal sample instants when `t` is a uniform grid read with jitter, else None (stamps to be believed).

    Drivers sample on the controller's fixed period and stamp the sample when it reaches the computer: the stamp
    carries the transport's jitter, the value does not. Taken as the sampling instants, ±0.5 ms of stamp jitter
    puts q̇·δ into the tracking error and the command sampled at the stamp (errors in the regressor's variables),
    which biased every method's mass by about −1 % on the simulated UR10 cell. Jitter does not accumulate: the
    stamps stay within GRID_JITTER_LIMIT intervals of a line a + b·k (k the sample's slot, a dropped sample
    skips one) and their offsets from it do not wander (std of the offsets below the std of their steps, where
    a random walk's is far above). A logger that really samples irregularly (the UR CSVs) fails both tests."""
    t = np.asarray(t, dtype=float)
    if t.size < 3:
        return None
    dt = np.diff(t)
    step = float(np.median(dt))
    if not (np.isfinite(step) and step > 0.0):
        return None
    k = np.concatenate([[0.0], np.cumsum(np.maximum(1.0, np.round(dt / step)))])
    for _ in range(2):
        a, b = np.polynomial.polynomial.polyfit(k, t, 1)
        if not b > 0.0:
            return None
        k = np.round((t - a) / b)
        if np.any(np.diff(k) < 1):
            return None
    a, b = np.polynomial.polynomial.polyfit(k, t, 1)
    r = t - (a + b * k)
    if np.max(np.abs(r)) >= GRID_JITTER_LIMIT * b or np.std(r) > np.std(np.diff(r)):
        return None
    return a + b * k


def filter_on_uniform_grid(t, x, cutoff_hz: float, order: int, derivatives: int):
    """(grid, [x filtered, dx/dt, ...]) on uniform_grid(t): `x` interpolated there by a cubic spline when
    t is irregular, low-pass filtered without phase, differentiated `derivatives` times."""
    grid = uniform_grid(t)
    xg = x if grid is t else CubicSpline(t, x, axis=0)(grid)
    out = [lowpass(xg, sampling_rate(grid), cutoff_hz, order)]
    for _ in range(derivatives):
        out.append(central_difference(out[-1], grid))
    return grid, out


def filtered_derivatives(t, x, cutoff_hz: float, order: int = 4, derivatives: int = 2) -> list[np.ndarray]:
    """[x filtered, dx/dt, d²x/dt²] (up to `derivatives`) at the sample times t, for uniform or
    irregular sampling.

    A digital filter treats samples as equally spaced. Loggers such as the UR's write at irregular
    instants (10 ms and 12 ms steps mixed, with exact time stamps): filtering those samples by
    index warps the time axis, and differentiating against the true stamps then turns the warp
    into noise (an acceleration RMS three times too large on the real UR10e files). So irregular
    data are first interpolated (cubic spline) onto a uniform grid at the median rate, filtered and
    differentiated there, and the results are interpolated back to t.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    grid, out = filter_on_uniform_grid(t, x, cutoff_hz, order, derivatives)
    if grid is t:
        return out
    return [CubicSpline(grid, y, axis=0, extrapolate=True)(t) for y in out]


# Samples within EDGE_PERIODS / cutoff seconds of either end of a zero-phase-filtered signal are
# dropped. At the ends filtfilt runs on its padding and central differences become one-sided:
# with motion at the ends, q̈ is wrong by 2–5× its RMS in the last sample, 4–6 % of it 2/fc
# in, and below 1 % beyond 3/fc (fourth-order Butterworth, 0.3–1.1 Hz sines, 100 and 500 Hz,
# cutoffs 5 and 10 Hz; test_conditioning.test_filter_edges_are_trimmed).
EDGE_PERIODS = 3.0


def edge_seconds(cutoff_hz: float) -> float:
    """Time trimmed at each end of a signal filtered at `cutoff_hz` (EDGE_PERIODS periods)."""
    return EDGE_PERIODS / float(cutoff_hz)


def decimate_parallel(tau, Y, fs: float, factor: int, cutoff_hz: float | None = None, order: int = 4):
    """Khalil 2007 §III parallel filtering: torques `tau` (N, ...) and every column of the
    observation matrix `Y` (N, ...) pass the same zero-phase low-pass filter, then one sample in
    `factor` is kept. Default cutoff 0.8·fs/(2·factor), as Matlab's `decimate` (a Butterworth
    here). Returns (tau_d, Y_d, kept_indices).
    """
    factor = int(factor)
    if factor < 1:
        raise PayloadIdError(f"decimation factor {factor} is not a positive integer", "use 1 (none) or more")
    tau = np.asarray(tau, dtype=float)
    Y = np.asarray(Y, dtype=float)
    idx = np.arange(0, tau.shape[0], factor)
    if factor == 1:
        return tau, Y, idx
    fc = 0.8 * fs / (2.0 * factor) if cutoff_hz is None else cutoff_hz
    tau_f = lowpass(tau, fs, fc, order)
    Y_f = lowpass(Y.reshape(Y.shape[0], -1), fs, fc, order).reshape(Y.shape)
    return tau_f[idx], Y_f[idx], idx
