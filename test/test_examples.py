"""examples/*.py run as a user would run them (a fresh interpreter, the venv's python) and print
results close to the truth they were simulated from.

Each example ends with one line of `name=value` pairs; the bounds below come from the noise the
examples simulate, with a margin of a few standard deviations (values seen in brackets).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TIMEOUT_S = 120   # each runs in < 20 s alone; the margin is for a loaded 2-core machine

# example -> {figure: upper bound}
BOUNDS = {
    # Validation RMSE equals the noise std on every joint for a correct model [1.03].
    "identify_robot.py": {"val_rmse_over_noise_max": 1.1},
    # 1 N·m torque noise, 10 s loaded run: mass within ±0.5 %, CoM within a few mm [0.19 %, 1.8 mm].
    "identify_payload.py": {"mass_err_pct_max": 0.5, "com_err_mm_max": 5.0},
    # Duan's sensor resolution as noise: the compensated wrench is that noise alone [1.01, 1.00; 0.01 %, 0.04 mm].
    "ft_payload.py": {"mass_err_pct": 0.5, "com_err_mm": 1.0, "residual_force_over_noise": 1.1,
                      "residual_torque_over_noise": 1.1},
    # MuJoCo cell, model errors included: mass within 1 %, its error consistent with the reported std
    # [0.21 %, 1.04 σ, 0.46 mm].
    "simulated_cell.py": {"mass_err_pct": 1.0, "mass_err_over_std": 4.0, "com_err_mm": 3.0},
}


def figures(last_line: str) -> dict[str, float]:
    return {k: float(v) for k, v in (pair.split("=", 1) for pair in last_line.split())}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(BOUNDS)


@pytest.mark.parametrize("script", sorted(BOUNDS))
def test_example_runs_and_matches_the_truth(script):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    got = figures(lines[-1])
    assert set(got) == set(BOUNDS[script]), lines[-1]
    for name, bound in BOUNDS[script].items():
        assert 0 <= got[name] < bound, f"{script}: {name}={got[name]} (bound {bound})\n{proc.stdout}"
