"""The estimator's last result on disk (payload/result_file.py), without ROS: written atomically in payload.yaml's
form plus status, covariance and the F/T compensation parameters; read back, older files included."""

import numpy as np
import pytest
import yaml

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.storage import ft_parameters_from_payload, ft_parameters_to_dict
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.goal_outcome import GoalOutcome
from payload_id_core.payload.result_file import MonitorCarried, ResultUnreadable, read_result, write_result
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.signals.stamp_holes import Hole, WindowCoverage

FRAME = "tool0"


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf("ur10")


def _estimate() -> PayloadEstimate:
    phi = from_mass_com_inertia(2.5, [0.01, -0.02, 0.07], np.diag([0.01, 0.012, 0.008]))
    cov = np.diag(np.full(10, 1e-6))
    cov[7:, :] = cov[:, 7:] = np.nan
    return PayloadEstimate(FRAME, phi, cov, "difference-rls", convergence_time=2.5,
                           notes=[Note(NoteCode.GOAL_CANCELLED, "partial: the goal was cancelled after 2.00 s"),
                                  "a plain note"], quality=Quality.SUSPECT, quality_reasons=["why"])


@pytest.mark.parametrize("outcome", list(GoalOutcome))
def test_the_result_comes_back_with_its_covariance_status_and_compensation(tmp_path, model, outcome):
    est = _estimate()
    ft = ft_parameters_from_payload(model, est, "tool0", offset=np.arange(6) * 0.1, tilt=(0.01, -0.02))
    path = tmp_path / "last.yaml"
    write_result(path, model, est, outcome, ft, 12.5)
    d = yaml.safe_load(path.read_text())
    # payload.yaml's form (PayloadEstimate.to_dict) plus the node's fields; unknown covariance entries as 0.
    assert {k: d[k] for k in est.to_dict()} == est.to_dict()
    cut_short = outcome in (GoalOutcome.CANCELLED, GoalOutcome.INTERRUPTED)    # the client's cancel, or the cell's
    assert d["status"] == outcome.value and d["partial"] is cut_short
    assert d["stamp"] == 12.5 and d["ft_parameters"] == ft_parameters_to_dict(model, ft)
    np.testing.assert_array_equal(d["covariance_about_frame_origin"], np.nan_to_num(est.covariance, nan=0.0))
    saved = read_result(path, model)
    assert saved is not None and saved.partial is cut_short
    np.testing.assert_allclose(saved.estimate.phi, est.phi, atol=1e-12)
    np.testing.assert_array_equal(saved.estimate.covariance, np.nan_to_num(est.covariance, nan=0.0))
    assert [Note.from_any(n) for n in saved.estimate.notes] == [Note.from_any(n) for n in est.notes]
    assert saved.estimate.quality is Quality.SUSPECT and saved.estimate.quality_reasons == ["why"]
    assert saved.ft_params is not None
    np.testing.assert_allclose(saved.ft_params.offset, ft.offset)
    assert saved.ft_params.tilt == pytest.approx(ft.tilt) and saved.ft_params.sensor.name == "tool0"


def test_a_goal_s_result_says_what_its_window_received_of_the_joint_states(tmp_path, model):
    path = tmp_path / "last.yaml"
    lost = [Hole(10.5, 11.0, 249), Hole(13.9, 14.3, 199)]          # the second clipped by the window's end
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 1.0,
                 joint_states=WindowCoverage.of(lost, 10.0, 14.0, 1553, 0.002))
    d = yaml.safe_load(path.read_text())["joint_states"]
    assert d["window"] == [10.0, 14.0] and d["received"] == 1553 and d["period_s"] == 0.002
    assert d["lost_s"] == pytest.approx(0.6) and d["longest_lost_s"] == pytest.approx(0.5)
    assert d["lost_stretches"] == 2 and d["covered_share"] == pytest.approx(0.85) and d["complete"] is False
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 1.0)
    assert "joint_states" not in yaml.safe_load(path.read_text())
    assert read_result(path, model) is not None


def test_without_compensation_parameters_none_are_written_or_read(tmp_path, model):
    path = tmp_path / "last.yaml"
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 1.0)
    assert "ft_parameters" not in yaml.safe_load(path.read_text())
    assert read_result(path, model).ft_params is None


def test_a_file_written_before_notes_had_codes_still_loads(tmp_path, model):
    """The shape of the files the node wrote before status and coded notes: plain-string notes, no quality."""
    old = {"frame": FRAME, "mass": 2.0, "com": [0.0, 0.0, 0.05],
           "inertia": {"ixx": 0.01, "ixy": 0.0, "ixz": 0.0, "iyy": 0.01, "iyz": 0.0, "izz": 0.01},
           "method": "direct-rls", "notes": ["converged after 3.1 s"], "partial": True}
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(old))
    saved = read_result(path, model)
    assert saved.partial and saved.ft_params is None and saved.estimate.mass == pytest.approx(2.0)
    assert [Note.from_any(n).text for n in saved.estimate.notes] == ["converged after 3.1 s"]
    assert np.isnan(saved.estimate.covariance).all()


def test_missing_unreadable_and_malformed_files(tmp_path, model):
    assert read_result(tmp_path / "absent.yaml", model) is None
    broken = tmp_path / "broken.yaml"
    broken.write_text("mass: [1, 2\n")
    with pytest.raises(ResultUnreadable):
        read_result(broken, model)
    with pytest.raises(ResultUnreadable):
        read_result(tmp_path, model)                  # a directory
    for text in ("- 1\n- 2\n", "frame: tool0\n"):      # no mapping; no mass
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(PayloadIdError):
            read_result(bad, model)


def test_a_result_file_that_cannot_be_written_raises_oserror(tmp_path, model):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(OSError):
        write_result(blocker / "last.yaml", model, _estimate(), GoalOutcome.FINISHED, None, 0.0)


@pytest.mark.parametrize("damage", [
    {"covariance_about_frame_origin": [[1.0, 0.0], [0.0, 1.0]]},          # not 10 x 10
    {"covariance_about_frame_origin": [["a"] * 10] * 10},                 # not numbers
    {"covariance_about_frame_origin": [[1.0, 2.0], [3.0]]},               # ragged
    {"parameters_about_frame_origin": [1.0, 2.0, 3.0]},                   # φ of 3 entries, not 10
    {"convergence_time": "soon"},
    {"notes": 5},
    {"ft_parameters": "x"},
])
def test_a_damaged_result_is_refused_as_bad_input_not_a_crash(tmp_path, model, damage):
    """The node starts without a result it cannot read (a PayloadIdError: warned, started without); any other
    exception ended the node at start-up, and a wrong-sized covariance or φ was taken as given."""
    path = tmp_path / "last.yaml"
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 1.0)
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **damage}))
    with pytest.raises(PayloadIdError):
        read_result(path, model)


def test_a_monitor_re_estimate_comes_back_with_its_tare(tmp_path, model):
    """Issue 31 item 4: the payload monitor's re-estimate is persisted like a goal's, with the tare it was reported
    less, so a node restarted mid-carry goes on from the part carried; a goal's result carries no tare."""
    path = tmp_path / "last.yaml"
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4))
    d = yaml.safe_load(path.read_text())
    assert d["status"] == "monitor" and d["partial"] is False
    assert d["monitor_tare"] == {"mass": -0.047, "variance": 4e-4}
    saved = read_result(path, model)
    assert saved is not None and saved.monitor_tare == (-0.047, 4e-4)
    np.testing.assert_allclose(saved.estimate.phi, _estimate().phi, atol=1e-12)
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 4.0)
    assert read_result(path, model).monitor_tare is None
    d["monitor_tare"] = "heavy"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="monitor_tare"):
        read_result(path, model)


def test_a_monitor_re_estimate_comes_back_unconfirmed(tmp_path, model):
    """Issue 31: a monitor payload restored after a refuted re-estimate and not confirmed yet is saved with why, so a
    restarted node goes on doubting it (monitor.PayloadState.unconfirmed); a confirmed one and a goal's carry none."""
    path = tmp_path / "last.yaml"
    why = "restored after the re-estimate since 11.000 s was refuted; the residual does not confirm it yet"
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4), monitor_unconfirmed=why)
    saved = read_result(path, model)
    assert saved is not None and saved.monitor_unconfirmed == why
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4))
    assert read_result(path, model).monitor_unconfirmed == ""
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 4.0)
    assert read_result(path, model).monitor_unconfirmed == ""
    write_result(path, model, _estimate(), None, None, 3.0, monitor_unconfirmed=why)
    d = yaml.safe_load(path.read_text())
    d["monitor_unconfirmed"] = ["not", "a", "sentence"]
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="monitor_unconfirmed"):
        read_result(path, model)


def test_a_monitor_re_estimate_comes_back_with_the_last_stamp_watched(tmp_path, model):
    """Issue 31: the last joint-state stamp the monitor had seen is saved with its re-estimate, so a monitor started on
    the file after a restart does not date a change made while the node was down at its own first sample
    (PayloadMonitor.carry_on_from_part's watched_until); a file without it, or a goal's, gives None (not known)."""
    path = tmp_path / "last.yaml"
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4), monitor_watched_until=812.25)
    assert yaml.safe_load(path.read_text())["monitor_watched_until"] == 812.25
    assert read_result(path, model).monitor_watched_until == 812.25
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4))
    assert read_result(path, model).monitor_watched_until is None
    d = yaml.safe_load(path.read_text())
    del d["monitor_watched_until"]                  # a file saved before the stamp was kept
    path.write_text(yaml.safe_dump(d))
    assert read_result(path, model).monitor_watched_until is None
    write_result(path, model, _estimate(), GoalOutcome.FINISHED, None, 4.0)
    assert read_result(path, model).monitor_watched_until is None
    for bad in ("yesterday", float("nan"), True):
        write_result(path, model, _estimate(), None, None, 3.0, monitor_watched_until=1.0)
        d = yaml.safe_load(path.read_text())
        d["monitor_watched_until"] = bad
        path.write_text(yaml.safe_dump(d))
        with pytest.raises(PayloadIdError, match="monitor_watched_until"):
            read_result(path, model)


def _carried_state() -> MonitorCarried:
    """A monitor's state 0.5 s after a 3 kg pick (h181): its window's fit carried, undetermined since the pick, the
    payload settled before it (nothing) and the pick's load not named yet."""
    fit = from_mass_com_inertia(2.895, [0.01, -0.02, 0.07], np.diag([0.01, 0.012, 0.008]))
    pending = {"kind": "picked", "t_change": 4.702, "t_alarm": 4.718, "t_verdict": 4.818, "delta_mass": 2.895,
               "delta_mass_std": 0.135, "delta_phi": fit.tolist(), "reason": "a load fits", "t_change_located": True}
    change = {"before_fit": [0.0] * 10, "before_covariance": np.diag(np.full(10, 1e-4)).tolist(),
              "before_published_extra": None, "before_held_out_variance": 0.0, "before_since": None,
              "started": 4.702, "unlocated": "", "unnamed": 4.718, "named": False, "pending": pending}
    return MonitorCarried(np.diag(np.full(10, 0.018)), None, 0.0, "f" * 64, fit=fit, determined=False, since=4.702,
                          undecided="", undecided_var=0.0, undecided_since=float("nan"), inertia_identified=False,
                          change=change)


def test_a_monitor_state_being_re_estimated_comes_back_as_saved(tmp_path, model):
    """h181: the state itself (the fit, undetermined since the change, the change being re-estimated) round-trips;
    NaN stamps are written as null and read back NaN."""
    path = tmp_path / "last.yaml"
    carried = _carried_state()
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4), monitor_carried=carried)
    back = read_result(path, model, "f" * 64).monitor_carried
    assert back is not None and not back.determined and back.since == 4.702 and np.isnan(back.undecided_since)
    np.testing.assert_array_equal(back.fit, carried.fit)
    assert back.change == carried.change
    assert yaml.safe_load(path.read_text())["monitor_carried"]["undecided_since"] is None


@pytest.mark.parametrize("damage,said", [
    (lambda c: c.update(fit=[1.0] * 9), "fit is not 10 finite numbers"),
    (lambda c: c.update(determined="no"), "determined is not true or false"),
    (lambda c: c.update(since="then"), "since is not a joint-state stamp"),
    (lambda c: c.update(undecided_variance=-1.0), "undecided_variance is not a variance"),
    (lambda c: c["change"].update(before_fit=[float("nan")] * 10), "change before_fit is not 10 finite numbers"),
    (lambda c: c["change"].update(started=None), "change started is not a joint-state stamp"),
    (lambda c: c["change"]["pending"].update(kind="grabbed"), "change pending kind is not one of"),
    (lambda c: c["change"]["pending"].update(delta_mass="3 kg"), "change pending delta_mass is not a number"),
    (lambda c: c.update(change=[1, 2]), "change is not a mapping"),
    (lambda c: c.update(doubt=3), "doubt is not a sentence"),
    (lambda c: c["change"].update(doubt_mass="heavy"), "change doubt_mass is not a mass in kg")])
def test_a_damaged_monitor_state_is_refused_with_one_reason(tmp_path, model, damage, said):
    path = tmp_path / "last.yaml"
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(-0.047, 4e-4),
                 monitor_carried=_carried_state())
    d = yaml.safe_load(path.read_text())
    damage(d["monitor_carried"])
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match=said) as err:
        read_result(path, model)
    assert "monitor_carried" in str(err.value)


def test_a_monitor_state_in_doubt_comes_back_in_doubt(tmp_path, model):
    """h197: why the payload is in doubt and the doubt's implied mass round-trip (a restart went on from the doubt's
    fit as if it were a change like any other, with nothing to take it back to); a file saved before they were kept
    (h181: no `doubt`, no doubt mass in the change) still loads, with no doubt."""
    path = tmp_path / "last.yaml"
    carried = _carried_state()
    change = dict(carried.change, doubt_mass=5.97, doubt_mass_std=0.21)
    doubted = MonitorCarried(carried.cov, None, 0.0, "f" * 64, fit=carried.fit, determined=False, since=9.092,
                             change=change, doubt="the torques since 9.092 s are not explained by the carried payload")
    write_result(path, model, _estimate(), None, None, 3.0, monitor_tare=(0.0, 0.0), monitor_carried=doubted)
    back = read_result(path, model, "f" * 64).monitor_carried
    assert back is not None and back.doubt == doubted.doubt
    assert back.change["doubt_mass"] == 5.97 and back.change["doubt_mass_std"] == 0.21
    d = yaml.safe_load(path.read_text())
    del d["monitor_carried"]["doubt"]
    del d["monitor_carried"]["change"]["doubt_mass"]
    path.write_text(yaml.safe_dump(d))
    older = read_result(path, model, "f" * 64).monitor_carried
    assert older is not None and older.doubt == "" and "doubt_mass" not in older.change
