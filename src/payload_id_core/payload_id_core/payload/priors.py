"""Prior knowledge of the payload: the box its mass lies in, and a weighed mass (issue 30).

A PayloadPrior is what the user knows before the motion: the axis-aligned box (payload frame, metres) that
holds all of the payload's mass, and/or its mass from a scale with a standard deviation. It is checked once
where it enters (PayloadPrior.checked: a zero, negative or NaN extent, swapped corners, a mass <= 0, NaN or
above the robot's rated payload is bad input) and applied once, in finish.finish, to the data's Gaussian
estimate N(φ̂, C) of φ_L (apply_prior):

  known mass   a Gaussian observation m = M ± S of φ_L's first entry: the estimate conditioned on it
               (information form, so entries the motion leaves free stay free). A weighed mass removes one
               unknown, and through the mass's correlation with m·c it sharpens the CoM.
  box          the physically consistent bodies whose mass lies in the box: pseudo-inertia J ⪰ 0 and the
               bounding-quadric condition tr(J Q) ≥ 0 of Wensing, Kim & Slotine 2017 ("Linear Matrix
               Inequalities for Physically Consistent Inertial Parameter Identification", the density-
               realizability condition for a body inside an ellipsoid), taken for each axis with the degenerate
               quadric of the slab lo_i ≤ x_i ≤ hi_i: ∫ (x_i − lo_i)(hi_i − x_i) dm ≥ 0, linear in φ. Summed
               with weights 1/(3 a_i²) the three slabs give the condition of the box's circumscribing
               ellipsoid (semi-axes √3 a_i): the slabs are the tighter statement and imply it, and imply the
               CoM inside the box (also stated as lo·m ≤ m·c ≤ hi·m).
               The estimate becomes the mean and covariance of the data's Gaussian restricted to that convex
               set (a flat prior on it): the mean is itself a consistent body in the box, and the covariance
               is the spread that remains, so σ reflects the box. Computed by hit-and-run sampling (Smith 1984:
               64 chains, a pilot that learns the set's shape, exact chords; a fixed seed, so the same input
               gives the same answer), unless the data determine every entry and at least 2.5 % of their Gaussian's
               draws are bodies in the box: those draws are then the posterior's own (rejection, exact and
               independent; _rejection_draws), as com_box and physical_posterior draw theirs.
               A box that does not bind (box_does_not_bind: the data's Gaussian inside it
               by BIND_MARGIN_SIGMA along every linear constraint, every check draw a body in it) is not sampled:
               the data's numbers stay. Hit-and-run chains that still disagree after their last round (a CoM near a
               face, where the set is a thin sheet) are replaced by box_fractions' sampler of the same posterior in
               the CoM and the moments' fractions of the box's room, kept where its split R̂ is at most 1.05.
               A sampler whose chains disagree (split R̂) or whose σ are wider than the
               data's (impossible, Brascamp & Lieb 1976) is not trusted: the data's estimate stays, with the reason.
               The CoM's σ reaches the posterior's mode where the mean lies beyond its σ from it
               (com_reaching_the_mode: near a face the flat prior's volume pushes the CoM into the box), and a CoM
               the data put more than 2σ outside the box, held in by it, makes the estimate suspect
               (com_held_in_by_the_box).
               Where the motion identifies the mass and m·c but no inertia entry (the payload monitor's re-estimates,
               published as a point mass: inertia_not_identified), the box says only that the CoM lies in it: the
               data's Gaussian on (m, h) restricted to lo·m ≤ h ≤ hi·m (com_box; exact for a body whose mass lies in
               the box), the inertia left not identified (mass_and_com_in_box). The ten-parameter sampler's chains do
               not settle on that shape (six free entries along the box's flat directions: split R̂ 1.20-1.32, h190).

Consistency check (prior_contradictions): a prior the data contradict is not forced on them: it is not applied. The
unconstrained CoM outside the box by more than PRIOR_CONTRADICTION_SIGMA of its σ, the known mass that many
combined σ from the unconstrained estimate, or the data's estimate that far (Mahalanobis, the projection of
dynamics.consistency.project_feasible with the box's constraints) from any body in the box: the data's estimate
stays, suspect with the reason, and payload.yaml still records the prior that was given.

Which numbers the box only bounds (box_bounded_entries): those the motion says less about than a flat distribution
over the box's range for them; their σ reach the range's far end at 2σ (the flat prior's own spread is no confidence
interval); and, where the motion resolves no principal moment, the moments whose range end cuts the data's 2σ
(inertia_reaching_the_cut_ends: their σ reach that end); where it resolves them, each principal moment's σ carries
the box's pull on it, the posterior mean's distance from its mode, up to the data's own σ (moments_reaching_the_mode).
Which the prior rather than the motion pins
(pinned_by_prior): the others whose σ with the prior is below PINNED_RATIO of their σ from the data alone (or that
the data leave undetermined). payload.yaml lists both
(`prior.bounded`, `prior.pinned`) and the note says so: a CoM pinned by a weighed mass is not "identified by the
motion", and a box that merely bounds an inertia entry has not determined it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.box_fractions import sample_box_in_fractions, split_rhat
from payload_id_core.payload.com_box import com_box_does_not_bind, com_box_samples, truncated_normal
from payload_id_core.payload.mass_limit import MassLimit, rated_payload
from payload_id_core.payload_estimate import INERTIA_KEYS, PayloadEstimate, Quality, readable_jacobian, readable_vector

# A weighed mass without its σ: a scale and what was left off it (screws, cable) to half a percent.
KNOWN_MASS_REL_STD_DEFAULT = 0.005
# "Outside by more than its σ", as a test: 1σ would flag a CoM at the box's edge on one axis in 16 % of runs.
PRIOR_CONTRADICTION_SIGMA = 3.0
# A weighed mass may move the data's own mass by at most this many of the data's σ (the interval whose 2σ coverage
# the project holds). Conditioning moves it by (M − m̂) σ_m̂² / (σ_m̂² + S²): where S ≪ σ_m̂ the posterior follows the
# weighed mass whatever it is, so a weighed mass wrong by 16 of its own σ (4 of the data's) was reported ok 5.5-7.5σ
# off on the draws where the data landed under 3 combined σ from it. If the weighed mass is right (off by its own S at
# random) the data's mass is moved that far with probability 2Φ(−2 √(σ_m̂² + S²) / σ_m̂) ≤ 4.6 % (3.9 % with σ_m̂ = 4 S,
# 0.5 % with σ_m̂ = S; bench/known_mass_pull.py).
KNOWN_MASS_PULL_DATA_SIGMA = 2.0
# Mahalanobis distance from the data's estimate to the nearest body in the box above which the box is contradicted
# (√ of the χ² 99.9 % point for 10 parameters is 5.4).
BOX_CONTRADICTION_DISTANCE = 5.5
# A box that could not be applied (its sampler did not settle) and whose nearest body lies beyond this many of the
# data's σ from the data's estimate in a reported number: the data's interval would not cover that number were the box
# right, so the estimate is suspect (2σ: the interval whose coverage the project holds, as KNOWN_MASS_PULL_DATA_SIGMA).
UNAPPLIED_BOX_SHIFT_SIGMA = 2.0
PINNED_RATIO = 0.5                  # σ with the prior below this fraction of the data's own: the prior determined it
CHAINS = 64                         # hit-and-run chains side by side (one batched step for all)
CHAIN_BURN_IN = 60                  # steps dropped from the start (near the projection onto the set)
PILOT_STEPS = 60                    # then pilot steps that learn the set's shape
CHAIN_STEPS = 200                   # steps kept per chain: mean and covariance of the data restricted to the box
# Fewer effective samples than this: the σ with the box are themselves uncertain by more than 1/√(2·30) ≈ 13 %.
MIN_EFFECTIVE_SAMPLES = 30
SAMPLING_SEED = 30
# Exact draws first (_rejection_draws): the data's Gaussian drawn in batches, the bodies in the box kept, until
# REJECTION_TARGET are (σ of each σ about 1/√(2·20000) = 0.5 %: the cell's seeds 103 and 106 at 3 s sit within 0.1 %
# of the determination bar, 8000 moved them across it) or REJECTION_MAX_DRAWS are made; kept where at least
# REJECTION_MIN_KEPT are (2.5 % of the draws at most made; σ of a σ 1.6 %), else the hit-and-run chains below.
REJECTION_BATCH = 4000
REJECTION_TARGET = 20000
REJECTION_MAX_DRAWS = 80000
REJECTION_MIN_KEPT = 2000
REJECTION_SEED = 32
# The box does not bind when every linear constraint holds this many σ along its normal at the data's estimate and
# every one of BIND_CHECK_DRAWS draws of the data's Gaussian is a body in the box: the data's estimate is then kept
# unchanged (a constraint that does not cut the Gaussian cannot sharpen it, and sampling it would only add noise).
BIND_MARGIN_SIGMA = 4.0
BIND_CHECK_DRAWS = 4000
# Restricting a Gaussian to a convex set never widens it (Brascamp & Lieb 1976: the covariance of a log-concave
# perturbation of N(μ, S) is ⪯ S). Sampled σ wider than the data's by more than this factor (beyond the sampling
# noise) or chains that disagree (split R̂ above MAX_RHAT) mean the sampler has not mixed: its answer is not used.
MAX_WIDENING = 1.1
MAX_RHAT = 1.15
MAX_CHAIN_ROUNDS = 8                # chains that disagree are run on, to at most this many times CHAIN_STEPS
# The sampler in the CoM and the moments' fractions (box_fractions), tried where the hit-and-run chains disagree after
# their last round, is kept when its split R̂ on every entry is at most this (the task's bar, tighter than MAX_RHAT:
# it replaces a sampler that failed it).
FRACTIONS_MAX_RHAT = 1.05
# Corners farther than this from the payload frame's origin (any axis, m) are no payload a robot carries: a box of
# ±1e6 m is a typo or a unit error, and its sampled numbers meaningless.
MAX_PAYLOAD_EXTENT_M = 5.0
# An entry whose σ from the motion is at least that of a flat distribution over the box's whole range for it (range/√12)
# is bounded by the box, not pinned (box_bounded_entries): the motion says less about it than the range itself.
BOUNDED_DATA_FRACTION = 1.0 / math.sqrt(12.0)
# The box narrows the mass and CoM through the principal moments (the data correlate m·c with the inertia about the
# frame's origin) only where the motion resolves at least one of them: its σ below this fraction of a flat
# distribution's over the box's range for it (range/√12). Otherwise the moments' posterior is the flat prior's density
# (a compact part's moments sat +2.3σ high) and so is the CoM's narrowing: with an exact likelihood (simulated draws
# about the truth, each run's own covariance) the CoM's 2σ coverage with the box was 0.79 on the Panda, 0.96 on the
# UR10. The smallest ratio over the three moments (bench/priors.py, 10 seeds): Panda 0.51-0.82 difference-rls,
# 0.43-0.61 khalil-1; UR10 0.12-0.38 and 0.12-0.37 (a narrow gap: design.md "Prior knowledge of the payload").
RESOLVED_MOMENT_FRACTION = 0.4
RANGE_DRAWS = 4000                  # draws of the mass and CoM over which the box's range of each entry is taken
RANGE_QUANTILE = 0.005              # ... its ends: the 0.5 % outermost, not the single most extreme draw
# A known mass outside [MIN_KNOWN_MASS_KG, MAX_KNOWN_MASS_KG] is no part a robot carries (the heaviest rated payload
# of an industrial arm is 2.3 t, FANUC M-2000iA/2300; a milligram moves no joint torque), whatever the robot: where its
# rated payload is not known (mass_limit) --known-mass 1e200 ended in an OverflowError (S² = (0.005 M)²), and
# 1e-320 in a ZeroDivisionError (S² underflows to 0).
MIN_KNOWN_MASS_KG = 1e-6
MAX_KNOWN_MASS_KG = 1e4
# A weighed mass's σ below this fraction of it is no scale's (and no account of the screws and cable left off it):
# the mass would be assumed exact, and the conditioning's 1/S² fails: --known-mass-std 1e-200 gave a
# ZeroDivisionError, 1e-160 a NaN mass with quality ok (h133).
MIN_KNOWN_MASS_REL_STD = 1e-6
READABLE_NAMES = ["mass", "com x", "com y", "com z", *(f"inertia {k}" for k in INERTIA_KEYS)]
# φ's entry (pinocchio order m, m·c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz) that moves each readable entry one for one.
_INERTIA_CELL = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}
_PHI_OF_READABLE = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])


def _finite(value: float, what: str, fix: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise PayloadIdError(f"{what} is {value}, not a number", fix)
    return value


@dataclass(frozen=True)
class PayloadPrior:
    """The box (lo, hi corners in the payload frame, m) holding the payload's mass, and its weighed mass (kg) ± std."""

    box_min: tuple[float, ...] | None = None
    box_max: tuple[float, ...] | None = None
    known_mass: float | None = None
    known_mass_std: float | None = None

    # -- checked where it enters ----------------------------------------------------------------------
    @classmethod
    def checked(cls, box: Sequence[float] | None = None, known_mass: float | None = None,
                known_mass_std: float | None = None, rated_payload: float | MassLimit | None = None) -> PayloadPrior:
        """The prior from a box [x0, y0, z0, x1, y1, z1] (m) and a known mass (kg) ± std; bad input refused.
        `rated_payload`: the heaviest known mass the robot takes (mass_limit.known_mass_limit; kg: its rated
        payload)."""
        lo = hi = None
        if box is not None:
            values = [float(v) for v in box]
            if len(values) != 6:
                raise PayloadIdError(f"the bounding box has {len(values)} numbers, not 6",
                                     "give the two corners X0,Y0,Z0,X1,Y1,Z1 in metres, payload frame")
            if not all(math.isfinite(v) for v in values):
                raise PayloadIdError(f"the bounding box {values} holds a NaN or infinite corner",
                                     "give the two corners X0,Y0,Z0,X1,Y1,Z1 as finite metres")
            lo, hi = tuple(values[:3]), tuple(values[3:])
            if max(abs(v) for v in values) > MAX_PAYLOAD_EXTENT_M:
                raise PayloadIdError(f"the bounding box reaches {max(abs(v) for v in values):g} m from the payload "
                                     f"frame, beyond any payload a robot carries (limit {MAX_PAYLOAD_EXTENT_M:g} m)",
                                     "give the box in metres around the part, e.g. -0.1,-0.1,0,0.1,0.1,0.2")
            for axis, a, b in zip("xyz", lo, hi):
                if b < a:
                    raise PayloadIdError(f"the bounding box's corners are swapped on {axis} ({a:g} > {b:g})",
                                         "give the low corner first: X0,Y0,Z0 (smallest) then X1,Y1,Z1 (largest)")
                if b == a:
                    raise PayloadIdError(f"the bounding box has zero extent on {axis} ({a:g} to {b:g})",
                                         "give a box that holds the whole payload, with a positive size on every axis")
        if known_mass is None and known_mass_std is not None:
            raise PayloadIdError("a known-mass standard deviation without a known mass", "give the known mass too")
        if known_mass is not None:
            known_mass = _finite(known_mass, "the known mass", "give the weighed mass in kg")
            if known_mass <= 0:
                raise PayloadIdError(f"the known mass is {known_mass:g} kg, not > 0", "give the weighed mass in kg")
            if not MIN_KNOWN_MASS_KG <= known_mass <= MAX_KNOWN_MASS_KG:
                raise PayloadIdError(f"the known mass {known_mass:g} kg is no payload a robot carries (limits "
                                     f"{MIN_KNOWN_MASS_KG:g} to {MAX_KNOWN_MASS_KG:g} kg)",
                                     "check the mass and its unit (kg)")
            limit = MassLimit.rated(rated_payload) if isinstance(rated_payload, (int, float)) else rated_payload
            if limit is not None and known_mass > limit.kg:
                raise PayloadIdError(f"the known mass {known_mass:g} kg is above {limit.what}",
                                     "check the mass and its unit (kg), and the URDF")
            if known_mass_std is None:
                known_mass_std = KNOWN_MASS_REL_STD_DEFAULT * known_mass
            known_mass_std = _finite(known_mass_std, "the known mass's standard deviation", "give it in kg")
            if known_mass_std <= 0:
                raise PayloadIdError(f"the known mass's standard deviation is {known_mass_std:g} kg, not > 0",
                                     "give the scale's uncertainty in kg (e.g. 0.005)")
            if known_mass_std < MIN_KNOWN_MASS_REL_STD * known_mass:
                raise PayloadIdError(f"the known mass's standard deviation {known_mass_std:g} kg is below "
                                     f"{MIN_KNOWN_MASS_REL_STD:g} of the mass {known_mass:g} kg: no scale weighs a "
                                     "part that well", "give the scale's uncertainty in kg (e.g. 0.005)")
            if known_mass_std >= known_mass:
                raise PayloadIdError(f"the known mass's standard deviation {known_mass_std:g} kg is not below the "
                                     f"mass {known_mass:g} kg: that is not a weighed mass",
                                     "give the scale's uncertainty in kg (e.g. 0.005), or leave --known-mass out")
        return cls(lo, hi, known_mass, known_mass_std)

    @classmethod
    def from_text(cls, box: str | None = None, known_mass: str | float | None = None,
                  known_mass_std: str | float | None = None,
                  rated_payload: float | MassLimit | None = None) -> PayloadPrior | None:
        """From the command line's strings (--bounding-box X0,Y0,Z0,X1,Y1,Z1, --known-mass, --known-mass-std);
        None when neither is given."""
        if box is None and known_mass is None and known_mass_std is None:
            return None
        corners = None
        if box is not None:
            try:
                corners = [float(v) for v in str(box).split(",")]
            except ValueError:
                raise PayloadIdError(f"--bounding-box '{box}' is not six comma-separated numbers",
                                     "give X0,Y0,Z0,X1,Y1,Z1 in metres, e.g. -0.1,-0.1,0,0.1,0.1,0.2") from None

        def number(text, flag: str) -> float | None:
            if text is None:
                return None
            try:
                return float(text)
            except ValueError:
                raise PayloadIdError(f"{flag} '{text}' is not a number", "give kilograms, e.g. 2.805") from None

        return cls.checked(corners, number(known_mass, "--known-mass"), number(known_mass_std, "--known-mass-std"),
                           rated_payload)

    def parts_with(self, reason: str) -> dict[str, str]:
        """{part given: reason} for each part of this prior (bounding_box, known_mass): the estimate's
        prior_not_applied when the whole prior is left out."""
        parts = (["bounding_box"] if self.has_box else []) + (["known_mass"] if self.known_mass is not None else [])
        return dict.fromkeys(parts, reason)

    @property
    def has_box(self) -> bool:
        return self.box_min is not None and self.box_max is not None

    @property
    def lo(self) -> np.ndarray:
        return np.asarray(self.box_min, dtype=float)

    @property
    def hi(self) -> np.ndarray:
        return np.asarray(self.box_max, dtype=float)

    def describe(self) -> str:
        """One line for notes and the summary: what was assumed."""
        parts = []
        if self.has_box:
            parts.append("bounding box [" + ", ".join(f"{1e3 * v:.0f}" for v in self.lo) + "] to ["
                         + ", ".join(f"{1e3 * v:.0f}" for v in self.hi) + "] mm")
        if self.known_mass is not None:
            parts.append(f"known mass {self.known_mass:g} ± {self.known_mass_std:.2g} kg")
        return ", ".join(parts)

    # -- payload.yaml -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        out: dict = {}
        if self.has_box:
            out["bounding_box"] = {"min": [float(v) for v in self.lo], "max": [float(v) for v in self.hi]}
        if self.known_mass is not None:
            out["known_mass"] = float(self.known_mass)
            out["known_mass_std"] = float(self.known_mass_std)  # type: ignore[arg-type]
        return out

    @classmethod
    def from_dict(cls, d: dict | None) -> PayloadPrior | None:
        if not d:
            return None
        box = d.get("bounding_box")
        corners = [*box["min"], *box["max"]] if box else None
        return cls.checked(corners, d.get("known_mass"), d.get("known_mass_std"))


# -- the physics ---------------------------------------------------------------------------------------
def _second_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) diagonal of Σ = ∫ x xᵀ dm = ½ tr(I) 1 − I, and (N, 3) first moments h, from φ samples (N, 10)."""
    ixx, iyy, izz = x[:, 4], x[:, 6], x[:, 9]
    half = 0.5 * (ixx + iyy + izz)
    return np.column_stack([half - ixx, half - iyy, half - izz]), x[:, 1:4]


def in_box(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """(N,) whether each φ sample (N, 10) is a body whose mass lies in the box: m > 0, J ⪰ 0 (Wensing 2017), the
    three slabs ∫ (x_i − lo_i)(hi_i − x_i) dm ≥ 0 (their bounding-quadric condition, degenerate quadric), the CoM
    inside, the corner products (_linear_rows)."""
    x = np.atleast_2d(x)
    m = x[:, 0]
    sig, h = _second_moments(x)
    ok = m > 0
    slab = -sig + (lo + hi) * h - lo * hi * m[:, None]
    scale = np.maximum(m, 1e-12)[:, None] * np.maximum(hi - lo, 1e-9) ** 2
    ok &= np.all(slab >= -tol * scale, axis=1)
    ok &= np.all(h >= lo * m[:, None] - tol, axis=1) & np.all(h <= hi * m[:, None] + tol, axis=1)
    products = x @ _linear_rows(lo, hi)[10:].T
    a = np.maximum(hi - lo, 1e-9)
    pair_scale = np.repeat([a[0] * a[1], a[0] * a[2], a[1] * a[2]], 4)
    ok &= np.all(products >= -tol * np.maximum(m, 1e-12)[:, None] * pair_scale, axis=1)
    J = pseudo_inertia_batch(x)
    if ok.any():
        ok[ok] &= np.linalg.eigvalsh(J[ok])[:, 0] >= -tol * np.maximum(m[ok], 1e-12) * 1e-6
    return ok


def box_constraints(lo: np.ndarray, hi: np.ndarray):
    """The box's constraints on the cvxpy variable φ for consistency.project_feasible: the three slabs, the CoM
    between the corners and the corner products (linear; J ⪰ 0 and m > 0 are project_feasible's own)."""
    def constraints(x) -> list:
        m, h = x[0], x[1:4]
        ixx, iyy, izz = x[4], x[6], x[9]
        half = 0.5 * (ixx + iyy + izz)
        sig = [half - ixx, half - iyy, half - izz]
        out = []
        for i in range(3):
            out.append(-sig[i] + (lo[i] + hi[i]) * h[i] - lo[i] * hi[i] * m >= 0)
            out.append(h[i] >= lo[i] * m)
            out.append(h[i] <= hi[i] * m)
        for row in _linear_rows(lo, hi)[10:]:
            out.append(row @ x >= 0)
        return out
    return constraints


def _interval_product(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(p), max(p)


def _interval_square(a: tuple[float, float]) -> tuple[float, float]:
    lo2 = 0.0 if a[0] <= 0.0 <= a[1] else min(a[0] ** 2, a[1] ** 2)
    return lo2, max(a[0] ** 2, a[1] ** 2)


def box_parameter_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kilogram: the range of each of φ's entries 1..9 (m·c, the inertia about the origin) for mass in the box."""
    iv = [(float(lo[i]), float(hi[i])) for i in range(3)]
    sq = [_interval_square(a) for a in iv]
    low, high = np.zeros(10), np.zeros(10)
    low[1:4], high[1:4] = lo, hi
    # Ixx = ∫ (y² + z²) dm, Ixy = −∫ x y dm, ... in pinocchio's order [Ixx, Ixy, Iyy, Ixz, Iyz, Izz].
    diag = {4: (1, 2), 6: (0, 2), 9: (0, 1)}
    for k, (a, b) in diag.items():
        low[k], high[k] = sq[a][0] + sq[b][0], sq[a][1] + sq[b][1]
    for k, (a, b) in {5: (0, 1), 7: (0, 2), 8: (1, 2)}.items():
        p0, p1 = _interval_product(iv[a], iv[b])
        low[k], high[k] = -p1, -p0
    return low, high


def _information(cov: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """φ's information matrix from its covariance on the determined entries `ok` (0 elsewhere: free)."""
    info = np.zeros((10, 10))
    idx = np.flatnonzero(ok)
    c = np.asarray(cov, dtype=float)[np.ix_(idx, idx)]
    c = 0.5 * (c + c.T)
    w, V = np.linalg.eigh(c)
    w = np.maximum(w, max(float(w.max()), 1e-30) * 1e-12)
    info[np.ix_(idx, idx)] = (V / w) @ V.T
    return info


def pseudo_inertia_batch(x: np.ndarray) -> np.ndarray:
    """(N, 4, 4) pseudo-inertia J = [[Σ, h], [hᵀ, m]] of φ samples (N, 10) (Wensing 2017), linear in φ."""
    x = np.atleast_2d(x)
    sig, h = _second_moments(x)
    J = np.zeros((x.shape[0], 4, 4))
    J[:, 0, 0], J[:, 1, 1], J[:, 2, 2] = sig[:, 0], sig[:, 1], sig[:, 2]
    J[:, 0, 1] = J[:, 1, 0] = -x[:, 5]
    J[:, 0, 2] = J[:, 2, 0] = -x[:, 7]
    J[:, 1, 2] = J[:, 2, 1] = -x[:, 8]
    J[:, :3, 3] = J[:, 3, :3] = h
    J[:, 3, 3] = x[:, 0]
    return J


# φ's products of inertia about the origin by axis pair (pinocchio order [Ixx, Ixy, Iyy, Ixz, Iyz, Izz] from 4).
_PRODUCT_INDEX = {(0, 1): 5, (0, 2): 7, (1, 2): 8}


def _linear_rows(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(K, 10) rows A with A φ ≥ 0 for a body in the box: m > 0, the three slabs, the CoM between the corners and, per
    pair of axes, the four corner products ∫ (x_i − lo_i)(x_j − lo_j) dm ≥ 0, ∫ (hi_i − x_i)(hi_j − x_j) dm ≥ 0,
    ∫ (x_i − lo_i)(hi_j − x_j) dm ≥ 0, ∫ (hi_i − x_i)(x_j − lo_j) dm ≥ 0 (the integrand is a product of two factors
    non-negative in the box; the reformulation-linearization of Sherali & Adams 1990, linear in φ). They bound the
    products of inertia about the CoM by m·min(...) of the CoM's distances to the faces, tighter than J ⪰ 0's
    Cauchy-Schwarz bound √(Σ_ii Σ_jj) wherever the CoM is off the box's centre."""
    rows = [np.eye(10)[0]]
    for i in range(3):
        slab = np.zeros(10)
        # −Σ_ii + (lo_i + hi_i) h_i − lo_i hi_i m, with Σ_ii = ½ tr(I) − I_ii.
        diag = np.array([4, 6, 9])
        slab[diag] -= 0.5
        slab[diag[i]] += 1.0
        slab[1 + i] += lo[i] + hi[i]
        slab[0] -= lo[i] * hi[i]
        low, high = np.zeros(10), np.zeros(10)
        low[1 + i], low[0] = 1.0, -lo[i]
        high[1 + i], high[0] = -1.0, hi[i]
        rows += [slab, low, high]
    for (i, j), k in _PRODUCT_INDEX.items():
        for si, ki in ((1.0, lo[i]), (-1.0, hi[i])):
            for sj, kj in ((1.0, lo[j]), (-1.0, hi[j])):
                # ∫ si (x_i − ki) · sj (x_j − kj) dm ≥ 0, with ∫ x_i x_j dm = −φ_k (the product of inertia's sign).
                row = np.zeros(10)
                row[k] = -si * sj
                row[1 + i] -= si * sj * kj
                row[1 + j] -= si * sj * ki
                row[0] += si * sj * ki * kj
                rows.append(row)
    return np.array(rows)


def uniform_box_phi(mass: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """φ of a solid block of `mass` filling the box: strictly inside the feasible set (the sampler's start)."""
    a = hi - lo
    inertia = np.diag(mass / 12.0 * np.array([a[1]**2 + a[2]**2, a[0]**2 + a[2]**2, a[0]**2 + a[1]**2]))
    return from_mass_com_inertia(mass, 0.5 * (lo + hi), inertia)


def _chord(x: np.ndarray, d: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K,) interval [t_lo, t_hi] of t with x + t d a body in the box, for K points x and directions d (K, 10):
    the linear rows from their roots, J(x + t d) ⪰ 0 from the eigenvalues μ of J(x)^-½ J(d) J(x)^-½ (1 + t μ ≥ 0)."""
    ax, ad = x @ rows.T, d @ rows.T
    with np.errstate(divide="ignore", invalid="ignore"):
        r = -ax / ad
    t_lo = np.max(np.where(ad > 0, r, -np.inf), axis=1)
    t_hi = np.min(np.where(ad < 0, r, np.inf), axis=1)
    w, V = np.linalg.eigh(pseudo_inertia_batch(x))
    inside = w[:, 0] > 0
    root = V / np.sqrt(np.where(inside[:, None], w, 1.0))[:, None, :]
    mu = np.linalg.eigvalsh(np.swapaxes(root, 1, 2) @ pseudo_inertia_batch(d) @ root)
    with np.errstate(divide="ignore"):
        inv = -1.0 / mu
    t_lo = np.maximum(t_lo, np.max(np.where(mu > 0, inv, -np.inf), axis=1))
    t_hi = np.minimum(t_hi, np.min(np.where(mu < 0, inv, np.inf), axis=1))
    stuck = ~inside | ~np.isfinite(t_lo) | ~np.isfinite(t_hi) | (t_hi <= t_lo)
    return np.where(stuck, 0.0, t_lo), np.where(stuck, 0.0, t_hi)


def _sample_box_posterior(info: np.ndarray, eta: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: np.ndarray,
                          directions: np.ndarray, steps: int, burn_in: int,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Samples (steps, CHAINS, 10) of the density ∝ exp(−½ xᵀ Λ x + ηᵀx) on the bodies in the box.

    Hit-and-run (Smith 1984), CHAINS chains side by side from the strictly feasible `start` (K, 10): a random
    direction d = R z (R `directions`), the chord of the convex set along it found exactly (_chord), and t drawn from
    the target's one-dimensional truncated Gaussian on it. Every step leaves the target invariant, so the chains'
    samples have it as their distribution. Also returns the chains' last points."""
    rows = _linear_rows(lo, hi)
    x = np.array(start, dtype=float)
    k = x.shape[0]
    keep = np.zeros((steps, k, 10))
    for step in range(burn_in + steps):
        d = rng.standard_normal((k, 10)) @ directions.T
        t_lo, t_hi = _chord(x, d, rows)
        curvature = np.einsum("ki,ij,kj->k", d, info, d)
        slope = d @ eta - np.einsum("ki,ij,kj->k", x, info, d)
        width = t_hi - t_lo
        informative = curvature > 1e-12 * np.maximum(1.0, np.abs(slope)) * np.maximum(width, 1e-12)
        safe = np.where(informative, curvature, 1.0)
        t = np.where(informative, truncated_normal(rng, slope / safe, 1.0 / np.sqrt(safe), t_lo, t_hi),
                     t_lo + width * rng.random(k))   # no information along d: uniform on the chord
        # Strictly inside: a point on the boundary would stall its chain.
        t = np.clip(t, t_lo + 1e-9 * width, t_hi - 1e-9 * width)
        x = x + t[:, None] * d
        if step >= burn_in:
            keep[step - burn_in] = x
    return keep, x


def _effective_samples(chains: np.ndarray) -> float:
    """The samples (steps, chains, 10) over their integrated autocorrelation time, of the worst-mixing entry (the
    chains' mean autocorrelation, summed up to its first negative value)."""
    n, k, p = chains.shape
    z = (chains - chains.mean(axis=0)) / np.maximum(chains.std(axis=(0, 1)), 1e-300)
    f = np.fft.rfft(z, n=2 * n, axis=0)
    acf = (np.fft.irfft(f * np.conj(f), axis=0)[:n] / n).mean(axis=1)   # (n, p)
    worst = 1.0
    for j in range(p):
        rho = acf[:, j] / max(acf[0, j], 1e-300)
        cut = int(np.argmax(rho < 0)) if (rho < 0).any() else n
        worst = max(worst, 1.0 + 2.0 * float(np.sum(rho[1:cut])))
    return n * k / worst


def _rejection_draws(info: np.ndarray, eta: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """(n, 1, 10) exact, independent draws of the data's Gaussian (information Λ, η; every entry determined) restricted
    to the bodies in the box: draws of N(Λ⁻¹η, Λ⁻¹) kept where they are bodies in it (rejection sampling, as com_box
    and physical_posterior do), in batches of REJECTION_BATCH until REJECTION_TARGET are kept or REJECTION_MAX_DRAWS
    are made. None where the data leave an entry free (no Gaussian to draw) or fewer than REJECTION_MIN_KEPT are kept
    (the set holds too little of the Gaussian: the hit-and-run chains, which need no share of it, are used).

    Why first: where a fair share of the data's Gaussian is a body in the box (the cell at 3 s: 34 %, J ⪰ 0 cutting)
    these are the restricted posterior itself, with no chain to converge, so its σ carries no sampler noise beyond
    1/√(2n); the chains' σ there were wider than the exact one on 6 of the cell's seeds 100-109 (h205: seed 107 izz
    0.222 of the moment from the chains, 0.206 exact)."""
    if not np.all(np.diag(info) > 0):
        return None
    try:
        cov = np.linalg.inv(0.5 * (info + info.T))
    except np.linalg.LinAlgError:
        return None
    mean = cov @ eta
    w, V = np.linalg.eigh(0.5 * (cov + cov.T))
    if not (np.all(np.isfinite(w)) and w.min() > 0):
        return None
    root = V * np.sqrt(w)
    rng = np.random.default_rng(REJECTION_SEED)
    kept: list[np.ndarray] = []
    made = accepted = 0
    while made < REJECTION_MAX_DRAWS and accepted < REJECTION_TARGET:
        x = mean + rng.standard_normal((REJECTION_BATCH, 10)) @ root.T
        ok = in_box(x, lo, hi)
        kept.append(x[ok])
        accepted += int(ok.sum())
        made += REJECTION_BATCH
        if accepted * REJECTION_MAX_DRAWS < 0.5 * REJECTION_MIN_KEPT * made:   # on course for under half the minimum
            break
    if accepted < REJECTION_MIN_KEPT:
        return None
    return np.concatenate(kept)[:REJECTION_TARGET, None, :]


def box_posterior(info: np.ndarray, eta: np.ndarray, lo: np.ndarray, hi: np.ndarray, mass: float, mass_std: float,
                  nearest: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """The data's Gaussian (information Λ, η) restricted to the bodies in the box: its mean, covariance, effective
    sample count and each entry's split R̂. Exact draws where a fair share of the Gaussian is a body in the box
    (_rejection_draws), else hit-and-run chains: the chain starts between `nearest` (the projection onto the set) and a
    block filling the box, strictly inside; its directions have the shape of the data's Gaussian where it is
    informative and of the box elsewhere. Where its chains still disagree after MAX_CHAIN_ROUNDS and the data
    determine every entry, the samples are box_fractions' instead if their split R̂ is at most FRACTIONS_MAX_RHAT."""
    exact = _rejection_draws(info, eta, lo, hi)
    if exact is not None:
        flat = exact.reshape(-1, 10)
        return flat.mean(axis=0), np.cov(flat.T), _effective_samples(exact), split_rhat(exact)
    low, high = box_parameter_ranges(lo, hi)
    m_hi = mass + 3.0 * mass_std
    half = m_hi * 0.5 * (high - low) + 3.0 * mass_std * np.abs(0.5 * (low + high)) + 1e-9
    half[0] = max(mass_std, 1e-6 * abs(mass))
    shape = np.linalg.inv(info + np.diag(1.0 / half**2))
    w, V = np.linalg.eigh(0.5 * (shape + shape.T))
    directions = V * np.sqrt(np.maximum(w, 0.0))
    block = uniform_box_phi(max(mass, 1e-3), lo, hi)
    start = 0.9 * np.asarray(nearest, dtype=float) + 0.1 * block
    if not in_box(start, lo, hi).all():
        start = block
    start = np.tile(start, (CHAINS, 1))
    rng = np.random.default_rng(SAMPLING_SEED)
    # A pilot chain learns the set's own shape (the box cuts the data's Gaussian into something much narrower in
    # some directions); the chain that is kept proposes along it (adaptive hit-and-run, directions fixed per chain).
    pilot, x = _sample_box_posterior(info, eta, lo, hi, start, directions, PILOT_STEPS, CHAIN_BURN_IN, rng)
    pilot_cov = np.cov(pilot.reshape(-1, 10).T)
    w, V = np.linalg.eigh(0.5 * (pilot_cov + pilot_cov.T))
    directions = V * np.sqrt(np.maximum(w, 1e-12 * max(float(w.max()), 1e-300)))
    # Chains that still disagree (split R̂ of an entry the data determine above MAX_RHAT) are run on, up to
    # MAX_CHAIN_ROUNDS times CHAIN_STEPS, the earliest quarter of the samples dropped as burn-in each round.
    keep, x = _sample_box_posterior(info, eta, lo, hi, x, directions, CHAIN_STEPS, 0, rng)
    determined = np.diag(info) > 0
    for _ in range(MAX_CHAIN_ROUNDS - 1):
        if np.max(split_rhat(keep)[determined], initial=1.0) <= MAX_RHAT:
            break
        more, x = _sample_box_posterior(info, eta, lo, hi, x, directions, CHAIN_STEPS, 0, rng)
        keep = np.concatenate([keep, more])
        keep = keep[keep.shape[0] // 4:]
    if np.max(split_rhat(keep)[determined], initial=1.0) > MAX_RHAT and determined.all():
        # Still unsettled: where the CoM is near a face the set is a thin sheet there, which the sampler in the CoM and
        # the moments' fractions of the box's room does not see (box_fractions). Tried only here, so that wherever
        # the hit-and-run settles its samples are the ones kept, as before.
        in_fractions = sample_box_in_fractions(info, eta, lo, hi, start[0], mass_std, rng)
        if np.max(split_rhat(in_fractions)) <= FRACTIONS_MAX_RHAT:
            keep = in_fractions
    flat = keep.reshape(-1, 10)
    return flat.mean(axis=0), np.cov(flat.T), _effective_samples(keep), split_rhat(keep)


def _structural_std(est: PayloadEstimate) -> np.ndarray:
    """σ of [mass, CoM, inertia about the CoM]; infinite where φ's entries they need are not identifiable."""
    ok = np.asarray(est.identifiable, dtype=bool)
    std = est.propagated_std()
    known = np.array([ok[0], *(ok[0] and ok[1 + k] for k in range(3))] + [bool(ok.all())] * 6)
    std[~known] = np.inf
    return std


def prior_contradictions(prior: PayloadPrior, est: PayloadEstimate) -> list[str]:
    """Why the data contradict the prior (empty: they do not), from the unconstrained estimate `est`."""
    out = []
    ok = np.asarray(est.identifiable, dtype=bool)
    std = est.propagated_std()
    k = PRIOR_CONTRADICTION_SIGMA
    if prior.known_mass is not None and ok[0] and np.isfinite(est.covariance[0, 0]):
        s = math.sqrt(max(float(est.covariance[0, 0]), 0.0) + prior.known_mass_std**2)  # type: ignore[operator]
        if abs(est.mass - prior.known_mass) > k * s:
            out.append(f"the known mass {prior.known_mass:g} kg is {abs(est.mass - prior.known_mass) / s:.1f}σ from "
                       f"the data's {est.mass:.4g} ± {std[0]:.2g} kg (limit {k:g}σ): a wrong mass, or torques that "
                       "are not the payload's (drive gains, effort unit)")
    if prior.has_box and ok[:4].all() and est.mass > 0:
        c = est.com
        for i, axis in enumerate("xyz"):
            below, above = prior.lo[i] - c[i], c[i] - prior.hi[i]
            gap = max(below, above)
            if gap > k * std[1 + i]:
                out.append(f"the data's CoM {axis} {1e3 * c[i]:.1f} ± {1e3 * std[1 + i]:.1f} mm lies "
                           f"{1e3 * gap:.1f} mm outside the bounding box [{1e3 * prior.lo[i]:.0f}, "
                           f"{1e3 * prior.hi[i]:.0f}] mm (limit {k:g}σ): a wrong box, or the wrong payload frame")
    return out


def apply_prior(est: PayloadEstimate, prior: PayloadPrior) -> PayloadEstimate:
    """`est` (the data's estimate, NaN covariance where the motion leaves an entry free) with `prior` applied:
    φ and its covariance conditioned on the known mass and restricted to the bodies in the box; the prior noted and
    the numbers it (not the motion) determined listed (est.prior_pinned). A prior the data contradict is not applied:
    the data's estimate stays, suspect, with the reason (a number forced between the two would be neither's)."""
    from payload_id_core.dynamics.consistency import project_feasible  # noqa: PLC0415 - cvxpy, only with a box

    ok = np.asarray(est.identifiable, dtype=bool)
    if not np.all(np.isfinite(np.asarray(est.covariance, dtype=float)[np.ix_(ok, ok)])):
        # A degenerate data σ (NaN or infinite where φ is identifiable): the prior cannot be weighed against it. Left
        # through, a known mass turned the mass NaN, ok and determined, and an infinite variance counted as 0.
        reason = ("the data's covariance holds a NaN or infinite entry where the motion identifies φ: the prior "
                  "cannot be weighed against it")
        est.prior = prior.to_dict()
        est.prior_not_applied = prior.parts_with(reason)
        est.notes.append(Note(NoteCode.PAYLOAD_PRIOR, f"prior given but not applied ({reason}): {prior.describe()}"))
        est.mark(Quality.SUSPECT, reason)
        return est
    data_std = _structural_std(est)
    contradictions = prior_contradictions(prior, est)
    projected = est.phi
    if prior.has_box:
        # The data's distance to the nearest body in the box (Mahalanobis, in the data's metric).
        projected, inside, dist = _nearest_in_box(est.phi, est.covariance, ok, prior)
        if not inside and not _has_spread(est.covariance, ok):
            # Zero σ (noise-free torques): the projection falls back to a Euclidean metric, not σ; the data admit no
            # other body, so one outside the box is infinitely many σ from it (it passed as 0.65 "σ", ok).
            dist = math.inf
        if dist > BOX_CONTRADICTION_DISTANCE:
            contradictions.append(f"the data's estimate is {dist:.3g} standard deviations from any body whose mass "
                                  f"lies in the bounding box (limit {BOX_CONTRADICTION_DISTANCE:g}): a wrong box, or "
                                  "the wrong payload frame")
    est.prior = prior.to_dict()
    if contradictions:
        est.prior_not_applied = prior.parts_with("the data contradict the prior: " + "; ".join(contradictions))
        est.notes.append(Note(NoteCode.PAYLOAD_PRIOR, f"prior given but not applied (the data contradict it): "
                              f"{prior.describe()}"))
        for reason in contradictions:
            est.notes.append(Note(NoteCode.PAYLOAD_PRIOR_CONTRADICTED, reason))
            est.mark(Quality.SUSPECT, "prior contradicted: " + reason)
        return est
    pulled_by_the_mass = weighed_mass_pull(prior, est)    # judged on the data's own mass, before it is conditioned
    info = _information(est.covariance, ok)
    eta = info @ np.where(ok, est.phi, 0.0)
    disagreement = ""
    if prior.known_mass is not None:
        info[0, 0] += 1.0 / prior.known_mass_std**2   # type: ignore[operator]
        eta[0] += prior.known_mass / prior.known_mass_std**2  # type: ignore[operator]
    idx = np.flatnonzero(ok)
    sub = np.linalg.inv(info[np.ix_(idx, idx)])
    phi, cov = est.phi.copy(), np.full((10, 10), np.nan)
    if prior.known_mass is None:    # the data's own numbers, not their round trip through the information form
        cov[np.ix_(idx, idx)] = sub = np.asarray(est.covariance, dtype=float)[np.ix_(idx, idx)]
    else:
        phi[idx] = sub @ eta[idx]
        widened = _covering_the_disagreement(sub, est, prior, idx)
        if widened is not sub:
            sub = widened
            info[np.ix_(idx, idx)] = np.linalg.inv(sub)   # the box, if it binds, samples the widened Gaussian
            eta[idx] = info[np.ix_(idx, idx)] @ phi[idx]
            disagreement = (f" (the data's mass {est.mass:.4g} kg and the known mass disagree by "
                            f"{known_mass_disagreement(prior, est):.2f} combined σ: the mass σ widened by that ratio)")
        cov[np.ix_(idx, idx)] = sub
    ess = float("nan")
    box_text = ""
    unresolved_moments = False
    mode = None
    data_value = readable_vector(phi)   # the data's numbers (after the known mass), before the box
    mass_and_com_only = prior.has_box and inertia_not_identified(ok)
    if prior.has_box and ok.all() and box_does_not_bind(phi, sub, prior.lo, prior.hi):
        box_text = (f" (the bounding box does not bind: the data's estimate lies inside it by at least "
                    f"{BIND_MARGIN_SIGMA:g}σ, so its numbers are kept unchanged)")
    elif mass_and_com_only and com_box_does_not_bind(phi[:4], sub, prior.lo, prior.hi):
        box_text = (" (the motion does not identify the inertia: the box bounds the CoM only, and does not bind: "
                    f"the data's CoM lies inside it by at least {BIND_MARGIN_SIGMA:g}σ, so its numbers are kept "
                    "unchanged)")
    elif mass_and_com_only:
        nearest = projected if prior.known_mass is None else _nearest_in_box(phi, cov, ok, prior)[0]
        box_phi, box_cov, ess, rhat = mass_and_com_in_box(phi, sub, prior.lo, prior.hi, nearest)
        untrusted = _untrusted_sampling(box_cov[:4, :4], sub, float(np.max(rhat)))
        if untrusted:
            box_text, ess = _box_not_applied(est, untrusted, phi, cov, ok, nearest)
        else:
            _mark_few_samples(est, ess)
            mode = nearest
            box_text = (" (the motion does not identify the inertia: the box bounds the mass and CoM only, the CoM "
                        "inside it; the inertia stays not identified)")
            phi, cov = box_phi, box_cov
    elif prior.has_box:
        mass, mass_std = float(phi[0]), math.sqrt(max(float(sub[0, 0]), 0.0))
        box_phi, box_cov, ess, rhat = box_posterior(info, eta, prior.lo, prior.hi, mass, mass_std, projected)
        # Judged on the entries the data determine: those are what the box must not make worse (free entries mix
        # slowly along the box's flat directions, and stay undetermined unless the box pins them).
        untrusted = _untrusted_sampling(box_cov[np.ix_(idx, idx)], sub, float(np.max(rhat[idx])))
        if untrusted:
            nearest = projected if prior.known_mass is None else \
                project_feasible(phi, cov, ok, extra_constraints=box_constraints(prior.lo, prior.hi))[0]
            box_text, ess = _box_not_applied(est, untrusted, phi, cov, ok, nearest)
        else:
            _mark_few_samples(est, ess)
            # The nearest body in the box to the data (their metric; with a known mass, the data conditioned on it):
            # the posterior's mode, where the flat prior's volume has not pulled it.
            mode = projected
            if prior.known_mass is not None:
                mode = project_feasible(phi, cov, ok, extra_constraints=box_constraints(prior.lo, prior.hi))[0]
            if ok[:4].all() and not moments_resolved(est, data_std, prior.lo, prior.hi):
                unresolved_moments = True
                # The mass and CoM of the mode, as the motion alone gives them through finish's projection onto
                # J ⪰ 0, not the raw fit's: the raw fit carries moments below zero, and m·c moves with them (Panda
                # bench, the raw CoM's 2σ coverage 0.88, the projected one's 0.93). Not the mean either: its shift is
                # the flat prior's pull on the moments.
                box_phi, box_cov = _with_data_mass_and_com(box_phi, box_cov, mode[:4], sub[:4, :4])
                box_text = (" (the motion leaves every principal moment unresolved within the box's range: the mass "
                            "and CoM are the nearest body in the box's, with the motion's own σ, the box's narrowing "
                            "of them through the moments being its flat prior's, not the data's)")
            phi, cov, ok = box_phi, box_cov, np.ones(10, dtype=bool)
    est.phi = np.asarray(phi, dtype=float)
    est.covariance = np.asarray(cov, dtype=float)
    est.identifiable = ok
    bounded: list[str] = []
    if mass_and_com_only and np.isfinite(ess):
        bounded, est.covariance = box_bounded_entries(est, data_std, prior.lo, prior.hi, entries=(1, 2, 3))
        if mode is not None:
            est.covariance = com_reaching_the_mode(est, mode, data_std)
    elif prior.has_box and np.isfinite(ess):
        bounded, est.covariance = box_bounded_entries(est, data_std, prior.lo, prior.hi)
        if unresolved_moments:
            cut, est.covariance = inertia_reaching_the_cut_ends(est, data_value, data_std, prior.lo, prior.hi, bounded)
            bounded = [*bounded, *cut]
        elif mode is not None:
            est.covariance = moments_reaching_the_mode(est, mode, data_std, bounded)
            est.covariance = com_reaching_the_mode(est, mode, data_std)
    if pulled_by_the_mass:
        est.mark(Quality.SUSPECT, pulled_by_the_mass)
    held_in = com_held_in_by_the_box(data_value, data_std, prior.lo, prior.hi) if np.isfinite(ess) else ""
    if held_in:
        est.mark(Quality.SUSPECT, f"the bounding box holds in {held_in}: the motion's estimate is not confirmed by the "
                 "box given (check the box's corners and the payload frame)")
    est.prior_bounded = bounded
    est.prior_pinned = pinned_by_prior(data_std, _structural_std(est), bounded)
    text = f"prior used: {prior.describe()}{disagreement}{box_text}"
    if pulled_by_the_mass:
        text += f" ({pulled_by_the_mass})"
    if np.isfinite(ess):
        text += f" (the data's estimate restricted to the box: {ess:.0f} effective samples)"
    text += (f"; pinned by the prior (σ below {PINNED_RATIO:g} of the motion's own): " + ", ".join(est.prior_pinned)
             if est.prior_pinned else "; the prior pins no number the motion leaves loose")
    if bounded:
        text += ("; only bounded by the box (the motion's σ spans the box's range, or the box's end cuts the "
                 "motion's 2σ of a principal moment and the motion resolves none of them; σ reaches that end): "
                 + ", ".join(bounded))
    est.notes.append(Note(NoteCode.PAYLOAD_PRIOR, text))
    return est


def com_held_in_by_the_box(data_value: np.ndarray, data_std: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> str:
    """The CoM components the data put outside the box by more than UNAPPLIED_BOX_SHIFT_SIGMA of their own σ
    (`data_value`, `data_std` readable order; '' if none). The box, applied, holds the CoM in at its face; the truth,
    were the box right, lies outside the interval the motion alone reports, as where the box is not applied
    (_box_would_move), so the estimate is suspect the same way (beyond PRIOR_CONTRADICTION_SIGMA the box is not
    applied at all)."""
    far = []
    for i, axis in enumerate("xyz"):
        gap = max(lo[i] - data_value[1 + i], data_value[1 + i] - hi[i]) / data_std[1 + i]
        if np.isfinite(gap) and gap > UNAPPLIED_BOX_SHIFT_SIGMA:
            far.append(f"com {axis}, {gap:.1f}σ of the motion's own outside it")
    return ", ".join(far) + (f" (limit {UNAPPLIED_BOX_SHIFT_SIGMA:g}σ)" if far else "")


def _box_not_applied(est: PayloadEstimate, untrusted: str, phi: np.ndarray, cov: np.ndarray, ok: np.ndarray,
                     nearest: np.ndarray) -> tuple[str, float]:
    """The box's sampling cannot be trusted (`untrusted` says why): the data's numbers `phi`, `cov` stay, `est` says
    the box was not applied, and is suspect when the nearest body in the box (`nearest`) lies where the box would
    move them. Returns the result's text about the box and the effective sample size (NaN: none)."""
    est.prior_not_applied = {"bounding_box": f"{untrusted}; the numbers are the motion's alone"}
    kept = PayloadEstimate(frame=est.frame, phi=phi, covariance=cov, method=est.method, identifiable=ok)
    tension = _box_would_move(kept, nearest)
    if tension:
        est.mark(Quality.SUSPECT, f"the bounding box could not be applied ({untrusted}) and it would move "
                 f"{tension}: the motion's estimate is not confirmed by the box given (check the box's "
                 "corners and the payload frame)")
    return f" (the bounding box not applied: {untrusted}; the data's estimate kept)", float("nan")


def _mark_few_samples(est: PayloadEstimate, ess: float) -> None:
    """`est` suspect when the box's σ rest on fewer than MIN_EFFECTIVE_SAMPLES effective samples."""
    if ess < MIN_EFFECTIVE_SAMPLES:
        est.mark(Quality.SUSPECT, f"the σ with the bounding box rest on {ess:.0f} effective samples (at "
                 f"least {MIN_EFFECTIVE_SAMPLES}): the data and the box barely overlap")


def _box_would_move(est: PayloadEstimate, nearest: np.ndarray) -> str:
    """What the box would move beyond UNAPPLIED_BOX_SHIFT_SIGMA of the motion's own σ ('' if nothing): the readable
    numbers of `nearest` (the body in the box nearest the data's estimate, in the data's metric: the posterior's
    mode) against the data's. Where the box is not applied the data's numbers stand alone; a box that would move one
    of them beyond its 2σ puts the truth (if the box is right) outside the interval the estimate reports."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = (readable_vector(np.asarray(nearest, dtype=float)) - readable_vector(est.phi)) / _structural_std(est)
    far = [f"{name} by {s:+.1f}σ" for name, s in zip(READABLE_NAMES, shift)
           if np.isfinite(s) and abs(s) > UNAPPLIED_BOX_SHIFT_SIGMA]
    return ", ".join(far) + (f" of the motion's own (limit {UNAPPLIED_BOX_SHIFT_SIGMA:g}σ)" if far else "")


def moments_resolved(est: PayloadEstimate, data_std: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the motion resolves at least one principal moment (ixx, iyy, izz about the CoM) within the box: its σ
    from the data (`data_std`, readable order) below RESOLVED_MOMENT_FRACTION of a flat distribution's over the box's
    range for it (box_readable_ranges, from the data's mass and CoM).

    Why it matters for the CoM: the data's φ carries m·c and the inertia about the frame's origin together
    (I_O = I_C + m [c]ₓᵀ[c]ₓ) and a short motion correlates them, so the box's posterior moves and narrows m·c by the
    regression on the moments. Where the data resolve none of them, the moments' posterior is the flat prior's shape
    over the box (Σ_ii ≥ 0 cuts a likelihood far wider than a compact part's moments, and the room a large moment
    leaves for products of inertia pulls them up), and what it does to the CoM is that shape's, not knowledge:
    measured with exactly Gaussian data about the truth (bench/priors.py's Panda, each run's covariance) the box's
    CoM 2σ coverage was 0.79 and its mean 1.4σ off in x, where the data's own was 0.94."""
    moments = [4, 7, 9]
    std = np.asarray(data_std, dtype=float)[moments]
    if not np.all(np.isfinite(std)):
        return False
    low, high = box_readable_ranges(est.phi, np.asarray(est.covariance, dtype=float), lo, hi)
    flat = (high - low)[moments] / math.sqrt(12.0)
    return bool(np.any(std < RESOLVED_MOMENT_FRACTION * flat))


def _with_data_mass_and_com(mean: np.ndarray, cov: np.ndarray, data_mean: np.ndarray,
                            data_cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The box posterior (mean, cov of φ) with its mass and CoM given back the data's (`data_mean`, `data_cov`: φ's
    first four entries, m and m·c), its inertia about the CoM kept: the box bounds the inertia about the CoM (Σ_ii ∈
    [0, m (c_i − lo_i)(hi_i − c_i)]), so that is what stays. In readable coordinates r = (m, c, I_C) to first order
    (readable_jacobian, as propagated_std): the linear map r_A ↦ r_d + L_d L_b⁻¹ (r_A − r_b) of the posterior (L the
    Cholesky factors of the data's and the box's covariance of (m, c)), so the joint covariance stays one (positive
    semidefinite) and keeps the box's correlations' shape; then back to φ at the new mean."""
    jac_b = readable_jacobian(mean)
    r = readable_vector(mean)
    rcov = jac_b @ cov @ jac_b.T
    data_phi = np.array(mean, dtype=float)
    data_phi[:4] = data_mean
    jac_d = readable_jacobian(data_phi)[:4, :4]
    r[:4] = readable_vector(data_phi)[:4]
    lb = np.linalg.cholesky(0.5 * (rcov[:4, :4] + rcov[:4, :4].T))
    ld = np.linalg.cholesky(0.5 * (jac_d @ data_cov @ jac_d.T + (jac_d @ data_cov @ jac_d.T).T))
    M = np.eye(10)
    M[:4, :4] = ld @ np.linalg.inv(lb)
    rcov = M @ rcov @ M.T
    inertia = np.zeros((3, 3))
    for value, key in zip(r[4:], INERTIA_KEYS):
        i, j = _INERTIA_CELL[key]
        inertia[i, j] = inertia[j, i] = value
    out_mean = from_mass_com_inertia(float(r[0]), r[1:4], inertia)
    back = np.linalg.inv(readable_jacobian(out_mean))
    out_cov = back @ rcov @ back.T
    return out_mean, 0.5 * (out_cov + out_cov.T)


def known_mass_disagreement(prior: PayloadPrior, est: PayloadEstimate) -> float:
    """R = |m̂ − M| / √(σ_m̂² + S²): the data's mass against the weighed one in their combined σ (NaN: no mass)."""
    if prior.known_mass is None or not est.identifiable[0] or not np.isfinite(est.covariance[0, 0]):
        return float("nan")
    combined = math.sqrt(max(float(est.covariance[0, 0]), 0.0) + prior.known_mass_std**2)  # type: ignore[operator]
    return abs(est.mass - prior.known_mass) / combined


def weighed_mass_pull(prior: PayloadPrior, est: PayloadEstimate) -> str:
    """Why the posterior rests on the weighed mass rather than the motion ('' when it does not): conditioning on the
    known mass M ± S moves the data's mass m̂ ± σ by (M − m̂) σ² / (σ² + S²), and beyond KNOWN_MASS_PULL_DATA_SIGMA of
    the data's own σ (short of the contradiction's 3 combined σ) the weighed mass disagrees with the motion.

    Where S is near σ or below it the posterior follows the weighed mass whatever it is, so the Birge widening
    (_covering_the_disagreement: σ × R, about R S) cannot cover a weighed mass wrong by more than the data resolve: one
    2 % off with S = 0.005 kg against data σ 0.02 kg (16 of its own σ, 4 of the data's) was ok 5.5-7.5σ off on 3 of 8
    draws (R 2.1-2.9). The prior stays applied (if it is right, its numbers are the better ones) and the estimate is
    suspect with the reason. A right weighed mass (off by its own S at random) is called this with probability
    2Φ(−2 √(σ² + S²) / σ): 4.6 % at most (S ≪ σ), 0.5 % at S = σ, none at S above 1.12 σ (the contradiction comes
    first); one exactly right 2Φ(−2 (σ² + S²) / σ²)."""
    if prior.known_mass is None or not est.identifiable[0] or not np.isfinite(est.covariance[0, 0]):
        return ""
    var = max(float(est.covariance[0, 0]), 0.0)
    gap = prior.known_mass - est.mass
    pull = abs(gap) * var / (var + prior.known_mass_std**2)  # type: ignore[operator]
    if not pull > KNOWN_MASS_PULL_DATA_SIGMA * math.sqrt(var):
        return ""
    return (f"the weighed mass disagrees with the motion: the known mass {prior.known_mass:g} ± "
            f"{prior.known_mass_std:.2g} kg moves the data's {est.mass:.4g} ± {math.sqrt(var):.2g} kg by "
            f"{math.copysign(pull, gap):+.2g} kg, {pull / math.sqrt(var):.1f} of the motion's own σ (limit "
            f"{KNOWN_MASS_PULL_DATA_SIGMA:g}): the estimate rests on the weighed mass, which the motion does not "
            "confirm (check what was weighed against what is mounted, and the scale)")


def _covering_the_disagreement(post: np.ndarray, est: PayloadEstimate, prior: PayloadPrior, idx: np.ndarray
                               ) -> np.ndarray:
    """The posterior covariance `post` (of φ's entries `idx`, mass first) with its mass direction widened by R²
    when the data's and the weighed mass disagree beyond their combined σ (R > 1): the Birge ratio (Birge 1932; the
    Particle Data Group's scale factor for measurements that disagree), which says that at least one of the two
    σ is too small, not which. The mean stays; the rest of φ keeps its spread given the mass (the widening is along
    the posterior's regression of φ on m). Where they agree (R ≤ 1) nothing changes. Why: a weighed mass 2 % off
    with the default σ disagreed by 1.9σ (not contradicted) and the posterior was 3.4σ off, ok; widening the prior
    by the disagreement itself instead moved the 90th-percentile σ where they agree from 0.005 to 0.078 kg."""
    r = known_mass_disagreement(prior, est)
    if not (np.isfinite(r) and r > 1.0) or idx.size == 0 or idx[0] != 0 or not post[0, 0] > 0:
        return post
    g = post[:, 0] / post[0, 0]
    return post + (r * r - 1.0) * post[0, 0] * np.outer(g, g)


def inertia_not_identified(identifiable: np.ndarray) -> bool:
    """Whether φ's mass and first moments are identified and none of its six inertia entries (the payload monitor's
    re-estimates, PayloadState.to_estimate: a point mass with no covariance on the inertia)."""
    ok = np.asarray(identifiable, dtype=bool)
    return bool(ok[:4].all() and not ok[4:].any())


def _nearest_in_box(phi: np.ndarray, cov: np.ndarray, ok: np.ndarray, prior: PayloadPrior
                    ) -> tuple[np.ndarray, bool, float]:
    """consistency.project_feasible with the box's constraints: (φ of the nearest body in the box in the data's
    metric, whether φ is one, the Mahalanobis distance). Where the inertia is not identified and φ's CoM lies in the
    box with a positive mass, φ is its own answer at distance 0 (a point mass there, completed by any inertia the box
    allows, is a body in it), without the conic solver's 25-30 ms a monitor re-estimate would otherwise spend on it."""
    from payload_id_core.dynamics.consistency import MIN_MASS, project_feasible  # noqa: PLC0415 - cvxpy

    phi = np.asarray(phi, dtype=float)
    if inertia_not_identified(ok) and phi[0] >= MIN_MASS and np.all(phi[1:4] >= prior.lo * phi[0]) \
            and np.all(phi[1:4] <= prior.hi * phi[0]):
        return phi.copy(), True, 0.0
    return project_feasible(phi, cov, ok, extra_constraints=box_constraints(prior.lo, prior.hi))


def mass_and_com_in_box(phi: np.ndarray, cov4: np.ndarray, lo: np.ndarray, hi: np.ndarray, nearest: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Where the inertia is not identified: the data's Gaussian on (m, h) (mean φ[:4], covariance `cov4`) restricted
    to the bodies whose CoM lies in the box (com_box: exact for a body whose mass lies in it), as φ (10,) with the
    inertia about the CoM kept as it was (not identified: never one the box made up), its covariance (NaN on the
    inertia), the effective sample count and each of (m, h)'s split R̂. `nearest`: φ of the nearest body in the box
    (the hit-and-run's chains, where they are needed, start between it and the box's centre)."""
    m_near = max(float(nearest[0]), 1e-9)
    centre = np.r_[m_near, m_near * 0.5 * (lo + hi)]
    start = 0.9 * np.asarray(nearest[:4], dtype=float) + 0.1 * centre
    samples = com_box_samples(np.asarray(phi[:4], dtype=float), cov4, lo, hi, start, split_rhat)
    flat = samples.reshape(-1, 4)
    mean, cov = flat.mean(axis=0), np.cov(flat.T)
    # The inertia about the CoM kept: φ's about the origin less the old (m, h)'s point-mass part, plus the new one's.
    out = np.array(phi, dtype=float)
    out[4:] += _point_mass_inertia(mean) - _point_mass_inertia(out[:4])
    out[:4] = mean
    out_cov = np.full((10, 10), np.nan)
    out_cov[:4, :4] = cov
    return out, out_cov, _effective_samples(samples), split_rhat(samples)


def _point_mass_inertia(mh: np.ndarray) -> np.ndarray:
    """φ's inertia entries about the origin (pinocchio order Ixx, Ixy, Iyy, Ixz, Iyz, Izz) of a point mass m at
    h/m: (|h|² 1 − h hᵀ) / m (the parallel-axis term, Steiner)."""
    m, h = float(mh[0]), np.asarray(mh[1:4], dtype=float)
    full = (h @ h * np.eye(3) - np.outer(h, h)) / m
    return np.array([full[0, 0], full[0, 1], full[1, 1], full[0, 2], full[1, 2], full[2, 2]])


def box_does_not_bind(phi: np.ndarray, cov: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the Gaussian N(φ, cov) (all ten entries determined) lies inside the box with margin: every linear
    constraint (the slabs, the CoM between the corners) at least BIND_MARGIN_SIGMA σ inside along its normal, and
    every one of BIND_CHECK_DRAWS draws a body in the box (J ⪰ 0 too). Then the box cannot sharpen the estimate."""
    rows = _linear_rows(lo, hi)
    c = 0.5 * (cov + cov.T)
    margin = rows @ phi
    spread = np.sqrt(np.maximum(np.einsum("ki,ij,kj->k", rows, c, rows), 0.0))
    if np.any(margin < BIND_MARGIN_SIGMA * spread) or np.any(margin <= 0):
        return False
    draws = np.random.default_rng(SAMPLING_SEED).multivariate_normal(phi, c, size=BIND_CHECK_DRAWS,
                                                                     check_valid="ignore", method="eigh")
    return bool(in_box(draws, lo, hi).all())


def _untrusted_sampling(sampled: np.ndarray, data: np.ndarray, rhat: float) -> str:
    """Why the sampled covariance of the determined entries cannot be trusted ('' when it can): chains that disagree
    (split R̂), or a spread wider than the data's own in some direction (impossible for a Gaussian restricted to a
    convex set, Brascamp & Lieb 1976: the sampler has not mixed)."""
    if not np.isfinite(rhat) or rhat > MAX_RHAT:
        return f"the sampler's chains disagree (split R̂ {rhat:.3g}, limit {MAX_RHAT:g})"
    w, V = np.linalg.eigh(0.5 * (data + data.T))
    root = V / np.sqrt(np.maximum(w, max(float(w.max()), 1e-300) * 1e-12))
    widening = math.sqrt(max(float(np.linalg.eigvalsh(root.T @ sampled @ root).max()), 0.0))
    if widening > MAX_WIDENING:
        return (f"the sampled σ are {widening:.3g} times the data's in some direction (restricting the data to the "
                f"box can only narrow them; limit {MAX_WIDENING:g}): the sampler has not mixed")
    return ""


def pinned_by_prior(data_std: np.ndarray, prior_std: np.ndarray, bounded: Sequence[str] = ()) -> list[str]:
    """The readable numbers (mass, com x.., inertia ixx..) the prior rather than the motion determined: σ with the
    prior below PINNED_RATIO of the data's own (infinite: the data leave it free), except those the box merely
    bounds (`bounded`, box_bounded_entries). A σ the data give as 0 (noise-free torques) the prior cannot pin: every
    entry used to be listed as pinned then, the box not even applied."""
    return [name for name, d, p in zip(READABLE_NAMES, data_std, prior_std)
            if np.isfinite(p) and p < PINNED_RATIO * d and name not in bounded]


def _has_spread(cov: np.ndarray, ok: np.ndarray) -> bool:
    """Whether φ's covariance gives any determined entry (`ok`) a positive finite variance."""
    var = np.diag(np.asarray(cov, dtype=float))[np.asarray(ok, dtype=bool)]
    return bool(np.any(np.isfinite(var) & (var > 0)))


def box_readable_ranges(mean: np.ndarray, cov: np.ndarray, lo: np.ndarray,
                        hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(10,) low and high ends of [mass, CoM, inertia about the CoM] over the bodies in the box whose mass and CoM
    are plausible under N(mean, cov) (RANGE_DRAWS draws of m and m·c, the CoM clipped to the box; the RANGE_QUANTILE
    outermost ends). Exact per entry for a body in a box with mass m and CoM c, d_lo = c − lo, d_hi = hi − c:
    Σ_ii = ∫ (x_i − c_i)² dm ∈ [0, m d_lo,i d_hi,i] (Bhatia & Davis 2000: a variance on an interval; the mass at the
    two faces attains it), so I_xx = Σ_yy + Σ_zz ∈ [0, m (d_lo,y d_hi,y + d_lo,z d_hi,z)] (mass at the corners
    attains every axis at once), and −I_xy = Σ_xy ∈ [−m min(d_lo,x d_lo,y, d_hi,x d_hi,y), m min(d_lo,x d_hi,y,
    d_hi,x d_lo,y)] (the corner products of _linear_rows). The mass: unbounded by a box."""
    rng = np.random.default_rng(SAMPLING_SEED)
    c2 = 0.5 * (cov[:4, :4] + cov[:4, :4].T)
    draws = rng.multivariate_normal(mean[:4], np.where(np.isfinite(c2), c2, 0.0), size=RANGE_DRAWS,
                                    check_valid="ignore", method="eigh")
    m = np.maximum(draws[:, 0], 1e-9)
    c = np.clip(draws[:, 1:4] / m[:, None], lo, hi)
    dl, dh = c - lo, hi - c
    var_hi = m[:, None] * dl * dh
    low = np.full((RANGE_DRAWS, 10), -np.inf)
    high = np.full((RANGE_DRAWS, 10), np.inf)
    low[:, 1:4], high[:, 1:4] = lo, hi
    # Readable order ixx, ixy, ixz, iyy, iyz, izz.
    for col, (a, b) in {4: (1, 2), 7: (0, 2), 9: (0, 1)}.items():
        low[:, col], high[:, col] = 0.0, var_hi[:, a] + var_hi[:, b]
    for col, (i, j) in {5: (0, 1), 6: (0, 2), 8: (1, 2)}.items():
        low[:, col] = -m * np.minimum(dl[:, i] * dh[:, j], dh[:, i] * dl[:, j])
        high[:, col] = m * np.minimum(dl[:, i] * dl[:, j], dh[:, i] * dh[:, j])
    ends_low, ends_high = np.full(10, -np.inf), np.full(10, np.inf)
    ends_low[1:] = np.quantile(low[:, 1:], RANGE_QUANTILE, axis=0)
    ends_high[1:] = np.quantile(high[:, 1:], 1.0 - RANGE_QUANTILE, axis=0)
    return ends_low, ends_high


def box_bounded_entries(est: PayloadEstimate, data_std: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                        entries: Sequence[int] = range(1, 10)) -> tuple[list[str], np.ndarray]:
    """The CoM and inertia entries the box merely bounds, and φ's covariance widened so that their 2σ reach the far
    end of what the box allows.

    Where the motion's own σ of an entry is at least that of a flat distribution over the box's range for it
    (BOUNDED_DATA_FRACTION: the data leave it free, or a 20 cm box around a 1.5 kg part on a 1.5 s Panda motion), the
    restricted Gaussian's spread is the flat prior's, not a confidence interval: a flat prior on φ holds most bodies
    where the off-diagonal moments have most room (their range grows with √(Σ_ii Σ_jj)), so it pulls the principal
    moments up, and a compact part's moments sat 3–3.6 of those σ below the mean (bench/priors.py, Panda: inertia 2σ
    coverage 0.5; UR10 diagonal moments 1.5–2.6σ). The box bounds such an entry; its σ then reaches the farther end
    of the range (box_readable_ranges) at 2σ, and never beyond the data's own σ. `entries`: the readable entries
    judged (1-3 the CoM: where the inertia is not identified the box bounds nothing else)."""
    value, std = readable_vector(est.phi), est.propagated_std()
    low, high = box_readable_ranges(est.phi, est.covariance, lo, hi)
    cov = np.array(est.covariance, dtype=float)
    bounded = []
    for k in entries:
        width = high[k] - low[k]
        if not (np.isfinite(width) and data_std[k] >= BOUNDED_DATA_FRACTION * width):
            continue
        bounded.append(READABLE_NAMES[k])
        reach = min(0.5 * max(value[k] - low[k], high[k] - value[k]), data_std[k])
        if reach > std[k]:
            # The inertia about the CoM moves one for one with φ's entry about the origin, the CoM with m·c / m.
            scale = est.phi[0] ** 2 if k < 4 else 1.0
            j = _PHI_OF_READABLE[k]
            cov[j, j] += scale * (reach**2 - std[k] ** 2)
    return bounded, cov


def inertia_reaching_the_cut_ends(est: PayloadEstimate, data_value: np.ndarray, data_std: np.ndarray,
                                  lo: np.ndarray, hi: np.ndarray, skip: Sequence[str] = ()
                                  ) -> tuple[list[str], np.ndarray]:
    """Where the motion resolves no principal moment (moments_resolved false), the principal moments (ixx, iyy, izz
    about the CoM) whose range the box cuts inside the data's 2σ (`data_value` ± 2 `data_std`, readable order, the
    data's own), and φ's covariance widened so that the posterior's 2σ reaches each end of the box's range
    (box_readable_ranges) that cuts them, never beyond the data's own σ; entries in `skip` (already bounded) are left.

    Why: there the restricted Gaussian's tail on the cut side is the flat prior's shape, not the data's. Flat in φ
    holds, for each diagonal of Σ (the second moments about the CoM), a volume ∝ Σ_xx Σ_yy Σ_zz of products of
    inertia, so the moments' posterior mean is pulled up from a compact part's moments (bench/priors.py's Panda:
    +2.1σ, 2σ coverage of the inertia 0.70 with the moments' own 0.4); the end it is pulled away from (I_ii ≥ 0) is
    where the truth can lie, and σ must reach it. The products of inertia have no such pull (their range is about
    symmetric and they were covered: 30 of 30 within 2σ on that bench) and keep the box's σ; a constraint that does
    not cut the data's 2σ leaves the data to say where the moment is, and its σ unchanged."""
    value, std = readable_vector(est.phi), est.propagated_std()
    low, high = box_readable_ranges(est.phi, est.covariance, lo, hi)
    cov = np.array(est.covariance, dtype=float)
    cut = []
    for k in (4, 7, 9):     # ixx, iyy, izz in readable order
        if READABLE_NAMES[k] in skip:
            continue
        ends = [value[k] - low[k]] if data_value[k] - 2.0 * data_std[k] < low[k] else []
        ends += [high[k] - value[k]] if data_value[k] + 2.0 * data_std[k] > high[k] else []
        if not ends:
            continue
        cut.append(READABLE_NAMES[k])
        reach = min(0.5 * max(ends), data_std[k])
        if reach > std[k]:
            j = _PHI_OF_READABLE[k]     # the inertia about the CoM moves one for one with φ's entry about the origin
            cov[j, j] += reach**2 - std[k] ** 2
    return cut, cov


def com_reaching_the_mode(est: PayloadEstimate, mode: np.ndarray, data_std: np.ndarray) -> np.ndarray:
    """φ's covariance with each CoM component's variance grown by the square of its posterior mean's distance from the
    posterior's mode (`mode`, as moments_reaching_the_mode) where that distance exceeds the component's σ, never
    beyond the data's own σ (`data_std`, readable order).

    Why: a prior flat in φ gives a CoM at distance d from a face of the box the prior volume d³ (the room the box
    leaves Σ_ii, Σ_ij and Σ_ik about it shrinks with d: box_fractions.log_volume), so near a face the mean is pushed
    into the box by that volume, not by the data, while restricting narrows σ. The synthetic 4 kg slab on the +x face
    with the moments resolved (inertia σ 0.002 kg·m², bench/box_face.py): CoM x −2.6σ off the face's truth, CoM 2σ
    coverage 0.67, the data's own 0.87. A mean within its own σ of the mode is left: there the interval reaches the
    data's best body in the box already (on bench/priors.py's UR10 the pull is about 0.03 mm against σ near 1 mm)."""
    value, std = readable_vector(est.phi), est.propagated_std()
    mode_value = readable_vector(np.asarray(mode, dtype=float))
    cov = np.array(est.covariance, dtype=float)
    for k in (1, 2, 3):
        pull = value[k] - mode_value[k]
        if not (np.isfinite(pull) and abs(pull) > std[k]):
            continue
        room = data_std[k] ** 2 - std[k] ** 2 if np.isfinite(data_std[k]) else np.inf
        # The CoM moves with m·c / m: its variance with φ's m·c entry over m².
        cov[k, k] += est.phi[0] ** 2 * max(min(pull**2, room), 0.0)
    return cov


def moments_reaching_the_mode(est: PayloadEstimate, mode: np.ndarray, data_std: np.ndarray,
                              skip: Sequence[str] = ()) -> np.ndarray:
    """φ's covariance with each principal moment's (ixx, iyy, izz about the CoM) variance grown by the square of its
    posterior mean's distance from the posterior's mode (`mode`, φ of the nearest body in the box in the data's
    metric), never beyond the data's own σ (`data_std`, readable order); the moments in `skip` (already bounded)
    left.

    Why: the box's posterior is the data's Gaussian times a prior flat in φ, and flat in φ holds, for each diagonal
    of Σ (the second moments about the CoM), a volume ∝ Σ_xx Σ_yy Σ_zz of products of inertia: the mean is pulled
    up from a compact part's moments by that volume, not by the data (whose likelihood peaks at the mode), while
    restricting narrows σ. Where the motion resolves the moments the pull is a fraction of the data's σ, but the
    narrowed σ no longer covers it: bench/priors.py's Panda on config/panda.yaml's 10 s panda_payload, difference-rls,
    the data's moments +0.25 / +0.78 / +0.21σ (covered 1.00), with the box +1.56 / +1.83 / +1.05σ (0.81). The
    mean − mode distance is that pull measured on the run itself: σ grows by it where the prior moved the mean,
    and not where it did not (a box that binds only on other entries leaves the mean at the mode). Not beyond the
    data's own σ: the box may not leave a moment less determined than the motion alone (the 10 s Panda's inertia,
    determined on every seed without the box, was on 5 of 10 with it and the uncapped pull)."""
    value, std = readable_vector(est.phi), est.propagated_std()
    mode_value = readable_vector(np.asarray(mode, dtype=float))
    cov = np.array(est.covariance, dtype=float)
    for k in (4, 7, 9):     # ixx, iyy, izz in readable order
        if READABLE_NAMES[k] in skip or not np.isfinite(mode_value[k]):
            continue
        room = data_std[k] ** 2 - std[k] ** 2 if np.isfinite(data_std[k]) else np.inf
        j = _PHI_OF_READABLE[k]     # the inertia about the CoM moves one for one with φ's entry about the origin
        cov[j, j] += max(min((value[k] - mode_value[k]) ** 2, room), 0.0)
    return cov


__all__ = ["BOX_CONTRADICTION_DISTANCE", "KNOWN_MASS_REL_STD_DEFAULT", "PRIOR_CONTRADICTION_SIGMA", "PayloadPrior",
           "apply_prior", "box_constraints", "box_does_not_bind", "box_parameter_ranges", "in_box",
           "known_mass_disagreement", "pinned_by_prior", "prior_contradictions", "rated_payload",
           "weighed_mass_pull"]
