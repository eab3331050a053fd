"""The whole workflow on a physics-simulated UR10 cell (MuJoCo), as `payload-id simulate` runs it.

Unlike the other examples, the torques here do not come from the identification model: MuJoCo
integrates the arm under a PID tracking controller, with rotor inertia, friction whose Coulomb level
grows with the load torque, and measured torque noise (profile 'ur10', payload_id_core/sim). So the
model errors a real cell has (tracking lag, friction the model does not hold) are present.
The bundled `ur10_payload` excitation is played twice: without payload (the robot is identified from
it, Xu 2024 nonlinear friction) and with a 3.5 kg payload (khalil-1, Khalil 2007 eq. 23, identifies it).

    python examples/simulated_cell.py
Last line: `mass_err_pct=<%> mass_err_over_std=<ratio> com_err_mm=<mm>`.
"""

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_identification import identify_robot
from payload_id_core.sim import simulate

PROFILE = "ur10"                           # data/sim/ur10.yaml: controller gains, friction, noise
FRAME = "wrist_3_link"
MASS = 3.5                                 # kg
COM = np.array([0.03, -0.02, 0.08])        # m, in FRAME
INERTIA_AT_COM = np.diag([0.012, 0.015, 0.009])


def main() -> None:
    # Small matrices: multi-threaded BLAS only adds contention (as in the payload-id command and the nodes).
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    excitation = load_trajectory("ur10_payload")          # bundled Fourier excitation (10 s)
    # The simulator mounts a payload given as an estimate: the truth, with no uncertainty.
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, INERTIA_AT_COM), np.zeros((10, 10)), "truth")

    # Different seeds: the two runs get independent torque noise, as two runs on a real cell would.
    unloaded = simulate(model, excitation, None, PROFILE, seed=1)
    loaded = simulate(model, excitation, truth, PROFILE, seed=2)
    robot = identify_robot(model, unloaded, friction="nonlinear", estimator="wls")
    print(f"robot: {len(unloaded.joints)} samples, torque RMSE {np.round(robot.rmse, 3)} N·m")

    est = identify_payload("khalil-1", model, robot, loaded, FRAME, source="commanded")
    std = est.readable_std()
    err = est.mass - MASS
    print(f"khalil-1: mass {est.mass:.4f} ± {std[0]:.4f} kg (truth {MASS}), CoM {np.round(1e3 * est.com, 1)} "
          f"± {np.round(1e3 * std[1:4], 1)} mm (truth {np.round(1e3 * COM, 1)})")
    print(f"mass_err_pct={100 * abs(err) / MASS:.4f} mass_err_over_std={abs(err) / std[0]:.3f} "
          f"com_err_mm={1e3 * np.max(np.abs(est.com - COM)):.3f}")


if __name__ == "__main__":
    main()
