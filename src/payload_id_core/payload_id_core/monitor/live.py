"""The payload monitor fed live joint states between identify goals (the payload_estimator's monitor mode), free
of ROS: PayloadMonitor built on the last estimate the project stands behind, efforts turned into torques with the
drive gains, its re-estimates as PayloadEstimates, and the joint states that stop arriving noticed (they feed
nothing, so the monitor itself cannot notice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.monitor.detect import DetectorSettings
from payload_id_core.monitor.monitor import MonitorSettings, MonitorUpdate, PayloadMonitor
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id.result import RobotIdentification


@dataclass
class LiveStep:
    """What one batch of joint states made: the monitor's update and its re-estimate as the identify path
    reports a payload (None: nothing newly determined)."""

    update: MonitorUpdate
    estimate: PayloadEstimate | None = None


class LiveMonitor:
    """Feed joint-state batches with `feed`; `restart` makes the next batch start a new monitor on the then last
    estimate (after a goal: on the goal's)."""

    def __init__(self, model: RobotModel, robot: RobotIdentification, frame: str, gains: np.ndarray | None,
                 rated_payload_kg: float = 0.0, stale_timeout: float = 0.5, prior: PayloadPrior | None = None) -> None:
        self.model, self.robot, self.frame = model, robot, frame
        # What is known of the payload (the node's bounding_box / known_mass): applied to every re-estimate of a
        # carried part as an identify goal applies it (a part it contradicts is suspect, the prior not applied).
        self.prior = prior
        self.gains = gains                     # torque = effort × gains (None: the efforts are torques)
        # A detected mass change above 1.5 × the rated payload is no part the robot can carry (0: no limit).
        self.max_mass_kg = 1.5 * rated_payload_kg if rated_payload_kg > 0 else math.inf
        self.stale_timeout = stale_timeout
        self.monitor: PayloadMonitor | None = None
        self._silent = False                   # said once that the joint states stopped

    def restart(self) -> None:
        self.monitor = None

    def new_monitor(self, last: PayloadEstimate | None) -> PayloadMonitor:
        """A monitor starting from `last` when its quality is OK, else from no payload."""
        phi = cov = None
        if last is not None and last.quality is Quality.OK:
            phi, cov = last.phi, np.nan_to_num(last.covariance, nan=0.0)
        settings = MonitorSettings(detector=DetectorSettings(max_mass_kg=self.max_mass_kg))
        return PayloadMonitor(self.model, self.robot, self.frame, phi, cov, settings)

    def feed(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray, effort: np.ndarray,
             last: PayloadEstimate | None) -> LiveStep:
        """One batch (t (N,), q, q̇, effort (N, n), model order); `last`: the estimate a new monitor starts on."""
        if self.monitor is None:
            self.monitor = self.new_monitor(last)
        tau = effort if self.gains is None else effort * self.gains[None, :]
        update = self.monitor.update(t, q, qd, tau)
        self._silent = False
        estimate = None if update.estimate is None else update.estimate.to_estimate(self.frame)
        if estimate is not None and self.prior is not None and not update.estimate.carries_nothing:  # type: ignore[union-attr]
            estimate = judge_quality(apply_prior(estimate, self.prior))
        return LiveStep(update, estimate)

    def silence(self, now: float, last_stamp: float) -> str:
        """Why the monitor hears nothing, once per silence ('' otherwise): the last joint state is older than
        stale_timeout at `now`."""
        if self._silent:
            return ""
        age = now - last_stamp
        if age <= self.stale_timeout:
            return ""
        self._silent = True
        return (f"monitor paused: no joint states for {age:.2f} s; it restarts on the next good sample, "
                "no event meanwhile")
