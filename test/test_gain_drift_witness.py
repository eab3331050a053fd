"""The per-joint drive-gain witness (payload/gain_drift.py; issue 29 item 5, "Bad input").

One drive's gain drifted since identification: the common-factor witnesses read it as a share of the whole arm
(test_redteam_stop40: UR10 shoulder_lift × 1.02, khalil-1 +4.6 % at 7.3σ, converged and ok). Each joint's factor of
its whole modelled effort is fitted beside the payload and compared, Hausman-type, with the fit at robot.yaml's gain;
flagged only beyond the joints' family-wise limit and when the payload's shift is beyond the estimate's σ. h71's first
per-joint witness (a bilinear fit, no floor, no payload gate) called honest runs drifted: the noise-free `clean`
Panda, a slow UR3 run and the demo cell (test_identifiability); those runs are here and there, not flagged.
Simulated runs take seconds; the MuJoCo and real ones a few more (the real ones skip without the recordings)."""

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA, requires_ur10e_data

import ur10e_data as rd  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload import gain_drift
from payload_id_core.payload.finish import MODEL_RESOLUTION
from payload_id_core.payload.gain_drift import GainWitness, JointGain
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.testing.sim_runs import drift_run as _linear_friction_run
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

GAIN_WORDS = "against robot.yaml's model: factor"


def _gain_reason(est: PayloadEstimate) -> str:
    return next((r for r in est.quality_reasons if GAIN_WORDS in r), "")


def _gain_note(est: PayloadEstimate) -> str:
    return next(n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_GAIN_DRIFT)


def _chi2(est: PayloadEstimate) -> float:
    return float(_gain_note(est).split("(χ² ")[1].split(",")[0])


@pytest.fixture(scope="module", params=["ur10", "panda"])
def identified(request):
    """The robot identified on one 8 s motion without load, gains given (test_redteam_stop40's)."""
    model = RobotModel.from_urdf(request.param)
    robot = fit_given_model(model, _linear_friction_run(model, 1, payload=False), friction="linear", delay=0.0)
    robot.effort_scale_source = "given"
    return model, robot


# -- the rule -------------------------------------------------------------------------------------------------------

def _estimate(mass: float, mass_std: float, com_std: float) -> PayloadEstimate:
    phi = from_mass_com_inertia(mass, [0.0, 0.0, 0.05], np.diag([0.01, 0.01, 0.01]))
    cov = np.diag([mass_std**2] + [(mass * com_std) ** 2] * 3 + [1e-8] * 6)
    return PayloadEstimate("tool0", phi, cov, "test")


def test_the_limit_is_family_wise_over_the_joints():
    """n joints at χ²₁'s 1 − 0.001/n quantile alarm together at most 0.1 % of honest runs (Bonferroni)."""
    one = JointGain("j", 1.0, 0.01, np.zeros(4))
    assert GainWitness((one,), 4.0).limit == pytest.approx(10.83, abs=0.01)
    assert GainWitness((one,) * 6, 4.0).limit == pytest.approx(14.17, abs=0.01)
    assert GainWitness((one,) * 7, 4.0).limit == pytest.approx(14.47, abs=0.01)


def test_a_significant_factor_that_does_not_move_the_payload_is_not_flagged():
    """Beyond the limit (5σ) but the payload's shift (0.001 kg, 0.1 mm) is inside the estimate's σ (0.01 kg, 1 mm):
    no wrong answer, nothing to flag; the same factor moving the mass by 0.05 kg is flagged."""
    est = _estimate(4.0, 0.01, 0.001)
    quiet = GainWitness((JointGain("shoulder_lift_joint", 1.025, 0.005, np.array([0.001, 0.0, 0.0, 0.0004])),), 4.0)
    assert quiet.largest.chi2 == pytest.approx(25.0) and not quiet.drifted(est)
    assert gain_drift.gain_drift_reason(quiet, est, "run") == ""
    loud = GainWitness((JointGain("shoulder_lift_joint", 1.025, 0.005, np.array([0.05, 0.0, 0.0, 0.002])),), 4.0)
    reason = gain_drift.gain_drift_reason(loud, est, "run")
    assert "shoulder_lift_joint read 2.5 % high" in reason and "1.0250 ± 0.0050" in reason, reason
    assert "mass moves by -0.05 kg" in reason and "re-identify the robot" in reason and "drive gains" in reason
    assert "cannot tell which" not in reason


def test_joints_whose_factors_move_the_payload_alike_are_both_named():
    """bench/gain_drift.py's UR10 cross-motion cell, shoulder_lift × 1.02: shoulder_lift reads 1.0197 (χ² 15.5) and
    elbow 0.9794 (16.9): on that motion either factor explains the other's drift, so the reason names both."""
    est = _estimate(4.0, 0.01, 0.001)
    both = GainWitness((JointGain("shoulder_lift_joint", 1.0197, 0.005, np.array([-0.076, 0.0, 0.0, -0.003])),
                        JointGain("elbow_joint", 0.9794, 0.005, np.array([0.12, 0.0, 0.0, 0.005]))), 4.0)
    reason = gain_drift.gain_drift_reason(both, est, "run")
    assert reason.startswith("run's efforts on elbow_joint read 2.1 % low"), reason
    assert "or shoulder_lift_joint's, factor 1.0197 ± 0.0050" in reason and "cannot tell which" in reason


# -- simulated ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [3, 4, 5])
def test_honest_runs_are_not_flagged(identified, seed):
    """Measured: largest joint's χ² 0.1-2.2 on these runs (limit 14.2 for 6 joints, 14.5 for 7)."""
    model, robot = identified
    est = identify_payload("khalil-1", model, robot, _linear_friction_run(model, seed), model.default_payload_frame,
                           delay=0.0)
    assert est.quality is Quality.OK and est.converged, est.quality_reasons
    assert _chi2(est) < 5, _gain_note(est)


@pytest.mark.parametrize("factor", [1.02, 0.98])
def test_a_one_joint_drift_is_named_with_its_factor_and_the_payloads_shift(identified, factor):
    """The second joint's efforts × `factor` (seed 4): that joint is named, its factor read within 0.5 % (its σ
    floor), the payload's shift and the fix given. Measured UR10 1.0201 / 0.9796 ± 0.005 (χ² 16.2 / 16.6, limit
    14.2), Panda 1.0220 ± 0.005 (19.4, limit 14.5). The Panda's × 0.98 reads 0.9820 ± 0.005, χ² 13.0: under the
    limit (2 % is 4σ of the floor, the limit 3.8σ), caught by the masked-drift witness (a_f 0.96)."""
    model, robot = identified
    factors = np.ones(model.n)
    factors[1] = factor
    est = identify_payload("khalil-1", model, robot, _linear_friction_run(model, 4, factors),
                           model.default_payload_frame, delay=0.0)
    assert not (est.converged and est.quality is Quality.OK)
    if model.n == 7 and factor < 1:
        assert 10 < _chi2(est) and "panda_joint2" in _gain_note(est), _gain_note(est)
        return
    reason = _gain_reason(est)
    name = model.joint_names[1]
    assert f"efforts on {name} read 2." in reason and ("high" if factor > 1 else "low") in reason, est.quality_reasons
    read = float(reason.split("factor ")[1].split(" ")[0])
    assert abs(read - factor) < MODEL_RESOLUTION
    assert "the mass moves by" in reason and "re-identify the robot" in reason


def test_the_identified_gains_sigma_widens_the_factors(identified):
    """robot.yaml's σ of a joint's gain (identified gains) enters that joint's factor σ: 2 % on every joint and the
    drifted shoulder's 2 % is inside it (it is what the identification could not tell)."""
    model, robot = identified
    factors = np.ones(model.n)
    factors[1] = 1.02
    rec = _linear_friction_run(model, 4, factors)
    robot.effort_scale_std = 0.02 * np.abs(np.asarray(robot.effort_scale, dtype=float))
    try:
        est = identify_payload("khalil-1", model, robot, rec, model.default_payload_frame, delay=0.0)
    finally:
        robot.effort_scale_std = None
    assert not _gain_reason(est), est.quality_reasons
    assert float(_gain_note(est).split(" ± ")[1].split(" ")[0]) >= 0.02, _gain_note(est)


def test_a_slow_honest_ur3_run_is_not_flagged():
    """h77's case against h71's witness: 8 s within 0.3 of the limits, 2 kg; h71 read elbow 0.9459 ± 0.0152 (3.56σ)
    and made the right estimate (−0.18 %) suspect. Measured here: elbow 0.9282 ± 0.0259, χ² 7.7 (limit 14.2; the
    factor and the free payload trade on this weak motion, and σ, with robot.yaml's C_a and the residual's serial
    correlation, carries it)."""
    model = RobotModel.from_urdf("ur3")
    noise = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.05])
    friction = make_friction_model("linear", model.joint_names)

    def run(seed, duration, fraction, phi=None):
        t, q, qd, qdd = sum_of_sines(model, duration, 100.0, seed=seed, fraction=fraction)
        return synthetic_recording(model, t, q, qd, qdd, friction=friction,
                                   friction_params=np.tile([3.0, 2.0, 0.1], model.n), noise_std=noise, seed=seed,
                                   payload=None if phi is None else (phi, model.default_payload_frame))

    robot = fit_given_model(model, run(1, 8.0, 0.8), friction="linear", delay=0.0)
    robot.effort_scale_source = "given"
    phi = from_mass_com_inertia(2.0, [0.02, -0.03, 0.08], np.diag([0.01, 0.015, 0.0075]))
    est = identify_payload("khalil-1", model, robot, run(7, 8.0, 0.3, phi), model.default_payload_frame, delay=0.0)
    assert abs(est.mass / 2.0 - 1) < 0.005                      # the premise: the estimate is right
    assert not _gain_reason(est) and est.quality is Quality.OK and est.converged, est.quality_reasons
    assert _chi2(est) < 10, _gain_note(est)


PANDA_PAYLOAD = {"frame": "panda_link7", "mass": 1.5, "com": [0.02, -0.03, 0.08],
                 "inertia": {"ixx": 0.004, "ixy": 0.0, "ixz": 0.0, "iyy": 0.005, "iyz": 0.0, "izz": 0.003}}


def test_an_honest_clean_panda_run_is_not_flagged(tmp_path):
    """h77's case against h71's witness: the `clean` profile (no noise, MuJoCo; gains given, no σ) left robot.yaml's
    model a numerical 0.1-0.2 % off per joint, read as drifts (panda_joint6 1.001 ± 0.00028) on every method. The
    factor's σ floor (MODEL_RESOLUTION) keeps it inside: measured χ² 0.2."""
    payload = tmp_path / "payload.yaml"
    payload.write_text(yaml.safe_dump(PANDA_PAYLOAD))
    unloaded, loaded, robot = tmp_path / "unloaded", tmp_path / "loaded", tmp_path / "robot.yaml"
    assert cli_main(["simulate", "--urdf", "panda", "--trajectory", "panda_payload_inertia", "--profile", "clean",
                     "--seed", "1", "--out", str(unloaded)]) == 0
    assert cli_main(["simulate", "--urdf", "panda", "--trajectory", "panda_payload", "--profile", "clean", "--seed",
                     "3", "--payload", str(payload), "--out", str(loaded)]) == 0
    assert cli_main(["identify-robot", "--urdf", "panda", "--bag", str(unloaded), "--out", str(robot)]) == 0
    for method in ("difference-rls", "khalil-1"):
        out = tmp_path / f"{method}.yaml"
        assert cli_main(["identify-payload", "--urdf", "panda", "--robot", str(robot), "--bag", str(loaded),
                         "--method", method, "--out", str(out)]) == 0
        est = yaml.safe_load(out.read_text())
        assert abs(est["mass"] / 1.5 - 1) < 0.0025, est["mass"]          # the premise: the estimate is right
        assert est["quality"]["status"] == "ok", est["quality"]["reasons"]
        note = next(n["text"] for n in est["notes"] if n["code"] == NoteCode.PAYLOAD_GAIN_DRIFT.value)
        assert float(note.split("(χ² ")[1].split(",")[0]) < 5, note


# -- the real UR10e ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real(ur10e_robot_yaml):
    model = RobotModel.from_urdf(str(UR10E_DATA / "ur10e.urdf"))
    return model, RobotIdentification.load(ur10e_robot_yaml, model)


@requires_ur10e_data
@pytest.mark.parametrize("pair", list(rd.PAIRS))
def test_real_loaded_runs_are_not_flagged(real, pair):
    """robot.yaml from the 14harm pair with the known load (gains identified, with their σ), khalil-1 on each real
    loaded run: no joint beyond its limit with a material shift."""
    model, robot = real
    rec = read_ur_csv(UR10E_DATA / rd.PAIRS[pair][1], list(robot.effort_scale))
    est = identify_payload("khalil-1", model, robot, rec)
    assert not _gain_reason(est), est.quality_reasons
