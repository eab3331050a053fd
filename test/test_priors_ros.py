"""What is known of the payload, across processes (issue 30 item 2; h148): the estimator and the player started by the
supervisor as the launch file does, a kinematic fake robot carrying a 2 kg part (test/ros_cell/fake_hardware.py,
CoM [20, -10, 60] mm on tool0), a probe client.

- ~/payload said nothing of the priors; only the goal's result message said, in its text, a part not applied. The
  published estimate (and the result's) now carries the box and the known mass as given, what they pinned or bounded,
  and the parts not applied with why.
(A node without a rated payload, across processes: test_mass_limit_ros.py; two cells in one module would share the
node names while both live.)
"""

from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines

HERE = Path(__file__).parent / "ros_cell"
pytestmark = pytest.mark.slow

PART_KG = 2.0                                   # the fake hardware's part (its PAYLOAD_COM: [0.02, -0.01, 0.06] m)
BOX = [-0.08, -0.1, -0.02, 0.1, 0.1, 0.16]      # m: holds the part, not centred on its CoM


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("priors_assets")
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml")
    return d


def _identify(spawn, *extra, timeout=60):
    probe = spawn(str(HERE / "probe.py"), "identify", "--method", "direct-rls", "--rest-window", "0.2", *extra)
    out, err = probe.communicate(timeout=timeout)
    lines = json_lines(out)
    final = next((d for d in lines if "status" in d), None)
    assert final is not None, (out, err)
    return final, next((d for d in lines if "trajectories" in d), {})


def _latest(spawn) -> dict:
    probe = spawn(str(HERE / "probe.py"), "latest", "--timeout", "15")
    out, err = probe.communicate(timeout=40)
    got = json_lines(out)[-1]
    assert "mass" in got, (out, err)
    return got


def _hardware(spawn, mass: float = 0.0):
    proc = spawn(str(HERE / "fake_hardware.py"), "normal", "ur10", str(mass))
    assert "fake hardware ready" in proc.stdout.readline()
    return proc


@pytest.fixture(scope="module")
def nodes(assets, ros_env, tmp_path_factory):
    with identify_nodes(ros_env, tmp_path_factory.mktemp("priors_logs"), assets) as sup:
        yield sup


def test_the_published_payload_says_the_priors_used(nodes, spawn):
    fake = _hardware(spawn, PART_KG)
    final, _ = _identify(spawn, "--known-mass", str(PART_KG), "--bounding-box", *map(str, BOX))
    assert final["status"] == "succeeded" and final["quality"] == "ok", final
    assert abs(final["mass"] - PART_KG) < 0.01, final
    latest = _latest(spawn)
    assert latest["mass"] == pytest.approx(final["mass"], abs=1e-12)
    for said in (final, latest):             # the result's estimate and ~/payload alike
        assert said["bounding_box"] == pytest.approx(BOX) and said["known_mass"] == PART_KG
        assert said["known_mass_std"] == pytest.approx(0.005 * PART_KG)      # the default: 0.5 % of the mass
        assert "known_mass" not in said["prior_not_applied"], said
    fake.terminate()


def test_a_prior_the_data_contradict_is_published_as_not_applied_with_the_reason(nodes, spawn):
    """A weighed mass 50 % above the part's: the data's estimate stays, suspect, and ~/payload says which parts of the
    prior were not used and why (before: nothing on ~/payload; the result's text only)."""
    fake = _hardware(spawn, PART_KG)
    final, _ = _identify(spawn, "--known-mass", str(1.5 * PART_KG), "--bounding-box", *map(str, BOX))
    assert final["status"] == "succeeded" and final["quality"] == "suspect", final
    assert abs(final["mass"] - PART_KG) < 0.01, final        # the data's, not forced towards 3 kg
    latest = _latest(spawn)
    for said in (final, latest):
        assert said["known_mass"] == 1.5 * PART_KG and said["bounding_box"] == pytest.approx(BOX)
        assert set(said["prior_not_applied"]) == {"bounding_box", "known_mass"}, said
        assert all(why.startswith("the data contradict the prior") and "known mass" in why
                   for why in said["prior_not_applied"].values()), said["prior_not_applied"]
        assert said["prior_pinned"] == [] and said["prior_bounded"] == []
    assert "known mass given but NOT applied" in final["message"]
    fake.terminate()
