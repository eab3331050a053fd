"""Exciting trajectories: Fourier parametrisation, motion limits, playback. Their optimal design simulates
and identifies candidate runs, so it sits above the simulation: payload_id_core.excitation_design.
Callers outside the package import from here."""

from payload_id_core.excitation.fourier import FourierTrajectory, bundled_trajectories, load_trajectory
from payload_id_core.excitation.limits import CartesianLimit, MotionLimits, check_limits, check_trajectory
from payload_id_core.excitation.playback import (
    move_to_start,
    playback_points,
    stop_from_commanded,
    stop_trajectory,
    time_scaled,
)

__all__ = ["bundled_trajectories", "CartesianLimit", "check_limits", "check_trajectory", "FourierTrajectory",
           "load_trajectory", "MotionLimits", "move_to_start", "playback_points", "stop_from_commanded",
           "stop_trajectory", "time_scaled"]
