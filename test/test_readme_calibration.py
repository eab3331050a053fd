"""The README's calibration advice followed as written on `payload-id simulate`'s default (noise-free `clean`) cell:
no estimate converged and ok may be more than 3σ off the simulated payload.

The robot is identified on 30 s of the bundled panda_payload_inertia excitation and given no held-out run, so
robot.yaml has no measured model error: on main difference-rls came back −0.071 % at −3.52σ (σ 0.02 % of the
mass, the noise-free residuals' numerical error), converged and ok. The model-error term is now floored at the
model's resolution (covariance_extra.resolution_floored_covariance)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.excitation.fourier import trajectories_dir
from payload_id_core.notes import NoteCode
from payload_id_core.payload.covariance_extra import resolution_floor_note, resolution_floored_covariance
from payload_id_core.payload.finish import MODEL_RESOLUTION
from payload_id_core.payload.linear import weighted_lstsq

MASS, COM = 1.5, np.array([0.01, -0.02, 0.05])


@pytest.fixture(scope="module")
def readme_cell(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme_cal")
    cal = yaml.safe_load((trajectories_dir() / "panda_payload_inertia.yaml").read_text())
    cal["duration"] = 30.0
    (d / "cal30.yaml").write_text(yaml.safe_dump(cal))
    (d / "pl.yaml").write_text(yaml.safe_dump({"mass": MASS, "com": COM.tolist(), "inertia": {
        "ixx": 0.004, "ixy": 0.0, "ixz": 0.0, "iyy": 0.004, "iyz": 0.0, "izz": 0.002}}))
    for argv in (["simulate", "--urdf", "panda", "--trajectory", d / "cal30.yaml", "--out", d / "unloaded"],
                 ["identify-robot", "--urdf", "panda", "--bag", d / "unloaded", "--out", d / "robot.yaml"],
                 ["simulate", "--urdf", "panda", "--trajectory", "panda_payload", "--payload", d / "pl.yaml",
                  "--out", d / "loaded"]):
        assert cli_main([str(a) for a in argv]) == 0
    return d


@pytest.mark.parametrize("method", ["khalil-1", "direct-rls", "difference-rls", "khalil-2"])
def test_readme_calibration_gives_no_confident_wrong_answer(readme_cell, method):
    d = readme_cell
    out = d / f"{method}.yaml"
    assert cli_main(["identify-payload", "--urdf", "panda", "--robot", str(d / "robot.yaml"), "--bag",
                     str(d / "loaded"), "--method", method, "--out", str(out)]) == 0
    p = yaml.safe_load(out.read_text())
    if not (p["converged"] and p["quality"]["status"] == "ok"):
        return
    z_mass = (p["mass"] - MASS) / p["std"]["mass"]
    z_com = (np.array(p["com"]) - COM) / np.array(p["std"]["com"])
    assert abs(z_mass) <= 3.0 and np.all(np.abs(z_com) <= 3.0), (method, z_mass, z_com)


def test_the_resolution_floor_scales_the_covariance_only_below_it():
    """A residual below MODEL_RESOLUTION × the effort RMS is taken at the floor (textbook covariance of the floor's
    white noise); at or above it the fit's own covariance stands (None)."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(400, 2, 3))
    y = W @ np.array([1.0, -2.0, 0.5]) + 1e-6 * rng.normal(size=(400, 2))
    fit = weighted_lstsq(W, y)
    rms = np.array([10.0, 1.0])
    floored = resolution_floored_covariance(W, fit, rms)
    assert floored is not None
    A = (W / (MODEL_RESOLUTION * rms)[None, :, None]).reshape(-1, 3)
    np.testing.assert_allclose(floored, np.linalg.inv(A.T @ A), rtol=1e-9)
    assert resolution_floored_covariance(W, fit, fit.sigma / MODEL_RESOLUTION) is None


@pytest.mark.parametrize("method", ["khalil-1", "direct-rls", "difference-rls", "khalil-2"])
def test_a_binding_resolution_floor_is_said_with_its_note_code(readme_cell, method):
    """The noise-free cell's residuals are below the floor: the σ rests on the assumed resolution, not on a measured
    model error, and the result says so (code payload.model_resolution_floor, naming the joints)."""
    d = readme_cell
    out = d / f"floor_{method}.yaml"
    assert cli_main(["identify-payload", "--urdf", "panda", "--robot", str(d / "robot.yaml"), "--bag",
                     str(d / "loaded"), "--method", method, "--out", str(out)]) == 0
    notes = [n for n in yaml.safe_load(out.read_text())["notes"] if n["code"] == "payload.model_resolution_floor"]
    assert len(notes) == 1, method
    assert "joint(s) [" in notes[0]["text"] and "--held-out" in notes[0]["text"]


def test_the_resolution_floor_note_names_the_joints_below_it_and_only_then():
    sigma, rms = np.array([1e-4, 0.2, 1e-5]), np.array([1.0, 1.0, 10.0])
    note = resolution_floor_note(sigma, rms)
    assert note is not None and note.code is NoteCode.PAYLOAD_MODEL_RESOLUTION_FLOOR
    assert "joint(s) [1, 3]" in note.text
    assert resolution_floor_note(MODEL_RESOLUTION * rms, rms) is None
