"""Identify a payload from joint torques, offline (Khalil 2007 eq. 23) and online (Xu 2024 Algorithm 1).

Two steps, as on a real cell:
  1. the unloaded UR10 (example-robot-data) is identified once from a 30 s excitation;
  2. a 4 kg payload with its centre of mass 9 cm off the flange is mounted and a 10 s excitation is
     recorded; `khalil-1` fits the payload's inertial parameters to the torques the unloaded model does
     not explain, `difference-rls` runs the recursive estimator sample by sample on the same data.
Torques are synthetic (payload_id_core.testing.synthetic): rigid body + payload + rotor inertia +
linear friction + 1 N·m Gaussian noise, so the true payload is known exactly.

    python examples/identify_payload.py
Last line: `mass_err_pct_max=<%> com_err_mm_max=<mm>` over both methods.
"""

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.methods import identify_payload
from payload_id_core.robot_identification import identify_robot
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

RATE_HZ = 200.0
NOISE_STD = 1.0                                          # N·m on every joint
ROTOR_INERTIA = 0.1                                      # kg·m² on every joint
FRICTION = np.tile([3.0, 4.0, 0.3], 6) * np.repeat([2, 2, 1.5, 0.8, 0.8, 0.8], 3)   # [Fc, Fv, B] per joint
MASS = 4.0                                               # kg
COM = np.array([0.02, -0.03, 0.08])                      # m, in the payload frame (the flange)
INERTIA_AT_COM = np.diag([0.02, 0.03, 0.015])            # kg·m²
METHODS = ("khalil-1", "difference-rls")


def recording(model: RobotModel, motion, payload, seed: int):
    return synthetic_recording(model, *motion, friction="linear", friction_params=FRICTION,
                               rotor_inertia=ROTOR_INERTIA, payload=payload, noise_std=NOISE_STD, seed=seed)


def main() -> None:
    # Small matrices: multi-threaded BLAS only adds contention (as in the payload-id command and the nodes).
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    frame = model.default_payload_frame
    phi_true = from_mass_com_inertia(MASS, COM, INERTIA_AT_COM)   # (10,) inertial parameters about the frame

    # Step 1: the unloaded robot. Its own motion and noise seed: the payload step must not reuse them.
    unloaded = recording(model, sum_of_sines(model, 30.0, RATE_HZ, seed=1), None, seed=1000)
    robot = identify_robot(model, unloaded, friction="linear", delay=0.0)

    # Step 2: the loaded run.
    loaded = recording(model, sum_of_sines(model, 10.0, RATE_HZ, seed=2), (phi_true, frame), seed=2000)
    print(f"payload frame {frame}; truth: mass {MASS:.3f} kg, CoM {np.round(1e3 * COM, 1)} mm")
    mass_err, com_err = [], []
    for method in METHODS:
        est = identify_payload(method, model, robot, loaded, frame, delay=0.0)
        std = est.readable_std()          # [mass, cx, cy, cz, inertia...]
        mass_err.append(100 * abs(est.mass / MASS - 1))
        com_err.append(1e3 * np.max(np.abs(est.com - COM)))
        print(f"{method:15s} mass {est.mass:.4f} ± {std[0]:.4f} kg ({100 * (est.mass / MASS - 1):+.2f} %), "
              f"CoM {np.round(1e3 * est.com, 1)} ± {np.round(1e3 * std[1:4], 1)} mm")
    print(f"mass_err_pct_max={max(mass_err):.4f} com_err_mm_max={max(com_err):.3f}")


if __name__ == "__main__":
    main()
