"""The simulated cell: mock_hardware (MuJoCo robot + controller + F/T sensor) plus identify.launch.py.

    ros2 launch payload_id_ros sim_cell.launch.py robot:=ur10 robot_yaml:=/path/robot.yaml [rviz:=true]

rviz:=true opens rviz2 (identify.launch.py) and, since the simulated robot publishes no TF, starts a
robot_state_publisher with the robot's URDF (meshes of example-robot-data resolved to file:// paths).

The estimator and player come from identify.launch.py unchanged, so the simulated cell runs exactly
what a real cell runs. Parameters come from config/<robot>.yaml; payload_id_ros.supervisor starts the
same executables with the same files where `launch` is not installed (kept in step by
test_launch_supervisor_sync).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from payload_id_core.dynamics.display_urdf import display_urdf


def robot_state_publisher(context):
    """TF and robot_description of the simulated robot, for rviz (a real cell's driver publishes them)."""
    urdf = display_urdf(LaunchConfiguration("urdf").perform(context))
    return [Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
                 output="log", parameters=[{"robot_description": urdf}])]


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    urdf = LaunchConfiguration("urdf")
    method = LaunchConfiguration("method")
    robot_yaml = LaunchConfiguration("robot_yaml")
    namespace = LaunchConfiguration("namespace")
    rviz = LaunchConfiguration("rviz")
    rviz_fixed_frame = LaunchConfiguration("rviz_fixed_frame")
    params = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", [robot, ".yaml"]])
    identify = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "launch", "identify.launch.py"])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="ur10", choices=["ur10", "ur10e", "panda"],
                              description="simulated robot: selects config/<robot>.yaml"),
        DeclareLaunchArgument("urdf", default_value=robot,
                              description="URDF file or bundled robot name simulated and identified; default: "
                                          "the bundled <robot>"),
        DeclareLaunchArgument("method", default_value="difference-rls",
                              description="default identification method (a goal may choose another)"),
        DeclareLaunchArgument("robot_yaml", default_value="",
                              description="robot.yaml of the unloaded simulated robot (payload-id identify-robot)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the estimator and player"),
        DeclareLaunchArgument("rviz", default_value="false", choices=["true", "false"],
                              description="open rviz2 with config/payload_id.rviz and publish the robot's TF"),
        DeclareLaunchArgument("rviz_fixed_frame", default_value="base_link",
                              description="rviz fixed frame: the robot's base (panda: panda_link0)"),
        # The simulated robot first, so the others find joint states when they come up.
        Node(package="payload_id_ros", executable="mock_hardware", name="mock_hardware",
             output="screen", parameters=[params, {"urdf": urdf}]),
        OpaqueFunction(function=robot_state_publisher, condition=IfCondition(rviz)),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(identify), launch_arguments={
            "robot": robot, "urdf": urdf, "method": method, "robot_yaml": robot_yaml, "namespace": namespace,
            "rviz": rviz, "rviz_fixed_frame": rviz_fixed_frame}.items()),
    ])
