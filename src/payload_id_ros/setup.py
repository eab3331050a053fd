import os
from glob import glob

from setuptools import find_packages, setup

package_name = "payload_id_ros"
# launch/ and config/ live at the top of the repository (docs/design.md) and are installed by this package.
top = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob(os.path.join(top, "launch", "*.launch.py"))),
        ("share/" + package_name + "/config", glob(os.path.join(top, "config", "*.yaml"))),
        ("share/" + package_name + "/config", glob(os.path.join(top, "config", "*.rviz"))),
        ("share/" + package_name + "/config/trajectories",
         glob(os.path.join(top, "config", "trajectories", "*.yaml"))),
        ("share/" + package_name + "/config/urdf", glob(os.path.join(top, "config", "urdf", "*.urdf"))),
    ],
    install_requires=["payload_id_core"],
    zip_safe=True,
    maintainer="payload_id maintainers",
    maintainer_email="payload-id@example.com",
    description="ROS 2 nodes and command line of payload_id.",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "payload-id = payload_id_ros.cli.main:main",
            "payload_estimator = payload_id_ros.payload_estimator:main",
            "excitation_player = payload_id_ros.excitation_player:main",
            "mock_hardware = payload_id_ros.mock_hardware:main",
        ],
    },
)
