"""Robot model from a URDF: pinocchio model restricted to the actuated joints, frames, limits.

Any serial robot described by a URDF works. Joints that are not actuated for identification
(grippers' fingers, mimic joints) are locked at a reference position, so the model's joint order
is exactly `joint_names` (DESIGN.md: joint order = the URDF's actuated joints, or those asked for).
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from payload_id_core.errors import PayloadIdError
from payload_id_core.resources import bundled_dir, bundled_names

GRAVITY = np.array([0.0, 0.0, -9.81])

# Bundled robots: name -> URDF path relative to example-robot-data's robots/ (others: payload_id_core/data/urdf).
_ERD_URDFS = {
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
}
# Joints actuated by default for robots whose URDF carries more (the Panda's fingers).
_DEFAULT_JOINTS = {
    "panda": [f"panda_joint{i}" for i in range(1, 8)],
}


def bundled_urdf(name: str) -> Path:
    """Path of a URDF shipped with the project or example-robot-data: ur3, ur5, ur10, ur10e, panda, planar_2r."""
    local = bundled_dir("urdf") / f"{name}.urdf"
    if local.is_file():
        return local
    if name in _ERD_URDFS:
        path = _example_robot_data_dir()
        if path is None:
            raise PayloadIdError(
                f"robot '{name}' is one of example-robot-data's URDFs, and example-robot-data is not installed",
                "pip install example-robot-data (ROS has no package of it), or give the robot's URDF path "
                "(e.g. the one its driver's description package generates)")
        path = path / _ERD_URDFS[name]
        if path.is_file():
            return path
    raise PayloadIdError(f"unknown robot '{name}'", f"use a URDF path or one of: {', '.join(known_robots())}")


def known_robots() -> list[str]:
    """Names bundled_urdf accepts."""
    return sorted(set(_ERD_URDFS) | set(bundled_names("urdf", ".urdf")))


def _example_robot_data_dir() -> Path | None:
    """example-robot-data's robots/ directory: its PyPI wheel installs it under cmeel's prefix (None: absent,
    e.g. a ROS install whose pinocchio came from apt)."""
    try:
        import cmeel  # noqa: PLC0415 - ~0.4 s to import; only example-robot-data's URDFs (under its prefix) need it
    except ImportError:
        return None
    path = Path(cmeel.__path__[0]).parent / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
    return path if path.is_dir() else None


def resolve_urdf(urdf: str | Path) -> Path:
    """A URDF path, or the name of a bundled robot."""
    path = Path(urdf)
    if path.suffix.lower() in (".urdf", ".xml") or path.exists():
        if not path.is_file():
            raise PayloadIdError(f"URDF file {path} does not exist",
                                 f"give an existing URDF file or a bundled robot: {', '.join(known_robots())}")
        return path
    return bundled_urdf(str(urdf))


@dataclass(frozen=True)
class JointLimits:
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def _urdf_text(path: Path) -> str:
    """The URDF's text, checked to be XML with a <robot> root before pinocchio sees it: urdfdom prints its
    own complaints about anything else to stderr, under the one line the command line refuses it with."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise PayloadIdError(f"cannot read URDF {path} as text ({err})", "give a URDF file or a bundled robot name") \
            from err
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise PayloadIdError(f"URDF {path} is not XML ({err})", "give a URDF file or a bundled robot name") from err
    if root.tag != "robot":
        raise PayloadIdError(f"URDF {path} has <{root.tag}> as its root, not <robot>",
                             "give a URDF file or a bundled robot name")
    return text



class PayloadFrame(str):
    """The frame a payload is identified in, resolved (none given: the robot's flange) and checked against the
    URDF once, where the input enters (the CLI's parser, a goal's acceptance, identify_payload): RobotModel.
    payload_frame makes it, and the layers below take it as given. A str: it is written and compared as one."""

    __slots__ = ()


class RobotModel:
    """A serial robot for identification: pinocchio model + data, actuated joints in order.

    Attributes:
        model, data: pinocchio Model/Data restricted to `joint_names` (each 1-dof: nq == nv == n).
        joint_names: actuated joints in model order.
        n: number of actuated joints.
        urdf_path, urdf_sha256: where the model came from (robot.yaml stores the hash to refuse
            a result made for another robot).
    """

    def __init__(self, model: pin.Model, urdf_path: Path, urdf_text: str):
        self.model = model
        self.data = model.createData()
        self.urdf_path = Path(urdf_path)
        self.urdf_sha256 = hashlib.sha256(urdf_text.encode()).hexdigest()
        self.joint_names = [model.names[i] for i in range(1, model.njoints)]
        self.n = model.nv
        if model.nq != model.nv:
            raise PayloadIdError(
                f"{urdf_path}: joints with more than one configuration variable (continuous or floating)",
                "give revolute joints with limits, or list the joints to identify with joint_names",
            )

    @classmethod
    def from_urdf(cls, urdf: str | Path, joint_names: list[str] | None = None,
                  gravity: np.ndarray | list[float] | None = None) -> RobotModel:
        """Load a URDF (path or bundled name). `joint_names` selects the actuated joints; the rest are locked at 0
        (or at their lower limit when 0 is outside the range)."""
        path = resolve_urdf(urdf)
        text = _urdf_text(path)
        try:
            full = pin.buildModelFromXML(text)
        except Exception as err:  # noqa: BLE001 - pinocchio raises generic errors for bad XML
            raise PayloadIdError(f"cannot parse URDF {path}: {err}", "check that it is a valid URDF") from err
        if joint_names is None:
            joint_names = _DEFAULT_JOINTS.get(path.stem)
        if joint_names is not None:
            names = [full.names[i] for i in range(1, full.njoints)]
            unknown = [j for j in joint_names if j not in names]
            if unknown:
                raise PayloadIdError(
                    f"joints {unknown} are not in the URDF {path.name}",
                    f"use names among {names}",
                )
            lock_ids = [full.getJointId(j) for j in names if j not in joint_names]
            if lock_ids:
                q_ref = np.clip(np.zeros(full.nq), full.lowerPositionLimit, full.upperPositionLimit)
                full = pin.buildReducedModel(full, lock_ids, q_ref)
            order = [full.names[i] for i in range(1, full.njoints)]
            if order != list(joint_names):
                raise PayloadIdError(
                    f"joint order {list(joint_names)} differs from the kinematic order {order}",
                    "list the joints from base to tip",
                )
        model = cls(full, path, text)
        model.set_gravity(GRAVITY if gravity is None else gravity)
        return model

    # -- frames ---------------------------------------------------------------------------------
    def set_gravity(self, gravity) -> None:
        """Gravity vector in the base frame (tilted bases: rotate it)."""
        g = np.asarray(gravity, dtype=float).reshape(3)
        self.model.gravity = pin.Motion(g, np.zeros(3))

    @property
    def gravity(self) -> np.ndarray:
        return np.array(self.model.gravity.linear)

    @property
    def default_payload_frame(self) -> str:
        """The child link of the last actuated joint (DESIGN.md)."""
        last = self.model.njoints - 1
        for f in self.model.frames:
            if f.parentJoint == last and f.type == pin.FrameType.BODY:
                return f.name
        return self.model.names[last]

    def payload_frame(self, name: str | None = None) -> PayloadFrame:
        """`name` (None or '': default_payload_frame) checked against the URDF and on the moving chain, as a
        PayloadFrame; a PayloadFrame is returned as it is: it was checked at the edge that made it."""
        if isinstance(name, PayloadFrame):
            return name
        frame = name or self.default_payload_frame
        if self.model.frames[self.frame_id(frame)].parentJoint < 1:
            # A payload there loads no joint: the simulator would write an unloaded run, a fit would find nothing.
            raise PayloadIdError(f"frame '{frame}' is fixed to the robot base, a payload there does not move",
                                 "choose a frame on the moving chain, e.g. the flange or tool0")
        return PayloadFrame(frame)

    def frame_id(self, name: str) -> int:
        if not self.model.existFrame(name):
            frames = [f.name for f in self.model.frames if f.type in (pin.FrameType.BODY, pin.FrameType.FIXED_JOINT)]
            raise PayloadIdError(f"frame '{name}' is not in the URDF {self.urdf_path.name}",
                                 f"use one of: {', '.join(frames)}")
        return self.model.getFrameId(name)

    def frame_in_joint(self, name: str) -> tuple[int, pin.SE3]:
        """(joint index 1..n, placement of the frame in that joint's frame)."""
        f = self.model.frames[self.frame_id(name)]
        return int(f.parentJoint), f.placement

    # -- parameters and limits ------------------------------------------------------------------
    def link_parameters(self) -> np.ndarray:
        """(n, 10) inertial parameters of each moving body, pinocchio order
        [m, m·cx, m·cy, m·cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about the joint frame origin."""
        return np.array([self.model.inertias[i].toDynamicParameters() for i in range(1, self.model.njoints)])

    def standard_parameters(self) -> np.ndarray:
        """The link parameters flattened to (10 n,), the column order of pinocchio's joint torque regressor."""
        return self.link_parameters().reshape(-1)

    @property
    def limits(self) -> JointLimits:
        m = self.model
        return JointLimits(np.array(m.lowerPositionLimit), np.array(m.upperPositionLimit),
                           np.array(m.velocityLimit), np.array(m.effortLimit))

    def rnea(self, q, qd, qdd) -> np.ndarray:
        return np.array(pin.rnea(self.model, self.data, np.asarray(q, float), np.asarray(qd, float),
                                 np.asarray(qdd, float)))

    def match_joint_order(self, names: list[str]) -> np.ndarray:
        """Index array `idx` with names[idx[k]] == joint_names[k]; JointState entries are matched by name."""
        missing = [j for j in self.joint_names if j not in names]
        if missing:
            raise PayloadIdError(f"joint states lack joints {missing} of the URDF",
                                 f"record all of {self.joint_names} or pass the right --urdf")
        return np.array([list(names).index(j) for j in self.joint_names])
