"""The per-sample paths' numpy kernels (payload_id_core.numpy_kernels) on any numpy a ROS install brings."""

import builtins
import importlib

import numpy as np
import pytest

import payload_id_core.numpy_kernels as kernels


def _reloaded_without(monkeypatch, blocked: tuple[str, ...]):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name in blocked:
            raise ImportError(f"no module named {name!r} (simulated older or newer numpy)")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    try:
        return importlib.reload(kernels)
    finally:
        monkeypatch.setattr(builtins, "__import__", real_import)


def _same_bits(einsum) -> None:
    rng = np.random.default_rng(3)
    F, C = rng.standard_normal((7, 10)), rng.standard_normal((10, 10))
    a, b = rng.standard_normal((4, 6, 10)), rng.standard_normal((6, 10))
    assert np.array_equal(einsum("ij,jk,ik->i", F, C, F), np.einsum("ij,jk,ik->i", F, C, F))
    assert np.array_equal(einsum("bjk,jk->bj", a, b), np.einsum("bjk,jk->bj", a, b))


def test_the_kernels_give_numpys_numbers():
    _same_bits(kernels.einsum)
    x, y = np.arange(6.0).reshape(2, 3), np.ones((1, 3))
    assert np.array_equal(kernels.concatenate((x, y), axis=0), np.concatenate((x, y), axis=0))


@pytest.mark.filterwarnings("ignore:numpy.core.multiarray is deprecated:DeprecationWarning")
def test_a_numpy_without_numpy_core_multiarray_falls_back(monkeypatch):
    """numpy 1.x (Ubuntu 24.04's python3-numpy under ROS 2) has no numpy._core: the module still imports."""
    try:
        module = _reloaded_without(monkeypatch, ("numpy._core.multiarray",))
        _same_bits(module.einsum)
        module = _reloaded_without(monkeypatch, ("numpy._core.multiarray", "numpy.core.multiarray"))
        assert module.einsum is np.einsum
        _same_bits(module.einsum)
    finally:
        importlib.reload(kernels)
