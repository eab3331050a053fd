"""The monitor's faster per-sample paths (issue 35's monitor item) give the numbers of the code they replace, bit
for bit.

- PayloadMonitor._trusted_run: a run's trusted joints and moving-until times at once, against the rule _trusted applied
  sample by sample (the monitor's loop called it per sample);
- Cusum.update: the statistics updated in place, the NaN zero times looked for only after a reset, one test for the
  usual no-alarm case, against the update as it was (new arrays per sample);
- MomentumFilter.update's loop by iteration: the observer's residual against the loop as it was (indexing);
- the push's columns (contact_wrench.FilteredContactJacobian.columns: Jᵀ B(R), B linear in R) against the column by
  column formula, and G against the former code (cross products, einsum, a filter of its own), to 1e-9 relative;
- the monitor's four filters run as one (PayloadMonitor._filtered): r₀, F and L bit for bit, G, the load-or-push rows
  and verdict to 1e-9, the same events, against the feed as it was, on uneven blocks with a NaN sample and a gap.
"""

from __future__ import annotations

from dataclasses import astuple, replace

import numpy as np
import pinocchio as pin
import pytest
from monitor_fixtures import live_cell

from payload_id_core.monitor import PayloadMonitor
from payload_id_core.monitor.contact_wrench import WORLD_ALIGNED, WRENCH, FilteredContactJacobian, pushed_links
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


class ReferenceContactJacobian:
    """contact_wrench.FilteredContactJacobian as it was before issue 35's contact item: per block, the moment columns
    by a cross product of R's columns with the unit vectors and an einsum with J_ω, then its own MomentumFilter."""

    def __init__(self, model, frame, gain):
        self.pm = model.model
        self.data = self.pm.createData()
        self.frame_id = model.frame_id(frame)
        self._filter = MomentumFilter(gain, (model.n, WRENCH))

    def reset(self):
        self._filter.reset()

    def update(self, t, q):
        N, n = q.shape
        J = np.empty((N, 6, n))
        R = np.empty((N, 3, 3))
        for k in range(N):
            J[k] = pin.computeFrameJacobian(self.pm, self.data, q[k], self.frame_id, WORLD_ALIGNED)
            R[k] = self.data.oMf[self.frame_id].rotation
        moments = np.cross(np.transpose(R, (0, 2, 1))[:, :, None, :], np.eye(3)[None, None, :, :]).reshape(N, 9, 3)
        Jt = np.empty((N, n, WRENCH))
        Jt[:, :, :3] = np.transpose(J[:, :3], (0, 2, 1))
        Jt[:, :, 3:] = np.einsum("kwj,kmw->kjm", J[:, 3:], moments)
        return self._filter.update(t, np.zeros_like(Jt), Jt)


def straightforward_columns(model, frame, q):
    """The push's joint-torque columns sample by sample, column by column: J_vᵀ e_j, then J_ωᵀ ((R e_i) × e_j)."""
    pm = model.model
    data, frame_id = pm.createData(), model.frame_id(frame)
    out = np.empty((len(q), model.n, WRENCH))
    for k, q_k in enumerate(q):
        J = pin.computeFrameJacobian(pm, data, q_k, frame_id, WORLD_ALIGNED)
        R = data.oMf[frame_id].rotation
        for j in range(3):
            out[k, :, j] = J[:3].T @ np.eye(3)[j]
            for i in range(3):
                out[k, :, 3 + 3 * i + j] = J[3:].T @ np.cross(R[:, i], np.eye(3)[j])
    return out


def test_contact_columns_are_the_straightforward_ones_and_g_the_former_codes(cell):
    """FilteredContactJacobian's columns (Jᵀ B(R), B linear in R) against the column-by-column formula on poses over
    the whole workspace, and G against the former code over uneven blocks with restarts (1e-9 relative)."""
    model, _, task = cell
    rng = np.random.default_rng(8)
    poses = rng.uniform(-np.pi, np.pi, (60, model.n))
    fast = FilteredContactJacobian(model, "tool0", np.full(model.n, 50.0))
    expected = straightforward_columns(model, "tool0", poses)
    np.testing.assert_allclose(fast.columns(poses), expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(fast.columns(poses[3]), expected[3:4], rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    gain = np.array([50.0, 50.0, 40.0, 60.0, 50.0, 30.0])        # per joint, as MomentumFilter allows
    fast, ref = FilteredContactJacobian(model, "tool0", gain), ReferenceContactJacobian(model, "tool0", gain)
    t, q = task.joints.t, task.joints.q
    lo, n_blocks = 0, 0
    for size in (1, 10, 7, 23, 1, 10, 64, 3, 10, 40, 10, 10, 200):
        if n_blocks in (4, 9):
            fast.reset(), ref.reset()              # as the monitor after a pause
        s = slice(lo, lo + size)
        got, want = fast.update(t[s], q[s]), ref.update(t[s], q[s])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
        lo, n_blocks = lo + size, n_blocks + 1
    assert lo > 350 and np.abs(want).max() > 0.5     # the filter had settled on the motion's columns (m, 1)


class ReferenceFeedMonitor(PayloadMonitor):
    """PayloadMonitor with its feed as it was before issue 35's contact item: each filter on its own (the observer's,
    the payload regressor's, the load friction's, and the former contact Jacobian's)."""

    def __init__(self, model, robot, frame):
        super().__init__(model, robot, frame)
        self.contact_jacobian = ReferenceContactJacobian(model, frame, self.gain)
        self.link_jacobians = [ReferenceContactJacobian(model, link, self.gain) for link in pushed_links(model, frame)]

    def _filtered(self, t, q, qd, tau):
        fresh = self.observer._filter._p0 is None           # the observers restarted (a pause): Y's filter too
        r0 = self.observer.update(t, q, qd, tau)
        F = self.regressor.update(t, q, qd)
        G = np.concatenate([jacobian.update(t, q) for jacobian in (self.contact_jacobian, *self.link_jacobians)],
                           axis=2)
        L = self.load_friction.update(t, qd, *self.observer.terms, *self.regressor.terms, self.state.phi)
        return r0, F, L, G, robot_regressor_filtered(self, t, fresh)


def robot_regressor_filtered(monitor, t, fresh: bool):
    """Y (N, n, p): robot.yaml's regressor through a MomentumFilter of its own (h201), after the observer's update of
    the same samples (the regressor it kept); (N, n, 0) without robot.yaml's C_a."""
    n = monitor.model.n
    if monitor.theta_cov is None:
        return np.zeros((t.size, n, 0))
    own = monitor.__dict__.setdefault("_reference_robot_filter",
                                      MomentumFilter(monitor.gain, (n, monitor.theta_cov.shape[0])))
    if fresh:
        own.reset()
    P_a, B_a = monitor.observer.dynamics.robot_regressor_terms()
    return own.update(t, -P_a, -B_a)


def _recording_steps(monitor):
    """Each sample's (t, F, r₀, L, weights, G, Y) as _step gets them."""
    steps = []
    step = monitor._step

    def recorded(t, F, r0, L, w, out, G, Y):
        steps.append((t, F.copy(), r0.copy(), L.copy(), w.copy(), G.copy(), Y.copy()))
        step(t, F, r0, L, w, out, G, Y)

    monitor._step = recorded
    return steps


def test_monitor_feed_gives_the_former_feeds_numbers(cell):
    """The monitor's filters run as one (r₀, F, L, G side by side) and the contact columns by B(R), against the feed
    as it was (a filter each, the former contact Jacobian): on uneven blocks with a NaN sample and a gap (each a
    pause and a restart), with a push on the flange in motion, r₀, F, L bit for bit, G and the load-or-push rows and
    verdict to 1e-9 relative, the same events and payload."""
    model, robot, task = cell
    j = task.joints
    t, q, qd, tau = j.t.copy(), j.q.copy(), j.qd.copy(), j.tau.copy()
    pm, data, frame_id = model.model, model.model.createData(), model.frame_id("tool0")
    push = np.array([25.0, -10.0, -40.0])                    # N, base frame, on the flange from 0.3 s to 0.8 s
    for k in np.flatnonzero((t >= t[0] + 0.3) & (t < t[0] + 0.8)):
        tau[k] += pin.computeFrameJacobian(pm, data, q[k], frame_id, WORLD_ALIGNED)[:3].T @ push
    tau[120, 2] = np.nan                                     # a NaN sample: a pause, skipped
    keep = np.ones(t.size, dtype=bool)
    keep[300:330] = False                                    # 60 ms lost: a gap, a pause
    t, q, qd, tau = t[keep], q[keep], qd[keep], tau[keep]
    fast, ref = PayloadMonitor(model, robot, "tool0"), ReferenceFeedMonitor(model, robot, "tool0")
    fast_steps, ref_steps = _recording_steps(fast), _recording_steps(ref)
    results = {"fast": [], "ref": []}
    sizes = [1, 10, 7, 13, 10, 2, 31, 10, 10, 5]
    lo, b = 0, 0
    while lo < t.size:
        s = slice(lo, lo + sizes[b % len(sizes)])
        for name, monitor in (("fast", fast), ("ref", ref)):
            u = monitor.update(t[s], q[s], qd[s], tau[s])
            results[name].append(([(e.kind, e.t_change, e.t_alarm, e.mass_change_text) for e in u.events], u.paused))
        lo, b = s.stop, b + 1
    assert results["fast"] == results["ref"]
    assert sum(paused is not None for _, paused in results["ref"]) == 2      # the NaN and the gap
    assert len(fast_steps) == len(ref_steps) == t.size - 1
    for got, want in zip(fast_steps, ref_steps):
        assert got[0] == want[0]
        for a, e in zip(got[1:5], want[1:5]):                # F, r₀, L, the weights: the same operations, bit for bit
            np.testing.assert_array_equal(a, e)
    G, G_ref = np.array([s[5] for s in fast_steps]), np.array([s[5] for s in ref_steps])
    np.testing.assert_allclose(G, G_ref, rtol=1e-9, atol=1e-9 * np.abs(G_ref).max())
    # robot.yaml's filtered regressor (h201): the one-array feed's against its own filter, the same operations
    Y, Y_ref = np.array([s[6] for s in fast_steps]), np.array([s[6] for s in ref_steps])
    assert Y.shape[-1] == robot.theta.size and np.abs(Y_ref).max() > 0.1
    np.testing.assert_array_equal(Y, Y_ref)
    np.testing.assert_array_equal(fast.state.phi, ref.state.phi)
    lp, lp_ref = fast.load_or_push, ref.load_or_push
    assert lp.rows == lp_ref.rows and lp.moving_rows == lp_ref.moving_rows and lp.rows > 50
    np.testing.assert_allclose(lp.ZtZ, lp_ref.ZtZ, rtol=1e-9, atol=1e-9 * np.abs(lp_ref.ZtZ).max())
    # The rows since the gap's restart (a 1 s task): judged on fewer moving rows than the monitor waits for.
    lp.s.min_moving_rows = lp_ref.s.min_moving_rows = 10
    assert lp.moving_rows >= 10
    verdict, verdict_ref = lp.judge(1.0), lp_ref.judge(1.0)
    assert verdict is not None and verdict_ref is not None
    # and the same with a push on the upper arm in both models (contact_wrench, h149)
    assert verdict.with_earlier_push is not None and verdict_ref.with_earlier_push is not None
    for v, v_ref in ((verdict, verdict_ref), (verdict.with_earlier_push, verdict_ref.with_earlier_push)):
        for a, e in zip(astuple(replace(v, with_earlier_push=None)), astuple(replace(v_ref, with_earlier_push=None))):
            assert a == e if e is None else a == pytest.approx(e, rel=1e-9, abs=1e-9)
    assert np.abs(G_ref).max() > 0.5
