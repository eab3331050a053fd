"""One PNG report of a payload identification: convergence of the estimate, torque residuals, and the
robot with the payload markers as rviz shows them (robot_drawing.py).

Used by `payload-id report` and the demo; matplotlib with the Agg backend, no display needed.
Every panel is optional except the per-joint torque RMSE, so callers pass what they have. The convergence
panels (mass, CoM, inertia) are scaled to the converged estimate and its σ band, not to the first samples'
swings: a CoM off by 1–2 mm must be visible. The CoM is drawn as its error against the truth when the truth
is known (else against the final estimate), in mm; the convergence time is marked on each.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_id_core.io.files import atomic_write_bytes
from payload_id_core.payload.residuals import TorqueResiduals
from payload_id_core.payload_estimate import INERTIA_KEYS, millimetres, readable_jacobian, readable_vector
from payload_id_core.robot_drawing import PayloadPose, Scene, draw_scene, scene_at

DIAGONAL = [INERTIA_KEYS.index(k) for k in ("ixx", "iyy", "izz")]   # the inertia panel's entries
MIN_COM_SPAN_MM = 0.5      # the CoM panel spans at least ± this: a σ of 0.01 mm is not worth the zoom
MIN_MASS_SPAN = 0.002      # the mass panel spans at least ± this fraction of the mass


@dataclass
class Convergence:
    """The estimate over motion time (an online method's history or the action's feedback)."""

    t: np.ndarray            # (K,) s of motion
    mass: np.ndarray         # (K,) kg
    mass_std: np.ndarray     # (K,) kg
    com: np.ndarray | None = None  # (K, 3) m
    com_std: np.ndarray | None = None        # (K, 3) m
    inertia: np.ndarray | None = None        # (K, 3) kg·m²: ixx, iyy, izz about the CoM
    inertia_std: np.ndarray | None = None    # (K, 3) kg·m²
    convergence_time: float = float("nan")   # s of motion when declared converged (NaN: never)

    @classmethod
    def from_history(cls, history: dict, convergence_time: float = float("nan")) -> Convergence:
        """From an online method's history {t, phi, std} (payload.yaml's `history`): mass, CoM and inertia about
        the CoM per row, their σ first-order from φ's σ (the history keeps no correlations)."""
        phi = np.asarray(history["phi"], dtype=float)
        std = np.nan_to_num(np.asarray(history.get("std", np.zeros_like(phi)), dtype=float), nan=0.0)
        value = np.array([readable_vector(p) for p in phi])
        sigma = np.array([np.sqrt(np.diag(j @ np.diag(s ** 2) @ j.T))
                          for j, s in ((readable_jacobian(p), s) for p, s in zip(phi, std))])
        inertia = [4 + k for k in DIAGONAL]
        return cls(np.asarray(history["t"], dtype=float), value[:, 0], sigma[:, 0], value[:, 1:4], sigma[:, 1:4],
                   value[:, inertia], sigma[:, inertia], convergence_time)

    def settled(self) -> np.ndarray:
        """The samples the panels are scaled to: from the convergence time on (the last half when never declared)."""
        since = self.convergence_time if np.isfinite(self.convergence_time) else self.t[-1] / 2
        late = self.t >= since
        return late if late.any() else np.ones(self.t.size, dtype=bool)


def estimate_lines(estimate: dict, truth: dict | None = None) -> list[str]:
    """The estimate for people, from payload.yaml's form (mass, com, inertia, std): one line per quantity with its
    σ, the CoM in mm (payload_estimate.millimetres, as identify-payload prints it), and the truth beside it when
    known."""
    std = estimate.get("std") or {}
    truth = truth or {}

    def row(name: str, shown: str, unit: str, true: str | None) -> str:
        return f"{name:9s}{shown:>21s} {unit:6s}" + (f"  truth {true}" if true is not None else "")

    def number(value, sigma, scale: float, fmt: str) -> str:
        if value is None:
            return "undetermined"
        return f"{scale * value:{fmt}}" + (f" ± {scale * sigma:{fmt}}" if sigma is not None else "")

    lines = [row("mass", number(estimate.get("mass"), std.get("mass"), 1.0, "9.4f"), "kg",
                 None if truth.get("mass") is None else f"{truth['mass']:.4f}")]
    com, com_std, true_com = (estimate.get("com") or [None] * 3, std.get("com") or [None] * 3,
                              truth.get("com") or [None] * 3)
    for k, axis in enumerate("xyz"):
        shown = ("undetermined" if com[k] is None
                 else millimetres(com[k], float("nan") if com_std[k] is None else com_std[k]))
        lines.append(row(f"CoM {axis}", shown, "mm", None if true_com[k] is None else millimetres(true_com[k])))
    inertia, inertia_std, true_inertia = (estimate.get("inertia") or {}, std.get("inertia") or {},
                                          truth.get("inertia") or {})
    for key in INERTIA_KEYS:
        true = true_inertia.get(key)
        lines.append(row(key, number(inertia.get(key), inertia_std.get(key), 1e3, "9.3f"), "g·m²",
                         None if true is None else f"{1e3 * true:.3f}"))
    return lines


def _span(values: np.ndarray, sigma: np.ndarray | None, extra: list[float], floor: float) -> tuple[float, float]:
    """y limits holding `values` ± 2σ and `extra` (the truth, zero), 20 % margin, at least ± `floor` about
    their middle."""
    band = 2 * (np.nan_to_num(sigma) if sigma is not None else np.zeros_like(values))
    lo = float(np.nanmin(np.concatenate([(values - band).ravel(), extra])))
    hi = float(np.nanmax(np.concatenate([(values + band).ravel(), extra])))
    mid, half = (lo + hi) / 2, max((hi - lo) / 2 * 1.2, floor)
    return mid - half, mid + half


def _mark_convergence(ax, convergence: Convergence) -> None:
    if np.isfinite(convergence.convergence_time):
        ax.axvline(convergence.convergence_time, color="0.4", ls=":", lw=1.2,
                   label=f"converged {convergence.convergence_time:.2f} s")


def _band(ax, t, value, sigma, **line):
    handle, = ax.plot(t, value, **line)
    if sigma is not None:
        ax.fill_between(t, value - 2 * sigma, value + 2 * sigma, color=handle.get_color(), alpha=0.2, lw=0)
    return handle


def plot_report(out_path: str | Path, joint_names: list[str], rmse_before, rmse_after, **panels) -> Scene | None:
    """Write report_figure's PNG atomically; return the drawn payload scene (None without payload_pose)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib is heavy and optional: only plots need it

    fig, scene = report_figure(joint_names, rmse_before, rmse_after, **panels)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(out_path, buf.getvalue())
    return scene


def report_figure(joint_names: list[str], rmse_before, rmse_after, *,
                  convergence: Convergence | None = None, residuals: TorqueResiduals | None = None,
                  truth_mass: float | None = None, truth_com=None, truth_inertia=None,
                  title: str = "payload identification", payload_pose: PayloadPose | None = None,
                  numbers: list[str] | None = None):
    """(the matplotlib figure, the drawn payload scene or None): the panels `plot_report` writes; the caller closes it.

    `truth_inertia`: ixx, iyy, izz about the CoM (kg·m²); `numbers`: the estimate's lines (estimate_lines), drawn
    in a panel of their own when the grid has a slot to spare."""
    import matplotlib  # noqa: PLC0415 - matplotlib is heavy and optional: only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after use("Agg"): no display backend on a robot PC

    panels = ["rmse"]
    if convergence is not None:
        panels = (["mass"] + (["com"] if convergence.com is not None else [])
                  + (["inertia"] if convergence.inertia is not None else []) + panels)
    if residuals is not None:
        panels.append("residual")
    if numbers and len(panels) % 2:
        panels.append("numbers")
    if payload_pose is not None:
        panels += ["robot", "payload"]
    cols = 2 if len(panels) > 1 else 1
    rows = (len(panels) + cols - 1) // cols
    # The 3D panels need more height than the line plots to show the arm and the payload at a readable size.
    height = 3.8 * rows + (2.5 if payload_pose is not None else 0.0)
    fig, axes = plt.subplots(rows, cols, figsize=(7.5 * cols, height), squeeze=False, constrained_layout=True)
    fig.suptitle(title)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    ax_of = dict(zip(panels, axes.flat))
    scene = None
    if payload_pose is not None:
        scene = scene_at(payload_pose)
        for name, close_up in (("robot", False), ("payload", True)):
            index = panels.index(name)
            ax_of[name].remove()
            ax_of[name] = fig.add_subplot(rows, cols, index + 1, projection="3d")
            draw_scene(ax_of[name], scene, close_up=close_up)

    if convergence is not None:
        _plot_convergence(ax_of, convergence, truth_mass, truth_com, truth_inertia)

    ax = ax_of["rmse"]
    x = np.arange(len(joint_names))
    ax.bar(x - 0.2, rmse_before, 0.4, label="unloaded model")
    ax.bar(x + 0.2, rmse_after, 0.4, label="with identified payload")
    ax.set_xticks(x, [name.replace("_joint", "") for name in joint_names], rotation=20, fontsize=8)
    ax.set(ylabel="torque RMSE [N·m]", title="torque prediction error per joint")
    ax.legend(fontsize=8)

    if residuals is not None:
        ax = ax_of["residual"]
        j = int(np.argmax(residuals.rmse_before - residuals.rmse_after))
        ax.plot(residuals.t, residuals.residual_before[:, j], lw=0.8, label="unloaded model")
        ax.plot(residuals.t, residuals.residual_after[:, j], lw=0.8, label="with payload")
        ax.set(xlabel="time [s]", ylabel=f"{residuals.joint_names[j]} residual [N·m]",
               title="torque residual of the joint the payload changes most")
        ax.legend(fontsize=8)

    if "numbers" in ax_of:
        ax = ax_of["numbers"]
        ax.axis("off")
        ax.set_title("estimate ± σ" + (" and truth" if truth_mass is not None else ""))
        ax.text(0.02, 0.95, "\n".join(numbers or []), family="monospace", fontsize=9, va="top",
                transform=ax.transAxes)
    return fig, scene


def _plot_convergence(ax_of: dict, c: Convergence, truth_mass, truth_com, truth_inertia) -> None:
    """The mass, CoM-error and inertia panels, each scaled to the settled estimate and its ±2σ band."""
    late = c.settled()
    ax = ax_of["mass"]
    _band(ax, c.t, c.mass, c.mass_std, label="estimate ± 2σ")
    extra = []
    if truth_mass is not None:
        ax.axhline(truth_mass, color="k", ls="--", lw=1, label=f"truth {truth_mass:.3f} kg")
        extra.append(float(truth_mass))
    _mark_convergence(ax, c)
    ax.set_ylim(*_span(c.mass[late], c.mass_std[late], extra, MIN_MASS_SPAN * abs(float(c.mass[-1]))))
    ax.set(xlabel="motion [s]", ylabel="mass [kg]", title=f"mass: {c.mass[-1]:.4g} ± {c.mass_std[-1]:.2g} kg")
    ax.legend(fontsize=8)
    if c.com is not None:
        ax = ax_of["com"]
        reference = np.asarray(truth_com, dtype=float) if truth_com is not None else c.com[-1]
        error = 1e3 * (c.com - reference)
        sigma = None if c.com_std is None else 1e3 * c.com_std
        for k, axis in enumerate("xyz"):
            _band(ax, c.t, error[:, k], None if sigma is None else sigma[:, k], label=f"c{axis}")
        ax.axhline(0.0, color="k", ls="--", lw=1)
        _mark_convergence(ax, c)
        ax.set_ylim(*_span(error[late], None if sigma is None else sigma[late], [0.0], MIN_COM_SPAN_MM))
        what = "estimate − truth" if truth_com is not None else "estimate − final estimate (truth unknown)"
        ax.set(xlabel="motion [s]", ylabel="CoM error [mm]", title=f"centre of mass: {what}, ± 2σ")
        ax.legend(fontsize=8, ncol=2)
    if c.inertia is not None:
        ax = ax_of["inertia"]
        truth = None if truth_inertia is None else 1e3 * np.asarray(truth_inertia, dtype=float)
        sigma = None if c.inertia_std is None else 1e3 * c.inertia_std
        for k, key in enumerate(("ixx", "iyy", "izz")):
            handle = _band(ax, c.t, 1e3 * c.inertia[:, k], None if sigma is None else sigma[:, k], label=key)
            if truth is not None:
                ax.axhline(truth[k], color=handle.get_color(), ls="--", lw=1)
        _mark_convergence(ax, c)
        ax.set_ylim(*_span(1e3 * c.inertia[late], None if sigma is None else sigma[late],
                           [] if truth is None else list(truth), 0.2 * float(np.max(np.abs(1e3 * c.inertia[-1])))))
        ax.set(xlabel="motion [s]", ylabel="inertia about the CoM [g·m²]",
               title="inertia, ± 2σ" + (" (dashed: truth)" if truth is not None else ""))
        ax.legend(fontsize=8, ncol=2)
