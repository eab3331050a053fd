"""The synthetic UR10 run the identify goal's ROS-free tests share (test_payload_session, test_goal_finish): one
robot identified from an unloaded run and a loaded run of the same motion, made once per test process."""

from functools import cache

import numpy as np

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.signals.recording import Recording
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

FRAME = "wrist_3_link"
PHI = from_mass_com_inertia(3.0, [0.01, 0.02, 0.06], np.diag([0.015, 0.015, 0.01]))
FRICTION = np.tile([3.0, 2.0, 0.0], 6)


@cache
def session_cell() -> tuple[RobotModel, RobotIdentification, Recording]:
    """(model, robot identified unloaded, loaded recording with PHI on FRAME); shared: tests must not change it."""
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    unloaded = synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=FRICTION,
                                   noise_std=0.2, seed=1)
    robot = fit_given_model(model, unloaded, friction="linear", estimator="ols")
    return model, robot, loaded_run(model)


def loaded_run(model: RobotModel, drift: float = 1.0, offsets: np.ndarray | float = 0.0) -> Recording:
    """The cell's loaded run (PHI on FRAME, its motion and noise), with every effort × `drift` (drive gains off
    robot.yaml's) and `offsets` N·m (one or one per joint) added to each joint's constant friction offset."""
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    params = FRICTION.copy()
    params[2::3] += offsets
    return synthetic_recording(model, t, q, qd, qdd, friction="linear", friction_params=params, noise_std=0.2,
                               payload=(PHI, FRAME), seed=2, effort_scale=None if drift == 1.0 else 1.0 / drift)
