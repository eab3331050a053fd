"""Identify the unloaded robot from one recording and check it on another (Xu 2024 §3, Khalil 2007).

The bundled UR10 (example-robot-data) plays two different sum-of-sines excitations; the torques are
the URDF's rigid-body dynamics plus rotor inertia, viscous + Coulomb friction and Gaussian noise
(payload_id_core.testing.synthetic). identify_robot (robot_identification: the path of `payload-id
identify-robot`, here with the friction model given) fits the base parameters by weighted least
squares on the commanded trajectory; the model is judged on the *other* recording, where a correct
model leaves only the noise: validation RMSE / noise std ≈ 1 on every joint.

    python examples/identify_robot.py
Last line: `val_rmse_over_noise_max=<ratio>` (the worst joint).
"""

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import validate_robot
from payload_id_core.robot_identification import identify_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

RATE_HZ = 200.0
NOISE_STD = np.array([0.8, 0.8, 0.5, 0.2, 0.2, 0.1])   # N·m per joint, about a UR10's current noise
ROTOR_INERTIA = [0.6, 0.6, 0.3, 0.05, 0.05, 0.05]       # kg·m², reflected through the gears
# Linear friction per joint (friction.py): [Coulomb Fc (N·m), viscous Fv (N·m·s/rad), offset B (N·m)],
# larger on the big base joints.
FRICTION = np.tile([3.0, 4.0, 0.3], 6) * np.repeat([2, 2, 1.5, 0.8, 0.8, 0.8], 3)


def recording(model: RobotModel, seed: int, duration: float):
    t, q, qd, qdd = sum_of_sines(model, duration, RATE_HZ, seed=seed)
    return synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=FRICTION,
                               rotor_inertia=ROTOR_INERTIA, noise_std=NOISE_STD, seed=seed)


def main() -> None:
    # Small matrices: multi-threaded BLAS only adds contention (as in the payload-id command and the nodes).
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    # Different seeds: different motions and noise, so the validation is a real cross-validation.
    train, test = recording(model, seed=1, duration=30.0), recording(model, seed=2, duration=15.0)

    # delay=0: the synthetic motion follows its command exactly (no controller lag to estimate).
    ident = identify_robot(model, train, friction="linear", delay=0.0)
    rmse = validate_robot(ident, test, model, delay=0.0)

    print(f"{len(train.joints)} samples, {ident.b} base parameters, condition number {ident.condition_number:.3g}")
    print("joint                train RMSE  validation RMSE  noise std  [N·m]")
    for name, a, b, s in zip(model.joint_names, ident.rmse, rmse, NOISE_STD):
        print(f"{name:20s} {a:10.3f}  {b:15.3f}  {s:9.3f}")
    print(f"val_rmse_over_noise_max={np.max(rmse / NOISE_STD):.4f}")


if __name__ == "__main__":
    main()
