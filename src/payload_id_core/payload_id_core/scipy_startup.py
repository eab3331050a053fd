"""SciPy's import without its documentation rewriting: for the command line's start-up.

SciPy 1.17 decorates each array-API function with `xp_capabilities`, which at import parses the function's
docstring with numpydoc's FunctionDoc and writes it back with a table of supported backends appended. For
`import scipy.signal` (with scipy.stats, which it imports) that is ~800 docstrings parsed: 40 % of the import,
0.6-1 s of a `payload-id identify-payload` run's wall time on the loaded 2-core machine (issue 35). The
`payload-id` process never reads those docstrings, so `skip_scipy_doc_notes()` has the decorator keep each
docstring as it is. Nothing else changes: the decorator still records the capabilities, the functions are the same
objects and compute the same numbers (test_speed_paths). A SciPy without that decorator is left alone.
"""

from __future__ import annotations


class _DocAsIs(dict):
    """FunctionDoc's face as xp_capabilities uses it (doc['Notes'].append(note); str(doc) = signature line, then
    the docstring), without parsing: the note is dropped, the docstring kept."""

    def __init__(self, func) -> None:
        super().__init__(Notes=[])
        self._doc = getattr(func, "__doc__", None) or ""

    def __str__(self) -> str:
        return "\n" + self._doc


def skip_scipy_doc_notes() -> bool:
    """Before SciPy's submodules load: their array-API functions keep their docstrings unparsed. True when applied
    (scipy._lib._array_api has the FunctionDoc its decorator uses), False otherwise."""
    try:
        from scipy._lib import _array_api  # noqa: PLC0415 - SciPy only when the command line starts, before its submodules
    except ImportError:
        return False
    if not isinstance(getattr(_array_api, "FunctionDoc", None), type):
        return False
    _array_api.FunctionDoc = _DocAsIs
    return True
