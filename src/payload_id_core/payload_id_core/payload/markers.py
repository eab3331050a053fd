"""Where the payload markers go: the one geometry rviz's markers and the report's drawing both use.

The estimator's `~/markers` (payload_id_ros.conversions.markers_msg) and the report's 3D drawing
(payload_id_core.robot_drawing) take their numbers from `marker_geometry`, so what rviz shows and
what the report draws cannot diverge. Everything is in the payload frame; the box is the uniform
box with the estimate's mass and inertia about the CoM (dynamics/inertia.equivalent_box), its edges
along the principal axes. A bounding box the user gave (identify-payload --bounding-box) is drawn beside them as a
wireframe, so that the estimate can be seen inside what was known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.inertia import equivalent_box, rotation_quaternion_xyzw
from payload_id_core.payload_estimate import PayloadEstimate, Quality

COM_SPHERE_DIAMETER = 0.03      # m: visible beside a tool, small enough not to hide the box
MIN_BOX_SIDE = 1e-3             # m: rviz draws nothing for a zero scale (a point mass, an inconsistent estimate)
LABEL_HEIGHT = 0.08             # m above the CoM along the payload frame's z
LABEL_SIZE = 0.04               # m: rviz text height


@dataclass(frozen=True)
class MarkerGeometry:
    """The CoM sphere, the inertia box and the mass label of one estimate, in `frame`."""

    frame: str
    com: np.ndarray              # (3,) m: centre of the sphere and of the box
    box_sides: np.ndarray        # (3,) m: side lengths along the columns of box_axes
    box_axes: np.ndarray         # (3, 3) principal axes of the inertia about the CoM (right-handed columns)
    label: str                   # "mass ± σ kg", "(suspect)" appended when the project does not stand behind it
    suspect: bool                # quality not ok: drawn in a warning colour
    # The bounding box the user gave (payload/priors.py: its low and high corners), drawn as a wireframe: None without
    prior_box: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def box_quaternion_xyzw(self) -> tuple[float, float, float, float]:
        return rotation_quaternion_xyzw(self.box_axes)

    @property
    def label_position(self) -> np.ndarray:
        return self.com + np.array([0.0, 0.0, LABEL_HEIGHT])

    def box_corners(self) -> np.ndarray:
        """(8, 3) corners in the payload frame, corner k at signs (bit 0, 1, 2 of k) along the axes."""
        signs = np.array([[1 if k & (1 << a) else -1 for a in range(3)] for k in range(8)], dtype=float)
        return self.com + (signs * (0.5 * self.box_sides)) @ self.box_axes.T

    def prior_box_corners(self) -> np.ndarray | None:
        """(8, 3) corners of the given bounding box in the payload frame, box_corners' order; None without one."""
        if self.prior_box is None:
            return None
        lo, hi = self.prior_box
        return np.array([[hi[a] if k & (1 << a) else lo[a] for a in range(3)] for k in range(8)], dtype=float)

    def prior_box_edges(self) -> list[tuple[int, int]]:
        """The 12 edges of a box by corner index (corners differing in one bit)."""
        return [(k, k | (1 << a)) for k in range(8) for a in range(3) if not k & (1 << a)]


def mass_label(mass: float, std: float) -> str:
    if not np.isfinite(std):
        return f"{mass:.3f} kg"
    # A σ below a gram keeps one significant digit: "± 0.000" reads as no uncertainty at all.
    return f"{mass:.3f} ± {std:.3f} kg" if std >= 0.0005 or std == 0 else f"{mass:.3f} ± {std:.1g} kg"


def marker_geometry(est: PayloadEstimate) -> MarkerGeometry:
    sides, axes = equivalent_box(est.mass, est.inertia_about_com)
    suspect = est.quality is not Quality.OK
    label = mass_label(est.mass, float(est.readable_std()[0]))
    if est.undetermined_com_text():
        # The sphere stands at numbers the motion did not determine (the monitor's first re-estimate after a pick).
        label += ", " + est.undetermined_com_text()
    if not est.readable_identifiable()[4:].all():
        # An inertia the motion did not determine gets no box: its size would be the prior's or noise.
        sides, axes = np.zeros(3), np.eye(3)
        label += ", inertia undetermined"
    if suspect:
        label += f" ({est.quality.value})"
    box = (est.prior or {}).get("bounding_box")
    prior_box = (np.asarray(box["min"], dtype=float), np.asarray(box["max"], dtype=float)) if box else None
    return MarkerGeometry(frame=est.frame, com=np.asarray(est.com, dtype=float),
                          box_sides=np.maximum(sides, MIN_BOX_SIDE), box_axes=axes, label=label, suspect=suspect,
                          prior_box=prior_box)
