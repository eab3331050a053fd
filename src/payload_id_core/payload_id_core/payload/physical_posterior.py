"""σ of the inertia with physical consistency: the data's Gaussian restricted to the bodies J ⪰ 0 (issues 29/30).

Every body has a positive semidefinite pseudo-inertia J = [[Σ, h], [hᵀ, m]] (Wensing, Kim & Slotine 2017, eq. 9 and
Theorem 1: density realizability without a bounding shape), so the estimate of φ_L is the data's Gaussian N(φ̂, C)
restricted to J ⪰ 0, as priors.apply_prior restricts it to the bodies in a box (the box's set is this one cut further).
finish.finish projects the point onto the set (consistency.project_feasible, the posterior's mode in the data's
metric) but used to report C unrestricted: where J ⪰ 0 cuts the data's Gaussian (a triangle inequality I_xx + I_yy ≥
I_zz, Σ_ii ≥ 0, a small fraction of a σ from the estimate) the σ were wider than the physics leaves them. The simulated
cell at 3 s (h189): 34 % of the data's draws are bodies, and a 20 cm box narrowed the inertia only through them.

Computed exactly, without a Markov chain: draws of N(φ̂, C) that are bodies ARE draws of the restricted Gaussian
(rejection sampling), so their moments need no convergence check. The reported σ is the restricted posterior's second
moment about the reported point (the projection, kept bit for bit), σ² = σ_restricted² + (mean − point)²: the
restriction's own spread plus the pull of its flat prior's volume on the mean (priors.moments_reaching_the_mode's
rule, with the point in the mode's place), and never beyond the data's own σ of any entry. Only the inertia about the
CoM takes it: the mass and CoM keep the data's σ (what J ⪰ 0 would do to them is small and rides on the moments'
flat-prior shape, as the box's moments_resolved rule found: design.md "Physical consistency's σ"). Where J ⪰ 0 cuts
none of the first draws the estimate is left untouched (the constraint is far: nothing to narrow).
"""

from __future__ import annotations

import numpy as np

from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.priors import pseudo_inertia_batch
from payload_id_core.payload_estimate import PayloadEstimate, readable_jacobian

DRAWS_PER_ROUND = 4000      # one batch of the data's Gaussian, checked for J ⪰ 0 at once
MAX_DRAWS = 40000           # at most this many: below ACCEPTED_MIN bodies among them the σ is left as the data's
ACCEPTED_TARGET = 4000      # bodies wanted: σ of the σ about 1/√(2·4000) ≈ 1.1 % where most draws are cut
ACCEPTED_MIN = 1000         # ... and at least this many to use them (σ of the σ 2.2 %)
# An entry whose σ with J ⪰ 0 is below this fraction of the motion's own is narrowed by physical consistency (and
# listed); if none is, the data's numbers stay bit for bit (what is left is the draws' noise, not the physics).
NARROWED_RATIO = 0.98
PINNED_RATIO = 0.5          # as priors.PINNED_RATIO: below half the motion's own σ, physics rather than motion set it
SAMPLING_SEED = 31
READABLE_NAMES = ["mass", "com x", "com y", "com z", "inertia ixx", "inertia ixy", "inertia ixz", "inertia iyy",
                  "inertia iyz", "inertia izz"]


def _bodies(x: np.ndarray) -> np.ndarray:
    """(N,) whether each φ draw (N, 10) is a body: m > 0 and J ⪰ 0 (pseudo-inertia, Wensing 2017 eq. 9)."""
    ok = x[:, 0] > 0
    ok[ok] = np.linalg.eigvalsh(pseudo_inertia_batch(x[ok]))[:, 0] >= 0.0
    return ok


def restricted_second_moment(mean: np.ndarray, cov: np.ndarray, point: np.ndarray
                             ) -> tuple[np.ndarray | None, float, int]:
    """(E[(x − point)(x − point)ᵀ] over N(mean, cov) restricted to the bodies, fraction of draws that are bodies, draws
    made); None where J ⪰ 0 cuts no draw of the first batch (nothing to narrow) or too few draws are bodies.

    The rejected draws are the control variate: E_full[(x − p)(x − p)ᵀ] = cov + (mean − p)(mean − p)ᵀ is exact, so
    the restricted moment is (N · E_full − Σ_rejected) / N_accepted, whose noise is the rejected draws' alone (none
    where J ⪰ 0 cuts a sliver; the plain accepted average where it cuts most: the two agree in expectation)."""
    rng = np.random.default_rng(SAMPLING_SEED)
    c = 0.5 * (cov + cov.T)
    w, V = np.linalg.eigh(c)
    root = V * np.sqrt(np.maximum(w, 0.0))
    n = 0
    rejected_sum = np.zeros((10, 10))
    accepted_sum = np.zeros((10, 10))
    accepted = 0
    while n < MAX_DRAWS and accepted < ACCEPTED_TARGET:
        x = mean + rng.standard_normal((DRAWS_PER_ROUND, 10)) @ root.T
        ok = _bodies(x)
        d = x - point
        rejected_sum += d[~ok].T @ d[~ok]
        accepted_sum += d[ok].T @ d[ok]
        accepted += int(ok.sum())
        n += DRAWS_PER_ROUND
        if accepted == n:
            return None, 1.0, n
        if accepted * MAX_DRAWS < 0.5 * ACCEPTED_MIN * n:   # on course for under half the minimum: stop here
            break
    fraction = accepted / n
    if accepted < ACCEPTED_MIN:
        return None, fraction, n
    if fraction >= 0.5:
        full = c + np.outer(mean - point, mean - point)
        moment = (n * full - rejected_sum) / accepted
    else:
        moment = accepted_sum / accepted
    moment = 0.5 * (moment + moment.T)
    w, V = np.linalg.eigh(moment)
    return (V * np.maximum(w, 0.0)) @ V.T, fraction, n


def narrow_to_physical(est: PayloadEstimate, raw_phi: np.ndarray) -> PayloadEstimate:
    """`est` (its point already projected onto J ⪰ 0 from `raw_phi`, the data's estimate; its covariance the data's)
    with the inertia's σ about the CoM those of the data's Gaussian restricted to the bodies, about est.phi, never
    wider than the data's own; the entries narrowed listed in est.physically_narrowed (σ ratio) and the note.
    Left as it is where φ is not wholly identifiable (free entries make any body reachable), the covariance is not
    finite, or J ⪰ 0 narrows nothing beyond the draws' noise."""
    ok = np.asarray(est.identifiable, dtype=bool)
    cov = np.asarray(est.covariance, dtype=float)
    if not ok.all() or not np.all(np.isfinite(cov)) or not est.phi[0] > 0 or not np.any(np.diag(cov) > 0):
        return est
    point = np.asarray(est.phi, dtype=float)
    moment, fraction, draws = restricted_second_moment(np.asarray(raw_phi, dtype=float), cov, point)
    if moment is None:
        if fraction < 1.0:
            est.notes.append(Note(NoteCode.PAYLOAD_PHYSICALLY_NARROWED, (
                f"physical consistency (J ⪰ 0) holds on {fraction:.1%} of {draws} draws of the data's Gaussian, too "
                "few to measure the σ it leaves: the σ are the motion's own")))
        return est
    jac = readable_jacobian(point)
    data_r = jac @ cov @ jac.T
    new_r = jac @ moment @ jac.T
    # The mass and CoM keep the data's covariance (their cross terms with the inertia mapped along, so the whole stays
    # a covariance): the linear map L_d L_r⁻¹ on (m, c), as priors._with_data_mass_and_com.
    try:
        ld = np.linalg.cholesky(0.5 * (data_r[:4, :4] + data_r[:4, :4].T))
        lr = np.linalg.cholesky(0.5 * (new_r[:4, :4] + new_r[:4, :4].T))
    except np.linalg.LinAlgError:
        return est
    M = np.eye(10)
    M[:4, :4] = ld @ np.linalg.inv(lr)
    new_r = M @ new_r @ M.T
    # Never wider than the motion's own σ (a pull larger than the restriction's narrowing): scaled back per entry.
    data_var, new_var = np.diag(data_r), np.diag(new_r)
    scale = np.ones(10)
    wide = new_var > data_var
    scale[wide] = np.sqrt(data_var[wide] / new_var[wide])
    new_r = scale[:, None] * new_r * scale[None, :]
    ratio = np.sqrt(np.diag(new_r) / np.where(data_var > 0, data_var, np.inf))
    narrowed = {READABLE_NAMES[k]: round(float(ratio[k]), 3) for k in range(4, 10) if ratio[k] < NARROWED_RATIO}
    if not narrowed:
        return est
    back = np.linalg.inv(jac)
    out = back @ new_r @ back.T
    est.covariance = 0.5 * (out + out.T)
    est.physically_narrowed = narrowed
    pinned = [k for k, r in narrowed.items() if r < PINNED_RATIO]
    est.notes.append(Note(NoteCode.PAYLOAD_PHYSICALLY_NARROWED, (
        f"narrowed by physical consistency (J ⪰ 0 holds on {fraction:.0%} of the data's Gaussian; σ over the motion's "
        "own): " + ", ".join(f"{k} {r:.2f}" for k, r in narrowed.items())
        + (f"; pinned by it rather than the motion (below {PINNED_RATIO:g}): " + ", ".join(pinned) if pinned else "")
        + "; the mass and CoM keep the motion's σ")))
    return est


__all__ = ["narrow_to_physical", "restricted_second_moment"]
