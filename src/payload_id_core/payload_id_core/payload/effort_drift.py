"""Does a payload run's effort scale agree with robot.yaml's? (issue 29 item 5)

Drive gains drift (drives warmer than at identification: about −3 %) or are given wrong for one run, while
robot.yaml's own scale check (robot_id/scale_check.py) passes: it judged the identification run. A common
factor s on the run's torques is then fitted away by the payload as far as it can (real UR10e, khalil-1: s = 0.97
gives the mass −11 % at 14σ, converged, quality ok) and the residual barely grows. The robot's own torque, the
larger part, shows it, but only through what the payload cannot imitate: τ_run = s (τ_robot + Y_L φ_L), and a
payload φ′ explains the share P_Y τ_robot of the arm's torque that lies in the span of its regressor Y_L (on a UR
about 70 %: the arm's gravity on the shoulder and elbow looks much like a load's). So the factor is fitted jointly
with a free payload,

    τ_run ≈ a · τ_robot + Y_L φ′,     (a, φ′) by weighted least squares,

which gives a = s from the rest (friction, the base and wrist joints, the arm's own inertia). Fitting a beside the
payload already estimated (a · τ_robot + b · Y_L φ̂_L) does not: φ̂_L has taken (s − 1) P_Y τ_robot, and a then
shows only about half the drift (real UR10e, s = 0.97: a = 0.986, inside the tolerance).

Evidence for the tolerance (real UR10e, robot.yaml from the 14harm pair and the known 2.805 kg): without drift the
joint a is 1.009, 0.999 and 1.006 on the 14harm, 15harm and 01_31 loaded runs (the load's own friction, which
robot.yaml's unloaded model lacks, is the largest part), with the runs' efforts × 0.97: 0.979, 0.969, 0.976, × 1.02:
1.029, 1.019, 1.026. The drift moves a by the drift to 0.1 %; a run's a is judged against 1 ± DRIFT_TOLERANCE."""

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
    """(a, σ of a): the run's torques over robot.yaml's prediction of the arm's own torque, fitted jointly with a
    free payload on `est`'s frame (module docstring; `est`'s own numbers are not used: they took part of the drift).
    σ from the residual scatter, per joint weighted by robot.yaml's noise."""
    source = "commanded" if recording.commanded else "measured"
    sig = conditioned_signals(recording, model.joint_names, source=source, tracking_error=robot.tracking_error)
    step = max(1, len(sig) // MAX_SAMPLES)
    q, qd, qdd, tau = sig.q[::step], sig.qd[::step], sig.qdd[::step], sig.tau[::step]
    temp = None if sig.temperature is None else sig.temperature[::step]
    arm = robot.predict(q, qd, qdd, temp, model=model)
    w = 1.0 / np.maximum(np.asarray(robot.sigma, dtype=float), 1e-9)
    load = payload_regressor(model, est.frame, q, qd, qdd) * w[None, :, None]   # (N, n, 10)
    x = np.column_stack([(arm * w).reshape(-1), load.reshape(-1, load.shape[-1])])
    y = (robot.gear_corrected(tau, qd) * w).reshape(-1)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    res = y - x @ coef
    dof = max(y.size - x.shape[1], 1)
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
