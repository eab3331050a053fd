"""The carried load's gear friction, expected by the alarm only as a veto (issue 31, h150).

A geared drive's friction grows with the torque it transmits: a payload adds μ_j (|τ_b,j| − |τ_a,j|) sgn(q̇_j) to joint
j's torque (observer.FilteredLoadFriction's column 0, L₀), which the unloaded robot model does not hold. On the
simulated cell a 4.89 kg part makes it 0.3-0.7 N·m on the lift and elbow as a move starts, enough, with the friction
law's error at slow starts, to alarm on a load that did not change (test_monitor_task_motion).

Where robot.yaml measured μ_j on the unloaded run (friction.gear_unmodelled: `determined` joints only, μ ± σ_μ), the
residual r = r₀ − F φ is expected to carry μ_j L₀,j. Earlier forms took it out of the residual, or widened the
CUSUM's allowance (h67, h83, h103, h117, design.md). Each removed the false event, but moved the CUSUM's change time or
its alarm by milliseconds wherever the term was not zero, and the pushed task's decisions cascade from those dates.
Here the monitor's CUSUM is left exactly as it was (its dates, its alarm time, its resets); a second CUSUM runs beside
it with each joint's allowance widened on the side of the expected sign by max(±μ_j L₀,j, 0) / σ_j and on both by
3 σ_μ,j |L₀,j| / σ_j (h83's form: a wider allowance never raises an alarm). An alarm of the monitor's CUSUM is held back
only while this one stays below its threshold: the load's friction then explains it. Where the term is zero (no
load, at rest, a joint robot.yaml did not measure) the two are the same statistic and nothing changes.
"""
from __future__ import annotations

import numpy as np

from payload_id_core.monitor.detect import Cusum, DetectorSettings
from payload_id_core.payload.methods.common import load_friction_on
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id.result import RobotIdentification

# The monitor's residual r₀ − F φ is khalil-1's model (Khalil 2007 eq. 23, τ − Y θ_a on the payload's regressor): where
# robot.yaml chose the load friction for a method on held-out loaded runs, khalil-1's choice is the monitor's.
RESIDUAL_METHOD = "khalil-1"
# σ_μ multiple of the widening on both sides: the 3σ of h83's form (a measured μ's 99.7 % bound), not fitted here.
MU_SIGMAS = 3.0


def measured_load_friction(robot: RobotIdentification) -> tuple[np.ndarray, np.ndarray] | None:
    """(μ, σ_μ) per joint where robot.yaml's unloaded run measured the gear friction the model leaves out
    (friction.gear_unmodelled), zero elsewhere; None where no joint's was measured, or where the data did not choose
    it: a modelled gear friction (friction.gear) is already taken off the torques (RobotIdentification.gear_corrected);
    drive gains identified on a loaded run without it have absorbed it (the real UR10e's robot.yaml: expecting it
    again lost the real 01_31 place at the join, h83, h103, h117, and here); robot.yaml's load_friction_choice for
    RESIDUAL_METHOD, where recorded, decides (payload.methods.common.load_friction_on, the payload methods' rule)."""
    g = robot.unmodelled_gear
    if g is None or robot.gear is not None or not load_friction_on(True, PayloadOptions(), robot, RESIDUAL_METHOD)[0]:
        return None
    std = np.asarray(g.mu_std, dtype=float)
    measured = np.isfinite(std) & (std > 0)
    if not measured.any():
        return None
    return np.where(measured, np.asarray(g.mu, dtype=float), 0.0), np.where(measured, std, 0.0)


class SidedCusum(Cusum):
    """detect.Cusum with an allowance of its own on each side."""

    def update_sided(self, t: float, z: np.ndarray, up: np.ndarray, down: np.ndarray) -> float | None:
        if self._unset:
            self._zero_up[np.isnan(self._zero_up)] = t
            self._zero_down[np.isnan(self._zero_down)] = t
        self._unset = t != t
        np.maximum(0.0, self.g_up + z - up, out=self.g_up)
        np.maximum(0.0, self.g_down - z - down, out=self.g_down)
        self._zero_up[self.g_up == 0.0] = t
        self._zero_down[self.g_down == 0.0] = t
        above_up, above_down = self.g_up > self.s.threshold, self.g_down > self.s.threshold
        if not (above_up.any() or above_down.any()):
            return None
        return float(min(np.min(self._zero_up[above_up], initial=np.inf),
                         np.min(self._zero_down[above_down], initial=np.inf)))


class CusumWithVeto(Cusum):
    """The monitor's CUSUM, unchanged, whose reset resets the veto's CUSUM too (the two see the same samples)."""

    def __init__(self, n: int, settings: DetectorSettings, veto: LoadFrictionVeto | None):
        super().__init__(n, settings)
        self.veto = veto
        self.alarm_time = float("nan")        # s: the alarm time of the window update_vetoed last opened

    def reset(self, t: float = float("nan")) -> None:
        super().reset(t)
        if self.veto is not None:
            self.veto.reset(t)

    def update_vetoed(self, t: float, z: np.ndarray, drift: np.ndarray, L0: np.ndarray, w: np.ndarray,
                      expected: bool) -> float | None:
        """update(t, z, drift), then the veto (LoadFrictionVeto.passes): the change time to open a window at (None:
        no alarm); `alarm_time` then says the window's alarm time."""
        t_change = self.update(t, z, drift)
        self.alarm_time = t
        if self.veto is None:
            return t_change
        t_change = self.veto.passes(t, t_change, self.veto.update(t, z, drift, L0, w, expected))
        if t_change is not None:
            self.alarm_time = self.veto.alarm_time
        return t_change


class LoadFrictionVeto:
    """The second CUSUM (module docstring), fed the same z and allowance as the monitor's, and whether it lets an alarm
    through."""

    def __init__(self, measured: tuple[np.ndarray, np.ndarray], sigma: np.ndarray, settings: DetectorSettings):
        mu, mu_std = measured
        self.mu_z = mu / sigma              # μ_j / σ_j: L₀ to the expected z
        self.spread_z = MU_SIGMAS * mu_std / sigma
        self.s = settings
        self.cusum = SidedCusum(len(mu), settings)
        self.held: tuple[float, float] | None = None     # (when, its change time) of the monitor's alarm held back
        self.alarm_time = float("nan")                   # the alarm time of the window passes() last opened

    def reset(self, t: float = float("nan")) -> None:
        self.cusum.reset(t)
        self.held = None

    def update(self, t: float, z: np.ndarray, drift: np.ndarray, L0: np.ndarray, w: np.ndarray,
               expected: bool) -> float | None:
        """Feed one sample: z and drift as the monitor's CUSUM had them, L₀ (n,) the load friction's filtered column,
        w the trusted joints, `expected` whether the carried load's friction is expected now. Its own change time
        when it is above its threshold, else None."""
        if expected:
            e = w * self.mu_z * L0
            both = w * self.spread_z * np.abs(L0)
            up, down = drift + np.maximum(e, 0.0) + both, drift + np.maximum(-e, 0.0) + both
        else:
            up = down = drift
        return self.cusum.update_sided(t, z, up, down)

    def passes(self, t: float, t_alarm_change: float | None, own: float | None) -> float | None:
        """The change time to open the monitor's window at, or None (no alarm, or one held back), after sample t whose
        monitor's CUSUM gave `t_alarm_change` and this one `own`. Sets `alarm_time`, the window's alarm time."""
        if t_alarm_change is None:
            self.held = None
            return None
        if own is None:
            if self.held is None:
                self.held = (t, t_alarm_change)
            return None
        held, self.held = self.held, None
        if held is not None and t - held[0] < self.s.confirm_s:
            # Crossed within the verdict window the monitor's alarm would have had: that alarm and its window, as
            # without the veto (a window opened 34 ms late gave a verdict of its own: "no load fits it" on a
            # 3 kg carry at a move's start, test_monitor_task_motion's push held in motion).
            self.alarm_time = held[0]
            return held[1]
        # Never held, or held longer than a verdict's window: a misfit beyond the friction that began later, dated by
        # this statistic where it held the alarm back.
        self.alarm_time = t
        return t_alarm_change if held is None else own


class ExpectedLoadFriction:
    """The carried load's gear friction expected in the alarm's residual itself (issue 31, h212): where robot.yaml
    measured μ_j (measured_load_friction), the CUSUM tests z − μ_j L₀,j / σ_j with its allowance widened on both sides
    by MU_SIGMAS σ_μ,j |L₀,j| / σ_j (μ's own uncertainty on the predicted friction). L₀ is the payload's share
    μ(|τ_b| − |τ_a|) sgn q̇ per unit μ, τ_b the carried φ's predicted torque (observer.FilteredLoadFriction, column 0):
    zero with nothing carried, at rest (its sign is the velocity's, smoothed) and on the joints robot.yaml did not
    measure, so there the CUSUM is the monitor's as it was. Only the alarm's statistic: the verdict, the re-estimate
    and the levels see r₀ as measured (h103: the re-estimate's rows each expecting the friction of the candidate φ of
    their moment lost the real 01_31 place)."""

    def __init__(self, measured: tuple[np.ndarray, np.ndarray], sigma: np.ndarray):
        mu, mu_std = measured
        self.mu_z = mu / sigma
        self.spread_z = MU_SIGMAS * mu_std / sigma

    def centred(self, z: np.ndarray, drift: np.ndarray, L0: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z less the expected friction, the allowance with its σ_μ) for one sample: z and drift as the monitor's
        CUSUM has them, L₀ (n,) the load friction's filtered column, w the trusted joints."""
        return z - w * self.mu_z * L0, drift + w * self.spread_z * np.abs(L0)
