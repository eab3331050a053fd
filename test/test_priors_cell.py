"""Issue 30 on the simulated cell as `make demo` runs it: where the box can make the inertia determined, and where not.

The demo's 3.5 kg part (14 × 10 × 18 cm as a block) in a 20 cm box off its CoM, the robot identified on the same
bundled ur10_payload_fast motion's unloaded run with its gear friction, difference-rls on the first seconds of the
loaded run (bench/priors.py `priors_cell_*`, 10 seeds): at 3 s the motion alone gives the largest inertia σ at
0.27 × the largest moment (undetermined on every seed), the box took it to 0.21 × (determined on 9 of 10) until its
σ of the moments carried its flat prior's pull (h102: 0.25-0.28 × on seeds 100-102, a strict xfail); at
1.5 s izz's σ is 1.4 × the moment, and the box cannot pin it (Bhatia–Davis: design.md "Prior knowledge").
With robot.yaml given a held-out unloaded run, as identify-robot --held-out-bag records it (h161), the σ narrows but
the moments' error does not: a strict xfail names the figure. Without a box the estimate's inertia σ are now the data's
Gaussian restricted to J ⪰ 0, what the box's narrowing at 3 s was (h194: 0.268 → 0.251 of the moment on seed 100,
median 0.234 over seeds 100-109), so the motion's own σ are taken with that step switched off (_data_only).
"""

import dataclasses

import numpy as np
import pytest

import payload_id_core.payload.finish as finish
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation import load_trajectory
from payload_id_core.payload.held_out_error import measure_model_error
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.priors import BIND_MARGIN_SIGMA, PayloadPrior, _linear_rows, in_box, pseudo_inertia_batch
from payload_id_core.payload_estimate import PayloadEstimate, readable_vector
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate
from payload_id_core.testing.synthetic import first_seconds

FRAME = "tool0"
INERTIA = np.diag([0.012, 0.015, 0.009])
PHI = from_mass_com_inertia(3.5, [0.03, -0.02, 0.08], INERTIA)
BOX = [-0.05, -0.09, -0.01, 0.15, 0.11, 0.19]
LARGEST_MOMENT = 0.015


@pytest.fixture(scope="module")
def cell():
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory("ur10_payload_fast")
    robot = fit_given_model(m, simulate(m, traj, None, "ur10", seed=11), friction="nonlinear", gear_friction=True)
    loaded = simulate(m, traj, PayloadEstimate(FRAME, PHI, np.zeros((10, 10)), "truth"), "ur10", seed=100)
    return m, robot, loaded


def _estimates(cell, window_s):
    m, robot, loaded = cell
    rec = first_seconds(loaded, window_s)
    return (identify_payload("difference-rls", m, robot, rec, FRAME),
            identify_payload("difference-rls", m, robot, rec, FRAME, payload_prior=PayloadPrior.checked(BOX)))


def _data_only(cell, window_s, monkeypatch):
    """The motion's own estimate: finish's projected point with the data's σ (the inertia not narrowed by J ⪰ 0)."""
    m, robot, loaded = cell
    monkeypatch.setattr(finish, "narrow_to_physical", lambda est, raw: est)
    try:
        return identify_payload("difference-rls", m, robot, first_seconds(loaded, window_s), FRAME)
    finally:
        monkeypatch.undo()


def test_the_box_narrows_an_inertia_the_motion_nearly_determines_and_covers_it(cell, monkeypatch):
    data = _data_only(cell, 3.0, monkeypatch)
    without, with_box = _estimates(cell, 3.0)
    truth = readable_vector(PHI)
    assert not data.readable_identifiable()[4:].all()
    assert np.max(data.propagated_std()[4:]) > 0.25 * LARGEST_MOMENT
    std = with_box.propagated_std()
    assert np.max(std[4:]) < np.max(data.propagated_std()[4:])
    # This seed's data alone put iyy 2.5σ low (the cell's moments sit a median 1.1σ low at 3 s, bench); the box's
    # mean moves it up, and its σ carries the box's pull on the moments (h102: iyy 2.3σ low before, 1.85σ now).
    assert np.all(np.abs(readable_vector(with_box.phi)[4:] - truth[4:]) <= 2 * std[4:])
    assert np.max(np.abs(readable_vector(with_box.phi)[1:4] - truth[1:4])) <= 3e-3


def test_at_3_s_the_box_narrows_the_inertia_only_through_physical_consistency(cell):
    """h189: what the 20 cm box's posterior cuts at 3 s is J ⪰ 0 (the triangle inequality Σ_zz ≥ 0, I_xx + I_yy ≥ I_zz,
    0.51σ from seed 100's data), not the box: its slabs (Bhatia–Davis Σ_ii ≤ m d_lo d_hi), CoM faces and corner
    products lie 8.7σ or more inside, so a 40 cm, 1 m or 2 m box gives the same σ within the sampler's noise."""
    m, robot, loaded = cell
    data = identify_payload("difference-rls", m, robot, first_seconds(loaded, 3.0), FRAME)
    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    rows = _linear_rows(lo, hi)
    margin = rows @ data.phi / np.sqrt(np.einsum("ki,ij,kj->k", rows, data.covariance, rows))
    assert np.min(margin) > 2 * BIND_MARGIN_SIGMA       # 8.7σ (slab x)
    draws = np.random.default_rng(0).multivariate_normal(data.phi, data.covariance, size=4000)
    consistent = np.linalg.eigvalsh(pseudo_inertia_batch(draws))[:, 0] >= 0
    assert 0.2 < consistent.mean() < 0.5                # 0.34: J ⪰ 0 cuts two thirds of the data's Gaussian
    assert np.array_equal(in_box(draws, lo, hi), consistent)   # ... and the box nothing more


def test_at_3_s_physical_consistency_narrows_the_inertia_without_a_box_as_the_box_does(cell, monkeypatch):
    """h194: J ⪰ 0 is what narrowed the box's inertia at 3 s (above), and every body satisfies it, so the estimate
    without a box now reports the data's Gaussian restricted to it (payload/physical_posterior.py): σ about finish's
    projected point, never wider than the motion's own, the mass and CoM the motion's."""
    data = _data_only(cell, 3.0, monkeypatch)
    without, with_box = _estimates(cell, 3.0)
    assert np.array_equal(without.phi, data.phi)
    s_data, s_new, s_box = data.propagated_std(), without.propagated_std(), with_box.propagated_std()
    np.testing.assert_allclose(s_new[:4], s_data[:4], rtol=1e-9)
    assert np.all(s_new[4:] <= s_data[4:] * (1 + 1e-9))
    # Seed 100: the largest inertia σ 0.268 → 0.251 of the largest moment (the box's 0.250), izz 0.77 of its own.
    assert np.max(s_new[4:]) <= 0.26 * LARGEST_MOMENT < np.max(s_data[4:])
    assert abs(np.max(s_new[4:]) - np.max(s_box[4:])) <= 0.01 * LARGEST_MOMENT
    assert without.physically_narrowed.get("inertia izz", 1.0) < 0.85, without.physically_narrowed
    # Coverage as the motion's own σ gave it: this seed's iyy is 2.5σ low in the data already (the cell's model
    # error, below), every other entry within 2σ before and after.
    truth = readable_vector(PHI)
    covered = np.abs(readable_vector(without.phi) - truth) <= 2 * s_new
    assert np.array_equal(covered, np.abs(readable_vector(data.phi) - truth) <= 2 * s_data)


@pytest.mark.xfail(strict=True, reason="h102: the box's σ of the moments carries its flat prior's pull (the mean's "
                   "distance from the mode); at 3 s the largest inertia σ is 0.250 / 0.245 / 0.274 of the largest "
                   "moment on seeds 100-102, above the bar (0.4 × m·(5 cm)², 0.233 of it). h116: no tighter summary "
                   "covers seed 100, whose data put iyy 2.55σ low (the cell's model error): 2σ needs iyy's σ at 0.98 "
                   "of the data's own; the restricted Gaussian's own σ (0.207, iyy 2.35σ off) and the flat-vs-"
                   "reference-prior spread (0.224, iyy 2.08σ off) both miss it. h157: that error is a bias, not noise "
                   "(iyy −1.79σ mean over seeds 100-109, their scatter 0.45σ): the robot's torque noise in the payload "
                   "fit's weights projecting the friction model's misfit into the moments (design.md). h179: the free "
                   "load-friction μ_j of the joints robot.yaml has no μ̂ for (shoulder pan, wrists) carry ixx's whole "
                   "bias and 0.5σ of iyy's (seeds 100-109, no box: ixx −1.01 → +0.04σ, iyy −1.42 → −0.88σ without "
                   "them); σ is the motion's either way (largest 0.268 → 0.260 of the moment, the box's 0.21-0.30 "
                   "by seed), so no handling of the columns meets the bar. h189: no rule holds σ at 0.25 "
                   "(seed 100 ixx 0.2498 = √(restricted 0.169² + mean − mode 0.184²), under the data's 0.256 cap; "
                   "sampler seeds 31-36 give 0.248-0.256); `determined` asks 0.233, missed on seeds 100 / 108 / 109 "
                   "at every sampler seed (0.236 the lowest), and the box's own constraints lie 8.7σ out: J ⪰ 0 "
                   "does the narrowing. h205: so the box's set is J ⪰ 0's on the data's Gaussian, and 200 000 exact "
                   "draws of it measured the box's way (σ about the mean, the moments reaching the mode) give seed "
                   "100 0.252 (the chains 0.250, J ⪰ 0 alone 0.251): the pull, not the sampler, holds it above 0.233. "
                   "Elsewhere the chains' σ is noisy: wider than J ⪰ 0 alone on 6 of seeds 100-109 (median 0.245 "
                   "against 0.234; seed 107 izz 0.222 against 0.206 exact, seed 106 ixx 0.246 against 0.233 exact, "
                   "determined lost there), the means within 0.08σ of the exact ones. h210: the box's posterior is now "
                   "those exact draws wherever 2.5 % or more of the data's Gaussian is a body in the box (20 000 "
                   "kept): seed 100 0.2545 (the chains' 0.2498 was their noise), seeds 100-109 median 0.238 (chains "
                   "0.245), determined on 3 of 10 (chains 4: seed 103's 0.2249 was 0.2333 exact, at the bar; 106 "
                   "0.2459 → 0.2355)")
def test_the_box_determines_an_inertia_the_motion_nearly_determines(cell):
    _, with_box = _estimates(cell, 3.0)
    assert with_box.readable_identifiable()[4:].all(), with_box.notes
    assert np.max(with_box.propagated_std()[4:]) <= 0.25 * LARGEST_MOMENT


@pytest.mark.xfail(strict=True, reason="h161: robot.yaml's model error measured on a held-out unloaded run (another "
                   "occasion of the same motion, seed 5100, as identify-robot --held-out-bag records it) replaces the "
                   "residuals' Newey-West inflation (x5.9 in variance here) in the σ: the largest inertia σ falls to "
                   "0.155 of the largest moment (bar 0.233) while iyy stays 2.88σ low (with the box; iyy within 2σ "
                   "1.00 -> 0.50 over seeds 100-105 at 3 s). The unloaded run's spurious iyy is 0.3e-3 kg·m² where "
                   "the loaded run's is 6-7e-3 (h157: the load's friction columns trade with the moments), and one "
                   "run's φ_h² is a 1-dof variance (design.md 'Prior knowledge'). h179: robot.yaml's loaded record "
                   "(h175, model_error.loaded) scores the mass only, so a held-out loaded run cannot reach the "
                   "moments' σ or error")
def test_a_held_out_run_determines_the_inertia_and_covers_it(cell):
    m, robot, loaded = cell
    held_out = simulate(m, load_trajectory("ur10_payload_fast"), None, "ur10", seed=5100)
    measured = dataclasses.replace(robot, model_error=measure_model_error(m, robot, [held_out], FRAME))
    with_box = identify_payload("difference-rls", m, measured, first_seconds(loaded, 3.0), FRAME,
                                payload_prior=PayloadPrior.checked(BOX))
    std = with_box.propagated_std()
    assert with_box.readable_identifiable()[4:].all(), with_box.notes
    assert np.max(std[4:]) <= 0.25 * LARGEST_MOMENT
    assert np.all(np.abs(readable_vector(with_box.phi)[4:] - readable_vector(PHI)[4:]) <= 2 * std[4:])


def test_the_box_cannot_determine_an_inertia_the_motion_leaves_wider_than_the_moment(cell):
    without, with_box = _estimates(cell, 1.5)
    assert np.max(without.propagated_std()[4:]) > LARGEST_MOMENT
    assert not with_box.readable_identifiable()[4:].all()
    assert "inertia izz" in with_box.prior_bounded, with_box.prior_bounded
    truth = readable_vector(PHI)
    std = with_box.propagated_std()
    assert np.all(np.abs(readable_vector(with_box.phi)[4:] - truth[4:]) <= 2 * std[4:])
