"""monitor.sign_doubt: the friction law's error bound where a joint moves slowly, as the verdict weighs its rows."""

from dataclasses import replace

import numpy as np

from payload_id_core.dynamics.friction import FrictionModel
from payload_id_core.monitor.sign_doubt import FrictionSignDoubt

GAIN = np.full(6, 50.0)


def _steady(robot, speed: float, moving: float, seconds: float = 0.2) -> np.ndarray:
    """ū (N·m) after `seconds` at 500 Hz of every joint at `speed` rad/s."""
    doubt = FrictionSignDoubt(robot, GAIN, 1.0)
    t = np.arange(int(seconds * 500)) * 0.002
    doubt.update(t, np.full((t.size, 6), speed), np.full(t.size, moving))
    var = doubt.variance(t[-1:])
    assert var is not None
    return np.sqrt(var[0])


def test_the_bound_is_the_laws_sharp_less_smoothed_gap_in_motion_and_nothing_at_rest(ur10_cell_robot):
    _, robot = ur10_cell_robot
    eps = robot.friction.sign_epsilon
    assert eps == 0.01
    sharp = FrictionModel(robot.friction.kind, list(robot.friction.joint_names), robot.friction.shape, 0.0)
    for speed in (0.008, 0.015, 0.1):
        gap = np.abs(sharp.torque(robot.friction_params, np.full((1, 6), speed))
                     - robot.friction_torque(np.full((1, 6), speed)))[0]
        # Settled through the observer's low-pass (0.2 s = 10 time constants): the gap itself.
        assert np.allclose(_steady(robot, speed, 1.0), gap, rtol=1e-3), speed
    # The pan at 8 mrad/s (h87's 5 kg place): N·m, above its level at rest (0.55 N·m); at 0.1 rad/s almost nothing.
    assert _steady(robot, 0.008, 1.0)[0] > 1.0
    assert np.all(_steady(robot, 0.1, 1.0) < 0.01 * _steady(robot, 0.008, 1.0))
    # At rest (the encoder's noise as speed) nothing is added: the level learnt at rest holds it.
    assert np.all(_steady(robot, 0.001, 0.0) == 0.0)


def test_a_law_with_a_sharp_sign_has_nothing_smoothed_to_doubt(ur10_cell_robot):
    _, robot = ur10_cell_robot
    sharp = replace(robot, friction=FrictionModel(robot.friction.kind, list(robot.friction.joint_names),
                                                  robot.friction.shape, 0.0))
    doubt = FrictionSignDoubt(sharp, GAIN, 1.0)
    doubt.update(np.array([0.0, 0.002]), np.full((2, 6), 0.008), np.ones(2))
    assert doubt.variance(np.array([0.002])) is None


def test_rows_not_kept_weigh_as_before(ur10_cell_robot):
    """A stamp the bound was not kept for (older than kept_s, or after a reset) adds nothing."""
    _, robot = ur10_cell_robot
    doubt = FrictionSignDoubt(robot, GAIN, 0.1)
    t = np.arange(200) * 0.002
    doubt.update(t, np.full((t.size, 6), 0.008), np.ones(t.size))
    var = doubt.variance(np.array([t[0], t[-1]]))
    assert var is not None and np.all(var[0] == 0.0) and np.all(var[1] > 0.0)
    doubt.reset()
    assert np.all(doubt.variance(t[-1:]) == 0.0)
