"""robot.yaml's model error measured on held-out motions, read by the monitor's re-estimate as the identify goal
reads it.

A re-estimate since a change fits the payload and each joint's load friction on the residual against robot.yaml's
unloaded model: direct-rls's fit, on the observer's filtered rows. Partway through a carry it has averaged only part
of the model's error, which follows the motion and does not shrink like noise (real UR10e, 01_31-load from the start
without --payload: `picked` +3.335 ± 0.084 kg for 2.805 kg after 1.7 s of motion, 6.3σ; from 9 to 21 s 3.0-3.2 kg at
2.8-3.05σ on 6-26 blocks). identify-robot measures that error: direct-rls run over each held-out unloaded run, its
spurious mass every 0.5 s against how well the rows so far determine the mass (robot.yaml model_error.running_mass,
robot_id/model_error.py). The identify goal reads it at its estimate's mass σ at the rows' assumed noise
(OnlineEstimator.mass_information_std); the re-estimate reads it at the same quantity: the mass σ its rows give when
whitened by direct-rls's assumed noise (robot.yaml's torque RMSE per joint, direct_rls._default_noise_std), each row
counted for the `refine_stride` samples of the stream it stands for. What it adds to the mass variance is what the
identify goal's adds beyond the whole-run C_me (covariance_extra.prefix_mass_excess, one function for both): the
whole-run part is already in every named change's σ (settings.model_mass_std). A robot.yaml without the record (every
simulated robot.yaml the monitor's tests and bench/monitor.py use) gives None here, and the re-estimate is as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.covariance_extra import measured_model_error, prefix_mass_excess
from payload_id_core.robot_id.result import RobotIdentification

# The held-out record of the online method whose fit the re-estimate is: the payload on the residual against
# robot.yaml's model (payload.methods: direct-rls), not difference-rls's (the loaded robot's whole parameters).
METHOD = "direct-rls"


@dataclass(frozen=True)
class HeldOutMassError:
    """robot.yaml's running model error for the monitor's re-estimate (module docstring)."""
    robot: RobotIdentification
    frame: str
    model: RobotModel
    noise_std: np.ndarray        # (n,) N·m: direct-rls's assumed noise per joint (robot.yaml's torque RMSE)
    samples_per_row: float       # stream samples each row of the re-estimate stands for (MonitorSettings.refine_stride)

    @classmethod
    def from_robot(cls, robot: RobotIdentification, frame: str, model: RobotModel,
                   samples_per_row: float) -> HeldOutMassError | None:
        """None where robot.yaml has no running record of METHOD usable for `frame` (then nothing is added)."""
        me = getattr(robot, "model_error", None)
        if me is None or not me.running.get(METHOD) or measured_model_error(robot, frame, model) is None:
            return None
        rmse = np.asarray(getattr(robot, "rmse", []), dtype=float).reshape(-1)
        if rmse.size != model.n or not np.all(rmse > 0):
            return None
        return cls(robot, frame, model, rmse, float(samples_per_row))

    def excess(self, information_std: float, mass: float | None = None) -> float:
        """kg²: the model error's mass variance beyond the whole-run unloaded C_me's (in every named change's σ
        already: settings.model_mass_std) for a re-estimate of `mass` kg whose mass σ at the assumed noise is
        `information_std`: the part from being partway through a motion (covariance_extra.prefix_mass_excess) and
        the held-out loaded runs' part at that mass (robot_id/model_error.py; none without them or `mass`)."""
        if not np.isfinite(information_std):
            return 0.0
        partway = float(prefix_mass_excess(self.robot, self.frame, self.model, METHOD, np.array([information_std]),
                                           mass)[0])
        if mass is None or getattr(self.robot.model_error, "loaded", None) is None:
            return partway
        whole = measured_model_error(self.robot, self.frame, self.model, METHOD, mass)
        unloaded = measured_model_error(self.robot, self.frame, self.model)
        loaded = 0.0 if whole is None or unloaded is None else max(float(whole[0, 0] - unloaded[0, 0]), 0.0)
        return partway + loaded
