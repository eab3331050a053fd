"""Quick synthetic recordings from inverse dynamics, for tests and benches.

Not the physics simulator (payload_id_core.sim): torques are computed exactly by the regressor /
rnea from the motion, plus known friction, rotor inertia, payload, noise, delay and drive gains,
so an identification can be checked against the very parameters that generated the data.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from payload_id_core.dynamics.friction import FrictionModel, make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor, rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording


def sum_of_sines(model: RobotModel, duration: float, rate_hz: float, seed: int = 0, harmonics: int = 5,
                 fraction: float = 0.8) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A smooth, periodic, exciting motion (t, q, qd, qdd) within `fraction` of the joint limits.

    Each joint is a finite Fourier series with base frequency 1/duration (Swevers' form, Khalil
    §IV): q = q0 + Σ_l a_l/(l ω) sin(l ω t) − b_l/(l ω) cos(l ω t), random coefficients scaled so
    that positions, velocities (≤ fraction × velocity limit) and accelerations (≤ 15 rad/s²) stay bounded.
    """
    rng = np.random.default_rng(seed)
    n = model.n
    t = np.arange(int(round(duration * rate_hz))) / rate_hz
    w = 2 * np.pi / duration
    lim = model.limits
    lo = np.where(np.isfinite(lim.lower), np.maximum(lim.lower, -np.pi), -np.pi)
    hi = np.where(np.isfinite(lim.upper), np.minimum(lim.upper, np.pi), np.pi)
    centre, half = (lo + hi) / 2, (hi - lo) / 2 * fraction
    vmax = np.where(lim.velocity > 0, lim.velocity, 2.0) * fraction
    amax = 15.0
    q, qd, qdd = np.zeros((t.size, n)), np.zeros((t.size, n)), np.zeros((t.size, n))
    for j in range(n):
        a, b = rng.standard_normal(harmonics), rng.standard_normal(harmonics)
        lw = w * np.arange(1, harmonics + 1)
        s, c = np.sin(np.outer(t, lw)), np.cos(np.outer(t, lw))
        pj = s @ (a / lw) - c @ (b / lw)
        vj = c @ a + s @ b
        aj = -s @ (a * lw) + c @ (b * lw)
        pj -= pj.mean()
        scale = min(half[j] / max(np.abs(pj).max(), 1e-12), vmax[j] / max(np.abs(vj).max(), 1e-12),
                    amax / max(np.abs(aj).max(), 1e-12))
        offset = centre[j] + rng.uniform(-1, 1) * max(half[j] - scale * np.abs(pj).max(), 0.0) * 0.5
        q[:, j], qd[:, j], qdd[:, j] = offset + scale * pj, scale * vj, scale * aj
    return t, q, qd, qdd


def _payload_phi_frame(payload) -> tuple[np.ndarray, str]:
    if hasattr(payload, "phi") and hasattr(payload, "frame"):
        return np.asarray(payload.phi, dtype=float), str(payload.frame)
    phi, frame = payload
    return np.asarray(phi, dtype=float), str(frame)


def _delayed(t: np.ndarray, x: np.ndarray, delay: float) -> np.ndarray:
    """x(t − delay), holding the first value before the start."""
    if delay == 0.0:
        return x
    return np.column_stack([np.interp(t - delay, t, x[:, j]) for j in range(x.shape[1])])


def synthetic_recording(model: RobotModel, t, q, qd, qdd, *, friction: FrictionModel | str | None = None,
                        friction_params=None, rotor_inertia=None, payload=None, noise_std=0.0, delay: float = 0.0,
                        effort_scale=None, temperature=None, phi=None, seed: int = 0) -> Recording:
    """A Recording whose measured motion is the commanded one delayed by `delay` s and whose efforts are

        effort = (Y(q, q̇, q̈) φ + Y_L φ_L + Ia q̈ + τ_f(q̇, T) + noise) / effort_scale

    evaluated on the measured (delayed) motion. φ defaults to the URDF's parameters; `payload` is
    (φ_L, frame) or anything with .phi and .frame; `friction` is a FrictionModel or a kind with
    `friction_params` its θ_f; `noise_std` is Gaussian torque noise (scalar or per joint, N·m);
    `temperature` (N, n) °C is recorded and feeds the temperature friction model. The commanded
    trajectory holds (q, q̇, q̈) exactly, one point per time stamp; the joint samples stop one stamp
    before its last point.
    """
    t = np.asarray(t, dtype=float)
    q, qd, qdd = (np.asarray(a, dtype=float) for a in (q, qd, qdd))
    n = model.n
    if q.shape != (t.size, n):
        raise PayloadIdError(f"q has shape {q.shape}, expected {(t.size, n)}", "one row per time stamp")
    qm, qdm, qddm = (_delayed(t, a, delay) for a in (q, qd, qdd))
    phi = model.standard_parameters() if phi is None else np.asarray(phi, dtype=float)
    tau = rigid_body_regressor(model, qm, qdm, qddm) @ phi
    if payload is not None:
        phi_l, frame = _payload_phi_frame(payload)
        tau += payload_regressor(model, frame, qm, qdm, qddm) @ phi_l
    if rotor_inertia is not None:
        tau += qddm * np.broadcast_to(np.asarray(rotor_inertia, dtype=float), (n,))
    if temperature is not None:
        temperature = np.broadcast_to(np.asarray(temperature, dtype=float), (t.size, n)).copy()
    if friction is not None:
        fm = friction if isinstance(friction, FrictionModel) else make_friction_model(friction, model.joint_names)
        if friction_params is None:
            raise PayloadIdError("friction given without friction_params", "pass the θ_f that generates the data")
        tau += fm.torque(friction_params, qdm, temperature)
    rng = np.random.default_rng(seed)
    sigma = np.broadcast_to(np.asarray(noise_std, dtype=float), (n,))
    tau = tau + rng.standard_normal(tau.shape) * sigma
    if effort_scale is not None:
        tau = tau / np.broadcast_to(np.asarray(effort_scale, dtype=float), (n,))
    # The last measured sample is left out: at the last commanded point a joint_trajectory_controller
    # holds the arm at rest (signals.commanded.sample_commanded), which a periodic motion does not do.
    keep = slice(0, max(t.size - 1, 1))
    joints = JointSamples(t[keep], list(model.joint_names), qm[keep], qdm[keep], tau[keep],
                          None if temperature is None else temperature[keep])
    commanded = CommandedTrajectory(float(t[0]), list(model.joint_names), t - t[0], q, qd, qdd)
    notes = [Note(NoteCode.TESTING_SYNTHETIC, f"synthetic: noise_std={np.round(sigma, 6).tolist()}, delay={delay}")]
    if effort_scale is not None:
        notes.append(Note(NoteCode.TESTING_SYNTHETIC,
                          "synthetic: efforts are torque / effort_scale (read them with that effort_scale)"))
    return Recording(joints, [commanded], None, source="synthetic", notes=notes)


def first_seconds(rec: Recording, window_s: float) -> Recording:
    """`rec` as if its (first) commanded excitation had been stopped after window_s s: the command's points up to
    then and the joint states until 0.3 s after the last of them, as a recording of a finished command has."""
    cmd = rec.commanded[0]
    keep = cmd.time_from_start <= window_s + 1e-9
    pick = lambda a: None if a is None else a[keep]  # noqa: E731
    cut = replace(cmd, time_from_start=cmd.time_from_start[keep], positions=cmd.positions[keep],
                  velocities=pick(cmd.velocities), accelerations=pick(cmd.accelerations))
    joints = rec.joints.slice_time(float(rec.joints.t[0]), cut.end_time + 0.3)
    return Recording(joints, [cut], rec.wrench, rec.source, list(rec.notes))

