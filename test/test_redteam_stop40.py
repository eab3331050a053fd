"""Red team on what landed today (h55's masked drift, h56's identify-robot held-out loaded runs of known mass,
c30ea97's `excite --from T --periods N`). Each defect's test failed before its fix (the honest held-out run's test
guards the fix against refusing what it should not); simulated, seconds each."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import yaml
from cli_fixtures import cli_calibration
from test_identify_robot_cli import _recording

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.io.bag import write_bag
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.offset_spread import OffsetSpread
from payload_id_core.testing.sim_runs import DRIFT_MASS as MASS
from payload_id_core.testing.sim_runs import drift_run as _linear_friction_run
from payload_id_core.testing.sim_runs import given_gains_robot

# -- excite --from T --periods N ------------------------------------------------------------------------------------


def _bad_copy_source(tmp_path, design_change: dict) -> str:
    """The bundled UR10 inertia excitation as a user's YAML with `design_change` in its design block."""
    src = tmp_path / "bundled.yaml"
    load_trajectory("ur10_payload_inertia").save(src)
    doc = yaml.safe_load(src.read_text())
    doc["design"].update(design_change)
    bad = tmp_path / "edited.yaml"
    bad.write_text(yaml.safe_dump(doc))
    return str(bad)


@pytest.mark.parametrize("change, words", [
    ({"margin": "five percent"}, "margin or acceleration_limits that is not a number"),
    ({"margin": [0.05]}, "margin or acceleration_limits that is not a number"),
    ({"acceleration_limits": ["fast"] * 6}, "margin or acceleration_limits that is not a number"),
    ({"cartesian": [{"frame": "tool0", "axis": "up", "lower": 0.3}]}, "Cartesian limit"),
    ({"cartesian": [{"frame": "tool0", "axis": "z", "lower": "table"}]}, "Cartesian limit"),
    ({"cartesian": [{"axis": "z", "lower": 0.3}]}, "Cartesian limit"),
])
def test_excite_from_a_yaml_with_a_malformed_design_block_exits_2(tmp_path, capsys, change, words):
    """The copy checks T against its own design block's margin, acceleration and Cartesian limits; a value there that
    is no number crashed with a traceback (ValueError / TypeError, exit 1) instead of exit 2 naming it."""
    out = tmp_path / "copy.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--from", _bad_copy_source(tmp_path, change), "--periods", "2",
                   "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and words in err and err.count("\n") == 1, err
    assert not out.exists()


def test_excite_from_records_the_robot_it_was_checked_against(tmp_path):
    """A UR10 excitation copied for a UR10e (same joints, checked against the UR10e's limits) kept the source's
    design block verbatim: the file said robot 'ur10', urdf 'ur10' while its command said --urdf ur10e."""
    out = tmp_path / "copy.yaml"
    assert cli_main(["excite", "--urdf", "ur10e", "--from", "ur10_payload_inertia", "--periods", "2",
                     "--out", str(out)]) == 0
    design = load_trajectory(out).design
    assert design["robot"] == "ur10e" and design["urdf"] == "ur10e", design
    assert design["copied_from"] == "ur10_payload_inertia" and design["periods"] == 2


# -- identify-robot: held-out loaded runs of known mass ---------------------------------------------------------------


@pytest.fixture(scope="module")
def planar_runs(tmp_path_factory):
    """planar_2r bags as test_identify_robot_cli builds them: the fit run, a 1.5 kg run of another motion, and that
    motion without the payload."""
    planar = RobotModel.from_urdf("planar_2r")
    root = tmp_path_factory.mktemp("planar")
    phi = from_mass_com_inertia(1.5, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))
    return {"train": write_bag(root / "train", _recording(planar, 1)),
            "loaded": write_bag(root / "loaded", _recording(planar, 6, payload=(phi, "tool0"))),
            "empty": write_bag(root / "empty", _recording(planar, 6))}


@pytest.mark.parametrize("run, mass, gains, found", [
    ("empty", 1.5, "1,1", 0.0),           # the unloaded twin passed as the loaded run: every method finds ~0 kg
    ("loaded", 3.0, "1,1", 1.499),        # the wrong mass typed: every method finds 1.5 kg, 1000 σ from 3
    ("loaded", 1.5, "1.1,1.1", 1.649),    # drive gains given 10 % high: every method finds 1.65 kg at ~100 σ
])
def test_a_held_out_loaded_run_that_does_not_carry_the_known_mass_is_refused(tmp_path, capsys, planar_runs, run, mass,
                                                                              gains, found):
    """identify-robot wrote a load-friction choice (exit 0, no warning) from mass errors of −100 %, −50 % and +10 %
    (at 100-1000 σ): both settings equally wrong, 'off: on not better', a choice made on runs that say nothing about
    load friction. Refused now, naming the masses found, and nothing written."""
    out = tmp_path / "robot.yaml"
    rc = cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(planar_runs["train"]), "--effort-scale", gains,
                   "--held-out-loaded-bag", str(planar_runs[run]), "--known-payload-mass", str(mass),
                   "--payload-frame", "tool0", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "does not carry the known" in err, err
    # The masses found, one or a range 'a-b kg' (to the rounding of a fit on ~0 kg, which differs between machines).
    number = r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?"
    said = re.search(rf"every method finds ({number})(?:-({number}))?", err)
    assert said, err
    masses = [float(v) for v in said.groups() if v is not None]
    assert all(abs(m - found) < 2e-3 for m in masses), (masses, err)
    assert not out.exists()


def test_the_honest_held_out_loaded_run_still_chooses(tmp_path, capsys, planar_runs):
    """The same run with its mass and gains: the choice is written, every method within 0.1 % of 1.5 kg."""
    out = tmp_path / "robot.yaml"
    assert cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(planar_runs["train"]), "--effort-scale",
                     "1,1", "--held-out-loaded-bag", str(planar_runs["loaded"]), "--known-payload-mass", "1.5",
                     "--payload-frame", "tool0", "--out", str(out)]) == 0, capsys.readouterr().err
    choice = RobotIdentification.load(out, RobotModel.from_urdf("planar_2r")).load_friction_choice
    errors = [e for c in choice.methods.values() for v in c.mass_error.values() for e in v]
    assert len(errors) == 8 and max(abs(e) for e in errors) < 0.0015, errors


# -- the effort-drift check: a gain drift on one joint ---------------------------------------------------------------

@pytest.fixture(scope="module", params=["ur10", "panda"])
def identified(request):
    """The robot identified on one motion without load (gains given), as test_effort_drift_witness does."""
    return given_gains_robot(request.param)


@pytest.mark.parametrize("seed", [3, 4])
def test_a_shoulder_lift_gain_drift_alone_is_not_written_confidently(identified, seed):
    """The second joint's (UR10 shoulder_lift, Panda joint2) efforts × 1.02, every other joint and the friction as
    robot.yaml says. Measured: UR10 a 1.009/1.012, a_f 1.026/1.031 (limit 1.5 %), khalil-1 +6.2 % at 10σ / +4.6 %
    at 7.3σ; Panda a 1.002/1.003, a_f 1.049/1.046, +2.3 % at 6.7σ / +1.8 % at 4.4σ: all converged, quality ok.
    The same drift the other way (× 0.98) is caught as a masked drift (a_f 0.96-0.97).
    Since the friction-offset witness (payload/offset_drift.py) three of the four are suspect: freeing a constant
    offset on that joint takes up the drift's mean and moves the payload (UR10 seed 3: shoulder_lift −1.34 ± 0.10 N·m;
    Panda: joint2 −0.47 / −0.52 N·m). UR10 seed 4 (+4.6 % at 7.3σ) stayed converged and ok (a strict xfail) until
    the per-joint gain witness (payload/gain_drift.py): shoulder_lift 1.0201 ± 0.0050, χ² 16.2 (limit 14.2), the
    payload's shift −2.4 % with the factor free: named, with the fix. (Panda seed 3 reads joint2 at χ² 12.4, under
    its 14.5: caught by the offsets' witness only.)"""
    model, robot = identified
    factor = np.ones(model.n)
    factor[1] = 1.02
    run = _linear_friction_run(model, seed, factor)
    # The premise on the fit that holds robot.yaml's offsets (a drift record that shows none): since h184 khalil-1
    # without a record fits the offsets' drift the run shows, which takes up the drift's mean on that joint (UR10 seed
    # 3: +6.18 % at 10.7σ held, +1.83 % at 2.1σ fitted; suspect either way).
    still = OffsetSpread(list(model.joint_names), ["still"], np.zeros((1, model.n)), np.full((1, model.n), 1e-3))
    held = identify_payload("khalil-1", model, replace(robot, offset_drift=still), run, model.default_payload_frame,
                            delay=0.0, robot_prior=False)
    assert abs(held.mass - MASS) > 3 * np.sqrt(held.covariance[0, 0])    # the premise: the drift is in the mass
    est = identify_payload("khalil-1", model, robot, run, model.default_payload_frame, delay=0.0)
    off_sigmas = abs(est.mass - MASS) / np.sqrt(est.covariance[0, 0])
    assert not (est.converged and est.quality is Quality.OK), (est.mass, off_sigmas, est.quality_reasons)
    if model.n == 6:
        reason = next((r for r in est.quality_reasons if "against robot.yaml's model: factor" in r), "")
        assert f"efforts on {model.joint_names[1]} read 2.0 % high" in reason, est.quality_reasons
        assert "re-identify the robot" in reason


def test_a_two_percent_drift_on_the_panda_is_not_written_confidently():
    """Every joint's efforts × 0.98 on the Panda, robot.yaml from one 8 s motion (seed 3): khalil-1 −4.65 % at
    22.7σ, converged and ok (seed 4: a_f 0.985, caught); a strict xfail until a_f's 1.5 % floor applied above 1 only.
    Plain a 0.9805 ± 0.0005, a_f 0.9863 ± 0.0027 (5.1σ, inside the floor): a_f's honest deviation on this
    identification (+0.1..+0.6 %, seeds 2-6) is robot.yaml's own parameter error, which its σ carries (it changes sign
    with the identification's seed: seed 7 −0.03..−0.9 %), not the load friction the floor sizes (that reads a_f
    high). Now suspect: both below 1 beyond 3σ, the plain a beyond its floor (payload/effort_drift.py)."""
    model, robot = given_gains_robot("panda")
    est = identify_payload("khalil-1", model, robot, _linear_friction_run(model, 3, np.full(model.n, 0.98)),
                           model.default_payload_frame, delay=0.0)
    off_sigmas = abs(est.mass - MASS) / np.sqrt(est.covariance[0, 0])
    assert off_sigmas > 3
    assert not (est.converged and est.quality is Quality.OK), (est.mass, off_sigmas, est.quality_reasons)


# -- the masked drift on the user path: simulate --profile ur10, gains identified with the known mass ----------------

SIM_PAYLOAD = {"frame": "tool0", "mass": MASS, "com": [0.02, -0.03, 0.08],
               "inertia": {"ixx": 0.02, "ixy": 0.0, "ixz": 0.0, "iyy": 0.03, "iyz": 0.0, "izz": 0.015}}


@pytest.mark.slow
def test_an_honest_fast_run_of_the_ur10_profile_is_not_called_drifted(tmp_path):
    """The README's user path on the simulator (about 40 s: MuJoCo runs and identify-robot, hence `slow`): the unloaded
    and the 4 kg calibration run on one period of ur10_payload_inertia, the gains identified with the known mass,
    the payload on ur10_payload_fast. With the gains fitted with a linear friction model (wrist_1 8.558 ± 0.021 for
    9.003, issue 29 item 5) khalil-1 found 4.035 ± 0.015 kg (+0.9 %, 2.4σ; seeds 3, 4, 5 alike) and was suspect: the
    friction-free witness read the wrong wrist gains as a drift since identification (a_f 0.975 ± 0.0022). With the
    gains' friction model chosen on the calibration runs (robot.yaml effort.gain_model: the unloaded run's shapes and a
    load-dependent Coulomb level, wrist_1 −0.8 %) khalil-1 finds 4.003 ± 0.007 kg, ok."""
    robot = cli_calibration(tmp_path, "ur10", SIM_PAYLOAD, seeds=(1, 2), rate=None)
    assert cli_main(["simulate", "--urdf", "ur10", "--trajectory", "ur10_payload_fast", "--profile", "ur10", "--seed",
                     "3", "--payload", str(tmp_path / "payload.yaml"), "--out", str(tmp_path / "fast")]) == 0
    out = tmp_path / "estimate.yaml"
    assert cli_main(["identify-payload", "--urdf", "ur10", "--robot", str(robot), "--bag", str(tmp_path / "fast"),
                     "--method", "khalil-1", "--out", str(out)]) == 0
    est = yaml.safe_load(out.read_text())
    assert abs(est["mass"] - MASS) < 3 * est["std"]["mass"] and abs(est["mass"] / MASS - 1) < 0.01, est["mass"]
    assert est["quality"]["status"] == "ok", est["quality"]["reasons"]
