"""ft.yaml: what the compensation node needs (sensor frame, offsets, base tilt, payload in the sensor frame).

payload.yaml (PayloadEstimate) describes the payload for people and controllers; compensation also
needs the sensor's own offsets and the base tilt. `FtParameters.from_payload` combines a payload
identified any way (e.g. from joint torques) with offsets from a quick F/T calibration.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.kinematics import SensorFrame, payload_transform, resolve_sensor_frame
from payload_id_core.io.files import atomic_write_yaml, read_yaml_mapping
from payload_id_core.payload_estimate import PayloadEstimate

FORMAT = "payload_id/ft_parameters/1"


def ft_parameters_to_dict(model: RobotModel, params: FtParameters) -> dict:
    s = params.sensor
    quat = pin.Quaternion(s.placement.rotation)
    return {
        "format": FORMAT,
        "urdf_sha256": model.urdf_sha256,
        "sensor_frame": s.name,
        "sensor_in_joint": {"joint": model.joint_names[s.joint - 1],
                            "translation": [float(v) for v in s.placement.translation],
                            "quaternion_xyzw": [float(quat.x), float(quat.y), float(quat.z), float(quat.w)]},
        "offset": {"force": [float(v) for v in params.offset[:3]], "torque": [float(v) for v in params.offset[3:]]},
        "base_tilt_rad": [float(params.tilt[0]), float(params.tilt[1])],
        "gravity": float(params.gravity_norm),
        "parameters_in_sensor_frame": [float(v) for v in params.phi_sensor],
    }


def ft_parameters_from_dict(model: RobotModel, d: dict, source: str = "ft parameters") -> FtParameters:
    try:
        if d.get("format") != FORMAT:
            raise ValueError(f"format is {d.get('format')!r}, expected {FORMAT!r}")
        if d.get("urdf_sha256") not in (None, model.urdf_sha256):
            raise PayloadIdError(f"{source} was identified with another URDF than {model.urdf_path.name}",
                                 "identify the F/T sensor again with this robot's URDF")
        sj = d["sensor_in_joint"]
        if sj["joint"] not in model.joint_names:
            raise PayloadIdError(f"{source}: joint '{sj['joint']}' is not an actuated joint of {model.urdf_path.name}",
                                 f"use one of {model.joint_names}")
        x, y, z, w = (float(v) for v in sj["quaternion_xyzw"])
        placement = pin.SE3(pin.Quaternion(w, x, y, z).normalized().matrix(),
                            np.array(sj["translation"], dtype=float))
        sensor = SensorFrame(str(d["sensor_frame"]), model.joint_names.index(sj["joint"]) + 1, placement)
        phi = np.array(d["parameters_in_sensor_frame"], dtype=float).reshape(10)
        offset = np.concatenate([np.array(d["offset"]["force"], float).reshape(3),
                                 np.array(d["offset"]["torque"], float).reshape(3)])
        tilt = tuple(float(v) for v in d.get("base_tilt_rad", [0.0, 0.0]))
        gravity = float(d.get("gravity", 9.81))
    except (KeyError, TypeError, ValueError) as err:
        raise PayloadIdError(f"{source} is malformed ({err})", "write it with payload-id (ft.yaml)") from err
    if not (np.all(np.isfinite(phi)) and np.all(np.isfinite(offset)) and len(tilt) == 2):
        raise PayloadIdError(f"{source} holds NaN or a tilt that is not [U, V]", "identify the F/T sensor again")
    return FtParameters(sensor, phi, offset, (tilt[0], tilt[1]), gravity)


def save_ft_parameters(path: str | Path, model: RobotModel, params: FtParameters) -> None:
    atomic_write_yaml(path, ft_parameters_to_dict(model, params))


def load_ft_parameters(path: str | Path, model: RobotModel) -> FtParameters:
    d = read_yaml_mapping(path, "F/T parameter file", "identify the sensor first (method ft)")
    return ft_parameters_from_dict(model, d, str(path))


def ft_parameters_from_payload(model: RobotModel, payload: PayloadEstimate, sensor_frame: str, *,
                               offset=None, tilt=(0.0, 0.0), sensor_mount=None) -> FtParameters:
    """Compensation parameters from a payload identified any way (its φ in payload.frame) plus
    sensor offsets and tilt (e.g. from a static F/T calibration without this payload)."""
    sensor = resolve_sensor_frame(model, sensor_frame, sensor_mount)
    phi = np.where(np.isfinite(payload.phi), payload.phi, 0.0)
    phi_s = payload_transform(model, sensor, payload.frame) @ phi
    offset = np.zeros(6) if offset is None else np.asarray(offset, dtype=float).reshape(6)
    return FtParameters(sensor, phi_s, offset, (float(tilt[0]), float(tilt[1])),
                        float(np.linalg.norm(model.gravity)))
