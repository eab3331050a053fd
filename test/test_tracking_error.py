"""The measured tracking error added to the commanded motion (signals/tracking.py).

The cause it removes, shown on the noise-free cell: the trajectory controller's tracking error under the
payload was the inertia's bias (difference-rls 5.6 % without it, 0.3 % with it on ur10_payload_inertia).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia, to_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.monitor import PayloadMonitor
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.methods.common import method_signals
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload.session import IdentificationRun
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.signals.tracking import (
    HALF_WINDOW_S,
    TrackingErrorStream,
    gap_seconds,
    tracking_error_motion,
    window_samples,
)
from payload_id_core.sim import simulate

FRAME = "tool0"
MASS, COM, INERTIA = 3.5, np.array([0.03, -0.02, 0.08]), np.diag([0.012, 0.015, 0.009])


def jittered_times(n: int, rate: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(np.full(n, 1.0 / rate) * (1.0 + 0.3 * rng.uniform(-1.0, 1.0, n)))


def test_polynomials_up_to_the_fourth_degree_come_back_exactly_with_their_derivatives_even_at_the_ends():
    t = jittered_times(400, 500.0, 1)
    s = t - t.mean()
    e = np.stack([1e-4 * s**4 - 2e-3 * s**3 + 0.01 * s, 3e-4 * s**2 - 1e-5], axis=1)
    ed = np.stack([4e-4 * s**3 - 6e-3 * s**2 + 0.01, 6e-4 * s], axis=1)
    edd = np.stack([12e-4 * s**2 - 12e-3 * s, np.full_like(s, 6e-4)], axis=1)
    value, rate, accel = tracking_error_motion(t, e)
    np.testing.assert_allclose(value, e, atol=1e-12)
    np.testing.assert_allclose(rate, ed, atol=1e-9)
    np.testing.assert_allclose(accel, edd, atol=1e-7)


def test_a_3_hz_tracking_error_keeps_its_acceleration_and_encoder_noise_stays_small():
    t = np.arange(2500) / 500.0
    w = 2 * np.pi * 3.0
    e = 2e-4 * np.sin(w * t)[:, None]
    _, _, accel = tracking_error_motion(t, e)
    inner = slice(100, -100)
    gain = np.max(np.abs(accel[inner])) / (2e-4 * w**2)
    assert gain == pytest.approx(1.0, abs=0.01)
    noise = np.random.default_rng(0).normal(0.0, 1e-5, (t.size, 1))      # a UR encoder's 10 µrad
    _, _, accel_noise = tracking_error_motion(t, noise)
    assert float(np.std(accel_noise[inner])) < 0.02                       # rad/s², against q̈ of rad/s²


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_stream_gives_the_whole_signals_numbers_whatever_the_chunks(seed):
    """Also across gaps in the joint states (seed 3: 0.4 s missing, and a stretch of two samples between two
    gaps): no window spans one, and a stretch too short for a fit keeps the command alone."""
    rng = np.random.default_rng(seed)
    t = jittered_times(700, 125.0 if seed == 2 else 250.0 if seed == 1 else 500.0, seed)
    if seed == 3:
        t[300:] += 0.4
        t[302:] += 0.4
    e = np.cumsum(rng.normal(0.0, 1e-5, (t.size, 3)), axis=0)
    tag = np.arange(t.size, dtype=float)[:, None]
    expected = tracking_error_motion(t, e)
    if seed == 3:
        assert np.all(expected[2][300:302] == 0.0) and np.all(expected[2][298:300] != 0.0)
        whole = tracking_error_motion(t, e, gap=np.inf)      # windows across the gaps
        assert np.max(np.abs(whole[2][250:350] - expected[2][250:350])) > 0.01
    stream = TrackingErrorStream(window_samples(t), gap_seconds(t))
    got: list[tuple] = []
    cuts = np.sort(rng.choice(np.arange(1, t.size), size=60, replace=False))
    for part in np.split(np.arange(t.size), cuts):
        out = stream.push(t[part], e[part], tag[part])
        if out is not None:
            got.append(out)
    got.append(stream.finish())
    times, value, rate, accel, tags = (np.concatenate([g[k] for g in got]) for k in range(5))
    np.testing.assert_array_equal(times, t)                      # each sample once, in order
    np.testing.assert_array_equal(tags[:, 0], np.arange(t.size))  # its rows travel with it
    for a, b in zip((value, rate, accel), expected):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
    assert stream._stretch is not None       # a bounded buffer: one window and the last chunk at most
    assert stream._stretch._t.size <= 2 * window_samples(t) + 1 + max(np.diff(np.r_[0, cuts, t.size]))


def test_too_few_samples_bad_stamps_and_nan_positions_are_refused():
    with pytest.raises(PayloadIdError, match="only 2 samples"):
        tracking_error_motion(np.array([0.0, 0.002]), np.zeros((2, 6)))
    with pytest.raises(PayloadIdError, match="do not increase"):
        window_samples(np.array([0.0, -0.002, -0.004]))
    t = np.arange(100) * 0.002
    with pytest.raises(PayloadIdError, match="do not increase"):
        tracking_error_motion(np.r_[t[:50], t[49:99]], np.zeros((100, 2)))
    e = np.zeros((100, 2))
    e[40, 1] = np.nan
    with pytest.raises(PayloadIdError, match="NaN"):
        tracking_error_motion(t, e)
    with pytest.raises(PayloadIdError, match="NaN"):
        TrackingErrorStream(25).push(t, e)
    # Stamps repeated inside the stream's window (the session refuses them first; the fit says so too).
    with pytest.raises(PayloadIdError, match="repeat"):
        stream = TrackingErrorStream(25)
        stream.push(np.zeros(60), np.zeros((60, 2)))


def test_a_stream_too_short_for_a_fit_keeps_the_command_alone():
    """A goal cancelled a few milliseconds into the motion: what there is is fed, not refused."""
    stream = TrackingErrorStream(25)
    assert stream.push(np.array([0.0, 0.002]), np.full((2, 6), 1e-4), np.ones((2, 6))) is None
    t, e, ed, edd, rows = stream.finish()
    assert t.tolist() == [0.0, 0.002] and not e.any() and not ed.any() and not edd.any() and rows.shape == (2, 6)
    assert stream.finish() is None and TrackingErrorStream(25).finish() is None


def test_the_window_is_one_for_one_driver_rate_whatever_the_jitter():
    """At 250 Hz 50 ms is 12.5 samples: the session's first second and the whole run must round alike."""
    for rate, h in ((100.0, 5), (125.0, 6), (250.0, 12), (500.0, 25), (1000.0, 50)):
        sizes = set()
        for seed in range(40):
            rng = np.random.default_rng(seed)
            for n in (int(rate), int(10 * rate)):     # the session's first second, a 10 s recording
                sizes.add(window_samples(np.cumsum(np.full(n, 1.0 / rate) * (1.0 + rng.uniform(-0.05, 0.05, n)))))
        assert sizes == {h}, (rate, sizes)


@pytest.fixture(scope="module")
def clean_cell():
    model = RobotModel.from_urdf("ur10")
    traj = load_trajectory("ur10_payload_inertia")
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, INERTIA), np.zeros((10, 10)), "truth")
    return model, simulate(model, traj, None, "clean", seed=1), simulate(model, traj, truth, "clean", seed=2)


def relative_inertia_error(phi) -> float:
    return float(np.linalg.norm(to_mass_com_inertia(phi)[2] - INERTIA) / np.linalg.norm(INERTIA) * 100)


def test_the_tracking_error_was_the_noise_free_cells_inertia_bias(clean_cell):
    """No noise, no friction, no rotor inertia: what is left is how the arm moved. On the commanded motion
    alone difference-rls's inertia is 5.6 % off; with the measured tracking error 0.3 %."""
    model, unloaded, loaded = clean_cell
    errors = {}
    for tracking in (False, True):
        robot = fit_given_model(model, unloaded, friction="nonlinear", tracking_error=tracking)
        assert robot.tracking_error is tracking
        est = identify_payload("difference-rls", model, robot, loaded, FRAME)
        errors[tracking] = (abs(est.mass - MASS) / MASS * 100, relative_inertia_error(est.phi),
                            float(np.linalg.norm(to_mass_com_inertia(est.phi)[1] - COM)) * 1e3)
        assert has_note(est.notes, NoteCode.SIGNALS_TRACKING_ERROR_ADDED) is tracking
    assert errors[False][1] > 4.0 and errors[True][1] < 1.0, errors
    assert errors[True][0] < 0.02 and errors[True][2] < 0.1, errors


def test_the_ros_session_smooths_the_tracking_error_as_identify_payload_does(clean_cell):
    model, unloaded, loaded = clean_cell
    robot = fit_given_model(model, unloaded, friction="nonlinear")
    cmd, j = loaded.commanded[0], loaded.joints
    run = IdentificationRun(model, robot, FRAME, "difference-rls", float(cmd.time_from_start[-1]))
    run.add_commanded(cmd)
    for part in np.array_split(np.arange(j.t.size), 97):
        run.feed(j.t[part], j.q[part], j.tau[part])
    fed_before_flush = run.online.samples
    run.flush()
    assert run.online.samples - fed_before_flush == window_samples(j.t)   # the last half window waited
    t, q, qd, qdd, _ = run.arrays()
    sig = method_signals(loaded, model, PayloadOptions(delay=run.delay), robot)
    assert sig.tracking_error
    common, i_run, i_sig = np.intersect1d(t, sig.t, return_indices=True)
    # Identical where both windows are centred (the two differ by a sample at the end of the data).
    inner = common < common[-1] - 2 * HALF_WINDOW_S
    assert inner.sum() > 0.9 * common.size
    for a, b in ((q, sig.q), (qd, sig.qd), (qdd, sig.qdd)):
        np.testing.assert_allclose(a[i_run][inner], b[i_sig][inner], rtol=0, atol=1e-9)
    offline = identify_payload("difference-rls", model, robot, loaded, FRAME, delay=run.delay)
    assert run.estimate().mass == pytest.approx(offline.mass, rel=1e-5)
    assert relative_inertia_error(run.estimate().phi) < 1.0


def test_robot_yaml_records_it_and_older_files_read_without(tmp_path, clean_cell):
    model = clean_cell[0]
    # The realistic cell: its controller tracks the unloaded arm only as well as friction and rotor inertia let it.
    robot = fit_given_model(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1))
    assert robot.tracking_error
    robot.save(tmp_path / "robot.yaml")
    assert RobotIdentification.load(tmp_path / "robot.yaml", model).tracking_error is True
    back = RobotIdentification.load(tmp_path / "robot.yaml", model)
    assert robot.rmse_commanded is not None and robot.rmse_commanded[3] > 1.15 * robot.rmse[3]   # wrist 1
    np.testing.assert_array_equal(back.rmse_commanded, robot.rmse_commanded)
    # The payload monitor keeps the residual scale it was tuned on: the model's RMSE on the commanded motion.
    assert PayloadMonitor(model, back, FRAME).sigma.tolist() == robot.rmse_commanded.tolist()
    d = robot.to_dict()
    del d["tracking_error"], d["torque_rmse_commanded_motion"]
    old = RobotIdentification.from_dict(d, model)
    assert old.tracking_error is False and old.rmse_commanded is None      # written before it
    assert PayloadMonitor(model, old, FRAME).sigma.tolist() == robot.rmse.tolist()
    d["tracking_error"] = "yes"
    with pytest.raises(PayloadIdError, match="tracking_error is 'yes'"):
        RobotIdentification.from_dict(d, model)
    # The monitor divides by these: damaged values are refused, naming the file.
    good = robot.to_dict()
    for bad in (float("nan"), -1.0, 0.0, True, "0.1"):
        d = robot.to_dict()
        d["torque_rmse_commanded_motion"] = {**good["torque_rmse_commanded_motion"], "wrist_1_joint": bad}
        with pytest.raises(PayloadIdError, match="robot.yaml: torque_rmse_commanded_motion"):
            RobotIdentification.from_dict(d, model, "robot.yaml")
    d = robot.to_dict()
    d["tracking_error"] = False
    with pytest.raises(PayloadIdError, match="tracking_error is not true"):
        RobotIdentification.from_dict(d, model, "robot.yaml")


def test_a_stand_in_command_is_the_measured_motion_already(clean_cell):
    model, unloaded, _ = clean_cell
    stand_in = dataclasses.replace(unloaded, commanded=[dataclasses.replace(unloaded.commanded[0],
                                                                              smoothing_cutoff_hz=5.0)])
    assert conditioned_signals(unloaded, model.joint_names, tracking_error=True).tracking_error
    sig = conditioned_signals(stand_in, model.joint_names, tracking_error=True)
    assert not sig.tracking_error and not has_note(sig.notes, NoteCode.SIGNALS_TRACKING_ERROR_ADDED)


@pytest.mark.parametrize("method", ["khalil-3", "gaz-dtau"])
def test_methods_that_subtract_the_unloaded_run_compare_the_commands_not_the_tracked_motion(clean_cell, method):
    """The loaded run's tracking error differs from the unloaded one's by what the load does to the controller;
    the same-trajectory check (1 mrad for a recorded command) compares the commands."""
    model, unloaded, loaded = clean_cell
    robot = fit_given_model(model, unloaded)
    gap = np.max(np.abs(method_signals(loaded, model, PayloadOptions(), robot).q
                        - method_signals(loaded, model, PayloadOptions(), robot).commanded_positions))
    assert gap > 2e-3                        # rad: beyond the check's tolerance
    est = identify_payload(method, model, robot, loaded, FRAME, unloaded=unloaded)
    assert has_note(est.notes, NoteCode.SIGNALS_TRACKING_ERROR_ADDED)
    assert abs(est.mass - MASS) < 0.002 * MASS, est.mass
