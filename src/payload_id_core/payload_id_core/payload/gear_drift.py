"""Does the loaded run's gear friction agree with robot.yaml's μ̂? A Hausman-type witness (issue 29, Bad input).

Where robot.yaml identified a joint's gear friction μ̂_j (robot_id/gear_friction.py), difference-rls takes the
load-friction μ_j of that joint as known: the loaded torques lose μ̂_j|τ| sgn q̇ and what is left of μ_j is μ_j − μ̂_j,
zero with the identification's σ (load_friction.prior_std). That is what made the simulated cell converge within 2 s
(docs/design.md, "The load friction known from robot.yaml"). It is only as good as μ̂: real drives lose more when
warm (the UR10e's loaded runs 3-24 % above the unloaded μ̂), and with the drives' μ 1.5× the identification's,
difference-rls was +0.72..+0.95 % at 2.6-4.0σ, converged and ok, where the free μ_j gave 1.9-3.1σ.

The witness does not change the estimate (the pattern of payload/offset_drift.py, h74). It fits the loaded run's
residual against robot.yaml, r = τ − Y θ_a (torques gear-corrected with μ̂, as the method fitted them), twice by
per-joint weighted least squares, the payload with a free friction change (difference-rls's θ_b frees every
friction parameter) and the load-friction columns c_j = (|τ̂_b| − |τ̂_a|) sgn_ε(q̇) (payload/load_friction.py) of
the joints without a known μ̂:

    known:  r ≈ W_L φ + F Δφ_f + Σ_{j free} c_j μ_j                          (μ_j − μ̂_j = 0: the method's assumption)
    free:   r ≈ W_L φ + F Δφ_f + Σ_{j free} c_j μ_j + Σ_{j known} c_j δμ_j   (the run's own μ_j = μ̂_j + δμ_j)

and compares their payloads, d = φ_known − φ_free on the mass and first moments (Hausman 1978, Econometrica 46,
eq. 2.3). d is linear in the known fit's residual, d = D e; its covariance is D's scores' Newey–West long-run
covariance (robot_id/serial_correlation.py), floored at the white one, plus robot.yaml's θ_a covariance and μ̂'s own
σ carried through D: under "μ̂ holds" the residual still holds c_j (μ_j − μ̂_j) with μ_j − μ̂_j ~ N(0, σ_j²), which
adds σ_j² (D c_j)(D c_j)ᵀ. The estimate is flagged suspect when χ² = dᵀ V⁺ d is beyond its 99.9 % quantile and the
shift is material: the mass or a CoM axis moves by more than the estimate's own σ for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import (
    RobotResidual,
    chi2_stat,
    long_run_cov,
    payload_moves,
    pinv_map,
    residual_weights,
    robot_residual,
)
from payload_id_core.payload.load_friction import prior_std
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.offset_drift import PayloadContrast
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.conditioning import Signals

# The methods that take a joint's load-friction μ_j as known from robot.yaml's gear friction (load_friction.prior_std).
GEAR_KNOWING = frozenset({PayloadMethod.DIFFERENCE_RLS})
MU_SIGMAS = 3.0        # a joint is named when its run's μ is beyond this many σ from robot.yaml's μ̂


@dataclass(frozen=True)
class GearWitness(PayloadContrast):
    """The known-μ fit's payload against the free one's (module docstring). `d` = φ_known − φ_free on [m, m c]
    (kg, kg·m), `cov` its covariance, `chi2` on `dof`; `joints` the joints with a known μ̂, `mu_hat` / `mu_hat_std`
    robot.yaml's, `mu_run` / `mu_run_std` the run's own (μ̂ + the free fit's δμ, its σ with μ̂'s)."""

    d: np.ndarray
    cov: np.ndarray
    chi2: float
    dof: int
    joints: np.ndarray
    mu_hat: np.ndarray
    mu_hat_std: np.ndarray
    mu_run: np.ndarray
    mu_run_std: np.ndarray
    mass: float                    # the free fit's mass (kg)

    def disagreeing(self) -> np.ndarray:
        """Positions (in `joints`) whose run's μ is beyond MU_SIGMAS of μ̂ (the farthest one if none is)."""
        z = np.abs(self.mu_run - self.mu_hat) / np.maximum(self.mu_run_std, 1e-12)
        named = np.flatnonzero(z > MU_SIGMAS)
        return named if named.size else np.array([int(np.argmax(z))])


def gear_drift_witness(model: RobotModel, robot: RobotIdentification, sig: Signals, frame: str,
                       phi: np.ndarray, residual: RobotResidual | None = None) -> GearWitness | None:
    """The witness on the conditioned signals `sig` the method fitted (torques gear-corrected as robot.yaml's);
    `phi` the method's payload (the loaded torque of the load-friction columns, as the methods build them). None
    when robot.yaml makes no joint's μ_j known. `residual`: robot_residual on `sig`, when the caller has it."""
    known_std = prior_std(robot, model.n)
    known = np.flatnonzero(np.isfinite(known_std))
    if known.size == 0 or robot.gear is None:
        return None
    free = np.flatnonzero(~np.isfinite(known_std))
    n = model.n
    res = residual if residual is not None else robot_residual(model, robot, sig, frame)
    r = res.r
    cols = res.load_friction(phi)
    A_known = np.concatenate([res.w_l, res.fric, cols[..., free]], axis=-1)
    A_free = np.concatenate([A_known, cols[..., known]], axis=-1)
    N = r.shape[0]
    k_known, k_free = A_known.shape[-1], A_free.shape[-1]
    # Per-joint weights from the free fit's residual (consistent whether or not μ̂ holds).
    w = residual_weights(A_free, r)
    Ak = A_known.reshape(N * n, k_known) * w[:, None]
    Au = A_free.reshape(N * n, k_free) * w[:, None]
    y = r.reshape(-1) * w
    Mk, Mu = pinv_map(Ak), pinv_map(Au)
    xk, xu = Mk @ y, Mu @ y
    D = Mk[:4] - Mu[:4]                            # d = D y = D e under "μ̂ holds" (D Ak = 0)
    d = D @ y
    cov = long_run_cov(D, (y - Ak @ xk).reshape(N, n), k_known) + res.theta_cov_through(D, w)
    # μ̂'s own error is in r under "μ̂ holds": c_j (μ_j − μ̂_j), σ_j from robot.yaml.
    Gm = D @ (cols[..., known].reshape(N * n, known.size) * w[:, None])
    cov = cov + (Gm * known_std[known] ** 2) @ Gm.T
    cov = 0.5 * (cov + cov.T)
    stat, dof = chi2_stat(d, cov)
    # The run's μ: the free fit's δμ with its long-run σ, and μ̂'s σ (the two are independent runs).
    m_cov = long_run_cov(Mu[k_known:], (y - Au @ xu).reshape(N, n), k_free)
    mu_hat = np.asarray(robot.gear.mu, dtype=float)[known]   # prior_std is finite only where robot.gear is
    run_std = np.sqrt(np.maximum(np.diag(m_cov), 0.0) + known_std[known] ** 2)
    return GearWitness(d, cov, stat, dof, known, mu_hat, known_std[known], mu_hat + xu[k_known:], run_std,
                       float(xu[0]))


def gear_drift_reason(witness: GearWitness, est: PayloadEstimate, what: str, joint_names) -> str:
    """A sentence when the loaded run's gear friction disagrees with robot.yaml's μ̂ beyond the noise and the payload
    took it (empty otherwise): the joints, μ̂ against the run's μ, what it did to the payload, and the fix."""
    if not (witness.beyond_noise and witness.material(est)):
        return ""
    named = ", ".join(f"{joint_names[witness.joints[i]]} μ̂ {witness.mu_hat[i]:.4f} ± {witness.mu_hat_std[i]:.4f} "
                      f"against the run's {witness.mu_run[i]:.4f} ± {witness.mu_run_std[i]:.4f}"
                      for i in witness.disagreeing())
    return (f"{what}'s gear friction differs from robot.yaml's ({named}; warmer or worn drives read the same), and "
            f"the payload took it: {payload_moves(witness.d, witness.mass, est, 'μ')} (χ² "
            f"{witness.chi2:.1f} on {witness.dof}, limit {witness.limit:.1f}); re-identify the gear friction "
            "(identify-robot --gear-friction identify) on a run recorded now, or let difference-rls estimate μ from "
            "this run (robot.yaml friction.gear.mu_std null on those joints)")


def gear_drift_note(witness: GearWitness) -> Note:
    """What the witness saw and what it can see (its power), on every estimate it judged."""
    mass = witness.mass if witness.mass > 0 else float("nan")
    return Note(NoteCode.PAYLOAD_GEAR_DRIFT,
                f"gear friction against robot.yaml's μ̂ {np.round(witness.mu_hat, 4).tolist()} (joints "
                f"{witness.joints.tolist()}): this run's {np.round(witness.mu_run, 4).tolist()} ± "
                f"{np.round(witness.mu_run_std, 4).tolist()}; the fit with μ free moves the mass by "
                f"{-witness.d[0]:+.4g} kg ({-100 * witness.d[0] / mass:+.2f} %), χ² {witness.chi2:.1f} on "
                f"{witness.dof} (limit {witness.limit:.1f}); this test sees a mass shift of about "
                f"{3 * 100 * witness.mass_std / mass:.2g} % or more (3σ of the shift)")
