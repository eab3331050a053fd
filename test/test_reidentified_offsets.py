"""khalil-2 off the robot's motion (issue 29 items 3-4, docs/design.md "The methods"): the
loaded robot re-identified on a 10 s Panda run, the payload from θ_b − θ_a.

With the robot known (identified without noise, so C_a ≈ 0) the conversion weighted by cov(θ_b) is the constrained
fit of the loaded torques: z minimising ‖τ − Y (θ_a + J z)‖², i.e. khalil-1 with the friction change (its columns Y J).
That identity holds only if J frees the same friction change khalil-1 and direct-rls do: the parameters a load can
change, not the constant offsets B_j (load_friction.load_changeable_friction). A free ΔB_j per joint is collinear
with the payload's mean gravity torque on that joint over the motion, so it takes part of the mass: before, on the
bench's cross-motion Panda khalil-2's and difference-rls's mass σ was 0.37 % against khalil-1's 0.33 % with the
robot's share, their median |error| 0.35 %, and here, noise-free robot, mass +0.66 % ± 0.28 where khalil-1 with the
friction change gives +0.31 % ± 0.20 on the same run. One loaded noise draw, ~30 s (the robot identification ~10 s).
"""

import re

import numpy as np
import pytest

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.notes import NoteCode
from payload_id_core.payload.jacobian import difference_jacobian
from payload_id_core.payload.load_friction import load_changeable_friction
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import fit_given_model
from payload_id_core.testing.synthetic import synthetic_recording

RATE = 500.0
MASS = 1.5
PHI = from_mass_com_inertia(MASS, np.array([0.01, -0.02, 0.05]), np.diag([0.004, 0.005, 0.003]))
LOADED_SEED = 13   # bench/accuracy.py's cross-motion Panda setting; any seed shows it, this one by 1.7 σ


class Panda:
    """bench/accuracy.py's cross-motion Panda (tools/xtraj_cell.py): nonlinear friction 3 % higher under load, 3 ms
    lag, rotor inertia, 1 N·m torque noise on the loaded run; the robot identified without noise on one period of
    panda_payload_inertia, the payload on panda_payload."""

    def __init__(self):
        m = self.model = RobotModel.from_urdf("panda")
        self.frame = m.default_payload_frame
        self.fm = make_friction_model("nonlinear", m.joint_names, alpha=0.6)
        self.fp = np.tile([3.0, 2.0, 0.3], m.n) * np.linspace(2.0, 0.8, m.n).repeat(3) * 0.3
        self.robot = fit_given_model(m, self.record("panda_payload_inertia", None, 1.0, 0, 0.0), friction="nonlinear")
        self.loaded = self.record("panda_payload", (PHI, self.frame), 1.03, LOADED_SEED, 1.0)
        self.estimates = {}

    def record(self, excitation, payload, friction_scale, seed, noise):
        traj = load_trajectory(excitation).for_model(list(self.model.joint_names))
        t = np.arange(int(round(traj.duration * RATE))) / RATE
        return synthetic_recording(self.model, t, *traj.evaluate(t), friction=self.fm,
                                   friction_params=self.fp * friction_scale, rotor_inertia=0.1, payload=payload,
                                   noise_std=noise, delay=0.003, seed=seed)

    def moved_free(self, loaded):
        """difference-rls (offsets free) on `loaded`, once."""
        if "moved free" not in self.estimates:
            self.estimates["moved free"] = identify_payload("difference-rls", self.model, self.robot, loaded,
                                                            self.frame)
        return self.estimates["moved free"]

    def estimate(self, method, **options):
        key = (method, tuple(sorted(options.items())))
        if key not in self.estimates:
            self.estimates[key] = identify_payload(method, self.model, self.robot, self.loaded, self.frame, **options)
        return self.estimates[key]


@pytest.fixture(scope="module")
def panda():
    return Panda()


def test_the_friction_change_of_the_difference_leaves_the_offsets_out(panda):
    """J's friction change is the load-changeable friction parameters, one to one, as khalil-1's columns."""
    robot = panda.robot
    changeable = load_changeable_friction(robot.friction)
    assert not changeable.all(), "the bench's friction model has offsets a load cannot change"
    J = difference_jacobian(panda.model, robot, panda.frame, friction_change=True, changeable=changeable)
    assert J.shape[1] == 10 + int(changeable.sum())
    everything = difference_jacobian(panda.model, robot, panda.frame, friction_change=True)
    assert np.array_equal(J, everything[:, np.r_[np.ones(10, dtype=bool), changeable]])


def test_reidentification_with_a_known_robot_is_khalil_1_with_the_friction_change(panda):
    """Same mass and mass σ as khalil-1 with the friction change (measured: +0.330 % ± 0.202 khalil-2, +0.307 % ±
    0.199 khalil-1; before +0.660 % ± 0.279), and the CoM σ with it. difference-rls keeps the offsets free: on the
    real UR10e user path (15harm) leaving them out moved its mass from +0.28 % to +1.21 % (docs/design.md)."""
    method = "khalil-2"
    reference = panda.estimate("khalil-1", friction_change=True)
    est = panda.estimate(method)
    ref_std, std = reference.readable_std(), est.readable_std()
    assert std[0] < 1.1 * ref_std[0], f"{method} mass σ {std[0]:.5f} kg against khalil-1's {ref_std[0]:.5f}"
    assert abs(est.mass - reference.mass) < 0.5 * ref_std[0], (
        f"{method} {est.mass:.5f} kg, khalil-1 with the friction change {reference.mass:.5f} ± {ref_std[0]:.5f}")
    assert np.all(std[1:4] < 1.1 * ref_std[1:4])
    assert np.all(np.abs(est.com - reference.com) < 0.5 * ref_std[1:4])
    # And the truth within the σ they report.
    assert abs(est.mass - MASS) < 3 * std[0]


@pytest.fixture(scope="module")
def moved_offsets(panda):
    """The loaded run with every joint's offset B_j 0.3 N·m off robot.yaml's in the sign of the payload's mean torque
    on that joint (the unloaded twin with the same noise seed gives that torque)."""
    payload_torque = panda.loaded.joints.tau - panda.record("panda_payload", None, 1.03, LOADED_SEED, 1.0).joints.tau
    fp = panda.fp * 1.03
    fp[2::3] += 0.3 * np.sign(payload_torque.mean(axis=0))   # B_j: the friction's constant offset (Fc, Fv, B)
    traj = load_trajectory("panda_payload").for_model(list(panda.model.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    return synthetic_recording(panda.model, t, *traj.evaluate(t), friction=panda.fm, friction_params=fp,
                               rotor_inertia=0.1, payload=(PHI, panda.frame), noise_std=1.0, delay=0.003, seed=3)


@pytest.mark.parametrize("method", ["khalil-2", "khalil-1", "direct-rls", "gaz-dtau"])
def test_a_method_keeping_robot_yamls_offsets_is_not_confidently_wrong_when_the_loaded_runs_offsets_moved(
        panda, moved_offsets, method):
    """Issue 29 (h69, found while measuring difference-rls's offsets): every joint's offset 0.3 N·m off robot.yaml's
    in the loaded run (real drives: 0.1-0.3 N·m between the UR10e's unloaded recordings), in the sign of the
    payload's mean torque on that joint. difference-rls, whose offsets are free, gives +0.27 % ± 0.29 on this run
    (measured); the methods that keep robot.yaml's offsets gave, converged with quality ok, khalil-2 +4.04 % ± 0.21,
    khalil-1 +4.07 % ± 0.23, direct-rls +4.08 % ± 0.23, gaz-dtau +4.07 % ± 0.19: confident wrong answers (strict
    xfail until payload/offset_drift.py). Now each is flagged suspect by the offsets' witness, naming the joints'
    offset changes and the fix; the estimate itself is not changed (still ~4 % off)."""
    free = panda.moved_free(moved_offsets)
    assert abs(free.mass - MASS) <= 2.0 * free.readable_std()[0]   # the free offsets take the change
    est = identify_payload(method, panda.model, panda.robot, moved_offsets, panda.frame)
    confident = est.converged and est.quality is Quality.OK
    assert not confident or abs(est.mass - MASS) <= 3.0 * est.readable_std()[0], (
        f"{method} {100 * (est.mass / MASS - 1):+.2f} % ± {100 * est.readable_std()[0] / MASS:.2f}, converged, ok")
    reason = next(r for r in est.quality_reasons if "constant friction offsets differ" in r)
    # Every joint moved by 0.3 N·m: each is named with its change (the free fit's ΔB̂_j within 0.1 N·m of it).
    for name in panda.model.joint_names:
        named = re.search(rf"{name} ([+-]\d+\.\d+) ± (\d+\.\d+) N·m", reason)
        assert named, reason
        assert abs(abs(float(named.group(1))) - 0.3) < 0.1, reason
    assert "difference-rls" in reason and "identify-robot" in reason
    # A witness, not a switch: the estimate is the method's own, still the offsets' +4 %.
    assert 100 * (est.mass / MASS - 1) > 3.0


def test_an_honest_loaded_run_is_not_flagged_by_the_offsets_witness(panda):
    """The same cell without the offsets moved: the witness judges it (its note, with the χ² and what shift it can
    see) and does not flag it (χ² 7.6 on 4 for khalil-1, limit 18.5; over bench/offset_drift.py's 10 seeds per
    robot no honest run was flagged)."""
    for method in ("khalil-1", "khalil-2"):
        est = panda.estimate(method)
        note = next(n for n in est.notes if getattr(n, "code", None) is NoteCode.PAYLOAD_OFFSET_DRIFT)
        chi2 = float(re.search(r"χ² (\d+\.\d+) on 4 \(limit 18\.5\)", note.text).group(1))
        assert chi2 < 18.5, note.text
        assert not any("friction offsets" in r for r in est.quality_reasons), est.quality_reasons
        assert est.quality is Quality.OK and est.converged
        assert abs(est.mass - MASS) <= 3.0 * est.readable_std()[0]
