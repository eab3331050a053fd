"""Dynamics-core figures (issue 3): regressor cost per UR10 sample and identify-robot on 60 s of 500 Hz data.

Prints one JSON object as its last line:
  regressor_sample_us        full regressor (base rigid-body + rotor inertia + nonlinear friction columns) per
                             UR10 sample, median of 5 batches of 2000 samples (target ≤ 20)
  regressor_rigid_sample_us  pinocchio rigid-body columns alone, same batches
  identify_robot_60s_s       fit_given_model (WLS, nonlinear friction with α search, commanded signals) on
                             30 000 samples (60 s at 500 Hz), median of 3 (target ≤ 5)
  identify_robot_60s_sdp_s   the same with the physically consistent SDP estimator, median of 2 (target ≤ 30)
  identify_robot_60s_validation_rmse_ratio  max over joints of validation RMSE / noise std on another trajectory
BLAS runs single-threaded (limit_blas_threads, as `payload-id identify-robot` does): on the shared 2-core machine
threaded OpenBLAS oversubscribed the cores and made the same Gram products 5–20× slower and erratic.
"""

import json
import time

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.base_params import compute_base_parameters
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor
from payload_id_core.robot_id import fit_given_model, full_regressor, rotor_structure, validate_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.8, 0.8, 0.5, 0.2, 0.2, 0.1])


def main() -> None:
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    base = compute_base_parameters(model)
    rotor = rotor_structure(model, base)
    fm = make_friction_model("nonlinear", model.joint_names, alpha=0.5)
    rng = np.random.default_rng(0)
    n = 2000
    full_us, rigid_us = [], []
    for _ in range(5):
        q, qd, qdd = rng.uniform(-3, 3, (n, 6)), rng.standard_normal((n, 6)), rng.standard_normal((n, 6))
        t0 = time.perf_counter()
        rigid_body_regressor(model, q, qd, qdd)
        t1 = time.perf_counter()
        full_regressor(model, base, rotor, fm, q, qd, qdd)
        t2 = time.perf_counter()
        rigid_us.append((t1 - t0) / n * 1e6)
        full_us.append((t2 - t1) / n * 1e6)

    alpha = [0.45, 0.35, 0.6, 0.7, 0.5, 0.4]
    truth_f = make_friction_model("nonlinear", model.joint_names, alpha=alpha)
    theta_f = np.tile([3.0, 9.0, 0.1], 6)

    def recording(seed, duration):
        t, q, qd, qdd = sum_of_sines(model, duration, 500.0, seed=seed)
        return synthetic_recording(model, t, q, qd, qdd, friction=truth_f, friction_params=theta_f,
                                   rotor_inertia=[0.6, 0.6, 0.3, 0.05, 0.05, 0.05], noise_std=NOISE, seed=seed)

    train = recording(1, 60.0)
    test = recording(2, 20.0)
    fit_given_model(model, recording(3, 2.0), delay=0.0)  # warm imports (scipy.signal, cvxpy) out of the timing
    wls_s, sdp_s = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        ident = fit_given_model(model, train, friction="nonlinear", estimator="wls", delay="estimate")
        wls_s.append(time.perf_counter() - t0)
    ratio = float(np.max(validate_robot(ident, test) / NOISE))
    for _ in range(2):
        t0 = time.perf_counter()
        fit_given_model(model, train, friction="nonlinear", estimator="feasible", delay="estimate")
        sdp_s.append(time.perf_counter() - t0)
    print(json.dumps({
        "regressor_sample_us": round(float(np.median(full_us)), 2),
        "regressor_rigid_sample_us": round(float(np.median(rigid_us)), 2),
        "identify_robot_60s_s": round(float(np.median(wls_s)), 3),
        "identify_robot_60s_sdp_s": round(float(np.median(sdp_s)), 3),
        "identify_robot_60s_validation_rmse_ratio": round(ratio, 4),
        "identify_robot_60s_samples": int(len(train.joints)),
    }))


if __name__ == "__main__":
    main()
