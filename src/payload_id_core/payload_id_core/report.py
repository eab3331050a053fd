"""One-page PNG report of a payload identification: convergence of the estimate and torque residuals.

Used by `payload-id report` and by the demo; pure matplotlib (Agg backend), no display needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_id_core.fileio import atomic_write_bytes


@dataclass
class TorqueResiduals:
    """Measured torques against the unloaded model (before) and with the identified payload (after)."""

    t: np.ndarray            # (N,) s
    joint_names: list[str]
    measured: np.ndarray     # (N, n) N·m
    before: np.ndarray       # (N, n) predicted by the unloaded robot model
    after: np.ndarray        # (N, n) predicted with the payload added

    @property
    def rmse_before(self) -> np.ndarray:
        return np.sqrt(np.mean((self.measured - self.before) ** 2, axis=0))

    @property
    def rmse_after(self) -> np.ndarray:
        return np.sqrt(np.mean((self.measured - self.after) ** 2, axis=0))


def plot_report(out_path: str | Path, residuals: TorqueResiduals, history: dict | None = None,
                truth_mass: float | None = None, title: str = "payload identification") -> Path:
    """Write the PNG atomically and return its path.

    history: {"t": (K,), "phi": (K, 10), "std": (K, 10)} from an online method (mass = phi[:, 0]).
    """
    import io  # noqa: PLC0415

    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    rows = 3 if history else 2
    fig, axes = plt.subplots(rows, 1, figsize=(9, 3.2 * rows), constrained_layout=True)
    fig.suptitle(title)
    ax_iter = iter(np.atleast_1d(axes))

    if history:
        ax = next(ax_iter)
        t = np.asarray(history["t"])
        mass = np.asarray(history["phi"])[:, 0]
        std = np.asarray(history.get("std", np.zeros_like(history["phi"])))[:, 0]
        ax.plot(t, mass, label="estimated mass")
        ax.fill_between(t, mass - 2 * std, mass + 2 * std, alpha=0.25, label="±2σ")
        if truth_mass is not None:
            ax.axhline(truth_mass, color="k", ls="--", lw=1, label=f"truth {truth_mass:.3f} kg")
            ax.set_ylim(truth_mass - max(0.5, 0.3 * abs(truth_mass)), truth_mass + max(0.5, 0.3 * abs(truth_mass)))
        ax.set_xlabel("motion time [s]")
        ax.set_ylabel("mass [kg]")
        ax.legend(loc="best", fontsize=8)
        ax.set_title("convergence of the estimate")

    ax = next(ax_iter)
    x = np.arange(len(residuals.joint_names))
    ax.bar(x - 0.2, residuals.rmse_before, 0.4, label="unloaded model")
    ax.bar(x + 0.2, residuals.rmse_after, 0.4, label="with identified payload")
    ax.set_xticks(x, [name.replace("_joint", "") for name in residuals.joint_names], rotation=20, fontsize=8)
    ax.set_ylabel("torque RMSE [N·m]")
    ax.legend(fontsize=8)
    ax.set_title("torque prediction error per joint")

    ax = next(ax_iter)
    j = int(np.argmax(residuals.rmse_before - residuals.rmse_after))
    ax.plot(residuals.t, residuals.measured[:, j] - residuals.before[:, j], lw=0.8, label="residual, unloaded model")
    ax.plot(residuals.t, residuals.measured[:, j] - residuals.after[:, j], lw=0.8, label="residual, with payload")
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"{residuals.joint_names[j]} [N·m]")
    ax.legend(fontsize=8)
    ax.set_title("torque residual of the joint the payload changes most")

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_path, buf.getvalue())
    return Path(out_path)
