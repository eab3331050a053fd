"""The payload monitor on a real pick and a real place (issue 31's red team): the UR10e's unloaded 01_31 run followed
by its loaded twin (a pick: the 2.805 kg load appears at rest between the two, the same pose at the join), and the
reverse (a place). Replayed as `payload-id monitor` replays them, from nothing carried.

After the first fix both runs ended suspect and the place was never named: a push held in motion's lasting misfit
put the payload in doubt and nothing but a 1 %-σ re-estimate (which the real robot's task motion does not reach)
lifted it. A doubt is now lifted by the load it asked about, once named and not refuted, or by its misfit coming
back (the payload settled before it is carried).

Before the fix the monitor, disarmed by a contact event just before the join, never re-armed: the pick ended as
"0.000 ± 0.036 kg, ok" with 2.805 kg on the flange (78σ off) and the place as "3.3 kg, ok" on an empty flange. The
rule asserted: a misfit that persists in motion is never left under a payload published as ok; the carried
payload ends within 3σ of the truth, and a payload still reported ok must be the truth.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.monitor import EventKind
from payload_id_core.monitor.replay import replay
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id.result import RobotIdentification

pytestmark = requires_ur10e_data

LOAD_KG = 2.805     # the README's load
UNLOADED, LOADED = "ur-20_01_31-unload.csv", "ur-20_01_31-load.csv"


@pytest.fixture(scope="module")
def ur10e(ur10e_robot_yaml):
    model = RobotModel.from_urdf(DATA / "ur10e.urdf")
    robot = RobotIdentification.load(ur10e_robot_yaml, model)
    return model, robot, model.payload_frame(None)


def _joined(first: str, second: str, path):
    """The two recordings one after the other, the second's time continued from the first's."""
    a = np.loadtxt(DATA / first, delimiter=",")
    b = np.loadtxt(DATA / second, delimiter=",")
    b[:, 0] += a[-1, 0] + float(np.median(np.diff(a[:, 0]))) - b[0, 0]
    np.savetxt(path, np.vstack([a, b]), delimiter=",", fmt="%.6f")
    return a[-1, 0] - a[0, 0]         # s from the start to the join


def _run(ur10e, first, second, tmp_path):
    model, robot, frame = ur10e
    join = _joined(first, second, tmp_path / "joined.csv")
    rec = read_ur_csv(tmp_path / "joined.csv", robot.effort_scale, joint_names=model.joint_names)
    result = replay(model, robot, frame, rec.joints)
    return join, rec.joints.t[0], result


@pytest.mark.parametrize("first,second,carried", [
    pytest.param(UNLOADED, LOADED, LOAD_KG, id="pick"),
    pytest.param(LOADED, UNLOADED, 0.0, id="place")])
def test_a_real_pick_or_place_is_never_left_under_an_ok_payload(ur10e, tmp_path, first, second, carried):
    join, t0, result = _run(ur10e, first, second, tmp_path)
    final = result.final_payload()
    assert final is not None
    # What is carried at the end, with its σ: within 3σ of the truth (before: 0.000 ± 0.036 kg for 2.805 kg).
    assert abs(final.mass - carried) <= 3.0 * float(np.sqrt(final.covariance[0, 0])), \
        f"carried {final.mass:.3f} ± {np.sqrt(final.covariance[0, 0]):.3f} kg at the end, truth {carried} kg"
    # Over the last 10 s of the second run's motion (it rests from ~28 s after its start), too.
    late = (result.t - t0 > join + 17.0) & (result.t - t0 < join + 27.0)
    assert np.any(late)
    off = np.abs(result.mass[late] - carried) / np.maximum(result.mass_std[late], 1e-9)
    # The working re-estimate on real data wanders to ~4σ of its robust σ within the carry (the final is within 3σ);
    # what must never happen again is the 60-80σ of a payload left standing. On the pick, the re-estimate restarted
    # by a window 17.6 s into the loaded run read 3.038 ± 0.043 kg 1.1 s later on 3 blocks, 5.4σ (strict xfail until
    # h159): its σ is now at least the model error's worst case within each block (refine.RefinedCovariance.
    # floor_mass_var) while the blocks are too few for the sandwich, ± 0.139 kg.
    assert float(np.max(off)) <= 5.0, f"the carried mass is {np.max(off):.0f}σ off the truth during the carry"
    # The change is named, once, in its direction (before: the place never was), and what is carried at the end is
    # ok: a named load the motion since has not refuted answers the doubt its lasting misfit raised (before: both
    # ended suspect, 2.676 ± 0.116 kg and 0.000 ± 0.046 kg).
    right = EventKind.PICKED if carried > 0 else EventKind.PLACED
    assert len([e for e in result.events if e.kind is right and e.t_change - t0 > join]) == 1, result.events
    assert final.quality is Quality.OK, final.quality_reasons
    # No load event in the wrong direction after the join (a pick is never a place, nor the reverse).
    wrong = EventKind.PLACED if carried > 0 else EventKind.PICKED
    assert not [e for e in result.events if e.kind is wrong and e.t_change - t0 > join]
    # A load named after the join is the one that changed, to 3σ.
    for e in result.events:
        if e.is_load_change and e.t_change - t0 > join:
            assert abs(abs(e.delta_mass) - LOAD_KG) <= 3.0 * e.delta_mass_std, e


@pytest.fixture(scope="module")
def ur10e_measured(ur10e_held_out_robot_yaml):
    """`ur10e` with robot.yaml's model error measured on the 15harm and 01_31 unloaded runs (bench/ur10e.py's user
    path): the re-estimate reads its running record (monitor/held_out.py)."""
    model = RobotModel.from_urdf(DATA / "ur10e.urdf")
    robot = RobotIdentification.load(ur10e_held_out_robot_yaml, model)
    return model, robot, model.payload_frame(None)


_REPLAYED: dict = {}


def _replayed(ur10e_measured, loaded: str):
    """(t0, Replay) of a loaded run replayed from nothing carried (rated payload 12.5 kg), once per module."""
    if loaded not in _REPLAYED:
        model, robot, frame = ur10e_measured
        rec = read_ur_csv(DATA / loaded, robot.effort_scale, joint_names=model.joint_names)
        _REPLAYED[loaded] = (rec.joints.t[0], replay(model, robot, frame, rec.joints, rated_payload_kg=12.5))
    return _REPLAYED[loaded]


@pytest.mark.parametrize("loaded", ["ur-20_02_19_14harm50secLoad.csv", "ur-20_02_19_15harm50secLoad.csv"])
def test_a_load_on_from_the_start_is_published_with_the_model_error_the_held_out_runs_measured(ur10e_measured, loaded):
    """A loaded run replayed from nothing carried (the 2.805 kg load on from the start), robot.yaml with held-out
    runs. The re-estimate's published σ reads robot.yaml's running model error at how well its rows determine the mass
    (monitor/held_out.py), as the identify goal's does: before, it published 15harm's carry at up to 3.91σ off over its
    first 21 s (14harm 2.90σ); now 2.18σ (1.84σ). From 26.8 s 15harm adopted a contact window's 0.1 s fit (3.348 ±
    0.110 kg, 4.9σ, for 1 s, no re-estimate behind it); since h171 the window's σ takes in the robot model's error on
    its rows (PayloadMonitor._window_published_extra): the whole carry is read, 15harm at most 2.40σ, 14harm 1.46σ."""
    model, robot, frame = ur10e_measured
    t0, result = _replayed(ur10e_measured, loaded)
    picks = [e for e in result.events if e.kind is EventKind.PICKED]
    assert len(picks) == 1 and not [e for e in result.events if e.kind is EventKind.PLACED], result.events
    assert abs(picks[0].delta_mass - LOAD_KG) <= 3.0 * picks[0].delta_mass_std, picks[0].mass_change_text
    carry = result.mass > 0.5
    assert np.count_nonzero(carry) > 600
    off = np.abs(result.mass[carry] - LOAD_KG) / result.mass_std[carry]
    assert float(np.max(off)) <= 3.0, f"{np.max(off):.2f}σ at {result.t[carry][np.argmax(off)] - t0:.2f} s"


def test_a_contact_windows_fit_is_published_with_the_model_error_of_its_rows(ur10e_measured):
    """01_31-load from nothing carried: a window at 18.7 s fitted 3.416 ± 0.070 kg for 2.805 kg and stood as the carried
    payload for 0.4 s (the replay's trace at 3.416 ± 0.089 kg, 6.8σ) before its re-estimate took over. Its rows' model
    error (the worst case within the window, ± 0.18 kg; robot.yaml's held-out error at the window's information,
    ± 0.40 kg) is in its σ now: ± 0.453 kg, 1.35σ."""
    t0, result = _replayed(ur10e_measured, "ur-20_01_31-load.csv")
    s = result.t - t0
    window = (s > 18.6) & (s < 19.1) & (result.mass > 3.3)
    assert np.count_nonzero(window) >= 5, "the window at 18.7 s was not adopted"
    off = np.abs(result.mass[window] - LOAD_KG) / result.mass_std[window]
    assert float(np.max(off)) <= 3.0, f"{np.max(off):.2f}σ"
    # Not widened beyond what its rows' model error says: well under 10× its own ± 0.070 kg.
    assert float(np.max(result.mass_std[window])) < 0.7


@pytest.mark.parametrize("loaded", ["ur-20_01_31-load.csv", "ur-20_02_19_15harm50secLoad.csv"])
def test_the_payload_at_an_upright_pose_is_not_given_a_sigma_of_tens_of_kg(ur10e_measured, loaded):
    """Both runs end at rest with the arm upright, where no joint feels the flange's mass: the alarm's floor there is
    98.5 kg (01_31) and 25.6 kg (15harm), and the carried payload was published as 2.836 ± 49.267 kg and 2.828 ±
    12.781 kg. A change hidden below the floor can move the mass no more than a place takes off (what is carried) or a
    pick adds (1.5 × the rated 12.5 kg, less what is carried): σ is half that now, ± 7.96 kg, and says so."""
    _, result = _replayed(ur10e_measured, loaded)
    end = result.payload
    assert end is not None and result.floor_kg > 20.0
    std = float(np.sqrt(end.covariance[0, 0]))
    reach = max(end.mass, 18.75 - end.mass)
    assert std == pytest.approx(reach / 2, rel=1e-6), (end.mass, std)
    assert abs(end.mass - LOAD_KG) <= 3.0 * float(np.sqrt(result.state.published_part[1][0, 0]))
    assert any("the most a change can move the mass" in n.text for n in end.notes), [n.text for n in end.notes]
