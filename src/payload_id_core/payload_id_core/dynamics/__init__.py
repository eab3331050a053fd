"""Rigid-body dynamics of the robot: URDF model, inertial parameters (and their physical consistency),
regressors, base parameters, friction. Callers outside the package import from here."""

from payload_id_core.dynamics.base_params import BaseParameters, compute_base_parameters
from payload_id_core.dynamics.consistency import project_feasible
from payload_id_core.dynamics.friction import FrictionModel, make_friction_model
from payload_id_core.dynamics.inertia import (
    PARAM_NAMES,
    equivalent_box,
    from_mass_com_inertia,
    is_physically_consistent,
    to_mass_com_inertia,
    transform_matrix,
)
from payload_id_core.dynamics.model import RobotModel, bundled_urdf
from payload_id_core.dynamics.regressor import payload_regressor, payload_transform, rigid_body_regressor

__all__ = [
    "BaseParameters", "compute_base_parameters", "equivalent_box", "FrictionModel", "from_mass_com_inertia",
    "is_physically_consistent", "make_friction_model", "PARAM_NAMES", "payload_regressor", "payload_transform",
    "project_feasible", "rigid_body_regressor", "RobotModel", "bundled_urdf", "to_mass_com_inertia", "transform_matrix",
]
