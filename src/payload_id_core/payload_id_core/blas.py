"""How many threads BLAS may use: one mechanism for the whole project.

The matrices here are small or tall-and-thin (Gram matrices of 10–100 columns, the excitation
optimizer's 900 x 54 products). On a loaded 2-core machine threaded OpenBLAS's workers spin
against each other: one UR10 excitation optimization ran 20x slower (43 s vs 2 s) and robot
identification 5x slower (19 s vs 3.5 s on the scatter test), erratic from run to run.

- `limit_blas_threads()`: process-wide, called once by every entry point (the `payload-id` CLI,
  the ROS nodes' main(), the benches, the test session). An OPENBLAS_NUM_THREADS or
  OMP_NUM_THREADS the user exported wins.
- `single_threaded_blas()`: a context manager for library code that must be single-threaded
  whoever calls it (the excitation optimizer, robot identification), restoring the caller's
  setting afterwards.

threadpoolctl is not a dependency, so the OpenBLAS libraries bundled with the numpy and scipy
wheels are asked directly through ctypes; other BLAS builds are left alone (then only the
environment variables act, for libraries loaded and processes started after the call).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
# (getter, setter) symbol names, newest scipy-openblas first.
_OPENBLAS_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


@dataclass(frozen=True)
class _OpenBlas:
    get_threads: Callable[[], int]
    set_threads: Callable[[int], None]


def _bundled_openblas() -> list[_OpenBlas]:
    """The OpenBLAS libraries shipped in the numpy and scipy wheels (<pkg>.libs next to the package).
    Loading one that numpy already loaded returns the same library, so this works before and after
    numpy is imported."""
    found = []
    for pkg in ("numpy", "scipy"):
        spec = importlib.util.find_spec(pkg)
        if spec is None or spec.origin is None:   # not installed, or a namespace package without a file
            continue
        root = Path(spec.origin).parent.parent / f"{pkg}.libs"
        for so in root.glob("lib*openblas*.so*"):
            try:
                lib = ctypes.CDLL(str(so))
            except OSError:
                continue
            for get, set_ in _OPENBLAS_SYMBOLS:
                if hasattr(lib, get) and hasattr(lib, set_):
                    found.append(_OpenBlas(getattr(lib, get), getattr(lib, set_)))
                    break
    return found


def limit_blas_threads(threads: int = 1) -> None:
    """Make BLAS use `threads` threads for the rest of the process and its child processes.

    The environment variables reach libraries loaded later and child processes; the bundled
    OpenBLAS already loaded is set directly. A value the user exported is kept."""
    for var in _THREAD_VARIABLES:
        os.environ.setdefault(var, str(threads))
    try:
        wanted = int(os.environ["OPENBLAS_NUM_THREADS"])
    except ValueError:
        return  # not a number: OpenBLAS itself ignores it, so do the same
    for lib in _bundled_openblas():
        lib.set_threads(wanted)


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the bundled OpenBLAS single-threaded inside the block, the caller's setting restored after."""
    libs = [(lib, int(lib.get_threads())) for lib in _bundled_openblas()]
    try:
        for lib, _ in libs:
            lib.set_threads(1)
        yield
    finally:
        for lib, before in libs:
            lib.set_threads(before)
