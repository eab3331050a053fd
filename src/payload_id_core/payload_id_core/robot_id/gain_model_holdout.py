"""The drive gains' friction model judged on held-out loaded runs of known mass (issue 29 items 1 and 5).

identify-robot fits the gains with several friction models (choice_record.GAIN_MODELS: linear, the unloaded run's
shapes with a load Coulomb level μ_j per joint, the same with one μ shared by the determined joints). The calibration
pair's own Newey–West σ (GAIN_MODEL_CRITERION) says how well a model fits the pair it was fitted on, not whether its
gains carry over: on the real UR10e it prefers the shared μ (1.30 % against linear 2.26 %) and the held-out real
payloads regress (docs/design.md, "one μ for the robot's gears"). Here each candidate is fitted without the held-out
samples and predicts them:

  * held-out loaded runs of known mass given (identify-robot --gain-check-*): each candidate fitted on the whole
    calibration pair, each check run predicted;
  * none: the calibration's loaded run split into HOLDOUT_FOLDS contiguous parts, each candidate fitted on the
    unloaded run and the other parts, each part predicted (K-fold cross-validation, Hastie, Tibshirani & Friedman,
    The Elements of Statistical Learning §7.10).

A prediction holds the candidate's θ, gains, friction and μ fixed; only the load's CoM and inertia (φ_L' — another
load on a check run) are fitted on the held-out samples, the mass the known one. Scored as friction_choice scores
the friction model (its CRITERION: per-joint normalised squared residuals, the paired difference's σ from block
means), over the joints the known mass determines; the simplest eligible candidate within SEPARATION_SIGMAS of the
best is chosen (choice_record.GAIN_HOLDOUT_CRITERION). Each held-out part's mass with the gains fixed (the mass
free in that fit) is recorded beside it: the gains' common error on the joints the load torques.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.friction import DEFAULT_SIGN_EPSILON, FrictionModel
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.robot_id.choice_record import GainCandidate, HeldOutGainScore
from payload_id_core.robot_id.drive_gains import (
    DriveGainRows,
    drive_gain_rows,
    fit_gains_output_error,
    gain_fit_covariance,
)
from payload_id_core.robot_id.friction_choice import held_out_scores
from payload_id_core.signals.recording import Recording

# Two halves of the calibration's loaded run: each half still sweeps most of the excitation's joint ranges (a
# periodic Fourier trajectory's half-period), and more folds leave each training set closer to the whole run.
HOLDOUT_FOLDS = 2
# φ_L' on the held-out samples: fixed-point steps with the load friction's |û| taken from the previous step.
PHI_STEPS = 3
# Payload parameters in the output-error rows: [m, m·c (3), I (6)]; the mass is the known one.
PHI_FREE = 9


@dataclass(frozen=True)
class GainModelSpec:
    """One candidate friction model for the gains: identify_drive_gains' friction, load_friction and shared_mu."""

    kind: str
    friction: str | FrictionModel
    load_friction: np.ndarray | None = None
    shared_mu: bool = False
    sign_epsilon: float | None = None


@dataclass(frozen=True)
class HeldOutPrediction:
    """A candidate's held-out residuals (efforts, one (N, n) array per held-out part) and each part's mass with its
    gains fixed (kg)."""

    residuals: list[np.ndarray]
    mass: list[float]
    mass_std: list[float]


def split_rows(rows: DriveGainRows, held: np.ndarray) -> tuple[DriveGainRows, DriveGainRows]:
    """(training rows, held-out rows): the loaded samples `held` (bool over the loaded run's samples) taken out."""
    keep = np.concatenate([np.ones(rows.n_unloaded, bool), ~held])
    loaded = np.concatenate([np.zeros(rows.n_unloaded, bool), held])

    def take(mask: np.ndarray, n_unloaded: int) -> DriveGainRows:
        sub = mask[rows.n_unloaded:]
        return DriveGainRows(rows.xs[mask], rows.cs[mask], rows.es[mask], rows.sgn[mask], n_unloaded, rows.c1[sub],
                             rows.yl[sub])

    return take(keep, rows.n_unloaded), take(loaded, 0)


def predict_held_out(train: DriveGainRows, test: DriveGainRows, lf: np.ndarray, shared_mu: bool,
                     mass: float) -> tuple[np.ndarray, float, float]:
    """((N, n) held-out effort residuals, the held-out part's mass (kg) with the gains fixed and its Newey–West σ)
    of the candidate fitted
    on `train`: its θ, gains, friction and μ fixed, φ_L' fitted on `test` (whose known mass is `mass`)."""
    k, x, mu, sig, _, _ = fit_gains_output_error(train.xs, train.cs, train.es, train.sgn, lf, shared_mu)
    n_theta = x.size - PHI_FREE
    u_robot = test.xs[..., :n_theta] @ x[:n_theta]
    y_phi = test.xs[..., n_theta:]
    w = 1.0 / (sig * k)

    def fitted(columns: np.ndarray, known: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(parameters, model torque, the first parameter's Newey–West σ) of the load's `columns` on the held-out
        samples, the friction's μ|û| from the previous step's û."""
        p = start
        for _ in range(PHI_STEPS):
            u = u_robot + known + columns @ p
            target = (test.es - mu * np.abs(u / k) * test.sgn * lf) * k - u_robot - known
            jw = (columns * w[None, :, None]).reshape(-1, p.size)
            p = np.linalg.lstsq(jw, (target * w).reshape(-1), rcond=1e-10)[0]
        wres = (target - columns @ p) * w
        cov = gain_fit_covariance(jw, wres / np.sqrt(np.mean(wres ** 2, axis=0)), 0)
        scale = float(np.sqrt(np.mean(wres ** 2)))
        return p, u_robot + known + columns @ p, scale * float(np.sqrt(max(cov[0, 0], 0.0)))

    phi, u, _ = fitted(y_phi, test.cs, x[n_theta:])
    res = test.es - u / k - mu * np.abs(u / k) * test.sgn * lf
    mass_col = test.cs[..., None] / mass
    free, _, mass_std = fitted(np.concatenate([mass_col, y_phi], axis=2), np.zeros_like(test.cs), np.r_[mass, phi])
    return res, float(free[0]), mass_std


def held_out_predictions(specs: Sequence[GainModelSpec], rows_for: Callable[[GainModelSpec, Recording | None,
                                                                           Recording, float], DriveGainRows],
                         unloaded: Recording, loaded: Recording, mass: float,
                         checks: Sequence[tuple[Recording, float]] = ()) -> dict[str, HeldOutPrediction]:
    """kind → its held-out prediction: on the `checks` (run, known mass) when given, else on HOLDOUT_FOLDS contiguous
    parts of `loaded`. `rows_for(spec, unloaded or None, loaded, mass)` builds identify_drive_gains' rows with the
    calibration's conditioning and the spec's friction model."""
    out = {}
    for spec in specs:
        lf = np.zeros(0, bool) if spec.load_friction is None else np.asarray(spec.load_friction, dtype=bool)
        rows = rows_for(spec, unloaded, loaded, mass)
        lf = lf if lf.size else np.zeros(rows.es.shape[1], bool)
        residuals, masses, stds = [], [], []
        if checks:
            for run, m in checks:
                r, found, std = predict_held_out(rows, rows_for(spec, None, run, m), lf, spec.shared_mu, m)
                residuals.append(r)
                masses.append(found)
                stds.append(std)
        else:
            n1 = rows.es.shape[0] - rows.n_unloaded
            for part in np.array_split(np.arange(n1), HOLDOUT_FOLDS):
                held = np.zeros(n1, bool)
                held[part] = True
                train, test = split_rows(rows, held)
                r, found, std = predict_held_out(train, test, lf, spec.shared_mu, mass)
                residuals.append(r)
                masses.append(found)
                stds.append(std)
        out[spec.kind] = HeldOutPrediction(residuals, masses, stds)
    return out


def calibration_rows(model: RobotModel, frame: str, *, use_commanded: bool, delay: str | float,
                     cutoff_hz: float | None, decimate: int,
                     gear_mu: np.ndarray | None) -> Callable[[GainModelSpec, Recording | None, Recording, float],
                                                             DriveGainRows]:
    """held_out_predictions' `rows_for` with identify_robot's conditioning."""
    def rows_for(spec: GainModelSpec, unloaded: Recording | None, loaded: Recording, mass: float) -> DriveGainRows:
        return drive_gain_rows(model, unloaded, loaded, mass, frame, friction=spec.friction,
                               use_commanded=use_commanded, delay=delay, cutoff_hz=cutoff_hz, decimate=decimate,
                               gear_mu=gear_mu,
                               sign_epsilon=DEFAULT_SIGN_EPSILON if spec.sign_epsilon is None else spec.sign_epsilon)
    return rows_for


def judge_on_held_out(candidates: Sequence[GainCandidate], specs: Sequence[GainModelSpec],
                      rows_for: Callable[[GainModelSpec, Recording | None, Recording, float], DriveGainRows],
                      unloaded: Recording, loaded: Recording, mass: float, determined: np.ndarray,
                      checks: Sequence[tuple[Recording, float]] = ()) -> list[str]:
    """Set each eligible candidate's `held_out` score (GAIN_HOLDOUT_CRITERION; `specs` the candidates' friction
    models, by kind) on the check runs or the loaded run's parts; returns what they were judged on."""
    judged = [c for c in candidates if c.eligible]
    by_kind = {s.kind: s for s in specs}
    pred = held_out_predictions([by_kind[c.kind] for c in judged], rows_for, unloaded, loaded, mass, checks)
    det = np.asarray(determined, dtype=bool)
    _, score, excess_std = held_out_scores({k: [r[:, det] for r in p.residuals] for k, p in pred.items()})
    for c in judged:
        c.held_out = HeldOutGainScore(score[c.kind], excess_std[c.kind], pred[c.kind].mass, pred[c.kind].mass_std)
    if checks:
        return [f"gain check run {run.source or i + 1} ({m:g} kg)" for i, (run, m) in enumerate(checks)]
    return [f"{loaded.source or 'the loaded run'} part {i + 1} of {HOLDOUT_FOLDS}" for i in range(HOLDOUT_FOLDS)]
