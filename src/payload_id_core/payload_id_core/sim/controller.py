"""A joint trajectory controller like ros2_control's joint_trajectory_controller, for the simulated cell.

The desired state is the commanded JointTrajectory sampled exactly as the real controller samples
it (signals.commanded.sample_commanded: quintic/cubic/linear segments, a new message replacing the old
one from its start time, the last point held), applied `delay` seconds late (one read→write cycle).
Each joint's torque is feedforward from the controller's own model of the robot without payload
(rnea + rotor inertia, as an industrial controller computes it) plus a PID acting through the
model's mass matrix at the desired pose, τ_fb = M(q_r)(3ω² e + 3ω ė + 0.1ω³ ∫e), so that every joint
has closed-loop poles near the set bandwidth ω whatever the arm's pose (decentralised gains
scaled by the diagonal alone go unstable where joints couple strongly). What the
model does not know (payload, friction, base tilt) is taken up by the feedback with a small,
transient position error (the integral removes static sag): the realistic lag.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.signals.commanded import sample_commanded
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.sim.profile import ControllerSettings


def validate_trajectory(model: RobotModel, traj: CommandedTrajectory, tolerance: float = 1e-9) -> CommandedTrajectory:
    """The trajectory in the model's joint order, or PayloadIdError saying why the controller refuses it
    (unknown or missing joints, no points, time_from_start not increasing, NaN, positions outside limits)."""
    names = list(traj.joint_names)
    unknown = [j for j in names if j not in model.joint_names]
    if unknown:
        raise PayloadIdError(f"trajectory names unknown joints {unknown}", f"use the joints {model.joint_names}")
    missing = [j for j in model.joint_names if j not in names]
    if missing or len(set(names)) != len(names):
        raise PayloadIdError(f"trajectory lacks joints {missing} or repeats a joint",
                             f"send every joint of {model.joint_names} once")
    tfs = np.asarray(traj.time_from_start, float).reshape(-1)
    m = tfs.size
    if m == 0:
        raise PayloadIdError("trajectory has no points", "send at least one point")
    if traj.positions.shape != (m, len(names)):
        raise PayloadIdError(f"trajectory positions have shape {traj.positions.shape}, expected {(m, len(names))}",
                             "give one position per joint in every point")
    for key in ("velocities", "accelerations"):
        arr = getattr(traj, key)
        if arr is not None and arr.shape != (m, len(names)):
            raise PayloadIdError(f"trajectory {key} have shape {arr.shape}, expected {(m, len(names))}",
                                 f"give one {key[:-3]}y per joint in every point, or none")
    if not np.all(np.isfinite(tfs)) or np.any(tfs < 0) or np.any(np.diff(tfs) <= 0):
        raise PayloadIdError("trajectory time_from_start is not strictly increasing from >= 0",
                             "give each point a later time than the previous one")
    idx = [names.index(j) for j in model.joint_names]
    pick = lambda a: None if a is None else np.asarray(a, float)[:, idx]  # noqa: E731
    out = CommandedTrajectory(traj.start_time, list(model.joint_names), tfs,
                              np.asarray(traj.positions, float)[:, idx], pick(traj.velocities),
                              pick(traj.accelerations))
    for key in ("positions", "velocities", "accelerations"):
        arr = getattr(out, key)
        if arr is not None and not np.all(np.isfinite(arr)):
            raise PayloadIdError(f"trajectory {key} contain NaN or inf", "send finite values")
    lim = model.limits
    low = out.positions < lim.lower - tolerance
    high = out.positions > lim.upper + tolerance
    if np.any(low | high):
        k, j = np.argwhere(low | high)[0]
        raise PayloadIdError(
            f"trajectory point {k} puts {model.joint_names[j]} at {out.positions[k, j]:.4f} rad, outside "
            f"[{lim.lower[j]:.4f}, {lim.upper[j]:.4f}]", "keep every point inside the joint limits")
    return out


class JointTrajectoryController:
    """Tracks accepted trajectories; holds the pose it was reset to until the first one arrives."""

    def __init__(self, model: RobotModel, settings: ControllerSettings, rotor_inertia: np.ndarray | None = None):
        self.model = model
        self.settings = settings
        self.armature = np.zeros(model.n) if rotor_inertia is None else np.asarray(rotor_inertia, float)
        # The controller's own model: nominal URDF, level base, no payload (it does not know them).
        self._pin = model.model.copy()
        self._pin.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
        self._data = self._pin.createData()
        self.trajectories: list[CommandedTrajectory] = []
        self.integral = np.zeros(model.n)        # ∫ position error dt, rad·s
        w = 2 * np.pi * settings.bandwidth_hz
        # Ki is a tenth of the triple-pole value: the loop then stays stable (Routh: Kd·Kp > r·Ki) while
        # the true inertia exceeds the model's by up to r = 90 (a heavy payload on a light wrist).
        self.kp, self.kd, self.ki = 3 * w * w, 3 * w, 0.1 * w ** 3
        # Anti-windup bound on the integral, as an acceleration it may command (rad/s²): wide, because the
        # model's wrist inertias are tiny next to what a payload asks of them.
        self.integral_limit = 1e4 / self.ki

    def mass_matrices(self, q_r: np.ndarray) -> np.ndarray:
        """(N, n, n) the controller model's mass matrix (+ rotor inertia) at desired poses q_r (N, n)."""
        q_r = np.atleast_2d(q_r)
        out = np.empty((q_r.shape[0], q_r.shape[1], q_r.shape[1]))
        for k in range(q_r.shape[0]):
            out[k] = pin.crba(self._pin, self._data, q_r[k])   # upper triangle filled
        upper = np.triu(out)
        return upper + np.swapaxes(np.triu(out, 1), 1, 2) + np.diag(self.armature)

    def reset(self, q: np.ndarray, t: float) -> None:
        """Hold `q` from time t on."""
        q = np.asarray(q, float)
        self.integral = np.zeros(self.model.n)
        self.trajectories = [CommandedTrajectory(t, list(self.model.joint_names), np.array([0.0]), q[None, :].copy(),
                                                 np.zeros((1, self.model.n)), np.zeros((1, self.model.n)))]

    def accept(self, traj: CommandedTrajectory, now: float) -> CommandedTrajectory:
        """Validate and queue a trajectory (start time 0 means now, like the real controller); returns it as queued.
        Raises PayloadIdError when refused: the current command goes on (the robot holds still)."""
        out = validate_trajectory(self.model, traj)
        if out.start_time <= 0.0:
            out.start_time = now
        self.trajectories.append(out)
        self._prune(now)
        return out

    def _prune(self, now: float) -> None:
        # Keep the trajectory active now and the one before it (whose command at the active one's start
        # is where the active one's first segment starts from), plus all future ones.
        starts = [tr.start_time for tr in self.trajectories]
        active = max([k for k, s in enumerate(starts) if s <= now], default=0)
        self.trajectories = self.trajectories[max(active - 1, 0):]

    def reference(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Desired (q, q̇, q̈) at times t (the controller's delay applied)."""
        return sample_commanded(self.trajectories, np.asarray(t, float) - self.settings.delay, self.model.joint_names)

    def feedforward(self, q_r: np.ndarray, qd_r: np.ndarray, qdd_r: np.ndarray) -> np.ndarray:
        """(N, n) model torques for the desired states."""
        mode = self.settings.feedforward
        out = np.zeros_like(q_r)
        if mode == "none":
            return out
        for k in range(q_r.shape[0]):
            if mode == "model":
                out[k] = pin.rnea(self._pin, self._data, q_r[k], qd_r[k], qdd_r[k])
            else:
                out[k] = pin.computeGeneralizedGravity(self._pin, self._data, q_r[k])
        if mode == "model":
            out += self.armature * qdd_r
        return out

