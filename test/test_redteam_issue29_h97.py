"""Red team (h97) of issue 29's merges h88 (robot.yaml friction_offset_drift, difference-rls's prior on its offsets'
change), h89 (the witnesses' materiality rule) and h91 (near_rest_epsilons).

A hand-edited friction_offset_drift record whose per-joint lists do not hold one value per run (a run taken out of
`runs` by hand and not out of the lists) raised numpy's ValueError out of OffsetSpread.from_dict's reshape: a
traceback and exit 1 on the command line instead of one line and exit 2. The CLI fuzzer never reached it: its
robot.yaml carries no drift record.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from cli_fixtures import Snapshot, assert_refused, make_cli_files
from test_identify_robot_cli import _recording

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import write_bag
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


# -- a drift run that carries a load --------------------------------------------------------------------------------

@pytest.mark.parametrize("mass", [0.5, 1.5])
def test_a_loaded_drift_run_is_refused_as_a_loaded_held_out_run_is(mass, tmp_path, capsys):
    """identify-robot refused a loaded --held-out run (its spurious payload mass beyond 5σ of zero) but took a loaded
    --drift run as drift: on the real UR10e the loaded 15harm and 01_31 runs as drift runs wrote the shoulder lift's
    prior std 22.8 N·m (0.48 from their unloaded twins), and difference-rls on those recordings then gave mass σ 2.36 /
    2.60 % (0.87 / 0.89 % with the right drift runs) and withheld the CoM that it reports at σ ≤ 4.5 mm. Now refused
    by name, exit 2, nothing written; the unloaded drift runs are still taken."""
    planar = RobotModel.from_urdf("planar_2r")
    phi = from_mass_com_inertia(mass, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))
    train = write_bag(tmp_path / "train", _recording(planar, 1))
    unloaded = write_bag(tmp_path / "unloaded", _recording(planar, 11))
    loaded = write_bag(tmp_path / "loaded", _recording(planar, 12, payload=(phi, "tool0")))
    out = tmp_path / "robot.yaml"
    code = cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(train), "--drift-bag", str(unloaded),
                     "--drift-bag", str(loaded), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "carries a load" in err and "--drift-bag" in err and err.count("\n") == 1, err
    assert not out.exists()
    code = cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(train), "--drift-bag", str(unloaded),
                     "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert RobotIdentification.load(out, planar).offset_drift is not None
