"""Wrist force/torque sensor: payload identification and a gravity- and inertia-compensated wrench
(Duan 2022, Atkeson 1986). See ft.compensate for the measurement model. Callers outside the package import
from here."""

from payload_id_core.ft.api import identify_ft, identify_payload_ft, validate_ft
from payload_id_core.ft.compensate import (
                                           Compensator,
                                           FtParameters,
                                           compensate,
                                           compensate_batch,
                                           payload_wrench_batch,
                                           residual_rmse,
)
from payload_id_core.ft.identify import DuanStatic, FtIdentification, duan_static_linear
from payload_id_core.ft.kinematics import SensorFrame, payload_transform, resolve_sensor_frame, tilt_gravity
from payload_id_core.ft.storage import ft_parameters_from_payload, load_ft_parameters, save_ft_parameters
from payload_id_core.ft.stream import CompensationStream

__all__ = ["CompensationStream", "Compensator", "DuanStatic", "FtIdentification", "FtParameters", "SensorFrame",
           "compensate", "compensate_batch", "ft_parameters_from_payload", "identify_ft", "load_ft_parameters",
           "save_ft_parameters", "identify_payload_ft", "validate_ft", "duan_static_linear", "payload_transform",
           "payload_wrench_batch", "residual_rmse", "resolve_sensor_frame", "tilt_gravity"]
