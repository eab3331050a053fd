"""The drive gains' load-friction candidate and its μ's plausibility (issue 29; choice_record.mu_plausible).

A μ_j beyond a gear's range [0, 0.1] marks a fit that traded its load friction for the gain. Judged by μ's own σ
alone, a noise-free calibration (σ_μ ~1e-6) refused a μ of −5e-6, a friction torque of 5 ppm of the transmitted one,
and kept the linear fit whose gains were 5.9σ off. Now the resolution is also the candidate's own gain σ: a μ whose
torque is below what the gain is known to cannot have traded itself for it. A μ truly below zero beyond that is
still refused, noisy or noise-free. The planar arm of test_identify_robot_cli (a few seconds each)."""

import numpy as np
import pytest
from test_identify_robot_cli import NOISE, _recording

from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON, smooth_sign
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id.choice_record import GAIN_LINEAR, GAIN_SHAPED_LOAD, mu_plausible
from payload_id_core.robot_identification import identify_robot

GAINS = np.array([8.0, 5.0])
MASS = 1.5
PHI_L = from_mass_com_inertia(MASS, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))


@pytest.fixture(scope="module")
def planar():
    return RobotModel.from_urdf("planar_2r")


def _calibrated(model, noise_std, load_mu=0.0):
    """identify_robot on the planar pair of test_drive_gains_from_a_known_payload_mass (seeds 4 / 5) at `noise_std`;
    `load_mu`: a load-dependent friction μ|e| sgn(q̇) added to both runs' efforts (negative: no gear's)."""
    runs = [_recording(model, seed, effort_scale=GAINS, payload=payload, noise_std=noise_std)
            for seed, payload in ((4, None), (5, (PHI_L, "tool0")))]
    for run in runs:
        e = run.joints.tau
        e += load_mu * np.abs(e) * smooth_sign(run.joints.qd, DEFAULT_SIGN_EPSILON)
    return identify_robot(model, runs[0], loaded=runs[1], known_payload_mass=MASS, payload_frame="tool0")


def test_a_noise_free_calibration_keeps_the_load_friction_fit_and_its_gains_are_within_their_sigma(planar):
    """Measured: μ −3.6e-6 ± 1.9e-6 and −5.1e-6 ± 1.2e-6 (was refused, the linear fit's 8.0084 ± 0.0045 and 5.0289 ±
    0.0049 kept: 1.9σ and 5.9σ off); the candidate's gains' relative σ 2.4e-5 / 4.2e-5, so it is eligible and chosen
    (Newey-West σ 0.0034 % against linear's 0.23 %): 8.0003 ± 0.00023 and 5.0005 ± 0.00047 (1.3σ, 1.0σ)."""
    ident = _calibrated(planar, 0.0)
    gm = ident.gain_model
    shaped = gm.candidate(GAIN_SHAPED_LOAD)
    assert shaped is not None and shaped.eligible and shaped.mu is not None
    assert np.all(np.abs(shaped.mu) < 1e-4), shaped.mu                        # no load friction simulated
    assert gm.chosen == GAIN_SHAPED_LOAD, gm.text()
    k, std = np.asarray(ident.effort_scale), np.asarray(ident.effort_scale_std)
    np.testing.assert_allclose(k, GAINS, rtol=1e-3)
    assert np.all(np.abs(k - GAINS) <= 3.0 * std), ((k - GAINS) / std)        # measured 1.34 / 1.01 σ
    assert np.all(std / k < 2e-4), std / k                                     # not widened to cover the linear fit


@pytest.mark.parametrize(("noise_scale", "load_mu"), [(1.0, -0.01), (0.0, -0.001)])
def test_a_load_friction_below_zero_beyond_its_resolution_is_still_refused(planar, noise_scale, load_mu):
    """A drive that gives back torque with the load (μ −0.01 at the test's noise, −0.001 noise-free) is no gear: the
    candidate that fits it is refused and the linear fit kept. Measured: μ −0.0100 / −0.0010 on both joints."""
    ident = _calibrated(planar, noise_scale * NOISE, load_mu)
    gm = ident.gain_model
    shaped = gm.candidate(GAIN_SHAPED_LOAD)
    assert shaped is not None and shaped.mu is not None
    np.testing.assert_allclose(shaped.mu, load_mu, rtol=0.1)
    assert not shaped.eligible, (shaped.mu, shaped.mu_std, shaped.serial_std / shaped.scale)
    assert gm.chosen == GAIN_LINEAR and "μ not plausible" in gm.text()


def test_the_gain_resolution_widens_the_range_only_where_it_exceeds_three_sigma():
    # μ −5e-6 ± 1e-6: refused by its σ alone, a gear's within a gain known to 1e-5 relative
    assert not mu_plausible(np.array([-5e-6]), np.array([1e-6]), np.array([0.0]))
    assert mu_plausible(np.array([-5e-6]), np.array([1e-6]), np.array([1e-5]))
    # the trade (σ_k/k ≈ σ_μ): the 3σ test as before, on both ends of the range
    assert not mu_plausible(np.array([-0.04]), np.array([0.01]), np.array([0.01]))
    assert mu_plausible(np.array([-0.02]), np.array([0.01]), np.array([0.01]))
    assert not mu_plausible(np.array([0.15]), np.array([0.01]), np.array([0.012]))
    # a joint whose gain is undetermined (σ infinite) and whose μ is not fitted (0 ± 0) does not decide
    assert mu_plausible(np.array([0.02, 0.0]), np.array([0.005, 0.0]), np.array([0.003, np.inf]))
