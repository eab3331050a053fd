"""MuJoCo physics for any URDF: dynamics only, with the URDF's inertias kept exactly.

The URDF is loaded with its visual and collision geometry removed (no meshes to resolve, no
contacts), `fusestatic` off (fixed frames such as tool0 stay bodies, so a payload can be hung on
them), no inertia from geometry and no `balanceinertia`, and every joint's damping, friction loss,
armature, stiffness and limit cleared: what remains is exactly the rigid-body model pinocchio
builds from the same file (test_sim.py checks mj_inverse == pin.rnea to 1e-8). Friction and rotor
inertia are added back on purpose by the cell. A payload body is pre-created as a child of the
chosen frame and changed at run time through body_mass/body_ipos/body_inertia/body_iquat.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import deque

import mujoco
import numpy as np

from payload_id_core.dynamics.inertia import to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.sim.backend import PhysicsBackend, SimulationDiverged

PAYLOAD_BODY = "payload_id_payload"


def dynamics_only_urdf(urdf_text: str) -> str:
    """The URDF without visual/collision elements, with a <mujoco><compiler> block keeping inertias as given."""
    root = ET.fromstring(urdf_text)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    for old in root.findall("mujoco"):
        root.remove(old)
    extension = ET.SubElement(root, "mujoco")
    ET.SubElement(extension, "compiler", fusestatic="false", inertiafromgeom="false",
                  balanceinertia="false", discardvisual="true", angle="radian", strippath="true")
    return ET.tostring(root, encoding="unicode")


def _principal(inertia_com: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(principal moments, quaternion w-x-y-z of the principal axes) of a symmetric 3×3 inertia."""
    moments, axes = np.linalg.eigh(inertia_com)
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, axes.reshape(-1))
    return np.maximum(moments, 0.0), quat


# MuJoCo's warnings, kept (the last few) instead of printed: the backend turns the first of a run into
# SimulationDiverged, which says it in one line.
_WARNINGS: deque[str] = deque(maxlen=4)


def _keep_warning(message: str) -> None:
    _WARNINGS.append(" ".join(message.split()))


class MujocoBackend(PhysicsBackend):
    """MuJoCo model of `robot` (a RobotModel: its URDF, actuated joints and gravity).

    timestep: physics step in s. 1 ms is the default: the semi-implicit Euler error at 1 ms is far
    below the torque noise of a real arm (bench/sim.py reports it), and 2 ms is also stable.
    """

    def __init__(self, robot: RobotModel, timestep: float = 0.001, payload_frame: str | None = None):
        mujoco.set_mju_user_warning(_keep_warning)
        self.robot = robot
        self.joint_names = list(robot.joint_names)
        self.timestep = float(timestep)
        self._urdf_text = dynamics_only_urdf(robot.urdf_path.read_text())
        self._armature = np.zeros(len(self.joint_names))
        self._gravity = robot.gravity
        self._phi: np.ndarray | None = None
        self.payload_frame: str = robot.payload_frame(payload_frame)
        self._build(self.payload_frame)

    # -- model construction ---------------------------------------------------------------------
    def _body_for_frame(self, spec: mujoco.MjSpec, frame: str) -> mujoco.MjsBody:
        body = spec.body(frame)
        if body is not None:
            return body
        # A URDF fixed joint name (pinocchio has a frame for it): its child link's body sits at that frame.
        root = ET.fromstring(self._urdf_text)
        for joint in root.iter("joint"):
            child = joint.find("child")
            if joint.get("name") == frame and child is not None:
                body = spec.body(child.get("link"))
                if body is not None:
                    return body
        self.robot.frame_id(frame)  # raises the standard "frame not in the URDF" error if pinocchio lacks it too
        raise PayloadIdError(f"frame '{frame}' has no rigid body in the simulation",
                             "attach the payload at a URDF link")

    def _build(self, frame: str) -> None:
        spec = mujoco.MjSpec.from_string(self._urdf_text)
        keep = set(self.joint_names)
        for joint in list(spec.joints):
            if joint.name in keep:
                continue
            # Locked joints (e.g. gripper fingers) become welds at 0, where RobotModel locks them.
            lo, hi = joint.range
            if joint.limited and not (lo <= 0.0 <= hi):
                raise PayloadIdError(f"joint '{joint.name}' would be locked outside its range",
                                     "include it in the actuated joints")
            for eq in list(spec.equalities):  # mimic couplings of a removed joint go with it
                if joint.name in (eq.name1, eq.name2):
                    spec.delete(eq)
            spec.delete(joint)
        parent = self._body_for_frame(spec, frame)
        payload = parent.add_body(name=PAYLOAD_BODY)
        payload.explicitinertial = True
        # Placeholder values that are not "simple": MuJoCo would otherwise flag the body as having its
        # inertial frame equal to its body frame (body_sameframe) and ignore a CoM offset set later.
        payload.mass = 1.0
        payload.inertia = [1e-3, 2e-3, 3e-3]
        payload.ipos = [1e-3, 2e-3, 3e-3]
        payload.iquat = [0.5, 0.5, 0.5, 0.5]
        spec.option.timestep = self.timestep
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER  # integrates dof_damping implicitly
        spec.option.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                                     | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
        try:
            model = spec.compile()
        except Exception as err:  # noqa: BLE001 - MuJoCo raises ValueError with its compiler message
            raise PayloadIdError(f"MuJoCo cannot compile {self.robot.urdf_path.name}: {err}",
                                 "check the URDF's links and inertials") from err
        names = [model.joint(i).name for i in range(model.njnt)]
        if sorted(names) != sorted(self.joint_names):
            raise PayloadIdError(f"MuJoCo joints {names} differ from the model's {self.joint_names}",
                                 "use a URDF with revolute/prismatic joints only")
        jids = [names.index(j) for j in self.joint_names]
        # Index arrays, or plain slices for a serial arm in MuJoCo's own order (below).
        self._qadr: np.ndarray | slice = np.array([model.jnt_qposadr[i] for i in jids])
        self._vadr: np.ndarray | slice = np.array([model.jnt_dofadr[i] for i in jids])
        n = len(jids)
        # Serial arms keep MuJoCo's order: plain slices then (views, no fancy-index copies per step).
        if np.array_equal(self._qadr, np.arange(n)) and np.array_equal(self._vadr, np.arange(n)):
            self._qadr = self._vadr = slice(0, n)
        model.dof_damping[:] = 0.0
        model.dof_frictionloss[:] = 0.0
        model.jnt_stiffness[:] = 0.0
        model.dof_armature[self._vadr] = self._armature
        model.opt.gravity[:] = self._gravity
        self.m = model
        self.d = mujoco.MjData(model)
        # Views into MjData/MjModel for the per-step path (read/apply): no index copies per step.
        d, va = self.d, self._vadr
        self._views = isinstance(va, slice)
        if self._views:
            self._qpos, self._qvel = d.qpos[self._qadr], d.qvel[va]
            self._qfrc, self._damping = d.qfrc_applied[va], model.dof_damping[va]
        self._scratch = mujoco.MjData(model)
        self._warning_stats = [d.warning[i] for i in range(len(d.warning))]   # live views, checked per step
        self._pid = model.body(PAYLOAD_BODY).id
        model.body_sameframe[self._pid] = 0
        model.body_simple[self._pid] = 0
        self.payload_frame = frame
        self._apply_payload()
        mujoco.mj_forward(self.m, self.d)

    def _apply_payload(self) -> None:
        m, pid = self.m, self._pid
        if self._phi is None or self._phi[0] <= 0.0:
            m.body_mass[pid] = 0.0
            m.body_ipos[pid] = 0.0
            m.body_inertia[pid] = 0.0
            m.body_iquat[pid] = [1.0, 0.0, 0.0, 0.0]
            return
        mass, com, inertia_com = to_mass_com_inertia(self._phi)
        moments, quat = _principal(inertia_com)
        m.body_mass[pid] = mass
        m.body_ipos[pid] = com
        m.body_inertia[pid] = moments
        m.body_iquat[pid] = quat

    # -- PhysicsBackend -------------------------------------------------------------------------
    def reset(self, q, qd=None) -> None:
        mujoco.mj_resetData(self.m, self.d)
        self.d.qpos[self._qadr] = np.asarray(q, float)
        if qd is not None:
            self.d.qvel[self._vadr] = np.asarray(qd, float)
        mujoco.mj_forward(self.m, self.d)

    def state(self):
        return self.d.qpos[self._qadr].copy(), self.d.qvel[self._vadr].copy()

    @property
    def time(self) -> float:
        return float(self.d.time)

    def step(self, tau, implicit_damping=None):
        d, va = self.d, self._vadr
        d.qfrc_applied[va] = tau
        if implicit_damping is not None:
            self.m.dof_damping[va] = implicit_damping
        v0 = d.qvel[va].copy()
        mujoco.mj_step(self.m, d)
        self._check_stable()
        # The acceleration the integrator actually used (semi-implicit Euler: v1 = v0 + h·a).
        return (d.qvel[va] - v0) * (1.0 / self.timestep)

    def warning_count(self) -> int:
        """MuJoCo's warnings since the model was built (mjData.warning: unstable accelerations, bad
        inertia, ...): after such a warning MuJoCo resets or clamps the state, so the motion is not physics."""
        return int(sum(w.number for w in self.d.warning))

    def read(self):
        if self._views:
            return self._qpos.tolist(), self._qvel.tolist()
        return super().read()

    def apply(self, tau, implicit_damping=None):
        if not self._views:
            return super().apply(tau, implicit_damping)
        self._qfrc[:] = tau
        if implicit_damping is not None:
            self._damping[:] = implicit_damping
        mujoco.mj_step(self.m, self.d)
        self._check_stable()
        return None

    def _check_stable(self) -> None:
        """Stop at MuJoCo's first warning: it then resets the state (an unstable acceleration) or integrates
        a singular model, so every later step is not physics; and unchecked it repeats the warning
        thousands of times (a 1e6 kg payload)."""
        if any(w.number for w in self._warning_stats):
            message = _WARNINGS[-1] if _WARNINGS else "unstable or singular dynamics"
            raise SimulationDiverged(f"the simulation diverged: MuJoCo: {message}",
                                     "check the payload's mass and inertia (far beyond the robot's rating "
                                     "cannot be simulated) and the trajectory")

    def set_payload(self, phi, frame):
        self._phi = None if phi is None else np.asarray(phi, float).copy()
        if frame != self.payload_frame:
            q, qd = self.state()
            t = self.time
            self._build(frame)
            self.reset(q, qd)
            self.d.time = t
        else:
            self._apply_payload()

    def set_armature(self, armature):
        self._armature = np.broadcast_to(np.asarray(armature, float), (len(self.joint_names),)).copy()
        self.m.dof_armature[self._vadr] = self._armature

    def set_gravity(self, gravity):
        self._gravity = np.asarray(gravity, float).reshape(3).copy()
        self.m.opt.gravity[:] = self._gravity

    def inverse_dynamics(self, q, qd, qdd):
        s = self._scratch
        s.qpos[self._qadr] = q
        s.qvel[self._vadr] = qd
        s.qacc[self._vadr] = qdd
        mujoco.mj_inverse(self.m, s)
        # mj_inverse subtracts passive forces (the linearised friction damping); the bodies need the rest.
        return (s.qfrc_inverse + s.qfrc_passive)[self._vadr].copy()
