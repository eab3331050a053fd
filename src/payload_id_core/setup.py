from setuptools import find_packages, setup

package_name = "payload_id_core"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    # Bundled robot URDFs, excitation trajectories and simulator profiles (payload_id_core.resources).
    package_data={package_name: ["data/urdf/*.urdf", "data/trajectories/*.yaml", "data/sim/*.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    # The ROS wheels and robot-cell installs provide these; pinned versions live in requirements.lock.
    install_requires=["numpy", "scipy", "pyyaml"],
    zip_safe=False,      # resources.bundled_dir hands out real paths
    maintainer="payload_id maintainers",
    maintainer_email="payload-id@example.com",
    description="Payload and robot dynamic identification (no ROS dependency).",
    license="Apache-2.0",
    python_requires=">=3.11",
    # The offline command line; `payload-id identify` (ROS) is added by payload_id_ros (cli/main.py).
    entry_points={"console_scripts": ["payload-id = payload_id_core.cli.main:main"]},
)
