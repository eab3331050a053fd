"""Signal conditioning: controller-exact trajectory sampling, filters, differentiation, delay, the pipeline."""

import numpy as np
import pytest

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.signals import commanded, conditioning, delay, filtering
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording


def poly_trajectory(coeffs, knots, start=10.0, fields=("pos", "vel", "acc"), names=("a",)):
    P = np.polynomial.Polynomial(coeffs)
    col = lambda f: f(knots)[:, None]  # noqa: E731
    return P, CommandedTrajectory(start, list(names), knots, col(P),
                                  col(P.deriv()) if "vel" in fields else None,
                                  col(P.deriv(2)) if "acc" in fields else None)


def test_quintic_segments_reproduce_a_quintic_exactly():
    P, traj = poly_trajectory([0.3, -0.2, 0.5, 0.1, -0.05, 0.02], np.array([0.0, 0.4, 1.0, 1.3, 2.0]))
    t = 10.0 + np.linspace(0.0, 1.999, 2001)
    q, qd, qdd = commanded.sample_commanded([traj], t)
    np.testing.assert_allclose(q[:, 0], P(t - 10), atol=1e-13)
    np.testing.assert_allclose(qd[:, 0], P.deriv()(t - 10), atol=1e-12)
    np.testing.assert_allclose(qdd[:, 0], P.deriv(2)(t - 10), atol=1e-11)


def test_cubic_with_velocities_and_linear_with_positions_only():
    P, traj = poly_trajectory([1.0, 0.5, -0.7, 0.25], np.array([0.0, 0.3, 0.9, 1.5]), fields=("pos", "vel"))
    t = 10.0 + np.linspace(0.0, 1.49, 500)
    q, qd, qdd = commanded.sample_commanded([traj], t)
    np.testing.assert_allclose(q[:, 0], P(t - 10), atol=1e-13)
    np.testing.assert_allclose(qd[:, 0], P.deriv()(t - 10), atol=1e-12)
    np.testing.assert_allclose(qdd[:, 0], P.deriv(2)(t - 10), atol=1e-11)
    # Positions only: straight lines between points, the segment slope as velocity, zero acceleration.
    knots = np.array([0.0, 0.3, 0.9, 1.5])
    traj = CommandedTrajectory(10.0, ["a"], knots, np.array([[0.0], [0.6], [0.0], [3.0]]))
    q, qd, qdd = commanded.sample_commanded([traj], t)
    np.testing.assert_allclose(q[:, 0], np.interp(t - 10, knots, [0.0, 0.6, 0.0, 3.0]), atol=1e-14)
    seg = np.searchsorted(knots, t - 10, side="right") - 1
    np.testing.assert_allclose(qd[:, 0], np.array([2.0, -1.0, 5.0])[seg], atol=1e-12)
    assert np.all(qdd == 0.0)


def test_hold_after_last_point_and_before_first():
    _, traj = poly_trajectory([0.0, 1.0, 0.0, 0.0, 0.0, 0.0], np.array([0.5, 1.0, 2.0]))
    q, qd, qdd = commanded.sample_commanded([traj], np.array([9.0, 10.2, 12.0, 13.0, 100.0]))
    np.testing.assert_allclose(q[:, 0], [0.5, 0.5, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(qd[[0, 1, 2, 3, 4], 0], 0.0)
    np.testing.assert_array_equal(qdd[:, 0], 0.0)
    assert commanded.commanded_span([traj]) == (10.5, 12.0)


def test_later_trajectory_replaces_from_its_start_and_blends_from_the_current_command():
    P1, first = poly_trajectory([0.0, 0.8, 0.3, -0.1, 0.0, 0.0], np.linspace(0.0, 4.0, 41), start=0.0)
    # The second message starts at 1.5 s, its first point is due 0.25 s later.
    knots2 = 0.25 + np.linspace(0.0, 2.0, 21)
    P2 = np.polynomial.Polynomial([2.0, -0.5, 0.1])
    second = CommandedTrajectory(1.5, ["a"], knots2, P2(knots2)[:, None], P2.deriv()(knots2)[:, None],
                                 P2.deriv(2)(knots2)[:, None])
    t = np.linspace(0.0, 4.0, 4001)
    q, qd, qdd = commanded.sample_commanded([second, first], t)  # any order: start times decide
    before = t < 1.5
    np.testing.assert_allclose(q[before, 0], P1(t[before]), atol=1e-12)
    after = t >= 1.75
    tail = after & (t <= 1.5 + knots2[-1])
    np.testing.assert_allclose(q[tail, 0], P2(t[tail] - 1.5), atol=1e-12)
    np.testing.assert_allclose(q[t > 3.75, 0], P2(knots2[-1]))  # held after the end
    # The blend from the first trajectory's state at 1.5 s to the first point is a quintic
    # matching position, velocity and acceleration at both ends (no jump the controller would not make).
    blend = (t >= 1.5) & (t < 1.75)
    tb = t[blend]
    assert q[blend, 0][0] == pytest.approx(P1(1.5), abs=1e-12)
    assert qd[blend, 0][0] == pytest.approx(P1.deriv()(1.5), abs=1e-12)
    assert qdd[blend, 0][0] == pytest.approx(P1.deriv(2)(1.5), abs=1e-12)
    end = commanded.sample_commanded([second, first], np.array([1.75 - 1e-9]))
    assert end[0][0, 0] == pytest.approx(P2(0.25), abs=1e-7)
    assert end[1][0, 0] == pytest.approx(P2.deriv()(0.25), abs=1e-6)
    assert np.all(np.isfinite(q[blend])) and tb.size == 250


def test_joint_order_by_name_and_missing_joint():
    knots = np.array([0.0, 1.0])
    traj = CommandedTrajectory(0.0, ["b", "a"], knots, np.array([[1.0, 10.0], [2.0, 20.0]]))
    q, _, _ = commanded.sample_commanded([traj], np.array([0.5]), joint_names=["a", "b"])
    np.testing.assert_allclose(q, [[15.0, 1.5]])
    with pytest.raises(PayloadIdError, match=r"lacks joints \['c'\]"):
        commanded.sample_commanded([traj], np.array([0.5]), joint_names=["a", "c"])
    with pytest.raises(PayloadIdError, match="no commanded trajectory"):
        commanded.sample_commanded([], np.array([0.5]))


def test_central_difference_of_a_sine_on_non_uniform_times():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.0015, 0.0025, 4000))  # ~500 Hz with ±25 % jitter
    w = 2 * np.pi * 0.7
    x = np.column_stack([np.sin(w * t), np.cos(w * t)])
    dx = filtering.central_difference(x, t)
    err = np.abs(dx - w * np.column_stack([np.cos(w * t), -np.sin(w * t)]))
    assert err.max() < 2e-4 * w  # second-order: error ~ w^3 h^2 even at the ends


def test_lowpass_has_zero_phase_and_attenuates():
    fs = 500.0
    t = np.arange(0, 10, 1 / fs)
    slow = np.sin(2 * np.pi * 1.0 * t)
    fast = 0.5 * np.sin(2 * np.pi * 100.0 * t)
    y = filtering.lowpass(slow + fast, fs, 10.0)
    mid = slice(500, -500)
    assert np.abs(y[mid] - slow[mid]).max() < 1e-3      # 1 Hz passes unchanged: no lag, no gain error
    lag = np.argmax(np.correlate(y[mid], slow[mid], mode="full")) - (slow[mid].size - 1)
    assert lag == 0
    resid = filtering.lowpass(fast, fs, 10.0)[mid]
    assert np.abs(resid).max() < 0.5 * 1e-4           # 100 Hz: more than 80 dB down
    with pytest.raises(PayloadIdError, match="Nyquist"):
        filtering.lowpass(slow, fs, 300.0)


def test_decimate_parallel_keeps_the_linear_model():
    fs, N = 500.0, 5000
    t = np.arange(N) / fs
    Y = np.stack([np.sin(2 * np.pi * 0.3 * t), np.cos(2 * np.pi * 0.7 * t), np.ones(N)], axis=1)[:, None, :]
    phi = np.array([2.0, -1.0, 0.5])
    ripple = 0.3 * np.sin(2 * np.pi * 120.0 * t)[:, None]     # torque ripple the filter must remove
    tau = Y @ phi + ripple
    tau_d, Y_d, idx = filtering.decimate_parallel(tau, Y, fs, 10)
    assert idx.size == N // 10 and Y_d.shape == (N // 10, 1, 3)
    # Same filter on both sides: the decimated data still satisfy tau = Y phi (ripple gone).
    np.testing.assert_allclose(tau_d[50:-50, 0], (Y_d @ phi)[50:-50, 0], atol=1e-4)
    est = np.linalg.lstsq(Y_d[:, 0, :], tau_d[:, 0], rcond=None)[0]
    np.testing.assert_allclose(est, phi, atol=1e-3)


def sine_motion(t):
    w = 2 * np.pi * np.array([0.2, 0.35])
    q = np.column_stack([0.8 * np.sin(w[0] * t) + 0.2 * np.sin(3 * w[0] * t), 0.5 * np.cos(w[1] * t)])
    qd = np.column_stack([0.8 * w[0] * np.cos(w[0] * t) + 0.6 * w[0] * np.cos(3 * w[0] * t),
                          -0.5 * w[1] * np.sin(w[1] * t)])
    qdd = np.column_stack([-0.8 * w[0]**2 * np.sin(w[0] * t) - 1.8 * w[0]**2 * np.sin(3 * w[0] * t),
                           -0.5 * w[1]**2 * np.cos(w[1] * t)])
    return q, qd, qdd


def delayed_recording(delay=0.004, noise=2e-5, rate=500.0, duration=12.0, seed=0):
    """Commanded at 100 Hz (quintic points) from t=1 s; measured at `rate` lagging by `delay`."""
    rng = np.random.default_rng(seed)
    knots = np.arange(0.0, duration, 0.01)
    qc, qdc, qddc = sine_motion(knots)
    traj = CommandedTrajectory(1.0, ["j1", "j2"], knots, qc, qdc, qddc)
    t = 0.5 + np.arange(int((duration + 1.0) * rate)) / rate
    q = sine_motion(t - 1.0 - delay)[0] + rng.normal(0, noise, (t.size, 2))
    tau = np.column_stack([np.sin(t), np.cos(t)])
    return Recording(JointSamples(t, ["j2", "j1"], q[:, ::-1], None, tau[:, ::-1]), [traj])


def test_delay_of_4ms_is_recovered_within_half_a_millisecond():
    for seed in range(3):
        rec = delayed_recording(delay=0.004, seed=seed)
        j = rec.joints
        q_cmd = commanded.sample_commanded(rec.commanded, j.t, ["j2", "j1"])[0]
        d = delay.estimate_delay(j.t, j.q, j.t, q_cmd)
        assert abs(d - 0.004) < 0.5e-3, d
    # Negative delay and a steady tracking offset do not confuse it either.
    rec = delayed_recording(delay=-0.0123)
    j = rec.joints
    q_cmd = commanded.sample_commanded(rec.commanded, j.t, ["j2", "j1"])[0]
    assert delay.estimate_delay(j.t, j.q + [0.01, -0.02], j.t, q_cmd) == pytest.approx(-0.0123, abs=0.5e-3)


def test_conditioned_signals_commanded():
    rec = delayed_recording(delay=0.004)
    sig = conditioning.conditioned_signals(rec, ["j1", "j2"], source="commanded")
    assert sig.joint_names == ["j1", "j2"]
    assert abs(sig.delay_used - 0.004) < 0.5e-3
    # Commanded signals at t - delay are the true motion of the measured samples.
    q, qd, qdd = sine_motion(sig.t - 1.0 - 0.004)
    span = (sig.t - sig.delay_used >= 1.0) & (sig.t - sig.delay_used <= 1.0 + 11.99)
    assert span.all()                                   # samples outside the command were dropped
    assert len(sig) < len(rec.joints)
    np.testing.assert_allclose(sig.q, q, atol=2e-5)
    np.testing.assert_allclose(sig.qd, qd, atol=5e-4)
    np.testing.assert_allclose(sig.qdd, qdd, atol=5e-3)
    np.testing.assert_allclose(sig.tau, np.column_stack([np.sin(sig.t), np.cos(sig.t)]))  # reordered by name
    fixed = conditioning.conditioned_signals(rec, ["j1", "j2"], delay=0.0)
    assert fixed.delay_used == 0.0
    assert has_note(sig.notes, NoteCode.SIGNALS_DELAY_ESTIMATED)
    assert not has_note(fixed.notes, NoteCode.SIGNALS_DELAY_ESTIMATED)


def test_conditioned_signals_measured_and_decimated():
    rate = 500.0
    t = np.arange(0, 20, 1 / rate)
    rng = np.random.default_rng(4)
    q, qd, qdd = sine_motion(t)
    rec = Recording(JointSamples(t, ["j1", "j2"], q + rng.normal(0, 1e-5, q.shape), None,
                                 np.column_stack([np.sin(t), np.cos(t)]) + rng.normal(0, 0.05, q.shape)))
    sig = conditioning.conditioned_signals(rec, ["j1", "j2"], source="measured")
    # 10 Hz filter: the first and last 3/10 s are dropped (filter and differentiation transients).
    k = np.searchsorted(t, sig.t)
    np.testing.assert_array_equal(t[k], sig.t)
    assert sig.t[0] == pytest.approx(0.3, abs=1 / rate) and sig.t[-1] == pytest.approx(t[-1] - 0.3, abs=1 / rate)
    assert sig.delay_used == 0.0
    np.testing.assert_allclose(sig.q, q[k], atol=5e-5)
    np.testing.assert_allclose(sig.qd, qd[k], atol=3e-3)
    np.testing.assert_allclose(sig.qdd, qdd[k], atol=0.1)
    # Torque noise 0.05 N·m is reduced by the 10 Hz filter (about sqrt(10/250)).
    assert np.std(sig.tau[:, 0] - np.sin(sig.t)) < 0.02
    dec = conditioning.conditioned_signals(rec, ["j1", "j2"], source="measured", decimate=5)
    assert len(dec) == -(-len(sig) // 5)
    np.testing.assert_allclose(dec.t, sig.t[::5])
    kd = np.searchsorted(t, dec.t)
    np.testing.assert_allclose(dec.qd[20:-20], qd[kd][20:-20], atol=3e-3)


@pytest.mark.parametrize("rate, cutoff", [(500.0, 10.0), (100.0, 5.0)])
def test_filter_edges_are_trimmed(rate, cutoff):
    """Motion at both ends of the record (the worst case): zero-phase filtering and one-sided
    differences there give accelerations wrong by several times their RMS. The pipeline drops
    3/cutoff s at each end, after which q̈ is within 1 % of its RMS."""
    t = np.arange(0, 20, 1 / rate)
    w = 2 * np.pi * np.array([0.3, 0.5, 1.1])
    q = np.column_stack([0.5 * np.sin(w[0] * t + 0.3), 0.4 * np.cos(w[1] * t + 1), 0.2 * np.sin(w[2] * t + 2)])
    qdd = -q * w ** 2
    rms = np.sqrt(np.mean(qdd ** 2))
    names = ["a", "b", "c"]
    rec = Recording(JointSamples(t, names, q, None, np.zeros_like(q)))
    untrimmed = filtering.filtered_derivatives(t, q, cutoff)[2]
    assert np.abs(untrimmed - qdd)[0].max() > 1.5 * rms              # what the ends would give
    sig = conditioning.conditioned_signals(rec, names, source="measured", cutoff_hz=cutoff)
    edge = 3.0 / cutoff
    assert sig.t[0] == pytest.approx(edge, abs=1 / rate) and sig.t[-1] == pytest.approx(t[-1] - edge, abs=1 / rate)
    k = np.searchsorted(t, sig.t)
    assert np.abs(sig.qdd - qdd[k]).max() < 0.01 * rms
    assert has_note(sig.notes, NoteCode.SIGNALS_EDGES_TRIMMED)
    # The same trimming for a stand-in command smoothed from measured positions (torques filtered alike).
    rec.commanded = [commanded.smoothed_trajectory(t, q, names, cutoff)]
    cmd = conditioning.conditioned_signals(rec, names, source="commanded", delay=0.0)
    assert cmd.t[0] == pytest.approx(edge, abs=1 / rate) and cmd.t[-1] == pytest.approx(t[-1] - edge, abs=1 / rate)
    assert np.abs(cmd.qdd - qdd[np.searchsorted(t, cmd.t)]).max() < 0.01 * rms
    assert has_note(cmd.notes, NoteCode.SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN)
    assert has_note(cmd.notes, NoteCode.SIGNALS_EDGES_TRIMMED)
    # Too short for its filter: a clear refusal, not a few corrupt samples.
    short = Recording(JointSamples(t[: int(1.5 * edge * rate)], names, q[: int(1.5 * edge * rate)], None,
                                   np.zeros((int(1.5 * edge * rate), 3))), source="short.bag")
    with pytest.raises(PayloadIdError, match="short.bag.*not trusted"):
        conditioning.conditioned_signals(short, names, source="measured", cutoff_hz=cutoff)


def test_conditioned_signals_bad_input():
    rate = 500.0
    t = np.arange(0, 2, 1 / rate)
    rec = Recording(JointSamples(t, ["j1"], np.zeros((t.size, 1)), None, np.zeros((t.size, 1))), source="x.bag")
    with pytest.raises(PayloadIdError, match="x.bag holds no commanded trajectory"):
        conditioning.conditioned_signals(rec, ["j1"])
    with pytest.raises(PayloadIdError, match=r"lack joints \['j9'\]"):
        conditioning.conditioned_signals(rec, ["j1", "j9"], source="measured")
    with pytest.raises(PayloadIdError, match="unknown signal source"):
        conditioning.conditioned_signals(rec, ["j1"], source="guess")
    late = CommandedTrajectory(100.0, ["j1"], np.array([0.0, 1.0]), np.zeros((2, 1)))
    rec.commanded = [late]
    with pytest.raises(PayloadIdError, match="no joint state falls inside the commanded trajectory"):
        conditioning.conditioned_signals(rec, ["j1"], delay=0.0)


def test_filtered_derivatives_on_irregular_sampling():
    """UR-like logging: 10 ms and 12 ms steps mixed, exact stamps. Filtering by index would warp time."""
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.choice([0.010, 0.012], size=3000, p=[0.7, 0.3]))
    assert not filtering.is_uniform(t)
    q, qd, qdd = sine_motion(t)
    qn = np.round(q, 4)                        # the logger's 1e-4 rad resolution
    f, d1, d2 = filtering.filtered_derivatives(t, qn, 5.0)
    inner = slice(200, -200)
    rel = lambda a, b: np.sqrt(np.mean((a[inner] - b[inner]) ** 2)) / np.sqrt(np.mean(b[inner] ** 2))  # noqa: E731
    assert rel(d1, qd) < 0.005 and rel(d2, qdd) < 0.05
    # What the naive index-based filter gives instead (the reason for the uniform grid):
    smoothed = filtering.lowpass(qn, 1 / np.median(np.diff(t)), 5.0)
    naive = filtering.central_difference(filtering.central_difference(smoothed, t), t)
    assert rel(naive, qdd) > 5 * rel(d2, qdd)


def test_jittered_stamps_are_put_back_on_their_nominal_grid_and_irregular_logging_is_believed():
    """Issue 29 item 6: a 500 Hz driver's stamps with ±0.5 ms of jitter and two dropped samples give back the grid
    to a µs; a logger that really samples at mixed 10 and 12 ms steps (the real UR10e CSVs) keeps its stamps."""
    rng = np.random.default_rng(4)
    slots = np.delete(np.arange(3000), [700, 1900])
    nominal = 12.3 + slots * 0.002
    grid = filtering.nominal_grid(nominal + rng.uniform(-5e-4, 5e-4, nominal.size))
    assert grid is not None
    assert np.max(np.abs(grid - nominal)) < 2e-5
    ur_like = np.cumsum(rng.choice([0.010, 0.012], 3000, p=[0.8, 0.2]))
    assert filtering.nominal_grid(ur_like) is None
    notes: list = []
    assert conditioning.on_nominal_grid(ur_like, notes) is ur_like and not notes
