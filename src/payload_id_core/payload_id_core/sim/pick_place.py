"""A pick-and-place task on the simulated cell (issue 17): what the payload monitor watches on a real cell.

Point-to-point moves (quintic, rest to rest, 1-2 s) between random poses around a home pose, with rests
between them; parts of `masses` kg are grasped at some rests and released at a later one (the payload
switches at once, as when a gripper closes on a part resting on a table it then lifts), and the
environment pushes on the arm now and then during moves (contacts: joint torques the drives do not
report, lasting `contact_s`). Every change is returned with its time, so tests and the bench know the truth.

People push differently (issue 31): `human_contacts_per_minute` adds pushes a person makes (HumanContacts): a
force of 10-150 N in any direction on a point of the flange, the wrist, the forearm or the upper arm, ramped up
over 0.1-1 s, held 0.2-5 s and ramped down, at rest or during a move, sometimes two or three in a row. The force
is a force: its joint torques Jᵀ F follow the arm's pose as it moves (updated every `FORCE_UPDATE_S`), and it
loads only the joints between the base and the link pushed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.recording import CommandedTrajectory
from payload_id_core.sim.cell import SimulatedCell
from payload_id_core.sim.profile import SimProfile

REACH_RAD = 0.5             # targets within ± this of the home pose, per joint
FORCE_UPDATE_S = 0.01       # s between updates of a person's push's joint torques (the arm moves under it)
# Where a person pushes: the links, flange outwards, of a UR-type arm (others: the last four links' parents).
HUMAN_LINKS = {"flange": -1, "wrist": -2, "forearm": -4, "upper_arm": -5}


@dataclass(frozen=True)
class HumanContacts:
    """A person's pushes (module docstring); ranges are uniform."""
    per_minute: float = 0.0
    force_n: tuple[float, float] = (10.0, 150.0)
    ramp_s: tuple[float, float] = (0.1, 1.0)
    hold_s: tuple[float, float] = (0.2, 5.0)
    at_rest_share: float = 0.5              # of the pushes, made while the arm rests (the others during a move)
    repeat_share: float = 0.3               # of the pushes, followed by one or two more 0.2-1 s later
    offset_m: float = 0.05                  # the point pushed: within this of the link's origin, per axis


@dataclass(frozen=True)
class TaskChange:
    t: float
    kind: str                   # "picked" | "placed" | "contact"
    mass: float = 0.0           # kg of the part picked or placed (0 for a contact)
    phi: np.ndarray | None = None   # the part picked, in the task's frame
    duration: float = 0.0       # s, a contact's
    torque: np.ndarray | None = None   # the contact's joint torques (a person's: at its peak, where it began)
    force: float = 0.0          # N: a person's push at its peak (0: a contact given as joint torques)
    link: str = ""              # where a person pushed (HUMAN_LINKS)
    moving: bool = False        # the arm moved while pushed


@dataclass
class TaskRun:
    frame: str
    t: np.ndarray
    q: np.ndarray               # measured, as the joint states carry them
    qd: np.ndarray
    tau: np.ndarray             # measured motor torque (K · effort, noise included)
    changes: list[TaskChange] = field(default_factory=list)

    def carried_mass(self, t: float) -> float:
        """The truth: kg on the flange at time t."""
        m = 0.0
        for c in self.changes:
            if c.t <= t and c.kind in ("picked", "placed"):
                m = c.mass if c.kind == "picked" else 0.0
        return m


def random_part(rng: np.random.Generator, mass: float) -> np.ndarray:
    """φ of a box-shaped part of `mass` kg held below the flange: sides 4-15 cm, CoM 2-10 cm out along the
    tool axis and up to 3 cm off it."""
    sides = rng.uniform(0.04, 0.15, 3)
    a, b, c = sides**2
    inertia = mass / 12.0 * np.diag([b + c, a + c, a + b])
    com = np.array([rng.uniform(-0.03, 0.03), rng.uniform(-0.03, 0.03), rng.uniform(0.02, 0.10)])
    return from_mass_com_inertia(mass, com, inertia)


def point_to_point(model: RobotModel, start_time: float, q0: np.ndarray, q1: np.ndarray,
                   duration: float) -> CommandedTrajectory:
    """A move from q0 to q1 in `duration` s, at rest at both ends (the controller's quintic)."""
    zero = np.zeros((2, model.n))
    return CommandedTrajectory(start_time, list(model.joint_names), np.array([0.0, duration]),
                               np.vstack([q0, q1]), zero.copy(), zero.copy())


def pick_and_place(model: RobotModel, profile: SimProfile | str = "ur10", *, seconds: float = 60.0, seed: int = 0,
                   masses: tuple[float, float] = (0.5, 5.0), picks: bool = True, contacts_per_minute: float = 2.0,
                   contact_s: tuple[float, float] = (0.03, 0.15), contact_nm: tuple[float, float] = (5.0, 20.0),
                   frame: str | None = None, q_home: np.ndarray | None = None, rate_hz: float = 500.0,
                   human: HumanContacts | None = None, move_s: tuple[float, float] = (1.0, 2.0)) -> TaskRun:
    """Run the task for `seconds` of simulated time; see the module docstring. `move_s`: the moves' durations (s,
    uniform; shorter is faster, the same reach)."""
    rng = np.random.default_rng(seed)
    frame = model.payload_frame(frame)
    lower, upper = model.limits.lower, model.limits.upper
    home = np.clip(np.array([0.0, -1.4, 1.4, -1.6, -1.6, 0.0][: model.n]) if q_home is None else q_home,
                   lower, upper)
    cell = SimulatedCell(model, profile, None, seed=seed, rate_hz=rate_hz, q0=home)
    dt = 1.0 / rate_hz
    parts: list = []
    changes: list[TaskChange] = []
    carrying = 0.0              # kg of the part in the gripper
    q_now = home.copy()

    def run_for(duration: float) -> None:
        samples = max(int(round(duration * rate_hz)), 1)
        s = cell.advance(samples)
        parts.append((s.t, s.q, s.qd, s.tau))

    def q_measured() -> np.ndarray:
        return parts[-1][1][-1] if parts else home

    def push(pushes: list[tuple[float, float, float, float, str, np.ndarray, np.ndarray]], moving: bool) -> None:
        """Run the pushes (gap before, ramp, hold, peak N, link, unit direction, local offset) one after the other."""
        for gap, ramp, hold, peak, link, direction, offset in pushes:
            run_for(gap)
            start = cell.time
            first = None
            total = 2 * ramp + hold
            while cell.time - start < total - 1e-9:
                elapsed = cell.time - start
                scale = min(1.0, elapsed / ramp, max(0.0, (total - elapsed) / ramp))
                tau = _push_torque(model, q_measured(), HUMAN_LINKS[link], offset, direction * peak * scale)
                first = _push_torque(model, q_measured(), HUMAN_LINKS[link], offset, direction * peak) \
                    if first is None else first
                cell.set_external_torque(tau)
                run_for(min(FORCE_UPDATE_S, total - elapsed))
            cell.set_external_torque(None)
            changes.append(TaskChange(start, "contact", duration=total, torque=first, force=peak, link=link,
                                      moving=moving))

    def human_pushes() -> list:
        assert human is not None
        count = 1 + (int(rng.integers(1, 3)) if rng.random() < human.repeat_share else 0)
        out = []
        for i in range(count):
            direction = rng.normal(size=3)
            out.append((0.0 if i == 0 else rng.uniform(0.2, 1.0), rng.uniform(*human.ramp_s),
                        rng.uniform(*human.hold_s), rng.uniform(*human.force_n), str(rng.choice(list(HUMAN_LINKS))),
                        direction / np.linalg.norm(direction), rng.uniform(-human.offset_m, human.offset_m, 3)))
        return out

    while cell.time < seconds:
        # A rest: maybe the gripper closes on a part, or opens.
        rest = rng.uniform(0.3, 0.8)
        switch_at = rng.uniform(0.1, rest - 0.1)
        run_for(switch_at)
        if picks and rng.random() < 0.5:
            if carrying:
                cell.set_payload(None)
                changes.append(TaskChange(cell.time, "placed", mass=carrying))
                carrying = 0.0
            else:
                phi = random_part(rng, rng.uniform(*masses))
                cell.set_payload(PayloadEstimate(frame, phi, np.zeros((10, 10)), "truth"))
                changes.append(TaskChange(cell.time, "picked", mass=float(phi[0]), phi=phi))
                carrying = float(phi[0])
        run_for(rest - switch_at)
        person = None
        if human is not None and rng.random() < human.per_minute * 3.0 / 60.0:
            person = human_pushes()
            if rng.random() < human.at_rest_share:
                push(person, moving=False)
                person = None
        # A move, with a contact now and then.
        target = np.clip(home + rng.uniform(-REACH_RAD, REACH_RAD, model.n), lower + 0.1, upper - 0.1)
        duration = rng.uniform(*move_s)
        if person is not None:
            # A person pushing a moving arm: the move lasts as long as the pushes, which start within it.
            total = sum(p[0] + 2 * p[1] + p[2] for p in person)
            duration = max(duration, total + 0.3)
            cell.send(point_to_point(model, cell.time, q_now, target, duration))
            q_now = target
            lead = rng.uniform(0.05, duration - total - 0.1)
            run_for(lead)
            t_started = cell.time
            push(person, moving=True)
            run_for(max(duration - (cell.time - t_started) - lead, 0.0) + 1e-9)
            continue
        cell.send(point_to_point(model, cell.time, q_now, target, duration))
        q_now = target
        if rng.random() < contacts_per_minute * (duration + rest) / 60.0:
            at = rng.uniform(0.1, duration - 0.3)
            length = rng.uniform(*contact_s)
            torque = np.zeros(model.n)
            joints = rng.choice(model.n, size=rng.integers(1, 4), replace=False)
            torque[joints] = rng.uniform(*contact_nm, joints.size) * rng.choice([-1.0, 1.0], joints.size)
            run_for(at)
            changes.append(TaskChange(cell.time, "contact", duration=length, torque=torque))
            cell.set_external_torque(torque)
            run_for(length)
            cell.set_external_torque(None)
            run_for(duration - at - length)
        else:
            run_for(duration)
    t, q, qd, tau = (np.concatenate([p[i] for p in parts]) for i in range(4))
    keep = t <= seconds + dt / 2
    return TaskRun(frame, t[keep], q[keep], qd[keep], tau[keep], [c for c in changes if c.t <= seconds])


def _push_torque(model: RobotModel, q: np.ndarray, link_joint: int, offset: np.ndarray,
                 force: np.ndarray) -> np.ndarray:
    """Joint torques of `force` (N, base frame) on the point `offset` (m, in the link's frame, from its middle) of
    the link moved by joint `link_joint` (an index from the end: -1 the last): τ = J_pᵀ F, zero on the joints
    beyond that link."""
    pm, data = model.model, model.data
    joint = pm.njoints + link_joint            # pinocchio's joint index (0 is the universe)
    pin.forwardKinematics(pm, data, q)
    pin.computeJointJacobians(pm, data, q)
    J = pin.getJointJacobian(pm, data, joint, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    # The point pushed: `offset` from the link's middle (halfway to the next joint; the flange: its origin), where
    # a person reaches, not on the joint axis, where no force turns anything.
    along = 0.5 * pm.jointPlacements[joint + 1].translation if joint + 1 < pm.njoints else np.zeros(3)
    arm = data.oMi[joint].rotation @ (along + offset)
    return J[:3].T @ force + J[3:].T @ np.cross(arm, force)
