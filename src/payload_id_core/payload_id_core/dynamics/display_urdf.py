"""A URDF for viewers (robot_state_publisher -> rviz) whose meshes resolve without the ament index.

example-robot-data's URDFs (installed from PyPI) name their meshes `package://example-robot-data/...`;
rviz resolves `package://` through the ament index, where a pip-installed package is not. Where the
URDF file lies inside a directory of that package name, the URI becomes an absolute `file://` path.
"""

from __future__ import annotations

import re
from pathlib import Path

from payload_id_core.dynamics.model import resolve_urdf

_PACKAGE_URI = re.compile(r'package://([^/"\s]+)/([^"\s<]+)')


def display_urdf(urdf: str | Path) -> str:
    """The URDF text (path or bundled robot name) with package:// meshes found beside it as file:// URIs."""
    path = resolve_urdf(urdf).resolve()
    return resolve_package_uris(path.read_text(), path)


def resolve_package_uris(text: str, path: Path) -> str:
    """`text` (the URDF at `path`) with each package://<package>/<rest> whose file lies under a parent directory
    of `path` named <package> as a file:// URI; the others are left to the ament index."""

    def resolve(match: re.Match) -> str:
        package, rest = match.group(1), match.group(2)
        for parent in path.parents:
            if parent.name == package and (parent / rest).is_file():
                return (parent / rest).as_uri()
        return match.group(0)      # left to the ament index (a ROS-installed description package)

    return _PACKAGE_URI.sub(resolve, text)
