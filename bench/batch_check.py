"""The CPU cost of the online convergence rule's batch check (payload/online/base.py: `_reported_std_passes` and the
model-error route ask covariance_extra_parts over every sample fed so far), as the cell's goal pays it:
difference-rls on the bundled ur10_payload (10 s at 500 Hz, the 3.5 kg part on tool0, seed 3), the robot identified
on the same excitation's unloaded run (seed 11, nonlinear friction) as `make demo` identifies it (no gear friction:
robot.yaml then holds the unmodelled gear friction's response, one more term of the check) and with its gear friction.

  batch_check_us_per_sample_<robot>_<s>s   CPU time (process time) of one check over the first <s> seconds of
                                           samples, per sample: median of BATCH_CHECK_REPEATS (default 5)
  batch_check_core_share_500hz_<robot>     the share of one core the check takes at 500 Hz once the motion is past
                                           5 s, where the rule checks every 5 % of the motion so far: the 10 s
                                           figure × 500 / 0.05 (a run that never converges pays it to its end)
  batch_check_growth_30s_over_10s_<robot>  the 30 s figure over the 10 s one: 1 where the cost per sample is flat in
                                           the samples fed (the check's passes over them grew past the caches)

<robot> is `demo` (gear friction not identified) or `gear` (identified). Beyond the excitation's 10 s (the 30 s
figure) the loaded run is repeated end to end, as a goal that plays the periodic excitation again would be: the
check's cost depends on the number of samples, not on what they hold. Process time, not wall time: less inflated
by others' load on a shared machine, though not free of it (caches, frequency).

Prints one JSON object as the last stdout line.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.base import SERIAL_CHECK_FRACTION, OnlineEstimator
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.sim import simulate

TRAJECTORY = "ur10_payload"          # the cell's identify goal (payload_id_ros.demo.MONITOR_ROBOT_TRAJECTORY's run)
FRAME, MASS, COM = "tool0", 3.5, np.array([0.03, -0.02, 0.08])
ROBOT_SEED, LOADED_SEED = 11, 3
RATE = 500.0
SECONDS = (2.0, 5.0, 10.0, 20.0, 30.0)


def check_cpu_s(est: OnlineEstimator, repeats: int) -> float:
    """Median process time of one batch check over every sample fed (its per-sample-count cache cleared)."""
    times = []
    for _ in range(repeats):
        est._extra = None                          # the check caches per sample count: each repeat computes it
        start = time.process_time()
        est._extra_on_fed()
        times.append(time.process_time() - start)
    return statistics.median(times)


def repeated(sig, times: int) -> tuple[np.ndarray, ...]:
    """(t, q, q̇, q̈, τ) of the run `sig` played `times` times end to end, the time stamps running on."""
    dt = float(np.median(np.diff(sig.t)))
    t = sig.t[0] + dt * np.arange(times * sig.t.size)
    return (t, *(np.tile(a, (times, 1)) for a in (sig.q, sig.qd, sig.qdd, sig.tau)))


def main() -> int:
    limit_blas_threads(1)
    repeats = int(os.environ.get("BATCH_CHECK_REPEATS") or 5)
    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory(TRAJECTORY)
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    unloaded = simulate(m, traj, None, "ur10", seed=ROBOT_SEED)
    loaded = simulate(m, traj, truth, "ur10", seed=LOADED_SEED)
    out: dict[str, float] = {}
    for name, gear in (("demo", False), ("gear", True)):
        robot = fit_given_model(m, unloaded, friction="nonlinear", gear_friction=gear)
        sig = method_signals(loaded, m, PayloadOptions(), robot)
        moving = np.flatnonzero(np.max(np.abs(sig.qd), axis=1) > 0.05)
        start = int(moving[0]) if moving.size else 0
        t, q, qd, qdd, tau = repeated(sig, int(np.ceil(SECONDS[-1] * RATE / sig.t.size)) + 1)
        for seconds in SECONDS:
            end = min(start + int(round(seconds * RATE)), t.size)
            # A bar no run reaches (a declaration drops the samples kept for the check): the estimator checks as a
            # run that never converges does, and the timed check is the one the rule would make at `end`.
            est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", rate_hz=RATE,
                                         include_robot_uncertainty=True, mass_rel_std=1e-9)
            est.update_batch(t[:end], q[:end], qd[:end], qdd[:end], tau[:end])
            assert not est.converged, "declared: the samples kept for the check are dropped"
            us = 1e6 * check_cpu_s(est, repeats) / end
            out[f"batch_check_us_per_sample_{name}_{seconds:g}s"] = round(us, 1)
            print(f"{name}: {end} samples, {us:.1f} µs a sample", file=sys.stderr, flush=True)
        out[f"batch_check_core_share_500hz_{name}"] = round(
            out[f"batch_check_us_per_sample_{name}_10s"] * 1e-6 * RATE / SERIAL_CHECK_FRACTION, 3)
        out[f"batch_check_growth_30s_over_10s_{name}"] = round(
            out[f"batch_check_us_per_sample_{name}_30s"] / out[f"batch_check_us_per_sample_{name}_10s"], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
