"""A bounding box whose CoM lies near a face (issue 30, h147: payload/box_fractions.py).

The synthetic 4 kg body of test_payload_priors (the box [-0.04, -0.11, 0] to [0.16, 0.09, 0.2] m), made a slab at
the box's +x face whose CoM is k of the data's CoM σ (1.28 mm) inside it: 2k σ thick along x, 14 × 12 cm across
(k = 0: a sheet on the face). DRAWS draws of the data's Gaussian about it (σ 0.02 kg, 4 g·m in m·c; the inertia's
σ per REGIMES) each through priors.apply_prior with the box alone. Prints one JSON object as its last line:

  face_<regime>_<k>_applied           fraction of draws whose box was applied (no prior_not_applied)
  face_<regime>_<k>_suspect           fraction marked suspect
  face_<regime>_<k>_com_x_err_sigma   median of (CoM x − truth) / its σ (< 0: off the face, into the box)
  face_<regime>_<k>_com_err_sigma     median over draws of the largest |CoM error| / σ of the three axes
  face_<regime>_<k>_inertia_err_sigma median over draws of the largest |inertia error| / σ of the six entries
  face_<regime>_<k>_coverage_2sigma   fraction of all ten entries within 2σ of the truth
  face_<regime>_<k>_coverage_2sigma_com   the same for the CoM's three
  face_<regime>_<k>_data_coverage_2sigma_com   the data's own CoM's (no box), for the same draws
  face_<regime>_<k>_com_x_std_mm      median CoM x σ, mm
  face_<regime>_<k>_time_s            median time of apply_prior, s
    <regime> unresolved (inertia σ 0.02 kg·m²: the motion resolves no principal moment, the test's) | resolved
    (0.002 kg·m²); <k> 0 | 1 | 2 | 3.
FACE_DISTANCES, FACE_DRAWS and FACE_REGIMES (comma lists) choose what is run.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.payload_estimate import PayloadEstimate, Quality, readable_vector

MASS = 4.0
BOX = [-0.04, -0.11, 0.0, 0.16, 0.09, 0.2]
ACROSS = (0.14, 0.12)               # the slab's size along y and z, m
COM_YZ = (-0.03, 0.09)
REGIMES = {"unresolved": 0.02, "resolved": 0.002}
DISTANCES = tuple(float(k) for k in os.environ.get("FACE_DISTANCES", "0,1,2,3").split(","))
DRAWS = int(os.environ.get("FACE_DRAWS", "20"))


def data_cov(inertia_std: float) -> np.ndarray:
    return np.diag(np.r_[0.02**2, np.full(3, 0.004**2), np.full(6, inertia_std**2)])


def com_x_sigma() -> float:
    """The data's CoM x σ at the face (m), as the estimate propagates it."""
    phi = from_mass_com_inertia(MASS, np.array([BOX[3], *COM_YZ]), np.eye(3) * 1e-3)
    return float(PayloadEstimate(frame="tool0", phi=phi, covariance=data_cov(0.02),
                                 method="khalil-1").propagated_std()[1])


def slab(k: float, sigma: float) -> np.ndarray:
    """φ of the 4 kg slab whose CoM is k σ inside the box's +x face."""
    d = k * sigma
    sig = MASS / 12 * np.array([(2 * d) ** 2, ACROSS[0] ** 2, ACROSS[1] ** 2])
    inertia = np.diag([sig[1] + sig[2], sig[0] + sig[2], sig[0] + sig[1]])
    return from_mass_com_inertia(MASS, np.array([BOX[3] - d, *COM_YZ]), inertia)


def main() -> None:
    limit_blas_threads(1)
    out: dict = {}
    sigma = com_x_sigma()
    prior = PayloadPrior.checked(BOX)
    for regime in os.environ.get("FACE_REGIMES", ",".join(REGIMES)).split(","):
        cov = data_cov(REGIMES[regime])
        for k in DISTANCES:
            truth_phi = slab(k, sigma)
            truth = readable_vector(truth_phi)
            rows = []
            for seed in range(DRAWS):
                noisy = np.random.default_rng(1000 + seed).multivariate_normal(truth_phi, cov)
                data = PayloadEstimate(frame="tool0", phi=noisy.copy(), covariance=cov.copy(), method="khalil-1")
                data_z = (readable_vector(data.phi) - truth) / data.propagated_std()
                t0 = time.perf_counter()
                est = apply_prior(data, prior)
                elapsed = time.perf_counter() - t0
                std = est.propagated_std()
                z = (readable_vector(est.phi) - truth) / std
                rows.append({"applied": "bounding_box" not in est.prior_not_applied,
                             "suspect": est.quality is Quality.SUSPECT, "com_x": z[1],
                             "com": np.max(np.abs(z[1:4])), "inertia": np.max(np.abs(z[4:])),
                             "covered": np.mean(np.abs(z) <= 2), "covered_com": np.mean(np.abs(z[1:4]) <= 2),
                             "data_covered_com": np.mean(np.abs(data_z[1:4]) <= 2), "std_x": 1e3 * std[1],
                             "time": elapsed})
            col = {name: np.array([r[name] for r in rows], dtype=float) for name in rows[0]}
            key = f"face_{regime}_{k:g}"
            out.update({f"{key}_applied": float(col["applied"].mean()), f"{key}_suspect": float(col["suspect"].mean()),
                        f"{key}_com_x_err_sigma": float(np.median(col["com_x"])),
                        f"{key}_com_err_sigma": float(np.median(col["com"])),
                        f"{key}_inertia_err_sigma": float(np.median(col["inertia"])),
                        f"{key}_coverage_2sigma": float(col["covered"].mean()),
                        f"{key}_coverage_2sigma_com": float(col["covered_com"].mean()),
                        f"{key}_data_coverage_2sigma_com": float(col["data_covered_com"].mean()),
                        f"{key}_com_x_std_mm": float(np.median(col["std_x"])),
                        f"{key}_time_s": float(np.median(col["time"]))})
            print(key, {n[len(key) + 1:]: round(v, 3) for n, v in out.items() if n.startswith(key)}, flush=True,
                  file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
