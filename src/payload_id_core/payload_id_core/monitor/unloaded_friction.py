"""The unloaded robot's friction error in the monitor's residual, learnt while nothing is carried and taken out of
every later re-estimate (PayloadMonitor._refine_rows), saved with a re-estimate (payload.result_file)."""

from __future__ import annotations

import numpy as np

from payload_id_core.errors import PayloadIdError


class UnloadedFriction:
    """The unloaded robot's friction error in the residual, learnt while nothing is carried: per joint j, a
    least-squares fit of r₀ − F φ̂ on observer.FilteredLoadFriction's columns 1.. (μ_j |τ̂_a,j| sgn(q̇_j) and the
    identification's own friction columns, so the mean Coulomb level μ|τ| the identification absorbed is
    taken back), with a ridge prior. Its prediction is subtracted from the re-estimate's rows: the same
    motion with a part on leaves the same error, which a fit on F alone turned into mass. Joints are
    independent (friction is per joint), so this is n small normal equations. A re-estimate uses the fit
    as it stood at its change (`freeze`), never rows it is itself fitting: learning from the empty flange
    being re-estimated and correcting that same re-estimate with it would chase its own noise."""

    def __init__(self, n: int, m: int, mu_prior_std: float, other_prior_std: float = 10.0, min_moving_s: float = 0.0):
        self.min_moving_s = min_moving_s
        prior = np.concatenate([[mu_prior_std], np.full(m - 1, other_prior_std)]) ** -2.0
        self.AtA = np.tile(np.diag(prior), (n, 1, 1))
        self.data_AtA = np.zeros((n, m, m))      # the rows' information alone (the ridge's is not data)
        self.Atb = np.zeros((n, m))
        self.btb = np.zeros(n)
        self.used: np.ndarray = np.zeros((n, m))
        self.used_cov: np.ndarray | None = None    # (n, m, m): the frozen fit's covariance (None: nothing learnt)
        self.rows = 0
        self.moving_s = 0.0        # of the rows, seconds in motion

    def current(self) -> np.ndarray:
        """(n, m): the fit so far (none before `min_moving_s` of motion: see freeze)."""
        if self.moving_s < self.min_moving_s:
            return np.zeros_like(self.used)
        return np.linalg.solve(self.AtA, self.Atb[..., None])[..., 0] if self.rows else self.used

    def freeze(self, correlation: float = 1.0) -> None:
        """What predict uses from now on: the fit so far, and its covariance: the ridge estimate's sandwich
        (AᵀA + Λ)⁻¹ AᵀA (AᵀA + Λ)⁻¹ s², s² the rows' own misfit, times the rows' AR(1) `correlation` factor.
        Directions the empty flange's motion did not determine are shrunk to no correction by the ridge, and
        carry no variance of it either (the model error there is what it was without the correction)."""
        self.used = self.current()
        if self.moving_s < self.min_moving_s:
            # Rows at rest only: the friction columns there are the sign of the velocity noise, and a fit on them
            # (its offset column taking the rest's gravity error) predicted N·m of nonsense at the first move,
            # which refuted a part picked before the robot had moved (misfit 54 per row). No correction yet.
            self.used_cov = None
            return
        if not self.rows:
            return
        x = self.used
        rss = self.btb - 2 * np.einsum("ji,ji->j", x, self.Atb) + np.einsum("ji,jil,jl->j", x, self.data_AtA, x)
        s2 = np.maximum(rss / max(self.rows, 1), 1e-12)
        inv = np.linalg.inv(self.AtA)
        self.used_cov = (inv @ self.data_AtA @ inv) * (s2 * correlation)[:, None, None]

    def add(self, C: np.ndarray, r: np.ndarray, scale: np.ndarray, moving_s: float = 0.0) -> None:
        """Columns (N, n, m) and residual (N, n), whitened per joint by `scale`; `moving_s` of them in motion."""
        Cw, rw = C / scale[None, :, None], r / scale[None, :]
        info = np.einsum("kji,kjl->jil", Cw, Cw)
        self.AtA += info
        self.data_AtA += info
        self.Atb += np.einsum("kji,kj->ji", Cw, rw)
        self.btb += np.einsum("kj,kj->j", rw, rw)
        self.rows += r.shape[0]
        self.moving_s += moving_s

    def predict(self, C: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
        """(N, n): the error the columns C (N, n, m) predict (with the frozen fit, or `x`)."""
        return np.einsum("kji,ji->kj", C, self.used if x is None else x)

    def to_dict(self) -> dict:
        """What was learnt, as plain lists (the node saves it with a re-estimate, payload.result_file): a monitor
        that restarts with a part on cannot learn the unloaded robot's friction until the next place, so it takes
        it from here (`restore`). The normal equations, not only the fit: learning goes on from them."""
        return {"rows": int(self.rows), "moving_s": float(self.moving_s), "AtA": self.AtA.tolist(),
                "data_AtA": self.data_AtA.tolist(), "Atb": self.Atb.tolist(), "btb": self.btb.tolist(),
                "used": self.used.tolist(), "used_cov": None if self.used_cov is None else self.used_cov.tolist()}

    def restore(self, saved: dict) -> None:
        """Take what `to_dict` saved. PayloadIdError when it is not of this robot's shape (n joints, m columns) or
        not finite: a friction of another robot model must not correct this one's re-estimates."""
        n, m = self.Atb.shape
        shapes = {"AtA": (n, m, m), "data_AtA": (n, m, m), "Atb": (n, m), "btb": (n,), "used": (n, m),
                  "used_cov": (n, m, m)}
        try:
            cov = saved.get("used_cov")
            arrays = {k: np.asarray(saved[k], dtype=float) for k in shapes if k != "used_cov"}
            arrays["used_cov"] = np.zeros(shapes["used_cov"]) if cov is None else np.asarray(cov, dtype=float)
            rows, moving_s = int(saved["rows"]), float(saved["moving_s"])
        except (KeyError, TypeError, ValueError) as err:
            raise PayloadIdError(f"the saved unloaded friction is malformed ({err!r})",
                                 "delete the result file; the monitor learns it again on the empty flange") from err
        for k, a in arrays.items():
            if a.shape != shapes[k] or not np.all(np.isfinite(a)):
                raise PayloadIdError(f"the saved unloaded friction's {k} is not {shapes[k]} finite numbers (another "
                                     "robot model's?)", "delete the result file; the monitor learns it again on the "
                                     "empty flange")
        self.AtA, self.data_AtA, self.Atb = arrays["AtA"], arrays["data_AtA"], arrays["Atb"]
        self.btb, self.used = arrays["btb"], arrays["used"]
        self.used_cov = None if cov is None else arrays["used_cov"]
        self.rows, self.moving_s = rows, moving_s
