"""config/payload_id.rviz: the structure rviz2 writes, rviz_default_plugins classes only, and display topics
that the running estimator really publishes, with a type and QoS rviz can subscribe to."""

import re
import time
from pathlib import Path

import pytest
import yaml
from ros_cell.assets import make_robot_yaml, make_trajectory

from payload_id_core.dynamics.display_urdf import display_urdf
from payload_id_core.dynamics.model import RobotModel
from payload_id_ros.supervisor import Supervisor

REPO = Path(__file__).resolve().parents[1]
SHARE_SOURCE = REPO   # launch/ and config/: at the repository root, installed into share/payload_id_ros
CONFIG = yaml.safe_load((SHARE_SOURCE / "config" / "payload_id.rviz").read_text())
DISPLAYS = {d["Class"]: d for d in CONFIG["Visualization Manager"]["Displays"]}

# rviz_default_plugins/plugins_description.xml (ros2/rviz, Humble to Rolling): the classes this file may use.
DEFAULT_PLUGINS = {f"rviz_default_plugins/{c}" for c in (
    "Grid", "RobotModel", "TF", "MarkerArray", "Marker", "Wrench", "Axes", "Pose", "Orbit", "XYOrbit",
    "Interact", "MoveCamera", "Select", "FocusCamera", "Measure", "PublishPoint")}
RVIZ_COMMON_PANELS = {f"rviz_common/{c}" for c in ("Displays", "Selection", "Tool Properties", "Views", "Time")}
# What each display subscribes to: (message type of the estimator's publisher).
MESSAGE_TYPE = {"rviz_default_plugins/MarkerArray": "visualization_msgs/msg/MarkerArray",
                "rviz_default_plugins/Wrench": "geometry_msgs/msg/WrenchStamped"}


def test_structure_is_what_rviz2_writes():
    assert set(CONFIG) == {"Panels", "Visualization Manager", "Window Geometry"}
    manager = CONFIG["Visualization Manager"]
    assert {"Class", "Displays", "Global Options", "Tools", "Views"} <= set(manager)
    assert {p["Class"] for p in CONFIG["Panels"]} <= RVIZ_COMMON_PANELS
    classes = [d["Class"] for d in manager["Displays"]] + [t["Class"] for t in manager["Tools"]]
    classes.append(manager["Views"]["Current"]["Class"])
    assert set(classes) <= DEFAULT_PLUGINS, set(classes) - DEFAULT_PLUGINS
    assert {"rviz_default_plugins/RobotModel", "rviz_default_plugins/TF", "rviz_default_plugins/MarkerArray",
            "rviz_default_plugins/Wrench"} <= set(DISPLAYS)
    assert all(d["Enabled"] is True for d in manager["Displays"])


def test_fixed_frame_is_the_ur_base_and_the_robot_model_reads_robot_state_publisher():
    frame = CONFIG["Visualization Manager"]["Global Options"]["Fixed Frame"]
    for robot in ("ur10", "ur10e"):
        assert RobotModel.from_urdf(robot).model.existFrame(frame), robot
    model = DISPLAYS["rviz_default_plugins/RobotModel"]
    # robot_state_publisher publishes /robot_description once, transient local: a late rviz still gets it.
    assert model["Description Source"] == "Topic"
    assert model["Description Topic"]["Value"] == "/robot_description"
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"


@pytest.mark.parametrize("robot", ["ur10", "ur10e", "panda"])
def test_display_urdf_meshes_resolve_without_ament(robot):
    text = display_urdf(robot)
    assert "package://" not in text
    uris = re.findall(r'filename="file://([^"]+)"', text)
    assert all(Path(u).is_file() for u in uris)
    assert robot == "ur10e" or len(uris) >= 10     # the bundled ur10e has no meshes; the others do


@pytest.fixture(scope="module")
def estimator(ros_env, tmp_path_factory):
    assets = tmp_path_factory.mktemp("assets")
    make_trajectory(assets / "traj.yaml", duration=4.0)
    make_robot_yaml(assets / "robot.yaml")
    sup = Supervisor(cell="identify", robot="ur10", env=ros_env, log_dir=tmp_path_factory.mktemp("logs"),
                     overrides={"payload_estimator": {"robot_yaml": str(assets / "robot.yaml"),
                                                      "trajectory": str(assets / "traj.yaml")}})
    sup.start(only=["payload_estimator"])
    try:
        sup.wait_for_log("payload_estimator", "payload estimator ready", 180)   # 2 shared cores: startup can be slow
        yield sup
    finally:
        sup.stop()


@pytest.mark.slow
def test_display_topics_are_published_by_the_estimator_with_compatible_qos(estimator):
    import rclpy  # noqa: PLC0415 - only this cross-process test talks to the graph
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy  # noqa: PLC0415 - same

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("rviz_config_probe", context=context)
    try:
        for cls, msg_type in MESSAGE_TYPE.items():
            topic = DISPLAYS[cls]["Topic"]
            deadline, infos = time.monotonic() + 60, []
            while time.monotonic() < deadline and not infos:
                infos = [i for i in node.get_publishers_info_by_topic(topic["Value"])
                         if i.node_name == "payload_estimator"]
                time.sleep(0.2)
            assert infos, f"the estimator does not publish {topic['Value']} (display {cls})"
            (info,) = infos
            assert info.topic_type == msg_type
            qos = info.qos_profile
            # A reliable subscriber never matches a best-effort publisher; transient local needs one that keeps.
            if topic["Reliability Policy"] == "Reliable":
                assert qos.reliability == ReliabilityPolicy.RELIABLE, cls
            if topic["Durability Policy"] == "Transient Local":
                assert qos.durability == DurabilityPolicy.TRANSIENT_LOCAL, cls
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
