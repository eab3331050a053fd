"""Issue 13 on the MuJoCo-simulated UR10 cell (profile 'ur10': Coulomb friction growing with the load torque,
μ = 0.02; rotor inertia; torque noise; 2 ms lag): no method biased, σ that covers the error.

Looser versions of bench/accuracy.py's figures with fixed seeds. The cause of the +0.8 to +1.2 % mass bias of
khalil-2/3/4 and gaz-dtau was that only khalil-1 and the online methods modelled the load-dependent friction;
each test shows the bias with the columns switched off, so it fails if the cause comes back.
"""

import copy
from collections.abc import Callable

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode, notes_with
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.methods.registry import SPECS, Measurement
from payload_id_core.payload_estimate import PayloadEstimate

pytestmark = pytest.mark.slow   # three simulated runs and ~20 estimates: ~25 s on a busy machine

MASS = 3.5
COM = np.array([0.03, -0.02, 0.08])
FRAME = "wrist_3_link"
METHODS = tuple(spec.name for spec in SPECS if spec.measurement is Measurement.TORQUES_IN_MOTION)
NEEDS_UNLOADED = frozenset({"khalil-3", "khalil-4", "gaz-dtau"})
NEWLY_MODELLED = ("khalil-2", "khalil-3", "khalil-4", "gaz-dtau")


@pytest.fixture(scope="module")
def cell(ur10_cell_robot):
    """The session's UR10 (conftest: the same trajectory, seed and options this module identified it with)."""
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    m, robot = ur10_cell_robot
    traj = load_trajectory("ur10_payload")
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    loaded = [simulate(m, traj, truth, "ur10", seed=s) for s in (2, 3)]
    unloaded = simulate(m, traj, None, "ur10", seed=102)
    return m, robot, loaded, unloaded


@pytest.fixture(scope="module")
def estimate(cell) -> Callable[..., PayloadEstimate]:
    """One method on one of the loaded runs (by index), each estimate made once for the module: the every-method
    test meets again the default estimates of run 0 that the friction tests made."""
    made: dict[tuple, PayloadEstimate] = {}

    def _estimate(method: str, run: int, **kw) -> PayloadEstimate:
        key = (method, run, tuple(sorted(kw.items())))
        if key not in made:
            m, robot, loaded, unloaded = cell
            made[key] = identify_payload(method, m, robot, loaded[run], FRAME, source="commanded",
                                         unloaded=unloaded if method in NEEDS_UNLOADED else None, **kw)
        return made[key]

    return _estimate


@pytest.mark.parametrize("method", NEWLY_MODELLED)
def test_load_dependent_friction_is_modelled_by_every_torque_method(estimate, method):
    plain = estimate(method, 0, load_friction=False)
    est = estimate(method, 0)   # default: on
    err_plain = (plain.mass - MASS) / MASS
    err = (est.mass - MASS) / MASS
    # Measured: without the columns +0.79 to +0.93 %; with them −0.31 to +0.04 % (seed 2).
    assert err_plain > 0.005, (method, err_plain)
    assert abs(err) < 0.4 * err_plain, (method, err, err_plain)
    assert abs(err) < 0.004, (method, err)
    assert len(notes_with(est.notes, NoteCode.PAYLOAD_LOAD_FRICTION)) == 1, est.notes
    assert not notes_with(plain.notes, NoteCode.PAYLOAD_LOAD_FRICTION), plain.notes


def test_every_method_is_accurate_and_its_sigma_covers_the_error_on_the_cell(cell, estimate):
    """bench/accuracy.py's cell_mass_err_pct_max (≤ 0.25 target) and coverage, loosened for two seeds."""
    worst_mass, worst_com, worst_z = 0.0, 0.0, 0.0
    for run in range(len(cell[2])):
        for method in METHODS:
            est = estimate(method, run)
            std = est.readable_std()
            err_mass = abs(est.mass - MASS)
            worst_mass = max(worst_mass, err_mass / MASS * 100)
            worst_com = max(worst_com, float(np.linalg.norm(est.com - COM)) * 1e3)
            worst_z = max(worst_z, err_mass / std[0], *(np.abs(est.com - COM) / std[1:4]))
    # Measured over seeds 2 and 3: worst |mass error| 0.31 % (khalil-2), |CoM error| 0.85 mm, 1.1 σ.
    assert worst_mass < 0.5, worst_mass
    assert worst_com < 2.0, worst_com
    assert worst_z < 3.0, worst_z


def _jittered(recording, seed: int, half_width: float = 5e-4):
    """The recording with its joint-state stamps read with ±`half_width` s of uniform jitter (real drivers stamp a
    sample when it reaches the computer; the value was taken on the controller's period)."""
    out = copy.deepcopy(recording)
    out.joints.t = out.joints.t + np.random.default_rng(seed).uniform(-half_width, half_width, out.joints.t.size)
    return out


@pytest.mark.parametrize("method", ["khalil-1", "khalil-2", "difference-rls"])
def test_stamp_jitter_of_half_a_millisecond_does_not_bias_the_mass(cell, estimate, method):
    """Issue 29 item 6: before, the jittered stamps were taken as the sampling instants and every method's mass came
    out about −1 % (khalil-1 −1.22 %, khalil-2 −1.53 %, difference-rls −0.87 % against −0.19, −0.26, +0.11 % without
    jitter, seed 2). On the nominal grid the estimate is the unjittered one."""
    m, robot, loaded, unloaded = cell
    plain = estimate(method, 0)
    est = identify_payload(method, m, robot, _jittered(loaded[0], 1), FRAME, source="commanded",
                           unloaded=_jittered(unloaded, 2) if method in NEEDS_UNLOADED else None)
    assert abs(est.mass - plain.mass) / MASS < 0.002, (method, est.mass, plain.mass)
    assert abs(est.mass - MASS) / MASS < 0.005, (method, est.mass)
    assert np.max(np.abs(est.com - plain.com)) < 0.5e-3, (method, est.com, plain.com)
    assert len(notes_with(est.notes, NoteCode.SIGNALS_STAMPS_ON_GRID)) == 1, est.notes
