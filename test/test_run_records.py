"""robot.yaml's per-run, per-joint records read by one reader (robot_id/run_records.py): friction_offset_drift
(OffsetSpread) and effort.gain_check (GainSpread). A record damaged by hand (a run's value taken out of one joint's
list, a NaN, a key taken out) is refused on the command line with exit 2 and one line naming the file, the record,
what is wrong and the fix; nothing is written."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from cli_fixtures import Snapshot, assert_refused, make_cli_files, run_cli

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.gain_spread import GainSpread
from payload_id_core.robot_id.offset_spread import OffsetSpread

JOINTS = ["joint1", "joint2"]
DRIFT_FIX = "re-run payload-id identify-robot with its --drift runs"
CHECK_FIX = "re-run payload-id identify-robot with its --gain-check runs"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_cli_files(tmp_path_factory.mktemp("run_records"))


@pytest.fixture(scope="module")
def valid(files):
    """The planar robot.yaml with both records, valid: two drift runs and two gain-check runs (the first of which
    does not determine joint1), effort.scale_std the check's widened std as identify-robot writes it."""
    d = yaml.safe_load(files.robot.read_text())
    drift = OffsetSpread(JOINTS, ["drift a", "drift b"], np.array([[0.12, -0.05], [-0.08, 0.03]]),
                         np.array([[0.02, 0.01], [0.03, 0.01]]))
    reference = np.asarray(d["effort_scale"], dtype=float)
    check = GainSpread(JOINTS, ["check a", "check b"], np.array([1.5, 2.5]), reference,
                       reference * np.array([[1.0, 1.02], [1.03, 0.99]]), np.tile(reference * 0.004, (2, 1)),
                       np.array([[False, True], [True, True]]), reference * 0.005)
    d["friction_offset_drift"] = drift.to_dict()
    d.setdefault("effort", {})["gain_check"] = check.to_dict()
    d["effort"]["scale_std"] = check.widened_std().tolist()
    return d


def test_the_valid_records_are_read_back_as_written(valid, tmp_path):
    """The premise of the refusals below: the records they damage load, values per run and joint in place."""
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(valid))
    ident = RobotIdentification.load(robot, RobotModel.from_urdf("planar_2r"))
    assert ident.offset_drift is not None and ident.gain_check is not None
    assert ident.offset_drift.runs == ["drift a", "drift b"]
    np.testing.assert_array_equal(ident.offset_drift.offsets, [[0.12, -0.05], [-0.08, 0.03]])
    np.testing.assert_array_equal(ident.gain_check.determined, [[False, True], [True, True]])
    np.testing.assert_allclose(ident.gain_check.gains[1] / ident.gain_check.reference, [1.03, 0.99], rtol=1e-12)
    np.testing.assert_array_equal(ident.gain_check.masses, [1.5, 2.5])


def _drop_one(values: list) -> None:
    values.pop()


def _nan_first(values: list) -> None:
    values[0] = float("nan")


# Where each record stands in robot.yaml, and the fix its refusal names.
RECORDS = {"friction_offset_drift": (lambda d: d["friction_offset_drift"], DRIFT_FIX),
           "effort.gain_check": (lambda d: d["effort"]["gain_check"], CHECK_FIX)}
# (record, case): the edit of the record, what the message says is wrong.
EDITS = {
    ("friction_offset_drift", "a run's offset missing on one joint"): (
        lambda r: _drop_one(r["offsets"]["joint2"]), "ValueError: offsets of joint2 holds 1 value(s) for 2 run(s)"),
    ("friction_offset_drift", "a NaN offset"): (
        lambda r: _nan_first(r["offsets"]["joint1"]),
        "friction offset drift: an offset change is not finite or its std not positive (nor above 1e-154 N·m)"),
    ("friction_offset_drift", "offsets_std missing"): (lambda r: r.pop("offsets_std"), "KeyError: 'offsets_std'"),
    ("friction_offset_drift", "runs a string"): (
        lambda r: r.update(runs="ab"), "TypeError: runs is str, not a list of the drift runs' sources"),
    ("effort.gain_check", "a run's gain std missing on one joint"): (
        lambda r: _drop_one(r["gains_std"]["joint1"]), "ValueError: gains_std of joint1 holds 1 value(s) for 2 run(s)"),
    ("effort.gain_check", "a NaN gain"): (
        lambda r: _nan_first(r["gains"]["joint2"]), "drive gain check: a mass, gain or std is not finite and positive"),
    ("effort.gain_check", "masses missing"): (lambda r: r.pop("masses"), "KeyError: 'masses'"),
    ("effort.gain_check", "a joint's reference missing"): (
        lambda r: r["reference"].pop("joint2"), "KeyError: 'joint2'"),
    ("effort.gain_check", "determined a number"): (
        lambda r: r["determined"]["joint1"].__setitem__(0, 0),
        "ValueError: determined holds a value that is not true or false"),
}


@pytest.mark.parametrize("record, case", list(EDITS), ids=[f"{r}: {c}" for r, c in EDITS])
def test_a_damaged_record_is_refused_in_one_line(record, case, files, valid, tmp_path, capfd):
    d = copy.deepcopy(valid)
    where, fix = RECORDS[record]
    edit, says = EDITS[record, case]
    edit(where(d))
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(d))
    out = tmp_path / "payload.yaml"
    before = Snapshot.of(out)
    code, _, err = run_cli(capfd, "identify-payload", "--urdf", "planar_2r", "--robot", robot, "--bag", files.bag,
                           "--method", "difference-rls", "--frame", "tool0", "--out", out)
    assert_refused(code, err, before)
    assert err.count("\n") == 1, err
    assert f"{robot}: {record} is not valid ({says}); {fix}" in err, err
