"""The online convergence rule's batch check made cheaper without changing an answer (h158): robot.yaml's residual
over the samples fed kept one sample's rows at a time (against_robot_fit.FedResidual), one SVD for the rank analysis
and the first solve of weighted_lstsq, and the model-error route refused without the batch fit where robot.yaml
cannot make it pass (online/base._may_be_model_limited). Each is checked against the computation it replaces, to
the bit. A few seconds (one 8 s UR10 run at 100 Hz)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from payload_id_core.dynamics import bundled_urdf
from payload_id_core.payload import against_robot_fit as fit
from payload_id_core.payload.covariance_extra import online_covariance_extra
from payload_id_core.payload.jacobian import identifiable_entries
from payload_id_core.payload.linear import _columns_outermost, weighted_lstsq
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.base import OnlineEstimator
from payload_id_core.robot_id.gear_friction import UnmodelledGear
from payload_id_core.testing.sim_runs import drift_run, given_gains_robot
from payload_id_core.testing.synthetic import sum_of_sines


@pytest.fixture(scope="module")
def ur10_run():
    """(model, robot without a measured model error, (t, q, q̇, q̈, τ) of drift_run's seed-2 run: its motion and
    torques)."""
    model, robot = given_gains_robot(str(bundled_urdf("ur10")))
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=2)
    tau = drift_run(model, 2).joints.tau              # its recording keeps the first len(tau) samples
    return model, robot, (t[:len(tau)], q[:len(tau)], qd[:len(tau)], qdd[:len(tau)], tau)


def test_the_fed_residual_is_the_whole_runs_to_the_bit(ur10_run):
    model, robot, (_, q, qd, qdd, tau) = ur10_run
    fed = fit.FedResidual(model, robot, model.default_payload_frame)
    for end in (7, 300, 301, q.shape[0]):          # blocks of 7, 293, 1 and the rest, the arrays grown twice
        got = fed.on(q[:end], qd[:end], qdd[:end], tau[:end])
    whole = fit.residual_on(model, robot, model.default_payload_frame, q, qd, qdd, tau)
    for name in ("y_a", "tau_a", "r", "w_l", "fric", "qd"):
        assert np.array_equal(getattr(got, name), getattr(whole, name)), name
    moving = np.flatnonzero(np.max(np.abs(qd), axis=1) > 0.05)
    assert np.array_equal(whole.rows(moving).r, fit.residual_on(model, robot, model.default_payload_frame, q[moving],
                                                                qd[moving], qdd[moving], tau[moving]).r)


def test_one_svd_serves_the_rank_analysis_and_the_first_solve():
    """weighted_lstsq's determined entries are identifiable_entries' with every column live (the SVD shared) and with
    a dead one (its own); the undetermined column (a copy of another) is found either way."""
    rng = np.random.default_rng(3)
    W = rng.standard_normal((200, 3, 5))
    W[..., 4] = W[..., 1]
    y = rng.standard_normal((200, 3))
    sol = weighted_lstsq(W, y)
    assert list(sol.identifiable) == list(identifiable_entries(W.reshape(-1, 5))) == [True, False, True, True, False]
    W[..., 2] = 0.0
    sol = weighted_lstsq(W, y)
    assert list(sol.identifiable) == list(identifiable_entries(W.reshape(-1, 5))) == [True, False, False, True, False]


def _run(model, robot, samples, monkeypatch, skip: bool):
    calls: list[int] = []
    parts = OnlineEstimator.covariance_extra_parts

    def counted(self, *a, **kw):
        calls.append(self.samples)
        return parts(self, *a, **kw)

    monkeypatch.setattr(OnlineEstimator, "covariance_extra_parts", counted)
    if not skip:
        monkeypatch.setattr(OnlineEstimator, "_may_be_model_limited", lambda self, z, std: True)
    # A bar of 0.02 %: the rule looks for the whole run (at 0.5 % its first route declares at 2.25 s)
    est = OnlinePayloadEstimator(model, robot, model.default_payload_frame, "difference-rls", rate_hz=100.0,
                                 mass_rel_std=0.0002)
    est.update_batch(*samples)
    monkeypatch.undo()
    return est, calls


def test_the_model_error_route_is_refused_without_the_batch_fit_only_where_it_cannot_pass(ur10_run, monkeypatch):
    """robot.yaml without a measured model error: the lasting share is 0, the route can never pass. With the fit
    skipped the estimate, its history and the declaration are the same to the bit, with fewer batch fits."""
    model, robot, samples = ur10_run
    assert robot.model_error is None
    fast, fast_calls = _run(model, robot, samples, monkeypatch, skip=True)
    slow, slow_calls = _run(model, robot, samples, monkeypatch, skip=False)
    assert len(fast_calls) < len(slow_calls), (fast_calls, slow_calls)
    a, b = fast.estimate(), slow.estimate()
    assert np.array_equal(a.phi, b.phi) and np.array_equal(a.covariance, b.covariance, equal_nan=True)
    assert fast.converged == slow.converged
    assert np.array_equal([fast.convergence_time], [slow.convergence_time], equal_nan=True)
    assert np.array_equal(a.history["phi"], b.history["phi"], equal_nan=True)


# -- the batch check's fits from the Gram matrix (h178) ---------------------------------------------------------------
def _same_fit(a, b, rtol: float) -> None:
    assert np.array_equal(a.identifiable, b.identifiable)
    assert (a.bandwidth, a.rows) == (b.bandwidth, b.rows)
    np.testing.assert_allclose(a.x, b.x, rtol=rtol, atol=rtol * np.max(np.abs(b.x)))
    np.testing.assert_allclose(a.sigma, b.sigma, rtol=rtol)
    np.testing.assert_allclose(a.inflation, b.inflation, rtol=rtol)
    for got, want in ((a.cov, b.cov), (a.hac_cov, b.hac_cov)):
        ok = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), ok)
        np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=rtol * np.max(np.abs(want[ok])))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), samples=st.integers(20, 400), joints=st.integers(1, 6),
       unknowns=st.integers(1, 12), correlated=st.floats(0.0, 0.95), held=st.booleans())
def test_the_gram_fit_is_the_svd_fit_to_rounding(seed, samples, joints, unknowns, correlated, held):
    """weighted_lstsq(gram=True) on a random run (columns of very different scales, serially correlated residuals,
    some unknowns held by a prior): the same determined entries, lags and solution as the SVD's to rounding."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((samples, joints, unknowns)) * 10.0 ** rng.uniform(-3, 3, unknowns)
    noise = rng.standard_normal((samples, joints))
    for t in range(1, samples):                     # AR(1) residuals: the Newey–West part has lags to sum
        noise[t] += correlated * noise[t - 1]
    y = W @ rng.standard_normal(unknowns) + noise
    prior = np.where(rng.random(unknowns) < 0.3, rng.uniform(0.1, 2.0, unknowns), np.inf) if held else None
    _same_fit(weighted_lstsq(W, y, prior_std=prior, gram=True), weighted_lstsq(W, y, prior_std=prior), 1e-9)


def test_an_ill_conditioned_or_dead_column_takes_the_svd_to_the_bit():
    """Where the Gram matrix cannot tell the rank as the SVD does (a column a copy of another, a dead one, a
    condition number above GRAM_MAX_COND), the fit is the SVD's, to the bit."""
    rng = np.random.default_rng(5)
    for make in (lambda W: W[..., 1], lambda W: 0.0 * W[..., 1], lambda W: W[..., 1] + 1e-4 * W[..., 2]):
        W = rng.standard_normal((300, 3, 5))
        W[..., 4] = make(W)
        y = rng.standard_normal((300, 3))
        a, b = weighted_lstsq(W, y, gram=True), weighted_lstsq(W, y)
        for name in ("x", "cov", "hac_cov", "sigma", "identifiable"):
            assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


def test_the_check_from_the_gram_matrix_declares_as_the_svd_one(ur10_run, monkeypatch):
    """The online rule's batch check (covariance_extra_parts with gram=True, as _extra_on_fed asks it) against the
    same check on the SVD over the whole run: every check's extra mass variance to 1e-10, the same notes, the same
    declaration (date and route) and estimate; with the 0.5 % bar (declared at its first check) and a 0.02 % one
    with the model-error route made to look (checked to the end of the run, every 5 % of the motion)."""
    model, robot, samples = ur10_run
    parts = OnlineEstimator.covariance_extra_parts
    seen: dict[bool, list] = {True: [], False: []}

    def run(gram: bool, bar: float):
        def check(self, *a, **kw):
            kw["gram"] = gram
            got = parts(self, *a, **kw)
            seen[gram].append((self.samples, float(got.extra[0, 0]), [str(n) for n in got.notes]))
            return got
        monkeypatch.setattr(OnlineEstimator, "covariance_extra_parts", check)
        if bar < 0.005:
            monkeypatch.setattr(OnlineEstimator, "_may_be_model_limited", lambda self, z, std: True)
        est = OnlinePayloadEstimator(model, robot, model.default_payload_frame, "difference-rls", rate_hz=100.0,
                                     mass_rel_std=bar)
        est.update_batch(*samples)
        monkeypatch.undo()
        return est

    for bar, declared in ((0.005, True), (0.0002, False)):
        seen[True].clear()
        seen[False].clear()
        gram, svd = run(True, bar), run(False, bar)
        assert svd.converged is gram.converged is declared
        assert np.array_equal([gram.convergence_time], [svd.convergence_time], equal_nan=True)
        assert gram.converged_by == svd.converged_by
        assert [s for s, _, _ in seen[True]] == [s for s, _, _ in seen[False]]
        assert len(seen[True]) >= (1 if declared else 10)
        np.testing.assert_allclose([v for _, v, _ in seen[True]], [v for _, v, _ in seen[False]], rtol=1e-10)
        assert [n for _, _, n in seen[True]] == [n for _, _, n in seen[False]]
        a, b = gram.estimate(), svd.estimate()
        assert np.array_equal(a.phi, b.phi) and np.array_equal(a.covariance, b.covariance, equal_nan=True)


# -- h187: the check's passes over every sample fed made fewer, each answer the same to the bit -----------------------
def test_the_fed_residual_keeps_the_gear_error_and_the_check_is_the_fresh_ones_to_the_bit(ur10_run):
    """FedResidual keeps robot.yaml's unmodelled gear friction's torque error row by row (with τ̂_a and the payload's
    columns): the error whole-run UnmodelledGear.torque_error makes, and online_covariance_extra on the fed residual
    the one it makes from scratch (gear term included), to the bit."""
    model, robot, (_, q, qd, qdd, tau) = ur10_run
    n, p = q.shape[1], np.asarray(robot.theta).size
    rng = np.random.default_rng(7)
    gear = UnmodelledGear(mu=np.full(n, 0.02), mu_std=np.full(n, 0.002), theta_shift=1e-3 * rng.standard_normal(p))
    geared = replace(robot, unmodelled_gear=gear)
    frame = model.default_payload_frame
    fed = fit.FedResidual(model, geared, frame)
    for end in (7, 300, 301, q.shape[0]):
        got = fed.on(q[:end], qd[:end], qdd[:end], tau[:end])
    whole = fit.residual_on(model, geared, frame, q, qd, qdd, tau)
    assert whole.gear_error is None and got.gear_error is not None
    want = gear.torque_error(whole.y_a, geared.theta, qd, geared.friction.sign_epsilon)
    assert np.array_equal(got.gear_error, want)
    for gram in (True, False):
        a = online_covariance_extra(model, geared, frame, q, qd, qdd, tau, load_friction=True, gram=gram,
                                    residual=got)
        b = online_covariance_extra(model, geared, frame, q, qd, qdd, tau, load_friction=True, gram=gram)
        assert np.array_equal(a.extra, b.extra) and [str(x) for x in a.notes] == [str(x) for x in b.notes]
        assert any("gear friction" in str(x) for x in a.notes)
    moving = np.flatnonzero(np.max(np.abs(qd), axis=1) > 0.05)
    assert np.array_equal(got.rows(moving).gear_error, want[moving])


@pytest.mark.parametrize("seed", range(6))
def test_the_scores_columns_are_the_boolean_index_in_values_and_layout(seed):
    """linear._columns_outermost makes A.reshape(N, n, u)[..., ok] (the array weighted_lstsq's Newey–West scores
    were summed from): the same values and, along every axis longer than one, the same strides, so np.einsum sums
    each sample's joints in the same order; blocks split mid-sample and a last short one included."""
    rng = np.random.default_rng(seed)
    N, n, u = int(rng.integers(100, 3000)), int(rng.integers(2, 8)), int(rng.integers(2, 40))
    A = rng.standard_normal((N * n, u)) * 10.0 ** rng.uniform(-3, 3, u)
    ok = np.ones(u, dtype=bool) if seed % 2 else rng.random(u) < 0.6
    ok[0] = True
    rt = rng.standard_normal((N, n))
    want = A.reshape(N, n, u)[..., ok]
    got = _columns_outermost(A, ok, N, n)
    assert np.array_equal(got, want)
    def long_axes(a):
        return [s for s, d in zip(a.strides, a.shape, strict=True) if d > 1]
    assert long_axes(got) == long_axes(want)
    assert np.array_equal(np.einsum("tjk,tj->tk", got, rt), np.einsum("tjk,tj->tk", want, rt))


def test_the_first_load_friction_solve_skips_only_what_nobody_reads(ur10_run):
    """weighted_lstsq(covariance=False), load_friction's first solve: x and the determined entries the full fit's to
    the bit; the covariance NaN, not a number nobody computed."""
    rng = np.random.default_rng(11)
    W = rng.standard_normal((400, 3, 6)) * 10.0 ** rng.uniform(-2, 2, 6)
    y = W @ rng.standard_normal(6) + rng.standard_normal((400, 3))
    for gram in (True, False):
        for prior in (None, np.r_[np.full(4, np.inf), 0.5, 0.5]):
            full = weighted_lstsq(W, y, prior_std=prior, gram=gram)
            bare = weighted_lstsq(W, y, prior_std=prior, gram=gram, covariance=False)
            assert np.array_equal(bare.x, full.x) and np.array_equal(bare.identifiable, full.identifiable)
            assert np.isnan(bare.cov).all() and np.isnan(bare.hac_cov).all()
