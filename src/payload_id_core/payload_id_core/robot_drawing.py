"""The robot at a pose with the payload markers as rviz places them, drawn in 3D without rviz.

A check that the estimator's `~/markers` render sensibly, made where no display exists: the
kinematic skeleton of the URDF (pinocchio forward kinematics, joint origins joined by lines) and
the CoM sphere, the equivalent inertia box (with its principal-axes orientation), the bounding box the user
gave (a dashed wireframe) and the mass label
of payload.markers.marker_geometry — the numbers markers_msg publishes — moved from the payload
frame into the robot's base frame. `payload-id report` and the demo add it to their PNG.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.files import atomic_write_bytes
from payload_id_core.payload.markers import COM_SPHERE_DIAMETER, MarkerGeometry, marker_geometry
from payload_id_core.payload_estimate import PayloadEstimate

ZOOM_HALF_WIDTH = 0.2           # m around the CoM in the close-up: a tool-sized payload fills it
FRAME_AXIS_LENGTH = 0.08        # m: the payload frame's x, y, z arrows
# The faces of a box, by corner index (MarkerGeometry.box_corners: bit a of k = + side along axis a).
BOX_FACES = [[0, 1, 3, 2], [4, 5, 7, 6], [0, 1, 5, 4], [2, 3, 7, 6], [0, 2, 6, 4], [1, 3, 7, 5]]


@dataclass(frozen=True)
class PayloadPose:
    """What the drawing needs: the robot, a joint configuration and the estimate it carries."""

    model: RobotModel
    q: np.ndarray                # (n,) rad, the model's joint order
    estimate: PayloadEstimate


@dataclass(frozen=True)
class Scene:
    """Everything drawn, in the robot's base frame (the URDF root), m."""

    segments: list[tuple[np.ndarray, np.ndarray]]   # skeleton lines between joint origins, and on to the payload frame
    joints: np.ndarray           # (n, 3) joint origins
    payload_frame: pin.SE3       # the payload frame's placement in the base frame
    com: np.ndarray              # (3,) CoM sphere centre
    box_corners: np.ndarray      # (8, 3) inertia box corners, MarkerGeometry.box_corners order
    label_position: np.ndarray   # (3,)
    geometry: MarkerGeometry     # the payload-frame numbers (what markers_msg publishes)
    prior_box_corners: np.ndarray | None = None   # (8, 3) the given bounding box's corners, None without one


def scene_at(pose: PayloadPose) -> Scene:
    """Forward kinematics of the pose, and the markers moved from the payload frame to the base frame."""
    model = pose.model
    data = model.model.createData()
    pin.framesForwardKinematics(model.model, data, np.asarray(pose.q, dtype=float))
    geo = marker_geometry(pose.estimate)
    joints = np.array([data.oMi[j].translation for j in range(1, model.model.njoints)])
    segments = [(np.array(data.oMi[model.model.parents[j]].translation), joints[j - 1])
                for j in range(1, model.model.njoints)]
    last_joint, _ = model.frame_in_joint(geo.frame)
    placement = data.oMf[model.frame_id(geo.frame)].copy()
    segments.append((joints[last_joint - 1], np.array(placement.translation)))

    def to_base(points: np.ndarray) -> np.ndarray:
        return points @ placement.rotation.T + placement.translation

    prior = geo.prior_box_corners()
    return Scene(segments=segments, joints=joints, payload_frame=placement, com=to_base(geo.com),
                 box_corners=to_base(geo.box_corners()), label_position=to_base(geo.label_position), geometry=geo,
                 prior_box_corners=to_base(prior) if prior is not None else None)


def draw_scene(ax, scene: Scene, *, close_up: bool) -> None:
    """Onto a matplotlib 3D axes: the whole robot, or (close_up) the payload around its CoM."""
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # type: ignore[import-untyped]  # noqa: PLC0415 - optional, plots only

    geo = scene.geometry
    if close_up:
        centre, half = scene.com, ZOOM_HALF_WIDTH
    else:
        points = np.vstack([scene.joints, scene.box_corners, [[0.0, 0.0, 0.0]]])
        centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
        half = 0.5 * float(np.max(points.max(axis=0) - points.min(axis=0))) + 0.05
    # 3D axes do not clip what lies outside their limits: the close-up would show the whole arm.
    for a, b in scene.segments:
        clipped = clip_segment(a, b, centre - half, centre + half)
        if clipped is not None:
            ax.plot(*np.c_[clipped], color="0.35", lw=6 if close_up else 4, solid_capstyle="round")
    inside = np.all(np.abs(scene.joints - centre) <= half, axis=1)
    ax.scatter(*scene.joints[inside].T, color="0.1", s=18, depthshade=False)
    rot, origin = scene.payload_frame.rotation, scene.payload_frame.translation
    for k, colour in enumerate(("tab:red", "tab:green", "tab:blue")):    # rviz's x, y, z colours
        ax.quiver(*origin, *(FRAME_AXIS_LENGTH * rot[:, k]), color=colour, lw=1.5)
    box_colour = "orange" if geo.suspect else "tab:blue"
    faces = [[scene.box_corners[i] for i in face] for face in BOX_FACES]
    ax.add_collection3d(Poly3DCollection(faces, facecolor=box_colour, edgecolor="k", linewidths=0.6, alpha=0.35))
    if scene.prior_box_corners is not None:   # the bounding box the user gave: a dashed wireframe
        for i, j in geo.prior_box_edges():
            ax.plot(*np.c_[scene.prior_box_corners[i], scene.prior_box_corners[j]], color="tab:green", lw=1.2,
                    ls="--", label="bounding box" if (i, j) == (0, 1) else None)
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 16), np.linspace(0, np.pi, 9))
    r = 0.5 * COM_SPHERE_DIAMETER
    ax.plot_surface(scene.com[0] + r * np.cos(u) * np.sin(v), scene.com[1] + r * np.sin(u) * np.sin(v),
                    scene.com[2] + r * np.cos(v), color="red", linewidth=0)
    ax.scatter(*scene.com, color="red", s=30 if close_up else 12, depthshade=False, label="CoM")
    if close_up:
        # rviz draws the label facing the viewer over everything; a white background does it here.
        ax.text(*scene.label_position, geo.label, fontsize=9, ha="center", zorder=10,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        ax.set_title(f"payload in {geo.frame} (axes x red, y green, z blue)\nequivalent inertia box "
                     f"{' x '.join(f'{1e3 * s:.0f}' for s in geo.box_sides)} mm, CoM sphere", fontsize=9)
    else:
        ax.set_title(f"robot skeleton at the drawn pose, payload {geo.label}", fontsize=9)
    # Equal scales on the three axes, or the box and the sphere are drawn distorted.
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set(xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax.tick_params(labelsize=7)


def clip_segment(a: np.ndarray, b: np.ndarray, low: np.ndarray, high: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of segment a-b inside the axis-aligned box [low, high] (Liang-Barsky), None when outside."""
    t0, t1 = 0.0, 1.0
    d = b - a
    for k in range(3):
        if abs(d[k]) < 1e-12:
            if not low[k] <= a[k] <= high[k]:
                return None
            continue
        ta, tb = sorted(((low[k] - a[k]) / d[k], (high[k] - a[k]) / d[k]))
        t0, t1 = max(t0, ta), min(t1, tb)
        if t0 > t1:
            return None
    return a + t0 * d, a + t1 * d


def plot_payload_scene(out_path: str | Path, pose: PayloadPose, title: str = "payload markers") -> Scene:
    """A PNG of the robot and a close-up of the payload (written atomically); returns what was drawn."""
    import matplotlib  # noqa: PLC0415 - matplotlib is heavy and optional: only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after use("Agg"): no display backend on a robot PC

    scene = scene_at(pose)
    fig = plt.figure(figsize=(12, 6), constrained_layout=True)
    fig.suptitle(title)
    draw_scene(fig.add_subplot(1, 2, 1, projection="3d"), scene, close_up=False)
    draw_scene(fig.add_subplot(1, 2, 2, projection="3d"), scene, close_up=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(out_path, buf.getvalue())
    return scene
