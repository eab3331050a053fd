"""Red team of identify-robot --gain-check-{csv-ur,bag,mass} (h101, robot.yaml effort.gain_check; issue 29 item 5).

What held (exit 2, one line, nothing written; tried by hand on the simulated UR10 of test_gain_check and the real
UR10e): renamed joints, all-zero efforts, efforts ×10, a run cut to a third, an unloaded run as a check (0.013 kg
found for 3.75 given; real 01_31 unloaded 0.044 for 2.805), the mass twice for one run, a check run reordered joint
by joint (read by name: the same gains as in order), a 500 Hz check beside 100 Hz ones, a load at a far CoM
(fitted, not refused), and robot.yaml's effort.gain_check hand-edited (NaN, negative σ or mass, missing keys, a run
list shorter than the gains', `determined: "yes"`, the calibration σ edited alone).

What broke, here: the same run given twice (or a copy of it) counted as two occasions (fixed: refused); a
--gain-check-mass 10 % off and a single honest check run each widened the best-determined gains' σ 3-4× while their
error did not grow (h108's strict xfails; h114 fixed both: the mass is refused against the runs' own, and a gain widens
only where the runs' RMS change exceeds the calibration's σ). Simulated, seconds each."""

import shutil

import numpy as np
import pytest
import yaml
from cli_fixtures import run_cli
from test_drive_gains import TRUTH_MASS
from test_gain_check import VARYING, _identify, runs  # noqa: F401 - `runs` is the module fixture reused

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
    rc, _, err = run_cli(capsys, "identify-payload", "--urdf", "ur10", "--robot", robot, "--bag", checks[2],
                         "--out", out)
    assert rc == 2 and str(robot) in err and "effort.gain_check" in err and err.strip().count("\n") == 0, err
    assert not out.exists()


def test_a_check_mass_ten_percent_high_is_refused(runs, tmp_path, capsys):  # noqa: F811
    """Before (h108's strict xfail): 4.125 kg for 3.75 passed the 25 % guard and read as drift: the shoulder lift, not
    varied, 2.11× its σ, the elbow's σ 0.81 -> 3.25 % with no joint varied (real UR10e elbow 1.72 -> 4.53 %). Now the
    check runs' own mass with the calibration's gains (3.657 ± 0.04 kg on seed 5, its elbow drawn +1.9 %) refuses
    it at 11.6 σ (limit 5), before any gain is measured: exit 2, one line naming both masses, nothing written."""
    d, checks, _ = runs
    out = tmp_path / "robot.yaml"
    argv = [a for c in checks for a in ("--gain-check-bag", c)]
    rc, _, err = _identify(capsys, d, out, *argv, "--gain-check-mass", 1.1 * TRUTH_MASS)
    assert rc == 2, err
    assert "--gain-check-mass 4.125 kg" in err and str(checks[0]) in err and err.strip().count("\n") == 0, err
    found = float(err.split("its load weighs ")[1].split(" ")[0])
    assert abs(found - TRUTH_MASS) < 0.04 * TRUTH_MASS, err       # the run's own mass, near the true one
    assert not out.exists()


def test_one_honest_check_run_does_not_widen_a_joint_it_does_not_vary(one_run):
    """Before (h108's strict xfail): the shoulder lift, not varied, read −0.45 % against its calibration σ 0.74 % and
    t_1's 6.48 took robot.yaml's σ to 2.89 % (3.9×). Now a joint widens only where the runs' RMS change exceeds the
    calibration's σ (gain_spread.py): the joints this run does not vary keep theirs exactly."""
    before, after, check = _stds(one_run)
    steady = check.determined[0] & ~VARYING
    assert steady[1], check.determined                      # the premise: the shoulder lift is determined, not varied
    assert check.rms[1] < check.calibration_std[1] / check.reference[1], check.rms
    np.testing.assert_array_equal(after[steady], before[steady])
    assert not check.spread_beyond_calibration[steady].any()
