"""Wrist F/T sensor: identify the tool on the sensor, then remove its wrench from the readings (Duan 2022).

A sensor at the UR10's tool0 carries Duan's tool (G = 8.862 N, CoM (0.5, 0.2, 5.1) cm, Table 2).
What it reads is the tool's gravity and inertia wrench + constant offsets + noise at Duan's resolution
(0.1 N / 0.02 N·m, Table 1), with the robot base tilted by 0.8° / −0.5° (payload_id_core.testing.ft_data).
identify_ft fits mass, CoM, inertia, offsets and tilt from a 10 s motion of the three wrist joints;
compensate_batch then subtracts the identified tool from the readings of another, faster motion of all
six joints: what is left should be the sensor noise alone.

    python examples/ft_payload.py
Last line: `mass_err_pct=<%> com_err_mm=<mm> residual_force_over_noise=<ratio> residual_torque_over_noise=<ratio>`.
"""

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft import FtParameters, compensate_batch, identify_ft, resolve_sensor_frame
from payload_id_core.signals.recording import WrenchSamples
from payload_id_core.testing.ft_data import DUAN_NOISE_STD, sum_of_sines, synthetic_wrench
from payload_id_core.testing.synthetic import synthetic_recording

RATE_HZ = 500.0
Q0 = np.array([0.3, -1.2, 1.3, -1.0, -1.4, 0.2])           # rad: a working pose away from singularities
MASS = 8.862 / 9.81                                         # kg (Duan's G in N)
COM = np.array([0.005, 0.002, 0.051])                       # m, sensor frame
RADIUS, HEIGHT = 0.04, 0.10                                 # m: inertia of a Ø80 × 100 mm cylinder
INERTIA_AT_COM = np.diag([MASS * (3 * RADIUS**2 + HEIGHT**2) / 12] * 2 + [MASS * RADIUS**2 / 2])
OFFSET = np.array([-0.6672, 0.8565, 0.3538, 0.0228, 0.0084, 0.0080])   # N, N·m (Duan Table 2)
TILT = (np.radians(0.8), np.radians(-0.5))                  # rad about the base x and y axes


def main() -> None:
    # Small matrices: multi-threaded BLAS only adds contention (as in the payload-id command and the nodes).
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    truth = FtParameters(resolve_sensor_frame(model, "tool0"), from_mass_com_inertia(MASS, COM, INERTIA_AT_COM),
                         OFFSET, TILT)

    # Identification: wrist joints only (Duan §4.3), 5 harmonics at 0.1 Hz. The joint samples come from
    # synthetic_recording (no joint torque noise matters here); the F/T readings share their time stamps.
    t, q, qd, qdd = sum_of_sines(model, 10.0, RATE_HZ, joints=[3, 4, 5], q0=Q0, speed=0.6, seed=10)
    rec = synthetic_recording(model, t, q, qd, qdd, seed=1)
    n = len(rec.joints)
    force, torque = synthetic_wrench(model, truth, q[:n], qd[:n], qdd[:n], seed=2)
    rec.wrench = WrenchSamples(rec.joints.t, "tool0", force, torque)
    ident = identify_ft(model, rec, "tool0", delay=0.0)

    # Validation: all joints, twice the base frequency, on the raw readings (interpolating them would
    # average the noise away and flatter the residual).
    _, q, qd, qdd = sum_of_sines(model, 10.0, RATE_HZ, q0=Q0, speed=0.7, base_frequency_hz=0.2, seed=20)
    measured = np.hstack(synthetic_wrench(model, truth, q, qd, qdd, seed=3))
    residual = compensate_batch(model, ident.params, q, qd, qdd, measured)
    rmse = np.sqrt(np.mean(residual ** 2, axis=0))

    est = ident.payload
    print(f"mass {est.mass:.4f} kg (truth {MASS:.4f}), CoM {np.round(1e3 * est.com, 2)} mm "
          f"(truth {np.round(1e3 * COM, 2)}), tilt {np.round(np.degrees(ident.tilt), 3)}° (truth 0.8, -0.5)")
    print(f"residual RMSE after compensation: force {np.round(rmse[:3], 3)} N, torque {np.round(rmse[3:], 4)} N·m")
    raw = np.sqrt(np.mean(measured ** 2, axis=0))
    print(f"raw readings RMSE (what compensation removes): force {np.round(raw[:3], 2)} N, "
          f"torque {np.round(raw[3:], 3)} N·m")
    ratio = rmse / DUAN_NOISE_STD
    print(f"mass_err_pct={100 * abs(est.mass / MASS - 1):.4f} com_err_mm={1e3 * np.max(np.abs(est.com - COM)):.3f} "
          f"residual_force_over_noise={ratio[:3].max():.4f} residual_torque_over_noise={ratio[3:].max():.4f}")


if __name__ == "__main__":
    main()
