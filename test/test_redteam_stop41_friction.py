"""Red team (issue 29): difference-rls takes a joint's load-friction μ_j as known where robot.yaml models its gear
friction (load_friction.prior_std: μ − μ̂ = 0 with the identification's σ). Where that prior is wrong or claims
too much, is the default confidently wrong where the free μ_j was right?

The setting is the demo's (test_convergence_excitation's fast_cell): the UR10 cell on ur10_payload_fast, the robot
identified with its gear friction on the unloaded run (seed 11: μ̂ 0.0196 ± 0.0012 shoulder lift, 0.0224 ± 0.0018
elbow, for the simulator's 0.02), the 3.5 kg part on tool0, the user path (identify_payload: robot.yaml's
load-friction choice, covariance_extra's σ). "Free" is the same robot.yaml with the gear record's σ null (μ given,
not fitted): μ_j a free unknown, bit for bit main before the known prior.
"""

import dataclasses
import re

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode
from payload_id_core.payload.load_friction import prior_std
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.robot_id.gear_friction import GearFriction

FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
FAST = "ur10_payload_fast"
SIM_MU = 0.02          # the ur10 profile's load_coulomb


@pytest.fixture(scope="module")
def geared(ur10):
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    return fit_given_model(ur10, simulate(ur10, load_trajectory(FAST), None, "ur10", seed=11), friction="nonlinear",
                          gear_friction=True)


def _free(robot):
    """The same robot.yaml with μ̂ given rather than fitted: every μ_j a free unknown (main before issue 29's)."""
    return dataclasses.replace(robot, gear=GearFriction(robot.gear.mu, np.full(robot.gear.mu.size, np.nan)))


@pytest.fixture(scope="module")
def warm_run(ur10):
    """The loaded run with the drives' gear friction 1.5× what they had at identification (warm drives: the real
    UR10e's were 3-24 % higher on the loaded runs; the shoulder's true μ is 1.5× its μ̂ 0.0196)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415
    from payload_id_core.sim.profile import load_profile  # noqa: PLC0415

    profile = load_profile("ur10", ur10.n)
    profile.friction.load_coulomb = 1.5 * profile.friction.load_coulomb
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    return simulate(ur10, load_trajectory(FAST), truth, profile, seed=100)


def _mass_z(est: PayloadEstimate) -> float:
    return abs(est.phi[0] - MASS) / float(np.sqrt(est.covariance[0, 0]))


# --- malformed gear records -------------------------------------------------------------------------------------

def test_a_gear_record_whose_sigma_is_zero_is_refused(ur10, geared, tmp_path):
    """A fitted μ's σ is never 0; main read a hand-edited 0 silently as "free" (prior_std NaN) while robot.yaml
    claims μ exact. Refused with the joint and the fix, before anything is estimated."""
    d = geared.to_dict()
    d["friction"]["gear"]["mu_std"] = [None, 0.0, 0.0019, None, None, None]
    with pytest.raises(PayloadIdError, match=r"mu_std is 0 for joint\(s\) \[1\].*re-run payload-id identify-robot"):
        RobotIdentification.from_dict(d, ur10, "robot.yaml")
    # the file route too (what identify-payload --robot reads: exit 2)
    import yaml  # noqa: PLC0415

    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="mu_std is 0"):
        RobotIdentification.load(path, ur10)
    # and never written: an identification given such a record refuses it before any file exists
    with pytest.raises(PayloadIdError, match="std is 0 for joint"):
        dataclasses.replace(geared, gear=GearFriction(geared.gear.mu, np.where(geared.gear.mu > 0, 0.0, np.nan)))


def test_what_held_malformed_mu_and_sigma_and_a_null_sigma_frees_the_joint(ur10, geared):
    """Held on main: a negative σ, a NaN or negative μ are refused; a null σ (μ given) and a σ on a joint with μ 0
    leave μ_j free (prior_std NaN), never a confident prior."""
    for gear in ({"mu_std": [None, -0.001, 0.0019, None, None, None]},
                 {"mu": [0.0, float("nan"), 0.0224, 0.0, 0.0, 0.0]}, {"mu": [0.0, 0.0174, 0.0224, 0.0, 0.0, -0.001]}):
        d = geared.to_dict()
        d["friction"]["gear"].update(gear)
        with pytest.raises(PayloadIdError, match="robot.yaml"):
            RobotIdentification.from_dict(d, ur10, "robot.yaml")
    d = geared.to_dict()
    d["friction"]["gear"]["mu_std"] = [None, None, 0.0019, 0.5, None, None]
    std = prior_std(RobotIdentification.from_dict(d, ur10, "robot.yaml"), ur10.n)
    assert np.isnan(std[[0, 1, 3, 4, 5]]).all() and std[2] == pytest.approx(0.0019)


# --- the gear identification's σ, which difference-rls now weighs μ_j with ------------------------------------

def test_the_identified_gear_mu_sigma_covers_its_error_over_robot_seeds(ur10):
    """Was a strict xfail (h76): the shoulder lift's μ̂ low on every robot seed (1000-1004: z −1.8, −1.3, −3.2, −1.0,
    −1.4). The cause was the friction shapes searched with the gear friction still in the torques
    (gear_friction.SHAPE_ALTERNATIONS): μ̂ is now fitted again with the shapes searched without it."""
    from payload_id_core.sim import simulate  # noqa: PLC0415

    traj = load_trajectory(FAST)
    z = []
    for seed in range(1000, 1005):
        gear = fit_given_model(ur10, simulate(ur10, traj, None, "ur10", seed=seed), friction="nonlinear",
                              gear_friction=True).gear
        assert gear.mu[1] > 0 and np.isfinite(gear.mu_std[1])           # the shoulder lift's is kept every time
        assert gear.mu[2] > 0 and np.isfinite(gear.mu_std[2])           # and the elbow's
        z.append((gear.mu[1:3] - SIM_MU) / gear.mu_std[1:3])
    z = np.array(z)
    assert np.sqrt(np.mean(z[:, 0]**2)) <= 1.5 and abs(np.mean(z[:, 0])) <= 1.0, z.round(2)
    # the elbow, which was covered already, stays so (the fix is no widening), and no seed is beyond 3σ on either
    assert np.sqrt(np.mean(z[:, 1]**2)) <= 1.5 and np.all(np.abs(z) <= 3.0), z.round(2)


# --- warm drives: the loaded run's μ well above robot.yaml's μ̂ -----------------------------------------------

def test_with_the_free_mu_the_warm_drives_run_is_within_three_sigma(ur10, geared, warm_run):
    """The reference for the test below: main's free μ_j on the same data, the user path: converged, quality
    ok, +0.62 % at 2.6σ (σ 0.24 %)."""
    est = identify_payload("difference-rls", ur10, _free(geared), warm_run, FRAME)
    assert est.converged and est.quality is Quality.OK
    assert _mass_z(est) <= 3.0, (est.phi[0], np.sqrt(est.covariance[0, 0]))


def test_known_mu_is_not_confidently_wrong_when_the_drives_run_warmer(ur10, geared, warm_run):
    est = identify_payload("difference-rls", ur10, geared, warm_run, FRAME)
    confident = est.converged and est.quality is Quality.OK
    assert not confident or _mass_z(est) <= 3.0, (est.phi[0], np.sqrt(est.covariance[0, 0]))
    # What makes it not confident: the gear-friction witness (payload/gear_drift.py), which names the joint,
    # robot.yaml's μ̂ against the run's μ, the payload's shift and the fix; the estimate itself is the method's own.
    assert est.quality is Quality.SUSPECT
    reason = " ".join(est.quality_reasons)
    assert re.search(r"shoulder_lift_joint μ̂ 0\.0196 ± 0\.00\d+ against the run's 0\.0[45]\d+", reason), reason
    assert "re-identify the gear friction (identify-robot --gear-friction identify)" in reason
    note = next(str(n) for n in est.notes if n.code is NoteCode.PAYLOAD_GEAR_DRIFT)
    assert "χ²" in note and "this run's" in note


@pytest.fixture(scope="module")
def healthy_run(ur10):
    """The same loaded run with the drives as at identification (μ 0.02, robot.yaml's μ̂ 0.0196 / 0.0224)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415

    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    return simulate(ur10, load_trajectory(FAST), truth, "ur10", seed=100)


def test_the_gear_witness_passes_a_healthy_run_and_leaves_the_estimate_alone(ur10, geared, healthy_run, warm_run,
                                                                            monkeypatch):
    """No false alarm: on the run whose drives are as identified the witness judges (its note), sees no material
    shift and the estimate stays converged and ok within 3σ. And it is a witness, not a switch: the payload with it is
    bit for bit the payload without it, on the healthy and on the warm run."""
    from payload_id_core.payload import against_robot  # noqa: PLC0415
    from payload_id_core.payload.gear_drift import gear_drift_witness  # noqa: PLC0415
    from payload_id_core.payload.methods.common import method_signals  # noqa: PLC0415
    from payload_id_core.payload.options import PayloadOptions  # noqa: PLC0415

    est = identify_payload("difference-rls", ur10, geared, healthy_run, FRAME)
    assert est.converged and est.quality is Quality.OK and _mass_z(est) <= 3.0
    note = next(str(n) for n in est.notes if n.code is NoteCode.PAYLOAD_GEAR_DRIFT)
    chi2, limit = (float(x) for x in re.search(r"χ² ([\d.]+) on 2 \(limit ([\d.]+)\)", note).groups())
    assert limit == pytest.approx(13.8, abs=0.1)
    sig = method_signals(healthy_run, ur10, PayloadOptions.from_kwargs(), geared)
    witness = gear_drift_witness(ur10, geared, sig, ur10.payload_frame(FRAME), np.asarray(est.phi))
    assert witness.chi2 == pytest.approx(chi2, abs=0.06) and not witness.material(est)
    # the shift with μ free is a small fraction of the estimate's σ: nothing a user could be misled by
    assert abs(witness.d[0]) < 0.2 * est.propagated_std()[0]
    for run in (healthy_run, warm_run):
        judged = identify_payload("difference-rls", ur10, geared, run, FRAME)
        monkeypatch.setattr(against_robot, "gear_drift_witness", lambda *a, **k: None)
        plain = identify_payload("difference-rls", ur10, geared, run, FRAME)
        monkeypatch.undo()
        np.testing.assert_array_equal(judged.phi, plain.phi)
        np.testing.assert_array_equal(judged.covariance, plain.covariance)
        assert not any(n.code is NoteCode.PAYLOAD_GEAR_DRIFT for n in plain.notes)


def test_the_gear_witness_stays_out_where_no_mu_is_known(ur10, geared, warm_run):
    """Only a method that takes robot.yaml's μ̂ as known is judged: the free μ_j (gear σ null) and khalil-1 carry no
    gear-drift note."""
    for method, robot in (("difference-rls", _free(geared)), ("khalil-1", geared)):
        est = identify_payload(method, ur10, robot, warm_run, FRAME)
        assert not any(n.code is NoteCode.PAYLOAD_GEAR_DRIFT for n in est.notes), method
