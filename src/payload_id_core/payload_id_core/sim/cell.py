"""The simulated robot cell: physics backend + drives (friction, rotor inertia, gains, noise) +
trajectory controller + wrist F/T sensor, advanced in chunks of control periods.

The offline `simulate` runs one long chunk; the mock_hardware node advances one control period at a
time (real time) or a few milliseconds' worth (simulated time). Samples are taken at the start of
each control period: positions and velocities then, the motor torque the drive applies from then
on, and the sensor wrench for the acceleration the physics step produced, so every sample
satisfies the equations of motion at its own instant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.inertia import is_physically_consistent
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.sim.backend import PhysicsBackend
from payload_id_core.sim.controller import JointTrajectoryController
from payload_id_core.sim.drive import ScalarFriction
from payload_id_core.sim.profile import SimProfile, load_profile


@dataclass
class CellSamples:
    t: np.ndarray          # (N,) s
    q: np.ndarray          # (N, n) measured (with encoder noise)
    qd: np.ndarray         # (N, n)
    tau: np.ndarray        # (N, n) measured torque = K·(reported effort), noise included
    effort: np.ndarray     # (N, n) reported effort (current for a UR-like profile)
    tau_motor: np.ndarray  # (N, n) true motor torque (no noise)
    qdd: np.ndarray        # (N, n) true acceleration of the physics step
    q_ref: np.ndarray      # (N, n) desired position the controller tracked
    wrench: np.ndarray | None  # (N, 6) F/T reading [force; torque] in the sensor frame


class SimulatedCell:
    """A robot (RobotModel or URDF/bundled name) with a profile (SimProfile or 'clean'/'ur10'/path)."""

    def __init__(self, robot: RobotModel | str, profile: SimProfile | str = "clean",
                 payload: PayloadEstimate | None = None, *, seed: int = 0, rate_hz: float = 500.0,
                 q0: np.ndarray | None = None, backend: PhysicsBackend | None = None):
        self.model = robot if isinstance(robot, RobotModel) else RobotModel.from_urdf(robot)
        n = self.model.n
        self.profile = profile if isinstance(profile, SimProfile) else load_profile(profile, n)
        self.rate_hz = float(rate_hz)
        self.lookahead = 25            # control periods of controller reference computed at once (see _plan)
        # (first physics step k, t, mass matrices, q_r, q̇_r, feedforward) of the planned reference
        self._plan_cache: tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        ratio = 1.0 / (self.rate_hz * self.profile.timestep)
        self.substeps = int(round(ratio))
        if self.substeps < 1 or abs(ratio - self.substeps) > 1e-6:
            raise PayloadIdError(f"control rate {rate_hz} Hz is not a whole fraction of the "
                                 f"{1 / self.profile.timestep:.0f} Hz physics rate", "use e.g. 500, 250 or 100 Hz")
        self.rng = np.random.default_rng(seed)
        frame = self.model.payload_frame(payload.frame if payload is not None else None)
        if backend is None:
            # mujoco is heavy (0.5 s to import) and optional: a cell given its own backend (tests, other
            # engines) never loads it, so `import payload_id_core.sim` works without mujoco installed.
            from payload_id_core.sim.mujoco_backend import MujocoBackend  # noqa: PLC0415 - mujoco, heavy and optional

            backend = MujocoBackend(self.model, self.profile.timestep, payload_frame=frame)
        self.backend = backend
        self.backend.set_armature(self.profile.rotor_inertia)
        self.backend.set_gravity(self.profile.gravity())
        self._friction = ScalarFriction(self.profile.friction) if self.profile.friction.active else None
        self.controller = JointTrajectoryController(self.model, self.profile.controller, self.profile.rotor_inertia)
        # Truth model for the F/T sensor: the robot as simulated (tilted gravity).
        self._pin = self.model.model.copy()
        self._pin.gravity = pin.Motion(self.profile.gravity(), np.zeros(3))
        self._pdata = self._pin.createData()
        self._load = [0.0] * n
        self.payload: PayloadEstimate | None = None
        self._set_payload(payload, frame)
        q0 = np.clip(np.zeros(n), self.model.limits.lower, self.model.limits.upper) if q0 is None else q0
        self.reset(q0)

    # -- configuration --------------------------------------------------------------------------
    def reset(self, q0: np.ndarray, t: float = 0.0) -> None:
        q0 = np.asarray(q0, float).reshape(-1)
        if q0.size != self.model.n:
            raise PayloadIdError(f"start pose has {q0.size} values", f"give {self.model.n} joint positions")
        self.backend.reset(q0)
        self._t0 = float(t)
        self._k = 0                       # physics steps since reset
        self._load = [0.0] * self.model.n
        self._external: list[float] | None = None
        self.controller.reset(q0, self.time)
        self._plan_cache = None

    @property
    def time(self) -> float:
        return self._t0 + self._k * self.profile.timestep

    def set_external_torque(self, tau: np.ndarray | None) -> None:
        """Joint torques the environment applies from now on (a contact, a push; None: nothing). They move
        the arm but are not part of the motor torque the drives report, as on a real robot."""
        self._external = None if tau is None else [float(x) for x in np.asarray(tau, float).reshape(self.model.n)]

    def set_payload(self, payload: PayloadEstimate | None) -> None:
        """Swap the payload at run time (None: nothing on the flange)."""
        frame = self.model.payload_frame(payload.frame if payload is not None else None)
        self._set_payload(payload, frame)

    def _set_payload(self, payload: PayloadEstimate | None, frame: str) -> None:
        phi = None if payload is None else np.asarray(payload.phi, float)
        if phi is not None and (phi.shape != (10,) or not np.all(np.isfinite(phi)) or phi[0] < 0):
            raise PayloadIdError("payload parameters are not 10 finite values with a mass >= 0",
                                 "give mass >= 0, com [x,y,z] and inertia")
        if phi is not None and np.any(phi != 0) and not is_physically_consistent(phi):
            # The physics engine would integrate a body no matter can form (or reject it mid-run).
            raise PayloadIdError(
                "the payload is not a physical body: its mass must be positive and its inertia about the CoM "
                "positive definite with each principal moment at most the sum of the other two",
                "fix mass and inertia {ixx..izz} in the payload file (e.g. a box: m/12·(b²+c²), ...)")
        self.backend.set_payload(phi, frame)
        self.payload = payload
        self._payload_frame = frame
        self._sensor_setup(frame)

    def _sensor_setup(self, payload_frame: str) -> None:
        ft = self.profile.ft
        self._ft_on = ft.enabled
        if not ft.enabled:
            return
        sensor = ft.frame or payload_frame
        self.sensor_frame = sensor
        self._sid = self.model.frame_id(sensor)
        js, sensor_in_joint = self.model.frame_in_joint(sensor)
        jp, payload_in_joint = self.model.frame_in_joint(payload_frame)
        if js != jp:
            raise PayloadIdError(f"F/T sensor frame '{sensor}' and payload frame '{payload_frame}' "
                                 "move with different joints",
                                 "mount the sensor on the link that carries the payload")
        phi = np.zeros(10) if self.payload is None else np.asarray(self.payload.phi, float)
        if phi[0] > 0:
            inertia = pin.Inertia.FromDynamicParameters(phi)
            self._sensor_inertia = sensor_in_joint.actInv(payload_in_joint.act(inertia))
            self._sensor_joint, self._sensor_in_joint = js, sensor_in_joint
        else:
            self._sensor_inertia = None

    def send(self, trajectory: CommandedTrajectory) -> CommandedTrajectory:
        """Give the controller a JointTrajectory (CommandedTrajectory); PayloadIdError if refused."""
        accepted = self.controller.accept(trajectory, self.time)
        self._plan_cache = None
        return accepted

    def _plan(self, samples: int):
        """(t, q_r, q̇_r, feedforward) per physics step and the controller's mass matrix per control period
        for the next `samples` periods. Computed for at least `lookahead` periods at once and kept until
        a new trajectory arrives: the real-time node advances one period at a time, and these batched
        model computations cost more per call than the physics."""
        h, sub, ctrl = self.profile.timestep, self.substeps, self.controller
        c = self._plan_cache
        if c is not None:
            i = (self._k - c[0]) // sub
            if 0 <= i and i + samples <= c[2].shape[0]:
                a, b = i * sub, (i + samples) * sub
                return c[1][a:b], c[3][a:b], c[4][a:b], c[5][a:b], c[2][i:i + samples]
        count = max(samples, self.lookahead)
        t = self.time + np.arange(count * sub) * h
        q_r, qd_r, qdd_r = ctrl.reference(t)
        ff = ctrl.feedforward(q_r, qd_r, qdd_r)
        mass = ctrl.mass_matrices(q_r[::sub])            # once per control period, as a drive would
        self._plan_cache = (self._k, t, mass, q_r, qd_r, ff)
        return t[:samples * sub], q_r[:samples * sub], qd_r[:samples * sub], ff[:samples * sub], mass[:samples]

    # -- stepping -------------------------------------------------------------------------------
    def _wrenches(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """(N, 6) F/T readings for states (N, n): offsets − [I_S (a_S − a_g) + v_S ×* I_S v_S] (what the
        payload exerts on the sensor; v_S, a_S its spatial velocity and acceleration in the sensor frame)."""
        ft = self.profile.ft
        offsets = np.concatenate([ft.force_offset, ft.torque_offset])
        if self._sensor_inertia is None:
            return np.tile(offsets, (q.shape[0], 1))
        model, data, jid = self._pin, self._pdata, self._sensor_joint
        # Pinocchio per sample only for the joint's motion; the rest is batched numpy.
        v_j = np.empty((q.shape[0], 6))
        a_j = np.empty((q.shape[0], 6))
        r_j = np.empty((q.shape[0], 3, 3))
        for k in range(q.shape[0]):
            pin.forwardKinematics(model, data, q[k], qd[k], qdd[k])
            v_j[k] = data.v[jid].vector
            a_j[k] = data.a[jid].vector
            r_j[k] = data.oMi[jid].rotation
        rot, p = self._sensor_in_joint.rotation, self._sensor_in_joint.translation

        def to_sensor(m):   # SE3.actInv on motions [v; ω]: ω_S = Rᵀω, v_S = Rᵀ(v − p × ω)
            return np.hstack([(m[:, :3] - np.cross(p, m[:, 3:])) @ rot, m[:, 3:] @ rot])

        v_s, a_s = to_sensor(v_j), to_sensor(a_j)
        g_s = np.einsum("kij,i->kj", r_j, model.gravity.linear) @ rot    # (R_J R)ᵀ g
        a_s[:, :3] -= g_s
        inertia = self._sensor_inertia.matrix()
        f = a_s @ inertia.T
        h = v_s @ inertia.T                                              # momentum I_S v_S
        w = v_s[:, 3:]
        f[:, :3] += np.cross(w, h[:, :3])                                # v ×* h = (ω × h_f, ω × h_n + v × h_f)
        f[:, 3:] += np.cross(w, h[:, 3:]) + np.cross(v_s[:, :3], h[:, :3])
        return offsets - f

    def advance(self, samples: int) -> CellSamples:
        """Run `samples` control periods; returns one sample per period (taken at its start)."""
        n, h, sub = self.model.n, self.profile.timestep, self.substeps
        steps = samples * sub
        t_steps, q_r, qd_r, ff, mass = self._plan(samples)
        friction = self._friction
        out_t = t_steps[::sub].copy()
        ctrl = self.controller
        kp, kd, ki, i_max, h_i = ctrl.kp, ctrl.kd, ctrl.ki, ctrl.integral_limit, -ctrl.integral_limit
        qr_l, vr_l = q_r.tolist(), qd_r.tolist()
        load = self._load
        integral = ctrl.integral.tolist()
        read, apply = self.backend.read, self.backend.apply
        inv_h = 1.0 / h
        # Python floats in the loop: per step this is cheaper than numpy on 6-vectors (see ScalarFriction).
        ql, vl = read()
        rec_q, rec_qd, rec_tau, rec_qdd = [], [], [], []
        external = self._external
        for k in range(steps):
            qr, vr = qr_l[k], vr_l[k]
            integral = [min(max(i + (r - x) * h, h_i), i_max) for i, r, x in zip(integral, qr, ql)]
            acc = [kp * (r - x) + kd * (w - v) + ki * i for r, x, w, v, i in zip(qr, ql, vr, vl, integral)]
            tau_m = (mass[k // sub].dot(acc) + ff[k]).tolist()
            acting = tau_m if external is None else [a + e for a, e in zip(tau_m, external)]
            if friction is not None:
                # Linearised about the current speed and integrated implicitly by the backend.
                applied, slope = friction.linearised(acting, vl, load)
                apply(applied, slope)
            else:
                apply(acting)
            load = tau_m
            q1, v1 = read()
            if k % sub == 0:
                rec_q.append(ql)
                rec_qd.append(vl)
                rec_tau.append(tau_m)
                # The acceleration the step used: semi-implicit Euler, q̇₁ = q̇₀ + h·q̈.
                rec_qdd.append([(b - a) * inv_h for a, b in zip(vl, v1)])
            ql, vl = q1, v1
        out_q, out_qd, out_tau, out_qdd = (np.array(r, float).reshape(samples, n)
                                           for r in (rec_q, rec_qd, rec_tau, rec_qdd))
        self._load = load
        ctrl.integral = np.array(integral)
        self._k += steps
        p = self.profile
        rng = self.rng
        noise_tau = rng.standard_normal((samples, n)) * p.torque_noise_std
        tau_meas = out_tau + noise_tau
        effort = tau_meas / p.effort_scale
        q_meas = out_q + rng.standard_normal((samples, n)) * p.position_noise_std
        qd_meas = out_qd + rng.standard_normal((samples, n)) * p.velocity_noise_std
        wrench = None
        if self._ft_on:
            wrench = self._wrenches(out_q, out_qd, out_qdd)
            wrench[:, :3] += rng.standard_normal((samples, 3)) * p.ft.force_noise_std
            wrench[:, 3:] += rng.standard_normal((samples, 3)) * p.ft.torque_noise_std
        return CellSamples(out_t, q_meas, qd_meas, effort * p.effort_scale, effort, out_tau, out_qdd,
                           q_r[::sub].copy(), wrench)
