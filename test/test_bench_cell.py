"""bench/cell.py's spread over runs (convergence median and max, the declared estimate's coverage) and the demo's
--seed, which those runs vary: without ROS, on made-up demo results."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

from payload_id_core.errors import PayloadIdError
from payload_id_core.signals.stamp_holes import StampHoles, WindowCoverage
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


def test_the_declared_estimate_is_the_first_feedback_flagged_converged(cell):
    """The feedback's elapsed is the goal's clock, the declaration is dated on the joint-state stamps: a feedback at
    or after the declared time may still show the estimate before it (h188). Where the history records the
    estimate's converged flag the bench takes the first flagged one; a history without the flag, the first at or
    after the declared time, as before."""
    run = result(1.55, 3.53, 0.0124)              # the first at/after 1.55 s: 2.4σ
    for fb in run["feedback"]:
        fb["converged"] = fb["elapsed"] >= 1.8 - 1e-9
        if fb["elapsed"] == pytest.approx(1.8):
            fb["mass"], fb["mass_std"] = 3.52, 0.0175   # the declared estimate with the σ the rule judged: 1.1σ
    assert cell.declared_estimate(run) == (3.52, 0.0175)
    for fb in run["feedback"]:
        del fb["converged"]
    assert cell.declared_estimate(run) == (3.53, 0.0124)


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


def test_cell_clock_from_the_environment(cell):
    """CELL_CLOCK: the demo's default (simulated time) unless the wall clock is asked for."""
    assert cell.clock_from_env(None) == cell.clock_from_env(" ") == demo.DEFAULT_CLOCK == "sim"
    assert cell.clock_from_env("real") == "real"
    with pytest.raises(SystemExit, match="CELL_CLOCK"):
        cell.clock_from_env("wall")


def test_the_demo_passes_its_seed_to_mock_hardware(monkeypatch, tmp_path):
    """`python -m payload_id_ros.demo --seed N` runs mock_hardware with noise seed N (the demo's 7 without it)."""
    seen: list[dict] = []

    class Stop(PayloadIdError):
        pass

    class Supervisor:
        def __init__(self, **kwargs):
            seen.append({**kwargs["overrides"], "sim_time": kwargs["sim_time"]})
            raise Stop("stopped by the test", "none")

    monkeypatch.setattr(demo, "Supervisor", Supervisor)
    monkeypatch.setattr(demo, "unloaded_robot_yaml", lambda *a, **k: tmp_path / "robot.yaml")
    assert demo.main(["--out", str(tmp_path), "--seed", "12"]) == 2
    assert demo.main(["--out", str(tmp_path)]) == 2
    assert demo.main(["--out", str(tmp_path), "--clock", "real"]) == 2
    assert [s["mock_hardware"]["seed"] for s in seen] == [12, demo.NOISE_SEED, demo.NOISE_SEED]
    # make demo runs on mock_hardware's /clock, unless asked for the wall clock (a real cell's)
    assert [s["sim_time"] for s in seen] == [True, True, False]
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


def delivered(t: np.ndarray, window: tuple[float, float], published: int | None) -> dict:
    """demo_result.yaml's joint_states for the stamps `t` the estimator received (as IdentificationRun records
    them: StampHoles over every stamp, the samples inside the window counted) and `published` by mock_hardware."""
    holes = StampHoles()
    for chunk in np.array_split(t, 7):           # fed in batches, as the goal feeds them
        holes.push(chunk)
    t0, t1 = window
    received = int(np.count_nonzero((t >= t0) & (t <= t1)))
    return {**WindowCoverage.of(holes.holes, t0, t1, received, holes.period).to_dict(), "published": published}


def stamps(t0: float, t1: float, lost: tuple[tuple[float, float], ...] = ()) -> np.ndarray:
    """500 Hz stamps over [t0, t1] less those inside each lost (start, end) stretch."""
    t = t0 + np.arange(int(round((t1 - t0) * 500)) + 1) / 500.0
    keep = np.ones(t.size, dtype=bool)
    for a, b in lost:
        keep &= ~((t > a) & (t < b))
    return t[keep]


def test_a_run_that_lost_a_stretch_is_marked_and_left_out_of_the_complete_data_figures(cell):
    """Three runs on 4 s windows: one whole, one that lost 2.0 s in two stretches (one straddling the window's end),
    one that lost a lone sample (jitter, not a stretch). Every figure over all runs stays; the _complete_data ones
    are over the two runs that got the whole motion."""
    whole = result(1.8, 3.51, 0.01)
    whole["joint_states"] = delivered(stamps(99.0, 105.0), (100.0, 104.0), 2001)
    lossy = result(3.0, 3.40, 0.01, final_err_pct=-2.0, com_mm=9.0)
    lossy["joint_states"] = delivered(stamps(99.0, 105.0, ((100.5, 101.7), (103.2, 104.3))), (100.0, 104.0), 2001)
    jitter = result(1.6, 3.505, 0.01, final_err_pct=0.2)
    jitter["joint_states"] = delivered(stamps(99.0, 105.0, ((101.0009, 101.0031),)), (100.0, 104.0), 2001)

    d = cell.run_delivery(lossy)
    assert not d["complete"]
    assert d["lost_s"] == pytest.approx(1.2 + 0.8, abs=0.005)         # the second stretch clipped at 104.0
    assert d["longest_lost_s"] == pytest.approx(1.2, abs=0.005)
    assert d["covered_share"] == pytest.approx(0.5, abs=0.002)
    assert d["unreceived"] == pytest.approx(1000, abs=3)
    assert d["expected"] == 2001 and d["unpublished"] == 0
    assert cell.run_delivery(whole)["complete"]
    assert cell.run_delivery(whole)["unreceived"] == 0
    lone = cell.run_delivery(jitter)
    assert lone["complete"] and lone["unreceived"] == 1 and lone["lost_s"] == 0.0

    f = cell.delivery_figures([whole, lossy, jitter])
    assert f["cell_runs_complete"] == 2
    assert f["cell_joint_states_covered_min"] == pytest.approx(0.5, abs=0.002)
    assert f["cell_joint_states_covered_median"] == pytest.approx(1.0)
    assert f["cell_joint_states_lost_max_s"] == pytest.approx(2.0, abs=0.005)
    assert f["cell_joint_states_unreceived_max"] == pytest.approx(1000, abs=3)
    assert f["cell_joint_states_unpublished_max"] == 0
    skipped = result(1.8, 3.51, 0.01)     # mock_hardware skipped ahead: fewer published, every one received
    skipped["joint_states"] = delivered(stamps(99.0, 105.0, ((101.0, 101.5),)), (100.0, 104.0), 1752)
    assert cell.run_delivery(skipped)["unpublished"] == 249 and cell.run_delivery(skipped)["unreceived"] == 0
    assert not cell.run_delivery(skipped)["complete"]
    everything = cell.spread_figures([whole, lossy, jitter])
    assert everything["cell_convergence_max_s"] == pytest.approx(3.0)
    assert everything["cell_com_err_mm_median"] == pytest.approx(1.0)
    assert f["cell_convergence_max_s_complete_data"] == pytest.approx(1.8)
    assert f["cell_convergence_median_s_complete_data"] == pytest.approx(1.7)
    assert f["cell_mass_err_pct_median_abs_complete_data"] == pytest.approx(0.15)
    assert "cell_runs_complete_data" not in f


def test_no_complete_run_gives_nan_figures_not_the_lossy_ones(cell):
    lossy = result(3.0, 3.40, 0.01)
    lossy["joint_states"] = delivered(stamps(99.0, 105.0, ((101.0, 102.0),)), (100.0, 104.0), None)
    old = result(1.8, 3.51, 0.01)             # a result without joint_states: not known complete
    f = cell.delivery_figures([lossy, old])
    assert f["cell_runs_complete"] == 0
    assert f["cell_joint_states_unreceived_max"] is None
    assert np.isnan(f["cell_convergence_median_s_complete_data"])
    assert np.isnan(f["cell_mass_err_pct_median_abs_complete_data"])
    assert cell.run_delivery(old)["covered_share"] is None and not cell.run_delivery(old)["complete"]


def test_the_demo_counts_what_mock_hardware_published_in_the_estimators_window(tmp_path):
    saved = tmp_path / "last_payload.yaml"
    coverage = WindowCoverage.of([], 10.0, 12.0, 990, 0.002)
    saved.write_text(yaml.safe_dump({"mass": 3.5, "joint_states": coverage.to_dict()}))
    log = tmp_path / demo.PUBLISHED_LOG
    log.write_text("".join(f"{1000 + k * 0.002:.6f} {9.0 + k * 0.002:.6f}\n" for k in range(2000)))
    got = demo.joint_state_delivery(saved, log)
    assert got is not None and got["received"] == 990 and got["complete"]
    assert got["published"] == 1001                  # stamps 10.000 ... 12.000 s
    assert demo.joint_state_delivery(saved, tmp_path / "missing.log")["published"] is None
    assert demo.joint_state_delivery(tmp_path / "none.yaml", log) is None


def test_the_bench_prepares_the_robot_of_the_timed_run(cell, monkeypatch, tmp_path):
    """The pre-fill asks the demo for its own robot (`--prepare-only`, the timed run's arguments), so the timed run
    never identifies one, whatever other robot.yaml the cache holds; --prepare-only stops before the cell."""
    calls: list[list[str]] = []
    monkeypatch.setattr(cell.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    timed: list[tuple] = []
    clocks: list[str] = []

    def run_demo(out, seed, robot=cell.DEMO_ROBOT_SEED, clock="sim"):
        timed.append((seed, robot, len(calls)))
        clocks.append(clock)
        r = result(1.8, 3.51, 0.01)
        r.update(estimator_cpu_pct=10.0, estimator_cpu_pct_mean=12.0, estimator_idle_cpu_pct=1.0)
        return r

    monkeypatch.setattr(cell, "run_demo", run_demo)
    monkeypatch.setenv("CELL_SEEDS", "7")
    monkeypatch.setenv("CELL_ROBOT_SEEDS", "demo")
    assert cell.main() == 0
    assert len(calls) == 1 and calls[0][-1] == "--prepare-only" and "--robot-seed" not in calls[0]
    assert timed[0] == (cell.FIRST_SEED, cell.DEMO_ROBOT_SEED, 1)       # after the pre-fill
    monkeypatch.setenv("CELL_CLOCK", "real")
    assert cell.main() == 0
    assert clocks == ["sim", "real"]

    def stop(**_):
        raise AssertionError("--prepare-only started the cell")

    robot = tmp_path / "robot.yaml"
    monkeypatch.setattr(demo, "Supervisor", stop)
    monkeypatch.setattr(demo, "unloaded_robot_yaml", lambda *a, **k: robot)
    assert demo.main(["--out", str(tmp_path), "--prepare-only"]) == 0
