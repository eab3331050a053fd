"""A recording replayed through the payload monitor offline (issue 31, `payload-id monitor`): the joint states in
blocks, as the payload_estimator's monitor mode hands them to live.LiveMonitor, so what a user sees here is what
the node would have reported on the same samples. Free of ROS and of files: the command line reads and writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.monitor.detect import Event
from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.monitor.settings import MonitorSettings
from payload_id_core.monitor.state import PayloadState, Undecided
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.recording import JointSamples

BLOCK_S = 0.05      # s of joint states per block, as a driver's batches arrive (the block's median step sets the
                    # re-estimate's serial correlation, so a verdict may differ in detail with it)


@dataclass
class Replay:
    events: list[Event]
    t: np.ndarray                 # (N,) s: the end of each block
    residual: np.ndarray          # (N, n) N·m: the residual against the carried payload there
    mass: np.ndarray              # (N,) kg: the carried mass as reported (less the tare)
    mass_std: np.ndarray          # (N,) kg
    state: PayloadState | None    # the carried payload at the end (None: no sample was good)
    frame: str
    paused: list[str] = field(default_factory=list)   # why the monitor paused, in order
    # Changes seen but not decided when the recording ended (PayloadMonitor.undecided): said, not dropped.
    undecided: list[Undecided] = field(default_factory=list)
    # The carried payload at the end as the node publishes it: its mass σ at least half the monitor's floor
    # (LiveMonitor.floored; None: no sample was good), and that floor (kg: the smallest mass change the alarm was sure
    # to see over the last samples, or at rest at the last pose).
    payload: PayloadEstimate | None = None
    floor_kg: float = float("nan")
    # (t, estimate): what ~/payload was given, in order (LiveStep.estimate: the node's publication, floored), with t the
    # end of the block that gave it. Between two, the first stands.
    published: list[tuple[float, PayloadEstimate]] = field(default_factory=list)

    def final_payload(self) -> PayloadEstimate | None:
        return self.payload


def replay(model: RobotModel, robot: RobotIdentification, frame: str, joints: JointSamples,
           payload: PayloadEstimate | None = None, rated_payload_kg: float = 0.0) -> Replay:
    """Feed `joints` (torques already: drive gains applied, joints in the model's order) to a LiveMonitor started
    on `payload` (None: nothing carried), as the node would."""
    if joints.qd is None:
        raise PayloadIdError("the recording holds no joint velocities, which the monitor's observer needs",
                             "record the joint states with their velocities")
    qd = joints.qd
    live = LiveMonitor(model, robot, frame, None, rated_payload_kg=rated_payload_kg)
    t_all = np.asarray(joints.t, dtype=float)
    dt = float(np.median(np.diff(t_all))) if t_all.size > 1 else BLOCK_S
    max_gap = MonitorSettings().max_gap_s
    if dt > max_gap:
        # Every step a gap: the monitor would restart on each sample and watch nothing, and the replay would say
        # "0 events, 0.000 ± 0.000 kg carried" (a recording stamped in ms: 10 s steps, every sample a pause).
        raise PayloadIdError(f"the recording's samples are {dt:.3g} s apart (median), and the monitor pauses on joint "
                             f"states further apart than {max_gap:g} s: it would watch none of it",
                             "give joint states at 20 Hz or more, time in seconds")
    size = max(1, int(round(BLOCK_S / dt)))
    events: list[Event] = []
    paused: list[str] = []
    ts, res, mass, mass_std = [], [], [], []
    published: list[tuple[float, PayloadEstimate]] = []
    for k in range(0, t_all.size, size):
        sl = slice(k, k + size)
        step = live.feed(t_all[sl], joints.q[sl], qd[sl], joints.tau[sl], payload)
        update = step.update
        events += update.events
        if step.estimate is not None:
            published.append((float(t_all[sl][-1]), step.estimate))
        if update.paused:
            paused.append(update.paused)
        if update.residual is not None:
            assert live.monitor is not None
            phi, cov = live.monitor.state.published_part
            ts.append(update.residual[0])
            res.append(update.residual[1])
            mass.append(float(phi[0]))
            mass_std.append(math.sqrt(max(float(cov[0, 0]), 0.0)))
    state = None if live.monitor is None or not ts else live.monitor.state
    undecided = [] if live.monitor is None else live.monitor.undecided()
    # What ~/payload would say: a change below the floor cannot be excluded, so σ says so (issue 31 item 5); the
    # replay gave validation-p1's empty flange as 0.000 ± 0.000 kg where the alarm's floor is 1.28 kg.
    carried = None if state is None else live.floored(state.to_estimate(frame), joints.q[-1])
    floor = float("nan") if state is None else live.current_floor(joints.q[-1])[0]
    n = model.n
    return Replay(events, np.array(ts), np.array(res).reshape(-1, n), np.array(mass), np.array(mass_std), state,
                  frame, paused, undecided, carried, floor, published)
