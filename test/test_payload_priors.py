"""Prior knowledge of the payload (issue 30): a bounding box and a weighed mass, checked, applied where every method
finishes, reflected in σ, recorded in payload.yaml, and a prior the data contradict made suspect."""

import math

import numpy as np
import pytest
from session_cell import FRAME as SESSION_FRAME
from session_cell import PHI as SESSION_PHI
from session_cell import session_cell

from payload_id_core.dynamics.consistency import project_feasible
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.kinematics import resolve_sensor_frame
from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.monitor.state import MonitorUpdate, PayloadState
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.box_fractions import split_rhat
from payload_id_core.payload.com_box import CHAINS as COM_BOX_CHAINS
from payload_id_core.payload.com_box import com_box_samples
from payload_id_core.payload.finish import finish, judge_determination
from payload_id_core.payload.goal_outcome import FinishedGoal, GoalOutcome
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.priors import (
    PayloadPrior,
    apply_prior,
    box_constraints,
    in_box,
    known_mass_disagreement,
    rated_payload,
)
from payload_id_core.payload.session import IdentificationRun, goal_options, goal_prior
from payload_id_core.payload_estimate import INERTIA_KEYS, PayloadEstimate, Quality, readable_vector
from payload_id_core.robot_id import identify_from_signals
from payload_id_core.signals.recording import WrenchSamples
from payload_id_core.testing.ft_data import sum_of_sines as wrist_motion
from payload_id_core.testing.ft_data import synthetic_wrench
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

# A 4 kg solid block 16 x 14 x 12 cm whose CoM is not at the centre of the 20 cm box that holds it.
MASS, COM, SIDES = 4.0, np.array([0.05, -0.03, 0.09]), np.array([0.16, 0.14, 0.12])
INERTIA = np.diag(MASS / 12 * np.array([SIDES[1] ** 2 + SIDES[2] ** 2, SIDES[0] ** 2 + SIDES[2] ** 2,
                                        SIDES[0] ** 2 + SIDES[1] ** 2]))
PHI = from_mass_com_inertia(MASS, COM, INERTIA)
BOX = [-0.04, -0.11, 0.0, 0.16, 0.09, 0.2]
TRUTH = readable_vector(PHI)


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("box, mass, std, words", [
    ([0, 0, 0, 0.1, 0.0, 0.1], None, None, "zero extent on y"),
    ([0, 0, 0, 0.1, -0.1, 0.1], None, None, "swapped on y"),
    ([0, 0, float("nan"), 0.1, 0.1, 0.1], None, None, "NaN"),
    ([0, 0, 0, 0.1, 0.1], None, None, "5 numbers"),
    (None, 0.0, None, "not > 0"),
    (None, -1.0, None, "not > 0"),
    (None, float("nan"), None, "not a number"),
    (None, 13.0, None, "above the robot's rated payload 12.5"),
    (None, 2.0, 0.0, "standard deviation is 0"),
    (None, None, 0.01, "without a known mass"),
    ([-1e6, -1e6, -1e6, 1e6, 1e6, 1e6], None, None, "beyond any payload a robot carries"),
    ([0, 0, 0, 0.1, 0.1, 6.0], None, None, "reaches 6 m"),
    (None, 2.8, 100.0, "not below the mass 2.8 kg"),
    (None, 2.8, 2.8, "not below the mass"),
])
def test_bad_priors_are_refused_naming_the_problem(box, mass, std, words):
    with pytest.raises(PayloadIdError, match=words.replace("(", r"\(")):
        PayloadPrior.checked(box, mass, std, rated_payload("ur10e"))


def test_rated_payload_is_known_for_the_bundled_arms_only():
    assert rated_payload("ur10e") == 12.5 and rated_payload("panda") == 3.0 and rated_payload("planar_2r") is None


# -- the constraints -------------------------------------------------------------------------------
def test_the_box_admits_the_block_and_refuses_what_cannot_lie_in_it():
    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    assert in_box(PHI, lo, hi).all()
    # The same block 5 cm further along x: its CoM (and mass) leave the box.
    assert not in_box(from_mass_com_inertia(MASS, COM + [0.12, 0, 0], INERTIA), lo, hi).any()
    # CoM inside, but the moments of a ring 30 cm across: its mass cannot all lie within 20 cm (the slab condition).
    assert not in_box(from_mass_com_inertia(MASS, COM, INERTIA * 8), lo, hi).any()


def test_the_corner_products_admit_every_body_in_the_box_and_refuse_what_the_slabs_let_through():
    """∫ (x_i − lo_i)(x_j − lo_j) dm ≥ 0 and its three sister products hold for any mass in the box (random point
    clouds: all admitted). A body with its CoM 2 cm from the low x and y faces and Σ_xy = −0.8 √(Σ_xx Σ_yy) passes
    J ⪰ 0 and the slabs, yet its mass cannot all lie in the box: Σ_xy ≥ −m (c_x − lo_x)(c_y − lo_y) = −4e-4."""
    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    rng = np.random.default_rng(0)
    for _ in range(200):
        pts = lo + (hi - lo) * rng.random((int(rng.integers(1, 6)), 3))
        w = rng.random(len(pts)) + 0.01
        second = np.einsum("k,ki,kj->ij", w, pts, pts)
        inertia = np.trace(second) * np.eye(3) - second
        phi = np.array([w.sum(), *(w @ pts), inertia[0, 0], inertia[0, 1], inertia[1, 1], inertia[0, 2],
                        inertia[1, 2], inertia[2, 2]])
        assert in_box(phi, lo, hi, tol=1e-9).all()
    c = lo + np.array([0.02, 0.02, 0.1])
    spread = np.diag([0.9 * 0.02 * 0.18, 0.9 * 0.02 * 0.18, 0.01])
    spread[0, 1] = spread[1, 0] = -0.8 * 0.9 * 0.0036
    phi = from_mass_com_inertia(1.0, c, np.trace(spread) * np.eye(3) - spread)
    assert np.linalg.eigvalsh(spread).min() > 0                                    # J ⪰ 0
    assert np.all(np.diag(spread) <= (c - lo) * (hi - c) + 1e-12)                  # the slabs
    assert not in_box(phi, lo, hi).any()


def test_the_projection_with_the_box_lands_on_a_body_in_the_box():
    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    outside = from_mass_com_inertia(MASS, COM + [0.0, 0.0, 0.15], INERTIA)
    cov = np.diag(np.r_[1e-4, 1e-6, 1e-6, 1e-6, np.full(6, 1e-6)])
    projected, consistent, dist = project_feasible(outside, cov, np.ones(10, bool),
                                                   extra_constraints=box_constraints(lo, hi))
    assert not consistent and dist > 10
    assert in_box(projected, lo, hi, tol=1e-6).all()
    assert projected[3] / projected[0] == pytest.approx(hi[2], abs=2e-3)   # onto the face nearest the data


# -- applied to a Gaussian estimate --------------------------------------------------------------------
# The data's covariance of a weak motion: the mass and m·c well known, the six inertia entries to ±0.02 kg·m².
DATA_COV = np.diag(np.r_[0.02**2, np.full(3, 0.004**2), np.full(6, 0.02**2)])


def _data_estimate(seed: int, cov: np.ndarray = DATA_COV, phi: np.ndarray = PHI) -> PayloadEstimate:
    noisy = np.random.default_rng(seed).multivariate_normal(phi, cov)
    return PayloadEstimate(frame="tool0", phi=noisy, covariance=cov.copy(), method="khalil-1")


def test_the_box_narrows_the_inertia_and_its_sigma_still_covers_the_error():
    """Over 20 draws of the data: without the box the inertia σ (0.02 kg·m²) is larger than the moments themselves;
    with it every estimate is a body in the box and the principal moments' σ narrow to about 0.8 of the data's. The
    motion resolves none of the moments within the box, so the box's flat prior draws them towards the middle of what
    it allows (a block's moments are at its low end): their σ reach the end that cuts the data's 2σ (I_ii ≥ 0) and
    they are listed as only bounded (h92; before, σ about halved and 2σ covered 0.73 of the moments, 0.895 of all
    entries). The products of inertia, whose range in this box is 6 cm² · m wide (σ 0.019 as a flat distribution), are
    only bounded by it: not "pinned" (they used to be), and their σ is not narrowed below what covers the box's
    range."""
    prior = PayloadPrior.checked(BOX)
    lo, hi = prior.lo, prior.hi
    covered, total, shrink, moments_covered = 0, 0, [], []
    for seed in range(20):
        data = _data_estimate(seed)
        data_std = data.propagated_std()
        est = apply_prior(data, prior)
        assert in_box(est.phi, lo, hi, tol=1e-9).all()
        std = est.propagated_std()
        err = readable_vector(est.phi) - TRUTH
        covered += int(np.sum(np.abs(err) <= 2 * std))
        total += 10
        moments_covered.append(np.abs(err[[4, 7, 9]]) <= 2 * std[[4, 7, 9]])
        shrink.append(std[4:] / data_std[4:])
        assert {"inertia ixy", "inertia iyz"} <= set(est.prior_bounded)
        assert not set(est.prior_bounded) & set(est.prior_pinned)
        assert {"inertia ixx", "inertia iyy", "inertia izz"} <= set(est.prior_bounded)
        assert "mass" not in est.prior_pinned and est.quality is Quality.OK
        assert np.all(std[4:] <= data_std[4:] * (1 + 1e-4))     # never wider than the data's own (numerical Jacobian)
    assert covered / total >= 0.95
    assert np.mean(moments_covered) >= 0.9
    diagonal = np.median(np.array(shrink)[:, [0, 3, 5]], axis=0)
    assert np.all(diagonal < 0.85)


def test_an_inertia_the_motion_leaves_loose_is_bounded_by_the_box_and_its_sigma_covers_the_error():
    """A motion that says little about the inertia (σ 0.05 kg·m², four times the moments: a short Panda motion):
    the data restricted to the box is then mostly the box's flat prior on φ, which holds most bodies where the
    products of inertia have room, i.e. at large principal moments; a compact block's moments sat 3.5 of that
    spread's σ below its mean (2σ coverage 0.5 in bench/priors.py). Now each such entry is reported as bounded by
    the box (not pinned, not determined), its 2σ reaching the far end of the box's range, so 2σ covers the block."""
    cov = DATA_COV.copy()
    cov[4:, 4:] *= 2.5**2
    prior = PayloadPrior.checked(BOX)
    covered = []
    for seed in range(10):   # 60 entries; on the old code 55 % of them and 10 % of the moments were covered
        est = judge_determination(apply_prior(_data_estimate(seed, cov), prior))
        std = est.propagated_std()
        covered.append(np.abs(readable_vector(est.phi)[4:] - TRUTH[4:]) <= 2 * std[4:])
        assert set(est.prior_bounded) == {f"inertia {k}" for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        assert not any(name.startswith("inertia") for name in est.prior_pinned)
        assert not est.determined[2]
        assert any("only bounded by the box" in str(n) for n in est.notes)
    covered_diagonal = np.array(covered)[:, [0, 3, 5]]
    assert np.mean(covered) >= 0.9 and np.mean(covered_diagonal) >= 0.9


def test_a_box_that_does_not_bind_gives_the_same_numbers_as_no_box():
    """A loose box around a well-determined part (the data's Gaussian inside it by many σ) cannot sharpen anything:
    the estimate is the data's, bit for bit, and the note says the box did not bind (it used to be resampled, and a
    ±10 m box widened the real UR10e mass σ 7-fold)."""
    cov = DATA_COV / 400
    for box in ([-4, -4, -4, 4, 4, 4], [-0.5, -0.5, -0.5, 0.5, 0.5, 0.5]):
        data = _data_estimate(1, cov)
        est = apply_prior(_data_estimate(1, cov), PayloadPrior.checked(box))
        assert np.array_equal(est.phi, data.phi) and np.array_equal(est.covariance, data.covariance)
        assert est.quality is Quality.OK and est.prior_pinned == []
        assert any("does not bind" in str(n) for n in est.notes)
    # With a known mass the box still does not bind: the numbers are those of the known mass alone.
    mass_only = apply_prior(_data_estimate(1, cov), PayloadPrior.checked(None, MASS, 0.01))
    both = apply_prior(_data_estimate(1, cov), PayloadPrior.checked([-4, -4, -4, 4, 4, 4], MASS, 0.01))
    assert np.array_equal(both.phi, mass_only.phi) and np.array_equal(both.covariance, mass_only.covariance)


def test_a_sampler_that_has_not_mixed_is_not_trusted(monkeypatch):
    """A Gaussian restricted to a convex set is never wider than the Gaussian (Brascamp-Lieb): sampled σ wider than
    the data's, or chains that disagree, mean the sampler has not mixed; the data's estimate is kept with the
    reason rather than a widened (or wrong) one."""
    from payload_id_core.payload import priors  # noqa: PLC0415

    data = _data_estimate(2)
    real = priors.box_posterior

    def widened(*args):
        mean, cov, ess, rhat = real(*args)
        return mean, cov * 9.0, ess, rhat

    monkeypatch.setattr(priors, "box_posterior", widened)
    est = apply_prior(_data_estimate(2), PayloadPrior.checked(BOX))
    assert np.array_equal(est.phi, data.phi) and np.allclose(est.propagated_std(), data.propagated_std())
    assert any("bounding box not applied" in str(n) and "times the data's in some direction" in str(n)
               for n in est.notes)

    def unmixed(*args):
        mean, cov, ess, rhat = real(*args)
        return mean, cov, ess, np.full(10, 1.4)

    monkeypatch.setattr(priors, "box_posterior", unmixed)
    est = apply_prior(_data_estimate(2), PayloadPrior.checked(BOX))
    assert np.array_equal(est.phi, data.phi)
    assert any("chains disagree (split R̂ 1.4" in str(n) for n in est.notes)


def test_a_known_mass_pins_the_mass_and_sharpens_a_com_correlated_with_it():
    """The torques determine m·c better than m (a short motion): c = m·c / m is then uncertain through m, and the
    weighed mass removes that part (σ of c_z from √(2² + (0.09·100)²)/4 ≈ 2.3 mm to about 0.5 mm)."""
    cov = DATA_COV.copy()
    cov[0, 0], cov[3, 3] = 0.1**2, 0.002**2
    stds_z, errs_z = [], []
    for seed in range(10):
        data = _data_estimate(seed, cov)
        data_std = data.propagated_std()
        prior = PayloadPrior.checked(None, MASS, 0.005)
        r = known_mass_disagreement(prior, data)
        est = apply_prior(data, prior)
        std = est.propagated_std()
        assert est.mass == pytest.approx(MASS, abs=3 * 0.005)
        # Where the data's mass and the weighed one disagree beyond their combined σ (R > 1), the mass σ is widened by
        # R (Birge ratio, priors._covering_the_disagreement); where they agree it is the prior's.
        assert std[0] == pytest.approx(0.005 * max(1.0, r), rel=0.05)
        assert data_std[3] > 0.002 and std[3] < 0.3 * data_std[3]
        stds_z.append(std[3])
        errs_z.append(abs(est.com[2] - COM[2]))
        assert {"mass", "com z"} <= set(est.prior_pinned) and "inertia ixx" not in est.prior_pinned
    assert max(stds_z) < 0.0006 and np.mean(np.array(errs_z) <= 2 * np.array(stds_z)) >= 0.9


def test_a_com_outside_the_box_is_suspect_with_the_reason_not_forced_in():
    far = from_mass_com_inertia(MASS, COM + [0.0, 0.0, 0.2], INERTIA)
    est = apply_prior(_data_estimate(0, phi=far), PayloadPrior.checked(BOX))
    assert est.quality is Quality.SUSPECT
    assert has_note(est.notes, NoteCode.PAYLOAD_PRIOR_CONTRADICTED)
    assert any("CoM z" in r and "outside the bounding box" in r for r in est.quality_reasons)


def test_a_known_mass_the_data_contradict_is_suspect():
    est = apply_prior(_data_estimate(0), PayloadPrior.checked(None, 3.0))
    assert est.quality is Quality.SUSPECT
    assert any("known mass 3 kg" in r for r in est.quality_reasons)
    agreeing = apply_prior(_data_estimate(0), PayloadPrior.checked(None, MASS))
    assert agreeing.quality is Quality.OK and not has_note(agreeing.notes, NoteCode.PAYLOAD_PRIOR_CONTRADICTED)


def test_the_prior_travels_in_payload_yaml():
    prior = PayloadPrior.checked(BOX, MASS, 0.01)
    est = finish("tool0", "khalil-1", np.r_[_data_estimate(3).phi], DATA_COV, np.ones(10, bool), [],
                 payload_prior=prior)
    d = est.to_dict()
    assert d["prior"]["bounding_box"] == {"min": BOX[:3], "max": BOX[3:]}
    assert d["prior"]["known_mass"] == MASS and d["prior"]["known_mass_std"] == 0.01
    # The box only bounds the moments this motion leaves unresolved (h92: they were listed as pinned).
    assert "inertia ixx" in d["prior"]["bounded"] and "mass" in d["prior"]["pinned"]
    back = PayloadEstimate.from_dict(d)
    assert back.prior == prior.to_dict() and back.prior_pinned == d["prior"]["pinned"]
    assert PayloadPrior.from_dict(back.prior) == prior


# -- through the methods, on a robot -----------------------------------------------------------------
@pytest.fixture(scope="module")
def ur10():
    m = RobotModel.from_urdf("ur10")
    fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
    fp = np.tile([2.0, 1.5, 0.2], m.n)
    t, q, qd, qdd = sum_of_sines(m, 6.0, 100.0, seed=7)
    tau = rigid_body_regressor(m, q, qd, qdd) @ m.standard_parameters() + fm.torque(fp, qd)
    robot = identify_from_signals(m, q, qd, qdd, tau, friction="nonlinear", alpha=0.6, estimator="ols")
    # A short motion (0.8 s) with 1 N·m torque noise: the inertia is not determined by it.
    motion = sum_of_sines(m, 0.8, 200.0, seed=3)
    recs = [synthetic_recording(m, *motion, friction=fm, friction_params=fp, payload=(PHI, "wrist_3_link"),
                                noise_std=1.0, seed=seed) for seed in range(3)]
    return m, robot, recs


@pytest.mark.parametrize("method", ["khalil-1", "difference-rls"])
def test_every_method_honours_the_box_and_the_known_mass(ur10, method):
    m, robot, recs = ur10
    for rec in recs[:2]:
        plain = identify_payload(method, m, robot, rec, "wrist_3_link")
        boxed = identify_payload(method, m, robot, rec, "wrist_3_link", payload_prior=PayloadPrior.checked(BOX))
        weighed = identify_payload(method, m, robot, rec, "wrist_3_link",
                                   payload_prior=PayloadPrior.checked(None, MASS, 0.005))
        assert not plain.determined[2]    # the motion alone leaves the inertia undetermined
        assert plain.prior is None and has_note(boxed.notes, NoteCode.PAYLOAD_PRIOR)
        assert in_box(boxed.phi, np.array(BOX[:3]), np.array(BOX[3:]), tol=1e-9).all()
        plain_std, boxed_std = plain.propagated_std(), boxed.propagated_std()
        # The box narrows every product of inertia it does more than bound (those it only bounds keep σ reaching the
        # far end of the box's range, never beyond the motion's own: it used to narrow those too, and not cover
        # them); the principal moments' σ carry the box's pull on them (h102: moments_reaching_the_mode; a moment's σ
        # 0.90 of the motion's own here, was below 0.7), never beyond the motion's own.
        bounded = np.array([f"inertia {k}" in boxed.prior_bounded for k in INERTIA_KEYS])
        # 1e-3: a moment's σ capped at the data's own is that σ propagated at the box's φ, the plain run's at its own
        # (izz 0.0093273 against 0.0093250 on one draw).
        assert np.all(boxed_std[4:] <= plain_std[4:] * (1 + 1e-3)) and not bounded.all()
        products = np.array([k in ("ixy", "ixz", "iyz") for k in INERTIA_KEYS])
        assert np.max(boxed_std[4:][~bounded & products] / plain_std[4:][~bounded & products]) < 0.7
        boxed_err = np.abs(readable_vector(boxed.phi) - TRUTH)
        assert np.all(boxed_err[4:] <= 3 * boxed_std[4:])
        assert np.max(boxed_err[1:4]) < 0.006
        assert weighed.mass == pytest.approx(MASS, abs=0.015)
        assert weighed.propagated_std()[0] < 0.6 * plain.propagated_std()[0]
        assert np.max(np.abs(weighed.com - COM)) < 0.006
        assert weighed.prior == {"known_mass": MASS, "known_mass_std": 0.005} and "mass" in weighed.prior_pinned


def test_a_known_mass_far_from_the_data_makes_the_method_suspect_not_converged(ur10):
    m, robot, recs = ur10
    est = identify_payload("khalil-1", m, robot, recs[0], "wrist_3_link",
                           payload_prior=PayloadPrior.checked(None, 0.8 * MASS))
    assert est.quality is Quality.SUSPECT and not est.converged
    assert any(r.startswith("prior contradicted: the known mass 3.2 kg") for r in est.quality_reasons)
    assert math.isfinite(est.mass) and est.mass == pytest.approx(MASS, abs=0.06)   # the data's, not forced to 3.2


def test_a_contradicted_prior_is_not_forced_on_the_data():
    data = _data_estimate(0)
    raw_phi, raw_cov = data.phi.copy(), data.covariance.copy()
    est = apply_prior(data, PayloadPrior.checked(BOX, 3.0))
    assert np.array_equal(est.phi, raw_phi) and np.array_equal(est.covariance, raw_cov)
    assert est.prior == {"bounding_box": {"min": BOX[:3], "max": BOX[3:]}, "known_mass": 3.0, "known_mass_std": 0.015}
    assert est.prior_pinned == [] and est.quality is Quality.SUSPECT


# -- an identify goal (ROS-free: payload/session.py) ---------------------------------------------------
def test_a_goal_prior_takes_each_field_not_given_from_the_node():
    node = PayloadPrior.checked(BOX, 4.0, 0.01)
    assert goal_prior((), 0.0, 0.0, node) == node
    assert goal_prior((), 0.0, 0.0, None) is None
    own = goal_prior([-0.1, -0.1, 0.0, 0.1, 0.1, 0.3], 3.5, 0.0, node)
    assert own == PayloadPrior.checked([-0.1, -0.1, 0.0, 0.1, 0.1, 0.3], 3.5)   # its own mass: the default σ
    assert goal_prior((), 0.0, 0.02, node) == PayloadPrior.checked(BOX, 4.0, 0.02)
    with pytest.raises(PayloadIdError, match="swapped on x"):
        goal_prior([0.1, 0, 0, 0, 0.1, 0.1])
    with pytest.raises(PayloadIdError, match="rated payload 3 kg"):
        goal_prior((), 4.0, rated_payload=3.0)


def test_a_goal_applies_its_prior_to_the_final_estimate():
    model, robot, loaded = session_cell()
    cmd, j = loaded.commanded[0], loaded.joints
    box = [-0.07, -0.06, -0.02, 0.09, 0.1, 0.14]     # holds the session payload (CoM 10, 20, 60 mm), off-centre
    finished = {}
    for name, prior in (("plain", None), ("known", PayloadPrior.checked(box, 3.0, 0.001))):
        run = IdentificationRun(model, robot, SESSION_FRAME, "direct-rls", float(cmd.time_from_start[-1]),
                                options=goal_options(prior=prior))
        run.add_commanded(cmd)
        run.feed(j.t, j.q, j.tau)
        finished[name] = run.finish(7.0, GoalOutcome.FINISHED).estimate
    plain, known = finished["plain"], finished["known"]
    assert plain.prior is None and known.prior == PayloadPrior.checked(box, 3.0, 0.001).to_dict()
    assert known.mass == pytest.approx(3.0, abs=0.01) and known.propagated_std()[0] < 0.0011
    assert "mass" in known.prior_pinned and known.quality is Quality.OK
    assert in_box(known.phi, np.array(box[:3]), np.array(box[3:]), tol=1e-9).all()
    assert np.max(np.abs(known.com - SESSION_PHI[1:4] / SESSION_PHI[0])) < 0.003


def test_the_monitor_applies_the_prior_to_a_carried_part_only():
    """LiveMonitor's re-estimate (mass and CoM of a part picked up) with the node's prior: the weighed mass pins it;
    the empty flange (nothing carried) is reported as exactly nothing, the prior not applied to it."""
    model, robot, _ = session_cell()

    class Stub:      # the PayloadMonitor's answer to one batch: a re-estimate newly determined
        def __init__(self, state):
            self.state = state

        def update(self, t, q, qd, tau):
            return MonitorUpdate(estimate=self.state)

        def mass_floor(self, q):       # the smallest change its alarm sees (issue 31): 0.1 kg here
            return 0.1, 1

        def recent_floor(self):        # none kept over samples (h105): the at-rest floor above is taken
            return float("nan")

        def carried_key(self):         # what decides in the state: each publication is marked saved with it (h197)
            return (self.state.determined, self.state.since)

    carried = PayloadState(phi=PHI.copy(), cov=DATA_COV.copy(), determined=True, since=1.0, seconds_of_motion=3.0)
    empty = PayloadState(phi=np.zeros(10), cov=DATA_COV.copy(), determined=True, since=1.0, seconds_of_motion=3.0)
    batch = (np.zeros(1), np.zeros((1, model.n)), np.zeros((1, model.n)), np.zeros((1, model.n)), None)
    live = LiveMonitor(model, robot, "tool0", None, prior=PayloadPrior.checked(None, MASS, 0.002))
    live.monitor = Stub(carried)
    est = live.feed(*batch).estimate
    assert est is not None and est.prior == {"known_mass": MASS, "known_mass_std": 0.002}
    assert est.propagated_std()[0] == pytest.approx(0.002, rel=0.05) and "mass" in est.prior_pinned
    plain = LiveMonitor(model, robot, "tool0", None)
    plain.monitor = Stub(carried)
    # Without the prior the mass σ is the re-estimate's 0.02 kg raised to half the monitor's floor (issue 31: a
    # change below it cannot be excluded; intended change, it was 0.02); the weighed mass above is left pinned.
    assert plain.feed(*batch).estimate.propagated_std()[0] == pytest.approx(0.05, rel=0.05)
    live.monitor = Stub(empty)
    nothing = live.feed(*batch).estimate
    assert nothing.prior is None and np.all(nothing.phi == 0)


MONITOR_BOX = [-0.08, -0.1, -0.02, 0.1, 0.1, 0.16]     # test_monitor_priors_ros's box around its 2 kg part
MONITOR_COM = np.array([0.0201, -0.01, 0.060])


def _monitor_re_estimate(com, std, mass: float = 2.0) -> PayloadEstimate:
    """A monitor re-estimate as ~/payload publishes it (PayloadState.to_estimate: the inertia reported as not
    identified, a point mass) of a part of `mass` (kg), φ's mass and m·c with σ `std` (kg, kg·m)."""
    phi = from_mass_com_inertia(mass, com, np.diag([0.004, 0.005, 0.003]))
    cov = np.diag(np.r_[np.asarray(std, dtype=float) ** 2, np.full(6, 1e-4)])
    est = PayloadState(phi=phi, cov=cov, determined=True, since=1.0, seconds_of_motion=4.0).to_estimate("tool0")
    assert not est.identifiable[4:].any()                    # the monitor's shape: the inertia not identified
    return est


def test_the_box_is_applied_to_a_monitor_re_estimate_with_the_inertia_not_identified():
    """h190's strict xfail, now passing (h193): the monitor's re-estimate of test_monitor_priors_ros's 2 kg part (mass
    and CoM determined to 1 / 0.5-4.5 mm, the inertia not identified) with its box and weighed mass. The ten-parameter
    sampler's chains did not settle on this shape (split R-hat 1.27), so the box was not applied; on (m, h) alone it
    is: here it does not bind (the CoM 80 mm from the nearest face, 18σ), so the data's numbers stand, and the
    inertia stays not identified."""
    est = _monitor_re_estimate(MONITOR_COM, [0.001, 0.001, 0.0012, 0.009])
    data_com, data_std = est.com.copy(), est.propagated_std()[1:4]
    out = apply_prior(est, PayloadPrior.checked(MONITOR_BOX, 2.0, 0.004))
    assert out.prior_not_applied == {} and out.quality is Quality.OK
    assert not out.identifiable[4:].any() and np.isnan(out.readable_std()[4:]).all()
    np.testing.assert_allclose(out.com, data_com, atol=1e-5)       # the box does not bind; the mass is conditioned
    np.testing.assert_allclose(out.propagated_std()[1:4], data_std, rtol=0.01)
    assert np.all(out.com >= MONITOR_BOX[:3]) and np.all(out.com <= MONITOR_BOX[3:])
    assert np.all(np.abs(out.com - MONITOR_COM) <= 2 * out.propagated_std()[1:4])
    said = [n.text for n in out.notes if n.code is NoteCode.PAYLOAD_PRIOR]
    assert any("bounds the CoM only, and does not bind" in text for text in said), said


def test_the_box_narrows_a_monitor_re_estimates_com_near_a_face_as_the_truncated_gaussian():
    """The part's CoM 5 mm inside the box's +z face, the data's CoM z σ 6 mm (12 mm on m·c over 2 kg): the box binds.
    The posterior is the data's Gaussian on (m, h) restricted to lo·m ≤ h ≤ hi·m, checked against 400 000 draws of
    that Gaussian kept where they lie in the box (independent of the sampler): mean within 0.05σ, σ within 3 %
    (com_reaching_the_mode leaves z alone here: the mean lies 0.33 σ from the mode, inside its σ). x and y are
    untouched (the box is 12σ away on them); the inertia stays not identified, its entries a point mass's."""
    lo, hi = np.array(MONITOR_BOX[:3]), np.array(MONITOR_BOX[3:])
    com = np.array([0.0201, -0.01, 0.155])
    std = np.array([0.001, 0.002, 0.002, 0.012])
    est = _monitor_re_estimate(com, std)
    data_phi, data_z_std = est.phi.copy(), est.propagated_std()[3]
    out = apply_prior(est, PayloadPrior.checked(MONITOR_BOX))
    assert out.prior_not_applied == {} and out.quality is Quality.OK, out.quality_reasons
    assert not out.identifiable[4:].any() and np.allclose(readable_vector(out.phi)[4:], 0.0, atol=1e-12)
    draws = np.random.default_rng(5).multivariate_normal(data_phi[:4], np.diag(std**2), size=400_000)
    c = draws[:, 1:4] / draws[:, :1]
    kept = c[np.all((c >= lo) & (c <= hi), axis=1)]
    assert out.com[2] < hi[2] and out.propagated_std()[3] < 0.8 * data_z_std
    np.testing.assert_allclose(out.com, kept.mean(axis=0), atol=0.05 * kept.std(axis=0).max())
    np.testing.assert_allclose(out.propagated_std()[1:4], kept.std(axis=0), rtol=0.03)
    assert any("the inertia stays not identified" in n.text for n in out.notes if n.code is NoteCode.PAYLOAD_PRIOR)


def test_the_com_box_sampler_where_little_of_the_gaussian_lies_in_the_box_matches_exact_draws():
    """The data's CoM z 6 mm above the box's +z face with σ 3 mm (2σ outside): 2 % of the Gaussian lies in the box, so
    com_box samples it by hit-and-run in the data's whitened coordinates (its 64 chains, not the accepted draws).
    Against 2 000 000 draws of the Gaussian kept where they lie in the box (46 000 of them): the mean of (m, h) within
    0.05σ, σ within 5 %, and every sample a body whose CoM lies in the box."""
    lo, hi = np.array(MONITOR_BOX[:3]), np.array(MONITOR_BOX[3:])
    mean = np.r_[2.0, 2.0 * np.array([0.02, -0.01, 0.166])]
    cov = np.diag([0.01, 0.002, 0.002, 0.006]) ** 2
    start = np.r_[2.0, 2.0 * np.array([0.02, -0.01, 0.155])]
    samples = com_box_samples(mean, cov, lo, hi, start, split_rhat)
    assert samples.shape[1] == COM_BOX_CHAINS and np.max(split_rhat(samples)) <= 1.05
    flat = samples.reshape(-1, 4)
    assert np.all(flat[:, 1:] >= lo * flat[:, :1]) and np.all(flat[:, 1:] <= hi * flat[:, :1])
    draws = np.random.default_rng(7).multivariate_normal(mean, cov, size=2_000_000)
    kept = draws[np.all((draws[:, 1:] >= lo * draws[:, :1]) & (draws[:, 1:] <= hi * draws[:, :1]), axis=1)]
    assert kept.shape[0] > 40_000
    np.testing.assert_allclose(flat.mean(axis=0), kept.mean(axis=0), atol=0.05 * kept.std(axis=0).max())
    np.testing.assert_allclose(flat.std(axis=0), kept.std(axis=0), rtol=0.05)


@pytest.mark.parametrize("outside_mm, applied", [(9.0, False), (15.0, False), (5.0, True)])
def test_a_box_that_excludes_the_monitors_com_makes_it_suspect_not_clamped(outside_mm, applied):
    """The data's CoM z 5 / 9 / 15 mm above the box's +z face with σ 2 mm (2.5 / 4.5 / 7.5σ): beyond 3σ the data
    contradict the box, which is not applied (the CoM stays the data's, outside it); at 2.5σ the box is applied,
    holding the CoM in, and the estimate is suspect for it. Never an ok CoM moved into a box that excludes it."""
    com = np.array([0.0201, -0.01, 0.16 + outside_mm / 1e3])
    est = _monitor_re_estimate(com, [0.001, 0.002, 0.002, 0.004])
    out = apply_prior(est, PayloadPrior.checked(MONITOR_BOX))
    assert out.quality is Quality.SUSPECT
    assert ("bounding_box" not in out.prior_not_applied) is applied
    if applied:
        assert out.com[2] <= MONITOR_BOX[5] and any("holds in com z" in r for r in out.quality_reasons)
    else:
        assert out.com[2] == pytest.approx(com[2], abs=1e-9)
        assert any("outside the bounding box" in r for r in out.quality_reasons), out.quality_reasons


def test_a_monitor_re_estimates_com_with_the_box_covers_the_truth_over_draws():
    """Exact Gaussian data about a part whose CoM is 2 mm inside the box's -x face (σ 3 mm per axis on the CoM,
    0.5 % on the mass, the monitor's shape), 40 draws: the box binds on x for most of them; the reported CoM's 2σ
    covers the truth on ≥ 0.9 of the 120 components, and each draw's CoM lies in the box."""
    lo, hi = np.array(MONITOR_BOX[:3]), np.array(MONITOR_BOX[3:])
    truth = np.array([lo[0] + 0.002, 0.03, 0.07])
    std = np.array([0.01, 0.006, 0.006, 0.006])
    rng = np.random.default_rng(11)
    covered, narrowed = [], 0
    for _ in range(40):
        m, h = rng.normal(2.0, std[0]), rng.normal(2.0 * truth, std[1:])
        est = _monitor_re_estimate(h / m, std, m)
        data_x_std = est.propagated_std()[1]
        out = apply_prior(est, PayloadPrior.checked(MONITOR_BOX))
        if "bounding_box" in out.prior_not_applied:
            continue
        assert np.all(out.com >= lo - 1e-12) and np.all(out.com <= hi + 1e-12)
        covered += (np.abs(out.com - truth) <= 2 * out.propagated_std()[1:4]).tolist()
        narrowed += out.propagated_std()[1] < 0.9 * data_x_std
    assert len(covered) >= 0.9 * 120 and np.mean(covered) >= 0.9, np.mean(covered)
    assert narrowed >= 20


def test_the_wrist_sensor_method_honours_the_prior_too():
    """ft fits the wrench, not the joint torques: its estimate gets the same prior (the known mass pins its mass)."""
    m = RobotModel.from_urdf("ur10")
    phi = from_mass_com_inertia(2.5, [0.03, -0.01, 0.08], np.diag([0.012, 0.015, 0.008]))
    truth = FtParameters(resolve_sensor_frame(m, "tool0"), phi, np.array([-0.6, 0.8, 0.3, 0.02, 0.01, 0.01]))
    t, q, qd, qdd = wrist_motion(m, 4.0, 100.0, joints=[3, 4, 5], q0=np.array([0.3, -1.2, 1.3, -1.0, -1.4, 0.2]),
                                 speed=0.6, seed=2)
    rec = synthetic_recording(m, t, q, qd, qdd, payload=(phi, "tool0"), noise_std=0.05, seed=0)
    force, torque = synthetic_wrench(m, truth, q, qd, qdd, seed=1)
    rec.wrench = WrenchSamples(rec.joints.t.copy(), "tool0", force, torque)
    plain = identify_payload("ft", m, None, rec, "tool0", sensor_frame="tool0")
    known = identify_payload("ft", m, None, rec, "tool0", sensor_frame="tool0",
                             payload_prior=PayloadPrior.checked(None, 2.5, 0.0005))
    assert plain.prior is None and known.prior == {"known_mass": 2.5, "known_mass_std": 0.0005}
    assert known.propagated_std()[0] < min(0.00055, plain.propagated_std()[0])
    assert known.mass == pytest.approx(2.5, abs=0.0015) and known.quality is Quality.OK


# -- red team (h109) ---------------------------------------------------------------------------------
def test_noise_free_data_outside_the_box_are_contradicted_and_nothing_is_called_pinned():
    """A zero covariance (noise-free torques) leaves project_feasible a Euclidean metric, not σ: a data estimate
    outside the box measured 0.65 "σ" from it (limit 5.5), so it passed as ok, the sampler could not mix, the
    data's numbers were kept and every entry was listed as "pinned by the prior". At zero σ the data admit no other
    body: outside the box is a contradiction; inside it the box pins nothing."""
    noisy = np.random.default_rng(0).multivariate_normal(PHI, DATA_COV)     # J not ⪰ 0 in the box: outside it
    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    assert not in_box(noisy, lo, hi).all()
    est = apply_prior(PayloadEstimate(frame="tool0", phi=noisy, covariance=np.zeros((10, 10)), method="khalil-1"),
                      PayloadPrior.checked(BOX))
    assert est.quality is Quality.SUSPECT and np.array_equal(est.phi, noisy)
    assert has_note(est.notes, NoteCode.PAYLOAD_PRIOR_CONTRADICTED)
    assert any("inf standard deviations from any body" in r for r in est.quality_reasons)
    exact = apply_prior(PayloadEstimate(frame="tool0", phi=PHI.copy(), covariance=np.zeros((10, 10)),
                                        method="khalil-1"), PayloadPrior.checked(BOX))
    assert exact.quality is Quality.OK and exact.prior_pinned == [] and np.array_equal(exact.phi, PHI)


def test_a_weighed_mass_wrong_beyond_its_own_sigma_is_not_an_ok_estimate_off_by_more_than_3_sigma():
    """h109: a weighed mass 2 % off (4.08 kg for 4.0) given with --known-mass-std 0.005 kg (16 of its own σ off) and
    data whose mass σ is 0.02 kg: where the data's draw lands within 3 combined σ of the wrong mass the posterior
    followed it, ok at 7.5σ (seed 2, R 2.13), 5.7σ (seed 5), 5.5σ (seed 6). The Birge widening covers the gap, not a
    prior sharper than the data. Now conditioning that moves the data's mass beyond 2 of its own σ is the weighed mass
    disagreeing with the motion: suspect with the reason, the prior's numbers kept (they are the better ones if the
    weighed mass is right)."""
    prior = PayloadPrior.checked(BOX, MASS * 1.02, 0.005)
    for seed in range(8):
        data = _data_estimate(seed)
        est = apply_prior(_data_estimate(seed), prior)
        off = abs(est.mass - MASS) / est.propagated_std()[0]
        assert est.quality is Quality.SUSPECT or off <= 3.0, (seed, off)
        if seed == 2:
            assert any("the weighed mass disagrees with the motion" in r and "2.1 of the motion's own σ" in r
                       for r in est.quality_reasons), est.quality_reasons
            assert not has_note(est.notes, NoteCode.PAYLOAD_PRIOR_CONTRADICTED)
            assert est.mass == pytest.approx(4.0776, abs=2e-3) and data.mass == pytest.approx(4.036, abs=1e-3)


def test_a_right_weighed_mass_sharper_than_the_data_is_rarely_called_a_disagreement():
    """The price of the rule above: the weighed mass exactly right (S = 0.005 kg given) moves the data's mass beyond
    2 of their σ where |m̂ − M| > 2 (σ² + S²) / σ, with probability 2Φ(−2 (σ² + S²) / σ²): 3.4 % with σ = 4 S, 0.006 %
    with σ = S (a weighed mass off by its own S at random: 2Φ(−2 √(σ² + S²) / σ), 3.9 % and 0.5 %). Those estimates
    are suspect; their numbers are the right prior's."""
    cov = DATA_COV.copy()
    for data_std in (0.02, 0.005):
        expected = math.erfc(2 * (data_std**2 + 0.005**2) / data_std**2 / math.sqrt(2))
        cov[0, 0] = data_std**2
        suspect, covered = [], []
        for seed in range(400):
            data = _data_estimate(seed, cov)
            est = apply_prior(data, PayloadPrior.checked(None, MASS, 0.005))
            suspect.append(est.quality is Quality.SUSPECT)
            covered.append(abs(est.mass - MASS) <= 2 * est.propagated_std()[0])
        # Binomial(400, p): 3σ about the expected count (at least one draw's worth).
        allowed = max(3 * math.sqrt(expected * (1 - expected) / 400), 1 / 400)
        assert abs(np.mean(suspect) - expected) <= allowed, (data_std, np.mean(suspect), expected)
        assert np.mean(covered) >= 0.95


@pytest.mark.parametrize("entry", [0, 1, 4])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_degenerate_data_sigma_leaves_the_prior_unapplied_and_the_estimate_suspect(entry, bad):
    """A NaN or infinite variance where φ is identifiable (a degenerate data σ): with a known mass the mass came out
    NaN, ok and determined; an infinite variance of m·c_x counted as 0 (a 147σ "contradiction" of the box, the CoM x
    σ 0.2 mm at 4.6σ off). Now the prior is not applied, the data's numbers stay, suspect with the reason."""
    cov = DATA_COV.copy()
    cov[entry, entry] = bad
    noisy = np.random.default_rng(0).multivariate_normal(PHI, DATA_COV)
    est = judge_determination(apply_prior(PayloadEstimate(frame="tool0", phi=noisy.copy(), covariance=cov,
                                                          method="khalil-1"), PayloadPrior.checked(BOX, MASS)))
    assert np.array_equal(est.phi, noisy) and np.isfinite(est.mass)
    assert est.quality is Quality.SUSPECT and est.prior is not None
    assert any("NaN or infinite entry where the motion identifies" in r for r in est.quality_reasons)


def _com_beyond_the_face(k: float) -> PayloadEstimate:
    """The block's data (DATA_COV, no noise) with its CoM x moved to k of its σ beyond the box's +x face."""
    com = COM.copy()
    com[0] = BOX[3]
    sigma = PayloadEstimate(frame="tool0", phi=from_mass_com_inertia(MASS, com, INERTIA), covariance=DATA_COV.copy(),
                            method="khalil-1").propagated_std()[1]
    com[0] += k * sigma
    return PayloadEstimate(frame="tool0", phi=from_mass_com_inertia(MASS, com, INERTIA), covariance=DATA_COV.copy(),
                           method="khalil-1")


def _slab_on_the_face(k: float) -> np.ndarray:
    """φ of a 4 kg slab in the box whose CoM is k of the data's CoM x σ (1.28 mm) inside the box's +x face: 2k σ thick
    along x, 14 × 12 cm across (k = 0: a sheet on the face). bench/box_face.py's body."""
    d = k * 0.00128
    sig = MASS / 12 * np.array([(2 * d) ** 2, 0.14**2, 0.12**2])
    inertia = np.diag([sig[1] + sig[2], sig[0] + sig[2], sig[0] + sig[1]])
    return from_mass_com_inertia(MASS, np.array([BOX[3] - d, -0.03, 0.09]), inertia)


def test_the_sampler_settles_where_the_com_lies_on_a_face():
    """h137: on the face the box leaves a thin sheet of mass, and hit-and-run's chains disagreed (split R̂ 1.17-1.57
    from 2σ inside the face to 2.9σ outside, 32 rounds did not settle them). Sampled in the CoM and the second
    moments' fractions of the room the box leaves them (box_fractions), the chains agree to split R̂ 1.05 on every
    entry, and the box's mean is a body in the box."""
    from payload_id_core.payload import priors  # noqa: PLC0415

    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    data = _data_estimate(1000, phi=_slab_on_the_face(0.0))
    info = np.linalg.inv(DATA_COV)
    nearest = project_feasible(data.phi, DATA_COV, np.ones(10, bool), extra_constraints=box_constraints(lo, hi))[0]
    mean, cov, ess, rhat = priors.box_posterior(info, info @ data.phi, lo, hi, MASS, 0.02, nearest)
    assert np.max(rhat) <= 1.05 and ess >= 100
    assert in_box(mean, lo, hi).all()
    assert np.all(np.sqrt(np.diag(cov)) <= 1.1 * np.sqrt(np.diag(DATA_COV)))


def test_where_a_fair_share_of_the_data_is_a_body_in_the_box_the_posterior_is_exact_draws_of_it(monkeypatch):
    """h210: where a fair share of the data's Gaussian is a body in the box (the cell at 3 s: 34 %), box_posterior's
    samples are that Gaussian's own draws kept in the box (rejection: exact and independent), not hit-and-run chains,
    whose σ were wider than the exact ones on 6 of the cell's seeds 100-109 (h205). Its mean lies within 0.03σ and its
    σ within 3 % of 400 000 draws kept in the box (σ of a σ from 20 000 draws: 0.5 %), its samples independent."""
    from payload_id_core.payload import priors  # noqa: PLC0415

    lo, hi = np.array(BOX[:3]), np.array(BOX[3:])
    cov = np.diag(np.r_[0.02**2, np.full(3, 0.002**2), np.full(6, 0.0025**2)])
    data = _data_estimate(3, cov=cov)
    draws = np.random.default_rng(5).multivariate_normal(data.phi, cov, size=400_000)
    kept = draws[in_box(draws, lo, hi)]
    assert 0.2 < kept.shape[0] / draws.shape[0] < 0.8             # a fair share: 0.43

    def no_chains(*args, **kwargs):
        raise AssertionError("hit-and-run run where exact draws were enough")

    monkeypatch.setattr(priors, "_sample_box_posterior", no_chains)
    info = np.linalg.inv(cov)
    mean, post_cov, ess, rhat = priors.box_posterior(info, info @ data.phi, lo, hi, MASS, 0.02, data.phi)
    ref_std = kept.std(axis=0)
    assert np.all(np.abs(mean - kept.mean(axis=0)) <= 0.03 * ref_std)
    np.testing.assert_allclose(np.sqrt(np.diag(post_cov)), ref_std, rtol=0.03)
    assert ess >= 0.9 * priors.REJECTION_TARGET and np.max(rhat) <= 1.01


@pytest.mark.parametrize("k", [0.0, 2.0])
def test_a_box_whose_com_lies_near_a_face_is_applied_and_its_sigma_covers(k):
    """The gap h137 left: a CoM within about 2σ of a face left the box unapplied (prior.not_applied), the motion's
    numbers alone. Now the box is applied and σ covers the truth: a slab on the face (k = 0) or 2σ inside it, three
    draws of the data each, every estimate ok, the box applied, the CoM x within 2σ, the ten entries within 2σ on at
    least 28 of 30 (bench/box_face.py, 20 draws on the face: coverage 0.955 of all entries, the CoM's 0.88 against the
    data's own 0.87; main applied the box on 1 of 20)."""
    truth_phi = _slab_on_the_face(k)
    truth = readable_vector(truth_phi)
    covered = 0
    for seed in range(3):
        est = apply_prior(_data_estimate(1000 + seed, phi=truth_phi), PayloadPrior.checked(BOX))
        assert est.prior_not_applied == {} and est.quality is Quality.OK
        assert any("restricted to the box" in str(n) for n in est.notes)
        z = (readable_vector(est.phi) - truth) / est.propagated_std()
        assert abs(z[1]) <= 2.0
        covered += int(np.sum(np.abs(z) <= 2.0))
    assert covered >= 28


def test_a_com_held_in_by_the_box_beyond_2_sigma_is_suspect():
    """The data's CoM 2.9σ outside the +x face (under the 3σ contradiction): the box, now applied, holds the CoM on
    the face, and the truth, were the box right, lies outside the motion's own interval: suspect, naming the
    component (h137 made it suspect where the box could not be applied; it now can be). A CoM 1.5σ outside or on the
    face: applied and ok."""
    est = apply_prior(_com_beyond_the_face(2.9), PayloadPrior.checked(BOX))
    assert est.prior_not_applied == {} and est.com[0] <= BOX[3]
    assert est.quality is Quality.SUSPECT
    assert any("holds in com x, 2.9σ of the motion's own outside it" in r for r in est.quality_reasons)
    for k in (1.5, 0.0):
        near = apply_prior(_com_beyond_the_face(k), PayloadPrior.checked(BOX))
        assert near.prior_not_applied == {} and near.quality is Quality.OK


def test_a_box_the_sampler_cannot_settle_is_said_not_applied_and_suspect_where_it_would_move_a_number(monkeypatch):
    """h133's gap: a box whose sampler did not settle was not applied, the estimate ok, and only a note said so. Now
    the estimate's prior says the box was not applied and why (payload.yaml prior.not_applied, the goal's result
    message) and, where the nearest body in the box moves a number by more than 2 of the motion's σ (the CoM 2.9σ
    beyond the face), it is suspect: the truth, if the box is right, lies outside the interval reported. A CoM on the
    face, whose nearest body moves nothing beyond 2σ, keeps its quality, the box still said not applied. (Both samplers
    made to disagree, as an unsettled set leaves them.)"""
    from payload_id_core.payload import priors  # noqa: PLC0415

    real = priors.box_posterior

    def unmixed(*args):
        mean, cov, ess, _ = real(*args)
        return mean, cov, ess, np.full(10, 1.57)

    monkeypatch.setattr(priors, "box_posterior", unmixed)
    est = apply_prior(_com_beyond_the_face(2.9), PayloadPrior.checked(BOX))
    assert est.com[0] == pytest.approx(BOX[3] + 2.9 * 0.00128, abs=2e-4)      # the data's own numbers
    assert "chains disagree" in est.prior_not_applied["bounding_box"]
    assert est.quality is Quality.SUSPECT
    assert any("could not be applied" in r and "com x by -2.9σ" in r for r in est.quality_reasons)
    d = est.to_dict()
    assert "chains disagree" in d["prior"]["not_applied"]["bounding_box"]
    assert PayloadEstimate.from_dict(d).prior_not_applied == est.prior_not_applied
    done = FinishedGoal(GoalOutcome.FINISHED, est, 8.0, False, np.zeros(6), np.zeros(6))
    assert "bounding box given but NOT applied: the sampler's chains disagree" in done.result_message()

    on_face = apply_prior(_com_beyond_the_face(0.0), PayloadPrior.checked(BOX))
    assert "bounding_box" in on_face.prior_not_applied and on_face.quality is Quality.OK
    assert "bounding box given but NOT applied" in on_face.prior_not_applied_text()


def test_a_contradicted_prior_is_recorded_as_not_applied():
    est = apply_prior(_data_estimate(0), PayloadPrior.checked(BOX, 3.0))
    assert set(est.prior_not_applied) == {"bounding_box", "known_mass"}
    assert all("contradict" in why for why in est.prior_not_applied.values())
