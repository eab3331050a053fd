"""Rigid-body dynamics of the robot: URDF model, inertial parameters, regressors, base parameters, friction."""
