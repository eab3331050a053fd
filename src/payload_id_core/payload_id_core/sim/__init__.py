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
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples
from payload_id_core.sim.backend import PhysicsBackend, SimulationDiverged
from payload_id_core.sim.cell import CellSamples, SimulatedCell
from payload_id_core.sim.controller import validate_trajectory
from payload_id_core.sim.pick_place import pick_and_place, point_to_point
from payload_id_core.sim.profile import SimProfile, load_profile

__all__ = ["simulate", "SimulatedCell", "CellSamples", "SimProfile", "load_profile", "recording_from_samples",
           "PhysicsBackend", "SimulationDiverged", "pick_and_place", "point_to_point"]


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


# Memory of one simulated sample, measured on the UR10 profile: ~2.9 KB in the cell (per-step Python
# lists, the controller's plan, the noisy copies) and ~1 KB more when the bag is written. The budget keeps
# `payload-id simulate` well inside a laptop's memory: 500 000 samples, 1000 s at 500 Hz.
SIM_BYTES_PER_SAMPLE = 4096
SIM_MEMORY_BUDGET = 2 * 1024**3


def check_simulation_size(seconds: float, rate_hz: float) -> int:
    """The number of samples `seconds` of simulation at `rate_hz` produce; refused up front (before any
    allocation) when their memory exceeds SIM_MEMORY_BUDGET, or when the times are not finite."""
    if not (math.isfinite(seconds) and seconds >= 0 and math.isfinite(rate_hz) and rate_hz > 0):
        raise PayloadIdError(f"cannot simulate {seconds} s at {rate_hz} Hz",
                             "give finite, non-negative times and a positive rate")
    samples = int(math.floor(seconds * rate_hz)) + 1
    need = samples * SIM_BYTES_PER_SAMPLE
    if need > SIM_MEMORY_BUDGET:
        limit_s = SIM_MEMORY_BUDGET / SIM_BYTES_PER_SAMPLE / rate_hz
        raise PayloadIdError(
            f"simulating {seconds:g} s at {rate_hz:g} Hz ({samples} samples) would need about "
            f"{need / 1024**3:.3g} GiB of memory; the limit is {SIM_MEMORY_BUDGET / 1024**3:g} GiB, "
            f"about {limit_s:.0f} s at this rate",
            "shorten the trajectory or the lead-in, lower --rate, or simulate in several runs")
    return samples


def _play_seconds(trajectory) -> float:
    """How long `trajectory` plays (its duration or last point), before any sampling of it."""
    if isinstance(trajectory, CommandedTrajectory):
        return float(trajectory.time_from_start[-1]) if trajectory.time_from_start.size else 0.0
    return float(getattr(trajectory, "duration", 0.0))


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
    if not (lead_in >= 0 and lead_out >= 0):
        raise PayloadIdError(f"lead-in {lead_in} s or lead-out {lead_out} s is negative or not a number",
                             "use times >= 0")
    check_simulation_size(lead_in + _play_seconds(trajectory) + lead_out, rate_hz)
    check_simulation_size(lead_in + _play_seconds(trajectory), points_rate_hz)   # the commanded points
    cmd = _commanded(model, trajectory, points_rate_hz, lead_in)
    q0 = validate_trajectory(model, cmd).positions[0]
    cell = SimulatedCell(model, profile, payload, seed=seed, rate_hz=rate_hz, q0=q0)
    sent = cell.send(cmd)
    samples = int(math.floor((sent.end_time + lead_out) * rate_hz + 1e-9)) + 1
    s = cell.advance(samples)
    problem = divergence(cell, s)
    if problem:
        raise PayloadIdError(f"the simulation diverged: {problem}",
                             "check the payload's mass and inertia (far beyond the robot's rating cannot be "
                             "simulated) and the trajectory; nothing was recorded")
    return recording_from_samples(cell, s, [sent])


# A position controller that lost its reference by this much is no longer playing the trajectory
# (a real arm would stop with a following error long before): the samples describe no usable run.
MAX_TRACKING_ERROR_RAD = 0.5


def divergence(cell: SimulatedCell, s: CellSamples) -> str | None:
    """Why the samples are not a physical run (None when they are): non-finite values, physics-engine
    warnings (it resets or clamps a diverging state), or a controller that lost the reference."""
    arrays = {"positions": s.q, "velocities": s.qd, "torques": s.tau, "accelerations": s.qdd}
    if s.wrench is not None:
        arrays["wrench"] = s.wrench
    bad = [name for name, a in arrays.items() if not np.all(np.isfinite(a))]
    if bad:
        return f"{', '.join(bad)} became NaN or infinite"
    warnings = cell.backend.warning_count()
    if warnings:
        return f"the physics engine reported {warnings} warning(s) (unstable or singular dynamics)"
    error = np.abs(s.q - s.q_ref).max(axis=0)
    worst = int(np.argmax(error))
    if error[worst] > MAX_TRACKING_ERROR_RAD:
        return (f"{cell.model.joint_names[worst]} left the commanded trajectory by {error[worst]:.3g} rad "
                f"(more than {MAX_TRACKING_ERROR_RAD} rad)")
    return None
