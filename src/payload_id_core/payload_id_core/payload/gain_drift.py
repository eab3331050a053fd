"""Did one joint's drive gain drift from robot.yaml's? A per-joint Hausman-type witness (issue 29 item 5, Bad input).

Every method that fits joint efforts reads them through robot.yaml's drive gains. One drive's gain drifted (a warmer
drive, a gain given by hand) scales that joint's whole effort, the arm's and the payload's; the common-factor
witnesses of payload/effort_drift.py read it as a share of the whole arm, and high as the real load friction they
excuse: UR10 shoulder_lift × 1.02 gave khalil-1 +4.6 % at 7.3σ, converged and ok (test_redteam_stop40).

The witness does not change the estimate. For each joint j it fits the loaded run's residual against robot.yaml,
r = τ − Y θ_a, twice by per-joint weighted least squares (the constrained fit of the methods, as
payload/offset_drift.py does, Khalil 2007 eq. 23 with the friction change):

    fixed:  r ≈ W_L φ + F Δφ_f                            (robot.yaml's gain on joint j: b_j = 1)
    free:   r ≈ W_L φ + F Δφ_f + (b_j − 1) e_j τ̂_j         (joint j's efforts b_j × its modelled effort)

τ̂_j = (Y θ_a + W_L φ̂)_j the joint's whole modelled effort (robot.yaml's arm with its friction, and the method's
payload): τ_j = b_j τ̂_j linearised about φ̂, exact to first order under "not drifted", which is all a Hausman test
needs. The constant friction offsets are free in both fits, so a moved offset (payload/offset_drift.py's witness)
is not read as a gain; a gain drift's pose-dependent part (gravity, inertia) is what this one sees.

The contrast d = φ_fixed − φ_free on the mass and first moments (Hausman 1978, Econometrica 46, eq. 2.3) is, by
Frisch–Waugh, rank one: d = g_j β̂_j with g_j = (the fixed fit's map of the column)[:4] and β̂_j = b̂_j − 1 =
h_jᵀ e, h_j the column with the fixed fit's columns projected out over its squared norm, e the fixed fit's residual.
So the Hausman χ² on d is β̂_j² / var(β̂_j), and var(β̂_j) is computed as in offset_drift: the Newey–West long-run
variance of h_j's scores (robot_id/serial_correlation.py; never below the white one), plus robot.yaml's C_a carried
through h_j (θ̂_a's error is in r), plus robot.yaml's own σ of that joint's relative gain (identified gains: the real
UR10e's shoulder pan 6.8 %; under "not drifted" b_j is 1 only to that σ; the calibration's, not what --gain-check
runs widened it to: gain_uncertainty.gain_calibration_relative_std). Floor: σ(b̂_j) ≥ MODEL_RESOLUTION (0.5 %,
payload/finish.py), the finest torque error, as a fraction of the joint's effort, to which the project holds
robot.yaml's rigid-body model; a factor inside it is inside the model's resolution. Without it the noise-free
`clean` Panda (gains given, σ 0) read panda_joint6 1.001 ± 0.00028 and every method was suspect (h71's witness).

Jointly (JointFactors, h125): one factor at a time leaves a drift on two joints in each single fit's residual
(shoulder lift and elbow × 1.03, seed 4: the furthest single factor shoulder_pan 0.9741, χ² 9.4, difference-rls
+6.75 % at 17.5σ, ok), so every determined joint's factor is also fitted at once (Frisch–Waugh on the fixed fit's
residual), its covariance by the same terms as each joint's. Flagged by against_robot_fit's materiality rule (χ²
beyond its plain 99.9 % level on its rank, 22.5 on 6, and the factors' payload shift beyond 3σ of the estimate's own
σ) when, in that fit, some factor is beyond the plain level on its own (3.29σ): a drift is on drives, while the
real model's error spreads over every factor at once (the n factors sum n directions of it, which their σ does not
carry). Seed 4: shoulder lift 1.0297, elbow 1.0290 ± 0.0050 (5.9σ, 5.8σ), χ² 132.7, shift −0.278 kg (16.8σ).
The real UR10e without drift with robot.yaml's gear friction (15harm: χ² 26.8 on 6, the shift 18σ of the estimate's,
khalil-1 +1.45 % ± 0.97 %): no factor beyond 2.7σ on its own (shoulder lift 1.0384 ± 0.0159, wrist 3 0.8778 ±
0.0452), not flagged. Measured and not adopted: the χ² alone at 22.5 or 27.0 (that real run flagged), its σ widened
by robot.yaml's measured model error C_me over the run's own payload variance (≤ 19×, only where held-out runs were
given: the gear path has none), and the factors' spread over five stretches of the run (batch means: it held the
real run's shoulder lift and elbow at 1.6 / 2.5 % and raised its χ² to 51.8: their disagreement is consistent along
the motion, the load friction's on that path, not noise). Not Bonferroni-shared with the single joints: an alarm of
its own, at most 0.1 %.

Flagged suspect when, for some joint, χ²_j is beyond its family-wise quantile (the n joints judged together at
LEVEL, Bonferroni: χ²₁ at 1 − (1 − LEVEL)/n; 14.2 for 6 joints, 14.5 for 7) AND the payload's shift is material:
the mass or a CoM axis moves by more than the estimate's own σ. A drift that does not move the payload is not a
wrong answer. Or by the materiality rule (payload/against_robot_fit.py): beyond the plain χ²₁ level (10.8) with a
shift beyond 3σ of the estimate's own σ, an alarm of at most 0.1 % per joint. The reason names the joint, its
factor ± σ, the payload's shift and the fix.

Not caught: a drift common to every joint (that is effort_drift's a and a_f; with one factor per joint the other
joints' free offsets and the payload share it, and together the factors are nearly collinear with the payload and
offsets for a common factor: the Panda's × 0.98 reads χ² 14.6-39.6 on 7, beyond 29.3 on 3 of 5 seeds); a
one-joint drift under about 4 × its σ (2 % at the 0.5 % floor) that moves the payload less than 3σ of the
estimate's.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import (
    MATERIAL_SIGMAS,
    PLAIN_LEVEL,
    RobotResidual,
    chi2_quantile,
    chi2_stat,
    com_shift,
    material,
    materially_wrong,
    payload_moves,
    pinv_map,
    robot_residual,
    shift_sigmas,
)
from payload_id_core.payload.finish import MODEL_RESOLUTION
from payload_id_core.payload.gain_uncertainty import gain_calibration_relative_std
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification, serial_correlation
from payload_id_core.signals.conditioning import Signals

LEVEL = 0.999          # family-wise: the joints together alarm on an honest run at most 1 − LEVEL of the time
JOINT_SIGMAS = 3.0     # in the joint fit, a joint is named when its factor is beyond this many of its σ


@dataclass(frozen=True)
class JointGain:
    """Joint j's factor b̂_j of its whole modelled effort (module docstring), its σ (`std`: the fit's long-run σ,
    robot.yaml's C_a and gain σ, floored at MODEL_RESOLUTION) and the payload shift d_j = φ_fixed − φ_free on [m, m c]
    (kg, kg·m) that the factor makes."""

    joint: str
    b: float
    std: float
    d: np.ndarray

    @property
    def chi2(self) -> float:
        return float(((self.b - 1.0) / self.std) ** 2) if self.std > 0 else float("nan")


@dataclass(frozen=True)
class JointFactors:
    """Every determined joint's factor free together (module docstring, "jointly"): `joints` their names, `b` the
    factors, `cov` their covariance (the same terms as JointGain.std, each
    variance floored at MODEL_RESOLUTION²), `chi2` on `dof` against all factors 1, `d` the payload shift
    φ_fixed − φ_free on [m, m c] and `dmap` (4, m) its map from the factors less 1 (d = dmap (b − 1))."""

    joints: tuple[str, ...]
    b: np.ndarray
    cov: np.ndarray
    chi2: float
    dof: int
    d: np.ndarray
    dmap: np.ndarray | None = None

    @property
    def z(self) -> np.ndarray:
        """Each factor's distance from 1 in its own σ in the joint fit."""
        return np.abs(self.b - 1.0) / np.sqrt(np.maximum(np.diag(self.cov), 1e-300))

    def drives(self) -> list[int]:
        """Positions whose factor is beyond the plain two-sided level on its own (χ²₁ at PLAIN_LEVEL: 3.29σ),
        furthest first: the drives a drift is on."""
        limit = np.sqrt(chi2_quantile(PLAIN_LEVEL, 1))
        return [int(i) for i in np.argsort(-self.z) if self.z[i] > limit]

    def flags(self, mass: float, est: PayloadEstimate) -> bool:
        """against_robot_fit's materiality rule on the joint test (χ² beyond its plain level on `dof`, the factors'
        payload shift beyond MATERIAL_SIGMAS of the estimate's own σ) and a drive to name: some factor beyond the
        plain level on its own (module docstring, "jointly": a drift is on drives, the model's error on every
        direction at once)."""
        return bool(self.drives()) and materially_wrong(self.chi2, self.dof, self.d, mass, est)

    def named(self) -> list[int]:
        """Positions whose factor is beyond JOINT_SIGMAS of its σ in the joint fit (the furthest one if none is)."""
        out = [int(i) for i in np.argsort(-self.z) if self.z[i] > JOINT_SIGMAS]
        return out or [int(np.argmax(self.z))]


@dataclass(frozen=True)
class GainWitness:
    """Every joint's factor against robot.yaml's gain, one at a time (`joints`) and all together (`together`, judged by
    the materiality rule alone: module docstring);
    `mass` the fixed fit's mass (kg)."""

    joints: tuple[JointGain, ...]
    mass: float
    together: JointFactors | None = None

    @property
    def tests(self) -> int:
        """How many tests share the family-wise level: one per joint (the joint fit is judged by the materiality rule,
        an alarm of its own)."""
        return len(self.joints)

    @property
    def limit(self) -> float:
        """The per-joint χ²₁ quantile at which the tests together alarm at 1 − LEVEL (Bonferroni): z² of the
        two-sided normal quantile (no scipy.stats: half a second of start-up, test_speed_paths)."""
        alpha = (1.0 - LEVEL) / max(self.tests, 1)
        return float(NormalDist().inv_cdf(1.0 - alpha / 2.0) ** 2)

    @property
    def largest(self) -> JointGain:
        """The joint whose factor is furthest from 1 in its σ."""
        return max(self.joints, key=lambda j: j.chi2 if np.isfinite(j.chi2) else -1.0)

    def com_shift(self, joint: JointGain, com: np.ndarray) -> np.ndarray:
        """(3,) m: the CoM the fixed fit gives minus the free one's, to first order about `com`."""
        return com_shift(joint.d, self.mass, com)

    def material(self, joint: JointGain, est: PayloadEstimate) -> bool:
        """The joint's shift beyond the estimate's own σ in the mass or a CoM axis."""
        return material(joint.d, self.mass, est)

    def flags(self, joint: JointGain, est: PayloadEstimate) -> bool:
        """Beyond the family-wise limit and material; or (against_robot_fit's materiality rule) beyond the plain
        χ²₁ level and the shift beyond MATERIAL_SIGMAS of the estimate's σ."""
        if not np.isfinite(joint.chi2):
            return False
        return bool((joint.chi2 > self.limit and self.material(joint, est))
                    or materially_wrong(joint.chi2, 1, joint.d, self.mass, est))

    def drifted(self, est: PayloadEstimate) -> tuple[JointGain, ...]:
        """The joints flagged one at a time (`flags`), furthest out first."""
        return tuple(sorted((j for j in self.joints if self.flags(j, est)), key=lambda j: -j.chi2))

    def drifted_together(self, est: PayloadEstimate) -> bool:
        """Every factor free together flags (JointFactors.flags)."""
        return self.together is not None and self.together.flags(self.mass, est)


def gain_drift_witness(model: RobotModel, robot: RobotIdentification, sig: Signals, frame: str,
                       phi: np.ndarray, load_friction: bool,
                       residual: RobotResidual | None = None) -> GainWitness | None:
    """The witness on the conditioned signals `sig` a method fitted (torques gear-corrected as robot.yaml's), `phi`
    the method's payload (the column τ̂_j and the load-dependent friction columns). None when the motion leaves
    nothing to fit. `residual`: robot_residual on `sig`, when the caller has it (JudgedRun.residual)."""
    n = model.n
    phi = np.asarray(phi, dtype=float)[:10]
    res = residual if residual is not None else robot_residual(model, robot, sig, frame)
    r = res.r
    free = res.changeable | res.offsets                   # the offsets free in both fits
    cols = [res.w_l, res.fric[..., np.flatnonzero(free)]]
    modelled = res.tau_a + res.w_l @ phi
    if load_friction:
        cols.append(res.load_friction(phi))
    A = np.concatenate(cols, axis=-1)
    N = r.shape[0]
    k = A.shape[-1]
    if N * n <= k + n:
        return None
    Af0 = A.reshape(N * n, k)
    # Per-joint weights from the fit with every joint's factor free (consistent whether or not a gain drifted; the
    # fixed fit's residual would down-weight the drifted joint and hide it).
    per_joint = np.zeros((N, n, n))
    per_joint[:, np.arange(n), np.arange(n)] = modelled
    A0 = np.concatenate([Af0, per_joint.reshape(N * n, n)], axis=1)
    res0 = (r.reshape(-1) - A0 @ (pinv_map(A0) @ r.reshape(-1))).reshape(N, n)
    sigma = np.maximum(np.sqrt(np.mean(res0**2, axis=0)), 1e-12)
    w = np.tile(1.0 / sigma, N)
    Af = Af0 * w[:, None]
    y = r.reshape(-1) * w
    Mf = pinv_map(Af)
    xf = Mf @ y
    e = y - Af @ xf
    dof = max(N * n - k - 1, 1)
    scale2 = float(np.sum(e**2)) / dof
    gain_std = gain_calibration_relative_std(robot)
    lags = serial_correlation.bandwidth(e.reshape(N, n))
    C = per_joint.reshape(N * n, n) * w[:, None]          # joint j's factor's column, weighted
    G = Mf @ C
    C_perp = C - Af @ G
    joints, kept = [], []
    for j in range(n):
        c, c_perp = C[:, j], C_perp[:, j]
        norm2 = float(c_perp @ c_perp)
        if norm2 <= 1e-12 * max(float(c @ c), 1e-300):
            continue                               # the motion cannot tell this joint's factor from the payload
        h = c_perp / norm2
        beta = float(h @ e)
        scores = (h * e).reshape(N, n).sum(axis=1, keepdims=True)
        hac = float(serial_correlation.sandwich(np.eye(1), scores, lags, (N * n) / dof)[0, 0])
        var = max(hac, scale2 / norm2) + float(res.theta_cov_through(h[None, :], w)[0, 0])
        if gain_std is not None:
            var += float(gain_std[j]) ** 2
        std = max(float(np.sqrt(var)), MODEL_RESOLUTION)
        kept.append(j)
        joints.append(JointGain(model.joint_names[j], 1.0 + beta, std, G[:4, j] * beta))
    if not joints:
        return None
    return GainWitness(tuple(joints), float(xf[0]),
                       _together(model, res, w, e, C_perp[:, kept], G[:, kept], kept, N, k, lags, gain_std))


def _together(model: RobotModel, res, w: np.ndarray, e: np.ndarray, C_perp: np.ndarray, G: np.ndarray,
              kept: list[int], N: int, k: int, lags: int, gain_std: np.ndarray | None) -> JointFactors | None:
    """Every kept joint's factor free at once (Frisch–Waugh on the fixed fit's residual e): β̂ = C⊥⁺ e, its
    covariance by the same terms as each JointGain's, and the payload shift G β̂. With one factor at a time, a drift
    on two joints stays in each single fit's residual (h86: shoulder lift and elbow × 1.03, the furthest single
    factor at χ² 9.4)."""
    if len(kept) < 2:
        return None
    n = model.n
    H = pinv_map(C_perp)                                  # (m, N·n): β̂ = H e
    beta = H @ e
    e_free = e - C_perp @ beta
    dof = max(N * n - k - len(kept), 1)
    white = float(e_free @ e_free) / dof * (H @ H.T)
    scores = np.einsum("ktj,tj->tk", H.reshape(len(kept), N, n), e_free.reshape(N, n))
    cov = serial_correlation.floored(serial_correlation.sandwich(np.eye(len(kept)), scores, lags, (N * n) / dof),
                                     white)
    cov = cov + res.theta_cov_through(H, w)
    if gain_std is not None:
        cov = cov + np.diag(np.asarray(gain_std, dtype=float)[kept] ** 2)
    cov = cov + np.diag(np.maximum(MODEL_RESOLUTION**2 - np.diag(cov), 0.0))   # each factor's σ ≥ the floor
    cov = 0.5 * (cov + cov.T)
    stat, rank = chi2_stat(beta, cov)
    return JointFactors(tuple(model.joint_names[j] for j in kept), 1.0 + beta, cov, stat, rank, G[:4] @ beta, G[:4])


def gain_drift_reason(witness: GainWitness, est: PayloadEstimate, what: str, joint_names=None) -> str:
    """A sentence when a joint's efforts are off robot.yaml's model beyond their σ and the payload took it (empty
    otherwise): the joint, its factor ± σ, the payload's shift and the fix. `joint_names` unused (the witness names
    its joints); kept for offset_drift_reason's shape."""
    # Every factor free together names the drives where a one-at-a-time fit may name another (two drifted joints:
    # each single fit keeps the other's drift in its residual), so its sentence follows when it flags as well.
    together = _together_reason(witness, est, what)
    off = witness.drifted(est)
    if not off:
        return together
    first = off[0]
    mass = witness.mass if witness.mass > 0 else float("nan")
    dc = 1000 * witness.com_shift(first, est.com)
    side = "high" if first.b > 1.0 else "low"
    # One joint's factor at a time: where two joints' efforts move the payload alike on this motion (the UR10's
    # shoulder lift and elbow), either one's factor explains a drift of the other, so every joint beyond is named.
    others = "".join(f"; or {j.joint}'s, factor {j.b:.4f} ± {j.std:.4f} (χ² {j.chi2:.1f})" for j in off[1:])
    which = " (this motion cannot tell which)" if off[1:] else ""
    return (f"{what}'s efforts on {first.joint} read {100 * abs(first.b - 1.0):.1f} % {side} against robot.yaml's "
            f"model: factor {first.b:.4f} ± {first.std:.4f} ({_beyond(witness, first, est)}){others}"
            f"{which}; that drive's gain differs from robot.yaml's (a warmer drive, a gain given by hand?) and the "
            f"payload took it: with the factor free the mass moves by {-first.d[0]:+.4g} kg "
            f"({-100 * first.d[0] / mass:+.2f} %) and the CoM by {np.round(-dc, 1).tolist()} mm; re-identify the "
            "robot (identify-robot on a run recorded now) or its drive gains (--effort-scale, or --known-payload-mass)"
            + (f". {together}" if together else ""))


def _together_reason(witness: GainWitness, est: PayloadEstimate, what: str) -> str:
    """The sentence when only every factor free together flags (GainWitness.drifted_together; empty otherwise)."""
    t = witness.together
    if t is None or not witness.drifted_together(est):
        return ""
    sd = np.sqrt(np.diag(t.cov))
    named = "; ".join(f"{t.joints[i]} {t.b[i]:.4f} ± {sd[i]:.4f}" for i in t.drives())
    named_what = f"each beyond {np.sqrt(chi2_quantile(PLAIN_LEVEL, 1)):.2f}σ on its own"
    return (f"{what}'s efforts against robot.yaml's model with every joint's factor free together: {named} (χ² "
            f"{t.chi2:.1f} on {t.dof}, beyond its {chi2_quantile(PLAIN_LEVEL, t.dof):.1f}; {named_what}); those "
            f"drives' gains differ from robot.yaml's (warmer drives, gains given by hand?) and the payload took it: "
            f"{payload_moves(t.d, witness.mass, est, 'the factors', in_sigmas=True)}; re-identify the robot "
            "(identify-robot on a run recorded now) or its drive gains (--effort-scale, or --known-payload-mass)")


def _beyond(witness: GainWitness, joint: JointGain, est: PayloadEstimate) -> str:
    """Which rule the joint's factor broke: the family-wise limit, or the plain level with a material shift."""
    if joint.chi2 > witness.limit:
        return f"χ² {joint.chi2:.1f}, limit {witness.limit:.1f}"
    return (f"χ² {joint.chi2:.1f}: under the joints' limit {witness.limit:.1f} but beyond its own "
            f"{chi2_quantile(PLAIN_LEVEL, 1):.1f}, and its payload shift is "
            f"{shift_sigmas(joint.d, witness.mass, est):.1f}σ of the estimate's own, beyond {MATERIAL_SIGMAS:.0f}")


def gain_drift_note(witness: GainWitness) -> Note:
    """What the witness saw: the joint furthest out and its factor, on every estimate it judged."""
    top = witness.largest
    mass = witness.mass if witness.mass > 0 else float("nan")
    return Note(NoteCode.PAYLOAD_GAIN_DRIFT,
                f"drive gains against robot.yaml's, joint by joint: furthest out {top.joint} {top.b:.4f} ± "
                f"{top.std:.4f} (χ² {top.chi2:.1f}, limit {witness.limit:.1f}); its factor free moves the mass by "
                f"{-top.d[0]:+.4g} kg ({-100 * top.d[0] / mass:+.2f} %)"
                + ("" if witness.together is None else
                   f"; every factor free together χ² {witness.together.chi2:.1f} on {witness.together.dof} (level "
                   f"{chi2_quantile(PLAIN_LEVEL, witness.together.dof):.1f}), moving the mass by "
                   f"{-witness.together.d[0]:+.4g} kg"))
