"""The report's 3D drawing puts the payload where rviz would: same CoM, same box, same orientation.

A 2 kg uniform box 0.2 x 0.1 x 0.05 m whose CoM sits 0.1 m along tool0's z: markers_msg's numbers
(payload frame) moved to the base frame by forward kinematics must equal what the drawing drew.
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.markers import MIN_BOX_SIDE, marker_geometry
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_drawing import PayloadPose, clip_segment, plot_payload_scene, scene_at
from payload_id_ros import conversions as conv

SIDES = np.array([0.2, 0.1, 0.05])
MASS = 2.0
OFFSET = np.array([0.0, 0.0, 0.1])
POSE = np.array([0.0, -1.2, 1.2, -1.5, -1.5, 0.0])


def _box_estimate(com=OFFSET, rotation=None) -> PayloadEstimate:
    rotation = np.eye(3) if rotation is None else rotation
    a, b, c = SIDES
    inertia = MASS / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return PayloadEstimate("tool0", from_mass_com_inertia(MASS, com, rotation @ inertia @ rotation.T),
                           np.diag(np.full(10, 1e-6)), "direct-rls")


def _tool0(model: RobotModel, q) -> pin.SE3:
    data = model.model.createData()
    pin.framesForwardKinematics(model.model, data, q)
    return data.oMf[model.model.getFrameId("tool0")]


def _message_corners(box) -> np.ndarray:
    """The 8 corners of an rviz CUBE marker (pose + scale) in its frame."""
    p, o, s = box.pose.position, box.pose.orientation, box.scale
    rot = Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix()
    signs = np.array([[1 if k & (1 << a) else -1 for a in range(3)] for k in range(8)], dtype=float)
    return np.array([p.x, p.y, p.z]) + (signs * 0.5 * np.array([s.x, s.y, s.z])) @ rot.T


def _as_set(points: np.ndarray) -> np.ndarray:
    return points[np.lexsort(np.round(points, 9).T)]


def test_message_recovers_the_box_and_the_com():
    sphere, box, text = conv.markers_msg(_box_estimate(), 0.0).markers
    assert [sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z] == pytest.approx(OFFSET)
    assert sorted([box.scale.x, box.scale.y, box.scale.z]) == pytest.approx(sorted(SIDES))
    corners = _message_corners(box)
    # The box lies along tool0's axes: 0.2 along x, 0.1 along y, 0.05 along z (the orientation is right).
    np.testing.assert_allclose(np.ptp(corners, axis=0), SIDES, atol=1e-9)
    assert text.pose.position.z == pytest.approx(OFFSET[2] + 0.08) and text.text == "2.000 ± 0.001 kg"


def test_drawing_puts_the_markers_where_the_message_does(ur10):
    est = _box_estimate(com=[0.01, -0.02, 0.1], rotation=Rotation.from_euler("xyz", [0.3, -0.5, 1.1]).as_matrix())
    scene = scene_at(PayloadPose(ur10, POSE, est))
    tool0 = _tool0(ur10, POSE)
    sphere, box, _ = conv.markers_msg(est, 0.0).markers
    p = sphere.pose.position
    np.testing.assert_allclose(scene.com, tool0.act(np.array([p.x, p.y, p.z])), atol=1e-9)
    in_base = _message_corners(box) @ tool0.rotation.T + tool0.translation
    np.testing.assert_allclose(_as_set(scene.box_corners), _as_set(in_base), atol=1e-9)
    # The drawn payload frame and the skeleton's last point are tool0 itself.
    np.testing.assert_allclose(scene.payload_frame.homogeneous, tool0.homogeneous, atol=1e-12)
    np.testing.assert_allclose(scene.segments[-1][1], tool0.translation, atol=1e-12)


def test_png_is_written_and_changes_when_the_com_moves(tmp_path, ur10):
    first, moved = tmp_path / "a.png", tmp_path / "b.png"
    scene = plot_payload_scene(first, PayloadPose(ur10, POSE, _box_estimate()))
    plot_payload_scene(moved, PayloadPose(ur10, POSE, _box_estimate(com=[0.05, 0.0, 0.1])))
    assert first.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and first.stat().st_size > 20_000
    assert first.read_bytes() != moved.read_bytes()
    np.testing.assert_allclose(np.sort(scene.geometry.box_sides), np.sort(SIDES), atol=1e-9)


def test_suspect_estimate_is_labelled_so(ur10):
    est = _box_estimate()
    est.mark(Quality.SUSPECT, "model error ratio 7.2 > 3")
    assert marker_geometry(est).suspect
    assert conv.markers_msg(est, 0.0).markers[2].text == "2.000 ± 0.001 kg (suspect)"
    assert conv.markers_msg(est, 0.0).markers[1].color.r == pytest.approx(1.0)   # orange, not blue


def test_clip_segment_keeps_only_the_part_inside():
    low, high = np.zeros(3), np.ones(3)
    a, b = clip_segment(np.array([-1.0, 0.5, 0.5]), np.array([3.0, 0.5, 0.5]), low, high)
    np.testing.assert_allclose([a, b], [[0, 0.5, 0.5], [1, 0.5, 0.5]])
    assert clip_segment(np.array([2.0, 2.0, 2.0]), np.array([3.0, 2.0, 2.0]), low, high) is None


def test_an_undetermined_inertia_gets_no_box_and_says_so():
    est = PayloadEstimate("tool0", from_mass_com_inertia(2.0, [0.0, 0.0, 0.1], np.diag([0.002, 0.007, 0.008])),
                          np.zeros((10, 10)), "khalil-1")
    assert marker_geometry(est).box_sides.min() > 0.04
    est.determined = np.array([True, True, False])
    geometry = marker_geometry(est)
    np.testing.assert_allclose(geometry.box_sides, MIN_BOX_SIDE)
    assert geometry.label.endswith("inertia undetermined")
    np.testing.assert_allclose(geometry.com, [0.0, 0.0, 0.1])


def test_the_given_bounding_box_is_drawn_where_rviz_draws_it(ur10, tmp_path):
    """identify-payload --bounding-box: the wireframe's 8 corners are the box's, in the payload frame for rviz (a line
    list of its 12 edges) and moved to the base frame by the drawing."""
    est = _box_estimate()
    est.prior = {"bounding_box": {"min": [-0.15, -0.1, 0.0], "max": [0.15, 0.1, 0.2]}}
    geo = marker_geometry(est)
    corners = geo.prior_box_corners()
    assert corners is not None
    assert np.allclose(corners.min(axis=0), [-0.15, -0.1, 0.0]) and np.allclose(corners.max(axis=0), [0.15, 0.1, 0.2])
    wire = [m for m in conv.markers_msg(est, 0.0).markers if m.type == m.LINE_LIST]
    assert len(wire) == 1 and len(wire[0].points) == 24 and wire[0].header.frame_id == "tool0"
    points = np.array([[p.x, p.y, p.z] for p in wire[0].points])
    assert {tuple(np.round(p, 6)) for p in points} == {tuple(np.round(c, 6)) for c in corners}
    edges = np.linalg.norm(points[0::2] - points[1::2], axis=1)
    assert sorted(np.round(edges, 6)) == [0.2] * 8 + [0.3] * 4   # a 30 x 20 x 20 cm box's 12 edges
    scene = scene_at(PayloadPose(ur10, POSE, est))
    tool0 = _tool0(ur10, POSE)
    assert scene.prior_box_corners is not None
    assert np.allclose(scene.prior_box_corners, corners @ tool0.rotation.T + tool0.translation)
    # Without a prior: no wireframe, in rviz or in the drawing.
    plain = _box_estimate()
    assert marker_geometry(plain).prior_box_corners() is None
    assert all(m.type != m.LINE_LIST for m in conv.markers_msg(plain, 0.0).markers)
    assert scene_at(PayloadPose(ur10, POSE, plain)).prior_box_corners is None
    plot_payload_scene(tmp_path / "boxed.png", PayloadPose(ur10, POSE, est))
    assert (tmp_path / "boxed.png").stat().st_size > 0
