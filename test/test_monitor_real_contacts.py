"""The payload monitor on real UR10e collision recordings (issue 31): the arm moving while a person strikes or pushes
the named link (contact-collision_*.csv, 25 columns), and the same motion untouched (contact-collision_free.csv).

Nothing here is simulated and nobody published when the contacts happened, so the strikes below were read from the
recordings: each is a torque of 20-70 N·m on the first three joints against the collision-free run at the same
joint state (nearest position and velocity), lasting 0.05-0.5 s, which the robot model's residual shows as well.
Every one must be reported as a contact; no event may be a load change (nothing was picked: the flange is empty
throughout); the collision-free run and the static validation poses must give no event at all.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.monitor import EventKind
from payload_id_core.monitor.replay import replay
from payload_id_core.robot_id.result import RobotIdentification

pytestmark = requires_ur10e_data

# s from the file's first sample: the strikes read from each recording (module docstring).
STRIKES = {
    "contact-collision_2link.csv": [6.0, 10.3, 27.2, 32.0],
    "contact-collision_3link.csv": [4.9, 7.2, 11.3, 13.75, 16.2, 20.1, 24.5, 28.5, 39.0, 47.4, 54.3],
    "contact-collision_wrist.csv": [4.8, 7.7, 11.5, 15.3, 19.3, 23.2, 26.8],
}
# Known misses: strikes the monitor sees (it alarms) but folds into its estimate as no significant change, which is
# not reported. Asserted here not to be loads, and listed so that the day they are found as contacts is noticed.
# None left: the two short strikes on the lift joint (31 and 36 N·m for 0.1 s, 2nd and 3rd-link runs at 6.0 and
# 4.9 s) were alarmed on at their peak and folded; a residual beyond the alarm's allowance at the change that
# leaves no load is a transient (detect.classify).
KNOWN_FOLDED: dict[str, list[float]] = {}
# A contact's reported change time against the strike's listed time: the torque builds up over up to 0.4 s.
MATCH_S = 0.4


@pytest.fixture(scope="module")
def ur10e(ur10e_robot_yaml):
    model = RobotModel.from_urdf(DATA / "ur10e.urdf")
    robot = RobotIdentification.load(ur10e_robot_yaml, model)
    return model, robot, model.payload_frame(None)


def _replay(ur10e, name):
    model, robot, frame = ur10e
    rec = read_ur_csv(DATA / name, robot.effort_scale, joint_names=model.joint_names)
    return rec.joints.t[0], replay(model, robot, frame, rec.joints)


@pytest.mark.parametrize("name", sorted(STRIKES))
def test_every_real_strike_is_a_contact_and_nothing_is_a_load(ur10e, name):
    t0, result = _replay(ur10e, name)
    loads = [e for e in result.events if e.kind is not EventKind.CONTACT]
    assert not loads, f"a load change reported on an empty flange: {loads}"
    found = [e.t_change - t0 for e in result.events]
    missed = [s for s in STRIKES[name] if not any(abs(t - s) <= MATCH_S for t in found)]
    assert missed == KNOWN_FOLDED.get(name, []), \
        f"strikes at {missed} s not reported (contacts at {np.round(found, 2).tolist()} s)"
    # The flange stays empty: what the monitor carries at the end is nothing, or (a strike in the last seconds
    # still being re-estimated) an unsettled fit, which is not published, whose 3σ takes in nothing.
    assert result.state is not None
    assert result.state.carries_nothing if result.state.determined else \
        abs(float(result.mass[-1])) < 3.0 * float(result.mass_std[-1])
    # An unsettled fit is not reported as a converged payload (the 3rd-link run ends 2.7 s after its last strike, whose
    # change is still being re-estimated: "0.000 ± 0.283 kg" was given as converged and ok).
    final = result.final_payload()
    assert final is not None and final.converged == result.state.determined
    if not result.state.determined:
        assert any("still being re-estimated" in note.text for note in final.notes), final.notes


@pytest.mark.parametrize("name", ["contact-collision_free.csv", "validation-p1.csv", "validation-p2.csv",
                                  "validation-p3.csv"])
def test_no_event_without_contact(ur10e, name):
    _, result = _replay(ur10e, name)
    assert result.events == []
    assert result.paused == []
    assert result.t.size > 100 and np.all(np.isfinite(result.residual))


def test_payload_id_monitor_replays_a_recording_as_the_node_would(ur10e, ur10e_robot_yaml, tmp_path, capsys):
    """`payload-id monitor`: the same events as the replay above, written as events.yaml, and the plot."""
    name = "contact-collision_wrist.csv"
    out, png = tmp_path / "events.yaml", tmp_path / "events.png"
    code = cli_main(["monitor", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(ur10e_robot_yaml),
                     "--csv-ur", str(DATA / name), "--out", str(out), "--plot", str(png)])
    assert code == 0
    doc = yaml.safe_load(out.read_text())
    t0, result = _replay(ur10e, name)
    assert [e["kind"] for e in doc["events"]] == [e.kind.value for e in result.events]
    assert all(e["kind"] == "contact" and e["delta_mass"] is None for e in doc["events"])
    assert set(doc["events"][0]) == {"kind", "t_change", "t_change_located", "t_alarm", "delta_mass", "delta_mass_std",
                                     "reason"}
    # Contacts seen armed are dated by their own window: located.
    assert all(e["t_change_located"] is True for e in doc["events"])
    assert [e["t_change"] for e in doc["events"]] == pytest.approx([e.t_change for e in result.events], abs=1e-5)
    # What the recording's end left undecided is said, not dropped (PayloadMonitor.undecided).
    assert [u["t_change"] for u in doc["undecided"]] == pytest.approx([u.t_change for u in result.undecided], abs=1e-5)
    # The fit's own σ, and the σ ~/payload would publish: at least half the alarm's floor (h143; it was the fit's).
    assert doc["payload"]["mass"] == 0.0 and 0 < doc["payload"]["mass_std_fit"] < 0.1
    assert doc["payload"]["mass_std"] == pytest.approx(max(doc["payload"]["floor"] / 2, doc["payload"]["mass_std_fit"]),
                                                       rel=1e-4)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"{len(result.events)} events" in capsys.readouterr().out


@pytest.mark.parametrize(("change", "problem"), [
    ({"--csv-ur": "missing.csv"}, "does not exist"),
    ({"--plot": "events.svg"}, "is not a .png file"),
    ({"--frame": "no_such_frame"}, "no_such_frame"),
])
def test_payload_id_monitor_bad_input_is_one_line_exit_2_and_no_file(ur10e_robot_yaml, tmp_path, capsys, change,
                                                                      problem):
    args = {"--urdf": str(DATA / "ur10e.urdf"), "--robot": str(ur10e_robot_yaml),
            "--csv-ur": str(DATA / "contact-collision_free.csv"), "--out": str(tmp_path / "events.yaml")}
    args.update({k: str(tmp_path / v) if k != "--frame" else v for k, v in change.items()})
    code = cli_main(["monitor"] + [x for kv in args.items() for x in kv])
    err = capsys.readouterr().err
    assert code == 2 and problem in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
