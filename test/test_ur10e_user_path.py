"""Issue 12's user path on the real UR10e recordings, through the command line, no gains passed by hand.

    payload-id identify-robot   --csv-ur 14harm --loaded-csv-ur 14harmLoad --known-payload-mass 2.805 --out robot.yaml
    payload-id identify-payload --robot robot.yaml --csv-ur <pair>Load [--unloaded-csv-ur <pair>] --method M

The efforts are motor currents; robot.yaml carries the drive gains identified on the 14harm pair (with
their std) and every consumer applies them. The 15harm and 01_31 pairs had no say in the gains, so they
judge the mass. Before issue 12 this path gave 0.25 kg (khalil-4) for the 2.805 kg load, converged.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.cli.main import main as cli_main
from payload_id_core.payload.methods.registry import SPECS, Measurement

pytestmark = requires_ur10e_data

LOAD_MASS_KG = 2.805
PAIRS = {"15harm": ("ur-20_02_19_15harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv"),
         "01_31": ("ur-20_01_31-load.csv", "ur-20_01_31-unload.csv")}
METHODS = tuple(spec.name for spec in SPECS if spec.measurement is Measurement.TORQUES_IN_MOTION)
# khalil-2 re-identifies the whole loaded robot and takes the payload from the parameter differences: held to
# issue 29's 2 % (on 15harm it was −2.23 % while the 10 s the loaded run rests at its end pose were in the
# re-identification: static friction taken as gravity; −0.64 % without them, common.moving_rows).
MASS_TOL = {m: 0.01 for m in METHODS} | {"khalil-2": 0.02}
MAX_ERR_OVER_STD = 2.0


@pytest.fixture
def robot_yaml(ur10e_robot_yaml):
    return ur10e_robot_yaml


def test_robot_yaml_carries_the_gains_their_std_and_unit(robot_yaml):
    d = yaml.safe_load(robot_yaml.read_text())
    assert d["effort"]["unit"] == "current"
    assert d["effort"]["source"].startswith("identified from")
    gains, std = d["effort_scale"], d["effort"]["scale_std"]
    assert all(9.0 < k < 13.5 for k in gains), gains          # torque constant × gear ratio of UR10e drives
    # Issue 29 item 5: the shoulder pan (the load's weight does not torque it) is named as not determined by the
    # calibration run, its σ how far its gain moves with the friction model (6.8 %, was 1.3 %); the joints the load
    # torques keep theirs below 2.5 % (was 2 %: the other friction model's distance with its weight now joins them,
    # wrist 2 0.56 → 2.30 %, where the three real pairs' own gains spread by 3.0 %), and at least that distance.
    undetermined = [n["text"] for n in d["notes"] if n["code"] == "robot.gain_undetermined"]
    assert len(undetermined) == 1 and "shoulder_pan_joint" in undetermined[0], undetermined
    assert not any(j in undetermined[0] for j in d["joint_names"][1:3]), undetermined
    assert all(0.0 < s < 0.025 * k for k, s in zip(gains[1:], std[1:])), std
    g = d["effort"]["gain_model"]
    names = d["joint_names"]
    lin, shaped = (np.array([g["candidates"][c]["scale"][j] for j in names])
                   for c in ("linear", "shaped_load_friction"))
    det = np.array([j in g["determined"] for j in names])
    need = np.sqrt(g["choice_weight"]) * np.abs(shaped - lin) / lin * np.array(gains)
    assert np.all(np.array(std)[det] >= need[det] * (1 - 1e-9)), (std, need)
    assert 0.02 * gains[0] < std[0] < 0.1 * gains[0], std


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("method", METHODS)
def test_every_dynamic_method_identifies_the_load_without_gains_by_hand(robot_yaml, tmp_path, method, pair):
    loaded, unloaded = PAIRS[pair]
    out = tmp_path / "payload.yaml"
    code = cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded),
                     "--method", method, "--out", str(out)])
    assert code == 0
    d = yaml.safe_load(out.read_text())
    err = d["mass"] - LOAD_MASS_KG
    assert abs(err) <= MASS_TOL[method] * LOAD_MASS_KG, (method, pair, d["mass"])
    assert abs(err) <= MAX_ERR_OVER_STD * d["std"]["mass"], (method, pair, d["mass"], d["std"]["mass"])
    assert d["quality"]["status"] == "ok", d["quality"]
    codes = [n["code"] for n in d["notes"]]
    # The online methods' convergence rule judges the σ they report (1.6-2 % on these runs, serially correlated
    # residuals included): above its 0.5 %, so not declared, with the note saying so; the estimate is the same.
    online = method in ("direct-rls", "difference-rls")
    assert d["converged"] is not online and ("payload.not_converged" in codes) is online, (d["converged"], codes)
    assert "gains.applied" in codes
    # The gains were identified from a loaded run: the load-friction columns stay out (they absorbed it).
    if method in ("khalil-1", "direct-rls", "difference-rls"):
        assert "payload.load_friction_off" in codes
    if method == "khalil-1":                  # friction assumed unchanged: no friction unknowns, none reported
        assert "payload.friction_change" not in codes, d["notes"]
    if method == "khalil-2":                  # the loaded runs rest 2-10 s: those samples stay out of the re-fit
        assert any("at rest left out" in n["text"] for n in d["notes"] if n["code"] == "payload.robot_reidentified")
