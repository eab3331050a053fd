"""Physical consistency's σ without a box (issues 29/30, h194: payload/physical_posterior.py).

finish projects the point onto J ⪰ 0 (Wensing, Kim & Slotine 2017); the inertia's σ are now those of the data's
Gaussian restricted to the bodies, about that point, never wider than the data's, the mass and CoM left the data's.
Tested on exact Gaussian data about a known body (the likelihood right by construction, so coverage is the
restriction's own): a flat part, whose Σ_zz = (I_xx + I_yy − I_zz) / 2 sits near 0, where the triangle inequality
cuts the data's Gaussian; and a compact part far from every face of the set, where nothing may change.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.finish import finish, make_physical
from payload_id_core.payload.physical_posterior import NARROWED_RATIO
from payload_id_core.payload.priors import PayloadPrior
from payload_id_core.payload_estimate import PayloadEstimate, readable_jacobian, readable_vector

FRAME = "tool0"
# 2 kg plate in the xy plane: second moments about the CoM Σ = diag(4e-3, 3e-3, 2e-4) kg·m², so I_zz = I_xx + I_yy −
# 2 Σ_zz is 0.4e-3 from the triangle inequality's face.
FLAT = from_mass_com_inertia(2.0, [0.01, 0.02, 0.05], np.diag([3.2e-3, 4.2e-3, 7.0e-3]))
COMPACT = from_mass_com_inertia(2.0, [0.01, 0.02, 0.05], np.diag([0.02, 0.025, 0.018]))
# The data's σ in readable order (mass, CoM, inertia about the CoM): the inertia known to 1e-3 kg·m².
READABLE_STD = np.array([0.01, 1e-3, 1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 1e-3, 5e-4, 1e-3])


def phi_covariance(phi: np.ndarray) -> np.ndarray:
    back = np.linalg.inv(readable_jacobian(phi))
    return back @ np.diag(READABLE_STD**2) @ back.T


def estimate(phi_hat: np.ndarray, cov: np.ndarray) -> PayloadEstimate:
    return PayloadEstimate(FRAME, np.array(phi_hat, dtype=float), np.array(cov, dtype=float), "difference-rls")


def draws(truth: np.ndarray, n: int, seed: int = 0):
    cov = phi_covariance(truth)
    rng = np.random.default_rng(seed)
    return cov, rng.multivariate_normal(truth, cov, size=n)


def test_the_flat_part_s_inertia_narrows_and_stays_covered():
    cov, data = draws(FLAT, 100)
    truth = readable_vector(FLAT)
    before_std, after_std, before_cov, after_cov, narrowed = [], [], [], [], 0
    for phi_hat in data:
        main = make_physical(estimate(phi_hat, cov))
        main.covariance = cov          # what main reported: the point projected, the data's σ
        new = make_physical(estimate(phi_hat, cov))
        assert np.array_equal(new.phi, main.phi)                         # the point stays the projection's
        s0, s1 = main.propagated_std(), new.propagated_std()
        assert np.all(s1 <= s0 * (1 + 1e-9))                            # never wider
        np.testing.assert_allclose(s1[:4], s0[:4], rtol=1e-6)            # mass and CoM left alone
        err = np.abs(readable_vector(new.phi) - truth)
        before_std.append(s0)
        after_std.append(s1)
        before_cov.append(err[4:] <= 2 * s0[4:])
        after_cov.append(err[4:] <= 2 * s1[4:])
        if new.physically_narrowed:
            narrowed += 1
            assert has_note(new.notes, NoteCode.PAYLOAD_PHYSICALLY_NARROWED)
            assert all(r <= NARROWED_RATIO for r in new.physically_narrowed.values())
    ratio = np.median(np.array(after_std)[:, 4:] / np.array(before_std)[:, 4:], axis=0)
    # The triangle inequality cuts every moment a little (200 draws: σ over the data's median 0.91-0.99, 13 ms each),
    # and the interval still covers as the data's Gaussian does (200 draws: 2σ coverage 0.965 → 0.95, each moment
    # at least 0.925): the projection's point with the data's σ over-covered.
    assert narrowed >= 90
    assert np.min(ratio) < 0.95 and np.all(ratio < 1.0), ratio
    assert np.mean(after_cov) >= 0.92, np.mean(after_cov)
    assert np.min(np.mean(after_cov, axis=0)) >= 0.88


def test_a_compact_part_far_from_the_set_s_faces_is_left_bit_for_bit():
    cov = phi_covariance(COMPACT)
    phi_hat = np.random.default_rng(3).multivariate_normal(COMPACT, cov)
    est = make_physical(estimate(phi_hat, cov))
    assert np.array_equal(est.covariance, cov) and np.array_equal(est.phi, phi_hat)
    assert not est.physically_narrowed
    assert not has_note(est.notes, NoteCode.PAYLOAD_PHYSICALLY_NARROWED)


def test_an_inertia_the_motion_leaves_free_is_not_narrowed():
    cov = phi_covariance(FLAT)
    ok = np.array([True] * 4 + [False] * 6)
    z = np.concatenate([FLAT, np.zeros(2)])
    full = np.zeros((12, 12))
    full[:10, :10] = cov
    est = finish(FRAME, "khalil-1", z, full, np.concatenate([ok, [True, True]]), [])
    assert not est.physically_narrowed
    assert not has_note(est.notes, NoteCode.PAYLOAD_PHYSICALLY_NARROWED)


def test_a_box_s_estimate_is_not_restricted_twice():
    """The box's posterior is J ⪰ 0 cut further (priors.apply_prior): finish leaves its σ as the box left them."""
    cov, data = draws(FLAT, 1, seed=5)
    z, full = np.concatenate([data[0], np.zeros(1)]), np.zeros((11, 11))
    full[:10, :10] = cov
    est = finish(FRAME, "difference-rls", z, full, np.ones(11, dtype=bool), [],
                 payload_prior=PayloadPrior.checked([-0.2, -0.2, -0.2, 0.2, 0.2, 0.3]))
    assert "bounding_box" not in est.prior_not_applied
    assert not est.physically_narrowed


def test_payload_yaml_records_what_physics_narrowed():
    cov, data = draws(FLAT, 1, seed=1)
    est = make_physical(estimate(data[0], cov))
    assert est.physically_narrowed, "this draw is one the triangle inequality cuts"
    back = PayloadEstimate.from_dict(est.to_dict())
    assert back.physically_narrowed == pytest.approx(est.physically_narrowed)
    assert est.to_dict()["physically_narrowed"] == est.physically_narrowed
