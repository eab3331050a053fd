"""Refusing signals the identification cannot use, with the joints named."""

from __future__ import annotations

import numpy as np

from payload_id_core.errors import PayloadIdError


def require_finite(name: str, a: np.ndarray | None, joint_names: list[str]) -> None:
    """PayloadIdError counting the samples of `a` (N, n) that hold NaN or inf, and naming their joints."""
    if a is None:
        return
    bad = ~np.isfinite(a)
    if bad.any():
        cols = [joint_names[j] for j in np.flatnonzero(bad.any(axis=0))]
        raise PayloadIdError(f"{int(bad.any(axis=1).sum())} samples hold NaN or infinite {name} (joints {cols})",
                             "clean the recording or record again")
