"""Identification of the unloaded robot (base parameters, rotor inertia, friction, drive gains) -> robot.yaml.

One job per module: structure (which unknowns the data can see), regressors (the model's columns,
the excitation check), friction_shapes (shape search, joint refinement, shape covariance),
estimators (OLS, WLS, the physically consistent SDP), result (RobotIdentification, robot.yaml),
pipeline (signals -> one fit of the model the caller names, validation: fit_given_model chooses nothing),
drive_gains (Gautier & Briot effort scale; the gains a consumer applies: resolve_drive_gains), scale_check
(identified gravity parameters against the URDF's: are the torques torques?).
Callers import the public API from this package. robot.yaml as `payload-id identify-robot` makes it, every choice
made from the data (friction model, gains' friction model, model error, load friction): payload_id_core.
robot_identification.identify_robot (it needs the payload methods, a layer above this one).
"""

from payload_id_core.robot_id.drive_gains import (
    DriveGains,
    common_effort_unit,
    identify_effort_scale,
    resolve_drive_gains,
)
from payload_id_core.robot_id.pipeline import (
    IDENTIFICATION_VERSION,
    fit_given_model,
    identify_from_signals,
    validate_robot,
)
from payload_id_core.robot_id.regressors import COND_LIMIT, excitation_check, full_regressor, inertial_regressor
from payload_id_core.robot_id.result import FORMAT_VERSION, IDENTIFIED_GAINS_SOURCE, RobotIdentification
from payload_id_core.robot_id.scale_check import ScaleCheck, check_scale
from payload_id_core.robot_id.structure import RotorStructure, base_parameter_names, inertial_map, rotor_structure

__all__ = [
    "base_parameter_names", "check_scale", "common_effort_unit", "COND_LIMIT", "DriveGains", "excitation_check",
    "FORMAT_VERSION", "full_regressor", "IDENTIFICATION_VERSION", "IDENTIFIED_GAINS_SOURCE", "identify_effort_scale",
    "fit_given_model", "identify_from_signals", "inertial_map", "inertial_regressor", "resolve_drive_gains",
    "RobotIdentification", "rotor_structure", "RotorStructure", "ScaleCheck", "validate_robot",
]


def __getattr__(name: str):
    # The name this package's one fit had before it was renamed: said loudly, so a caller does not keep a robot.yaml
    # with none of identify-robot's choices (load friction on where the gains absorbed it: +3-5 % on the real UR10e).
    if name == "identify_robot":
        raise ImportError("payload_id_core.robot_id.identify_robot is now payload_id_core.robot_identification."
                          "identify_robot (identify-robot's path, every choice made) or robot_id.fit_given_model "
                          "(one fit of the model you name, no choice made)", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
