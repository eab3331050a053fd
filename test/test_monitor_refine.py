"""The monitor's re-estimate covariance (monitor.refine.PayloadRefiner) against errors that do not average
down like white noise: an error constant over each 0.5 s block of motion (a model error that follows a move)
and a correction subtracted from every row with an uncertain coefficient. 400 draws each; the coverage of
the mass at 2σ is what a user reading the published σ relies on."""
import numpy as np
import pytest

from payload_id_core.monitor.refine import BLOCK_S, PayloadRefiner

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


@pytest.mark.xfail(strict=True, reason=(
    "the cluster-robust sandwich (rank ≤ its 6 clusters, 16 unknowns) is taken whole when wider in mass, so 4 of "
    "the 10 payload directions get no variance: the published CoM's 2σ coverage on the cell's task is 0.84 and "
    "0.80 (seeds 5, 6; |err|/σ up to 6.3). The Loewner bound of both (h141) makes it 0.93 and 0.91 but names 3 "
    "of 151 pushes a load (seeds 7-9, 300 s each; main 0) and loses the real UR10e place: design.md, "
    "'The refiner's covariance'"))
def test_no_direction_is_known_better_than_the_rows_noise_says_with_few_clusters():
    """With 6 blocks and 16 unknowns (φ and μ per joint) the cluster-robust sandwich has rank ≤ 6; taken whole when its
    mass variance is the wider, 4 of the 10 payload directions have no variance at all. What is wanted: every direction
    keeps at least the AR(1) covariance's variance (the rows' own noise)."""
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
    assert np.linalg.eigvalsh(est.cov - plain).min() >= -1e-9 * plain.max()
