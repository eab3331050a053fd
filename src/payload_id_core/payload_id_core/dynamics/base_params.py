"""Numerical base parameters (Gautier 1991; Khalil 2007 §II; Gaz 2017 eq. 10–11).

The rigid-body regressor W (stacked over random samples) is rank deficient: some standard
parameters never act, others act only in fixed linear combinations. A rank-revealing
orthogonalisation (Gautier's QR, here with a fixed column priority instead of norm pivoting so the
groupings read like Khalil's) picks b independent columns W1 and expresses the others as
W2 = W1 β. Then for every φ:  W φ = W1 (φ1 + β φ2) = W1 π_b,  so  π_b = K φ  with K holding the
identity on the independent columns and β on the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.inertia import PARAM_NAMES
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import rigid_body_regressor
from payload_id_core.errors import PayloadIdError

# Relative size below which a column counts as zero / dependent. Real gaps are ~1e-3 → ~1e-14.
RANK_TOL = 1e-9
# Entries of β below this are round-off, not regrouping.
BETA_TOL = 1e-9


def standard_parameter_names(model: RobotModel) -> list[str]:
    """Names of the 10 n standard parameters: 'Izz2' is Izz of the body moved by joint 2."""
    return [f"{p}{j + 1}" for j in range(model.n) for p in PARAM_NAMES]


@dataclass
class BaseParameters:
    """π_b = K φ; Y φ == reduce(Y) @ (K φ) for every rigid-body regressor Y of this robot."""

    independent: np.ndarray   # (b,) indices into the 10 n standard parameters, ascending
    K: np.ndarray             # (b, 10 n)
    names: list[str]          # readable: which standard parameters each base parameter groups
    standard_names: list[str]

    @property
    def b(self) -> int:
        return int(self.independent.size)

    def reduce(self, y: np.ndarray) -> np.ndarray:
        """Base regressor: the independent columns of a standard regressor (..., 10 n)."""
        return y[..., self.independent]

    def values(self, phi: np.ndarray) -> np.ndarray:
        return self.K @ np.asarray(phi, dtype=float)

    def to_dict(self) -> dict:
        return {
            "count": self.b,
            "independent": [int(i) for i in self.independent],
            "names": list(self.names),
            # Row i: the standard parameters grouped into base parameter i, with their coefficients.
            "regrouping": [{self.standard_names[c]: float(self.K[i, c]) for c in np.flatnonzero(self.K[i])}
                           for i in range(self.b)],
        }

    @classmethod
    def from_dict(cls, d: dict, standard_names: list[str]) -> BaseParameters:
        index = {name: i for i, name in enumerate(standard_names)}
        rows = d["regrouping"]
        k = np.zeros((len(rows), len(standard_names)))
        for i, row in enumerate(rows):
            for name, coef in row.items():
                if name not in index:
                    raise PayloadIdError(f"robot.yaml groups an unknown standard parameter '{name}'",
                                         "the file was made for another robot; re-run identify-robot")
                k[i, index[name]] = coef
        return cls(np.asarray(d["independent"], dtype=int), k, list(d["names"]), list(standard_names))


def _random_states(model: RobotModel, n_samples: int, rng: np.random.Generator):
    lim = model.limits
    lo = np.where(np.isfinite(lim.lower), np.maximum(lim.lower, -np.pi), -np.pi)
    hi = np.where(np.isfinite(lim.upper), np.minimum(lim.upper, np.pi), np.pi)
    q = lo + (hi - lo) * rng.random((n_samples, model.n))
    return q, rng.standard_normal((n_samples, model.n)), rng.standard_normal((n_samples, model.n))


def _readable(names: list[str], coefs: np.ndarray) -> str:
    terms = []
    for name, c in zip(names, coefs):
        if abs(c - 1.0) < 1e-9:
            terms.append(f"+ {name}")
        elif abs(c + 1.0) < 1e-9:
            terms.append(f"- {name}")
        else:
            terms.append(f"{'+' if c >= 0 else '-'} {abs(c):.6g}*{name}")
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else text


# Which standard parameter stays when several act together: links base to tip, inside a link the
# inertia terms, then first moments, then the mass. Masses of distal links then regroup into the
# first moments and inertias of proximal ones, the familiar form of Khalil's symbolic rules.
_LINK_PRIORITY = ["Izz", "Ixx", "Iyy", "Ixy", "Ixz", "Iyz", "mcx", "mcy", "mcz", "m"]


def _priority(n: int) -> list[int]:
    return [10 * j + PARAM_NAMES.index(name) for j in range(n) for name in _LINK_PRIORITY]


def _greedy_independent(w: np.ndarray, order: list[int]) -> np.ndarray:
    """Columns of w, tried in `order`, kept when not in the span of those kept before (Gram-Schmidt
    with re-orthogonalisation; QR column pivoting would pick by column norm, giving odd groupings)."""
    scale = np.abs(w).max()
    basis = np.zeros((w.shape[0], 0))
    kept = []
    for c in order:
        col = w[:, c]
        norm = np.linalg.norm(col)
        if norm <= RANK_TOL * scale:
            continue
        v = col - basis @ (basis.T @ col)
        v = v - basis @ (basis.T @ v)
        if np.linalg.norm(v) > RANK_TOL * 1e2 * norm:
            basis = np.column_stack([basis, v / np.linalg.norm(v)])
            kept.append(c)
    return np.sort(np.array(kept, dtype=int))


def compute_base_parameters(model: RobotModel, seed: int = 0, n_samples: int | None = None) -> BaseParameters:
    """Base parameters of `model` under its gravity, from the regressor on random states (Gautier 1991)."""
    rng = np.random.default_rng(seed)
    p = 10 * model.n
    n_samples = n_samples or max(40, 3 * p // model.n)
    q, qd, qdd = _random_states(model, n_samples, rng)
    w = rigid_body_regressor(model, q, qd, qdd).reshape(-1, p)
    independent = _greedy_independent(w, _priority(model.n))
    b = independent.size
    if b == 0:
        raise PayloadIdError("no inertial parameter of this robot affects its joint torques",
                             "check the URDF's joints and the gravity direction")
    w1 = w[:, independent]
    beta = np.linalg.lstsq(w1, w, rcond=None)[0]   # (b, p): every column as a combination of W1
    beta[np.abs(beta) < BETA_TOL] = 0.0
    k = beta
    k[:, independent] = np.eye(b)
    std_names = standard_parameter_names(model)
    names = []
    for i in range(b):
        # The independent parameter first, then what it absorbs.
        cols = [independent[i]] + [c for c in np.flatnonzero(k[i]) if c != independent[i]]
        names.append(_readable([std_names[c] for c in cols], k[i, cols]))
    return BaseParameters(independent, k, names, std_names)
