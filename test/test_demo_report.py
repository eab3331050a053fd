"""The demo's picture (payload_id_ros.demo.report_png) from a result as `payload-id identify --ros --out` writes it:
every panel drawn, the CoM as its error against the truth at a scale where 1-2 mm show, the inertia panel, the
convergence time marked. No ROS: the result is made here."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from payload_id_core.report import report_figure
from payload_id_ros.demo import HIDDEN_PAYLOAD, report_panels, report_png

CONVERGED_AT = 2.0
COM_ERROR = np.array([1.5e-3, -1.0e-3, 2.0e-3])     # m: what the demo's estimate is typically off by


def _result() -> dict:
    """A run of 10 s: the estimate settles on the truth + COM_ERROR, σ shrinking as 1/√t."""
    t = np.linspace(0.25, 10.0, 40)
    truth = HIDDEN_PAYLOAD
    inertia = np.array([truth["inertia"][k] for k in ("ixx", "iyy", "izz")])
    shrink = np.sqrt(t[0] / t)
    feedback = [{"elapsed": float(tk), "mass": truth["mass"] + 0.2 * s, "mass_std": 0.05 * s,
                 "com": (np.array(truth["com"]) + COM_ERROR + 0.01 * s ** 4).tolist(), "com_std": [2e-3 * s] * 3,
                 "inertia": (inertia * (1 + 0.3 * s)).tolist(), "inertia_std": (0.1 * inertia * s).tolist(),
                 "convergence_measure": 0.01 * s} for tk, s in zip(t, shrink)]
    last = feedback[-1]
    estimate = {"frame": truth["frame"], "mass": last["mass"], "com": last["com"],
                "inertia": dict(zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                                    [last["inertia"][0], 0.0, 0.0, last["inertia"][1], 0.0, last["inertia"][2]])),
                "std": {"mass": last["mass_std"], "com": last["com_std"],
                        "inertia": {k: 1e-3 for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}}}
    return {"method": "difference-rls", "feedback": feedback, "estimate": estimate, "truth": truth,
            "convergence_time": CONVERGED_AT, "torque_rmse_before": [0.5, 9.0, 6.0, 1.0, 0.4, 0.1],
            "torque_rmse_after": [0.2, 0.3, 0.3, 0.2, 0.1, 0.05]}


def test_every_panel_has_data_and_the_com_error_is_drawn_at_its_own_scale():
    """Was: four panels, one empty; the CoM on ±150 mm (1-2 mm errors invisible); no inertia panel."""
    fig, _ = report_figure(**report_panels(_result()))
    try:
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert len(axes) == 4 and len(fig.axes) == 4
        assert all(ax.get_lines() or ax.patches for ax in axes)
        by_title = {ax.get_title().split(":")[0].split(",")[0]: ax for ax in axes}
        assert set(by_title) == {"mass", "centre of mass", "inertia", "torque prediction error per joint"}
        com = by_title["centre of mass"]
        assert "estimate − truth" in com.get_title() and com.get_ylabel() == "CoM error [mm]"
        low, high = com.get_ylim()
        # The settled error (±2 mm) and its 2σ band (under 1.2 mm from the convergence time on) fill the panel.
        assert -5.0 < low < 1e3 * COM_ERROR.min() and 1e3 * COM_ERROR.max() < high < 5.0
        assert len(com.collections) == 3            # one σ band per axis
        for ax in (by_title["mass"], com, by_title["inertia"]):
            assert any(line.get_label() == f"converged {CONVERGED_AT:.2f} s" for line in ax.get_lines())
        inertia = by_title["inertia"]
        truth_lines = [line for line in inertia.get_lines() if line.get_linestyle() == "--"]
        assert sorted(line.get_ydata()[0] for line in truth_lines) == pytest.approx([9.0, 12.0, 15.0])   # g·m²
    finally:
        plt.close(fig)


def test_the_png_is_written(tmp_path):
    out = tmp_path / "demo_report.png"
    report_png(out, _result())
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
