"""Where the wrist F/T sensor is and how it moves: sensor frame, payload frame, base tilt, Newton–Euler wrench.

The sensor frame S is any URDF frame (its name = the WrenchStamped frame_id), or a fixed transform
from a URDF frame given in config. Its spatial velocity and acceleration come from forward
kinematics of the joint motion (no accelerometer). The wrench model is the rigid-body
Newton–Euler equation written linearly in the 10 inertial parameters (Atkeson, An, Hollerbach
1986, eq. 7–9; pinocchio `bodyRegressor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.inertia import transform_matrix
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError


@dataclass(frozen=True)
class SensorFrame:
    """The sensor frame S, rigidly attached to joint `joint` (1..n) at `placement` (S in the joint frame)."""

    name: str
    joint: int
    placement: pin.SE3

    @property
    def motion_from_joint(self) -> np.ndarray:
        """6×6 matrix mapping a joint-frame (LOCAL) motion vector [linear; angular] to the sensor frame."""
        return np.array(self.placement.inverse().action)


def known_frames(model: RobotModel) -> list[str]:
    return [f.name for f in model.model.frames if f.type in (pin.FrameType.BODY, pin.FrameType.FIXED_JOINT)]


def resolve_sensor_frame(model: RobotModel, name: str, mount: tuple[str, pin.SE3] | None = None) -> SensorFrame:
    """The sensor frame `name`: a URDF frame, or `mount` = (URDF frame, placement of the sensor in it) from config.

    A name the URDF does not know (and no mount) raises PayloadIdError listing the known frames.
    """
    if mount is not None:
        parent, placement = mount
        if not model.model.existFrame(parent):
            raise PayloadIdError(f"sensor mount frame '{parent}' is not in the URDF {model.urdf_path.name}",
                                 f"mount the sensor on one of: {', '.join(known_frames(model))}")
        joint, in_joint = model.frame_in_joint(parent)
        return SensorFrame(name, joint, in_joint * placement)
    if not model.model.existFrame(name):
        raise PayloadIdError(
            f"F/T sensor frame '{name}' (the WrenchStamped frame_id) is not in the URDF {model.urdf_path.name}",
            "give the sensor's fixed transform in config (sensor mount) or use one of: "
            f"{', '.join(known_frames(model))}")
    joint, placement = model.frame_in_joint(name)
    return SensorFrame(name, joint, placement)


def sensor_mount_from_config(d: dict, what: str = "ft_sensor.mount") -> tuple[str, pin.SE3]:
    """(parent frame, SE3) from config `{parent: tool0, xyz: [x, y, z], rpy: [r, p, y]}` (URDF <origin> convention)."""
    try:
        parent = str(d["parent"])
        xyz = np.array(d.get("xyz", [0.0, 0.0, 0.0]), dtype=float).reshape(3)
        rpy = np.array(d.get("rpy", [0.0, 0.0, 0.0]), dtype=float).reshape(3)
    except (KeyError, TypeError, ValueError) as err:
        raise PayloadIdError(f"{what} is malformed ({err})",
                             "write {parent: <URDF frame>, xyz: [x, y, z], rpy: [roll, pitch, yaw]}") from err
    if not (np.all(np.isfinite(xyz)) and np.all(np.isfinite(rpy))):
        raise PayloadIdError(f"{what} holds NaN or infinity", "give finite xyz (m) and rpy (rad)")
    return parent, pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)


def payload_transform(model: RobotModel, sensor: SensorFrame, payload_frame: str) -> np.ndarray:
    """10×10 X with φ_sensor = X φ_payload (inertia.transform_matrix of the payload frame's placement in S).

    The payload must ride on the sensor's body: a payload frame on another body is refused.
    """
    if payload_frame == sensor.name:
        return np.eye(10)
    joint, in_joint = model.frame_in_joint(payload_frame)
    if joint != sensor.joint:
        raise PayloadIdError(
            f"payload frame '{payload_frame}' is not rigidly attached to the F/T sensor frame '{sensor.name}'",
            f"give a payload frame on the body that carries the sensor (joint {model.joint_names[sensor.joint - 1]})")
    return transform_matrix(sensor.placement.inverse() * in_joint)


def tilt_gravity(g: float, tilt_u: float, tilt_v: float) -> np.ndarray:
    """Gravity in the robot base frame when the base is tilted by U about x and V about y (Duan 2022 eq. 10, 13).

    R_WB = Rx(U) Ry(V), g_B = R_WBᵀ [0, 0, −g] = g [cos U sin V, −sin U, −cos U cos V].
    """
    cu, su, cv, sv = np.cos(tilt_u), np.sin(tilt_u), np.cos(tilt_v), np.sin(tilt_v)
    return g * np.array([cu * sv, -su, -cu * cv])


def tilt_gravity_derivatives(g: float, tilt_u: float, tilt_v: float) -> tuple[np.ndarray, np.ndarray]:
    cu, su, cv, sv = np.cos(tilt_u), np.sin(tilt_u), np.cos(tilt_v), np.sin(tilt_v)
    return g * np.array([-su * sv, -cu, su * cv]), g * np.array([cu * cv, 0.0, cu * sv])


def tilt_from_gravity(g_base: np.ndarray) -> tuple[float, float]:
    """(U, V) from a gravity direction in the base frame (Duan 2022 eq. 23)."""
    d = np.asarray(g_base, float) / np.linalg.norm(g_base)
    return float(np.arcsin(np.clip(-d[1], -1.0, 1.0))), float(np.arctan2(d[0], -d[2]))


@dataclass
class SensorMotion:
    """Batch of sensor-frame kinematics: rotation in the base, spatial velocity and acceleration in S."""

    rotation: np.ndarray      # (N, 3, 3) R_BS
    velocity: np.ndarray      # (N, 6) [linear; angular], LOCAL (sensor axes, sensor origin)
    acceleration: np.ndarray  # (N, 6) spatial acceleration, LOCAL, without gravity


def sensor_motion(model: RobotModel, sensor: SensorFrame, q, qd, qdd, data: pin.Data | None = None) -> SensorMotion:
    """Forward kinematics of the sensor frame for every sample ((N, n) inputs)."""
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    data = data if data is not None else model.model.createData()
    n_samples, j = q.shape[0], sensor.joint
    rot = np.empty((n_samples, 3, 3))
    vel = np.empty((n_samples, 6))
    acc = np.empty((n_samples, 6))
    for k in range(n_samples):
        pin.forwardKinematics(model.model, data, q[k], qd[k], qdd[k])
        rot[k] = data.oMi[j].rotation
        vel[k] = data.v[j].vector
        acc[k] = data.a[j].vector
    x_sj = sensor.motion_from_joint
    # einsum rather than BLAS for these (N, small) products: see identify._lstsq.
    return SensorMotion(np.einsum("nij,jk->nik", rot, np.array(sensor.placement.rotation)),
                        np.einsum("ij,nj->ni", x_sj, vel), np.einsum("ij,nj->ni", x_sj, acc))


def newton_euler_wrench(velocity: np.ndarray, acceleration: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """(N, 6) net wrench [force; torque] on a rigid body about its frame origin: I a + v ×* (I v).

    φ = [m, h = m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about the frame origin; batch form of
    pinocchio's bodyRegressor(v, a) @ φ (Atkeson 1986 eq. 7–8).
    """
    vl, w = velocity[:, :3], velocity[:, 3:]
    al, dw = acceleration[:, :3], acceleration[:, 3:]
    m, h = phi[0], phi[1:4]
    ixx, ixy, iyy, ixz, iyz, izz = phi[4:]
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    h = np.broadcast_to(h, vl.shape)
    lin_mom = m * vl + np.cross(w, h)
    ang_mom = np.cross(h, vl) + np.einsum("ij,nj->ni", inertia, w)
    force = m * al + np.cross(dw, h) + np.cross(w, lin_mom)
    torque = np.cross(h, al) + np.einsum("ij,nj->ni", inertia, dw) + np.cross(w, ang_mom) + np.cross(vl, lin_mom)
    return np.hstack([force, torque])


def wrench_regressor(velocity: np.ndarray, acceleration: np.ndarray) -> np.ndarray:
    """(N, 6, 10) Y with Y[k] @ φ = newton_euler_wrench (columns: the wrench of each unit parameter)."""
    return np.stack([newton_euler_wrench(velocity, acceleration, e) for e in np.eye(10)], axis=-1)


def gravity_wrench_regressor(g_sensor: np.ndarray) -> np.ndarray:
    """(N, 6, 10) G with G[k] @ φ = the gravity wrench on the body, [m g; h × g], g in sensor axes."""
    n_samples = g_sensor.shape[0]
    reg = np.zeros((n_samples, 6, 10))
    reg[:, :3, 0] = g_sensor
    # h × g = −g × h = −[g]× h
    gx, gy, gz = g_sensor.T
    reg[:, 3, 2], reg[:, 3, 3] = gz, -gy
    reg[:, 4, 1], reg[:, 4, 3] = -gz, gx
    reg[:, 5, 1], reg[:, 5, 2] = gy, -gx
    return reg
