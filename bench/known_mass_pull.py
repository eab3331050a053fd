"""A weighed mass against the data's own mass, one-dimensional (issue 30, h116: priors.weighed_mass_pull).

The data's mass m̂ ~ N(truth, σ²), the weighed mass M ± S given as the truth + OFFSETS·S. Two rules: the Birge
widening alone (priors._covering_the_disagreement: the conditioned mass, σ × max(1, R), R = |m̂ − M| / √(σ² + S²);
R > 3 contradicted) and with the pull check (the conditioning moves m̂ by more than 2σ: suspect, numbers kept).
Both use priors.py's own constants. DRAWS draws of m̂ per (σ/S, offset). Prints one JSON object as its last line:

  pull_<σ/S>_<offset>_confident_wrong_birge   fraction of draws not suspect and more than 3σ off the truth, Birge only
  pull_<σ/S>_<offset>_confident_wrong_pull    the same with the pull check
  pull_<σ/S>_<offset>_suspect_pull            fraction made suspect (contradicted or pulled) with the pull check
    <σ/S> the data's mass σ over the weighed mass's (0.5, 1, 1.7: the real UR10e's, 4, 10); <offset> the weighed mass's
    error in its own S (0: a right weighed mass, then suspect_pull is the false-alarm rate).
"""

from __future__ import annotations

import json

import numpy as np

from payload_id_core.payload.priors import KNOWN_MASS_PULL_DATA_SIGMA, PRIOR_CONTRADICTION_SIGMA

DRAWS = 200_000
RATIOS = (0.5, 1.0, 1.7, 4.0, 10.0)
OFFSETS = (0, 4, 8, 16, 32)


def main() -> None:
    rng = np.random.default_rng(1)
    out: dict = {}
    for ratio in RATIOS:
        s, sd = 1.0, ratio
        for offset in OFFSETS:
            m_hat = sd * rng.standard_normal(DRAWS)      # the truth is 0
            weighed = offset * s
            combined = np.hypot(sd, s)
            r = np.abs(m_hat - weighed) / combined
            post = (m_hat / sd**2 + weighed / s**2) / (1 / sd**2 + 1 / s**2)
            post_std = np.maximum(r, 1.0) / np.sqrt(1 / sd**2 + 1 / s**2)
            contradicted = r > PRIOR_CONTRADICTION_SIGMA
            pulled = np.abs(post - m_hat) > KNOWN_MASS_PULL_DATA_SIGMA * sd
            # Contradicted: the data's own estimate stays (suspect); otherwise the conditioned one.
            value = np.where(contradicted, m_hat, post)
            std = np.where(contradicted, sd, post_std)
            off = np.abs(value) > 3 * std
            key = f"pull_{ratio:g}_{offset}"
            out[f"{key}_confident_wrong_birge"] = float(np.mean(off & ~contradicted))
            out[f"{key}_confident_wrong_pull"] = float(np.mean(off & ~contradicted & ~pulled))
            out[f"{key}_suspect_pull"] = float(np.mean(contradicted | pulled))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
