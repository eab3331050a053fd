"""Issue 13 item 2 on bench/accuracy.py's cross-trajectory setting (UR10): the robot identified on one
excitation (sum of sines, noisy), the payload on another (ur10_payload) with nonlinear friction 3 % higher
under load, 3 ms lag and 1 N·m torque noise. The online methods must be within 2× of khalil-1's error.

What decides their error there (docs/design.md "The methods"): each online method is its offline
counterpart computed recursively (direct-rls = khalil-1 with the friction change, difference-rls =
khalil-2), and what is left of their error is the robot identification's error θ̂_a − θ_a, one draw common
to every payload fitted with that identification. With θ_a exact (its covariance kept, so every method
weighs its rows as before) the online methods are at least as good as khalil-1, whose own error then is
the friction change it does not model. Looser versions of the bench figures, seeds fixed (~20 s: the
robot identifications take ~2 s each).
"""

import copy

import numpy as np
import pytest

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload.held_out_error import difference_rls_conversion
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import fit_given_model
from payload_id_core.robot_id.model_error import (
    DATA_ONLY,
    WITH_ROBOT_COVARIANCE,
    HeldOutModelError,
    moments_robot_covariance,
)
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

MASS, COM = 4.0, np.array([0.02, -0.03, 0.08])
PHI = from_mass_com_inertia(MASS, COM, np.diag([0.02, 0.03, 0.015]))
RATE = 500.0
LOADED_SEEDS = (0, 1, 2)
ONLINE = ("direct-rls", "difference-rls")


class XTraj:
    """bench/accuracy.py cross_trajectory('ur10') with the robot identified per noise seed, on the weak calibration
    the bench had before issue 29's h43 (a 30 s-period sum of sines; the bench now calibrates on
    ur10_payload_inertia). What is tested here relates the methods to each other on one robot identification,
    whatever excitation it came from."""

    def __init__(self):
        m = self.model = RobotModel.from_urdf("ur10")
        self.frame = m.default_payload_frame
        self.fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
        self.fp = np.tile([3.0, 2.0, 0.3], m.n) * np.linspace(2.0, 0.8, m.n).repeat(3)
        self.excitation = sum_of_sines(m, 30.0, RATE, seed=1)
        traj = load_trajectory("ur10_payload").for_model(list(m.joint_names))
        t = np.arange(int(round(traj.duration * RATE))) / RATE
        self.motion = (t, *traj.evaluate(t))
        self.loaded = {s: self.record(self.motion, (PHI, self.frame), 1.03, s) for s in LOADED_SEEDS}
        self._robots = {}
        self._estimates = {}

    def record(self, motion, payload, scale, seed, noise=1.0):
        return synthetic_recording(self.model, *motion, friction=self.fm, friction_params=self.fp * scale,
                                   rotor_inertia=0.1, payload=payload, noise_std=noise, delay=0.003, seed=seed)

    def robot(self, noise_seed, noise=1.0):
        key = (noise_seed, noise)
        if key not in self._robots:
            self._robots[key] = fit_given_model(
                self.model, self.record(self.excitation, None, 1.0, noise_seed, noise), friction="nonlinear")
        return self._robots[key]

    def estimate(self, method, robot, seed, **options):
        """One estimate per setting for the robots of self.robot() (the tests below share them); a robot made
        elsewhere (a modified copy) is not cached: its id may be reused once it is gone."""
        if not any(r is robot for r in self._robots.values()):
            return identify_payload(method, self.model, robot, self.loaded[seed], self.frame, **options)
        key = (method, id(robot), seed, tuple(sorted(options.items())))
        if key not in self._estimates:
            self._estimates[key] = identify_payload(method, self.model, robot, self.loaded[seed], self.frame,
                                                    **options)
        return self._estimates[key]

    def errors(self, method, robot, seed, **options):
        """(signed mass error %, CoM error mm)."""
        est = self.estimate(method, robot, seed, **options)
        return (est.mass - MASS) / MASS * 100, float(np.linalg.norm(est.com - COM)) * 1e3


@pytest.fixture(scope="module")
def xtraj():
    return XTraj()


def test_online_methods_are_their_offline_counterparts(xtraj):
    """direct-rls is Khalil 2007 method 1 (eq. 23) with the friction change Δφ_f, solved recursively;
    difference-rls is Xu 2024 Algorithm 1, i.e. Khalil's method 2 (eq. 24–28) recursively. On the same data
    they agree with khalil-1 (friction_change=True) and khalil-2 to round-off of the recursion, so any gap
    to khalil-1 is khalil-1's own model (no friction change), not the recursion, the prior or the lag."""
    robot = xtraj.robot(1000)
    for seed in LOADED_SEEDS[:2]:
        for online, offline, kw in (("direct-rls", "khalil-1", {"friction_change": True}),
                                    ("difference-rls", "khalil-2", {})):
            est_on = xtraj.estimate(online, robot, seed)
            est_off = xtraj.estimate(offline, robot, seed, **kw)
            # Measured: mass within 0.008 %, CoM within 0.04 mm.
            assert abs(est_on.mass - est_off.mass) / MASS * 100 < 0.03, (online, offline, seed)
            assert np.linalg.norm(est_on.com - est_off.com) * 1e3 < 0.1, (online, offline, seed)


def test_without_the_robot_identifications_error_online_is_as_good_as_khalil_1(xtraj):
    """The cause shown by switching it off: θ̂_a replaced by the exact θ_a (noise-free identification of the
    same excitation) while keeping the noisy identification's covariance, so every method weighs as before.
    Measured (seeds 0-2, medians): |mass| khalil-1 0.17 %, direct-rls 0.10 %, difference-rls 0.08 %; |CoM|
    khalil-1 0.42 mm, direct-rls 0.13 mm, difference-rls 0.26 mm (with the noisy θ̂_a: 0.18 / 0.30 / 0.17 %,
    0.92 / 0.79 / 0.48 mm over three identifications, the last test)."""
    noisy = xtraj.robot(1000)
    exact = copy.copy(noisy)
    exact.theta = xtraj.robot(0, noise=0.0).theta.copy()
    res = {method: np.array([xtraj.errors(method, exact, s) for s in LOADED_SEEDS])
           for method in ("khalil-1", *ONLINE)}
    k1_mass = np.median(np.abs(res["khalil-1"][:, 0]))
    k1_com = np.median(res["khalil-1"][:, 1])
    for method in ONLINE:
        mass = np.median(np.abs(res[method][:, 0]))
        com = np.median(res[method][:, 1])
        assert mass <= 1.0 * k1_mass + 0.02, (method, mass, k1_mass)
        assert com <= 1.0 * k1_com + 0.05, (method, com, k1_com)


def test_online_within_2_5x_khalil_1_over_robot_identifications(xtraj):
    """bench/accuracy.py's xtraj_online_over_khalil_1_max (target ≤ 2) loosened: medians over three robot
    identifications × the loaded seeds (measured: mass 1.7× for direct-rls, 0.94× for difference-rls; CoM
    0.86× and 0.52×). With one identification for every seed (as the bench had it) the ratio measured that
    identification's draw: 2.25× on the mass for both online methods."""
    res = {method: [] for method in ("khalil-1", *ONLINE)}
    for rid in (1000, 1001, 1002):
        robot = xtraj.robot(rid)
        for seed in LOADED_SEEDS:
            for method in res:
                res[method].append(xtraj.errors(method, robot, seed))
    arr = {k: np.array(v) for k, v in res.items()}
    k1_mass, k1_com = np.median(np.abs(arr["khalil-1"][:, 0])), np.median(arr["khalil-1"][:, 1])
    for method in ONLINE:
        mass, com = np.median(np.abs(arr[method][:, 0])), np.median(arr[method][:, 1])
        assert mass <= 2.5 * k1_mass, (method, mass, k1_mass)
        assert com <= 2.5 * k1_com, (method, com, k1_com)


def test_no_confident_estimate_beyond_3_sigma_off_the_robots_own_motion(xtraj):
    """Issue 29 item 4 (bench/accuracy.py xtraj_confident_beyond_3sigma, target 0) on the UR10 setting: over
    three robot identifications and the loaded seeds, no estimate declared converged with quality ok is more
    than 3σ off in mass or in a CoM axis it reports. Measured on the bench's 10 seeds × both robots: 0 (before
    and after issue 29: these synthetic runs give robot.yaml no held-out motions, so the σ here is unchanged)."""
    for rid in (1000, 1001, 1002):
        robot = xtraj.robot(rid)
        for seed in LOADED_SEEDS:
            for method in ("khalil-1", *ONLINE):
                est = xtraj.estimate(method, robot, seed)
                if not (est.converged and est.quality is Quality.OK):
                    continue
                std = est.readable_std()
                assert abs(est.mass - MASS) <= 3 * std[0], (method, rid, seed, est.mass, std[0])
                if est.determined is None or est.determined[1]:
                    assert np.all(np.abs(est.com - COM) <= 3 * std[1:4]), (method, rid, seed, est.com)


UNLOADED_TWIN = ("khalil-3", "khalil-4", "gaz-dtau")


def test_no_confident_estimate_beyond_3_sigma_from_the_unloaded_twin_methods(xtraj):
    """The same rule for the methods that subtract the unloaded run of the same trajectory (noise seed 500 +
    seed, as the bench). On identification 1000, seed 0 they gave 3.98 kg ± 0.006 for 4.0 (−3.4σ, converged, ok):
    the noise draw (−2.7σ alone) plus the friction's 3 % change under load, the one unmodelled term of the
    difference, which the residuals' Newey–West inflation does not see under white noise. Its size, from the same
    fit with Δφ_f, is now in σ (methods/common.friction_change_spread): −2.7σ, seeds 1-2 within 1σ."""
    robot = xtraj.robot(1000)
    for seed in LOADED_SEEDS:
        unloaded = xtraj.record(xtraj.motion, None, 1.0, 500 + seed)
        for method in UNLOADED_TWIN:
            est = identify_payload(method, xtraj.model, robot, xtraj.loaded[seed], xtraj.frame, unloaded=unloaded)
            if not (est.converged and est.quality is Quality.OK):
                continue
            std = est.readable_std()
            assert abs(est.mass - MASS) <= 3 * std[0], (method, seed, est.mass, std[0])
            if est.determined is None or est.determined[1]:
                assert np.all(np.abs(est.com - COM) <= 3 * std[1:4]), (method, seed, est.com)


@pytest.mark.parametrize("load_scale", [1.03, 1.0])
def test_the_friction_change_spread_is_the_error_it_causes_and_no_more(xtraj, load_scale):
    """Noise-free (robot and runs): with the friction 3 % higher under load the spread the fit with Δφ_f measures is
    the error the change causes (−0.095 % khalil-3, −0.079 % khalil-4, −0.099 % gaz-dtau, within 0.01 point); with
    the friction unchanged it adds nothing: σ within 1 % of the fit with the friction assumed unchanged.
    σ² is the fit with Δφ_f's variance plus the spread (issue 29: not the fit without Δφ_f's, whose residuals hold
    the change and so counted it as slow noise): σ² − that fit's variance is the error², and σ covers the error."""
    robot = xtraj.robot(0, noise=0.0)
    loaded = xtraj.record(xtraj.motion, (PHI, xtraj.frame), load_scale, 0, noise=0.0)
    unloaded = xtraj.record(xtraj.motion, None, 1.0, 500, noise=0.0)
    for method in UNLOADED_TWIN:
        est = identify_payload(method, xtraj.model, robot, loaded, xtraj.frame, unloaded=unloaded)
        plain = identify_payload(method, xtraj.model, robot, loaded, xtraj.frame, unloaded=unloaded,
                                 friction_change=False)
        assert has_note(est.notes, NoteCode.PAYLOAD_FRICTION_CHANGE_SPREAD), (method, est.notes)
        assert est.mass == plain.mass, method   # the estimate is kept, only σ changes
        err = est.mass - MASS
        extra = est.covariance[0, 0] - plain.covariance[0, 0]
        if load_scale != 1.0:
            with_change = identify_payload(method, xtraj.model, robot, loaded, xtraj.frame, unloaded=unloaded,
                                           friction_change=True, project=False)
            extra = est.covariance[0, 0] - with_change.covariance[0, 0]
            assert est.readable_std()[0] >= abs(err), (method, est.readable_std()[0], err)
        if load_scale == 1.0:
            assert abs(err) < 1e-4 * MASS and extra <= 0.01**2 * max(plain.covariance[0, 0], 1e-18), (method, extra)
        else:
            assert abs(np.sqrt(extra) - abs(err)) < 1e-4 * MASS, (method, np.sqrt(extra), err)


@pytest.mark.parametrize("load_scale", [1.03, 1.0])
def test_khalil_1_sigma_holds_the_friction_change_it_assumes_away(xtraj, load_scale):
    """Issue 29 item 4 (h98): khalil-1 assumes the friction unchanged under load and, like the unloaded-twin methods
    above, now says in σ what that assumption moves (common.friction_change_spread: the fit with Δφ_f's covariance
    plus d dᵀ). bench/accuracy.py's UR10 cross-motion cell, 20 seeds: its CoM x |error|/σ RMS was 2.07 with every
    seed's error on one side (mean −1.96σ), seeds 12 and 15 at −3.42σ and −3.10σ, converged and ok: the friction's
    3 % change under load moves its CoM x by −0.45 mm, which a σ of white-noise residuals does not see.
    Noise-free (robot and run), so that the change is the only error: the estimate is kept, σ covers the error in
    the mass and every CoM axis, and σ² minus the fit with Δφ_f's variance is the error² (the move d, no more);
    with the friction unchanged it adds nothing."""
    robot = xtraj.robot(0, noise=0.0)
    loaded = xtraj.record(xtraj.motion, (PHI, xtraj.frame), load_scale, 0, noise=0.0)
    est = identify_payload("khalil-1", xtraj.model, robot, loaded, xtraj.frame)
    plain = identify_payload("khalil-1", xtraj.model, robot, loaded, xtraj.frame, friction_change=False)
    with_change = identify_payload("khalil-1", xtraj.model, robot, loaded, xtraj.frame, friction_change=True,
                                   project=False)
    assert has_note(est.notes, NoteCode.PAYLOAD_FRICTION_CHANGE_SPREAD), est.notes
    assert est.mass == plain.mass and np.array_equal(est.com, plain.com)   # the estimate is kept, only σ changes
    err = np.r_[est.mass - MASS, est.com - COM]
    std = est.readable_std()[:4]
    extra = std**2 - with_change.readable_std()[:4] ** 2
    if load_scale == 1.0:
        assert np.all(np.abs(err) < [1e-4 * MASS, 1e-5, 1e-5, 1e-5]), err
        assert np.all(std <= 1.01 * plain.readable_std()[:4]), (std, plain.readable_std()[:4])
        return
    assert np.all(np.abs(err) <= std), (err, std)
    # Measured: error −0.095 %, CoM −0.39 / −0.08 / −0.26 mm; √(σ² − the fit with Δφ_f's σ²) within 0.02 mm of it
    # (the former σ: 0.32 mm in x, exceeded).
    assert np.all(np.abs(np.sqrt(np.maximum(extra, 0.0)) - np.abs(err)) < [1e-4 * MASS, 3e-5, 3e-5, 3e-5]), (extra, err)


def test_held_out_runs_keep_the_robot_covariance_in_difference_rls_moments_where_it_is_the_robots_error(xtraj):
    """Issue 29 item 3: difference-rls's first moments are converted with C_a (Xu's generalised J^#) unless robot.yaml's
    held-out unloaded runs show the conversion without it finds smaller spurious first moments (the real UR10e
    does: test_ur10e_model_error). Here θ̂_a's error is the identification's noise and C_a its covariance, so the
    same criterion keeps C_a: a choice the data make, not a rule. Measured (held-out noise seeds 600-601 on the
    payload's motion): mean square spurious first moment 3.6e-07 with C_a, 1.2e-06 (kg·m)² without (identification
    1000; 1001: 3.1e-06 and 3.4e-06, closer). Without C_a on these runs difference-rls's CoM σ would be 0.38-0.82 mm
    per axis (identifications 1000-1001, seeds 0-2), as wide as direct-rls's 0.38-0.81, against 0.25-0.35 with it,
    for errors of 0.02-0.54 mm against 0.01-0.45."""
    robot = xtraj.robot(1000)
    held_out = [xtraj.record(xtraj.motion, None, 1.0, 600 + k) for k in range(2)]
    conversion = difference_rls_conversion(xtraj.model, robot, held_out, xtraj.frame)
    assert conversion.chosen == WITH_ROBOT_COVARIANCE, conversion.to_dict()
    assert conversion.mean_square(WITH_ROBOT_COVARIANCE) < conversion.mean_square(DATA_ONLY)
    chosen = copy.copy(robot)
    chosen.model_error = HeldOutModelError(xtraj.frame, ["a", "b"], np.zeros((2, 10)), difference_rls=conversion)
    assert moments_robot_covariance(chosen) and moments_robot_covariance(robot)


def test_held_out_runs_record_whether_difference_rls_conversions_differ_beyond_the_noise(xtraj):
    """robot.yaml records next to difference-rls's conversion the χ² of its two conversions' first-moment difference
    against what the noise and an identification error distributed as C_a predict (model_error.py): on this cell,
    where C_a is the identification's true covariance, it stays within χ²'s 99 % (identification 1001, held-out
    seed 600, the red team's 3 % tie of mean squares: 2.3 on 3 dof); a 0.3 s run judges as well (3.5)."""
    robot = xtraj.robot(1001)
    held_out = [xtraj.record(xtraj.motion, None, 1.0, 600)]
    conversion = difference_rls_conversion(xtraj.model, robot, held_out, xtraj.frame)
    assert 0.5 < conversion.chi2 < conversion.chi2_limit() == pytest.approx(11.34, abs=0.01), conversion.to_dict()
    assert conversion.to_dict()["chi2"] == conversion.chi2
    t, *rest = xtraj.motion
    short = int(round(0.3 * RATE))
    brief = xtraj.record((t[:short], *(a[:short] for a in rest)), None, 1.0, 600)
    assert difference_rls_conversion(xtraj.model, robot, [brief], xtraj.frame).chi2 < conversion.chi2_limit()
