"""The README's robot-cell commands name what the code serves (issue 33 item 4): rosdep, apt and a real driver
cannot run here, so what can be checked is that every name in them is right: the Excite goal's fields, the
player's action, the recorded topics the readers default to, the identify-robot flags, and the pip keys skipped
being the package.xml keys installed by pip instead."""

import re
from pathlib import Path

from payload_id_core.cli import identify_robot
from payload_id_core.cli.main import build_parser
from payload_id_core.io.bag import JOINT_TOPIC, TRAJECTORY_TOPIC

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
CELL = README[README.index("## On a robot cell"):README.index("## Package map")]


def _action_fields(name: str) -> set[str]:
    goal = (REPO / "src" / "payload_id_msgs" / "action" / f"{name}.action").read_text().split("---")[0]
    return {line.split()[1] for line in goal.splitlines() if line.strip() and not line.startswith("#")}


def test_the_excite_goals_are_the_players_action_with_its_fields():
    goals = re.findall(r"send_goal (\S+) payload_id_msgs/action/Excite \\\n\s+\"\{(.*?)\}\"", CELL)
    assert len(goals) == 2, goals
    player = (REPO / "src" / "payload_id_ros" / "payload_id_ros" / "excitation_player.py").read_text()
    assert 'ActionServer(self, Excite, "~/excite"' in player
    for action, fields in goals:
        assert action == "/excitation_player/excite"
        assert {f.split(":")[0].strip() for f in fields.split(",")} == _action_fields("Excite")
    config = (REPO / "config" / "ur10e.yaml").read_text()
    assert re.search(r"^\s+trajectory: ur10e_payload\b", config, re.MULTILINE)   # the goals' trajectory


def test_the_recorded_topics_are_what_identify_robot_reads():
    records = re.findall(r"ros2 bag record -o \S+ (.*?) &", CELL)
    assert len(records) == 2 and all(r.split() == [JOINT_TOPIC, TRAJECTORY_TOPIC] for r in records), records


def test_the_identify_robot_line_uses_flags_it_has():
    line = re.search(r"payload-id identify-robot (.*?)\n\s+--out", CELL, re.DOTALL)
    assert line, "no UR identify-robot line"
    used = set(re.findall(r"(--[a-z-]+)", line.group(1)))
    assert {"--loaded-bag", "--known-payload-mass"} <= used     # UR drivers report currents: the drive gains
    _, subparsers = build_parser({})
    identify_robot.add_arguments(subparsers["identify-robot"])
    flags = {s for a in subparsers["identify-robot"]._actions for s in a.option_strings}
    assert used <= flags, used - flags


def test_the_skipped_pip_keys_are_the_ones_pip_installs_into_the_venv():
    skipped = set(re.search(r'--skip-keys "([^"]+)"', CELL).group(1).split())
    declared = {key for package in ("payload_id_core", "payload_id_ros")
                for key in re.findall(r"<exec_depend>(python3-[\w-]+-pip)</exec_depend>",
                                      (REPO / "src" / package / "package.xml").read_text())}
    assert skipped == declared
    installed = re.search(r"pip install -c system-numpy.txt (.*)", CELL).group(1).split()
    assert {k.removeprefix("python3-").removesuffix("-pip") for k in skipped} <= set(installed)
    assert "externally-managed-environment" in CELL and "--system-site-packages" in CELL
