"""The payload monitor's settings, and the model-error σ of a mass change that robot.yaml sets for it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.monitor.contact_wrench import LoadOrPushSettings
from payload_id_core.monitor.detect import DetectorSettings
from payload_id_core.payload.covariance_extra import measured_model_error
from payload_id_core.robot_id.result import RobotIdentification


def model_mass_std(robot: RobotIdentification, frame: str, model: RobotModel, detector: DetectorSettings) -> float:
    """kg: the mass a fit of the monitor's residual invents on task motion from the robot model's error alone, the
    model-error σ of every mass change it names. robot.yaml's measured one where it has it for this frame (the
    payload a fit invents on held-out unloaded motions, robot_id/model_error.py: the empty flange re-estimated,
    measured); else a third of `mass_resolution_kg`, the model error the detector already allows a load's mass
    (on the simulated UR10 cell the empty flange is re-estimated at −0.01 to −0.13 kg, and a 0.5 kg part carried
    through fast moves at 0.425 kg)."""
    measured = measured_model_error(robot, frame, model)
    if measured is not None and np.isfinite(measured[0, 0]):
        return float(np.sqrt(max(measured[0, 0], 0.0)))
    return detector.mass_resolution_kg / 3.0



@dataclass
class MonitorSettings:
    gain: float = 50.0                 # 1/s: observer bandwidth (20 ms time constant)
    detector: DetectorSettings = field(default_factory=DetectorSettings)
    max_gap_s: float = 0.05            # joint states further apart than this: stopped, the monitor pauses
    refine_stride: int = 5             # every k-th sample feeds the re-estimate (the residual is smooth)
    mass_std_rel: float = 0.01         # re-estimate determined when σ(m) ≤ this share of m (or mass_std_abs) ...
    mass_std_abs: float = 0.02         # kg
    com_std_m: float = 0.005           # ... and σ of every CoM axis ≤ this
    refine_every_s: float = 0.1        # the re-estimate replaces the detector's payload this often
    min_refine_s: float = 1.0          # s of task motion before a re-estimate replaces the fast fit (or refutes it)
    persist_s: float = 1.0             # s a load fitted at its change must hold before a next change ends it (a
                                       # pick does not come back within a second; a push released does)
    # Load-dependent Coulomb friction (observer.FilteredLoadFriction): the re-estimate fits each joint's μ with
    # the payload, and the unloaded robot's friction error is learnt while nothing is carried and taken out.
    load_friction: bool = True
    load_friction_prior_std: float = 0.05   # μ a priori, N·m per N·m of transmitted torque (0.02 on the UR10 cell)
    load_friction_floor_std: float = 0.002  # μ's σ carried to the next change never below this (it may drift)
    unloaded_friction: bool = True
    # A joint creeping below this speed while another moves faster is not trusted (its residual neither
    # alarms nor fits), nor for 3 observer time constants after: see PayloadMonitor._trusted.
    creep_speed: float = 0.03               # rad/s: 3 × the friction model's sign smoothing (0.01 rad/s) ...
    creep_ratio: float = 0.1                # ... and below this share of the fastest joint's speed
    unloaded_min_motion_s: float = 1.0      # s of motion the unloaded friction is learnt from before it is used
    # s of task motion a disarmed monitor's residual may stay outside its allowance (far longer than the decision
    # window, `detector.confirm_s`) before the carried payload is put in doubt and re-estimated (_put_in_doubt).
    doubt_after_s: float = 1.0
    # A change adopted as a load is named only once the motion's accelerations confirm it against a constant wrench
    # at the flange (a person's push): monitor.contact_wrench.
    load_or_push: LoadOrPushSettings = field(default_factory=LoadOrPushSettings)
    # Right after a change the alarm also tests the residual against the fit of the rows since it (since_change.py,
    # PayloadMonitor._alarm_reference). Off by default: it hears a part in the second after a pick (floor 2.59 -> 0.68
    # kg), but on bench/monitor.py's pushed task seed 8 a 106 N flange push held 2.6 s in a move was then named
    # `placed` -0.44 kg at its release (0 -> 1 of 310 pushes called a load; design.md, h140). Still so on main at
    # 7b2b49a (h206): a doubt kept by 5 g at 152.15 s, whose step-wide σ then hides a real place (design.md). With that
    # σ kept out of the alarm (doubt_alarm_cov, h211) the place is heard, but 3 of 151 pushes are called a load (seed 8:
    # the release's window on the doubt and the place named as one change dated at the release; design.md).
    since_change_alarm: bool = False
    # A doubt's alarm takes the implied load's own fit covariance with the model's error on its samples
    # (doubt.ImpliedLoad.alarm_cov), not the step-wide σ the doubt publishes (PayloadState.alarm_cov; h211). Off: it
    # hears the place under seed 8's doubt (test_monitor_doubt_alarm), but on bench/monitor.py's pushed task seed 7 a
    # place made in a doubt is named 6.5 s late (197.77 s, a load event without a change) and a 76 N flange push in a
    # move is no longer found (design.md, h211).
    doubt_alarm_cov: bool = False
    # The alarm expects the carried load's gear friction where robot.yaml measured it and the data chose it, as a veto
    # beside the unchanged CUSUM (load_friction_veto). Off: it removes the heavy part's false event and the 10 kg part's
    # contact, but measured on main with h149-h152 (h154, bench/monitor.py, design.md) it names 2 of the task's 70
    # picks and places fewer (a 4.58 kg pick refuted as a push by 102 against 100, 65 without it), finds 2 of 88
    # pushes fewer on seed 7, and names a place on seed 7 6.6 s after it came, said located.
    load_friction_veto: bool = False
    # The verdict whitens each row in motion by the friction law's sign-smoothing gap as well (sign_doubt). Off: it
    # names h87's 5 kg place as a fast move begins, but on the real UR10e's 14harm loaded run a strike at 1937.36 s
    # (main: a contact, joint 1 misfit 9.5 per row) was then fitted as a load and the run ended carrying 4.22 kg not
    # determined for 2.81 (test_redteam_h143; design.md, h182).
    friction_sign_doubt: bool = False
    # The alarm's residual expects the carried load's gear friction μ_j L₀,j where robot.yaml measured μ_j and the
    # data chose it (load_friction_veto.ExpectedLoadFriction; h212): the CUSUM itself tests r − μ L₀, its allowance
    # widened by 3σ_μ |L₀|. Takes the place of the veto when both are on. Off: it removes the task's heavy-part false
    # event and names h87's 10 kg part and push_or_load's wrist push held in motion right, but on bench/monitor.py's
    # short run light parts named fell 59 → 50 of 89 with one named 3σ wrong (design.md, h212), and
    # test_monitor_task_motion's push held in motion no longer publishes the 3 kg again before the place.
    load_friction_expected: bool = False

