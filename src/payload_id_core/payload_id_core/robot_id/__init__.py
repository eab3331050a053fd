"""Identification of the unloaded robot (base parameters, rotor inertia, friction, drive gains) -> robot.yaml."""
