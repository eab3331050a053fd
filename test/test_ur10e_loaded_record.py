"""Issues 29-31 on the real UR10e (h175): robot.yaml's model error with a held-out LOADED run of known mass.

    payload-id identify-robot --csv-ur 14harm --loaded-csv-ur 14harmLoad --known-payload-mass 2.805
        --held-out-csv-ur 15harm --held-out-csv-ur 01_31-unload (and as --drift-csv-ur)
        --held-out-loaded-csv-ur 15harmLoad --out robot.yaml

(tools/ur10e_data.user_path_robot_yaml with the loaded run), tested on 01_31-load, which robot.yaml never saw loaded:
robot.yaml records each method's error on 15harm-load against the known 2.805 kg (model_error.loaded), and the σ of
khalil-1, direct-rls and difference-rls and the monitor's re-estimate carry the part that grows with the load.
bench/ur10e_loaded_record.py has both directions and the figures before/after (docs/design.md).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import UR10E_DATA_MISSING

import ur10e_data  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.monitor import EventKind
from payload_id_core.monitor.replay import replay
from payload_id_core.robot_id.result import RobotIdentification

LOAD_KG = ur10e_data.LOAD_MASS_KG
RECORD, TESTED = "15harm", "01_31"


@pytest.fixture(scope="module")
def robot_yaml(tmp_path_factory):
    if UR10E_DATA_MISSING is not None:
        pytest.skip(UR10E_DATA_MISSING)
    out = tmp_path_factory.mktemp("ur10e_loaded_record") / "robot.yaml"
    return ur10e_data.user_path_robot_yaml(DATA, out, ur10e_data.USER_PATH_HELD_OUT,
                                           (ur10e_data.PAIRS[RECORD][1],))


def test_robot_yaml_records_the_loaded_run_s_mass_error(robot_yaml):
    loaded = yaml.safe_load(robot_yaml.read_text())["model_error"]["loaded"]
    assert loaded["known_mass"] == [LOAD_KG] and loaded["held_out"][0].endswith(ur10e_data.PAIRS[RECORD][1])
    assert set(loaded["mass_error"]) == {"khalil-1", "direct-rls", "difference-rls"}
    for method, runs in loaded["mass_error"].items():
        whole = runs[0][-1][1]
        assert abs(whole) < 0.05 * LOAD_KG, (method, whole)   # an honest loaded run: within 5 % (it carries 2.805)


@pytest.mark.parametrize("method", ["khalil-1", "direct-rls", "difference-rls"])
def test_a_loaded_run_robot_yaml_never_saw_loaded_is_covered(robot_yaml, tmp_path, method):
    unloaded, loaded = ur10e_data.PAIRS[TESTED]
    out = tmp_path / "payload.yaml"
    assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded), "--method", method,
                     "--out", str(out)]) == 0
    d = yaml.safe_load(out.read_text())
    err, std = d["mass"] - LOAD_KG, d["std"]["mass"]
    assert abs(err) <= 2.5 * std, (method, err, std)
    # Measured: khalil-1 +0.856 % ± 0.926 % (unchanged: its whole-run error on 15harm-load, +0.12 %, is inside the
    # unloaded record), direct-rls −0.755 % ± 1.895 % (0.910 % without the record: as well informed as its whole
    # 01_31 run, direct-rls on 15harm-load had been −4.4 % off), difference-rls +0.090 % ± 1.105 %.
    assert std <= 0.025 * LOAD_KG, (method, std)


def test_the_monitor_names_the_load_on_from_the_start_within_its_sigma(robot_yaml):
    """Issue 31: 01_31-load replayed from the start, the monitor told nothing is carried (test_redteam_h143's strict
    xfail without the loaded record: +3.335 ± 0.133 kg, 4.0σ; with it +3.335 ± 0.315 kg, 1.7σ)."""
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    robot = RobotIdentification.load(str(robot_yaml), model)
    rec = read_ur_csv(str(DATA / ur10e_data.PAIRS[TESTED][1]), robot.effort_scale, joint_names=model.joint_names)
    result = replay(model, robot, model.payload_frame(None), rec.joints, rated_payload_kg=12.5)
    picks = [e for e in result.events if e.kind is EventKind.PICKED]
    assert picks, result.events
    for e in picks:
        assert abs(e.delta_mass - LOAD_KG) <= 3.0 * e.delta_mass_std, e.mass_change_text
    carried = (result.mass > 1.0) & np.isfinite(result.mass_std) & (result.mass_std < 1.0)
    assert carried.any()
