"""Issue 29 item 5 and issue 30 item 4: the red team's three confident wrong answers on a robot.yaml that is right
only in appearance (the previous session's closing note, "Known confident wrong answers still possible").

1. Effort drift of 2-3 % on the payload run (robot.yaml unchanged): khalil-1 −11.4 % at 13.7σ and +7.9 % at 9.3σ,
   ok. The drift factor fitted beside the biased payload showed half the drift; fitted with a free payload it shows
   all of it (payload/effort_drift.py).
2. Drive gains 2.5-3 % off at identify-robot: the URDF scale factor 0.977 / 1.033 is plausible, and khalil-1 was
   −2.6 % to +2.9 % off at 3.1-3.5σ, ok. A factor further from 1 than its noise now joins σ
   (robot_id/scale_check.payload_scale_std).
3. A weighed mass 2 % off with the default σ: the posterior was 3.4σ off, ok. Where the data and the weighed mass
   disagree beyond their combined σ the posterior's mass σ covers it (payload/priors.py, Birge ratio).

Each case runs simulated (always) and on the real UR10e recordings (skipped without them), and each checks that a
run without the fault keeps its numbers.
"""

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA, requires_ur10e_data

import ur10e_data as rd  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.priors import PayloadPrior, apply_prior, known_mass_disagreement
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification, check_scale, fit_given_model
from payload_id_core.testing.sim_runs import linear_friction_run as _run

MASS = 4.0
PHI = from_mass_com_inertia(MASS, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015]))
DRIFT_WORDS = "× robot.yaml's model of the arm"


def _drift_reason(est: PayloadEstimate) -> str:
    return next((r for r in est.quality_reasons if DRIFT_WORDS in r), "")


def _factor(reason: str) -> float:
    return float(reason.split("efforts are ")[1].split()[0])


# -- simulated ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def robots(ur10):
    """The unloaded UR10 identified from its torques, and from torques 3 % low (gains 3 % off given by hand to
    identify-robot, whose robot.yaml then says "given"; the right one says so too)."""
    out = {label: fit_given_model(ur10, _run(ur10, 1, scale), friction="linear", delay=0.0)
           for label, scale in (("right", None), ("gains_low3", 1 / 0.97))}
    for robot in out.values():
        robot.effort_scale_source = "given"
    return out


@pytest.mark.parametrize("drift", [0.98, 1.02])
def test_a_2_percent_effort_drift_is_named_with_its_size(ur10, robots, drift):
    """Before: the factor fitted beside the payload read about 0.99 / 1.01 (the biased payload took the rest), inside
    the 1.5 % tolerance, and khalil-1's mass was ≈ 7 % off, ok."""
    est = identify_payload("khalil-1", ur10, robots["right"], _run(ur10, 3, 1 / drift, payload=PHI), "tool0",
                           delay=0.0)
    assert abs(est.mass / MASS - 1) > 0.03                          # the premise: the drift is in the mass
    reason = _drift_reason(est)
    assert reason and _factor(reason) == pytest.approx(drift, abs=0.003), est.quality_reasons
    assert "identify-robot" in reason and est.quality is Quality.SUSPECT and not est.converged


def test_a_run_without_drift_is_not_called_drifted(ur10, robots):
    for seed in (3, 4, 5):
        est = identify_payload("khalil-1", ur10, robots["right"], _run(ur10, seed, payload=PHI), "tool0", delay=0.0)
        assert not _drift_reason(est) and est.quality is Quality.OK, est.quality_reasons
        assert est.mass == pytest.approx(MASS, rel=0.01)


def test_gains_3_percent_off_at_identify_robot_enter_sigma(ur10, robots):
    """The robot identified on torques 3 % low reads a factor ≈ 0.975, inside the ±3.5 % band; the payload run with
    the same gains is 3 % low. Before: σ ≈ 0.3 %, about 10σ off, ok."""
    robot = robots["gains_low3"]
    k = check_scale(robot).factor
    assert k == pytest.approx(0.974, abs=0.006) and check_scale(robot).plausible
    est = identify_payload("khalil-1", ur10, robot, _run(ur10, 3, 1 / 0.97, payload=PHI), "tool0", delay=0.0)
    err, std = est.mass - MASS, est.readable_std()[0]
    assert abs(err) > 0.02 * MASS                                    # the premise: the gain error is in the mass
    assert abs(err) <= 1.5 * std, (est.mass, std)
    assert std == pytest.approx(abs(k - 1) * est.mass, rel=0.15)     # the scale error dominates σ, and no more
    assert has_note(est.notes, NoteCode.PAYLOAD_SCALE_UNCERTAINTY)
    right = identify_payload("khalil-1", ur10, robots["right"], _run(ur10, 3, payload=PHI), "tool0", delay=0.0)
    assert not has_note(right.notes, NoteCode.PAYLOAD_SCALE_UNCERTAINTY)
    assert right.readable_std()[0] < 0.01 * MASS and abs(right.mass - MASS) <= 2 * right.readable_std()[0]


def _data(mass_rel_std: float, phi=PHI) -> PayloadEstimate:
    cov = np.diag(np.r_[(mass_rel_std * MASS) ** 2, np.full(3, 0.004**2), np.full(6, 0.02**2)])
    return PayloadEstimate(frame="tool0", phi=np.array(phi, dtype=float), covariance=cov, method="khalil-1")


def test_a_weighed_mass_2_percent_off_is_covered_by_sigma():
    """The real case's proportions: the data's mass right with σ 0.83 %, the weighed mass 2 % high with the default
    σ 0.5 %: they disagree by 2.06 combined σ (not contradicted: limit 3). Before: 1.47 % off at 3.4σ, ok."""
    prior = PayloadPrior.checked(None, 1.02 * MASS)
    data = _data(0.0083)
    r = known_mass_disagreement(prior, data)
    assert r == pytest.approx(2.06, abs=0.02)
    est = apply_prior(data, prior)
    assert est.quality is Quality.OK
    err, std = est.mass - MASS, est.readable_std()[0]
    assert err == pytest.approx(0.0147 * MASS, rel=0.02)            # the mean is the same as before
    assert abs(err) / std < 2.0
    assert any(f"disagree by {r:.2f} combined σ" in str(n) for n in est.notes)


@pytest.mark.parametrize("offset", [0.0, 0.004, -0.008])
def test_a_weighed_mass_that_agrees_keeps_the_sharp_sigma(offset):
    """Data and weighed mass within their combined σ: the posterior is the plain conditioning, σ = 1/√(1/S² + 1/σ²)."""
    prior = PayloadPrior.checked(None, (1 + offset) * MASS)
    est = apply_prior(_data(0.0083), prior)
    s, d = 0.005 * (1 + offset) * MASS, 0.0083 * MASS
    assert est.readable_std()[0] == pytest.approx(1 / np.sqrt(1 / s**2 + 1 / d**2), rel=1e-9)
    assert not any("combined σ" in str(n) for n in est.notes)


# -- the real UR10e ----------------------------------------------------------------------------------------------

PAIRS = {rd.GAIN_PAIR: rd.PAIRS[rd.GAIN_PAIR], "15harm": rd.PAIRS["15harm"], "01_31": rd.PAIRS["01_31"]}


@pytest.fixture(scope="module")
def real(ur10e_robot_yaml):
    model = RobotModel.from_urdf(str(UR10E_DATA / "ur10e.urdf"))
    return model, RobotIdentification.load(ur10e_robot_yaml, model)


def _real_loaded(robot: RobotIdentification, pair: str, drift: float = 1.0):
    """The pair's loaded run read with robot.yaml's gains × `drift` (drives `drift` × as strong as when identified)."""
    return read_ur_csv(UR10E_DATA / PAIRS[pair][1], [float(g) * drift for g in robot.effort_scale])


@requires_ur10e_data
@pytest.mark.parametrize("drift", [0.97, 1.02])
def test_real_effort_drift_is_named(real, drift):
    """Before: −11.4 % at 13.7σ and +7.9 % at 9.3σ on 15harm, ok (the factor read 0.986 / 1.011)."""
    model, robot = real
    est = identify_payload("khalil-1", model, robot, _real_loaded(robot, "15harm", drift))
    assert abs(est.mass / rd.LOAD_MASS_KG - 1) > 0.05
    reason = _drift_reason(est)
    assert reason and _factor(reason) == pytest.approx(drift, abs=0.004), est.quality_reasons
    assert est.quality is Quality.SUSPECT and not est.converged


@requires_ur10e_data
@pytest.mark.parametrize("pair", list(PAIRS))
def test_real_runs_without_drift_are_not_called_drifted(real, pair):
    model, robot = real
    est = identify_payload("khalil-1", model, robot, _real_loaded(robot, pair))
    assert not _drift_reason(est) and est.quality is Quality.OK, est.quality_reasons
    assert abs(est.mass / rd.LOAD_MASS_KG - 1) < 0.01


HELD_OUT = [a for name in ("15harm", "01_31") for a in ("--held-out-csv-ur", str(UR10E_DATA / PAIRS[name][0]))]


def _identify_robot(out, *extra: str) -> None:
    unloaded, loaded = (str(UR10E_DATA / f) for f in PAIRS[rd.GAIN_PAIR])
    assert cli_main(["identify-robot", "--urdf", str(UR10E_DATA / "ur10e.urdf"), "--csv-ur", unloaded, *HELD_OUT,
                     *extra, "--out", str(out)]) == 0


def _identify_payload(robot_yaml, out, pair: str, *extra: str) -> dict:
    unloaded, loaded = (str(UR10E_DATA / f) for f in PAIRS[pair])
    assert cli_main(["identify-payload", "--urdf", str(UR10E_DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", loaded, "--unloaded-csv-ur", unloaded, "--method", "khalil-1", *extra,
                     "--out", str(out)]) == 0
    return yaml.safe_load(out.read_text())


@requires_ur10e_data
def test_real_gains_3_percent_low_at_identify_robot_enter_sigma(ur10e_robot_yaml, tmp_path):
    """identify-robot with --effort-scale 0.97 × the right gains (and the user path's held-out runs): factor 0.977.
    Before: khalil-1 −2.6 % ± 0.79 % on 15harm (3.3σ), ok."""
    gains = np.asarray(yaml.safe_load(ur10e_robot_yaml.read_text())["effort_scale"], dtype=float)
    robot_yaml = tmp_path / "robot.yaml"
    _identify_robot(robot_yaml, "--effort-scale", ",".join(f"{g:.6g}" for g in 0.97 * gains))
    assert yaml.safe_load(robot_yaml.read_text())["scale_check"]["urdf_factor"] == pytest.approx(0.977, abs=0.002)
    d = _identify_payload(robot_yaml, tmp_path / "payload.yaml", "15harm")
    err = d["mass"] - rd.LOAD_MASS_KG
    assert err / rd.LOAD_MASS_KG == pytest.approx(-0.026, abs=0.003)
    assert abs(err) / d["std"]["mass"] < 2.0
    assert any(n["code"] == NoteCode.PAYLOAD_SCALE_UNCERTAINTY.value for n in d["notes"])


@pytest.fixture(scope="module")
def held_out_robot_yaml(tmp_path_factory):
    """robot.yaml as bench/ur10e.py makes it: the gains from the 14harm pair and the known mass, the model error
    measured on the other two pairs' unloaded runs (the user path whose mass σ is 0.8 %)."""
    out = tmp_path_factory.mktemp("held_out") / "robot.yaml"
    _identify_robot(out, "--loaded-csv-ur", str(UR10E_DATA / PAIRS[rd.GAIN_PAIR][1]), "--known-payload-mass",
                    str(rd.LOAD_MASS_KG))
    return out


@requires_ur10e_data
@pytest.mark.parametrize("pair", ["15harm", rd.GAIN_PAIR])
def test_real_weighed_mass_2_percent_off_is_covered(held_out_robot_yaml, tmp_path, pair):
    """--known-mass 2.861 (2.805 + 2 %), default σ. Before: +1.5 % ± 0.43 % (3.4σ), converged and ok. The right
    weighed mass keeps its σ (0.43 %)."""
    d = _identify_payload(held_out_robot_yaml, tmp_path / "wrong.yaml", pair, "--known-mass", "2.861")
    err = d["mass"] - rd.LOAD_MASS_KG
    assert 0.01 < err / rd.LOAD_MASS_KG < 0.02 and abs(err) / d["std"]["mass"] < 2.0
    right = _identify_payload(held_out_robot_yaml, tmp_path / "right.yaml", pair, "--known-mass", "2.805")
    assert right["std"]["mass"] / rd.LOAD_MASS_KG == pytest.approx(0.0043, abs=0.0003)
    assert abs(right["mass"] - rd.LOAD_MASS_KG) <= 2 * right["std"]["mass"]
    # Neither is called a disagreement with the motion (priors.weighed_mass_pull): the data's σ here (0.8 %) is
    # near the weighed mass's, and the 2 % off moves the data's mass by less than 2 of their σ.
    for est in (d, right):
        assert not any("weighed mass disagrees" in r for r in est["quality"]["reasons"]), est["quality"]
