"""Scale plausibility of an identified robot against its URDF: are the torques really torques?

Drive gains multiply every joint torque, so a wrong gain (or none at all, when a UR driver's motor
currents are read as torques) scales every identified parameter by the same factor. The parameters
the data fix best are the gravitational ones: base parameters grouping only masses and first
moments (e.g. mcz2 + 0.613·(m3 + … + m6) of a UR), identified to ~0.1 %. Their URDF values (the
nominal link inertias projected on the same base parameters, π_b = K φ_URDF, Gautier 1991) are
approximate per link but right in total, so the least-squares factor k of identified over nominal,
weighted by the nominal size (the arm's whole mass moment dominates), tells the scale of the efforts:
k ≈ 1 torques in N·m, k ≈ 0.1 currents in A (UR drives: ~10 N·m/A), k ≈ 0.87 or 1.15 gains 15 % off.

Evidence for the tolerance (real UR10e, ../shared/data/ur10e, 14-harmonic run): with the gains
identified from the known 2.805 kg load (which give the mass within 1 % on the other pairs) k = 1.01;
the same gains × 1.15 give 1.16, × 0.95 give 0.96; raw currents 0.08. The README's published gains give 0.88, and
with them the mass comes out 13 % low: the check is right to fire there. Synthetic and simulated
robots use the URDF's own inertias: k = 1 up to noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.recording import Recording

# |k − 1| above this: the efforts are not the torques the URDF predicts. The real UR10e with gains identified from
# its known load: 1.0075 (14harm pair), 0.994 (15harm), 1.01-1.02 in issue 29's runs; simulated robots 1.004-1.005.
# Gains 5 % off (given by hand, or drives warmer than at identification) move k by 5 %: 0.944-0.957 or
# 1.044-1.058 on the real arm, beyond this; 15 % off give 0.13-0.16.
SCALE_TOLERANCE = 0.035
# Below this factor (or above its inverse) the efforts are in another unit altogether, not a gain error.
OTHER_UNIT_FACTOR = 0.5
# A gravitational base parameter takes part when its std is below this fraction of its value and its
# nominal value is at least this fraction of the largest one (tiny CoM offsets the URDF only guesses).
MAX_REL_STD = 0.05
MIN_NOMINAL_SHARE = 0.05
FIRST_MOMENT_COLUMNS = 4   # m, m·cx, m·cy, m·cz of each body (pinocchio order)
# A recording's efforts over the URDF's gravity torques outside these bounds: another unit. Real UR10e
# (15harm): 1.12 unloaded, 1.46 with the 2.805 kg load, 0.09 / 0.12 as currents. The upper bound leaves
# room for a payload at the arm's rated load (12.5 kg on a UR10e: about 2.6).
RECORDING_UNIT_BOUNDS = (0.5, 5.0)
# How well the factor measures the efforts' common scale: the URDF's link masses are right in total to about this
# (real UR10e with the gains identified from its known load: 1.0075 and 0.994 on the 14harm and 15harm robot.yaml,
# 1.010 / 1.007 / 1.023 identified on each pair's unloaded run; simulated robots 1.004-1.005). Used only for gains
# given by hand (finish.with_scale_uncertainty): identified gains measure the scale better than this.
URDF_SCALE_STD = 0.01
# A plausible factor further from 1 than this many of its combined σ (URDF_SCALE_STD and the gains' own) is a
# measured scale error: the payload's σ carries it (payload_scale_std). Gains 2.5-3 % off at identify-robot read
# 0.977 and 1.033 on the real UR10e, inside SCALE_TOLERANCE, and left khalil-1's mass 3.1-3.5σ off, converged.
SCALE_DISAGREEMENT_SIGMAS = 2.0


@dataclass(frozen=True)
class ScaleCheck:
    factor: float             # identified / URDF nominal gravitational parameters (NaN: no usable parameter)
    parameters: list[str]     # the base parameters the factor rests on

    @property
    def known(self) -> bool:
        return bool(np.isfinite(self.factor))

    @property
    def plausible(self) -> bool:
        """True when unknown (nothing to judge by) or within SCALE_TOLERANCE of 1."""
        return not self.known or abs(self.factor - 1.0) <= SCALE_TOLERANCE

    def reason(self) -> str:
        """One sentence: the factor, what it suggests, and the fix (empty when plausible)."""
        if self.plausible:
            return ""
        k = self.factor
        other_unit = k < OTHER_UNIT_FACTOR or k > 1 / OTHER_UNIT_FACTOR
        cause = ("the efforts look like motor currents, not torques" if other_unit
                 else f"the drive gains look {abs(k - 1):.0%} {'high' if k > 1 else 'low'}")
        used = ", ".join(name.split()[0] for name in self.parameters)
        return (f"identified gravity parameters are {k:.3g} × the URDF's ({used}): {cause}; "
                "give the drive gains with --effort-scale, or identify them with a known mass "
                "(identify-robot --loaded-bag/--loaded-csv-ur --known-payload-mass)")

    def note(self) -> Note:
        if self.plausible:
            return Note(NoteCode.ROBOT_SCALE_CHECKED,
                        f"scale check against the URDF: identified gravity parameters are {self.factor:.3g} × "
                        "nominal" if self.known else "scale check against the URDF: no usable gravity parameter")
        return Note(NoteCode.ROBOT_SCALE_IMPLAUSIBLE, self.reason())


def payload_scale_std(check: ScaleCheck, gains_rel_std: float = 0.0) -> float:
    """Relative σ of a common error of the efforts' scale that a payload estimate on this robot must carry beyond
    the gains' own σ (`gains_rel_std`, relative; 0 when robot.yaml gives none): |k − 1| when the plausible factor k
    lies further from 1 than SCALE_DISAGREEMENT_SIGMAS × √(URDF_SCALE_STD² + gains_rel_std²), else 0.

    Why: a common gain error r scales every torque the payload fits, so the payload by 1 + r (gain_uncertainty.py),
    and the factor k measures 1 + r to URDF_SCALE_STD. Where k and the gains agree within their noise nothing is
    added (the gains' σ is already in the payload's); where they disagree, the payload's σ must cover the
    disagreement (the Birge-ratio reading of two measurements that disagree: the smaller σ cannot be trusted).
    An implausible k (outside SCALE_TOLERANCE) makes the estimate suspect instead: nothing is added then."""
    if not check.known or not check.plausible:
        return 0.0
    off = abs(check.factor - 1.0)
    noise = float(np.hypot(URDF_SCALE_STD, gains_rel_std if np.isfinite(gains_rel_std) else 0.0))
    return off if off > SCALE_DISAGREEMENT_SIGMAS * noise else 0.0


def gravitational_rows(robot: RobotIdentification) -> np.ndarray:
    """Indices of the base parameters that group only masses and first moments."""
    k = robot.base.K
    first = (np.arange(k.shape[1]) % 10) < FIRST_MOMENT_COLUMNS
    touches_other = np.any(k[:, ~first] != 0, axis=1)
    absorbs_rotor = np.any(robot.rotor.absorbed != 0, axis=1) if robot.rotor.absorbed.size else np.zeros(robot.b, bool)
    return np.flatnonzero(~touches_other & ~absorbs_rotor & np.any(k != 0, axis=1))


def check_scale(robot: RobotIdentification, model: RobotModel | None = None) -> ScaleCheck:
    """k = Σ π̂ π₀ / Σ π₀² over the well-determined gravitational base parameters (π₀ = K φ_URDF)."""
    model = robot.require_model(model)
    rows = gravitational_rows(robot)
    nominal = robot.base.values(model.standard_parameters())[rows]
    identified = robot.pi_b[rows]
    rel_std = np.asarray(robot.rel_std, dtype=float)[rows] / 100.0
    big = np.abs(nominal) >= MIN_NOMINAL_SHARE * (np.max(np.abs(nominal)) if nominal.size else 0.0)
    use = big & (np.abs(nominal) > 0) & np.isfinite(rel_std) & (rel_std < MAX_REL_STD)
    if not use.any():
        return ScaleCheck(float("nan"), [])
    n0, n1 = nominal[use], identified[use]
    factor = float(n1 @ n0 / (n0 @ n0))
    return ScaleCheck(factor, [robot.base.names[i] for i in rows[use]])


def recording_scale_factor(model: RobotModel, recording: Recording, max_samples: int = 2000) -> float:
    """k = Σ τ·g / Σ g·g of a recording's efforts τ against the URDF's gravity torques g(q) (NaN: no motion data).

    Gravity dominates the shoulder and elbow torques of a slow excitation and is uncorrelated with
    friction's sign, so k ≈ 1 for torques in N·m (more with a payload: its weight adds), k ≈ 0.1 for
    UR motor currents. Only a factor outside RECORDING_UNIT_BOUNDS is judged: a payload's share and
    the dynamics blur smaller errors, which the robot identification's check catches instead."""
    joints = recording.joints
    if joints.t.size == 0:
        return float("nan")
    order = model.match_joint_order(list(joints.joint_names))
    step = max(1, joints.t.size // max_samples)
    q, tau = joints.q[::step][:, order], joints.tau[::step][:, order]
    zero = np.zeros(model.n)
    g = np.array([model.rnea(qk, zero, zero) for qk in q])
    gg = float(np.sum(g * g))
    return float(np.sum(tau * g) / gg) if gg > 0 else float("nan")


def other_unit_reason(factor: float, what: str) -> str:
    """A sentence when `factor` says the efforts are in another unit than N·m (empty otherwise)."""
    low, high = RECORDING_UNIT_BOUNDS
    if not np.isfinite(factor) or low <= factor <= high:
        return ""
    return (f"{what}'s efforts are {factor:.3g} × the URDF's gravity torques: they look like motor currents, not "
            "torques; give the drive gains with --effort-scale or use a robot.yaml with identified gains")
