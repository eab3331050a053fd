"""Issue 29 items 2-3 on the real UR10e: the payload's model-error σ measured on held-out motions.

    payload-id identify-robot --csv-ur 14harm --loaded-csv-ur 14harmLoad --known-payload-mass 2.805
                              --held-out-csv-ur 15harm --held-out-csv-ur 01_31-unload --out robot.yaml

robot.yaml then records the payload khalil-1's regression invents on each held-out unloaded run (true 0), and
khalil-1 takes its second moment as the model-error term in place of the residuals' Newey–West inflation and
the gear friction's worst case (robot_id/model_error.py). Before: mass σ 2.2-2.3 % for errors of 0.5-0.9 %,
the CoM withheld (σ up to 10 mm) on both judged pairs. The held-out runs are the unloaded twins of the judged
pairs' trajectories (other recordings than the loaded ones judged, same motions): docs/design.md says so.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.payload.held_out_error import spurious_payload
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.model_error import DifferenceRLSConversion, HeldOutModelError, moments_robot_covariance

LOAD_MASS_KG = 2.805
PAIRS = {"14harm": ("ur-20_02_19_14harm50secLoad.csv", "ur-20_02_19_14harm50sec.csv"),
         "15harm": ("ur-20_02_19_15harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv"),
         "01_31": ("ur-20_01_31-load.csv", "ur-20_01_31-unload.csv")}
HELD_OUT = ("15harm", "01_31")


@pytest.fixture(scope="module")
def robot_yaml(tmp_path_factory):
    out = tmp_path_factory.mktemp("ur10e_held_out") / "robot.yaml"
    held = [a for k in HELD_OUT for a in ("--held-out-csv-ur", str(DATA / PAIRS[k][1]))]
    code = cli_main(["identify-robot", "--urdf", str(DATA / "ur10e.urdf"), "--csv-ur", str(DATA / PAIRS["14harm"][1]),
                     "--loaded-csv-ur", str(DATA / PAIRS["14harm"][0]), "--known-payload-mass", str(LOAD_MASS_KG),
                     *held, "--out", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def estimates(robot_yaml, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ur10e_held_out_payloads")
    out = {}
    for pair, (loaded, unloaded) in PAIRS.items():
        for method in ("khalil-1", "khalil-3", "difference-rls"):
            path = tmp / f"{method}_{pair}.yaml"
            assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                             "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded),
                             "--method", method, "--out", str(path)]) == 0
            out[method, pair] = yaml.safe_load(path.read_text())
    return out


def test_covariance_of_spurious_payloads_skips_undetermined_entries():
    rows = np.zeros((2, 10))
    rows[0, 0], rows[1, 0] = 0.03, -0.01
    rows[1, 4] = np.nan                            # the second motion left I_xx undetermined
    rows[0, 4] = 0.2
    rows[0, 1] = 0.02
    cov = HeldOutModelError("f", ["a", "b"], rows).covariance()
    assert cov[0, 0] == pytest.approx((0.03**2 + 0.01**2) / 2)
    assert cov[4, 4] == pytest.approx(0.04)        # from the one motion that determined it
    assert cov[0, 1] == 0.0                        # two motions do not measure a correlation
    rows[:, 5] = np.nan                            # determined by none: no measurement to stand on
    assert HeldOutModelError("f", ["a", "b"], rows).covariance() is None


def test_difference_rls_conversion_is_chosen_by_its_held_out_spurious_first_moments_and_round_trips():
    rows = np.zeros((2, 10))
    with_ca, without = rows.copy(), rows.copy()
    with_ca[0, 1:4] = [0.006, -0.010, 0.003]
    without[0, 1:4] = [0.000, -0.001, 0.003]
    without[1, 0] = 0.5                                    # the mass is not the criterion: the first moments are
    choice = DifferenceRLSConversion.choose({"robot_covariance": with_ca, "data_only": without})
    assert choice.chosen == "data_only"
    assert choice.mean_square("data_only") == pytest.approx((0.001**2 + 0.003**2) / 6)
    tie = DifferenceRLSConversion.choose({"robot_covariance": without, "data_only": without})
    assert tie.chosen == "robot_covariance"                # a tie keeps Xu's conversion
    me = HeldOutModelError("f", ["a", "b"], rows, difference_rls=choice)
    back = HeldOutModelError.from_dict(yaml.safe_load(yaml.safe_dump(me.to_dict())), "robot.yaml")
    assert back.difference_rls.chosen == "data_only"
    assert np.isnan(back.difference_rls.chi2) and "chi2" not in me.to_dict()["difference_rls"]   # not measured
    measured = DifferenceRLSConversion.choose({"robot_covariance": with_ca, "data_only": without}, 10.5)
    recorded = HeldOutModelError("f", ["a", "b"], rows, difference_rls=measured).to_dict()["difference_rls"]
    assert recorded["chi2_limit"] == pytest.approx(16.81, abs=0.01)      # χ²(6 dof)'s 99 %: 3 moments, 2 runs
    assert HeldOutModelError.from_dict({"frame": "f", "held_out": ["a", "b"], "spurious_payload": rows.tolist(),
                                        "difference_rls": recorded}, "robot.yaml").difference_rls.chi2 == 10.5
    recorded["chi2"] = "large"
    with pytest.raises(PayloadIdError, match="chi2"):
        HeldOutModelError.from_dict({"frame": "f", "held_out": ["a", "b"], "spurious_payload": rows.tolist(),
                                     "difference_rls": recorded}, "robot.yaml")
    assert np.array_equal(back.difference_rls.spurious["robot_covariance"], with_ca)
    assert moments_robot_covariance(type("R", (), {"model_error": back})()) is False
    assert moments_robot_covariance(type("R", (), {"model_error": HeldOutModelError("f", ["a"], rows[:1])})())
    damaged = me.to_dict()
    damaged["difference_rls"]["chosen"] = "sometimes"
    with pytest.raises(PayloadIdError, match="difference_rls"):
        HeldOutModelError.from_dict(damaged, "robot.yaml")


@requires_ur10e_data
def test_robot_yaml_records_the_spurious_payloads(robot_yaml):
    me = yaml.safe_load(robot_yaml.read_text())["model_error"]
    assert len(me["held_out"]) == 2 and len(me["spurious_payload"]) == 2
    masses = [row[0] for row in me["spurious_payload"]]
    # the model's error on motions it was not fitted to: 0.02-1.1 % of the load, not zero and not 10 %
    assert all(abs(m) < 0.05 * LOAD_MASS_KG for m in masses), masses
    assert max(abs(m) for m in masses) > 1e-4 * LOAD_MASS_KG, masses


@requires_ur10e_data
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_khalil_1_sigma_tight_calibrated_and_com_reported(robot_yaml, estimates, pair):
    d, ref = estimates["khalil-1", pair], estimates["khalil-3", pair]
    me = yaml.safe_load(robot_yaml.read_text())["model_error"]["spurious_payload"]
    held_out_mass_rms = float(np.sqrt(np.mean([row[0] ** 2 for row in me])))
    std = d["std"]["mass"]
    err = d["mass"] - LOAD_MASS_KG
    assert std <= 0.01 * LOAD_MASS_KG, (pair, std)                 # was 1.5-2.3 %
    assert std >= held_out_mass_rms, (pair, std, held_out_mass_rms)  # never below what the held-out error shows
    assert abs(err) <= 2.5 * std, (pair, err, std)
    assert d["quality"]["status"] == "ok" and d["converged"]
    assert any(n["code"] == "payload.model_error_measured" for n in d["notes"])
    com, com_std = np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float)
    assert np.all(np.isfinite(com)), (pair, d["com"])              # was withheld on 15harm and 01_31
    assert np.all(com_std <= 0.005), (pair, com_std)
    ref_com, ref_std = np.array(ref["com"], dtype=float), np.array(ref["std"]["com"], dtype=float)
    gap = np.abs(com - ref_com)
    assert np.all((gap <= 2 * np.hypot(com_std, ref_std)) | (gap <= 0.003)), (pair, com, ref_com)


# Issue 29 item 3: difference-rls's two weightings (Xu's ξ for the mass, the identification's for the rest) were
# judged against white noise; on these drives the residuals are serially correlated (efforts filtered at 5 Hz), so
# on 15harm and 01_31 the check declared them inconsistent (χ² 800 and 263), added their difference to the CoM's
# covariance (σ 7-20 mm) and withheld the CoM. Judged against the residuals' long-run covariance they agree
# (χ² 7.4 and 3.3 of 11.34), and the moments' σ is that same long-run one. On 15harm difference-rls's y still lay
# 8.4 mm from khalil-3's (153.3 mm; khalil-4, gaz-dtau, direct-rls 160.3-161.7): its moments' conversion weighed ε
# with the robot identification's covariance C_a, which carried the 14harm fit's error onto 15harm's motion (the
# spurious m·c_y difference-rls finds on the held-out unloaded 15harm run: −9.6 g·m with C_a, −1.3 without;
# khalil-1's 0.8). robot.yaml's held-out runs now choose that conversion (model_error.difference_rls): without C_a
# here, and the CoM is reported on all three runs (15harm: 157.0 ± 4.5 mm in y, 1.0σ from khalil-3's).


@requires_ur10e_data
def test_robot_yaml_records_difference_rls_moments_conversion_chosen_on_the_held_out_runs(robot_yaml):
    choice = yaml.safe_load(robot_yaml.read_text())["model_error"]["difference_rls"]
    assert choice["chosen"] == "data_only", choice
    first = {k: np.array(v, dtype=float)[:, 1:4] for k, v in choice["spurious_payload"].items()}
    assert first["robot_covariance"].shape == first["data_only"].shape == (2, 3)
    # the held-out 15harm run's spurious m·c_y: −9.6 g·m with C_a, −1.3 without (mean squares 3.5e-5, 3.4e-6 (kg·m)²)
    assert abs(first["robot_covariance"][0, 1]) > 0.005 > 0.003 > abs(first["data_only"][0, 1]), first
    assert np.mean(first["data_only"] ** 2) < 0.25 * np.mean(first["robot_covariance"] ** 2), first
    # Recorded next to the choice: the two conversions' difference against what noise and C_a predict for it
    # (measured 10.5 on 6 dof, 99 %: 16.8): visible (well above the simulated tie's 2.3 on 3), not beyond the noise.
    assert choice["chi2_level"] == 0.99 and choice["chi2_limit"] == pytest.approx(16.81, abs=0.01), choice
    assert 6.0 < choice["chi2"] < choice["chi2_limit"], choice


@requires_ur10e_data
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_difference_rls_reports_the_com_where_khalil_3_finds_it(estimates, pair):
    d, ref = estimates["difference-rls", pair], estimates["khalil-3", pair]
    assert not any(n["code"] == "payload.moments_disagree" for n in d["notes"]), (pair, d["notes"])
    assert abs(d["mass"] - LOAD_MASS_KG) <= 2.5 * d["std"]["mass"], (pair, d["mass"], d["std"]["mass"])
    assert d["std"]["mass"] <= 0.01 * LOAD_MASS_KG, (pair, d["std"]["mass"])
    assert d["com"][0] is not None, (pair, d["notes"])        # was withheld on 15harm (and before, on 01_31)
    com, com_std = np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float)
    assert np.all(com_std <= 0.005), (pair, com_std)
    ref_com, ref_std = np.array(ref["com"], dtype=float), np.array(ref["std"]["com"], dtype=float)
    gap = np.abs(com - ref_com)
    assert np.all((gap <= 2 * np.hypot(com_std, ref_std)) | (gap <= 0.003)), (pair, com, ref_com)


# Issue 30, real UR10e: with the weighed mass (`--known-mass 2.805`) khalil-1 and difference-rls report the CoM
# (σ <= 5 mm) on all three loaded runs and agree with khalil-3's (without the flag: the motion's own reference)
# within 2 combined σ or 3 mm, on the user's path (this robot.yaml, model error measured on held-out runs). The
# last session measured it only without held-out runs (khalil-1 CoM σ 5.8 / 6.3 mm on 15harm / 01_31); here it is
# 3.95-3.97 mm. The known mass enters both methods (mass σ 0.023-0.025 -> 0.012 kg); through m's correlation with
# m·c it narrows y and z (the CoM's far axes, |c| ≈ 160 mm) by up to 0.4 mm; x's σ is the robot model's error on
# m·c_x and does not move. difference-rls on 15harm was withheld without the mass (y σ 5.0 mm) and reported with it
# (y σ 4.88 mm, 8.4 mm / 1.7σ from khalil-3's y) before its moments' conversion was chosen on the held-out runs;
# since, it is reported either way (above).
@pytest.fixture(scope="module")
def known_mass_estimates(robot_yaml, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ur10e_known_mass")
    out = {}
    for pair, (loaded, unloaded) in PAIRS.items():
        for method in ("khalil-1", "difference-rls"):
            path = tmp / f"{method}_{pair}.yaml"
            assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                             "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded),
                             "--method", method, "--known-mass", str(LOAD_MASS_KG), "--out", str(path)]) == 0
            out[method, pair] = yaml.safe_load(path.read_text())
    return out


@requires_ur10e_data
@pytest.mark.parametrize("method", ["khalil-1", "difference-rls"])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_known_mass_com_reported_within_5_mm_and_agreeing_with_khalil_3(estimates, known_mass_estimates, method,
                                                                        pair):
    d, without, ref = known_mass_estimates[method, pair], estimates[method, pair], estimates["khalil-3", pair]
    assert d["prior"]["known_mass"] == pytest.approx(LOAD_MASS_KG), d["prior"]
    assert d["quality"]["status"] == "ok", (pair, d["quality"])
    # The weighed mass (σ 0.5 %) enters: the mass σ is about halved, never widened (the data agree with it).
    assert d["std"]["mass"] <= 0.6 * without["std"]["mass"], (pair, d["std"]["mass"], without["std"]["mass"])
    assert abs(d["mass"] - LOAD_MASS_KG) <= 2 * d["std"]["mass"], (pair, d["mass"], d["std"]["mass"])
    com, com_std = np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float)
    assert np.all(np.isfinite(com)), (pair, d["notes"])
    assert np.all(com_std <= 0.005), (pair, com_std)
    if without["com"][0] is not None:       # the mass can only remove its own share of the CoM's σ
        assert np.all(com_std <= np.array(without["std"]["com"], dtype=float) + 1e-4), (pair, com_std, without["std"])
    ref_com, ref_std = np.array(ref["com"], dtype=float), np.array(ref["std"]["com"], dtype=float)
    gap = np.abs(com - ref_com)
    assert np.all((gap <= 2 * np.hypot(com_std, ref_std)) | (gap <= 0.003)), (pair, com, ref_com, com_std)


# -- held-out runs that cannot measure the model error are refused (issue: red team items 1-4) ----------------

def _identify_robot_with_held_out(tmp_path, *held_out: str):
    out = tmp_path / "robot.yaml"
    held = [a for f in held_out for a in ("--held-out-csv-ur", f)]
    code = cli_main(["identify-robot", "--urdf", str(DATA / "ur10e.urdf"), "--csv-ur", str(DATA / PAIRS["14harm"][1]),
                     "--loaded-csv-ur", str(DATA / PAIRS["14harm"][0]), "--known-payload-mass", str(LOAD_MASS_KG),
                     *held, "--out", str(out)])
    return code, out


@requires_ur10e_data
@pytest.mark.parametrize("which", ["unloaded calibration run", "copy of the loaded calibration run"])
def test_a_run_the_robot_is_fitted_on_is_refused_as_held_out(tmp_path, capsys, which):
    # Before: exit 0, the in-sample spurious mass 1e-4 kg collapsed khalil-1's CoM σ to 0.55 mm, 12σ off khalil-3.
    held = DATA / PAIRS["14harm"][1]
    if which.startswith("copy"):
        held = tmp_path / "renamed.csv"                 # same samples under another name
        held.write_bytes((DATA / PAIRS["14harm"][0]).read_bytes())
    code, out = _identify_robot_with_held_out(tmp_path, str(DATA / PAIRS["15harm"][1]), str(held))
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "a run the robot is fitted to" in err, err


@requires_ur10e_data
def test_a_loaded_held_out_run_is_refused_and_nothing_written(tmp_path, capsys):
    # Before: exit 0 with a spurious mass of 2.809 kg recorded; khalil-1's mass σ then 71 %.
    code, out = _identify_robot_with_held_out(tmp_path, str(DATA / PAIRS["15harm"][1]), str(DATA / PAIRS["15harm"][0]))
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "carries a load" in err, err


@requires_ur10e_data
@pytest.mark.parametrize("run, reason", [
    ("ur-20_02_19_15harm50secLoad.csv", "carries a load"),     # before: spurious 2.809 kg accepted
    ("validation-p1.csv", "too little motion"),                # before: −0.44 kg, an inertia entry −11 accepted
    ("jointwise-joint_2.csv", "too little motion"),            # before: 0.158 kg accepted, σ 0.87 → 4 %
])
def test_held_out_run_judged_by_its_own_fit(robot_yaml, run, reason):

    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    robot = RobotIdentification.load(str(robot_yaml), model)
    frame = robot.model_error.frame
    for good in HELD_OUT:                                      # the full unloaded excitations still pass
        rec = read_ur_csv(str(DATA / PAIRS[good][1]), joint_names=model.joint_names)
        assert np.all(np.isfinite(spurious_payload(model, robot, rec.with_drive_gains(robot.effort_scale), frame)))
    rec = read_ur_csv(str(DATA / run), joint_names=model.joint_names).with_drive_gains(robot.effort_scale)
    with pytest.raises(PayloadIdError, match=reason):
        spurious_payload(model, robot, rec, frame)


# -- a payload frame rigidly attached to the one the model error was measured in (red team item 5) ------------

@requires_ur10e_data
def test_model_error_moves_to_a_rigidly_attached_frame():
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    body = pin.Inertia(1.3, np.array([0.02, -0.05, 0.11]), np.diag([0.01, 0.02, 0.015]))
    _, at_tool0 = model.frame_in_joint("tool0")
    _, at_wrist3 = model.frame_in_joint("wrist_3_link")
    in_wrist3 = np.array(body.toDynamicParameters())
    in_tool0 = np.array((at_tool0.inverse() * at_wrist3).act(body).toDynamicParameters())
    me = HeldOutModelError("wrist_3_link", ["a"], in_wrist3[None, :])
    np.testing.assert_allclose(me.in_frame(model, "tool0").spurious[0], in_tool0, atol=1e-9)
    assert me.in_frame(model, "wrist_2_link") is None          # another body: the error there was not measured


@requires_ur10e_data
def test_khalil_1_in_tool0_uses_the_model_error_measured_in_wrist_3(robot_yaml, tmp_path):
    # Before: the measurement was dropped for --frame tool0: mass σ 0.0235 → 0.0652 kg, the CoM withheld.
    loaded, unloaded = PAIRS["15harm"]
    path = tmp_path / "tool0.yaml"
    assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot_yaml),
                     "--csv-ur", str(DATA / loaded), "--unloaded-csv-ur", str(DATA / unloaded),
                     "--method", "khalil-1", "--frame", "tool0", "--out", str(path)]) == 0
    d = yaml.safe_load(path.read_text())
    assert any(n["code"] == "payload.model_error_measured" for n in d["notes"]), d["notes"]
    assert d["std"]["mass"] <= 0.01 * LOAD_MASS_KG, d["std"]["mass"]
    assert abs(d["mass"] - LOAD_MASS_KG) <= 2.5 * d["std"]["mass"]
    assert np.all(np.isfinite(np.array(d["com"], dtype=float))), d["com"]
