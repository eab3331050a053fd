"""Inputs the node tests build for themselves: a short excitation trajectory and a robot.yaml; and the
estimator + player pair those tests drive (the identify cell, started as the launch file does)."""
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import FourierTrajectory
from payload_id_core.excitation.limits import MotionLimits, check_limits
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording
from payload_id_ros.supervisor import Supervisor

START = np.array([0.0, -1.2, 1.2, -1.5, -1.5, 0.0])   # the fake hardware's rest pose (UR)
# N·m per joint: half the real UR10e drives' white torque noise (data/sim/ur10.yaml), the fake hardware's "noisy"
# and "drifted" modes' and their robot.yaml's. Noise-free, the model-error check alone flags a 1 % gain drift; at
# this level it does not, and an estimate 20 % off was converged and ok.
DRIVE_NOISE = 0.5 * np.array([1.6, 2.0, 1.1, 0.23, 0.38, 0.30])


def make_trajectory(path: Path, robot: str = "ur10", duration: float = 4.0, harmonics: int = 4, seed: int = 0,
                    speed: float = 0.6, offsets=None) -> FourierTrajectory:
    """A rest-to-rest Fourier trajectory around `offsets` within the player's limits, written to `path`."""
    model = RobotModel.from_urdf(robot)
    limits = MotionLimits.from_model(model, margin=0.05)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((model.n, 2 * harmonics - 3))
    offsets = START[: model.n] + np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0])[: model.n] if offsets is None else offsets
    for scale in speed * 0.8 ** np.arange(20):
        traj = FourierTrajectory.from_rest_coordinates(model.joint_names, 1.0 / duration, offsets, z * scale, harmonics)
        try:
            check_limits(traj, model, limits)
        except Exception:  # noqa: BLE001 - shrink until it fits
            continue
        traj.save(path)
        return traj
    raise AssertionError("no trajectory within limits")


def make_robot_yaml(path: Path, robot: str = "ur10", noise_std=0.01) -> Path:
    """robot.yaml identified from a friction-free synthetic run (what the fake hardware produces), with torque noise
    `noise_std` (N·m, one or one per joint; default nearly none, as the fake hardware's "normal" mode)."""
    model = RobotModel.from_urdf(robot)
    t, q, qd, qdd = sum_of_sines(model, 10.0, 100.0, seed=1)
    rec = synthetic_recording(model, t, q, qd, qdd, noise_std=noise_std, seed=1)
    ident = fit_given_model(model, rec, friction="linear", delay=0.0)
    ident.save(path)
    return path


@contextmanager
def identify_nodes(ros_env: dict, log_dir: Path, assets: Path, result_path: Path | None = None,
                   estimator_parameters: dict | None = None, use_sim_time: bool = False) -> Iterator[Supervisor]:
    """payload_estimator + excitation_player (config/ur10.yaml) on assets/robot.yaml and assets/traj.yaml (and
    any further estimator parameters), up and ready; stopped, by PID, on exit. `use_sim_time`: both on /clock, which
    the identify cell has no owner of (Supervisor's sim_time refuses it): the test's fake_hardware.py owns it."""
    clock = {"use_sim_time": True} if use_sim_time else {}
    estimator = {"robot_yaml": str(assets / "robot.yaml"), "trajectory": str(assets / "traj.yaml"), **clock,
                 **(estimator_parameters or {})}
    if result_path is not None:
        estimator["result_path"] = str(result_path)
    sup = Supervisor(cell="identify", robot="ur10", env=ros_env, log_dir=log_dir,
                     overrides={"payload_estimator": estimator, "excitation_player": clock})
    sup.start()
    try:
        sup.wait_for_log("payload_estimator", "payload estimator ready", 60)
        sup.wait_for_log("excitation_player", "excitation player ready", 60)
        yield sup
    finally:
        sup.stop()
