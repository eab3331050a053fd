"""The method registry (payload/methods/registry.py): every method declared once, runnable, documented; the
options each method reads, and the refusal of one it does not; the online estimators built one way."""

from pathlib import Path

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.kinematics import resolve_sensor_frame
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods import METHODS, identify_payload
from payload_id_core.payload.methods.registry import (
    METHOD_SPECS,
    SPECS,
    Measurement,
    UnloadedRun,
    method_table,
    readers_of,
)
from payload_id_core.payload.online import ESTIMATORS
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id import fit_given_model
from payload_id_core.signals.recording import WrenchSamples
from payload_id_core.testing.ft_data import synthetic_wrench
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

ROOT = Path(__file__).resolve().parents[1]
FRAME = "wrist_3_link"
PHI = from_mass_com_inertia(3.0, [0.01, 0.02, 0.06], np.diag([0.015, 0.015, 0.01]))
FRICTION = np.tile([3.0, 2.0, 0.0], 6)


def test_every_method_has_one_spec_that_everything_reads():
    assert [spec.method for spec in SPECS] == list(PayloadMethod)
    assert set(METHOD_SPECS) == set(PayloadMethod)
    assert METHODS == {spec.method: spec.runner for spec in SPECS}
    assert all(callable(spec.runner) and spec.summary for spec in SPECS)
    assert all(spec.options <= set(PayloadOptions.names()) for spec in SPECS)
    # The online methods: the session's and the estimator classes'.
    online = {spec.name: spec.estimator for spec in SPECS if spec.online}
    assert online == ESTIMATORS
    assert all((spec.estimator is None) != spec.online for spec in SPECS)
    # The load-dependent friction default only where the method fits it.
    assert all(spec.reads("load_friction") for spec in SPECS if spec.load_friction_default)


def test_the_design_method_table_is_the_registry():
    assert method_table() in (ROOT / "docs" / "design.md").read_text(), \
        "docs/design.md's method table differs from payload/methods/registry.py: paste method_table() there"


@pytest.fixture(scope="module")
def ur10():
    model = RobotModel.from_urdf("ur10")
    t, q, qd, qdd = sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=3)
    rec = dict(friction="linear", friction_params=FRICTION, noise_std=0.2)
    unloaded = synthetic_recording(model, t, q, qd, qdd, seed=1, **rec)
    robot = fit_given_model(model, unloaded, friction="linear", estimator="ols")
    loaded = synthetic_recording(model, t, q, qd, qdd, payload=(PHI, FRAME), seed=2, **rec)
    # Static poses (gaz-static): held 0.5 s each.
    rng = np.random.default_rng(5)
    poses = rng.uniform(-2.0, 2.0, (12, model.n))
    qs = np.repeat(poses, 50, axis=0)
    ts = np.arange(qs.shape[0]) / 100.0
    zero = np.zeros_like(qs)
    static = synthetic_recording(model, ts, qs, zero, zero, payload=(PHI, FRAME), seed=4, **rec)
    # The wrist sensor at tool0 (ft): the payload's wrench, offsets, noise.
    sensor = FtParameters(resolve_sensor_frame(model, "tool0"),
                          from_mass_com_inertia(2.5, [0.0, 0.01, 0.05], np.diag([0.01, 0.01, 0.008])),
                          np.array([1.0, -2.0, 0.5, 0.05, 0.02, -0.03]), (0.0, 0.0))
    force, torque = synthetic_wrench(model, sensor, q, qd, qdd, seed=6)
    wrench = synthetic_recording(model, t, q, qd, qdd, seed=7)
    wrench.wrench = WrenchSamples(wrench.joints.t, "tool0", force, torque)
    return model, robot, {"motion": (loaded, unloaded), "rest": static, "wrench": wrench}


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_every_registry_entry_runs(ur10, spec):
    """Each method on the data its spec names, with what it needs: an estimate of its own method."""
    model, robot, data = ur10
    loaded, unloaded = data["motion"]
    if spec.measurement is Measurement.TORQUES_AT_REST:
        loaded = data["rest"]
    elif spec.measurement is Measurement.WRIST_WRENCH:
        loaded = data["wrench"]
    est = identify_payload(spec.method, model, robot if spec.needs_robot else None, loaded, FRAME,
                           unloaded=unloaded if spec.unloaded is UnloadedRun.REQUIRED else None)
    assert est.method == spec.name and est.mass > 0 and np.isfinite(est.mass)


def test_an_option_the_method_does_not_read_is_refused_naming_the_methods_that_read_it(ur10):
    model, robot, data = ur10
    loaded, _ = data["motion"]
    with pytest.raises(PayloadIdError, match=r"convergence is not read by khalil-1: only difference-rls, direct-rls"):
        identify_payload("khalil-1", model, robot, loaded, FRAME, convergence="xu")
    with pytest.raises(PayloadIdError, match=r"sensor_frame is not read by difference-rls: only ft read it"):
        identify_payload("difference-rls", model, robot, loaded, FRAME, sensor_frame="tool0")
    with pytest.raises(PayloadIdError, match=r"vel_tol is not read by ft: only gaz-static read it"):
        identify_payload("ft", model, None, data["wrench"], FRAME, vel_tol=0.1)
    # khalil-3 and khalil-4 take the unloaded run, not cov(θ_a), as their reference: they never read
    # include_robot_uncertainty (it was declared for them, so include_robot_uncertainty=False was silently ignored).
    loaded, unloaded = data["motion"]
    for method in ("khalil-3", "khalil-4"):
        with pytest.raises(PayloadIdError, match=rf"include_robot_uncertainty is not read by {method}"):
            identify_payload(method, model, robot, loaded, FRAME, unloaded=unloaded, include_robot_uncertainty=False)
    assert "khalil-3" not in readers_of("include_robot_uncertainty")
    assert readers_of("load_friction") == [s.name for s in SPECS if s.load_friction_default]
    # A choice is its enum, an unknown one refused once, where the options are made.
    with pytest.raises(PayloadIdError, match="unknown convergence rule 'never'; use one of: covariance, xu"):
        identify_payload("direct-rls", model, robot, loaded, FRAME, convergence="never")
