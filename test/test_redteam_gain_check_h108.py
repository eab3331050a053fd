"""Red team of identify-robot --gain-check-{csv-ur,bag,mass} (h101, robot.yaml effort.gain_check; issue 29 item 5).

What held (exit 2, one line, nothing written; tried by hand on the simulated UR10 of test_gain_check and the real
UR10e): renamed joints, all-zero efforts, efforts ×10, a run cut to a third, an unloaded run as a check (0.013 kg
found for 3.75 given; real 01_31 unloaded 0.044 for 2.805), the mass twice for one run, a check run reordered joint
by joint (read by name: the same gains as in order), a 500 Hz check beside 100 Hz ones, a load at a far CoM
(fitted, not refused), and robot.yaml's effort.gain_check hand-edited (NaN, negative σ or mass, missing keys, a run
list shorter than the gains', `determined: "yes"`, the calibration σ edited alone).

What broke, here: the same run given twice (or a copy of it) counted as two occasions (fixed: refused); a
--gain-check-mass 10 % off and a single honest check run each widen the best-determined gains' σ 3-4× while their
error does not grow (strict xfails with the numbers). Simulated, seconds each."""

import shutil

import numpy as np
import pytest
import yaml
from test_drive_gains import TRUTH_MASS
from test_gain_check import VARYING, _cli, _identify, runs  # noqa: F401 - `runs` is the module fixture reused

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import RobotIdentification


@pytest.fixture(scope="module")
def one_run(runs, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """robot.yaml with one honest check run (seed 5: the shoulder lift's gain not varied)."""
    d, checks, _ = runs
    out = tmp_path_factory.mktemp("h108") / "robot.yaml"
    assert _identify_quiet(d, out, "--gain-check-bag", checks[0]) == 0
    return out


def _stds(path):
    """(calibration σ, robot.yaml's σ) of the gains, absolute."""
    ident = RobotIdentification.load(path, RobotModel.from_urdf("ur10"))
    assert ident.gain_check is not None and ident.effort_scale_std is not None
    return ident.gain_check.calibration_std, np.asarray(ident.effort_scale_std), ident.gain_check


def _identify_quiet(d, out, *extra):
    from payload_id_core.cli.main import main as cli_main  # noqa: PLC0415

    return cli_main(["identify-robot", "--urdf", "ur10", "--bag", str(d / "unloaded"), "--loaded-bag",
                     str(d / "loaded"), "--known-payload-mass", str(TRUTH_MASS), *map(str, extra), "--out", str(out)])


@pytest.mark.parametrize("how", ["the same path twice", "a copy of the run"])
def test_a_check_run_given_twice_exits_2_without_output(how, runs, tmp_path, capsys):  # noqa: F811
    """Before: accepted, and counted as H = 2 occasions: the Student-t width factor t_{H,0.975}/1.96 fell from 6.48 (one
    run) to 2.19 (the same run twice), 1.62 three times: the gains' σ 3-4× narrower on no new evidence."""
    d, checks, _ = runs
    second = checks[0] if how == "the same path twice" else shutil.copytree(checks[0], tmp_path / "copy")
    out = tmp_path / "robot.yaml"
    rc, _, err = _identify(capsys, d, out, "--gain-check-bag", checks[0], "--gain-check-bag", second)
    assert rc == 2, err
    assert "given already" in err and str(checks[0]) in err and err.strip().count("\n") == 0, err
    assert not out.exists()


def test_a_check_record_damaged_by_hand_names_the_file(runs, one_run, tmp_path, capsys):  # noqa: F811
    """A NaN gain in effort.gain_check: exit 2, one line naming robot.yaml (before: the dataclass's message alone)."""
    d, checks, _ = runs
    robot = tmp_path / "robot.yaml"
    shutil.copy(one_run, robot)
    data = yaml.safe_load(robot.read_text())
    data["effort"]["gain_check"]["gains"]["elbow_joint"][0] = float("nan")
    robot.write_text(yaml.safe_dump(data))
    out = tmp_path / "payload.yaml"
    rc, _, err = _cli(capsys, "identify-payload", "--urdf", "ur10", "--robot", robot, "--bag", checks[2],
                      "--out", out)
    assert rc == 2 and str(robot) in err and "effort.gain_check" in err and err.strip().count("\n") == 0, err
    assert not out.exists()


@pytest.mark.xfail(strict=True, reason=(
    "a --gain-check-mass 10 % high is accepted silently (the 25 % guard lets 4.125 kg pass for 3.75): here the "
    "shoulder lift, whose gain the check runs do not vary, reads its σ 2.11x the calibration's (three honest runs: "
    "within 1.5x, test_gain_check); with no joint varied the elbow's σ 0.81 -> 3.25 % (4.0x), 20 % high 7.06 %, and "
    "the per-joint gain witness on an elbow x0.97 payload run falls from χ² 10.7 to under 2.6 (limit 14.2; that run "
    "was still flagged by the common-factor effort witness). Real UR10e (15harm calibration, 14harm and 01_31 as "
    "checks): elbow σ 1.72 % with the true mass, 4.53 % with it 10 % high. Wanted: exit 2 naming the mass, or no "
    "widening"))
def test_a_check_mass_ten_percent_high_is_refused_or_does_not_widen_the_sigma(runs, tmp_path):  # noqa: F811
    d, checks, _ = runs
    out = tmp_path / "robot.yaml"
    argv = [a for c in checks for a in ("--gain-check-bag", c)]
    rc = _identify_quiet(d, out, *argv, "--gain-check-mass", 1.1 * TRUTH_MASS)
    if rc == 2:
        return
    before, after, _ = _stds(out)
    ratio = after / before
    assert ratio[1] <= 1.5, ratio                      # the shoulder lift: determined, and not varied by the runs


@pytest.mark.xfail(strict=True, reason=(
    "one honest check run widens a gain's σ although its change is inside it: the shoulder lift (not varied) reads "
    "-0.45 % against the calibration's σ 0.74 %, and robot.yaml's σ becomes 2.89 % (3.9x): the Student-t_1 factor "
    "6.48 is applied to the change itself, not to what the calibration's and the run's own σ leave unexplained; with "
    "three runs the same joint stays within 1.5x (test_gain_check). Real UR10e, 01_31 alone as the check of a 15harm "
    "calibration: shoulder lift -0.31 % against σ 0.23 % -> 2.03 %, wrist 2 -5.1 % -> σ 32.9 %"))
def test_one_honest_check_run_does_not_widen_a_joint_it_does_not_vary(one_run):
    before, after, check = _stds(one_run)
    steady = check.determined[0] & ~VARYING
    assert steady[1], check.determined                      # the premise: the shoulder lift is determined, not varied
    ratio = after / before
    assert np.all(ratio[steady] <= 1.5), (ratio, check.change)
