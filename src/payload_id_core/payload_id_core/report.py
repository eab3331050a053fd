"""One PNG report of a payload identification: convergence of the estimate, torque residuals, and the
robot with the payload markers as rviz shows them (robot_drawing.py).

Used by `payload-id report` and the demo; matplotlib with the Agg backend, no display needed.
Every panel is optional except the per-joint torque RMSE, so callers pass what they have.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_id_core.io.files import atomic_write_bytes
from payload_id_core.payload.residuals import TorqueResiduals
from payload_id_core.robot_drawing import PayloadPose, Scene, draw_scene, scene_at


@dataclass
class Convergence:
    """The estimate over motion time (an online method's history or the action's feedback)."""

    t: np.ndarray            # (K,) s of motion
    mass: np.ndarray         # (K,) kg
    mass_std: np.ndarray     # (K,) kg
    com: np.ndarray | None = None  # (K, 3) m


def plot_report(out_path: str | Path, joint_names: list[str], rmse_before, rmse_after, *,
                convergence: Convergence | None = None, residuals: TorqueResiduals | None = None,
                truth_mass: float | None = None, truth_com=None, title: str = "payload identification",
                payload_pose: PayloadPose | None = None) -> Scene | None:
    """Write the PNG atomically; return the drawn payload scene (None without payload_pose)."""
    import matplotlib  # noqa: PLC0415 - matplotlib is heavy and optional: only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after use("Agg"): no display backend on a robot PC

    panels = ["rmse"]
    if convergence is not None:
        panels = ["mass"] + (["com"] if convergence.com is not None else []) + panels
    if residuals is not None:
        panels.append("residual")
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
        ax = ax_of["mass"]
        t, m, s = convergence.t, convergence.mass, convergence.mass_std
        ax.plot(t, m, label="estimate")
        ax.fill_between(t, m - 2 * s, m + 2 * s, alpha=0.3, label="±2σ")
        if truth_mass is not None:
            ax.axhline(truth_mass, color="k", ls="--", lw=1, label=f"truth {truth_mass:.3f} kg")
            half = max(0.5, 0.2 * abs(truth_mass))
            ax.set_ylim(truth_mass - half, truth_mass + half)
        ax.set(xlabel="motion [s]", ylabel="mass [kg]", title="mass estimate")
        ax.legend(fontsize=8)
        if convergence.com is not None:    # then there is a "com" panel
            ax = ax_of["com"]
            for k, axis in enumerate("xyz"):
                line, = ax.plot(t, 1e3 * convergence.com[:, k], label=f"c{axis}")
                if truth_com is not None:
                    ax.axhline(1e3 * truth_com[k], color=line.get_color(), ls="--", lw=1)
            ax.set_ylim(-150, 150)
            ax.set(xlabel="motion [s]", ylabel="CoM [mm]",
                   title="centre of mass" + (" (dashed: truth)" if truth_com is not None else ""))
            ax.legend(fontsize=8)

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

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(out_path, buf.getvalue())
    return scene
