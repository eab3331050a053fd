from glob import glob

from setuptools import find_packages, setup

package_name = "payload_id_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    # The usual ament_python share: launch files, node parameter files and the rviz configuration (the
    # URDFs, trajectories and simulator profiles are payload_id_core's package data). launch/ and config/
    # here are symbolic links to the repository root's folders: setuptools, pip and colcon (copying, or
    # linking with --symlink-install) read them as the package's own files.
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.rviz")),
    ],
    install_requires=["payload_id_core"],
    zip_safe=True,
    maintainer="payload_id maintainers",
    maintainer_email="payload-id@example.com",
    description="ROS 2 nodes of payload_id and the `payload-id identify` action client.",
    license="Apache-2.0",
    python_requires=">=3.11",
    entry_points={
        "console_scripts": [
            "payload_estimator = payload_id_ros.payload_estimator:main",
            "excitation_player = payload_id_ros.excitation_player:main",
            "mock_hardware = payload_id_ros.mock_hardware:main",
        ],
        # `payload-id identify --ros`, the action client: a subcommand the core's command line finds here
        # (payload_id_core.cli.main.PLUGIN_GROUP), so the core never imports ROS.
        "payload_id.commands": ["identify = payload_id_ros.cli.identify"],
    },
)
