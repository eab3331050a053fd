"""Did the loaded run's friction offsets move from robot.yaml's? A Hausman-type witness (issue 29, Bad input).

khalil-1, khalil-2, direct-rls and gaz-dtau (without an unloaded run) keep robot.yaml's constant friction offsets
B_j: a free offset change ΔB_j is nearly collinear with the payload's mean gravity torque over a periodic motion
(docs/design.md "The methods", the friction offsets), so they leave it out. Real drives' offsets do move between
days (the UR10e's unloaded recordings: −0.29..+0.34 N·m per joint, no time or load pattern), and a loaded run whose
offsets moved is then read as payload: every offset 0.3 N·m off in the sign of the payload's mean torque (Panda,
1.5 kg) gave those four methods +4.0..+4.1 % at σ 0.19-0.23 %, converged and ok.

The witness does not change the estimate (h69's per-run switch between the two fits made it jump and broke
test_difference_rls_weights). It fits the loaded torques' residual against robot.yaml, r = τ − Y θ_a, twice by
per-joint weighted least squares (Khalil 2007 eq. 23 with the friction change, the constrained fit every one of
those methods is, h53):

    fixed:  r ≈ W_L φ + F Δφ_f                 (robot.yaml's offsets: the methods' assumption)
    free:   r ≈ W_L φ + F Δφ_f + Σ_j e_j ΔB_j  (a constant offset change per joint)

and compares their payloads, d = φ_fixed − φ_free on the mass and first moments (Hausman 1978, Econometrica 46,
eq. 2.3: under "the offsets did not move" the fixed fit is efficient and d has covariance V_free − V_fixed; under
"they moved" only the free fit is consistent and d is the fixed fit's bias). d is linear in the fixed fit's residual
e, d = D e, so its covariance is computed from D directly: the residuals' serially correlated (Newey–West, Bartlett,
Andrews' bandwidth: robot_id/serial_correlation.py) long-run covariance of D's scores, floored at the white-noise
V_free − V_fixed, plus robot.yaml's parameter covariance carried through D (θ̂_a's error enters r and d alike).
The estimate is flagged suspect when χ² = dᵀ V⁺ d exceeds its 99.9 % quantile on rank(V) degrees of freedom and
the shift is material: the mass or a CoM axis moved by more than the estimate's own σ for it (a significant shift
the estimate's σ covers is no confident wrong answer). Or by the materiality rule (payload/against_robot_fit.py):
the offsets' own Wald χ² (the free fit's ΔB̂, its Newey–West covariance plus robot.yaml's C_a through the fit)
beyond its plain 99.9 % level and the shift beyond 3σ of the estimate's own σ: the contrast's σ is the free fit's,
which can be several times the estimate's, and hides a shift the estimate's σ does not cover.

difference-rls frees the offsets; where robot.yaml records their drift between runs (robot_id/offset_spread.py) it
holds their change by that Gaussian prior, and is judged the same way with the prior fit in place of the fixed one
(offset_drift_witness's prior_std): an offset that moved beyond the recorded drift is flagged, not written.

Power. Where the offsets are nearly collinear with the payload (a short or one-sided motion), V is large and the
test sees only large moves; the witness says how large (`OffsetWitness.mass_std`: the mass shift one σ of d is),
in its note, on every estimate it judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import (
    PLAIN_LEVEL,
    RobotResidual,
    chi2_quantile,
    chi2_stat,
    com_shift,
    long_run_cov,
    material,
    materially_wrong,
    payload_moves,
    pinv_map,
    residual_weights,
    robot_residual,
)
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import Signals

# The methods that keep robot.yaml's offsets and fit the loaded run against robot.yaml alone (gaz-dtau only
# without an unloaded run: with one, the offsets come from that run). difference-rls frees them; khalil-3, khalil-4
# subtract or fit an unloaded run of the same session; gaz-static has no motion to tell offsets from friction.
OFFSET_KEEPING = frozenset({PayloadMethod.KHALIL_1, PayloadMethod.KHALIL_2, PayloadMethod.DIRECT_RLS,
                            PayloadMethod.GAZ_DTAU})
LEVEL = 0.999          # χ² quantile beyond which d is not noise
OFFSET_SIGMAS = 3.0    # a joint is named as moved when its ΔB̂_j is beyond this many of its σ


class PayloadContrast:
    """A Hausman contrast between a payload fitted with robot.yaml's assumption (fixed) and with it free (Hausman
    1978 eq. 2.3): `d` = φ_fixed − φ_free on [m, m c] (kg, kg·m), `cov` its covariance, `chi2` on `dof`, `mass` the
    free fit's. Shared by the offsets' witness here and the gear friction's (gear_drift.GearWitness)."""

    d: np.ndarray
    cov: np.ndarray
    chi2: float
    dof: int
    mass: float

    @property
    def limit(self) -> float:
        from scipy.stats import chi2  # noqa: PLC0415 - half a second of start-up that difference-rls never uses

        return float(chi2.ppf(LEVEL, self.dof)) if self.dof > 0 else float("inf")

    @property
    def beyond_noise(self) -> bool:
        return bool(self.dof > 0 and np.isfinite(self.chi2) and self.chi2 > self.limit)

    @property
    def mass_std(self) -> float:
        """σ of the mass shift: how large a shift the test can see (power), kg."""
        return float(np.sqrt(max(self.cov[0, 0], 0.0)))

    def com_shift(self, com: np.ndarray) -> np.ndarray:
        """(3,) m: the CoM the fixed fit gives minus the free fit's, to first order about `com`."""
        return com_shift(self.d, self.mass, com)

    def material(self, est: PayloadEstimate) -> bool:
        """The shift beyond the estimate's own σ in the mass or a CoM axis (propagated_std: the determination
        judgement comes later)."""
        return material(self.d, self.mass, est)


@dataclass(frozen=True)
class OffsetWitness(PayloadContrast):
    """The fixed fit's payload against the free one's (module docstring). `d` = φ_fixed − φ_free on [m, m c]
    (kg, kg·m), `cov` its covariance, `offsets` the free fit's ΔB̂_j (N·m) with `offsets_std`; `chi2` on `dof`;
    `offsets_chi2` on `offsets_dof` the offsets' own Wald statistic (the free fit's ΔB̂ against 0, robot.yaml's C_a
    included: its offsets are only that sure), for the materiality rule (against_robot_fit.materially_wrong)."""

    d: np.ndarray
    cov: np.ndarray
    chi2: float
    dof: int
    offsets: np.ndarray
    offsets_std: np.ndarray
    mass: float                    # the free fit's mass (kg), for the shift's relative size and its CoM
    offsets_chi2: float = float("nan")
    offsets_dof: int = 0
    # Per offset: the prior's std (N·m) the method holds the offsets' change with (robot.yaml's measured drift);
    # None: the method keeps robot.yaml's offsets.
    prior_std: np.ndarray | None = None

    def moved_joints(self) -> np.ndarray:
        """Indices of the joints whose ΔB̂_j is beyond OFFSET_SIGMAS of its σ (the largest one if none is)."""
        z = np.abs(self.offsets) / np.maximum(self.offsets_std, 1e-12)
        named = np.flatnonzero(z > OFFSET_SIGMAS)
        return named if named.size else np.array([int(np.argmax(z))])

    def flags(self, est: PayloadEstimate) -> bool:
        """The contrast beyond its limit and the shift beyond the estimate's σ; or (the materiality rule) the
        offsets themselves beyond their plain χ² level and the shift beyond MATERIAL_SIGMAS of the estimate's σ,
        where the contrast's σ (the free fit's) hides a shift the estimate's σ does not cover."""
        return bool((self.beyond_noise and self.material(est))
                    or materially_wrong(self.offsets_chi2, self.offsets_dof, self.d, self.mass, est))


def offset_drift_witness(model: RobotModel, robot: RobotIdentification, sig: Signals, frame: str,
                         phi: np.ndarray, load_friction: bool, prior_std: np.ndarray | None = None,
                         residual: RobotResidual | None = None) -> OffsetWitness | None:
    """The witness on the conditioned signals `sig` a method fitted (torques already gear-corrected as robot.yaml's);
    `phi` the method's payload (only for the load-dependent friction columns, as the methods build them). None when
    robot.yaml's friction model has no constant offsets.

    `prior_std` (n,) N·m: the method holds the offsets' change by a Gaussian prior (difference-rls with robot.yaml's
    measured offset drift) instead of fixing it. The "fixed" fit is then the one with the prior as ridge rows, and
    under "the offsets moved within the prior" d = D e + (M_prior A_free − 1) ΔB, so cov(d) gains that bias term
    with ΔB ~ N(0, diag(prior_std²)): an offset beyond the recorded drift is seen, one within it is not flagged.
    `residual`: robot_residual on `sig`, when the caller has it (JudgedRun.residual)."""
    res = residual if residual is not None else robot_residual(model, robot, sig, frame)
    offset_cols = np.flatnonzero(res.offsets)
    if not offset_cols.size:
        return None
    r = res.r
    fixed = [res.w_l, res.fric[..., np.flatnonzero(res.changeable)]]
    if load_friction:
        fixed.append(res.load_friction(phi))
    A_fixed = np.concatenate(fixed, axis=-1)
    A_free = np.concatenate([A_fixed, res.fric[..., offset_cols]], axis=-1)
    N, n, k_free = A_free.shape
    k_fixed = A_fixed.shape[-1]
    # Per-joint weights from the free fit's residual (consistent whether or not the offsets moved).
    w = residual_weights(A_free, r)
    Au = A_free.reshape(N * n, k_free) * w[:, None]
    y = r.reshape(-1) * w
    if prior_std is None:
        Af = A_fixed.reshape(N * n, k_fixed) * w[:, None]
        return _witness(res, Au, y, w, k_fixed, Af, pinv_map(Af))
    s = _offset_column_std(res.robot, offset_cols, np.asarray(prior_std, dtype=float))
    # The offsets' prior, per offset column, as ridge rows with target 0: x_prior = Mp y.
    ridge = np.zeros((len(offset_cols), k_free))
    ridge[np.arange(len(offset_cols)), k_fixed + np.arange(len(offset_cols))] = 1.0 / s
    return _witness(res, Au, y, w, k_fixed, Au, pinv_map(np.vstack([Au, ridge]))[:, :N * n], s)


def _offset_column_std(robot: RobotIdentification, offset_cols: np.ndarray, prior_std: np.ndarray) -> np.ndarray:
    """(offset columns,) the per-joint prior std `prior_std` (robot.joint_names order) on each offset column."""
    names = list(robot.friction.param_names)
    joint_of = [names[c].partition("_")[2] for c in offset_cols]
    return np.array([prior_std[list(robot.joint_names).index(j)] for j in joint_of], dtype=float)


def _witness(res: RobotResidual, Au: np.ndarray, y: np.ndarray, w: np.ndarray, k_fixed: int, A_held: np.ndarray,
             M_held: np.ndarray, prior_std: np.ndarray | None = None) -> OffsetWitness:
    """The witness from the weighted free columns `Au` (N·n, k_free: the fixed ones, then the offsets), the weighted
    residual `y` and its weights `w`, and the fit with robot.yaml's assumption: x_held = M_held y on the weighted
    columns A_held, either the fixed fit (the fixed columns, their least-squares map) or, with `prior_std` (per
    offset column), the prior fit (every column, the ridge rows' map; the offsets' prior pull is then in cov(d))."""
    N, n = res.r.shape
    Mu = pinv_map(Au)                              # x = M y
    x_held, xu = M_held @ y, Mu @ y
    D = M_held[:4] - Mu[:4]                        # d = D y = D e under "not moved" (D A_held = 0 for the fixed fit)
    d = D @ y
    cov = long_run_cov(D, (y - A_held @ x_held).reshape(N, n), A_held.shape[1])
    if prior_std is not None:
        bias = (M_held @ Au)[:4, k_fixed:]          # d's response to the offsets' true change ΔB (Mu Au = 1 cancels)
        cov = cov + (bias * prior_std**2) @ bias.T
    # θ̂_a's error is in r (and so in d) whatever the offsets did: D Y_a C_a (D Y_a)ᵀ.
    cov = cov + res.theta_cov_through(D, w)
    cov = 0.5 * (cov + cov.T)
    stat, dof = chi2_stat(d, cov)
    # The free fit's offsets and their long-run σ, for the reason (which joints, by how much); with robot.yaml's C_a
    # for their own Wald statistic (robot.yaml's offsets were identified to that σ: "not moved" is ΔB = 0 only to it).
    Mb = Mu[k_fixed:]
    b_cov = long_run_cov(Mb, (y - Au @ xu).reshape(N, n), Au.shape[1])
    b_cov_a = b_cov + res.theta_cov_through(Mb, w)
    b_stat, b_dof = chi2_stat(xu[k_fixed:], 0.5 * (b_cov_a + b_cov_a.T))
    return OffsetWitness(d, cov, stat, dof, xu[k_fixed:], np.sqrt(np.maximum(np.diag(b_cov), 0.0)), float(xu[0]),
                         b_stat, b_dof, prior_std=prior_std)


def offset_drift_reason(witness: OffsetWitness, est: PayloadEstimate, what: str, joint_names) -> str:
    """A sentence when the loaded run's offsets moved beyond the noise and the payload took it (empty otherwise):
    the joints, by how much, what it did to the payload, and the fix."""
    if not witness.flags(est):
        return ""
    moved = ", ".join(f"{joint_names[j]} {witness.offsets[j]:+.2f} ± {witness.offsets_std[j]:.2f} N·m"
                      for j in witness.moved_joints())
    if witness.prior_std is not None:
        return (f"{what}'s constant friction offsets moved beyond the drift robot.yaml recorded between runs ("
                f"{moved}; recorded prior std "
                + ", ".join(f"{joint_names[j]} {witness.prior_std[j]:.2f}" for j in witness.moved_joints())
                + f" N·m), and the payload took it: {payload_moves(witness.d, witness.mass, est, 'them')} (χ² "
                f"{witness.chi2:.1f} on "
                f"{witness.dof}, limit {witness.limit:.1f}); re-identify the robot (identify-robot) on a run recorded "
                "now, or measure the drift again (identify-robot --drift-bag/--drift-csv-ur on recent unloaded runs)")
    return (f"{what}'s constant friction offsets differ from robot.yaml's ({moved}; a drive gain that changed on "
            "those joints reads the same), and the payload took it: "
            f"{payload_moves(witness.d, witness.mass, est, 'them')} (χ² {witness.chi2:.1f} on {witness.dof}, limit "
            f"{witness.limit:.1f}); "
            "use difference-rls (its offsets are free), or re-identify the robot (identify-robot) on a run recorded "
            "now")


def offset_drift_note(witness: OffsetWitness) -> Note:
    """What the witness saw and what it can see (its power), on every estimate it judged."""
    mass = witness.mass if witness.mass > 0 else float("nan")
    return Note(NoteCode.PAYLOAD_OFFSET_DRIFT,
                f"friction offsets against robot.yaml's: the fit with them free moves the mass by "
                f"{-witness.d[0]:+.4g} kg ({-100 * witness.d[0] / mass:+.2f} %), χ² {witness.chi2:.1f} on "
                f"{witness.dof} (limit {witness.limit:.1f}); this test sees a mass shift of about "
                f"{3 * 100 * witness.mass_std / mass:.2g} % or more (3σ of the shift); the offsets themselves "
                f"χ² {witness.offsets_chi2:.1f} on {witness.offsets_dof} (plain limit "
                f"{chi2_quantile(PLAIN_LEVEL, witness.offsets_dof):.1f})")
