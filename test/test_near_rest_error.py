"""bench/near_rest_error.py's measurement of the robot model's error near rest (docs/design.md "Near-rest error
measured on the real UR10e"), on synthetic residuals whose law is known: the screen finds the law that made them,
with its coefficient, and its hysteresis figure tells a lagging friction from an error that is a function of q̇."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "near_rest_error.py"
EPS = 0.01          # robot.yaml's sign smoothing, rad/s
LAG = 0.04          # s, the synthetic friction's delay
COULOMB = 1.0       # N·m


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_near_rest_error", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(bench, freqs, amps, phase, seed, error):
    """A joint moving through many reversals at 100 Hz; residual error(t, q̇) plus 0.05 N·m of noise."""
    t = np.arange(0.0, 30.0, 0.01)
    qd = sum(a * np.sin(2 * np.pi * f * t + phase) for f, a in zip(freqs, amps))
    q = np.cumsum(qd) * 0.01
    qdd = np.gradient(qd, t)
    pred = 20.0 * np.sin(q)
    e = error(t, qd) + np.random.default_rng(seed).normal(0.0, 0.05, t.size)
    col = lambda x: x[:, None]  # noqa: E731 - one joint
    return bench.Run(t, col(q), col(qd), col(qdd), col(pred + e), col(pred), col(e), col(np.abs(qd) > bench.STILL))


def lagging(t, qd):
    return COULOMB * (np.tanh(np.interp(t - LAG, t, qd) / EPS) - np.tanh(qd / EPS))


def test_the_screen_finds_a_lagging_friction_and_its_level(bench):
    fit = run(bench, (0.3, 0.7), (0.5, 0.2), 0.0, 1, lagging)
    held = [run(bench, (0.23, 0.61), (0.4, 0.25), 1.0, 2, lagging)]
    c, near, overall = bench.law_gain("signlag40", fit, held, 0, EPS)
    assert c == pytest.approx(COULOMB, rel=0.05)
    assert near < -80.0 and overall < -60.0, (near, overall)
    # another law does not take it off: the gear law's |τ| sgn q̇ and a wider transition stay within 15 %
    for law in ("gear", "wide"):
        _, near_other, _ = bench.law_gain(law, fit, held, 0, EPS)
        assert near_other > -15.0, (law, near_other)
    assert bench.hysteresis(held[0].qd[:, 0], held[0].qdd[:, 0], held[0].e[:, 0]) < -0.5 * COULOMB


def test_an_error_of_the_velocity_alone_shows_no_hysteresis(bench):
    wider = run(bench, (0.23, 0.61), (0.4, 0.25), 1.0, 3, lambda t, qd: 0.5 * np.tanh(qd / 0.03))
    assert abs(bench.hysteresis(wider.qd[:, 0], wider.qdd[:, 0], wider.e[:, 0])) < 0.03


def test_the_dahl_law_builds_up_over_its_displacement_after_each_reversal(bench):
    q = np.r_[np.linspace(0.0, 0.1, 101), np.linspace(0.099, 0.0, 100)]
    qd = np.gradient(q)
    d = bench.dahl_sign(q, qd, 0.002)
    assert d[0] == pytest.approx(0.0, abs=1e-12)        # no displacement yet
    assert d[100] == pytest.approx(1.0, abs=1e-6)        # 0.1 rad = 50 x0 forward
    assert d[101] == pytest.approx(0.0, abs=1e-12)       # where it reversed
    assert d[102] == pytest.approx(-(1 - np.exp(-0.5)), rel=1e-6)   # 1 mrad = x0 / 2 back
    assert d[-1] == pytest.approx(-1.0, abs=1e-6)        # 50 x0 back
