"""The generalized-momentum residual (payload_id_core.monitor.observer, issue 17's foundation).

On a synthetic UR10 recording whose torques are the rigid-body model's: the residual stays at the noise
level while nothing changes; a payload picked at t0 appears as its own joint torques Y_L φ_L within a few
observer time constants; a 100 ms contact shows as a transient that decays once it ends.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.monitor import MomentumObserver, ObserverModel
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

RATE = 500.0
GAIN = 50.0                    # 1/s: time constant 20 ms
FRAME = "tool0"
PHI = from_mass_com_inertia(2.5, np.array([0.01, -0.02, 0.06]), np.diag([0.006, 0.007, 0.004]))


@pytest.fixture(scope="module")
def cell():
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, 10.0, 100.0, seed=1)
    robot = fit_given_model(model, synthetic_recording(model, t, q, qd, qdd, noise_std=0.01, seed=1),
                           friction="linear", delay=0.0)
    motion = sum_of_sines(model, 6.0, RATE, seed=7)                    # another motion: the task
    unloaded = synthetic_recording(model, *motion, noise_std=0.01, seed=2).joints
    # The same noise draw with the payload: the difference is the payload's own torque Y_L φ_L.
    loaded = synthetic_recording(model, *motion, payload=(PHI, FRAME), noise_std=0.01, seed=2).joints
    return model, robot, unloaded.t, unloaded.q, unloaded.qd, unloaded.tau, loaded.tau - unloaded.tau


def _first_order(t, u, gain):
    """ṙ = K (u − r), r(0) = 0, exactly for u held over each step."""
    r = np.zeros_like(u)
    for k in range(1, t.size):
        a = np.exp(-gain * (t[k] - t[k - 1]))
        r[k] = a * r[k - 1] + (1 - a) * u[k]
    return r


def _observer(cell, phi=None) -> MomentumObserver:
    model, robot = cell[0], cell[1]
    return MomentumObserver(ObserverModel(model, robot, FRAME, phi), GAIN)


def test_nothing_changes_nothing_shows(cell):
    _, _, t, q, qd, tau, payload_torque = cell
    r = _observer(cell).update(t, q, qd, tau)
    # Against the payload's own size (several N·m on the shoulder): the model explains the torques.
    # At the identification's own level (its torque RMSE is 0.01 N·m here), far below the payload's torques.
    assert np.max(np.abs(r)) < 0.05
    assert np.max(np.abs(r)) < 0.01 * np.max(np.abs(payload_torque))


def test_a_picked_payload_shows_as_its_own_joint_torques(cell):
    _, _, t, q, qd, tau, payload_torque = cell
    t0 = 3.0
    picked = t >= t0
    r = _observer(cell).update(t, q, qd, tau + picked[:, None] * payload_torque)
    before = t < t0
    assert np.max(np.abs(r[before])) < 0.05
    settled = t >= t0 + 5 / GAIN                      # five time constants after the pick
    # The payload torque changes with the motion; r follows it through ṙ = K(Δτ − r), a first-order lag.
    expected = _first_order(t, picked[:, None] * payload_torque, GAIN)
    error = r[settled] - expected[settled]
    scale = np.max(np.abs(payload_torque), axis=0)
    assert np.all(np.max(np.abs(error), axis=0) < 0.02 * scale + 0.05), (np.max(np.abs(error), axis=0), scale)
    # Without the lag it would be the payload's torque itself: off by up to ḟ/K on the shoulder.
    assert np.max(np.abs(r[settled] - payload_torque[settled])) > 10 * np.max(np.abs(error))
    # The same samples with the payload in the model: the residual is back at the noise level.
    r_model = _observer(cell, PHI).update(t[settled], q[settled], qd[settled], (tau + payload_torque)[settled])
    assert np.max(np.abs(r_model)) < 0.05


def test_a_contact_is_a_transient(cell):
    _, _, t, q, qd, tau, _ = cell
    push = np.array([0.0, 8.0, -5.0, 2.0, 0.0, 0.0])          # N·m on the joints during 100 ms
    during = (t >= 2.0) & (t < 2.1)
    r = _observer(cell).update(t, q, qd, tau + during[:, None] * push)
    at_end = np.flatnonzero(during)[-1]
    # The motors deliver the push (measured minus model: +push); after 5 time constants r holds ~99 % of it.
    assert np.allclose(r[at_end], push, atol=0.02 * np.abs(push).max() + 0.05)
    later = t >= 2.1 + 5 / GAIN
    assert np.max(np.abs(r[later])) < 0.1


def test_blocks_and_single_samples_give_the_same_residual(cell):
    _, _, t, q, qd, tau, payload_torque = cell
    n = 400
    whole = _observer(cell).update(t[:n], q[:n], qd[:n], tau[:n] + payload_torque[:n])
    one = _observer(cell)
    single = np.vstack([one.update(t[k], q[k], qd[k], tau[k] + payload_torque[k]) for k in range(n)])
    assert np.allclose(whole, single, atol=1e-9)


def test_bad_time_and_gain_are_refused(cell):
    _, _, t, q, qd, tau, _ = cell
    obs = _observer(cell)
    obs.update(t[:3], q[:3], qd[:3], tau[:3])
    with pytest.raises(PayloadIdError, match="not after the previous one"):
        obs.update(t[1:2], q[1:2], qd[1:2], tau[1:2])
    obs.reset()
    assert np.all(obs.update(t[5:6], q[5:6], qd[5:6], tau[5:6]) == 0.0)     # restarts at the next sample
    for gain in (0.0, -1.0, float("nan")):
        with pytest.raises(PayloadIdError, match="observer gain"):
            MomentumObserver(ObserverModel(cell[0], cell[1]), gain)
