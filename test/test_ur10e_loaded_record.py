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

from dataclasses import replace

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


def _tested_mass(robot_yaml, tmp_path, method: str) -> tuple[float, float]:
    """(mass − 2.805, its σ) kg: identify-payload `method` on the TESTED loaded run with its unloaded twin."""
    unloaded, loaded = ur10e_data.PAIRS[TESTED]
    out = tmp_path / "payload.yaml"
    assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded), "--method", method,
                     "--out", str(out)]) == 0
    d = yaml.safe_load(out.read_text())
    return d["mass"] - LOAD_KG, d["std"]["mass"]


@pytest.mark.parametrize("method", ["khalil-1", "direct-rls", "difference-rls"])
def test_a_loaded_run_robot_yaml_never_saw_loaded_is_covered(robot_yaml, tmp_path, method):
    err, std = _tested_mass(robot_yaml, tmp_path, method)
    assert abs(err) <= 2.5 * std, (method, err, std)
    # Measured: khalil-1 +0.856 % ± 0.926 % (unchanged: its whole-run error on 15harm-load, +0.12 %, is inside the
    # unloaded record), direct-rls −0.755 % ± 1.895 % (0.910 % without the record: as well informed as its whole
    # 01_31 run, direct-rls on 15harm-load was −1.86 % off, at 34 s of its 50 s motion: see the test below),
    # difference-rls +0.090 % ± 1.105 %.
    assert std <= 0.025 * LOAD_KG, (method, std)


def test_direct_rls_s_sigma_is_sized_mid_run_not_by_the_start_up(robot_yaml):
    """h185: what sets direct-rls's loaded-record σ on 01_31-load (1.9 %) is the record at the information that run
    has (4.95 g at the assumed noise; 01_31's unloaded twin's whole run 4.94 g), and that is 15harm-load from 31.5 s
    of its ~50 s motion on, where direct-rls sat 1.4-1.9 % off over 31-38 s and 0.7-1.4 % after while its own unloaded
    twin read −0.45..+0.10 % at the same information: a load error sustained over a third of the motion, not the RLS's
    start-up (the prefix rule counts only points at least as informed: the first 31 s, kilograms off at first, cannot
    reach a whole-run estimate)."""
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    me = RobotIdentification.load(str(robot_yaml), model).model_error
    sources = [s.rsplit("/", 1)[-1] for s in me.sources]
    tested_twin = me.running["direct-rls"][sources.index(ur10e_data.PAIRS[TESTED][0])]
    record_twin = me.running["direct-rls"][sources.index(ur10e_data.PAIRS[RECORD][0])]
    s = float(tested_twin[-1, 0])                        # the tested motion's whole-run information σ, kg
    loaded = me.loaded.running["direct-rls"][0]
    at = loaded[:, 0] <= s
    seconds = 0.5 * (np.flatnonzero(at) + 1)             # held_out_error.RUNNING_EVERY_S
    assert seconds.min() >= 25.0, seconds.min()          # nothing of the start-up is as informed
    assert np.abs(loaded[at, 1]).max() >= 0.015 * LOAD_KG, loaded[at, 1]        # measured −1.86 % (34.0 s)
    assert np.abs(record_twin[record_twin[:, 0] <= s, 1]).max() <= 0.005 * LOAD_KG   # measured 0.45 %
    # The start-up dropped from the record: the same variance at that information.
    late = replace(me.loaded, running={"direct-rls": [loaded[at]]})
    unloaded = me.prefix_mass_variances("direct-rls", np.array([s]))
    assert late.mass_variances("direct-rls", np.array([s]), unloaded, LOAD_KG)[0] == pytest.approx(
        me.loaded.mass_variances("direct-rls", np.array([s]), unloaded, LOAD_KG)[0], rel=1e-12)


@pytest.mark.xfail(strict=True, reason="h185: direct-rls on 01_31-load −0.76 % ± 1.89 % with the 15harm-load record "
                   "(0.91 % without): at the information of that whole run the record reads −1.86 % (15harm-load at "
                   "34 s, its unloaded twin −0.43 %). Measured alternatives, none ≤ 1 %: the held-out run's own "
                   "information variance taken out 1.89 %, the error at exactly matched information (no envelope) "
                   "1.47 %, the load part paired with the unloaded twin 1.73 %")
def test_the_loaded_record_keeps_direct_rls_sigma_within_1_percent(robot_yaml, tmp_path):
    err, std = _tested_mass(robot_yaml, tmp_path, "direct-rls")
    assert abs(err) <= 0.01 * LOAD_KG                    # −0.76 %: the error is within 1 %
    assert std <= 0.01 * LOAD_KG, std


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
