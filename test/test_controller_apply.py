"""Issue 14 item 5: applying the identified payload to the controller, against fake UR / Franka services.

Across processes: the estimator and the player (the supervisor's identify cell, config/ur10.yaml), the
kinematic fake robot of test/ros_cell/fake_hardware.py carrying a known payload (a fixed link on tool0 in
its URDF), and test/ros_cell/fake_controller.py serving UR's set_payload or Franka's set_load from the
test-only interface packages (test/interfaces, built once per session: ros_cell/controller_interfaces.py)
and recording every request. The refusals that happen before anything is sent are tested in-process
with a node that fails the test if a client is created.
"""

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml
from ros_cell.assets import DRIVE_NOISE, make_robot_yaml, make_trajectory
from ros_cell.controller_interfaces import build_prefix, environment
from ros_cell.json_lines import json_lines

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_ros.controller_payload import (
    ApplyStatus,
    ControllerKind,
    ControllerPayload,
    ControllerSettings,
    PayloadForController,
    apply_status,
    controller_frame_transform,
)
from payload_id_ros.conversions import fill_ur_set_payload
from payload_id_ros.supervisor import Supervisor

HERE = Path(__file__).parent / "ros_cell"
MASS = 2.0
COM = np.array([0.02, -0.01, 0.05])                 # in tool0
INERTIA = np.array([[0.010, 0.001, 0.0], [0.001, 0.012, -0.0005], [0.0, -0.0005, 0.008]])   # about the CoM


# -- in-process: refusals before anything is sent ------------------------------------------------------
class _Logger:
    def __init__(self):
        self.lines = []

    def warn(self, text):
        self.lines.append(text)

    info = warn


class _NoControllerNode:
    """Stands in for the estimator node: any attempt to reach a controller fails the test."""

    def __init__(self):
        self.logger = _Logger()

    def get_logger(self):
        return self.logger

    def create_client(self, *args):
        raise AssertionError("the estimate reached the controller")


def _estimate(mass=MASS, com=COM, inertia=INERTIA, quality=Quality.OK) -> PayloadEstimate:
    phi = np.array([mass, *(mass * np.asarray(com)), 0, 0, 0, 0, 0, 0], dtype=float)
    if mass > 0:
        phi = from_mass_com_inertia(mass, com, inertia)
    est = PayloadEstimate("tool0", phi, np.eye(10) * 1e-6, "direct-rls")
    if quality is not Quality.OK:
        est.mark(quality, "model error ratio 5.0 above 3")
    return est


SETTINGS = ControllerSettings(ControllerKind.UR, rated_payload_kg=10.0)


@pytest.mark.parametrize("est, settings, status", [
    (_estimate(mass=0.0), SETTINGS, ApplyStatus.REFUSED_RANGE),
    (_estimate(mass=-0.3), SETTINGS, ApplyStatus.REFUSED_RANGE),
    (_estimate(mass=10.5), SETTINGS, ApplyStatus.REFUSED_RANGE),                     # above the rated 10 kg
    (_estimate(), ControllerSettings(ControllerKind.UR), ApplyStatus.REFUSED_RANGE),  # rated payload not set
    (_estimate(inertia=np.diag([0.001, 0.001, 0.05])), SETTINGS, ApplyStatus.REFUSED_RANGE),  # no such body
    (_estimate(quality=Quality.SUSPECT), SETTINGS, ApplyStatus.REFUSED_QUALITY),
])
def test_out_of_range_or_suspect_estimates_are_refused_before_anything_is_sent(est, settings, status):
    node = _NoControllerNode()
    applied, message = ControllerPayload(node, settings=settings).apply(est)
    assert applied is False
    assert apply_status(message) is status
    assert node.logger.lines == [message]


def test_an_unidentified_com_is_refused():
    est = _estimate()
    est.identifiable = np.array([True, True, False, True] + [True] * 6)
    applied, message = ControllerPayload(_NoControllerNode(), settings=SETTINGS).apply(est)
    assert not applied and apply_status(message) is ApplyStatus.REFUSED_RANGE


def test_the_suspect_override_does_not_lift_the_range_checks():
    est = _estimate(mass=12.0, quality=Quality.SUSPECT)
    applied, message = ControllerPayload(_NoControllerNode(), settings=SETTINGS).apply(est, even_if_suspect=True)
    assert not applied and apply_status(message) is ApplyStatus.REFUSED_RANGE


def test_the_empty_payload_passes_only_where_the_monitor_asks_and_the_estimate_is_ok():
    """The monitor's "nothing carried" (φ = 0) goes on to the controller (here: to the skipped step, as no
    message package is importable in this process); a goal's zero mass, or a suspect empty one, never does."""
    empty = PayloadEstimate("tool0", np.zeros(10), np.eye(10) * 1e-4, "monitor")
    node = _NoControllerNode()
    _, message = ControllerPayload(node, settings=SETTINGS).apply(empty)
    assert apply_status(message) is ApplyStatus.REFUSED_RANGE
    _, message = ControllerPayload(node, settings=SETTINGS).apply(empty, empty_ok=True)
    assert apply_status(message) is ApplyStatus.SKIPPED
    empty.mark(Quality.SUSPECT, "model error ratio 5.0 above 3")
    _, message = ControllerPayload(node, settings=SETTINGS).apply(empty, empty_ok=True)
    assert apply_status(message) is ApplyStatus.REFUSED_QUALITY


def test_a_missing_message_package_skips_the_apply_step():
    """In this process neither ur_msgs nor franka_msgs is importable (the test packages are only on the
    children's path): the step is skipped with the reason, nothing raises."""
    node = _NoControllerNode()
    for kind in ControllerKind:
        applied, message = ControllerPayload(node, settings=ControllerSettings(kind, rated_payload_kg=10.0)).apply(
            _estimate())
        assert not applied and apply_status(message) is ApplyStatus.SKIPPED


def test_controller_frame_must_exist_and_ride_on_the_payload_body():
    model = RobotModel.from_urdf("ur10")
    with pytest.raises(PayloadIdError, match="controller_frame 'flange_x'"):
        controller_frame_transform(model, "tool0", "flange_x")
    with pytest.raises(PayloadIdError, match="not rigidly attached"):
        controller_frame_transform(model, "tool0", "forearm_link")
    assert np.array_equal(controller_frame_transform(model, "tool0", "tool0"), np.eye(10))


class _Namespace:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_ur_fill_handles_the_older_ur_msgs_without_inertia():
    """ur_msgs 2.x SetPayload.Request: mass + center_of_gravity only (no payload field)."""
    req = _Namespace(mass=0.0, center_of_gravity=_Namespace(x=0.0, y=0.0, z=0.0))
    fill_ur_set_payload(req, PayloadForController("tool0", MASS, COM, INERTIA))
    assert req.mass == MASS
    assert [req.center_of_gravity.x, req.center_of_gravity.y, req.center_of_gravity.z] == list(COM)
    assert not hasattr(req, "ixx")


# -- across processes: the fake cell and the fake controllers -----------------------------------------------
def _loaded_urdf(path: Path) -> Path:
    """The UR10 URDF with the payload as a link fixed to tool0: the fake robot's efforts include its torques."""
    text = RobotModel.from_urdf("ur10").urdf_path.read_text()
    i = INERTIA
    payload = f"""
  <link name="test_payload">
    <inertial>
      <origin xyz="{COM[0]} {COM[1]} {COM[2]}" rpy="0 0 0"/>
      <mass value="{MASS}"/>
      <inertia ixx="{i[0, 0]}" ixy="{i[0, 1]}" ixz="{i[0, 2]}" iyy="{i[1, 1]}" iyz="{i[1, 2]}" izz="{i[2, 2]}"/>
    </inertial>
  </link>
  <joint name="tool0-test_payload" type="fixed">
    <parent link="tool0"/>
    <child link="test_payload"/>
    <origin xyz="0 0 0" rpy="0 0 0"/>
  </joint>
</robot>"""
    path.write_text(text[: text.rindex("</robot>")] + payload)
    return path


def _requests(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def interfaces():
    return build_prefix()


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("apply_assets")
    make_trajectory(d / "traj.yaml", duration=4.0)
    make_robot_yaml(d / "robot.yaml")
    make_robot_yaml(d / "robot_noisy.yaml", noise_std=DRIVE_NOISE)
    _loaded_urdf(d / "ur10_loaded.urdf")
    return d


@pytest.fixture(scope="module")
def child_env(interfaces, ros_env):
    return environment(interfaces, ros_env)


def _cell(assets, child_env, log_dir, estimator: dict):
    sup = Supervisor(cell="identify", robot="ur10", env=child_env, log_dir=log_dir, overrides={
        "payload_estimator": {"robot_yaml": str(assets / "robot.yaml"), "trajectory": str(assets / "traj.yaml"),
                              "method": "direct-rls", "result_path": str(log_dir / "result.yaml"),
                              "controller_wait": 5.0, "controller_timeout": 2.0, **estimator}})
    sup.start()
    sup.wait_for_log("payload_estimator", "payload estimator ready", 60)
    sup.wait_for_log("excitation_player", "excitation player ready", 60)
    return sup


def _start(spawn, env, *args):
    proc = spawn(*args, env=env)
    first = proc.stdout.readline()
    assert "ready" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _identify(spawn, env, *extra):
    probe = spawn(str(HERE / "probe.py"), "identify", "--rest-window", "0.1", *extra, env=env)
    out, err = probe.communicate(timeout=120)
    final = next((d for d in json_lines(out) if "status" in d), None)
    assert final is not None, (out, err)
    return final


def _saved_estimate(sup: Supervisor) -> PayloadEstimate:
    path = sup.log_dir / "result.yaml"
    return PayloadEstimate.from_dict(yaml.safe_load(path.read_text()))


# Class scope: each class's cell stops before the next one starts (one estimator name in the domain).
@pytest.fixture(scope="class")
def ur_cell(assets, child_env, tmp_path_factory):
    sup = _cell(assets, child_env, tmp_path_factory.mktemp("ur_cell"), {})
    try:
        yield sup
    finally:
        sup.stop()


@pytest.fixture(scope="class")
def franka_cell(assets, child_env, tmp_path_factory):
    sup = _cell(assets, child_env, tmp_path_factory.mktemp("franka_cell"), {
        "controller": "franka", "controller_frame": "wrist_3_link", "rated_payload_kg": 3.0,
        "apply_to_controller": True})
    try:
        yield sup
    finally:
        sup.stop()


@pytest.mark.slow
class TestUrController:
    """controller: ur, controller_frame tool0 = the payload frame, rated 10 kg (config/ur10.yaml)."""

    @pytest.fixture
    def hardware(self, ur_cell, spawn, child_env, assets):
        return _start(spawn, child_env, str(HERE / "fake_hardware.py"), "normal", str(assets / "ur10_loaded.urdf"))

    def _controller(self, spawn, env, behaviour, out):
        return _start(spawn, env, str(HERE / "fake_controller.py"), "ur", behaviour, str(out))

    # First in the class, before any fake controller: one a previous test ended without leaving the DDS graph
    # cleanly (the silent one is interrupted inside its callback; under load the teardown may SIGKILL) stays
    # discoverable until its lease ends, and the goal then finds the service, waits and reports a timeout instead
    # of a missing service (seen once, in a CI run on a loaded machine).
    def test_a_missing_service_skips_the_apply_step_and_keeps_the_estimate(self, ur_cell, hardware, spawn, child_env):
        final = _identify(spawn, child_env, "--apply")
        assert final["status"] == "succeeded", final
        assert final["applied"] is False
        assert apply_status(final["message"]) is ApplyStatus.SKIPPED, final
        assert final["mass"] == pytest.approx(MASS, rel=0.02)

    def test_nothing_is_sent_unless_the_goal_asks(self, ur_cell, hardware, spawn, child_env, tmp_path):
        out = tmp_path / "requests.jsonl"
        self._controller(spawn, child_env, "accept", out)
        final = _identify(spawn, child_env)
        assert final["status"] == "succeeded", final
        assert final["applied"] is False and apply_status(final["message"]) is None
        assert _requests(out) == []

    def test_the_request_carries_the_identified_payload(self, ur_cell, hardware, spawn, child_env, tmp_path):
        out = tmp_path / "requests.jsonl"
        self._controller(spawn, child_env, "accept", out)
        final = _identify(spawn, child_env, "--apply")
        assert final["status"] == "succeeded", final
        assert final["applied"] is True and apply_status(final["message"]) is ApplyStatus.APPLIED, final
        (req,) = _requests(out)
        est = _saved_estimate(ur_cell)
        assert est.frame == "tool0"
        # The estimate as identified (tool0 is UR's tool flange frame): kg, m, kg m^2 about the CoM.
        assert req["mass"] == pytest.approx(est.mass, rel=1e-12)
        assert req["com"] == pytest.approx(list(est.com), abs=1e-12)
        assert np.allclose(req["inertia"], est.inertia_about_com, atol=1e-12)
        assert req["transition_time"] == 0.0
        # ... and it is the payload the fake robot carries.
        assert req["mass"] == pytest.approx(MASS, rel=0.02)
        assert np.linalg.norm(np.array(req["com"]) - COM) < 0.005

    def test_a_refusing_controller_is_reported(self, ur_cell, hardware, spawn, child_env, tmp_path):
        out = tmp_path / "requests.jsonl"
        self._controller(spawn, child_env, "refuse", out)
        final = _identify(spawn, child_env, "--apply")
        assert final["status"] == "succeeded", final
        assert final["applied"] is False
        assert apply_status(final["message"]) is ApplyStatus.CONTROLLER_REFUSED, final
        assert len(_requests(out)) == 1

    def test_a_silent_controller_times_out_and_is_reported(self, ur_cell, hardware, spawn, child_env, tmp_path):
        out = tmp_path / "requests.jsonl"
        self._controller(spawn, child_env, "silent", out)
        final = _identify(spawn, child_env, "--apply")
        assert final["status"] == "succeeded", final
        assert final["applied"] is False
        assert apply_status(final["message"]) is ApplyStatus.TIMEOUT, final
        assert len(_requests(out)) == 1


@pytest.mark.slow
class TestFrankaController:
    """controller: franka, the parameter apply_to_controller (the goal does not ask), and a controller frame
    (wrist_3_link) that differs from the payload frame (tool0: 0.0922 m along y and rotated -90 deg about x)."""

    def test_set_load_carries_the_payload_in_the_controller_frame(self, franka_cell, spawn, child_env, assets,
                                                                  tmp_path):
        _start(spawn, child_env, str(HERE / "fake_hardware.py"), "normal", str(assets / "ur10_loaded.urdf"))
        out = tmp_path / "requests.jsonl"
        _start(spawn, child_env, str(HERE / "fake_controller.py"), "franka", "accept", str(out))
        final = _identify(spawn, child_env)                  # no --apply: the parameter asks
        assert final["status"] == "succeeded", final
        assert final["applied"] is True and apply_status(final["message"]) is ApplyStatus.APPLIED, final
        (req,) = _requests(out)
        # The expected values from the URDF's frame placements (pinocchio), not from the code under test.
        model = RobotModel.from_urdf("ur10").model
        tool0 = model.frames[model.getFrameId("tool0")].placement
        wrist = model.frames[model.getFrameId("wrist_3_link")].placement
        tool0_in_wrist = wrist.inverse() * tool0
        est = _saved_estimate(franka_cell)
        moved = tool0_in_wrist.act(pin.Inertia(est.mass, est.com, est.inertia_about_com))
        assert req["mass"] == pytest.approx(est.mass, rel=1e-12)
        assert req["com"] == pytest.approx(list(moved.lever), abs=1e-9)
        assert np.allclose(req["inertia"], moved.inertia, atol=1e-9)
        assert np.allclose(req["inertia"], np.array(req["inertia"]).T)
        # The truth, moved the same way: the request is the payload, in the frame the controller takes.
        truth = tool0_in_wrist.act(pin.Inertia(MASS, COM, INERTIA))
        assert np.linalg.norm(np.array(req["com"]) - truth.lever) < 0.005


@pytest.fixture(scope="class")
def noisy_cell(assets, child_env, tmp_path_factory):
    """The UR cell on the robot.yaml of drives as noisy as the fake hardware's "noisy" and "drifted" modes."""
    sup = _cell(assets, child_env, tmp_path_factory.mktemp("noisy_cell"),
                {"robot_yaml": str(assets / "robot_noisy.yaml")})
    try:
        yield sup
    finally:
        sup.stop()


@pytest.mark.slow
class TestDriftedDrives:
    """Issue 29 (Bad input), across processes: a goal on drives whose gains are 5 % off those robot.yaml was
    identified with (the fake robot's noisy efforts × 1.05: warmer drives, gains given by hand). identify-payload
    calls such a run suspect (payload/effort_drift.py); the goal's estimate was converged, ok, +22 % (2.44 kg for 2.0
    in-process on this cell) and applied: the session ran no witness. Now the goal is judged by the same witnesses
    (payload/against_robot.py). At this noise (half a real UR10e's) the model-error check alone flags nothing."""

    def _goal(self, spawn, child_env, assets, tmp_path, mode):
        _start(spawn, child_env, str(HERE / "fake_hardware.py"), mode, str(assets / "ur10_loaded.urdf"))
        out = tmp_path / "requests.jsonl"
        _start(spawn, child_env, str(HERE / "fake_controller.py"), "ur", "accept", str(out))
        return _identify(spawn, child_env, "--apply"), _requests(out)

    def test_a_goal_on_drifted_drives_is_suspect_and_never_applied(self, noisy_cell, spawn, child_env, assets,
                                                                  tmp_path):
        """Not converged, suspect with the drift's reason in the result, nothing sent though the goal asks."""
        final, requests = self._goal(spawn, child_env, assets, tmp_path, "drifted")
        assert final["status"] == "succeeded", final
        assert final["mass"] > 1.05 * MASS, final          # the premise: the drift is in the mass
        assert final["converged"] is False and final["quality"] == "suspect", final
        reason = next((r for r in final["quality_reasons"] if "× robot.yaml's model of the arm" in r), "")
        assert reason.startswith("the identify goal's efforts are 1.0") and "identify-robot" in reason, final
        assert float(reason.split()[5]) == pytest.approx(1.05, abs=0.02), reason
        assert final["applied"] is False and apply_status(final["message"]) is ApplyStatus.REFUSED_QUALITY, final
        assert requests == []
        saved = _saved_estimate(noisy_cell)
        assert saved.quality is Quality.SUSPECT and not saved.converged

    def test_a_goal_on_the_same_drives_without_drift_is_ok_and_applied(self, noisy_cell, spawn, child_env, assets,
                                                                      tmp_path):
        """The witnesses judge the honest goal on the same cell and flag nothing: converged, ok, applied."""
        final, requests = self._goal(spawn, child_env, assets, tmp_path, "noisy")
        assert final["status"] == "succeeded", final
        assert final["quality"] == "ok" and final["converged"] is True, final
        assert final["applied"] is True and apply_status(final["message"]) is ApplyStatus.APPLIED, final
        (req,) = requests
        assert req["mass"] == pytest.approx(MASS, rel=0.03)
