"""The monitor's re-estimate covariance (monitor.refine.PayloadRefiner) against errors that do not average
down like white noise: an error constant over each 0.5 s block of motion (a model error that follows a move)
and a correction subtracted from every row with an uncertain coefficient. 400 draws each; the coverage of
the mass at 2σ is what a user reading the published σ relies on."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from payload_id_core.monitor.held_out import METHOD, HeldOutMassError
from payload_id_core.monitor.refine import BLOCK_S, MIN_BLOCKS, PayloadRefiner, RefinedCovariance, covering
from payload_id_core.robot_id.model_error import HeldOutModelError

RATE = 100.0            # rows per second (the monitor's 500 Hz joint states, every 5th)
SECONDS = 8.0
PHI = np.array([3.0, 0.03, -0.06, 0.21, 0.02, 0.0, 0.0, 0.03, 0.0, 0.01])


def _rows(rng, n=6):
    """Rows that vary smoothly within a block (as F does along a move) and have a mean (gravity's)."""
    t = np.arange(0.0, SECONDS, 1.0 / RATE)
    block = np.floor(t / BLOCK_S).astype(int)
    per_block = rng.normal(loc=0.5, size=(block.max() + 1, n, 10))
    A = per_block[block] + 0.2 * rng.normal(size=(t.size, n, 10))
    return t, A


def _coverage(draw, trials=400) -> float:
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(trials):
        est = draw(rng)
        hits += abs(est.phi[0] - PHI[0]) <= 2.0 * est.mass_std
    return hits / trials


def test_an_error_constant_over_each_block_of_motion_is_covered():
    def draw(rng):
        t, A = _rows(rng)
        block = np.floor(t / BLOCK_S).astype(int)
        offsets = rng.normal(scale=2.0, size=(block.max() + 1, A.shape[1]))     # per block and joint
        b = A @ PHI + offsets[block] + rng.normal(scale=0.1, size=(t.size, A.shape[1]))
        r = PayloadRefiner(np.zeros(10), rho=0.0, inertia_prior_std=10.0)
        for k in range(0, t.size, 10):       # as the monitor feeds it: a few rows at a time
            r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(A.shape[1]))
        return r.estimate()
    # With the cluster-robust covariance 95 %; the white/AR(1) one alone covers far fewer.
    assert _coverage(draw) >= 0.88


def test_the_uncertainty_of_a_correction_common_to_every_row_is_carried():
    m = 2

    def draw(rng):
        t, A = _rows(rng)
        n = A.shape[1]
        C = np.ones((t.size, n, m))       # a constant column (a Coulomb level): an offset on every row
        theta_cov = np.tile(np.eye(m) * 0.3**2, (n, 1, 1))
        theta_err = rng.normal(scale=0.3, size=(n, m))    # the correction's coefficients, off by their σ
        b = A @ PHI + np.einsum("kjm,jm->kj", C, theta_err) + rng.normal(scale=0.1, size=(t.size, n))
        r = PayloadRefiner(np.zeros(10), rho=0.0, inertia_prior_std=10.0)
        for k in range(0, t.size, 10):
            r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(n), correction=C[k:k + 10])
        r.correction_cov = theta_cov
        return r.estimate()
    # Nominal 2σ coverage is 95 %; without the correction's covariance (the row clusters see part of it) 89 %.
    assert _coverage(draw) >= 0.94


def test_rows_dropped_after_a_contact_onset_leave_the_fit_as_it_was_before_them():
    """Issue 31: the rows recorded while a contact acted are taken out (PayloadRefiner.drop_since). What is left is
    the refiner fed only the rows before the onset: the same φ, covariance, blocks, seconds and misfit; a contact's
    rows (a push's torque, here 40 N·m on one joint for 1.7 s of 8) left in moved the mass by 0.7 kg."""
    rng = np.random.default_rng(5)
    t, A = _rows(rng)
    b = A @ PHI + rng.normal(scale=0.1, size=(t.size, A.shape[1]))
    onset = 6.3                                      # a push from here on: a torque no flange load makes
    pushed = b.copy()
    pushed[t >= onset, 1] += 40.0
    scale = np.ones(A.shape[1])
    clean = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0)
    dirty = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0)
    for k in range(0, t.size, 5):
        keep = t[k:k + 5] < onset
        clean.add(t[k:k + 5][keep], A[k:k + 5][keep], b[k:k + 5][keep], scale)
        dirty.add(t[k:k + 5], A[k:k + 5], pushed[k:k + 5], scale)
    contaminated = dirty.estimate()
    assert abs(contaminated.phi[0] - PHI[0]) > 0.5      # the scenario: the push's rows move the mass by 0.7 kg
    dropped = dirty.drop_since(onset)
    assert dropped == int(np.sum(t >= onset)) * A.shape[1]
    want, got = clean.estimate(), dirty.estimate()
    np.testing.assert_allclose(got.phi, want.phi, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.cov, want.cov, rtol=1e-6, atol=1e-12)
    assert (got.rows, got.blocks) == (want.rows, want.blocks)
    assert got.seconds == want.seconds and abs(got.misfit - want.misfit) < 1e-6 * want.misfit
    assert abs(got.phi[0] - PHI[0]) < 0.05
    # Rows older than what is kept one by one (RECENT_S) stay: only a contact's recent rows are taken out.
    assert dirty.drop_since(0.0) < dirty.rows


def test_no_direction_is_published_better_known_than_the_rows_noise_says_with_few_clusters():
    """With 6 blocks and 16 unknowns (φ and μ per joint) the cluster-robust sandwich has rank ≤ 6; taken whole when its
    mass variance is the wider, 4 of the 10 payload directions have no variance at all (the published CoM's σ on the
    cell's task came up to 6.3σ short). The published covariance keeps at least the AR(1) covariance's variance (the
    rows' own noise) and the sandwich's in every direction; the monitor still decides with the sandwich, as before."""
    rng = np.random.default_rng(2)
    t, A = _rows(rng)
    keep = t < 6 * BLOCK_S
    t, A = t[keep], A[keep]
    n = A.shape[1]
    block = np.floor(t / BLOCK_S).astype(int)
    offsets = rng.normal(scale=2.0, size=(block.max() + 1, n))        # model error following each move
    b = A @ PHI + offsets[block] + rng.normal(scale=0.1, size=(t.size, n))
    L = np.abs(rng.normal(size=(t.size, n)))
    r = PayloadRefiner(np.zeros(10), rho=0.0, inertia_prior_std=10.0, n_friction=n)
    for k in range(0, t.size, 10):
        r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(n), L[k:k + 10])
    est = r.estimate()
    assert est.blocks == 6
    plain = np.linalg.inv(r.AtA + r.prior_weight)[:10, :10] * est.misfit      # ρ = 0: no AR(1) widening
    assert est.mass_std > np.sqrt(plain[0, 0])                              # the sandwich is the wider in mass
    deciding, published = est.covariance.deciding, est.covariance.published
    assert np.linalg.eigvalsh(deciding - plain).min() < -1e-3 * plain.max()      # the gap, in what is decided with
    assert np.linalg.matrix_rank(deciding, tol=1e-9 * deciding.max()) <= 6
    for below in (plain, deciding):
        assert np.linalg.eigvalsh(published - below).min() >= -1e-9 * plain.max()
    # So is the CoM's published σ on every axis (first order through c = (m c)/m), and the mass's is the wider one's.
    c_published = replace(est, covariance=RefinedCovariance.one(published)).com_and_std()[1]
    for below in (plain, deciding):
        assert np.all(c_published >= replace(est, covariance=RefinedCovariance.one(below)).com_and_std()[1] - 1e-12)
    assert published[0, 0] >= deciding[0, 0] * (1 - 1e-9)


def test_covering_is_at_least_both_covariances_in_every_direction_whatever_the_units():
    """refine.covering: in the first covariance's metric, the least that is at least either; the same whatever units
    φ's entries are in (kg, kg·m, kg·m², μ); the first one itself when the other is nowhere wider."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(16, 16))
    cov = X @ X.T + 0.1 * np.eye(16)
    S = rng.normal(size=(16, 5))
    robust = S @ S.T * 4.0                            # a sandwich of 5 clusters: rank 5
    both = covering(cov, robust)
    for other in (cov, robust):
        assert np.linalg.eigvalsh(both - other).min() >= -1e-9 * np.abs(both).max()
    # Least in cov's metric: no eigen-direction of the whitened sandwich gets more than the wider of the two.
    L = np.linalg.cholesky(cov)
    Linv = np.linalg.inv(L)
    w = np.linalg.eigvalsh(Linv @ both @ Linv.T)
    np.testing.assert_allclose(np.sort(w), np.sort(np.maximum(np.linalg.eigvalsh(Linv @ robust @ Linv.T), 1.0)),
                               rtol=1e-9)
    units = np.diag(10.0 ** rng.uniform(-3, 3, size=16))
    np.testing.assert_allclose(covering(units @ cov @ units, units @ robust @ units), units @ both @ units,
                               rtol=1e-6, atol=1e-9 * np.abs(units @ both @ units).max())
    np.testing.assert_allclose(covering(cov, 0.5 * cov), cov, rtol=1e-9)       # nothing wider: the first one


def test_with_too_few_blocks_the_published_mass_covers_a_model_error_at_the_running_level():
    """2 s after a change (4 blocks, fewer than the MIN_BLOCKS the sandwich needs) the robust covariance cannot measure
    an error that follows the motion, and the AR(1) σ does not see it: the real UR10e's re-estimate 1.1 s into a carry
    read 3.038 ± 0.043 kg for 2.805 kg (h159). Here the error is constant over each block and joint at the rows'
    whitening level (the residual's running variance, which holds the model's error): the published mass σ takes in
    its worst case within each block (RefinedCovariance.floor_mass_var) and covers it; what is decided with is as
    before, and from MIN_BLOCKS on the floor adds nothing."""
    seconds = (MIN_BLOCKS - 2) * BLOCK_S

    def fit(rng, span):
        t, A = _rows(rng)
        keep = t < span
        t, A = t[keep], A[keep]
        block = np.floor(t / BLOCK_S).astype(int)
        offsets = rng.normal(size=(block.max() + 1, A.shape[1]))          # at the level: the whitening scale is 1
        b = A @ PHI + offsets[block] + rng.normal(scale=0.1, size=(t.size, A.shape[1]))
        r = PayloadRefiner(np.zeros(10), rho=0.0, inertia_prior_std=10.0)
        for k in range(0, t.size, 10):
            r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(A.shape[1]))
        return r.estimate()

    rng = np.random.default_rng(3)
    deciding, published = [], []
    for _ in range(400):
        est = fit(rng, seconds)
        assert est.blocks < MIN_BLOCKS and est.covariance.floor_mass_var > 0.0
        err = abs(est.phi[0] - PHI[0])
        deciding.append(err / est.mass_std)
        published.append(err / np.sqrt(est.covariance.published[0, 0]))
    deciding, published = np.array(deciding), np.array(published)
    # The sandwich of 4 clusters is itself a noisy estimate: 5 % of the draws beyond 3σ, up to 8σ (measured). The
    # published σ: none beyond 3σ (max 2.2), within 2σ 0.998, against 0.89 decided with.
    assert np.mean(deciding > 3.0) > 0.02
    assert np.max(published) <= 3.0 and np.mean(published <= 2.0) >= 0.95
    assert fit(np.random.default_rng(5), SECONDS).covariance.floor_mass_var == 0.0


def _held_out(noise, per_row, running, whole=0.02):
    """monitor.held_out.HeldOutMassError over a robot.yaml whose model error was measured on one held-out run: the
    whole run's spurious mass `whole` kg, and `running` (K, 2) [mass σ at the assumed noise, spurious mass] along it."""
    robot = SimpleNamespace(model_error=HeldOutModelError("tool0", ["held-out"], np.r_[whole, np.full(9, 1e-3)][None],
                                                          running={METHOD: [np.asarray(running, dtype=float)]}),
                            rmse=np.asarray(noise, dtype=float))
    model = SimpleNamespace(n=len(noise))
    held = HeldOutMassError.from_robot(robot, "tool0", model, per_row)
    assert held is not None
    return held


def test_the_published_mass_carries_the_model_error_held_out_runs_measured_at_the_same_information():
    """robot.yaml's running model error (direct-rls over held-out unloaded runs: its spurious mass against how well the
    rows so far determine the mass) reaches the re-estimate as it reaches the identify goal (covariance_extra.
    prefix_mass_excess): read at the mass σ the re-estimate's rows give at direct-rls's assumed noise (robot.yaml's
    torque RMSE), each row counted for the samples it stands for. Added to the published mass variance, beyond the
    whole-run part every named change already has; the deciding covariance is as before, and so is everything without
    the record. Rows dropped after a contact's onset leave the information as it was before them."""
    rng = np.random.default_rng(7)
    t, A = _rows(rng)
    b = A @ PHI + rng.normal(scale=0.1, size=(t.size, A.shape[1]))
    noise, per_row = np.array([2.0, 4.0, 1.4, 0.5, 0.9, 0.5]), 5.0
    running = [[0.5, 6.0], [0.05, -0.4], [0.01, 0.1], [0.002, 0.03], [0.001, 0.01]]
    held = _held_out(noise, per_row, running)
    plain = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0)
    read = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0, held_out=held)
    seen = []
    for k in range(0, t.size, 10):
        for r in (plain, read):
            r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(A.shape[1]))
        want, got = plain.estimate(), read.estimate()
        rows = A[:k + 10] / noise[None, :, None]
        info = np.einsum("kju,kjv->uv", rows, rows) * per_row
        information_std = float(np.sqrt(np.linalg.inv(info + plain.prior_weight)[0, 0]))
        assert got.information_std == pytest.approx(information_std, rel=1e-9)
        # What the held-out run read once it knew the mass as well, beyond its whole-run 0.02 kg.
        worst = max([m**2 for s, m in running if s <= information_std], default=0.0)
        excess = max(worst, 0.02**2) - 0.02**2
        assert got.covariance.held_out_mass_var == pytest.approx(excess, rel=1e-9)
        np.testing.assert_array_equal(got.cov, want.cov)
        np.testing.assert_array_equal(got.phi, want.phi)
        extra = got.covariance.published - want.covariance.published
        assert extra[0, 0] == pytest.approx(excess, rel=1e-9, abs=1e-15)
        extra[0, 0] = 0.0
        np.testing.assert_array_equal(extra, 0.0)
        seen.append(excess)
    # Along the motion the excess shrinks as the rows determine the mass: from the run's 0.4 kg to below its 0.1 kg.
    assert seen[0] == pytest.approx(0.4**2 - 0.02**2) and seen[-1] < 0.1**2 and np.all(np.diff(seen) <= 0.0)
    # A contact's rows taken out: the information is the earlier rows' again.
    before = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0, held_out=held)
    onset = t[t.size - 100]                     # a batch start, 1 s before the end
    for k in range(0, t.size, 10):
        keep = t[k:k + 10] < onset
        before.add(t[k:k + 10][keep], A[k:k + 10][keep], b[k:k + 10][keep], np.ones(A.shape[1]))
    read.drop_since(onset)
    assert read.estimate().information_std == pytest.approx(before.estimate().information_std, rel=1e-6)


def test_without_a_running_record_the_re_estimate_reads_nothing_of_it():
    """robot.yaml without held-out runs (every simulated robot.yaml the monitor's tests and bench/monitor.py use), or
    held-out runs without the online methods' running record (files written before h145): nothing is read."""
    noise = np.ones(6)
    assert HeldOutMassError.from_robot(SimpleNamespace(model_error=None, rmse=noise), "tool0",
                                       SimpleNamespace(n=6), 5.0) is None
    older = SimpleNamespace(model_error=HeldOutModelError("tool0", ["held-out"], np.full((1, 10), 1e-3)), rmse=noise)
    assert HeldOutMassError.from_robot(older, "tool0", SimpleNamespace(n=6), 5.0) is None
    est = PayloadRefiner(np.zeros(10), rho=0.5, inertia_prior_std=10.0).estimate()
    assert np.isnan(est.information_std) and est.covariance.held_out_mass_var == 0.0


def _published_mass_std(est) -> float:
    return float(np.sqrt(est.covariance.published[0, 0]))


def test_noise_free_rows_are_published_no_surer_than_the_robots_torque_noise_allows():
    """Rows a payload explains exactly (a noise-free simulation: the fit's own s2 is ~0, and test_monitor_priors_ros
    once published 1.99979 ± 0.0000057 kg for a 2 kg part): the published covariance is at least the fit's at the
    torque noise robot.yaml measured, as each row carries it (`noise_var`), AR(1)-widened as the fit's own."""
    rng = np.random.default_rng(4)
    t, A = _rows(rng)
    n = A.shape[1]
    b = A @ PHI
    noise_var = np.full(n, 0.01**2 * 0.12)      # robot.yaml's 0.01 N·m through the observer's filter
    rho = 0.29
    bare = PayloadRefiner(np.zeros(10), rho=rho, inertia_prior_std=10.0)
    floored = PayloadRefiner(np.zeros(10), rho=rho, inertia_prior_std=10.0)
    for k in range(0, t.size, 10):
        bare.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.full(n, 0.05))
        floored.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.full(n, 0.05), noise_var=noise_var)
    G = floored.AtA + floored.prior_weight
    Ginv = np.linalg.inv(G)
    at_noise = Ginv @ floored.noise_info @ Ginv * (1 + rho) / (1 - rho)
    assert _published_mass_std(bare.estimate()) < 1e-5                     # what the rows alone say: nothing
    est = floored.estimate()
    assert _published_mass_std(est) >= 0.999 * np.sqrt(at_noise[0, 0]) > 5e-5
    # Every direction, not only the mass's (covering): published − at_noise is positive semidefinite.
    assert np.linalg.eigvalsh(est.covariance.published - at_noise[:10, :10]).min() > -1e-12
    assert est.mass_std == bare.estimate().mass_std                         # decided with as before


def test_noise_free_rows_off_by_the_robot_models_parameter_error_are_covered():
    """The fake hardware's torques are the rigid-body model's and robot.yaml's parameters θ̂ are off by δθ (its
    identification's noise): the rows are exact but for Y_a δθ, which the payload's columns partly absorb, leaving
    nothing in the residual (the 2 kg part's 2.1e-4 kg and 0.1 mm on test_monitor_priors_ros, 36σ and 3σ). With
    robot.yaml's C_a carried (theta_cov, model_rows) the published mass σ covers the error at 2σ in ≥ 93 % of 400
    draws of δθ ~ N(0, C_a) (0.99); without, the clusters see only its share that varies along the motion (0.74)."""
    p = 8
    L = np.random.default_rng(9).normal(size=(p, p)) * 0.01
    theta_cov = L @ L.T

    def draw(rng, carried: bool):
        t, A = _rows(rng)
        n = A.shape[1]
        Y = _rows(rng)[1][:, :, :p] + 0.3 * A[:, :, :p]      # robot.yaml's regressor, correlated with the payload's
        delta = np.linalg.cholesky(theta_cov) @ rng.normal(size=p)
        b = A @ PHI + Y @ delta
        r = PayloadRefiner(np.zeros(10), rho=0.0, inertia_prior_std=10.0, theta_cov=theta_cov if carried else None)
        for k in range(0, t.size, 10):
            r.add(t[k:k + 10], A[k:k + 10], b[k:k + 10], np.ones(n), model_rows=Y[k:k + 10])
        return r.estimate()

    def coverage(carried: bool) -> float:
        rng = np.random.default_rng(3)
        hits = [abs((est := draw(rng, carried)).phi[0] - PHI[0]) <= 2.0 * _published_mass_std(est)
                for _ in range(400)]
        return float(np.mean(hits))

    assert coverage(True) >= 0.93
    assert coverage(False) < 0.85
