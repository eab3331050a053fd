"""The small cell monitor-mode tests run on without ROS: the simulated UR10 identified (linear friction, OLS) from 6 s
of sum-of-sines at 100 Hz, and 1 s of another sum-of-sines at 500 Hz as the task the monitor watches.

Imported by test_monitor_live.py and test_joint_state_publishers.py (each module-scopes it in its own `cell`
fixture).
"""

from __future__ import annotations

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording


def live_cell():
    """(model, robot, task): the task a Recording whose `joints` carry t, q, q̇ and the measured τ."""
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    robot = fit_given_model(model, synthetic_recording(model, t, q, qd, qdd, noise_std=0.2, seed=1),
                           friction="linear", estimator="ols")
    task = synthetic_recording(model, *sum_of_sines(model, duration=1.0, rate_hz=500.0, seed=7), noise_std=0.2,
                               seed=2)
    return model, robot, task
