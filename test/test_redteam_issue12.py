"""Red-team reproductions for issue 12 (drive gains and effort units): each failed before its fix.

Rule under test: never a confident wrong payload (quality ok / converged: true), and bad input gets one
line on stderr, exit 2 and no output file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.cli.main import main as cli_main

pytestmark = requires_ur10e_data
LOAD_KG = 2.805


@pytest.fixture
def robot_yaml(ur10e_robot_yaml):
    return ur10e_robot_yaml


def _identify_payload(robot: Path, out: Path, method: str) -> int:
    try:
        return cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot),
                         "--csv-ur", str(DATA / "ur-20_02_19_15harm50secLoad.csv"),
                         "--unloaded-csv-ur", str(DATA / "ur-20_02_19_15harm50sec.csv"),
                         "--method", method, "--out", str(out)])
    except SystemExit as exc:  # argparse-style refusals
        return exc.code if isinstance(exc.code, int) else 2


def test_effort_section_that_is_a_string_is_refused_not_a_traceback(robot_yaml, tmp_path, capsys):
    # Was: AttributeError in robot_id/result.py from_dict, exit 1.
    data = yaml.safe_load(robot_yaml.read_text())
    data["effort"] = "current"
    bad = tmp_path / "robot.yaml"
    bad.write_text(yaml.safe_dump(data))
    out = tmp_path / "payload.yaml"
    code = _identify_payload(bad, out, "khalil-4")
    err = capsys.readouterr().err
    assert code == 2
    assert not out.exists()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("method", ["khalil-1", "khalil-4"])
def test_hand_edited_gains_15pct_high_is_not_a_confident_wrong_payload(robot_yaml, tmp_path, method):
    # robot.yaml's effort_scale edited (x1.15) while its base parameters were identified with the old gains.
    # Was: khalil-1 4.49 kg (+60 %), khalil-4 3.21 kg (+15 %, 4.4 sigma), both quality ok, converged.
    data = yaml.safe_load(robot_yaml.read_text())
    data["effort_scale"] = [g * 1.15 for g in data["effort_scale"]]
    edited = tmp_path / "robot.yaml"
    edited.write_text(yaml.safe_dump(data))
    out = tmp_path / "payload.yaml"
    code = _identify_payload(edited, out, method)
    if code == 2:
        assert not out.exists()
        return
    assert code == 0
    result = yaml.safe_load(out.read_text())
    wrong = abs(result["mass"] - LOAD_KG) > 2.0 * result["std"]["mass"]
    if wrong:
        assert result["quality"]["status"] != "ok"
        assert result["converged"] is False


def test_payload_yaml_with_a_scalar_quality_is_refused_not_a_traceback(robot_yaml, tmp_path, capsys):
    # `quality: ok` instead of {status, reasons}. Today: AttributeError in payload_estimate.py from_dict,
    # exit 1, from `report` and `simulate --payload` (was).
    out = tmp_path / "payload.yaml"
    assert _identify_payload(robot_yaml, out, "khalil-4") == 0
    data = yaml.safe_load(out.read_text())
    data["quality"] = "ok"
    bad = tmp_path / "bad_payload.yaml"
    bad.write_text(yaml.safe_dump(data))
    png = tmp_path / "report.png"
    capsys.readouterr()
    try:
        code = cli_main(["report", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                         "--payload", str(bad), "--csv-ur", str(DATA / "ur-20_02_19_15harm50secLoad.csv"),
                         "--out", str(png)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert code == 2
    assert not png.exists()
    assert "Traceback" not in err
