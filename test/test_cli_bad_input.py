"""Issue 16, command line: each bad input of the red-team run is refused in one line (exit 2), with no
output written or touched; outputs get ordinary permissions. Each test failed before its fix."""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from cli_fixtures import (
    PAYLOAD,
    Snapshot,
    assert_refused,
    make_cli_files,
    read_only_dir,
    run_cli,
    stray_temporaries,
)

from payload_id_core.cli.main import main as cli_main
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation_design import MAX_HARMONICS
from payload_id_core.io.bag import read_bag
from payload_id_core.io.files import OutputNotWritable, atomic_write_text

__all__ = ["read_only_dir"]   # a fixture, used by name


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_cli_files(tmp_path_factory.mktemp("cli_bad_input"))


def _identify_robot(files, out, *extra):
    return ("identify-robot", "--urdf", "planar_2r", "--bag", files.bag, "--friction", "linear", "--out", out, *extra)


# -- a corrupted (not truncated) bag ------------------------------------------------------------------

def _corrupted_copy(files, tmp_path, offset_fraction: float, junk: bytes):
    bag = tmp_path / "corrupted"
    bag.mkdir()
    (bag / "metadata.yaml").write_bytes((files.bag / "metadata.yaml").read_bytes())
    data = bytearray((files.bag / "bag.mcap").read_bytes())
    i = int(len(data) * offset_fraction)
    data[i:i + len(junk)] = junk
    (bag / "bag.mcap").write_bytes(bytes(data))
    return bag


@pytest.mark.parametrize("offset_fraction, junk", [
    (0.30, b"\xff" * 8),                 # a record length: rosbags' OverflowError
    (0.50, b"\x00\x00\x00\x40" * 4),     # inside a message: a CDR sequence length beyond the data
    (0.0011, b"\x5a"),                   # the first JointState's header
])
def test_corrupted_bag_is_refused_in_one_line(files, tmp_path, capsys, offset_fraction, junk):
    bag = _corrupted_copy(files, tmp_path, offset_fraction, junk)
    out = tmp_path / "robot.yaml"
    code, _, err = run_cli(capsys, "identify-robot", "--urdf", "planar_2r", "--bag", bag, "--friction", "linear",
                           "--out", out)
    if code == 0:   # the flipped bytes landed in a value that still reads as a number: nothing to refuse
        return
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert "damaged" in err or "NaN" in err or "do not increase" in err or "lacks" in err, err


def test_corrupted_bags_never_raise_anything_but_the_refusal(files, tmp_path):
    # 60 deterministic corruptions across the whole file; any exception other than PayloadIdError fails.
    # Before the fix 27 of them raised AnyReaderError, ReaderError or OverflowError from rosbags.
    size = (files.bag / "bag.mcap").stat().st_size
    for k in range(60):
        where = tmp_path / str(k)
        where.mkdir()
        bag = _corrupted_copy(files, where, (k * 7919 % size) / size, bytes([0xA5 ^ k]) * (1 + k % 9))
        try:
            read_bag(bag, joint_names=["joint1", "joint2"])
        except PayloadIdError:
            pass


# -- outputs -----------------------------------------------------------------------------------------

def test_out_that_is_a_directory_is_refused_before_any_work(files, tmp_path, capsys):
    out = tmp_path / "a_directory"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli(capsys, *_identify_robot(files, out))
    assert_refused(code, err)
    assert "is a directory" in err and (out / "keep.txt").read_text() == "mine"


def test_out_under_a_regular_file_is_refused(files, tmp_path, capsys):
    blocker = tmp_path / "plain_file"
    blocker.write_text("x")
    code, _, err = run_cli(capsys, *_identify_robot(files, blocker / "sub" / "robot.yaml"))
    assert_refused(code, err)
    assert "is a file, not a directory" in err and blocker.read_text() == "x"


def test_out_in_a_read_only_directory_is_refused(files, read_only_dir, capsys):
    out = read_only_dir / "robot.yaml"
    code, _, err = run_cli(capsys, *_identify_robot(files, out))
    assert_refused(code, err)
    assert "cannot write" in err and not out.exists()


def test_unwritable_output_is_also_an_oserror_for_the_nodes(read_only_dir):
    # The ROS nodes catch OSError when persisting; the CLI catches PayloadIdError: one exception for both.
    with pytest.raises(OSError) as caught:
        atomic_write_text(read_only_dir / "result.yaml", "x: 1\n")
    assert isinstance(caught.value, OutputNotWritable)


def test_bag_output_never_replaces_a_directory_that_is_not_a_bag(files, tmp_path, capsys):
    # Was: shutil.rmtree of whatever --out named (a home directory, a source tree).
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    code, _, err = run_cli(capsys, "simulate", "--urdf", "planar_2r", "--trajectory", files.trajectory,
                           "--lead-in", "0.1", "--out", out)
    assert_refused(code, err)
    assert "not a rosbag2 bag" in err and (out / "thesis.tex").read_text() == "years of work"


def test_a_replaced_file_keeps_its_mode_and_a_new_file_gets_the_umask_default(files, tmp_path, capsys):
    old_umask = os.umask(0o027)
    try:
        new = tmp_path / "new.yaml"
        atomic_write_text(new, "a: 1\n")
        assert stat.S_IMODE(new.stat().st_mode) == 0o640       # 0666 & ~027 (was 0600)
        kept = tmp_path / "robot.yaml"
        kept.write_text("old")
        kept.chmod(0o644)
        code, _, err = run_cli(capsys, *_identify_robot(files, kept))
        assert code == 0, err
        assert stat.S_IMODE(kept.stat().st_mode) == 0o644      # was 0600
        assert yaml.safe_load(kept.read_text())["joint_names"] == ["joint1", "joint2"]
        assert stray_temporaries(tmp_path) == []
    finally:
        os.umask(old_umask)


def test_a_new_bag_directory_is_not_private(files, tmp_path, capsys):
    old_umask = os.umask(0o022)
    try:
        out = tmp_path / "sim"
        code, _, err = run_cli(capsys, "simulate", "--urdf", "planar_2r", "--trajectory", files.trajectory,
                               "--lead-in", "0.1", "--out", out)
        assert code == 0, err
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        # Replacing it keeps it a bag (the old one moved aside, then removed).
        code, _, err = run_cli(capsys, "simulate", "--urdf", "planar_2r", "--trajectory", files.trajectory,
                               "--lead-in", "0.2", "--out", out)
        assert code == 0, err
        assert (out / "metadata.yaml").is_file() and stray_temporaries(tmp_path) == []
    finally:
        os.umask(old_umask)


# -- payload files that are not bodies ----------------------------------------------------------------

@pytest.mark.parametrize("edit", [
    {"inertia": {"ixx": -0.01, "iyy": 0.01, "izz": 0.01}},               # negative: was a pinocchio traceback
    {"inertia": {"ixx": 0.001, "iyy": 0.001, "izz": 0.5}},               # triangle inequality broken
    {"inertia": {"ixx": 0.001, "ixy": 0.01, "iyy": 0.001, "izz": 0.001}},  # not positive definite
    {"mass": float("nan")},
    {"mass": -2.0},
    {"com": [0.0, float("inf"), 0.0]},
])
def test_simulate_refuses_a_payload_that_is_not_a_physical_body(files, tmp_path, capsys, edit):
    bad = tmp_path / "payload.yaml"
    bad.write_text(yaml.safe_dump({**PAYLOAD, **edit}))
    out = tmp_path / "bag"
    code, _, err = run_cli(capsys, "simulate", "--urdf", "planar_2r", "--trajectory", files.trajectory,
                           "--payload", bad, "--out", out)
    assert_refused(code, err, Snapshot(out, False, None, None))


@pytest.mark.parametrize("frame", ["base_link", "plane"])
def test_simulate_refuses_a_payload_on_a_frame_fixed_to_the_base(files, tmp_path, capsys, frame):
    # Was: a bag of the unloaded robot written, exit 0, saying "payload 0.5 kg at world" (identify-payload and
    # excite refuse the frame); the frame is checked where it is resolved (RobotModel.payload_frame).
    out = tmp_path / "bag"
    code, _, err = run_cli(capsys, "simulate", "--urdf", "planar_2r", "--trajectory", files.trajectory,
                           "--payload", files.payload, "--frame", frame, "--out", out)
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert "fixed to the robot base" in err


def test_simulate_with_a_1e6_kg_payload_fails_clearly_without_a_bag(tmp_path, capfd):
    # Was: 88 000 MuJoCo "unstable" warnings on stderr, then a bag of garbage written, exit 0.
    heavy = tmp_path / "heavy.yaml"
    heavy.write_text(yaml.safe_dump({"frame": "tool0", "mass": 1e6, "com": [0, 0, 0.05],
                                     "inertia": {"ixx": 1e4, "iyy": 1e4, "izz": 1e4}}))
    out = tmp_path / "bag"
    code = cli_main(["simulate", "--urdf", "ur10", "--trajectory", "ur10_payload", "--payload", str(heavy),
                     "--out", str(out)])
    err = capfd.readouterr().err
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert "diverged" in err


# -- numbers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [
    ["--alpha", "nan"], ["--alpha", "-1"], ["--alpha", "inf"], ["--friction", "nonlinear", "--alpha", "50"],
    ["--delay", "-1"], ["--delay", "nan"], ["--delay", "1e6"],
    ["--effort-scale", "0"], ["--effort-scale", "-10"], ["--effort-scale", "nan"],
    ["--cutoff-hz", "nan"], ["--decimate", "0"], ["--gravity", "0,nan,-9.81"],
    ["--gain-check-mass", "0"], ["--gain-check-mass", "-2"], ["--gain-check-mass", "nan"],
    ["--gain-check-mass", "2"],   # without a --gain-check run
])
def test_identify_robot_refuses_bad_numbers(files, tmp_path, capsys, extra):
    out = tmp_path / "robot.yaml"
    code, _, err = run_cli(capsys, *_identify_robot(files, out), *extra)
    assert_refused(code, err, Snapshot(out, False, None, None))


def test_string_drive_gain_in_robot_yaml_is_refused(files, tmp_path, capsys):
    # Chosen: refused, not parsed. robot.yaml is written with numbers; text there was typed by hand, and
    # reading it "deliberately" would also take "1e1" or " 10.5 ". Was: silently read as 10.5.
    data = yaml.safe_load(files.robot.read_text())
    data["effort_scale"] = "10.5"
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(data))
    out = tmp_path / "payload.yaml"
    code, _, err = run_cli(capsys, "identify-payload", "--urdf", "planar_2r", "--robot", robot, "--bag", files.bag,
                           "--method", "khalil-1", "--frame", "tool0", "--out", out)
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert "effort_scale '10.5' holds text" in err


# -- sizes refused up front ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv, limit", [
    (["excite", "--urdf", "planar_2r", "--duration", "1e6"], "the limit is 1 GiB"),
    (["excite", "--urdf", "planar_2r", "--harmonics", "1000"], f"the limit of {MAX_HARMONICS}"),
    (["excite", "--urdf", "planar_2r", "--seeds", "1000000"], "limit of 100"),
    (["simulate", "--urdf", "planar_2r", "--trajectory", "TRAJ", "--lead-in", "1e6"], "the limit is 2 GiB"),
])
def test_absurd_sizes_are_refused_at_once_with_the_limit(files, tmp_path, capsys, argv, limit):
    out = tmp_path / "out"
    argv = [str(files.trajectory) if a == "TRAJ" else a for a in argv]
    code, _, err = run_cli(capsys, *argv, "--out", out)
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert limit in err


@pytest.mark.parametrize("eps", [0.0, -0.01, float("nan"), float("inf"), "0.01"])
def test_hand_edited_sign_epsilon_in_robot_yaml_is_refused(files, tmp_path, capsys, eps):
    # robot.yaml's friction.sign_epsilon is the tanh smoothing the friction was identified with (identify-robot
    # writes a finite ε > 0). Was: −0.01 flipped every Coulomb column's sign, NaN made every prediction NaN, 0 and inf
    # silently swapped the sign law under the identified parameters; all were read as a valid model.
    data = yaml.safe_load(files.robot.read_text())
    data["friction"]["sign_epsilon"] = eps
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(data))
    out = tmp_path / "payload.yaml"
    code, _, err = run_cli(capsys, "identify-payload", "--urdf", "planar_2r", "--robot", robot, "--bag", files.bag,
                           "--method", "khalil-1", "--frame", "tool0", "--out", out)
    assert_refused(code, err, Snapshot(out, False, None, None))
    assert "friction.sign_epsilon" in err and "identify-robot" in err, err
