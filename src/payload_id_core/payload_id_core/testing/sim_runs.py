"""The simulated runs the effort-scale tests, the robot.yaml red teams and bench/gain_drift.py's red team share
(test_quality, test_redteam_issue29_h11, test_effort_drift_witness; test_redteam_stop40, test_redteam_issue29_h86,
test_gain_drift_witness): 8 s of sum-of-sines at 100 Hz with linear friction, and the robot identified on one
such run without load, its gains given. In the package (it was test/sim_runs.py) so that a bench needs no test tree."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.goal_outcome import GoalOutcome
from payload_id_core.payload.session import FinishedGoal, IdentificationRun
from payload_id_core.robot_id import RobotIdentification, fit_given_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.05])
FRICTION = np.array([3.0, 2.0, 0.1])          # linear friction per joint: Coulomb, viscous, offset
# The drift red teams' load (test_redteam_stop40, test_redteam_issue29_h86), on the model's default payload frame.
DRIFT_MASS = 4.0
DRIFT_PHI = from_mass_com_inertia(DRIFT_MASS, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015]))


def linear_friction_run(model, seed, effort_scale=None, payload=None, frame="tool0", offsets=0.0):
    """8 s of sum-of-sines at 100 Hz with linear friction and NOISE (a 7th joint as the 6th); efforts = torque /
    effort_scale (10 gives currents, 1/0.98 drives 2 % weaker than the model says); payload φ on `frame` when given;
    `offsets` N·m (one, or one per joint) added to each joint's constant friction offset."""
    fm = make_friction_model("linear", model.joint_names)
    params = np.tile(FRICTION, model.n)
    params[2::3] += offsets
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=seed)
    return synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=params,
                               noise_std=np.append(NOISE, NOISE[-1])[:model.n], seed=seed, effort_scale=effort_scale,
                               payload=None if payload is None else (payload, frame))


def drift_run(model, seed: int, effort_factor=None, payload: bool = True, offsets=0.0):
    """linear_friction_run with DRIFT_PHI on the model's default payload frame; efforts × `effort_factor` (per joint:
    drives stronger than robot.yaml says) and `offsets` as there."""
    return linear_friction_run(model, seed, None if effort_factor is None else 1.0 / np.asarray(effort_factor),
                               DRIFT_PHI if payload else None, model.default_payload_frame, offsets)


@cache
def given_gains_robot(urdf: str) -> tuple[RobotModel, RobotIdentification]:
    """(model, robot identified on drift_run's seed-1 motion without load, linear friction, gains given); shared
    by every test process's red teams: tests must not change it."""
    model = RobotModel.from_urdf(urdf)
    robot = fit_given_model(model, drift_run(model, 1, payload=False), friction="linear", delay=0.0)
    robot.effort_scale_source = "given"
    return model, robot


class StoppedGoal(NamedTuple):
    run: IdentificationRun
    declared: bool                  # convergence declared before the run's end (read before finish)
    finished: FinishedGoal


def goal_stopped_when_converged(model, robot, frame: str, rec, method: str = "difference-rls",
                                batches: int = 80) -> StoppedGoal:
    """The identify goal on `rec`'s first commanded motion as the ROS session runs it: the samples fed in `batches`
    equal batches, stopped after the first batch that declares convergence (else at the run's end)."""
    cmd, j = rec.commanded[0], rec.joints
    run = IdentificationRun(model, robot, frame, method, float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    for part in np.array_split(np.arange(j.t.size), batches):
        run.feed(j.t[part], j.q[part], j.tau[part])
        if run.converged:
            break
    declared = run.converged
    finished = run.finish(float(j.t[part][-1]), GoalOutcome.CONVERGED)
    assert finished is not None, "the goal's run saw samples, so it finishes with an estimate"
    return StoppedGoal(run, declared, finished)
