"""The core's bundled files: robot URDFs, excitation trajectories, simulator profiles.

They are package data of payload_id_core (payload_id_core/data/<kind>/), found through the package itself,
so a source checkout, a pip install and a colcon install find them alike, without ROS's ament index.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

KINDS = ("urdf", "trajectories", "sim")


def bundled_dir(kind: str) -> Path:
    """payload_id_core/data/<kind>: 'urdf' (*.urdf), 'trajectories' (*.yaml), 'sim' (<profile>.yaml)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of bundled file '{kind}'; one of {', '.join(KINDS)}")
    # The package is installed as a directory (setup.py: zip_safe False), so this is a real path.
    return Path(str(files("payload_id_core"))) / "data" / kind


def bundled_names(kind: str, suffix: str) -> list[str]:
    """The names (file stems) bundled of one kind."""
    return sorted(p.stem for p in bundled_dir(kind).glob(f"*{suffix}"))
