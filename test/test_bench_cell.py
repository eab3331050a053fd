"""bench/cell.py's spread over runs (convergence median and max, the declared estimate's coverage) and the demo's
--seed, which those runs vary: without ROS, on made-up demo results."""

import importlib.util
from pathlib import Path

import pytest

from payload_id_core.errors import PayloadIdError
from payload_id_ros import demo

BENCH = Path(__file__).resolve().parents[1] / "bench" / "cell.py"


@pytest.fixture(scope="module")
def cell():
    spec = importlib.util.spec_from_file_location("bench_cell", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def result(t, mass_at_t, std_at_t, converged=True, final_err_pct=0.1, com_mm=1.0):
    """A demo_result.yaml's fields the bench reads: feedback every 0.2 s of motion, the estimate shown at the first
    feedback at or after `t` is `mass_at_t` ± `std_at_t`."""
    feedback = []
    for k in range(1, 21):
        elapsed = 0.2 * k
        shown = t is not None and elapsed >= t - 1e-9 and not any(f["elapsed"] >= t - 1e-9 for f in feedback)
        feedback.append({"elapsed": elapsed, "mass": mass_at_t if shown else 3.0,
                         "mass_std": std_at_t if shown else 1.0})
    return {"converged": converged, "convergence_time": t, "feedback": feedback, "truth": {"mass": 3.5},
            "errors": {"mass_err_pct": final_err_pct, "com_err_mm": com_mm}}


def test_spread_counts_median_max_and_the_declared_estimates_coverage(cell):
    runs = [result(1.8, 3.51, 0.01),            # 1σ: covered
            result(1.9, 3.525, 0.01, final_err_pct=-0.3),   # 2.5σ: not covered, not beyond 3σ
            result(2.4, 3.46, 0.01, com_mm=2.5),  # 4σ: beyond 3σ, and later than 2 s
            result(None, 0.0, 0.0, converged=False)]          # never declared: counts as the motion's 4.0 s
    f = cell.spread_figures(runs)
    assert f["cell_runs"] == 4
    assert f["cell_convergence_median_s"] == pytest.approx(2.15)
    assert f["cell_convergence_max_s"] == pytest.approx(4.0)
    assert f["cell_convergence_within_2s_share"] == pytest.approx(0.5)
    assert f["cell_declared_share"] == pytest.approx(0.75)
    assert f["cell_converged_cover_2sigma"] == pytest.approx(1 / 3, abs=1e-3)
    assert f["cell_converged_beyond_3sigma"] == 1
    assert f["cell_mass_err_pct_median_abs"] == pytest.approx(0.1)
    assert f["cell_com_err_mm_median"] == pytest.approx(1.0)


def test_a_suspect_run_is_not_counted_as_declared(cell):
    """The online rule's time stands in the result of an estimate judged suspect (converged false): it is not a
    declaration the bench may count."""
    f = cell.spread_figures([result(1.6, 3.5, 0.01, converged=False)])
    assert f["cell_declared_share"] == 0.0
    assert f["cell_convergence_within_2s_share"] == 0.0
    assert f["cell_convergence_max_s"] == pytest.approx(4.0)


def test_cell_seeds_from_the_environment(cell):
    assert cell.seeds_from_env(None) == list(range(7, 17))
    assert cell.seeds_from_env(" ") == list(range(7, 17))
    assert cell.seeds_from_env("7,9, 11") == [7, 9, 11]
    with pytest.raises(SystemExit, match="CELL_SEEDS"):
        cell.seeds_from_env("7,x")


def test_the_demo_passes_its_seed_to_mock_hardware(monkeypatch, tmp_path):
    """`python -m payload_id_ros.demo --seed N` runs mock_hardware with noise seed N (the demo's 7 without it)."""
    seen: list[dict] = []

    class Stop(PayloadIdError):
        pass

    class Supervisor:
        def __init__(self, **kwargs):
            seen.append(kwargs["overrides"])
            raise Stop("stopped by the test", "none")

    monkeypatch.setattr(demo, "Supervisor", Supervisor)
    monkeypatch.setattr(demo, "unloaded_robot_yaml", lambda *a, **k: tmp_path / "robot.yaml")
    assert demo.main(["--out", str(tmp_path), "--seed", "12"]) == 2
    assert demo.main(["--out", str(tmp_path)]) == 2
    assert [s["mock_hardware"]["seed"] for s in seen] == [12, demo.NOISE_SEED]
    assert demo.NOISE_SEED == cell_first_seed()


def cell_first_seed() -> int:
    spec = importlib.util.spec_from_file_location("bench_cell_seed", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return int(module.FIRST_SEED)


def test_cell_robot_seeds_one_identification_per_run_or_the_demos(cell):
    """CELL_ROBOT_SEEDS: 'each' (the default) gives every run its own unloaded robot's noise seed, so the runs'
    coverage is over independent robot identifications; 'demo' gives every run the demo's one."""
    assert cell.robot_seeds_from_env(None) == "each"
    assert cell.robot_seeds_from_env("demo") == "demo"
    with pytest.raises(SystemExit, match="CELL_ROBOT_SEEDS"):
        cell.robot_seeds_from_env("some")
    assert [cell.robot_seed("each", s) for s in (7, 8)] == [1007, 1008]
    assert [cell.robot_seed("demo", s) for s in (7, 8)] == [demo.ROBOT_SEED] * 2
    assert cell.DEMO_ROBOT_SEED == demo.ROBOT_SEED


def test_the_demo_identifies_the_robot_of_its_robot_seed(monkeypatch, tmp_path):
    """`python -m payload_id_ros.demo --robot-seed N` identifies (and caches) the robot from the unloaded run of noise
    seed N; without it, the demo's ROBOT_SEED."""
    seeds: list[int] = []

    def unloaded_robot_yaml(cache, trajectory, seed=demo.ROBOT_SEED, gear_friction=False):
        seeds.append(seed)
        raise PayloadIdError("stopped by the test", "none")

    monkeypatch.setattr(demo, "unloaded_robot_yaml", unloaded_robot_yaml)
    monkeypatch.setattr(demo, "trajectory", lambda *a, **k: "ur10_payload_fast")
    assert demo.main(["--out", str(tmp_path), "--robot-seed", "1012"]) == 2
    assert demo.main(["--out", str(tmp_path)]) == 2
    assert seeds == [1012, demo.ROBOT_SEED]
