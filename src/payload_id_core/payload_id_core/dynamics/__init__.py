"""Rigid-body dynamics of the robot: URDF model, inertial parameters (and their physical consistency),
regressors, base parameters, friction."""
