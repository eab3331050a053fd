"""Red team (h97) of issue 29's merges h88 (robot.yaml friction_offset_drift, difference-rls's prior on its offsets'
change), h89 (the witnesses' materiality rule) and h91 (near_rest_epsilons).

A hand-edited friction_offset_drift record whose per-joint lists do not hold one value per run (a run taken out of
`runs` by hand and not out of the lists) raised numpy's ValueError out of OffsetSpread.from_dict's reshape: a
traceback and exit 1 on the command line instead of one line and exit 2. The CLI fuzzer never reached it: its
robot.yaml carries no drift record.
"""

from __future__ import annotations

import pytest
import yaml
from cli_fixtures import Snapshot, assert_refused, make_cli_files

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id import RobotIdentification


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_cli_files(tmp_path_factory.mktemp("h97"))


def _drift(runs, per_joint):
    return {"runs": runs, "offsets": {j: list(v) for j, v in per_joint.items()},
            "offsets_std": {j: [0.01] * len(v) for j, v in per_joint.items()}}


EDITS = {
    # On main: ValueError "cannot reshape array of size 2 into shape (4,newaxis)", a traceback and exit 1.
    "four runs, one value each": _drift(["a", "b", "c", "d"], {"joint1": [0.1], "joint2": [0.1]}),
    "no runs, one value each": _drift([], {"joint1": [0.1], "joint2": [0.1]}),
    "three runs, one value each": _drift(["a", "b", "c"], {"joint1": [0.1], "joint2": [0.1]}),
    # On main: accepted, one run per character of the string; a list is what identify-robot writes.
    "runs a string": _drift("ab", {"joint1": [0.1, 0.1], "joint2": [0.1, 0.1]}),
}


@pytest.mark.parametrize("case", list(EDITS))
def test_a_hand_edited_drift_record_is_refused_in_one_line(case, files, tmp_path, capfd):
    d = yaml.safe_load(files.robot.read_text())
    d["friction_offset_drift"] = EDITS[case]
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="friction_offset_drift is not valid"):
        RobotIdentification.load(robot, RobotModel.from_urdf("planar_2r"))
    out = tmp_path / "payload.yaml"
    before = Snapshot.of(out)
    code = cli_main(["identify-payload", "--urdf", "planar_2r", "--robot", str(robot), "--bag", str(files.bag),
                     "--method", "difference-rls", "--frame", "tool0", "--out", str(out)])
    err = capfd.readouterr().err
    assert_refused(code, err, before)
    assert "friction_offset_drift" in err and "identify-robot" in err, err
