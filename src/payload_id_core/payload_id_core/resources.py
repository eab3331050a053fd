"""Where the bundled configuration lives: config/ of the source checkout, or the installed share/.

A source checkout (make setup, editable install) has <repo>/config/; a colcon install has
share/payload_id_ros/config/ (payload_id_ros's setup.py installs it there).
"""

from __future__ import annotations

from pathlib import Path


def config_dir(sub: str) -> Path:
    """config/<sub> (e.g. 'urdf', 'trajectories'); a path that may not exist when nothing is bundled."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "config" / sub
        if cand.is_dir():
            return cand
    try:
        from ament_index_python.packages import get_package_share_directory  # noqa: PLC0415 - ROS install only

        return Path(get_package_share_directory("payload_id_ros")) / "config" / sub
    except Exception:  # noqa: BLE001 - no ament index outside ROS: nothing bundled
        return here.parent / "config" / sub
