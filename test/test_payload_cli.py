"""`payload-id identify-payload` end to end on bags written from synthetic runs (truth known)."""

import re

import numpy as np
import pytest
import yaml
from cli_fixtures import ur10_cell

from payload_id_core.cli.main import main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.kinematics import resolve_sensor_frame
from payload_id_core.io.bag import write_bag
from payload_id_core.notes import NoteCode
from payload_id_core.payload.methods.registry import SPECS
from payload_id_core.signals.recording import WrenchSamples
from payload_id_core.testing.ft_data import sum_of_sines as wrist_motion
from payload_id_core.testing.ft_data import synthetic_wrench
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

PHI = from_mass_com_inertia(3.5, [0.01, 0.02, 0.05], np.diag([0.02, 0.02, 0.01]))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("payload_cli")
    cell = ur10_cell(d)
    motion = sum_of_sines(cell.model, 5.0, 200.0, seed=3)
    rec = lambda phi, motion=motion, seed=0: cell.recording(phi, motion, noise_std=0.3, delay=0.002,  # noqa: E731
                                                            seed=seed)
    write_bag(d / "loaded", rec(PHI))
    write_bag(d / "unloaded_same", rec(None, seed=1))
    write_bag(d / "unloaded_other", rec(None, sum_of_sines(cell.model, 5.0, 200.0, seed=9), seed=2))
    short = rec(PHI)
    short.joints = short.joints.slice_time(0.0, 2.5)
    write_bag(d / "short", short)
    return d


def _run(d, *extra):
    out = d / "payload.yaml"
    if out.exists():
        out.unlink()
    code = main(["identify-payload", "--urdf", "ur10", "--robot", str(d / "robot.yaml"), "--out", str(out), *extra])
    return code, out


@pytest.mark.parametrize("method", ["difference-rls", "direct-rls", "khalil-3"])
def test_identify_payload_writes_payload_yaml(files, method):
    extra = ["--unloaded-bag", str(files / "unloaded_same")] if method == "khalil-3" else []
    code, out = _run(files, "--bag", str(files / "loaded"), "--frame", "wrist_3_link", "--method", method, *extra)
    assert code == 0
    d = yaml.safe_load(out.read_text())
    assert d["method"] == method and d["frame"] == "wrist_3_link"
    assert d["mass"] == pytest.approx(3.5, abs=0.035)
    assert np.allclose(d["com"], [0.01, 0.02, 0.05], atol=0.004)
    assert d["std"]["mass"] > 0 and d["converged"] is True and d["convergence_time"] > 0
    assert d["notes"] and all(set(n) == {"code", "text"} for n in d["notes"])


def test_the_printed_com_is_in_millimetres_with_its_sigma(files, capsys):
    # Issue 33 item 5: people read the CoM in mm with its σ (the demo did, the CLI printed metres to 4
    # decimals); payload.yaml stays in SI.
    code, out = _run(files, "--bag", str(files / "loaded"), "--frame", "wrist_3_link", "--method", "khalil-1")
    assert code == 0
    d = yaml.safe_load(out.read_text())
    line = capsys.readouterr().out.splitlines()[0]
    printed = re.search(r"CoM \[(.*)\] mm", line)
    assert printed, line
    pairs = [re.fullmatch(r"(-?[\d.]+) ± ([\d.]+)", part.strip()) for part in printed.group(1).split(",")]
    assert all(pairs), line
    for pair, com, std in zip(pairs, d["com"], d["std"]["com"]):
        shown, shown_std = float(pair.group(1)), float(pair.group(2))
        assert shown == pytest.approx(1e3 * com, abs=0.051) and shown_std == pytest.approx(1e3 * std, rel=0.05)
    assert max(abs(c) for c in d["com"]) < 0.1      # the file: metres


def test_bad_input_exits_2_without_output(files, tmp_path, capsys):
    cases = [
        (["--bag", str(files / "loaded"), "--frame", "no_such_frame"], "no_such_frame"),
        (["--bag", str(files / "short"), "--method", "khalil-1"], "covers only"),
        (["--bag", str(files / "loaded"), "--method", "khalil-3", "--unloaded-bag", str(files / "unloaded_other")],
         "same trajectory"),
    ]
    for extra, message in cases:
        code, out = _run(files, *extra)
        assert code == 2 and not out.exists(), extra
        assert message in capsys.readouterr().err
    # robot.yaml made for the UR10, used with the UR5's URDF (same joint names, another file).
    out = tmp_path / "p.yaml"
    code = main(["identify-payload", "--urdf", "ur5", "--robot", str(files / "robot.yaml"), "--bag",
                 str(files / "loaded"), "--out", str(out)])
    assert code == 2 and not out.exists()
    assert "URDF" in capsys.readouterr().err


@pytest.fixture(scope="module")
def ft_bag(tmp_path_factory):
    """A UR10 run with a 2.5 kg tool on tool0 and the wrist F/T sensor's wrench (helper E's simulator)."""
    d = tmp_path_factory.mktemp("payload_cli_ft")
    m = RobotModel.from_urdf("ur10")
    truth = FtParameters(resolve_sensor_frame(m, "tool0"), FT_PHI, np.array([-0.6, 0.8, 0.3, 0.02, 0.01, 0.01]))
    t, q, qd, qdd = wrist_motion(m, 8.0, 100.0, joints=[3, 4, 5], q0=np.array([0.3, -1.2, 1.3, -1.0, -1.4, 0.2]),
                                 speed=0.6, seed=2)
    rec = synthetic_recording(m, t, q, qd, qdd, payload=(FT_PHI, "tool0"), noise_std=0.05, seed=0)
    moved = (np.column_stack([np.interp(rec.joints.t, t, x[:, j]) for j in range(6)]) for x in (q, qd, qdd))
    force, torque = synthetic_wrench(m, truth, *moved, seed=1)
    rec.wrench = WrenchSamples(rec.joints.t.copy(), "tool0", force, torque)
    write_bag(d / "ft", rec)
    return d


FT_PHI = from_mass_com_inertia(2.5, [0.03, -0.01, 0.08], np.diag([0.012, 0.015, 0.008]))


def _run_ft(d, *extra):
    out = d / "payload.yaml"
    if out.exists():
        out.unlink()
    code = main(["identify-payload", "--urdf", "ur10", "--bag", str(d / "ft"), "--frame", "tool0", "--method", "ft",
                 "--sensor-frame", "tool0", "--out", str(out), *extra])
    return code, out


def test_ft_method_with_sensor_ranges_and_mode(ft_bag, capsys):
    code, out = _run_ft(ft_bag, "--sensor-force-range", "500", "--sensor-torque-range", "50,50,50",
                        "--ft-mode", "dynamic")
    assert code == 0, capsys.readouterr().err
    d = yaml.safe_load(out.read_text())
    assert d["method"] == "ft" and d["mass"] == pytest.approx(2.5, abs=0.02)
    assert np.allclose(d["com"], [0.03, -0.01, 0.08], atol=0.003)
    assert d["inertia"]["ixx"] is not None          # dynamic mode identifies the inertia
    # A force range below the tool's weight (24.5 N) drops every reading: the flag reaches the F/T method.
    code, out = _run_ft(ft_bag, "--sensor-force-range", "10")
    assert code == 2 and not out.exists() and "0 F/T samples" in capsys.readouterr().err
    # The F/T flags with another method, or a malformed range: refused before anything is written.
    code, out = main(["identify-payload", "--urdf", "ur10", "--bag", str(ft_bag / "ft"), "--method", "khalil-3",
                      "--unloaded-bag", str(ft_bag / "ft"), "--ft-mode", "static",
                      "--out", str(ft_bag / "x.yaml")]), None
    assert code == 2 and not (ft_bag / "x.yaml").exists() and "--method ft" in capsys.readouterr().err
    code = main(["identify-payload", "--urdf", "ur10", "--bag", str(ft_bag / "ft"), "--method", "ft",
                 "--sensor-force-range", "1,2", "--out", str(ft_bag / "x.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and not (ft_bag / "x.yaml").exists() and len(err.strip().splitlines()) == 1


def test_load_friction_switch_reaches_the_method(files):
    """--load-friction on/off decides whether μ per joint is estimated (and said in the notes)."""
    found = {}
    for value in ("on", "off"):
        code, out = _run(files, "--bag", str(files / "loaded"), "--method", "direct-rls", "--load-friction", value)
        assert code == 0
        d = yaml.safe_load(out.read_text())
        assert d["mass"] == pytest.approx(3.5, abs=0.035)
        found[value] = any(n["code"] == NoteCode.PAYLOAD_LOAD_FRICTION.value for n in d["notes"])
    assert found == {"on": True, "off": False}


@pytest.mark.parametrize(("extra", "refusal"), [
    (["--method", "khalil-1", "--convergence", "xu"], "--convergence is not read by khalil-1: only difference-rls, "
                                                      "direct-rls read it; drop --convergence, or use --method "
                                                      "difference-rls"),
    (["--method", "gaz-static", "--load-friction", "on"], "--load-friction is not read by gaz-static: only "
                                                          "difference-rls, direct-rls, khalil-1, khalil-2, khalil-3, "
                                                          "khalil-4, gaz-dtau read it"),
    (["--method", "direct-rls", "--sensor-frame", "tool0"], "--sensor-frame is not read by direct-rls: only ft read "
                                                            "it; drop --sensor-frame, or use --method ft"),
])
def test_a_flag_the_method_does_not_read_is_refused_naming_the_methods_that_read_it(files, capsys, extra, refusal):
    """Was: silently ignored (the F/T flags were guarded by hand). Refused before any recording is read."""
    code, out = _run(files, "--bag", str(files / "no_such_bag"), *extra)
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and len(err.strip().splitlines()) == 1
    assert refusal in err, err


def test_method_choices_and_help_come_from_the_registry(capsys):
    assert main(["identify-payload", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "{" + ",".join(spec.name for spec in SPECS) + "}" in text
    assert "not needed by khalil-3, ft" in text and "online: difference-rls, direct-rls" in text


@pytest.fixture(scope="module")
def current_bag(tmp_path_factory):
    """`payload-id simulate --profile ur10`: a 2.5 kg tool on tool0, the wrist wrench recorded, efforts in motor
    currents (about 0.18 × the torques), as a new user's first bag is."""
    d = tmp_path_factory.mktemp("payload_cli_currents")
    tool = d / "tool.yaml"
    tool.write_text(yaml.safe_dump({"frame": "tool0", "mass": 2.5, "com": [0.0, 0.0, 0.05],
                                    "inertia": {"ixx": 0.01, "ixy": 0.0, "ixz": 0.0, "iyy": 0.01, "iyz": 0.0,
                                                "izz": 0.01}}))
    assert main(["simulate", "--urdf", "ur10", "--trajectory", "ur10_payload", "--payload", str(tool),
                 "--profile", "ur10", "--out", str(d / "loaded")]) == 0
    return d


def test_ft_is_not_judged_by_the_unit_of_the_joint_efforts_it_does_not_read(current_bag, files, capsys):
    """Was: always SUSPECT ("efforts … look like motor currents") with a perfect F/T estimate, whatever --robot or
    --effort-scale said. A joint-torque method on the same bag, its efforts read as torques, is still SUSPECT."""
    def run(out, *extra):
        code = main(["identify-payload", "--urdf", "ur10", "--bag", str(current_bag / "loaded"), "--frame", "tool0",
                     "--out", str(out), *extra])
        assert code == 0, capsys.readouterr().err
        return yaml.safe_load(out.read_text())

    for extra in ([], ["--effort-scale", "1,1,1,1,1,1"]):
        d = run(current_bag / "ft.yaml", "--method", "ft", *extra)
        assert d["mass"] == pytest.approx(2.5, abs=0.01)
        assert d["converged"] is True and d["quality"]["status"] == "ok", d["quality"]
        assert not any("current" in n["text"] for n in d["notes"])
    d = run(current_bag / "khalil-1.yaml", "--method", "khalil-1", "--robot", str(files / "robot.yaml"),
            "--effort-scale", "1,1,1,1,1,1")
    assert d["converged"] is False and d["quality"]["status"] == "suspect"
    assert any("look like motor currents" in reason for reason in d["quality"]["reasons"])
