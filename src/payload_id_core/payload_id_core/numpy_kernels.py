"""numpy's C kernels without numpy's Python-level dispatch, for the per-sample paths (issue 35: ~0.2 µs for
concatenate and ~0.4 µs for einsum of a ~21 µs online update). They are the functions np.concatenate and np.einsum
(not optimising) call themselves, so the numbers are the same bits either way.

Where the kernel lives moved between numpy releases (numpy.core before 2.0, numpy._core since), and a ROS install
runs the distribution's numpy (package.xml: python3-numpy; Ubuntu 24.04 ships 1.26), not the pinned wheel: each
name falls back to the public function, slower by its dispatch and otherwise identical.
"""

from __future__ import annotations

import numpy as np

try:
    from numpy._core.multiarray import c_einsum as einsum  # numpy ≥ 2
except ImportError:
    try:
        from numpy.core.multiarray import c_einsum as einsum  # type: ignore[no-redef]  # numpy 1.x
    except ImportError:
        einsum = np.einsum

concatenate = getattr(np.concatenate, "_implementation", np.concatenate)

__all__ = ["concatenate", "einsum"]
