"""`payload-id identify-robot` on small rosbag2 bags: a good run, and every kind of bad input (exit 2, no file)."""

import numpy as np
import pytest
from cli_fixtures import run_cli

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.bag import write_bag
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.05, 0.02])
THETA_F = np.array([0.8, 1.5, 0.05, 0.4, 0.7, -0.02])


@pytest.fixture(scope="module")
def planar():
    return RobotModel.from_urdf("planar_2r")


def _recording(model, seed, duration=8.0, freeze_joint2=False, payload=None, effort_scale=None, noise_std=NOISE):
    t, q, qd, qdd = sum_of_sines(model, duration, 100.0, seed=seed)
    if freeze_joint2:
        q[:, 1], qd[:, 1], qdd[:, 1] = 0.4, 0.0, 0.0
    fm = make_friction_model("nonlinear", model.joint_names, alpha=[0.5, 0.6])
    return synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=THETA_F, rotor_inertia=[0.1, 0.05],
                               noise_std=noise_std, seed=seed, payload=payload, effort_scale=effort_scale)


@pytest.fixture(scope="module")
def bags(tmp_path_factory, planar):
    root = tmp_path_factory.mktemp("bags")
    out = {}
    for name, rec in {
        "train": _recording(planar, 1),
        "test": _recording(planar, 2),
        "frozen": _recording(planar, 3, freeze_joint2=True),
    }.items():
        out[name] = write_bag(root / name, rec)
    return out


def test_identifies_and_cross_validates(capsys, tmp_path, bags, planar):
    out = tmp_path / "robot.yaml"
    code, stdout, err = run_cli(capsys, "identify-robot", "--urdf", "planar_2r", "--bag", bags["train"],
                                "--validate-bag", bags["test"], "--estimator", "feasible", "--out", out)
    assert code == 0, err
    assert "6 base parameters" in stdout
    ident = RobotIdentification.load(out, planar)
    assert ident.physically_consistent is True
    assert np.all(ident.validation_rmse < 1.15 * NOISE), ident.validation_rmse
    np.testing.assert_allclose(ident.friction.shape[:, 0], [0.5, 0.6], atol=0.1)


def test_drive_gains_from_a_known_payload_mass(capsys, tmp_path, planar):
    k = np.array([8.0, 5.0])
    phi_l = from_mass_com_inertia(1.5, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))
    unloaded = write_bag(tmp_path / "unloaded", _recording(planar, 4, effort_scale=k))
    loaded = write_bag(tmp_path / "loaded", _recording(planar, 5, effort_scale=k, payload=(phi_l, "tool0")))
    out = tmp_path / "robot.yaml"
    code, stdout, err = run_cli(capsys, "identify-robot", "--urdf", "planar_2r", "--bag", unloaded, "--loaded-bag",
                                loaded, "--known-payload-mass", 1.5, "--payload-frame", "tool0", "--out", out)
    assert code == 0, err
    ident = RobotIdentification.load(out, planar)
    np.testing.assert_allclose(ident.effort_scale, k, rtol=0.01)
    # Their σ from the information the runs carry (fit_information.py): finite and small, and it covers the error.
    # (The planar arm cannot excite six of the load's moments; their columns of rounding once made both ± inf.)
    assert ident.effort_scale_std is not None
    rel = ident.effort_scale_std / ident.effort_scale
    assert np.all(rel < 0.002), rel                               # measured 0.03 / 0.10 %
    assert np.all(np.abs(ident.effort_scale - k) <= 3.0 * ident.effort_scale_std)   # measured 0.43 / 0.22 σ


@pytest.mark.parametrize("case", ["joint names", "missing topic", "unexcited", "unknown frame", "nan"])
def test_bad_input_exits_2_without_output(case, capsys, tmp_path, bags, planar):
    out = tmp_path / "robot.yaml"
    args = ["--urdf", "planar_2r", "--bag", bags["train"], "--out", out]
    expect = {"joint names": "joint1", "missing topic": "/no/such/topic", "unexcited": "unexcited",
              "unknown frame": "no_frame", "nan": "NaN"}[case]
    if case == "joint names":
        args[1] = "ur10"
    elif case == "missing topic":
        args += ["--trajectory-topic", "/no/such/topic"]
    elif case == "unexcited":
        args[3] = bags["frozen"]
    elif case == "unknown frame":
        args += ["--loaded-bag", bags["test"], "--known-payload-mass", "1.0", "--payload-frame", "no_frame"]
    elif case == "nan":
        rec = _recording(planar, 6, duration=3.0)
        rec.joints.tau[40, 1] = np.nan
        args[3] = write_bag(tmp_path / "nan_bag", rec)
    code, _, err = run_cli(capsys, "identify-robot", *args)
    assert code == 2
    assert expect in err and err.count("\n") == 1, err
    assert not out.exists()


def test_the_load_friction_chosen_on_a_known_mass_with_given_gains(capsys, tmp_path, bags, planar):
    """A cell with given drive gains chooses each payload method's load friction on a held-out run of known mass: the
    known mass no longer needs a gain-calibration run (it was refused: "needs both --known-payload-mass and
    --loaded-bag"), and the gains stay the given ones."""
    phi_l = from_mass_com_inertia(1.5, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))
    loaded = write_bag(tmp_path / "loaded", _recording(planar, 6, payload=(phi_l, "tool0")))
    out = tmp_path / "robot.yaml"
    code, stdout, err = run_cli(capsys, "identify-robot", "--urdf", "planar_2r", "--bag", bags["train"],
                                "--effort-scale", "1,1", "--held-out-loaded-bag", loaded, "--known-payload-mass", 1.5,
                                "--payload-frame", "tool0", "--out", out)
    assert code == 0, err
    ident = RobotIdentification.load(out, planar)
    assert ident.load_friction_choice is not None
    assert ident.load_friction_choice.known_mass == 1.5
    assert set(ident.load_friction_choice.methods) == {"khalil-1", "khalil-2", "direct-rls", "difference-rls"}
    assert "load-dependent friction for difference-rls" in stdout
    np.testing.assert_array_equal(ident.effort_scale, [1.0, 1.0])
    assert ident.effort_scale_source == "given"


def test_a_known_mass_without_its_run_is_refused(capsys, tmp_path, bags):
    out = tmp_path / "robot.yaml"
    code, _, err = run_cli(capsys, "identify-robot", "--urdf", "planar_2r", "--bag", bags["train"],
                           "--known-payload-mass", 1.5, "--out", out)
    assert code == 2
    assert "--known-payload-mass without a run carrying that payload" in err
    assert "--held-out-loaded-bag" in err
    assert not out.exists()
