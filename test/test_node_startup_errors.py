"""A node started with a robot or URDF that does not exist stops at once: exit code 2 and one line naming
what is missing and what exists (issue 14, bad launch arguments). `ros2 launch` passes the launch file's
robot/urdf arguments as the `urdf` parameter, which is what these start the installed executables with."""

import subprocess

import pytest

from payload_id_core.dynamics import model as model_module
from payload_id_core.errors import PayloadIdError
from payload_id_ros.supervisor import cell_environment, executable_path

NODES = ("payload_estimator", "excitation_player", "mock_hardware")


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("urdf, missing", [("nosuchrobot", "unknown robot 'nosuchrobot'"),
                                           ("/nonexistent/cell.urdf", "URDF file /nonexistent/cell.urdf")])
def test_a_node_with_a_missing_robot_exits_at_start_naming_what_exists(node, urdf, missing, ros_env):
    proc = subprocess.run([executable_path(node), "--ros-args", "-p", f"urdf:={urdf}"],
                          env=cell_environment(base=ros_env), capture_output=True, text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{node}: error: {missing}")
    # What exists: every bundled robot is named in the fix.
    for robot in model_module.known_robots():
        assert robot in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_known_robots_are_the_bundled_and_example_robot_data_urdfs():
    assert {"ur10", "ur10e", "panda", "planar_2r"} <= set(model_module.known_robots())
    for robot in model_module.known_robots():
        assert model_module.bundled_urdf(robot).is_file()


def test_without_example_robot_data_its_robots_say_how_to_get_it(monkeypatch):
    # A ROS install whose pinocchio came from apt has no cmeel prefix: ur10 / panda need the pip wheel.
    monkeypatch.setattr(model_module, "_example_robot_data_dir", lambda: None)
    with pytest.raises(PayloadIdError) as err:
        model_module.bundled_urdf("ur10")
    assert "example-robot-data is not installed" in str(err.value)
    assert "pip install example-robot-data" in err.value.fix
    # The repository's own URDFs do not need it.
    assert model_module.bundled_urdf("ur10e").is_file()


def test_an_estimator_with_a_payload_frame_the_urdf_lacks_exits_at_start_naming_the_frames(ros_env):
    # The frame is resolved once, at start (RobotModel.payload_frame): no goal ever meets an unchecked one.
    proc = subprocess.run([executable_path("payload_estimator"), "--ros-args", "-p", "urdf:=ur10",
                           "-p", "payload_frame:=no_such_link"],
                          env=cell_environment(base=ros_env), capture_output=True, text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("payload_estimator: error: frame 'no_such_link' is not in the URDF")
    assert "tool0" in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
