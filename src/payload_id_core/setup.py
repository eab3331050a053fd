from setuptools import find_packages, setup

package_name = "payload_id_core"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    # The ROS wheels and robot-cell installs provide these; pinned versions live in requirements.lock.
    install_requires=["numpy", "scipy", "pyyaml"],
    zip_safe=True,
    maintainer="payload_id maintainers",
    maintainer_email="payload-id@example.com",
    description="Payload and robot dynamic identification (no ROS dependency).",
    license="Apache-2.0",
    python_requires=">=3.10",
)
