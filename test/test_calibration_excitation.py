"""Issue 29 item 1: a robot model that carries over to another motion. The robot identified on the calibration
excitation the README tells a user to record when payload goals play other motions (the bundled
`<robot>_payload_inertia`, `payload-id excite --objective inertia`), the payload on another (`panda_payload`), in
bench/accuracy.py's cross-motion setting (nonlinear friction 3 % higher under load, 3 ms lag, 1 N·m torque noise).

What decides the methods that subtract the robot model (khalil-1, direct-rls) there is the robot identification's
error carried to the payload motion (noise-free robot: 0.03-0.30 %, 1.2 mm). Identified on a random 30 s-period
sum of sines (peak accelerations 0.3-1 rad/s²), the Panda's inertial base parameters of links 3-7 were so loosely
determined that khalil-1's mass σ was 1.4 % and its error 0.7-1.1 % / 3-11 mm (CoM withheld); on the designed
excitation, 30 s as before, its σ is 0.33 % and the CoM is reported, 2 mm off. One robot identification (~6 s)
and two loaded seeds.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import synthetic_recording

MASS, COM = 1.5, np.array([0.01, -0.02, 0.05])
PHI = from_mass_com_inertia(MASS, COM, np.diag([0.004, 0.005, 0.003]))
RATE = 500.0
CALIBRATION_S = 30.0


def motion(name, model, duration=None):
    traj = load_trajectory(name).for_model(list(model.joint_names))
    t = np.arange(int(round((duration or traj.duration) * RATE))) / RATE
    return (t, *traj.evaluate(t))


@pytest.fixture(scope="module")
def panda_cell():
    """tools/xtraj_cell.py's Panda: the robot identified on panda_payload_inertia (noise seed 1000), the payload
    runs on panda_payload (seeds 0 and 1)."""
    m = RobotModel.from_urdf("panda")
    fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
    fp = np.tile([3.0, 2.0, 0.3], m.n) * np.linspace(2.0, 0.8, m.n).repeat(3) * 0.3

    def record(mot, payload, scale, seed):
        return synthetic_recording(m, *mot, friction=fm, friction_params=fp * scale, rotor_inertia=0.1,
                                   payload=payload, noise_std=1.0, delay=0.003, seed=seed)

    robot = fit_given_model(m, record(motion("panda_payload_inertia", m, CALIBRATION_S), None, 1.0, 1000),
                           friction="nonlinear")
    frame = m.default_payload_frame
    loaded = {seed: record(motion("panda_payload", m), (PHI, frame), 1.03, seed) for seed in (0, 1)}
    return m, robot, frame, loaded


def test_bundled_calibration_excitations_are_designed_for_what_the_payload_needs():
    """Both robots of the cross-motion bench have one, made by `excite --objective inertia` (recorded in it)."""
    for name in ("ur10_payload_inertia", "panda_payload_inertia"):
        traj = load_trajectory(name)
        assert traj.duration == pytest.approx(10.0)
        assert traj.design["objective"] == "inertia", name


@pytest.mark.parametrize("method", ["khalil-1", "direct-rls"])
def test_robot_model_carries_over_to_the_payload_motion(panda_cell, method):
    """Measured (loaded seeds 0 / 1): khalil-1 +0.13 % / −0.11 %, CoM 1.8 / 2.2 mm; direct-rls +0.28 % / −0.07 %,
    1.8 / 2.1 mm; mass σ 0.32-0.33 %, CoM reported. The same runs with the robot identified on the 30 s sum of
    sines (the same noise seed): khalil-1 −0.93 % / −1.11 %, 4.9 / 3.0 mm, direct-rls −0.81 % / −1.08 %, 5.3 /
    3.6 mm, σ 1.4 %, CoM withheld. Bounds: mass 0.5 %, mass σ 0.45 %, CoM 3 mm and reported, within 3σ."""
    m, robot, frame, loaded = panda_cell
    for seed, rec in loaded.items():
        est = identify_payload(method, m, robot, rec, frame)
        err = est.mass - MASS
        std = est.readable_std()
        assert abs(err) / MASS * 100 < 0.5, (seed, est.mass)
        assert std[0] / MASS * 100 < 0.45, (seed, std[0])
        assert abs(err) < 3 * std[0], (seed, est.mass, std[0])
        assert np.linalg.norm(est.com - COM) * 1e3 < 3.0, (seed, est.com)
        assert est.determined is None or bool(est.determined[1]), (seed, "CoM withheld")
