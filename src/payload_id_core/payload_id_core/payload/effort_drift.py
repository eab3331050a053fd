"""Does a payload run's effort scale agree with robot.yaml's? (issue 29 item 5)

Drive gains drift (drives warmer than at identification: about −3 %) or are given wrong for one run, while
robot.yaml's own scale check (robot_id/scale_check.py) passes: it judged the identification run. A common
factor s on the run's torques is then fitted away by the payload as far as it can (the simulated 4 kg load:
difference-rls −7.6 % at 19σ for s = 0.97, converged, quality ok) and the residual barely grows (model-error
ratio ≤ 1.3). The robot's own torque, the larger part, shows it: fitting the run's torques as
τ = a · τ_robot + b · τ_L (τ_robot robot.yaml's prediction on this motion, τ_L the estimated payload's torque, a
and b free) gives a = s, because the arm's and the load's torques have different shapes along the motion."""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.signals.recording import Recording

# |a − 1| above this and above DRIFT_SIGMAS σ of a: the run's efforts are not on robot.yaml's scale.
DRIFT_TOLERANCE = 0.015
DRIFT_SIGMAS = 3.0
MAX_SAMPLES = 3000


def robot_scale_on_run(robot: RobotIdentification, model: RobotModel, recording: Recording,
                       est: PayloadEstimate) -> tuple[float, float]:
    """(a, σ of a): the run's torques over robot.yaml's prediction of the arm's own torque, the payload's share
    fitted alongside (module docstring). σ from the residual scatter, per joint weighted by robot.yaml's noise."""
    source = "commanded" if recording.commanded else "measured"
    sig = conditioned_signals(recording, model.joint_names, source=source, tracking_error=robot.tracking_error)
    step = max(1, len(sig) // MAX_SAMPLES)
    q, qd, qdd, tau = sig.q[::step], sig.qd[::step], sig.qdd[::step], sig.tau[::step]
    temp = None if sig.temperature is None else sig.temperature[::step]
    arm = robot.predict(q, qd, qdd, temp, model=model)
    load = payload_regressor(model, est.frame, q, qd, qdd) @ est.phi
    w = 1.0 / np.maximum(np.asarray(robot.sigma, dtype=float), 1e-9)
    x = np.stack([(arm * w).reshape(-1), (load * w).reshape(-1)], axis=1)
    y = (robot.gear_corrected(tau, qd) * w).reshape(-1)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    res = y - x @ coef
    dof = max(y.size - 2, 1)
    cov = np.linalg.pinv(x.T @ x) * float(res @ res) / dof
    return float(coef[0]), float(np.sqrt(max(cov[0, 0], 0.0)))


def drift_reason(a: float, std: float, what: str) -> str:
    """A sentence when the run's efforts are off robot.yaml's scale (empty otherwise)."""
    if not (np.isfinite(a) and abs(a - 1.0) > max(DRIFT_TOLERANCE, DRIFT_SIGMAS * std)):
        return ""
    return (f"{what}'s efforts are {a:.4g} ± {std:.2g} × robot.yaml's model of the arm (limit 1 ± "
            f"{DRIFT_TOLERANCE:g}): the drive gains differ from those robot.yaml was identified with (warmer "
            "drives, gains given by hand?) and the payload took the difference; re-identify the robot on a run "
            "recorded now (identify-robot), or give the gains this run was recorded with")
