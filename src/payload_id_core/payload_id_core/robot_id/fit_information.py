"""The covariance (JᵀJ)⁻¹ of a least-squares fit's unknowns from the information its data carry on each of them.

The drive-gain fit (drive_gains.py) mixes unknowns whose columns differ by orders of magnitude (the robot's inertias and
friction, the load's moments, the gains) and, where the calibration load barely torques a joint, one whose column the
others nearly span: the gain and that joint's own θ scale together. `np.linalg.pinv(JᵀJ, rcond=1e-12)` then drops
the unresolved direction instead of reporting it, and the gain it holds comes out with a tiny σ: with a 3 kg load's
CoM on the last joint's axis (simulate --profile ur10, 100 Hz) wrist 3 read 8.0e5 ± 0.03 %, for 10.12 (h148's case;
1.1e6 ± 0.001 % with the CoM 2 mm off the axis).

Here every column is first scaled to unit norm (the rank decision is then about the data, not the units), and each
unknown's variance is the inverse of the information the data carry on it alone: the squared norm of the part of its
column the other unknowns' columns cannot reproduce (the Schur complement of JᵀJ; Seber & Wild, Nonlinear Regression,
1989, §2.1.3 / Björck, Numerical Methods for Least Squares Problems, 1996, §1.1.5). Where the fit is well posed
this is exactly (JᵀJ)⁻¹'s diagonal; where an unknown's column lies in the others' span to within rounding it is
infinite, and the unknown is reported undetermined, not precise. Its correlations with the others are dropped (zero):
there is nothing to correlate. A column no longer than the Jacobian's rank tolerance (max(shape)·eps·‖J‖₂, as
numpy's matrix_rank) is rounding, not data (an unknown the motion does not excite: a planar arm's out-of-plane load
moments): undetermined, and left out of the others' information."""

from __future__ import annotations

import numpy as np


def information_covariance(jw: np.ndarray) -> np.ndarray:
    """(p, p) covariance of the unknowns of a fit with weighted Jacobian `jw` (rows, p), residuals weighted to unit
    variance: (JᵀJ)⁻¹ on the column-equilibrated Jacobian, each variance the inverse of that unknown's own information
    (module docstring), infinite (its row and column otherwise zero) where the data carry none."""
    a = np.asarray(jw, dtype=float)
    p = a.shape[1]
    scale = np.linalg.norm(a, axis=0)
    tol = max(a.shape) * np.finfo(float).eps
    # A column no longer than the rank tolerance of the whole Jacobian (numpy's matrix_rank: max(shape)·eps·‖J‖₂) is
    # rounding, not data: an unknown the motion does not excite at all. Scaled to unit norm its rounding would pass for
    # a column, and one that is a combination of the others' (as rounding is) takes every unknown's information with
    # it: the planar_2r's six out-of-plane load moments (norms 1e-13-1e-11, ‖J‖₂ 8.9e3) made both gains ± inf.
    live = np.flatnonzero(scale > tol * np.linalg.norm(a, 2)) if a.size else np.arange(0)
    cov = np.zeros((p, p))
    var = np.full(p, np.inf)
    if live.size:
        r: np.ndarray = np.asarray(np.linalg.qr(a[:, live] / scale[live], mode="r"))  # ‖A x‖ = ‖R x‖: all on R
        inv = np.linalg.pinv(r, rcond=tol)
        unit_cov = inv @ inv.T                                  # (RᵀR)⁺: the correlations where resolved
        info = np.empty(live.size)
        for i in range(live.size):
            others = np.delete(r, i, axis=1)
            coef, *_ = np.linalg.lstsq(others, r[:, i], rcond=tol)
            explained = others @ coef
            info[i] = float(np.sum((r[:, i] - explained) ** 2))
        # A unit column the others reproduce to within rounding (its own part no longer than the rank tolerance): no
        # information of its own.
        known = info > tol ** 2
        unit_var = np.where(known, 1.0 / np.where(known, info, 1.0), np.inf)
        block = unit_cov / np.outer(scale[live], scale[live])
        keep = live[known]
        cov[np.ix_(keep, keep)] = block[np.ix_(known, known)]
        var[live] = unit_var / scale[live] ** 2
    # The Schur variance is (JᵀJ)⁻¹'s own diagonal where resolved; never below the pseudo-inverse's (it only drops).
    np.fill_diagonal(cov, np.maximum(var, np.diag(cov)))
    return cov


def determined(cov: np.ndarray) -> np.ndarray:
    """(p,) bool: the unknowns `information_covariance` found information on (a finite variance)."""
    return np.isfinite(np.diag(np.asarray(cov, dtype=float)))
