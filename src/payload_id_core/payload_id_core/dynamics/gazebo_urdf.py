"""The robot's URDF for Gazebo Sim with gz_ros2_control, generated from the URDF the estimator loads.

Made from the same file RobotModel.from_urdf reads (a bundled robot name or a path), so the simulated arm is
the model the estimator identifies with, and nothing is copied by hand:
- the joints the estimator actuates keep their names, limits and links' inertias; the joints it locks (the
  Panda's fingers) become fixed joints at the position RobotModel locks them at, so the simulated bodies are the
  model's composite bodies;
- a `<ros2_control>` block with gz_ros2_control/GazeboSimSystem names every actuated joint with a position
  command interface (what joint_trajectory_controller commands) and position, velocity and effort state
  interfaces (what joint_state_broadcaster publishes on /joint_states and the estimator reads), and the
  gz_ros2_control plugin tag that starts the controller manager with the controllers YAML;
- the base is fixed to the world (a root link named `world`), and meshes given as package:// URIs found beside
  the file become file:// paths (display_urdf), so Gazebo finds example-robot-data's pip-installed meshes; a
  link with an inertia and no visual (the bundled ur10e has no meshes) is drawn as its equivalent inertia box;
- optionally a payload: a fixed link on the payload frame carrying the given mass, CoM and inertia about the
  CoM, so a user can compare the identified payload with the truth.

The payload's numbers follow the user-facing convention (docs/design.md: com in the payload frame, inertia
ixx, ixy, ixz, iyy, iyz, izz about the CoM, axes of the payload frame), which is also URDF's <inertial>.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.display_urdf import resolve_package_uris
from payload_id_core.dynamics.inertia import equivalent_box
from payload_id_core.dynamics.model import RobotModel, resolve_urdf
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import read_yaml_mapping

HARDWARE_PLUGIN = "gz_ros2_control/GazeboSimSystem"
GZ_PLUGIN_FILENAME = "gz_ros2_control-system"
GZ_PLUGIN_NAME = "gz_ros2_control::GazeboSimROS2ControlPlugin"
COMMAND_INTERFACES = ("position",)
STATE_INTERFACES = ("position", "velocity", "effort")
PAYLOAD_LINK = "payload"
PAYLOAD_JOINT = "payload_joint"
WORLD_LINK = "world"
_MOVING = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class FlangePayload:
    """A rigid payload fixed to a frame: mass (kg), com (m, in the frame), inertia (kg m², about the CoM, axes
    of the frame: ixx, ixy, ixz, iyy, iyz, izz). Made by `flange_payload`, which refuses what no body has."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]

    @property
    def inertia_matrix(self) -> np.ndarray:
        ixx, ixy, ixz, iyy, iyz, izz = self.inertia
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def flange_payload(mass: float, com=(0.0, 0.0, 0.0), inertia=(0.0,) * 6) -> FlangePayload | None:
    """The payload asked for, checked to be a body Gazebo can simulate; None for mass 0 with nothing else
    given (no payload). Refused (PayloadIdError): non-finite numbers, a negative mass, a CoM or inertia with
    no mass, the wrong number of values, an inertia about the CoM that is not positive definite or whose
    principal moments break the triangle inequality (no rigid body has them)."""
    com = tuple(float(c) for c in com)
    inertia = tuple(float(i) for i in inertia)
    fix = "give payload mass (kg), com x,y,z (m) and inertia ixx,ixy,ixz,iyy,iyz,izz (kg m², about the CoM)"
    if len(com) != 3:
        raise PayloadIdError(f"payload com has {len(com)} values, not 3", fix)
    if len(inertia) != 6:
        raise PayloadIdError(f"payload inertia has {len(inertia)} values, not 6 (ixx, ixy, ixz, iyy, iyz, izz)", fix)
    if not all(math.isfinite(v) for v in (mass, *com, *inertia)):
        raise PayloadIdError("payload numbers must be finite (NaN or Inf given)", fix)
    if mass < 0:
        raise PayloadIdError(f"payload mass {mass:g} kg is negative", "give a mass > 0 kg, or 0 for no payload")
    if mass == 0:
        if any(com) or any(inertia):
            raise PayloadIdError("payload com or inertia given with mass 0", "give the payload's mass, or drop them")
        return None
    payload = FlangePayload(float(mass), com, inertia)
    moments = np.linalg.eigvalsh(payload.inertia_matrix)
    scale = max(abs(moments).max(), 1e-12)
    if moments.min() <= 1e-9 * scale or moments.max() <= 0:
        raise PayloadIdError(f"payload inertia about the CoM is not positive definite (principal moments "
                             f"{', '.join(f'{m:.3g}' for m in moments)} kg m²)",
                             "give a body's inertia, e.g. a solid sphere's 2/5 m r² on ixx, iyy, izz")
    if 2.0 * moments.max() > moments.sum() * (1 + 1e-9):
        raise PayloadIdError(f"payload inertia's principal moments {', '.join(f'{m:.3g}' for m in moments)} kg m² "
                             "break the triangle inequality (the largest exceeds the sum of the other two)",
                             "give a rigid body's inertia about its CoM")
    return payload


JTC_TYPE = "joint_trajectory_controller/JointTrajectoryController"
JSB_TYPE = "joint_state_broadcaster/JointStateBroadcaster"


def _parameters(controllers: dict, node: str) -> dict:
    """`node`'s ros__parameters in a loaded controllers YAML ({} where the file has no mapping there)."""
    section = controllers.get(node)
    params = section.get("ros__parameters") if isinstance(section, dict) else None
    return params if isinstance(params, dict) else {}


def trajectory_controllers(controllers: dict) -> dict[str, dict]:
    """The joint trajectory controllers a controllers YAML (as loaded) declares: name -> its ros__parameters."""
    manager = _parameters(controllers, "controller_manager")
    names = [name for name, spec in manager.items() if isinstance(spec, dict) and spec.get("type") == JTC_TYPE]
    return {name: _parameters(controllers, name) for name in names}


def check_controllers(path: str | Path, joint_names: list[str]) -> dict:
    """The controllers YAML at `path`, refused unless it declares a joint state broadcaster and a joint trajectory
    controller commanding exactly `joint_names`, in order, through interfaces the ros2_control block offers."""
    fix = "give the robot's controllers YAML (config/<robot>_controllers.yaml of payload_id_ros)"
    data = read_yaml_mapping(path, "controllers YAML", fix)
    manager = _parameters(data, "controller_manager")
    if not any(isinstance(spec, dict) and spec.get("type") == JSB_TYPE for spec in manager.values()):
        raise PayloadIdError(f"controllers YAML {path} declares no {JSB_TYPE} under controller_manager", fix)
    trajectory = trajectory_controllers(data)
    if len(trajectory) != 1:
        raise PayloadIdError(f"controllers YAML {path} declares {len(trajectory)} joint trajectory controllers, "
                             "not one", fix)
    ((name, params),) = trajectory.items()
    if list(params.get("joints") or []) != list(joint_names):
        raise PayloadIdError(f"{name} in {path} commands joints {params.get('joints')}, the robot has "
                             f"{list(joint_names)}", fix)
    for key, offered in (("command_interfaces", COMMAND_INTERFACES), ("state_interfaces", STATE_INTERFACES)):
        asked = list(params.get(key) or [])
        if not asked or not set(asked) <= set(offered):
            raise PayloadIdError(f"{name} in {path} asks for {key} {asked}; the Gazebo system offers "
                                 f"{list(offered)}", fix)
    return data


def _number(value: float) -> str:
    """The shortest text that reads back as the same float (URDF attributes; exact round trip)."""
    return repr(float(value))


def _origin(element: ET.Element) -> pin.SE3:
    """The placement an element's <origin> gives (a joint's, an inertial's)."""
    el = element.find("origin")
    xyz = [float(v) for v in el.get("xyz", "0 0 0").split()] if el is not None else [0.0] * 3
    rpy = [float(v) for v in el.get("rpy", "0 0 0").split()] if el is not None else [0.0] * 3
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz))


def _set_origin(element: ET.Element, placement: pin.SE3) -> None:
    el = element.find("origin")
    if el is None:
        el = ET.SubElement(element, "origin")
    el.set("xyz", " ".join(_number(v) for v in placement.translation))
    el.set("rpy", " ".join(_number(v) for v in pin.rpy.matrixToRpy(placement.rotation)))


def _lock(joint: ET.Element, q: float) -> None:
    """A moving joint made fixed at position q (its origin moved by the joint's motion at q)."""
    axis_el = joint.find("axis")
    axis = np.array([float(v) for v in axis_el.get("xyz", "1 0 0").split()]) if axis_el is not None \
        else np.array([1.0, 0.0, 0.0])
    axis = axis / np.linalg.norm(axis)
    if joint.get("type") == "prismatic":
        motion = pin.SE3(np.eye(3), axis * q)
    else:
        motion = pin.SE3(pin.exp3(axis * q), np.zeros(3))
    _set_origin(joint, _origin(joint) * motion)
    joint.set("type", "fixed")
    for tag in ("axis", "limit", "dynamics", "mimic", "safety_controller", "calibration"):
        for el in joint.findall(tag):
            joint.remove(el)


def _inertia_box(link: ET.Element) -> ET.Element | None:
    """A visual for a link that has none (the bundled ur10e carries no meshes): the uniform box with the link's
    mass and inertia (equivalent_box, as the payload markers draw an estimate), along its principal axes."""
    inertial = link.find("inertial")
    mass_el = None if inertial is None else inertial.find("mass")
    inertia_el = None if inertial is None else inertial.find("inertia")
    if inertial is None or mass_el is None or inertia_el is None:
        return None
    mass = float(mass_el.get("value", "0"))
    i = {k: float(inertia_el.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    matrix = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]])
    if mass <= 0:
        return None
    dims, axes = equivalent_box(mass, matrix)
    if not np.all(dims > 0):
        return None
    placement = _origin(inertial)
    visual = ET.Element("visual")
    _set_origin(visual, pin.SE3(placement.rotation @ axes, placement.translation))
    ET.SubElement(ET.SubElement(visual, "geometry"), "box", size=" ".join(_number(d) for d in dims))
    return visual


def _payload_elements(frame: str, payload: FlangePayload) -> tuple[ET.Element, ET.Element]:
    link = ET.Element("link", name=PAYLOAD_LINK)
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(_number(c) for c in payload.com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_number(payload.mass))
    ixx, ixy, ixz, iyy, iyz, izz = payload.inertia
    ET.SubElement(inertial, "inertia", ixx=_number(ixx), ixy=_number(ixy), ixz=_number(ixz),
                  iyy=_number(iyy), iyz=_number(iyz), izz=_number(izz))
    # Seen, not touched: a sphere at the CoM whose volume is the mass at water's density (no collision, so
    # it never pushes on the arm), radius at least 2 cm.
    visual = ET.SubElement(link, "visual")
    ET.SubElement(visual, "origin", xyz=" ".join(_number(c) for c in payload.com), rpy="0 0 0")
    radius = max(0.02, (3.0 * payload.mass / (4.0 * math.pi * 1000.0)) ** (1.0 / 3.0))
    ET.SubElement(ET.SubElement(visual, "geometry"), "sphere", radius=f"{radius:.4f}")
    joint = ET.Element("joint", name=PAYLOAD_JOINT, type="fixed")
    ET.SubElement(joint, "parent", link=frame)
    ET.SubElement(joint, "child", link=PAYLOAD_LINK)
    ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
    return link, joint


def _ros2_control(joints: list[str], initial: np.ndarray) -> ET.Element:
    block = ET.Element("ros2_control", name="GazeboSimSystem", type="system")
    ET.SubElement(ET.SubElement(block, "hardware"), "plugin").text = HARDWARE_PLUGIN
    for name, q0 in zip(joints, initial):
        joint = ET.SubElement(block, "joint", name=name)
        for interface in COMMAND_INTERFACES:
            ET.SubElement(joint, "command_interface", name=interface)
        for interface in STATE_INTERFACES:
            state = ET.SubElement(joint, "state_interface", name=interface)
            if interface == "position":
                ET.SubElement(state, "param", name="initial_value").text = _number(q0)
    return block


def gazebo_urdf(urdf: str | Path, controllers: str | Path, payload: FlangePayload | None = None,
                payload_frame: str | None = None, initial_positions=None) -> str:
    """The URDF text for Gazebo Sim (see the module docstring). `controllers`: the controllers YAML the
    gz_ros2_control plugin loads (written as given: the launch file passes the installed share's path);
    `payload_frame`: a link of the moving chain (default: the estimator's default payload frame);
    `initial_positions`: one per actuated joint (default: 0 clipped to the joint's limits)."""
    model = RobotModel.from_urdf(urdf)
    check_controllers(controllers, model.joint_names)
    path = resolve_urdf(urdf).resolve()
    root = ET.fromstring(resolve_package_uris(path.read_text(), path))
    joints = {j.get("name"): j for j in root.findall("joint")}
    links = {link.get("name") for link in root.findall("link")}
    lower, upper = model.model.lowerPositionLimit, model.model.upperPositionLimit
    if initial_positions is None:
        initial = np.clip(np.zeros(model.n), lower, upper)
    else:
        initial = np.asarray(initial_positions, dtype=float).reshape(-1)
        if initial.size != model.n or not np.all(np.isfinite(initial)):
            raise PayloadIdError(f"{initial.size} initial positions for {model.n} joints "
                                 f"({', '.join(model.joint_names)})",
                                 "give one finite position per joint, in rad (m for prismatic joints)")
        outside = [n for n, q, lo, hi in zip(model.joint_names, initial, lower, upper) if not lo <= q <= hi]
        if outside:
            raise PayloadIdError(f"initial positions outside the joint limits: {', '.join(outside)}",
                                 "give positions within the URDF's limits")
    # The joints the estimator locks, fixed where it locks them (RobotModel.from_urdf: 0 clipped to the limits).
    for name, joint in joints.items():
        if joint.get("type") in _MOVING and name not in model.joint_names:
            limit = joint.find("limit")
            lo = float(limit.get("lower", "0")) if limit is not None else -math.inf
            hi = float(limit.get("upper", "0")) if limit is not None else math.inf
            _lock(joint, float(np.clip(0.0, lo, hi)) if joint.get("type") != "continuous" else 0.0)
    for link in root.findall("link"):
        if link.find("visual") is None and (box := _inertia_box(link)) is not None:
            link.append(box)
    # What ros2_control or Gazebo would read twice or take for the old simulator: the URDF's own blocks.
    for tag in ("transmission", "ros2_control", "gazebo"):
        for el in root.findall(tag):
            root.remove(el)
    children = {child.get("link") for child in root.findall("joint/child")}
    roots = [str(name) for name in links if name not in children]
    if roots != [WORLD_LINK]:
        (base,) = roots    # pinocchio parsed the file: it is one tree
        root.append(ET.Element("link", name=WORLD_LINK))
        fixed = ET.SubElement(root, "joint", name="world_joint", type="fixed")
        ET.SubElement(fixed, "parent", link=WORLD_LINK)
        ET.SubElement(fixed, "child", link=base)
        ET.SubElement(fixed, "origin", xyz="0 0 0", rpy="0 0 0")
    if payload is not None:
        frame = str(model.payload_frame(payload_frame))
        if frame not in links:
            raise PayloadIdError(f"payload frame '{frame}' is not a link of {path.name}",
                                 "give a link of the moving chain (e.g. tool0, panda_link8)")
        if PAYLOAD_LINK in links or PAYLOAD_JOINT in joints:
            raise PayloadIdError(f"{path.name} already has a '{PAYLOAD_LINK}' link or '{PAYLOAD_JOINT}' joint",
                                 "rename it in a copy of the URDF")
        root.extend(_payload_elements(frame, payload))
    root.append(_ros2_control(model.joint_names, initial))
    gazebo = ET.SubElement(root, "gazebo")
    plugin = ET.SubElement(gazebo, "plugin", filename=GZ_PLUGIN_FILENAME, name=GZ_PLUGIN_NAME)
    ET.SubElement(plugin, "parameters").text = str(controllers)
    root.insert(0, ET.Comment(f" generated by payload-id gazebo-urdf from {path.name}: edit the source, not this "))
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
