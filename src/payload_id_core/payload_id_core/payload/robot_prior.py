"""robot.yaml's parameters as what they are, an estimate with its covariance C_a, in khalil-1's fit (issue 29, h184).

khalil-1 (Khalil 2007 eq. 23) fits the loaded run's residual against robot.yaml, r = τ − Y_a θ̂_a ≈ W x (x the
payload, and the friction change where asked), holding θ̂_a exact, and adds θ̂_a's error to σ afterwards, S C_a Sᵀ
(methods/common.robot_sensitivity_cov). Where one calibration motion left a parameter poorly known that the loaded
run determines, that term is most of σ and the fit ignores what the run says about it. The h86 robot (one 8 s
unloaded motion, gains given): robot.yaml's shoulder-lift offset σ 0.18 N·m (nearly collinear with the gravity
parameters on that motion), the loaded run's own 0.03 N·m; its C_a is 0.2 of khalil-1's 0.26 % mass σ, and an offset
that moved by 0.3 N·m since the calibration (a drift robot.yaml, without a drift record, cannot bound) was read as
payload: −0.93 % at 3.5σ, converged and ok, the offsets' witness blind (χ² 7.8 on 6).

Here θ̂_a's error δθ joins the unknowns under robot.yaml's own statement of it, δθ ~ N(0, C_a), as ridge rows:

    r ≈ W x + Y_a δθ,      Λ^{-1/2} Vᵀ δθ = 0      (C_a = V Λ Vᵀ, the directions with λ > 0),

the weighted fit of x under cov(r) = Σ_e + Y_a C_a Y_aᵀ (marginalising δθ; Woodbury), i.e. the generalised
least-squares estimate of the payload given what robot.yaml says it knows (Aitken 1935; the Bayesian form, Gelman
et al., Bayesian Data Analysis 3rd ed. §14.8, "prior information as additional data"). Its error under "θ_a within
C_a" is M (e + Y_a δθ) for the map x = M r, whatever δθ is, so

    cov(x) = M Σ_e Mᵀ + (M Y_a) C_a (M Y_a)ᵀ,

the second term robot_sensitivity_cov's with this fit's map in place of the fixed one; with white residuals it is no
wider than the fixed fit's (the fixed fit is one linear unbiased estimate among those this one minimises over). A
parameter the calibration fixed well (the wrists' offsets, 0.003-0.004 N·m there) stays where it was: a drift far
beyond C_a is not absorbed, and the offsets' witness (payload/offset_drift.py, its Wald χ² against C_a) sees it.

Measured (the h86 robot, khalil-1, the witness's weighting, seeds 2-7 honest and 3-4 with the lift +0.3 N·m): see
docs/design.md "The offsets' drift in σ", h184.

With robot.yaml's drift record (friction_offset_drift) the offsets' drift takes the recorded width, drift_std_j, in
place of the run's own (`recorded_drift`, h195): the same GLS with the prior C_a + diag(drift_std²) on the offsets.
khalil-1 uses it only with the option robot_prior on: on the simulated robot it narrows σ 8× with the error covered,
on the real UR10e it moves the mass by −0.5..−1.3 % at an unchanged σ (docs/design.md h195).

The methods that hold robot.yaml's offsets by their structure (direct-rls, an online RLS whose width d̂_j is known
only from the whole run; khalil-2, whose conversion of the re-identified θ_b has no offset unknown; gaz-dtau against
robot.yaml's prediction) take the same widths alone (run_offset_drift, h192) into σ through their own response to
the offsets (covariance_extra.offset_drift_covariance's `run_drift`), where a drift record would be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.against_robot_fit import long_run_cov
from payload_id_core.payload.jacobian import theta_layout
from payload_id_core.robot_id import RobotIdentification

# Eigen-directions of C_a below this fraction of its largest are held exact (they carry no uncertainty to fit).
EIGEN_RTOL = 1e-12


@dataclass(frozen=True)
class RobotPriorFit:
    """x (u,) the payload fit with robot.yaml's error and the offsets' drift free (module docstring); `noise` (u, u)
    its textbook covariance at the weights' residual level (no serial-correlation inflation: the caller's), `robot`
    (u, u) C_a and the drift allowance through its map; NaN outside the fixed fit's determined entries, which keep
    their value. `offsets` (n,) the free fit's ΔB̂_j against robot.yaml's, `offsets_std` their std under "not moved"
    (noise and C_a), `drift_std` the allowance d̂_j (N·m)."""

    x: np.ndarray
    noise: np.ndarray
    robot: np.ndarray
    offsets: np.ndarray
    offsets_std: np.ndarray
    drift_std: np.ndarray
    map: np.ndarray             # (determined entries, N·n) x[ok] = map (r / σ), the weighted residual's map
    weights: np.ndarray         # (N·n,) 1/σ per row
    identifiable: np.ndarray    # (u,) the fixed fit's determined entries

    def response(self, rhs: np.ndarray) -> np.ndarray:
        """(u, k) this fit's move for k torque changes `rhs` (N, n, k); 0 on the undetermined entries."""
        rhs = np.asarray(rhs, dtype=float)
        out = np.zeros((self.identifiable.size, rhs.shape[-1]))
        out[self.identifiable] = self.map @ (rhs.reshape(self.weights.size, -1) * self.weights[:, None])
        return out


def robot_prior_fit(W: np.ndarray, r: np.ndarray, y_a: np.ndarray, sigma: np.ndarray, identifiable: np.ndarray,
                    x_fixed: np.ndarray, robot_cov: np.ndarray, offsets: np.ndarray,
                    noise_sigma: np.ndarray | None = None,
                    recorded_drift: np.ndarray | None = None) -> RobotPriorFit | None:
    """The fit of `r` (N, n) ≈ `W` (N, n, u) x + `y_a` (N, n, p) (δθ + ΔB) with per-joint weights 1/`sigma` (the fixed
    fit's residual std: the weighted residual has unit variance), δθ ~ N(0, `robot_cov`) and each constant offset's
    drift ΔB_j ~ N(0, d̂_j²), d̂_j from this run (module docstring); `offsets` (p,) bool marks θ's constant offsets.
    Only the fixed fit's `identifiable` entries are fitted; the others keep `x_fixed`. `noise_sigma` (n,): the
    residual level the noise covariance is stated at (the resolution floor,
    covariance_extra.resolution_floored_covariance), default `sigma`. None when C_a holds no uncertainty or leaves no
    offset looser than this run resolves it (the caller then holds robot.yaml's parameters). `recorded_drift` (one per
    `offsets` entry, N·m): robot.yaml's measured drift of the offsets between runs (friction_offset_drift's
    drift_std); where given, it is the drift's prior width in place of the run's own d̂_j, for every offset and
    without the gate (the record bounds the drift, so the run's ΔB̂_j beyond it is not read as one)."""
    W = np.asarray(W, dtype=float)
    N, n, u = W.shape
    ca = np.asarray(robot_cov, dtype=float)
    ca = np.where(np.isfinite(ca), ca, 0.0)
    ca = 0.5 * (ca + ca.T)
    lam, V = np.linalg.eigh(ca)
    keep = lam > EIGEN_RTOL * max(float(lam.max()), 0.0)
    if not keep.any():
        return None
    ok = np.asarray(identifiable, dtype=bool)
    offs = np.flatnonzero(np.asarray(offsets, dtype=bool))
    w = np.tile(1.0 / np.maximum(np.asarray(sigma, dtype=float).reshape(n), 1e-12), N)
    y = np.asarray(r, dtype=float).reshape(N * n) * w
    A = W[..., ok].reshape(N * n, -1) * w[:, None]
    Yw = np.asarray(y_a, dtype=float).reshape(N * n, -1) * w[:, None]
    k = int(ok.sum())
    shown = _drift_shown(A, y, Yw, ca, offs, N, n, recorded_drift)
    if shown is None:
        return None
    dB, v0, drift = shown.offsets, np.diag(shown.cov), shown.drift
    moved = drift > 0
    Z = np.hstack([Yw @ V[:, keep], Yw[:, offs[moved]]])
    prior = np.r_[np.sqrt(lam[keep]), drift[moved]]
    m = prior.size
    ridge = np.zeros((m, k + m))
    ridge[np.arange(m), k + np.arange(m)] = 1.0 / prior
    M = _least_squares_map(np.vstack([np.hstack([A, Z]), ridge]))[:k, :N * n]
    x = np.array(x_fixed, dtype=float, copy=True)
    x[ok] = M @ y
    level = np.ones(N * n) if noise_sigma is None else np.tile(
        (np.maximum(np.asarray(noise_sigma, dtype=float).reshape(n), 1e-12)
         / np.maximum(np.asarray(sigma, dtype=float).reshape(n), 1e-12)) ** 2, N)
    G = M @ Yw
    Gd = G[:, offs[moved]]
    noise, robot = (np.full((u, u), np.nan) for _ in range(2))
    noise[np.ix_(ok, ok)] = (M * level) @ M.T
    robot[np.ix_(ok, ok)] = G @ ca @ G.T + (Gd * drift[moved] ** 2) @ Gd.T
    return RobotPriorFit(x, noise, robot, dB, np.sqrt(np.maximum(v0, 0.0)), drift, M, w, ok)


class _Shown(NamedTuple):
    """_drift_shown's answer: per offset the run's free ΔB̂_j (N·m), the covariance of ΔB̂ under "not moved" (noise and
    C_a), the drift width d̂_j, and which offsets the gate lets the run speak for (`loose`)."""

    offsets: np.ndarray
    cov: np.ndarray
    drift: np.ndarray
    loose: np.ndarray


def _drift_shown(A: np.ndarray, y: np.ndarray, Yw: np.ndarray, ca: np.ndarray, offs: np.ndarray, N: int, n: int,
                 recorded_drift: np.ndarray | None = None) -> _Shown | None:
    """Per offset column `offs` of the weighted robot regressor `Yw` beside the weighted fit columns `A` (weighted
    residual `y`): the run's free ΔB̂_j, their covariance under "not moved" and the drift width d̂_j the run shows beyond
    it (0 where the gate below holds the offset); None where C_a (`ca`) leaves no offset looser than the run resolves
    it (h191's gate). `recorded_drift`: robot_prior_fit's, the width in place of d̂_j, without the gate."""
    k = A.shape[1]
    # The offsets' drift since the calibration: the run's own ΔB̂_j (the fit with them free) beyond what "not moved"
    # gives it, its noise (Newey–West) and θ̂_a's error along the offset column (C_a): d̂_j² = max(ΔB̂_j² − v_j, 0),
    # the marginal maximum-likelihood width of a drift N(0, d_j²) from one draw (empirical Bayes).
    Af = np.hstack([A, Yw[:, offs]])
    Mf = _least_squares_map(Af)
    xf = Mf @ y
    Mb = Mf[k:]
    Gb = Mb @ Yw
    vn = long_run_cov(Mb, (y - Af @ xf).reshape(N, n), Af.shape[1])
    v0 = vn + Gb @ ca @ Gb.T
    dB = xf[k:]
    # Where the calibration knows an offset better than this run resolves it, the run has nothing to add: its free
    # ΔB̂_j is then the robot model's error on this motion (real drives: the UR10e's 15harm run, every offset ΔB̂_j
    # 1.4-1.9 × its v_j, C_a 0.01-0.14 N·m against the run's 0.09-0.48 N·m; fitting them moved khalil-1 −0.34 →
    # −2.40 %), not an offset drift the run measures. Only an offset C_a leaves looser than the run resolves it
    # (the h86 robot's shoulder lift: 0.18 against 0.03 N·m) is fitted; with none, the fit is not this module's.
    loose = np.sqrt(np.maximum(np.diag(ca)[offs], 0.0)) > np.sqrt(np.maximum(np.diag(vn), 0.0))
    if recorded_drift is not None:
        return _Shown(dB, v0, np.where(np.isfinite(recorded_drift),
                                       np.maximum(np.asarray(recorded_drift, dtype=float), 0.0), 0.0), loose)
    if not loose.any():
        return None
    drift = np.where(loose, np.sqrt(np.maximum(dB**2 - np.diag(v0), 0.0)), 0.0)
    return _Shown(dB, v0, drift, loose)


def _least_squares_map(A: np.ndarray) -> np.ndarray:
    """(k, rows) the least-squares map of A in column-scaled coordinates (the ridge rows make it full rank)."""
    norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    u, s, vt = np.linalg.svd(A / norms, full_matrices=False)
    keep = s > 1e-12 * s[0]
    return ((vt[keep].T / s[keep]) @ u[:, keep].T) / norms[:, None]


def robot_offset_entries(robot: RobotIdentification) -> np.ndarray:
    """(p,) bool: robot.theta's constant friction offsets B_j (friction parameters named B_<joint>)."""
    mask = np.zeros(np.asarray(robot.theta).size, dtype=bool)
    mask[theta_layout(robot).friction] = [name.partition("_")[0] == "B" for name in robot.friction.param_names]
    return mask


def robot_offset_joints(robot: RobotIdentification) -> list[str]:
    """The joints of robot_offset_entries' offsets, in their order."""
    return [name.partition("_")[2] for name in robot.friction.param_names if name.partition("_")[0] == "B"]


@dataclass(frozen=True)
class RunOffsetDrift:
    """What a loaded run shows of robot.yaml's constant friction offsets where robot.yaml records no drift (h192):
    per offset (robot_offset_joints' order) the run's free ΔB̂_j (N·m), its std under "not moved" (noise and C_a) and
    the drift width d̂_j robot_prior_fit gives it (0 where the run shows none beyond that, or where the calibration
    knows the offset better than the run resolves it). A method that holds the offsets at robot.yaml's values cannot
    fit that drift as khalil-1 does; its σ carries it where the drift is beyond chance in the mass that method reads
    (covariance_extra.offset_drift_covariance's `run_drift`, h202's test on `cov` and `loose`)."""

    joints: list[str]
    offsets: np.ndarray
    offsets_std: np.ndarray
    drift_std: np.ndarray
    cov: np.ndarray         # (offsets, offsets) of the free ΔB̂ under "not moved" (noise and C_a)
    loose: np.ndarray       # (offsets,) bool: those the run resolves better than C_a (h191's gate)

    @property
    def moved(self) -> np.ndarray:
        """Indices of the offsets given a drift width."""
        return np.flatnonzero(self.drift_std > 0)

    def shown(self) -> str:
        """The moved offsets as the notes name them."""
        return ", ".join(f"{self.joints[j]} {self.offsets[j]:+.3f} N·m against ± {self.offsets_std[j]:.3f}"
                         for j in self.moved)


def run_offset_drift(W: np.ndarray, r: np.ndarray, y_a: np.ndarray, sigma: np.ndarray, identifiable: np.ndarray,
                     robot_cov: np.ndarray, robot: RobotIdentification) -> RunOffsetDrift | None:
    """robot_prior_fit's drift widths on the same fit (its arguments; `robot` names the offsets), without the fit
    itself: None where C_a holds no uncertainty or leaves no offset looser than this run resolves it (h191's gate:
    the real UR10e's runs, where the free ΔB̂_j are the model's error, not a drift)."""
    W = np.asarray(W, dtype=float)
    N, n, _ = W.shape
    ca = np.asarray(robot_cov, dtype=float)
    ca = np.where(np.isfinite(ca), ca, 0.0)
    ca = 0.5 * (ca + ca.T)
    if not np.any(np.diag(ca) > 0):
        return None
    ok = np.asarray(identifiable, dtype=bool)
    w = np.tile(1.0 / np.maximum(np.asarray(sigma, dtype=float).reshape(n), 1e-12), N)
    shown = _drift_shown(W[..., ok].reshape(N * n, -1) * w[:, None], np.asarray(r, dtype=float).reshape(N * n) * w,
                         np.asarray(y_a, dtype=float).reshape(N * n, -1) * w[:, None], ca,
                         np.flatnonzero(robot_offset_entries(robot)), N, n)
    if shown is None:
        return None
    return RunOffsetDrift(robot_offset_joints(robot), shown.offsets, np.sqrt(np.maximum(np.diag(shown.cov), 0.0)),
                          shown.drift, shown.cov, shown.loose)


def recorded_offset_drift(robot: RobotIdentification) -> np.ndarray | None:
    """(offsets,) N·m: robot.yaml's recorded drift of each constant offset between runs (friction_offset_drift's
    drift_std, in robot_offset_joints' order), None without the record."""
    record = getattr(robot, "offset_drift", None)
    if record is None:
        return None
    width = dict(zip(record.joint_names, record.drift_std))
    return np.array([width.get(j, np.nan) for j in robot_offset_joints(robot)], dtype=float)


def robot_prior_note(fit: RobotPriorFit, fixed_mass: float, offset_joints: list[str], recorded: bool = False) -> Note:
    """What the fit with robot.yaml's error and the offsets' drift free did, and the drift it allowed;
    `offset_joints` names fit.offsets' joints (robot_offset_joints)."""
    mass = float(fit.x[0])
    share = f" ({100 * (mass - fixed_mass) / fixed_mass:+.2f} %)" if fixed_mass > 0 else ""
    moved = np.flatnonzero(fit.drift_std > 0)
    drift = ("; this run's offsets show a drift beyond that: "
             + ", ".join(f"{offset_joints[j]} {fit.offsets[j]:+.3f} N·m against ± {fit.offsets_std[j]:.3f}"
                         for j in moved)
             + ", fitted and in σ" if moved.size else "; no offset beyond it")
    if recorded:
        widths = ", ".join(f"{j} {d:.3f}" for j, d in zip(offset_joints, fit.drift_std) if d > 0) or "none"
        return Note(NoteCode.PAYLOAD_ROBOT_PRIOR,
                    "robot.yaml's parameters were fitted with this run under their identification covariance C_a and "
                    f"the offsets' recorded drift between runs (friction_offset_drift, N·m: {widths}) as the prior, "
                    f"in place of holding them at their values and adding that covariance's response to σ: the mass "
                    f"moved {mass - fixed_mass:+.4g} kg{share}")
    return Note(NoteCode.PAYLOAD_ROBOT_PRIOR,
                "robot.yaml records no drift of its constant friction offsets (nor a model error measured on held-out "
                "runs): its parameters were fitted with this run under their identification covariance C_a, each "
                "offset's drift under the width this run shows beyond C_a and its noise; the mass moved "
                f"{mass - fixed_mass:+.4g} kg{share} against holding them at robot.yaml's values{drift} "
                "(identify-robot --drift-bag/--drift-csv-ur on unloaded runs of other occasions measures the drift)")
