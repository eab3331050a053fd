"""The one path from a solver's raw solution to the PayloadEstimate a user sees.

Every method (offline, the online estimators' running estimate, an identify goal's final result)
goes through the same three steps:
  1. undetermined entries of φ_L take the prior's value and a NaN standard deviation (undetermined);
  2. the model-error check compares the fit's residual with the robot identification's own;
  3. a physically inconsistent raw estimate (mass <= 0 or pseudo-inertia not positive semidefinite,
     Wensing 2017) is projected onto the feasible set (consistency.project_feasible), and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_id_core.dynamics.inertia import PARAM_NAMES, is_physically_consistent
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.consistency import MIN_MASS, project_feasible
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification

MODEL_ERROR_RATIO_LIMIT = 1.5  # residual RMS over the robot identification's: above it, unmodelled effects dominate


def prior_phi(prior: PayloadEstimate | Sequence[float] | np.ndarray | None) -> np.ndarray:
    """φ for the entries the data leave undetermined: a PayloadEstimate, a 10-vector, or None (zeros)."""
    if prior is None:
        return np.zeros(10)
    return np.asarray(prior.phi if isinstance(prior, PayloadEstimate) else prior, dtype=float).reshape(10)


def undetermined_to_prior(z: np.ndarray, cov: np.ndarray, ok: np.ndarray, prior: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Note]]:
    """(φ_L, its covariance, which entries are determined, notes) from a solution z = [φ_L, …]."""
    phi = np.array(z[:10], dtype=float)
    ok10 = np.array(ok[:10], dtype=bool)
    phi[~ok10] = prior[~ok10]
    cov10 = np.array(cov[:10, :10], dtype=float)
    cov10[~ok10, :] = np.nan
    cov10[:, ~ok10] = np.nan
    notes = []
    if not ok10.all():
        notes.append(Note(NoteCode.PAYLOAD_NOT_IDENTIFIABLE,
                          "not identifiable from this robot and motion (fixed to the prior): "
                          + ", ".join(n for n, k in zip(PARAM_NAMES, ok10) if not k)))
    return phi, cov10, ok10, notes


def model_error_ratio(sigma: np.ndarray, robot: RobotIdentification | None) -> np.ndarray | None:
    """Per joint: the fit's residual RMS over the unloaded identification's torque RMSE (None if unknown)."""
    rmse = np.asarray(robot.rmse if robot is not None else [], dtype=float).reshape(-1)
    sigma = np.asarray(sigma, dtype=float).reshape(-1)
    if rmse.size != sigma.size or not np.all(rmse > 0):
        return None
    return sigma / rmse


def model_error_notes(ratio: np.ndarray | float | None) -> list[Note]:
    """The residual-based model-error check (one rule for every method).

    Near 1 the payload model explains the loaded run as well as the robot model explained its own run;
    well above 1 something unmodelled remains, and the reported std (from the residual scatter, assumed
    white) understates the error: then the note's code is PAYLOAD_MODEL_ERROR_HIGH."""
    if ratio is None:
        return []
    r = np.atleast_1d(np.asarray(ratio, dtype=float))
    if not np.all(np.isfinite(r)):
        return []
    values = f"{float(r[0]):.2f}" if r.size == 1 else f"per joint {np.round(r, 2).tolist()}"
    text = f"model-error check: residual RMS / unloaded identification RMS {values}"
    if np.max(r) > MODEL_ERROR_RATIO_LIMIT:
        return [Note(NoteCode.PAYLOAD_MODEL_ERROR_HIGH,
                     text + f" (above {MODEL_ERROR_RATIO_LIMIT}: unmodelled effects, the std understates the error)")]
    return [Note(NoteCode.PAYLOAD_MODEL_ERROR, text)]


def project_if_inconsistent(est: PayloadEstimate) -> PayloadEstimate:
    """Project a physically inconsistent φ_L onto the feasible set; the covariance stays the raw estimate's."""
    if is_physically_consistent(est.phi) and est.phi[0] >= MIN_MASS:
        return est  # saves the semidefinite program; project_feasible would agree
    projected, consistent, dist = project_feasible(est.phi, est.covariance, est.identifiable)
    if consistent:
        return est
    est.phi = np.asarray(projected, dtype=float)
    est.physically_consistent = False
    est.notes.append(Note(NoteCode.PAYLOAD_PROJECTED,
                          "raw estimate not physically consistent (pseudo-inertia not positive semidefinite or "
                          f"mass <= 0): projected onto the feasible set, {dist:.3g} standard deviations away; "
                          "covariance is the raw estimate's"))
    return est


def finish(frame: str, method: str, z: np.ndarray, cov: np.ndarray, ok: np.ndarray, notes: Sequence[Note | str], *,
           prior=None, project: bool = True, converged: bool = True, convergence_time: float = float("nan"),
           history: dict | None = None, friction_unknowns: int = 0) -> PayloadEstimate:
    """PayloadEstimate from a solution z = [φ_L, Δφ_f, …] with covariance `cov` and determined entries `ok`."""
    if not bool(np.asarray(ok)[0]):
        raise PayloadIdError("the motion does not determine the payload mass",
                             "play an exciting trajectory that moves the joints against gravity (payload-id excite)")
    phi, cov10, ok10, prior_notes = undetermined_to_prior(z, cov, ok, prior_phi(prior))
    all_notes: list[Note | str] = [*notes, *prior_notes]
    if friction_unknowns:
        all_notes.append(Note(NoteCode.PAYLOAD_FRICTION_CHANGE,
                              f"friction change under load estimated ({friction_unknowns} parameters)"))
    est = PayloadEstimate(frame=frame, phi=phi, covariance=cov10, method=method, identifiable=ok10,
                          converged=converged, convergence_time=convergence_time, notes=all_notes, history=history)
    return project_if_inconsistent(est) if project else est
