"""Issue 29 item 4, the last confident wrong answer off the robot's own motion (h111): bench/accuracy.py's Panda
seed 4 (tools/xtraj_cell.py: robot identified on panda_payload_inertia with noise seed 1004, the payload on
panda_payload, loaded noise seed 4). khalil-2 and difference-rls give CoM y −3.47 / −3.40 mm at σ 0.94 / 0.95
(−3.70σ / −3.57σ), converged, ok; khalil-1 −3.37 mm at σ 1.20 (−2.79σ).

Taken apart (bench/xtraj_sources.py XSRC_SEEDS=4,6, khalil-2): the loaded run's noise −2.29 mm against the σ it
carries without the robot's share, 0.65 mm (−3.5σ), the robot identification's error −1.10 mm of its 0.67 mm
share (−1.6σ), the friction change, lag and the rest ≤ 0.1 mm. Neither share misses a term: over 40 fresh noise
draws of the same run (robot exact) khalil-2's |error|/σ RMS is 0.88-1.12 per CoM axis and 0.89 in mass, over
the bench's 20 robot identifications (loaded run without noise) 0.79-0.90 per axis (bench/xtraj_calibration.py). So
seed 4 is a tail draw of white noise through a linear fit whose σ is right: widening σ to cover it would
over-cover every other draw. The first test pins that (the run's own noise alone is beyond 3σ of its textbook
σ); the second is the bench event itself, a strict xfail: it turns to XPASS (and fails) when σ or the estimate
moves, so that the change is measured against the calibration above, not against this one draw.
Re-measured with more draws (h177, issue 29 item 4, whether the Panda's CoM σ is ~20-25 % short: it is not):
bench/xtraj_calibration.py (OMP_NUM_THREADS=1 XCAL_ROBOTS=panda XCAL_METHODS=<method> XCAL_SHARES=noise
XCAL_FIRST_NOISE_SEED=200 XCAL_NOISE_DRAWS=50, and from 250; pooled from the per-draw log), the loaded run's
noise, |change|/σ RMS mass / CoM x / y / z: khalil-2 86 draws 0.90 / 0.91 / 0.95 / 0.93 (95 % upper bounds in the
CoM 1.05 / 1.08 / 1.07; 15 of 344 beyond 2σ for 15.7 expected, none beyond 2.5σ), difference-rls 63 draws
0.90 / 0.95 / 0.92 / 0.90 (≤ 1.12), direct-rls 44 draws 0.92 / 0.80 / 0.96 / 0.94; the robot's share, khalil-2 over
the bench's 20 identifications 0.51 / 0.80 / 0.90 / 0.79; UR10 (control) khalil-2 40 noise draws 0.93 / 1.02 /
0.96 / 0.97. docs/design.md ("Is the Panda's CoM σ short?") has the rest.
Two robot identifications (~6 s each) and three estimates.
"""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import fit_given_model
from xtraj_cell import RATE, xtraj_cell

MASS, COM = 1.5, np.array([0.01, -0.02, 0.05])       # bench/accuracy.py's XTRAJ["panda"]
PHI = from_mass_com_inertia(MASS, COM, np.diag([0.004, 0.005, 0.003]))
SEED = 4


@pytest.fixture(scope="module")
def seed_4():
    """(cell, robot identified as the bench's seed 4, robot identified without noise, the loaded run, the same
    run without noise)."""
    xc = xtraj_cell("panda")
    calibration = xc.calibration_motion()
    robot = fit_given_model(xc.model, xc.recording(calibration, None, 1.0, 1000 + SEED), friction="nonlinear")
    exact = fit_given_model(xc.model, xc.recording(calibration, None, 1.0, 1000 + SEED, noise_std=0.0),
                            friction="nonlinear")
    traj = load_trajectory("panda_payload").for_model(list(xc.model.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion, payload = (t, *traj.evaluate(t)), (PHI, xc.model.default_payload_frame)
    loaded = xc.recording(motion, payload, 1.03, SEED)
    return xc, robot, exact, loaded, xc.recording(motion, payload, 1.03, SEED, noise_std=0.0)


def test_the_loaded_runs_own_noise_puts_the_com_beyond_3_sigma(seed_4):
    """The noise term (bench/xtraj_sources.py): the estimate with the robot identified without noise on this run
    minus the same on the run without noise, over σ without the robot's share. khalil-1 (θ_a fixed: a linear
    fit of white noise with its textbook covariance) and khalil-2 are both beyond −3σ in CoM y on this draw, not
    in x or z. Measured: CoM y khalil-1 −2.08 mm / 0.68 (−3.06σ), khalil-2 −2.29 mm / 0.65 (−3.5σ)."""
    xc, _, exact, loaded, noise_free = seed_4
    frame = xc.model.default_payload_frame
    for method in ("khalil-1", "khalil-2"):
        est = identify_payload(method, xc.model, exact, loaded, frame, include_robot_uncertainty=False)
        noise = est.com - identify_payload(method, xc.model, exact, noise_free, frame).com
        z = noise / est.readable_std()[1:4]
        assert z[1] < -2.8, (method, z)
        assert np.all(np.abs(z[[0, 2]]) < 2.5), (method, z)


@pytest.mark.xfail(strict=True, reason="h111: bench/accuracy.py's Panda seed 4, khalil-2 CoM y −3.47 mm at σ 0.94 "
                   "(−3.70σ, converged, ok), one of xtraj_confident_beyond_3sigma's events: a tail draw of the loaded "
                   "run's noise (−3.5σ alone), σ calibrated over other draws (module docstring)")
def test_khalil_2_on_seed_4_is_not_confidently_beyond_3_sigma(seed_4):
    xc, robot, _, loaded, _ = seed_4
    est = identify_payload("khalil-2", xc.model, robot, loaded, xc.model.default_payload_frame)
    std = est.readable_std()
    confident = est.converged and est.quality is Quality.OK
    beyond = abs(est.mass - MASS) > 3 * std[0] or bool(np.any(np.abs(est.com - COM) > 3 * std[1:4]))
    assert not (confident and beyond), (est.mass, est.com, std[:4])
