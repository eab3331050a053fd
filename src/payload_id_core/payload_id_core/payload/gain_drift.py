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
UR10e's shoulder pan 6.8 %; under "not drifted" b_j is 1 only to that σ). Floor: σ(b̂_j) ≥ MODEL_RESOLUTION (0.5 %,
payload/finish.py), the finest torque error, as a fraction of the joint's effort, to which the project holds
robot.yaml's rigid-body model; a factor inside it is inside the model's resolution. Without it the noise-free
`clean` Panda (gains given, σ 0) read panda_joint6 1.001 ± 0.00028 and every method was suspect (h71's witness).

Flagged suspect when, for some joint, χ²_j is beyond its family-wise quantile (the n joints judged together at
LEVEL, Bonferroni: χ²₁ at 1 − (1 − LEVEL)/n; 14.1 for 6 joints, 14.4 for 7) AND the payload's shift is material:
the mass or a CoM axis moves by more than the estimate's own σ. A drift that does not move the payload is not a
wrong answer. The reason names the joint, its factor ± σ, the payload's shift and the fix.

Not caught: a drift common to every joint (that is effort_drift's a and a_f; with one factor per joint the other
joints' free offsets and the payload share it); a one-joint drift under about 4 × its σ (2 % at the 0.5 % floor).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform, rigid_body_regressor
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.finish import MODEL_RESOLUTION
from payload_id_core.payload.gain_uncertainty import gain_relative_std
from payload_id_core.payload.jacobian import theta_layout
from payload_id_core.payload.load_friction import load_changeable_friction, load_friction_columns, sign_epsilon
from payload_id_core.payload.offset_drift import _pinv_map
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification, serial_correlation
from payload_id_core.signals.conditioning import Signals

LEVEL = 0.999          # family-wise: the joints together alarm on an honest run at most 1 − LEVEL of the time


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
class GainWitness:
    """Every joint's factor against robot.yaml's gain; `mass` the fixed fit's mass (kg)."""

    joints: tuple[JointGain, ...]
    mass: float

    @property
    def limit(self) -> float:
        """The per-joint χ²₁ quantile at which the joints together alarm at 1 − LEVEL (Bonferroni): z² of the
        two-sided normal quantile (no scipy.stats: half a second of start-up, test_speed_paths)."""
        alpha = (1.0 - LEVEL) / max(len(self.joints), 1)
        return float(NormalDist().inv_cdf(1.0 - alpha / 2.0) ** 2)

    @property
    def largest(self) -> JointGain:
        """The joint whose factor is furthest from 1 in its σ."""
        return max(self.joints, key=lambda j: j.chi2 if np.isfinite(j.chi2) else -1.0)

    def com_shift(self, joint: JointGain, com: np.ndarray) -> np.ndarray:
        """(3,) m: the CoM the fixed fit gives minus the free one's, to first order about `com`."""
        m = self.mass if abs(self.mass) > 1e-9 else 1e-9
        return (joint.d[1:4] - np.asarray(com, dtype=float) * joint.d[0]) / m

    def material(self, joint: JointGain, est: PayloadEstimate) -> bool:
        """The joint's shift beyond the estimate's own σ in the mass or a CoM axis."""
        std = est.propagated_std()
        shift = np.r_[abs(joint.d[0]), np.abs(self.com_shift(joint, est.com))]
        return bool(np.any(shift > std[:4]))

    def drifted(self, est: PayloadEstimate) -> tuple[JointGain, ...]:
        """The joints beyond the limit whose factor moves the payload materially, furthest out first."""
        out = [j for j in self.joints if np.isfinite(j.chi2) and j.chi2 > self.limit and self.material(j, est)]
        return tuple(sorted(out, key=lambda j: -j.chi2))


def gain_drift_witness(model: RobotModel, robot: RobotIdentification, sig: Signals, frame: str,
                       phi: np.ndarray, load_friction: bool) -> GainWitness | None:
    """The witness on the conditioned signals `sig` a method fitted (torques gear-corrected as robot.yaml's), `phi`
    the method's payload (the column τ̂_j and the load-dependent friction columns). None when the motion leaves
    nothing to fit."""
    lay = theta_layout(robot)
    n = model.n
    phi = np.asarray(phi, dtype=float)[:10]
    y_a = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    theta_a = np.asarray(robot.theta, dtype=float)
    tau_a = y_a @ theta_a
    r = sig.tau - tau_a
    joint, X = payload_transform(model, frame)
    w_l = rigid_body_regressor(model, sig.q, sig.qd, sig.qdd)[..., 10 * (joint - 1):10 * joint] @ X
    fric = y_a[..., lay.friction]
    names = list(robot.friction.param_names)
    free = load_changeable_friction(robot.friction).copy()
    free |= np.array([name.split("_", 1)[0] == "B" for name in names], dtype=bool)   # the offsets, free in both
    cols = [w_l, fric[..., np.flatnonzero(free)]]
    modelled = tau_a + w_l @ phi
    if load_friction:
        cols.append(load_friction_columns(tau_a, modelled, sig.qd, sign_epsilon(robot)))
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
    res0 = (r.reshape(-1) - A0 @ (_pinv_map(A0) @ r.reshape(-1))).reshape(N, n)
    sigma = np.maximum(np.sqrt(np.mean(res0**2, axis=0)), 1e-12)
    w = np.tile(1.0 / sigma, N)
    Af = Af0 * w[:, None]
    y = r.reshape(-1) * w
    Mf = _pinv_map(Af)
    xf = Mf @ y
    e = y - Af @ xf
    dof = max(N * n - k - 1, 1)
    scale2 = float(np.sum(e**2)) / dof
    ca = np.asarray(robot.cov, dtype=float)
    ya_w = y_a.reshape(N * n, -1) * w[:, None] if ca.shape == (theta_a.size, theta_a.size) else None
    ca = np.where(np.isfinite(ca), ca, 0.0)
    gain_std = gain_relative_std(robot)
    lags = serial_correlation.bandwidth(e.reshape(N, n))
    joints = []
    for j in range(n):
        c = np.zeros((N, n))
        c[:, j] = modelled[:, j]
        c = c.reshape(-1) * w
        g = Mf @ c
        c_perp = c - Af @ g
        norm2 = float(c_perp @ c_perp)
        if norm2 <= 1e-12 * max(float(c @ c), 1e-300):
            continue                               # the motion cannot tell this joint's factor from the payload
        h = c_perp / norm2
        beta = float(h @ e)
        white = scale2 / norm2
        scores = (h * e).reshape(N, n).sum(axis=1, keepdims=True)
        hac = float(serial_correlation.sandwich(np.eye(1), scores, lags, (N * n) / dof)[0, 0])
        var = max(hac, white)
        if ya_w is not None:
            gy = h @ ya_w
            var += float(gy @ ca @ gy)
        if gain_std is not None:
            var += float(gain_std[j]) ** 2
        std = max(float(np.sqrt(var)), MODEL_RESOLUTION)
        joints.append(JointGain(model.joint_names[j], 1.0 + beta, std, g[:4] * beta))
    if not joints:
        return None
    return GainWitness(tuple(joints), float(xf[0]))


def gain_drift_reason(witness: GainWitness, est: PayloadEstimate, what: str, joint_names=None) -> str:
    """A sentence when a joint's efforts are off robot.yaml's model beyond their σ and the payload took it (empty
    otherwise): the joint, its factor ± σ, the payload's shift and the fix. `joint_names` unused (the witness names
    its joints); kept for offset_drift_reason's shape."""
    off = witness.drifted(est)
    if not off:
        return ""
    first = off[0]
    mass = witness.mass if witness.mass > 0 else float("nan")
    dc = 1000 * witness.com_shift(first, est.com)
    side = "high" if first.b > 1.0 else "low"
    # One joint's factor at a time: where two joints' efforts move the payload alike on this motion (the UR10's
    # shoulder lift and elbow), either one's factor explains a drift of the other, so every joint beyond is named.
    others = "".join(f"; or {j.joint}'s, factor {j.b:.4f} ± {j.std:.4f} (χ² {j.chi2:.1f})" for j in off[1:])
    which = " (this motion cannot tell which)" if off[1:] else ""
    return (f"{what}'s efforts on {first.joint} read {100 * abs(first.b - 1.0):.1f} % {side} against robot.yaml's "
            f"model: factor {first.b:.4f} ± {first.std:.4f} (χ² {first.chi2:.1f}, limit {witness.limit:.1f}){others}"
            f"{which}; that drive's gain differs from robot.yaml's (a warmer drive, a gain given by hand?) and the "
            f"payload took it: with the factor free the mass moves by {-first.d[0]:+.4g} kg "
            f"({-100 * first.d[0] / mass:+.2f} %) and the CoM by {np.round(-dc, 1).tolist()} mm; re-identify the "
            "robot (identify-robot on a run recorded now) or its drive gains (--effort-scale, or --known-payload-mass)")


def gain_drift_note(witness: GainWitness) -> Note:
    """What the witness saw: the joint furthest out and its factor, on every estimate it judged."""
    top = witness.largest
    mass = witness.mass if witness.mass > 0 else float("nan")
    return Note(NoteCode.PAYLOAD_GAIN_DRIFT,
                f"drive gains against robot.yaml's, joint by joint: furthest out {top.joint} {top.b:.4f} ± "
                f"{top.std:.4f} (χ² {top.chi2:.1f}, limit {witness.limit:.1f}); its factor free moves the mass by "
                f"{-top.d[0]:+.4g} kg ({-100 * top.d[0] / mass:+.2f} %)")
