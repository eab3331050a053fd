"""The monitor's faster per-sample paths (issue 35's monitor item) give the numbers of the code they replace, bit
for bit.

- PayloadMonitor._trusted_run: a run's trusted joints and moving-until times at once, against the rule _trusted applied
  sample by sample (the monitor's loop called it per sample);
- Cusum.update: the statistics updated in place, the NaN zero times looked for only after a reset, one test for the
  usual no-alarm case, against the update as it was (new arrays per sample);
- MomentumFilter.update's loop by iteration: the observer's residual against the loop as it was (indexing).
"""

from __future__ import annotations

import numpy as np
import pytest
from monitor_fixtures import live_cell

from payload_id_core.monitor import PayloadMonitor
from payload_id_core.monitor.detect import Cusum, DetectorSettings
from payload_id_core.monitor.observer import MomentumFilter


@pytest.fixture(scope="module")
def cell():
    return live_cell()


def test_trusted_run_gives_trusted_sample_by_sample(cell):
    model, robot, _ = cell
    rng = np.random.default_rng(4)
    n_samples = 400
    t = 5.0 + 0.002 * np.arange(n_samples)
    qd = rng.standard_normal((n_samples, model.n)) * 0.5
    qd[50:120, 2] = 0.01                                   # one joint creeping while the others move
    qd[150:200] = 0.001                                    # all at rest: nothing creeps
    qd[250:300, 4] = np.linspace(-0.02, 0.02, 50)          # a reversal through zero
    fast, ref = (PayloadMonitor(model, robot, "tool0") for _ in range(2))
    untrusted = 0
    for lo, hi in ((0, 7), (7, 150), (150, 151), (151, 260), (260, n_samples)):   # runs of several sizes, in turn
        weights, moving_until = fast._trusted_run(t[lo:hi], qd[lo:hi])
        for k in range(lo, hi):
            expected = ref._trusted(float(t[k]), qd[k])
            np.testing.assert_array_equal(weights[k - lo], expected)
            assert moving_until[k - lo] == ref._moving_until
            untrusted += int(np.sum(expected == 0.0))
        np.testing.assert_array_equal(fast._creep_until, ref._creep_until)
        assert fast._moving_until == ref._moving_until
    assert untrusted > 100     # the creeping and reversing joints were left out for a while: the rule was exercised


class ReferenceCusum(Cusum):
    """Cusum.update as it was before issue 35's monitor item."""

    def update(self, t, z, drift=None):
        nu = self.s.drift if drift is None else drift
        self._zero_up[np.isnan(self._zero_up)] = t
        self._zero_down[np.isnan(self._zero_down)] = t
        self.g_up = np.maximum(0.0, self.g_up + z - nu)
        self.g_down = np.maximum(0.0, self.g_down - z - nu)
        self._zero_up[self.g_up == 0.0] = t
        self._zero_down[self.g_down == 0.0] = t
        up, down = self.g_up > self.s.threshold, self.g_down > self.s.threshold
        if not (up.any() or down.any()):
            return None
        return float(min(np.min(self._zero_up[up], initial=np.inf), np.min(self._zero_down[down], initial=np.inf)))


def test_cusum_in_place_gives_the_reference_statistics():
    settings = DetectorSettings()
    fast, ref = Cusum(6, settings), ReferenceCusum(6, settings)
    rng = np.random.default_rng(5)
    alarms = 0
    for k in range(3000):
        t = 0.002 * k
        if k in (700, 1900):
            fast.reset(), ref.reset()          # NaN zero times, set again by the next sample
        if k == 1300:
            fast.reset(t), ref.reset(t)
        z = rng.standard_normal(6) + (4.0 if 400 <= k < 420 or 1500 <= k < 1530 else 0.0) * np.sign(np.arange(6) - 2.5)
        drift = np.abs(rng.standard_normal(6)) * 0.5 + 0.5 if k % 2 else None
        got, expected = fast.update(t, z, drift), ref.update(t, z, drift)
        assert got == expected or (got is None and expected is None)
        alarms += expected is not None
        for name in ("g_up", "g_down", "_zero_up", "_zero_down"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name))
    assert alarms > 10          # both directions alarmed, and their change times agreed


class ReferenceMomentumFilter(MomentumFilter):
    """MomentumFilter.update's loop as it was before issue 35's monitor item (indexing per sample)."""

    def update(self, t, p, f):
        out = np.empty_like(f)
        first = 0
        if self._p0 is None and t.size:
            self._p0, self._t_last, self._f_last = p[0].copy(), t[0], f[0].copy()
            out[0] = self.y
            first = 1
        if first == t.size:
            return out
        dt = np.diff(np.concatenate((np.array([self._t_last], dtype=float), t[first:])))
        stop = t.size
        m = stop - first
        trailing = (1,) * (f.ndim - 1)
        increment = (0.5 * dt[:m]).reshape((-1,) + trailing) * (f[first:stop] + np.concatenate(
            (self._f_last[None], f[first:stop - 1])))
        change = p[first:stop] - self._p0
        integral, gain, scratch, y = self._integral, self.gain, self._scratch, self.y
        for i in range(m):
            np.multiply(dt[i], y, out=scratch)
            np.subtract(increment[i], scratch, out=scratch)
            integral += scratch
            y = out[first + i]
            np.subtract(integral, change[i], out=scratch)
            np.multiply(gain, scratch, out=y)
        self.y = out[stop - 1].copy()
        self._t_last, self._f_last = t[stop - 1], f[stop - 1].copy()
        return out


@pytest.mark.parametrize("shape", [(6,), (6, 10)])
def test_momentum_filter_by_iteration_gives_the_reference_numbers(shape):
    rng = np.random.default_rng(6)
    gain = np.full(6, 50.0)
    fast, ref = MomentumFilter(gain, shape), ReferenceMomentumFilter(gain, shape)
    t0 = 0.0
    for size in (1, 10, 7, 10, 3):
        t = t0 + np.cumsum(rng.uniform(0.001, 0.003, size))
        t0 = float(t[-1])
        p, f = rng.standard_normal((2, size) + shape)
        np.testing.assert_array_equal(fast.update(t, p, f), ref.update(t, p, f))
    assert np.abs(fast.y).max() > 0
