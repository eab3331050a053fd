"""What a re-estimate since a change (refine.Refined) says, judged against the monitor's settings and the robot
model's error on the motion: whether it can be a flange load at all, whether its mass (and CoM) are determined, the σ
of a mass change named from it, whether it decides an undecided change, and what it says of a doubt."""

from __future__ import annotations

import numpy as np

from payload_id_core.monitor.refine import MIN_BLOCKS, Refined
from payload_id_core.monitor.settings import MonitorSettings
from payload_id_core.monitor.state import PayloadState


class ReestimateJudge:
    """The rules PayloadMonitor names, refutes and publishes a re-estimate by. `model_mass_std`:
    settings.model_mass_std, the mass the robot model's error invents on task motion. Holds no state of the monitor:
    every input is an argument."""

    def __init__(self, settings: MonitorSettings, model_mass_std: float):
        self.s = settings
        self.model_mass_std = model_mass_std

    def named_std(self, fit_var: float, held_out_var: float = 0.0) -> float:
        """σ of a mass change named from fits of variance `fit_var` (the rows' noise, AR(1)-widened or cluster-robust):
        with the mass the robot model's error invents on the motion the part is weighed in (model_mass_std), which
        no number of rows averages down and which differs from motion to motion (so the tare, the empty flange's
        invented mass on the motions before, does not take it off). A 0.5 kg part carried through fast moves was
        named +0.425 ± 0.014 kg (5.4σ low; the empty flange read −0.01 kg on the task's usual moves).
        `held_out_var`: what robot.yaml's held-out runs measured beyond that whole-run error for fits as little informed
        as these (refine.RefinedCovariance.held_out_mass_var; 0 without the record)."""
        return float(np.sqrt(max(fit_var, 0.0) + self.model_mass_std**2 + max(held_out_var, 0.0)))

    def implausible(self, est: Refined, level: np.ndarray, change_share: np.ndarray) -> str:
        """Why the re-estimate is no load ('' when it may be one): its misfit per row against the residual's running
        `level` (the change's own `change_share` of it allowed, PayloadMonitor._decide), a mass below zero or above
        the robot's, or a CoM beyond the lever a part can have."""
        d = self.s.detector
        m, m_std = float(est.phi[0]), est.mass_std
        allowed = d.span_chi2 * float(np.mean((level + change_share) / level))
        if est.misfit > allowed:
            return f"a flange load leaves {est.misfit:.1f} per row of the residual's variance (allowed {allowed:.1f})"
        if m < -3.0 * m_std - d.mass_resolution_kg:
            return f"it would weigh {m:.2f} ± {m_std:.2f} kg"
        if m > d.max_mass_kg:
            return f"it would weigh {m:.2f} kg, above the robot's {d.max_mass_kg:.2f} kg"
        if m > max(3.0 * m_std, d.mass_resolution_kg) and np.linalg.norm(est.phi[1:4]) > d.max_lever_m * m:
            return f"its CoM would be {np.linalg.norm(est.phi[1:4]) / m:.2f} m from the flange"
        return ""

    def mass_determined(self, est: Refined, tare: tuple[float, float]) -> tuple[bool, bool]:
        """(the mass is known to the settings' σ, nothing is carried): nothing carried (a mass less the `tare` (mass,
        variance) within 3σ of zero) is known once 3σ is below the smallest change the detector names (a part it would
        report is ruled out)."""
        m = float(est.phi[0])
        if est.blocks < MIN_BLOCKS or not est.determined[0]:
            return False, False      # the robust covariance needs that many blocks of motion to mean anything
        # "Nothing" as PayloadState.carries_nothing reports it: the mass less the tare.
        part_m = m - tare[0]
        part_std = float(np.sqrt(est.mass_std**2 + tare[1]))
        if abs(part_m) <= 3.0 * part_std:
            # σ ≤ 0.02 kg took the empty flange 7 s of motion after a place, the controller holding the part's
            # payload all that time; 0.1 kg at 3σ takes about 4 s.
            return 3.0 * part_std <= self.s.detector.min_mass_change_kg, True
        return est.mass_std <= max(self.s.mass_std_rel * abs(m), self.s.mass_std_abs), False

    def is_determined(self, est: Refined, tare: tuple[float, float]) -> bool:
        """Mass to the settings' σ (mass_determined), and the CoM unless nothing is carried."""
        mass_known, nothing = self.mass_determined(est, tare)
        if not mass_known or nothing:
            return mass_known
        if not np.all(est.determined[:4]):
            return False
        _, c_std = est.com_and_std()
        return bool(np.all(c_std <= self.s.com_std_m))

    def tells_undecided(self, est: Refined, state: PayloadState) -> bool:
        """The re-estimate's mass, its robust covariance trusted (MIN_BLOCKS) and the mass determined by the motion,
        has 3σ (with the model's error, named_std) below the size of the undecided change `state` carries
        (√undecided_var)."""
        if est.blocks < MIN_BLOCKS or not est.determined[0] or not state.undecided:
            return False
        return 3.0 * self.named_std(est.mass_std**2) < float(np.sqrt(state.undecided_var))

    def came_back(self, est: Refined, before: PayloadState, implied_mass: float) -> bool:
        """The re-estimate since a doubt carries the mass settled before it (`before`, within the smallest change
        named, or 3σ) and tells it apart from the mass the doubt implied (`implied_mass`, by as much): the doubt's
        misfit came back."""
        d = self.s.detector
        std = float(np.sqrt(est.mass_std**2 + max(before.cov[0, 0], 0.0)))
        allowed = max(d.min_mass_change_kg, 3.0 * std)
        m = float(est.phi[0])
        return abs(m - float(before.phi[0])) <= allowed and abs(m - implied_mass) > allowed

    def names_implied(self, dm: float, dm_std: float, implied_dm: float, implied_std: float) -> bool:
        """The change Δm ± σ named against the payload before a doubt (PayloadMonitor._put_in_doubt) is the one the
        doubt implied (`implied_dm` ± `implied_std`, its fit's): within 3σ of both, or the smallest change named."""
        std = float(np.sqrt(dm_std**2 + implied_std**2))
        return abs(dm - implied_dm) <= max(self.s.detector.min_mass_change_kg, 3.0 * std)
