"""Payload identification on a real cell: payload_estimator + excitation_player.

    ros2 launch payload_id_ros identify.launch.py robot:=ur10e method:=difference-rls \
        robot_yaml:=/path/robot.yaml [urdf:=/path/calibrated.urdf] [rviz:=true]

An unknown robot is refused by launch (the argument's choices); a urdf naming no file or robot stops
both nodes at start with one line naming it and the bundled robots.

rviz:=true also opens rviz2 with config/payload_id.rviz (robot model and TF from the cell's
robot_state_publisher, the estimator's markers and compensated wrench; its topics assume no namespace).

Parameters come from config/<robot>.yaml; payload_id_ros.supervisor starts the same executables
with the same files where `launch` is not installed (kept in step by test_launch_supervisor_sync).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    urdf = LaunchConfiguration("urdf")
    method = LaunchConfiguration("method")
    robot_yaml = LaunchConfiguration("robot_yaml")
    namespace = LaunchConfiguration("namespace")
    rviz = LaunchConfiguration("rviz")
    rviz_fixed_frame = LaunchConfiguration("rviz_fixed_frame")
    rviz_config = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", "payload_id.rviz"])
    params = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", [robot, ".yaml"]])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="ur10e", choices=["ur10", "ur10e", "panda"],
                              description="robot of the cell: selects config/<robot>.yaml"),
        DeclareLaunchArgument("urdf", default_value=robot,
                              description="the robot's URDF file (e.g. the calibrated one of its driver) or a "
                                          "bundled robot name; default: the bundled <robot>"),
        DeclareLaunchArgument("method", default_value="difference-rls",
                              description="default identification method (a goal may choose another)"),
        DeclareLaunchArgument("robot_yaml", default_value="",
                              description="robot.yaml of the unloaded robot (payload-id identify-robot)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes"),
        DeclareLaunchArgument("rviz", default_value="false", choices=["true", "false"],
                              description="open rviz2 with config/payload_id.rviz"),
        DeclareLaunchArgument("rviz_fixed_frame", default_value="base_link",
                              description="rviz fixed frame: the robot's base (panda: panda_link0)"),
        Node(package="payload_id_ros", executable="payload_estimator", name="payload_estimator",
             namespace=namespace, output="screen",
             parameters=[params, {"urdf": urdf, "method": method, "robot_yaml": robot_yaml}]),
        Node(package="payload_id_ros", executable="excitation_player", name="excitation_player",
             namespace=namespace, output="screen", parameters=[params, {"urdf": urdf}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", rviz_config, "-f", rviz_fixed_frame], condition=IfCondition(rviz)),
    ])
