"""A physics-simulated robot cell (MuJoCo behind a backend interface) that plays JointTrajectories
like ros2_control and records what a real cell's topics would carry (joint states, commands, wrench).

`simulate(...)` is the offline player behind `payload-id simulate`; `SimulatedCell` is the steppable
cell the mock_hardware node runs in real time. MuJoCo is imported only when a cell is built without a
backend of its own (sim.cell), so importing this package does not need it.
"""

from __future__ import annotations

import math

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples
from payload_id_core.sim.cell import CellSamples, SimulatedCell
from payload_id_core.sim.controller import validate_trajectory
from payload_id_core.sim.profile import SimProfile, load_profile

__all__ = ["simulate", "SimulatedCell", "CellSamples", "SimProfile", "load_profile", "recording_from_samples"]


def _commanded(model: RobotModel, trajectory, points_rate_hz: float, start_time: float) -> CommandedTrajectory:
    if isinstance(trajectory, CommandedTrajectory):
        return CommandedTrajectory(trajectory.start_time if trajectory.start_time > 0 else start_time,
                                   list(trajectory.joint_names), trajectory.time_from_start, trajectory.positions,
                                   trajectory.velocities, trajectory.accelerations)
    if hasattr(trajectory, "to_commanded") and hasattr(trajectory, "for_model"):
        return trajectory.for_model(list(model.joint_names)).to_commanded(points_rate_hz, start_time=start_time)
    raise PayloadIdError(f"cannot play a {type(trajectory).__name__}",
                         "give a FourierTrajectory or a CommandedTrajectory")


def recording_from_samples(cell: SimulatedCell, s: CellSamples, commanded: list[CommandedTrajectory],
                           source: str = "simulation") -> Recording:
    joints = JointSamples(s.t, list(cell.model.joint_names), s.q, s.qd, s.tau)
    wrench = None
    if s.wrench is not None:
        wrench = WrenchSamples(s.t, cell.sensor_frame, s.wrench[:, :3], s.wrench[:, 3:])
    p = cell.profile
    payload = ("none" if cell.payload is None else
               f"{cell.payload.mass:g} kg at {cell._payload_frame}, phi {np.round(cell.payload.phi, 9).tolist()}")
    notes = [Note(NoteCode.SIM_SETUP,
                  f"simulated: profile {p.name}, physics step {p.timestep * 1e3:g} ms, control {cell.rate_hz:g} Hz"),
             Note(NoteCode.SIM_PAYLOAD, "payload: " + payload)]
    return Recording(joints=joints, commanded=list(commanded), wrench=wrench, source=source, notes=notes)


def simulate(model_or_urdf, trajectory, payload: PayloadEstimate | None = None, profile: SimProfile | str = "clean",
             seed: int = 0, *, rate_hz: float = 500.0, lead_in: float = 0.5, lead_out: float = 0.5,
             points_rate_hz: float = 100.0) -> Recording:
    """Play `trajectory` (FourierTrajectory, or a CommandedTrajectory in any joint order) on the simulated
    cell and return the Recording (joint states at `rate_hz` with torque = K·effort, the commanded
    trajectory, the F/T wrench). The robot rests at the first point for `lead_in` s before the
    trajectory starts and is recorded for `lead_out` s after it ends. Deterministic for a seed.
    A FourierTrajectory is sent as points at `points_rate_hz` with positions, velocities and
    accelerations (quintic interpolation in the controller), as the excitation player sends it."""
    model = model_or_urdf if isinstance(model_or_urdf, RobotModel) else RobotModel.from_urdf(model_or_urdf)
    if lead_in < 0 or lead_out < 0:
        raise PayloadIdError("negative lead-in or lead-out time", "use times >= 0")
    cmd = _commanded(model, trajectory, points_rate_hz, lead_in)
    q0 = validate_trajectory(model, cmd).positions[0]
    cell = SimulatedCell(model, profile, payload, seed=seed, rate_hz=rate_hz, q0=q0)
    sent = cell.send(cmd)
    samples = int(math.floor((sent.end_time + lead_out) * rate_hz + 1e-9)) + 1
    s = cell.advance(samples)
    return recording_from_samples(cell, s, [sent])
