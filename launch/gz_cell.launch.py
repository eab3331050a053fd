"""The Gazebo cell: the robot in Gazebo Sim under gz_ros2_control, next to the estimator and the player.

    ros2 launch payload_id_ros gz_cell.launch.py robot:=ur10e robot_yaml:=/path/robot.yaml \
        payload_mass:=2.0 payload_com:="[0.0, 0.0, 0.05]" \
        payload_inertia:="[0.004, 0.0, 0.0, 0.004, 0.0, 0.004]" [rviz:=true] [gz_args:="-r -s empty.sdf"]

Gazebo Sim (ros_gz_sim) runs the robot spawned from its URDF for Gazebo, made in memory from the bundled
robot by payload_id_core's gazebo_urdf (`payload-id gazebo-urdf` writes the same text to a file): a
`<ros2_control>` block with gz_ros2_control/GazeboSimSystem (position command; position, velocity and
effort state) and the plugin that loads config/<robot>_controllers.yaml. The payload_* arguments fix a
payload (mass kg, CoM m in payload_frame, inertia kg m² about the CoM: ixx, ixy, ixz, iyy, iyz, izz) on the
estimator's payload frame (config/<robot>.yaml), the truth to compare the identified payload with; mass 0:
none. The controller manager's spawners start joint_state_broadcaster (/joint_states) and
joint_trajectory_controller, the controller the player publishes to. Gazebo's clock reaches ROS through
ros_gz_bridge (/clock), and every node runs on it (use_sim_time). The estimator and the player are those of
identify.launch.py, with config/gz_cell.yaml on top of config/<robot>.yaml (efforts are torques here).

Bad payload arguments stop the launch with one line naming them (PayloadIdError). Needs ros-<distro>-ros-gz,
ros-<distro>-gz-ros2-control, ros-<distro>-ros2-control and ros-<distro>-ros2-controllers (README, "In
Gazebo"); not run by this repository's tests (Gazebo cannot be installed there), which check the names
this file uses and the URDF it spawns (test/test_gz_cell.py).
"""

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from payload_id_core.dynamics.gazebo_urdf import flange_payload, gazebo_urdf
from payload_id_core.errors import PayloadIdError


def _numbers(context, name: str) -> list[float]:
    """The launch argument `name`, a YAML number or list of numbers ("[0.0, 0.0, 0.05]"), refused in one line."""
    text = LaunchConfiguration(name).perform(context)
    try:
        value = yaml.safe_load(text)
        values = value if isinstance(value, list) else [value]
        return [float(v) for v in values if not isinstance(v, bool)] if values else []
    except (yaml.YAMLError, TypeError, ValueError):
        raise PayloadIdError(f"launch argument {name}:={text} is not a number or a list of numbers",
                             f'give e.g. {name}:="[0.0, 0.0, 0.05]" (payload_mass: one number)') from None


def robot_in_gazebo(context):
    """robot_state_publisher with the generated URDF (/robot_description, TF) and its spawn into Gazebo."""
    robot = LaunchConfiguration("robot").perform(context)
    share = FindPackageShare("payload_id_ros").perform(context)
    with open(f"{share}/config/{robot}.yaml") as f:
        cell = yaml.safe_load(f)
    frame = cell["/**/payload_estimator"]["ros__parameters"]["payload_frame"]
    initial = cell["/**/mock_hardware"]["ros__parameters"]["initial_positions"]
    mass = _numbers(context, "payload_mass")
    if len(mass) != 1:
        raise PayloadIdError(f"launch argument payload_mass has {len(mass)} values", "give one mass in kg")
    payload = flange_payload(mass[0], _numbers(context, "payload_com"), _numbers(context, "payload_inertia"))
    urdf = gazebo_urdf(LaunchConfiguration("urdf").perform(context), f"{share}/config/{robot}_controllers.yaml",
                       payload, frame, initial)
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context) == "true"
    return [
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             output="log", parameters=[{"robot_description": urdf, "use_sim_time": use_sim_time}]),
        Node(package="ros_gz_sim", executable="create", output="screen",
             arguments=["-topic", "robot_description", "-name", robot]),
    ]


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    urdf = LaunchConfiguration("urdf")
    method = LaunchConfiguration("method")
    robot_yaml = LaunchConfiguration("robot_yaml")
    use_sim_time = LaunchConfiguration("use_sim_time")
    gz_args = LaunchConfiguration("gz_args")
    rviz = LaunchConfiguration("rviz")
    rviz_fixed_frame = LaunchConfiguration("rviz_fixed_frame")
    params = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", [robot, ".yaml"]])
    gz_params = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", "gz_cell.yaml"])
    controllers = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", [robot, "_controllers.yaml"]])
    rviz_config = PathJoinSubstitution([FindPackageShare("payload_id_ros"), "config", "payload_id.rviz"])
    gz_sim = PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="ur10e", choices=["ur10", "ur10e", "panda"],
                              description="robot spawned in Gazebo: selects config/<robot>.yaml and "
                                          "config/<robot>_controllers.yaml"),
        DeclareLaunchArgument("urdf", default_value=robot,
                              description="URDF file or bundled robot name simulated and identified; default: "
                                          "the bundled <robot>"),
        DeclareLaunchArgument("payload_mass", default_value="0.0",
                              description="kg of the payload fixed on the payload frame; 0 = none"),
        DeclareLaunchArgument("payload_com", default_value="[0.0, 0.0, 0.0]",
                              description="m, the payload's centre of mass in the payload frame: [x, y, z]"),
        DeclareLaunchArgument("payload_inertia", default_value="[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
                              description="kg m^2 about the CoM: [ixx, ixy, ixz, iyy, iyz, izz]"),
        DeclareLaunchArgument("method", default_value="difference-rls",
                              description="default identification method (a goal may choose another)"),
        DeclareLaunchArgument("robot_yaml", default_value="",
                              description="robot.yaml of the unloaded robot in Gazebo (payload-id identify-robot)"),
        DeclareLaunchArgument("use_sim_time", default_value="true", choices=["true", "false"],
                              description="run every node on Gazebo's clock (/clock)"),
        DeclareLaunchArgument("gz_args", default_value="-r empty.sdf",
                              description="Gazebo Sim's arguments: world, -r to run at start, -s without GUI"),
        DeclareLaunchArgument("rviz", default_value="false", choices=["true", "false"],
                              description="open rviz2 with config/payload_id.rviz"),
        DeclareLaunchArgument("rviz_fixed_frame", default_value="base_link",
                              description="rviz fixed frame: the robot's base (panda: panda_link0)"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(gz_sim), launch_arguments={
            "gz_args": gz_args, "on_exit_shutdown": "true"}.items()),
        Node(package="ros_gz_bridge", executable="parameter_bridge", output="log",
             arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]),
        OpaqueFunction(function=robot_in_gazebo),
        # The spawners wait for the controller manager the plugin starts once the robot is in Gazebo.
        Node(package="controller_manager", executable="spawner",
             output="screen", arguments=["joint_state_broadcaster", "--controller-manager", "/controller_manager",
                                         "--controller-manager-timeout", "120"]),
        Node(package="controller_manager", executable="spawner",
             output="screen", arguments=["joint_trajectory_controller", "--controller-manager", "/controller_manager",
                                         "--controller-manager-timeout", "120", "--param-file", controllers]),
        Node(package="payload_id_ros", executable="payload_estimator", name="payload_estimator", output="screen",
             parameters=[params, gz_params, {"urdf": urdf, "method": method, "robot_yaml": robot_yaml,
                                             "use_sim_time": use_sim_time}]),
        Node(package="payload_id_ros", executable="excitation_player", name="excitation_player", output="screen",
             parameters=[params, gz_params, {"urdf": urdf, "use_sim_time": use_sim_time}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="log",
             arguments=["-d", rviz_config, "-f", rviz_fixed_frame], parameters=[{"use_sim_time": use_sim_time}],
             condition=IfCondition(rviz)),
    ])
