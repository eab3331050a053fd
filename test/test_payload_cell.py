"""Payload methods on the MuJoCo-simulated UR10 cell (profile 'ur10': friction whose Coulomb level grows
with the load torque, μ = 0.02; rotor inertia; torque noise; PID tracking lag), not on rnea-made data.

Without the load-dependent friction columns every method's mass is ~+0.8 % off, 4–5 reported standard
deviations; with them (the default for these methods) the bias must be gone and the std honest.
"""

import ast

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode, has_note, notes_with
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import fit_given_model

MASS = 3.5
COM = np.array([0.03, -0.02, 0.08])
FRAME = "wrist_3_link"


@pytest.fixture(scope="module")
def cell():
    from payload_id_core.sim import simulate  # noqa: PLC0415 - MuJoCo only for this module

    m = RobotModel.from_urdf("ur10")
    traj = load_trajectory("ur10_payload")          # 10 s at 500 Hz: ~1 s of simulation per run
    truth = PayloadEstimate(FRAME, from_mass_com_inertia(MASS, COM, np.diag([0.012, 0.015, 0.009])),
                            np.zeros((10, 10)), "truth")
    unloaded = simulate(m, traj, None, "ur10", seed=1)
    loaded = simulate(m, traj, truth, "ur10", seed=2)
    robot = fit_given_model(m, unloaded, friction="nonlinear", estimator="wls")
    return m, robot, loaded


@pytest.mark.parametrize("method", ["direct-rls", "difference-rls", "khalil-1"])
def test_load_dependent_friction_removes_the_mass_bias_on_the_cell(cell, method):
    m, robot, loaded = cell
    plain = identify_payload(method, m, robot, loaded, FRAME, source="commanded", load_friction=False)
    est = identify_payload(method, m, robot, loaded, FRAME, source="commanded")   # default: on
    err_plain = (plain.mass - MASS) / MASS
    err = (est.mass - MASS) / MASS
    std = est.readable_std()[0] / MASS
    # Without the columns: the bias the lead found (+0.8 %, several std); with them: within 0.3 %, ≤ 3 std.
    # (2.1-2.7 std once σ covers the serial correlation the missing columns leave in the residual)
    assert err_plain > 0.005 and err_plain / (plain.readable_std()[0] / MASS) > 2.0, (method, err_plain)
    assert abs(err) < 0.003, (method, err)
    assert abs(err) < 0.5 * abs(err_plain)
    assert abs(err) / std < 3.0, (method, err, std)
    assert np.linalg.norm(est.com - COM) < 0.003
    assert len(notes_with(est.notes, NoteCode.PAYLOAD_LOAD_FRICTION)) == 1, est.notes
    assert not has_note(plain.notes, NoteCode.PAYLOAD_LOAD_FRICTION), plain.notes
    assert has_note(est.notes, NoteCode.PAYLOAD_MODEL_ERROR), est.notes
    assert not has_note(est.notes, NoteCode.PAYLOAD_MODEL_ERROR_HIGH), est.notes


def test_estimated_load_coulomb_matches_the_profile(cell):
    """khalil-1's μ for the shoulder and elbow (the joints a payload loads most) is the profile's 0.02."""
    m, robot, loaded = cell
    est = identify_payload("khalil-1", m, robot, loaded, FRAME, source="commanded")
    (note,) = notes_with(est.notes, NoteCode.PAYLOAD_LOAD_FRICTION)
    values = note.text.split(": ", 1)[1]
    mu, mu_std = (np.array(ast.literal_eval(part)) for part in values.split(" ± "))
    assert mu.shape == (6,)
    np.testing.assert_allclose(mu[1:3], 0.02, atol=0.01)
    assert np.all(mu_std[1:3] < 0.01)


def test_difference_rls_judges_and_records_the_estimate_it_returns(cell):
    """The convergence check and the history of difference-rls use the estimate solution() returns (the
    data-only conversion), not Xu's prior-shrunk posterior (on this run the two masses differ by 2 % at
    2 s of motion: −1.1 % and +1.0 % off). Issue 13 item 5."""
    from payload_id_core.payload.methods.common import method_signals  # noqa: PLC0415
    from payload_id_core.payload.online import OnlinePayloadEstimator  # noqa: PLC0415
    from payload_id_core.payload.options import PayloadOptions  # noqa: PLC0415

    m, robot, loaded = cell
    sig = method_signals(loaded, m, PayloadOptions(source="commanded"), robot)
    est = OnlinePayloadEstimator(m, robot, FRAME, "difference-rls", history_every=25, rate_hz=500.0)
    k0 = 0
    for T in (1.5, 2.0):
        k = int(np.searchsorted(sig.t, sig.t[0] + T - 1e-9))
        est.update_batch(sig.t[k0:k], sig.q[k0:k], sig.qd[k0:k], sig.qdd[k0:k], sig.tau[k0:k])
        k0 = k
        z, cov, _ = est.solution()
        quick, quick_std = est._quick_payload()
        np.testing.assert_allclose(quick, z[:10], rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(quick_std, np.sqrt(np.diag(cov)[:10]), rtol=1e-7, atol=1e-12)
    # What limits convergence at 2 s of motion on ur10_payload: the mass's own std is still 1.3 % (the rule
    # waits for 0.5 %); this run declared at 4.2 s: σ is below 0.5 % at 3.8 s (3.1 s while σ pooled the
    # shoulder's and the wrist's noise into one variance, which understated the mass's spread over noise draws
    # by a third), and the masses of the last second of checks settle within 2σ of the current one at 4.2 s;
    # with the tracking error in the motion and the reported σ (serial correlation) required below 0.5 % as
    # well, it declares at 4.4 s; with the robot's unmodelled gear friction in that σ (the error it makes over the
    # motion seen so far, methods.common.online_covariance_extra), at 6.75 s (bench/payload.py, 20 seeds: median
    # 6.8 s, every seed within 1 % from 6.15 s on).
    assert 0.010 < quick_std[0] / MASS < 0.017, quick_std[0]
    est.update_batch(sig.t[k0:], sig.q[k0:], sig.qd[k0:], sig.qdd[k0:], sig.tau[k0:])
    assert est.converged and 6.0 < est.convergence_time < 7.5, est.convergence_time
    hist = est.estimate().history
    k = int(np.searchsorted(hist["t"], est.convergence_time - 1e-9))
    assert hist["std"][k, 0] < 0.005 * hist["phi"][k, 0]
