"""Speed figures of issue 35, paired with a reference tree of the code in the same run.

    python bench/speed.py [--reference TREE] [--repeats N]

  cli_identify_payload_10s_bag_s   wall time of `payload-id identify-payload --method difference-rls` on a 10 s,
                                   500 Hz UR10 bag (robot.yaml given), start-up and imports included (target ≤ 2)
  cli_identify_payload_10s_bag_cpu_s  its CPU time (user + system), less inflated by others' load
  online_update_us_direct_rls,     one OnlinePayloadEstimator.update per sample (the ROS node feeds update_batch):
  online_update_us_difference_rls  median over 2000 samples (target ≤ 25 for both); online_update_us the larger;
  online_update_cpu_us_<method>    the mean CPU time of those updates (the timer calls included)
  identify_robot_60s_s             bench/dynamics.py's figure (WLS, nonlinear friction, delay estimated, 60 s at
                                   500 Hz), one run per process after a warm-up (target ≤ 1.0), with
                                   identify_robot_60s_validation_rmse_ratio (the same model either way) and
                                   identify_robot_60s_cpu_s, its CPU time (less inflated by others' load)
  monitor_update_us                bench/monitor.py's figure: PayloadMonitor.update's wall time per joint-state
                                   sample in 10-sample blocks, on 30 s of its pick-and-place task (the simulated UR10
                                   cell, seed 5; its robot identified as bench/monitor.py does) (target ≤ 100), with
                                   monitor_update_cpu_us, its CPU time, and monitor_events, the events it sent (the
                                   same with either tree: the same task's events), all of the first of
                                   MONITOR_RUNS runs of the task; monitor_update_fastest_us: per block the fastest
                                   of those runs, summed (the least disturbed by others' load: on a loaded machine
                                   the figure nearest an idle one's)
With --reference TREE (a checkout of another commit, e.g. a `git worktree` of main), each figure is also taken
with that tree's core (PYTHONPATH=TREE/src/payload_id_core, ahead of this venv's editable install) as
<figure>_reference, the two alternating run by run so that both see the same load. Every figure is the median
over --repeats runs; each run is a fresh process. The recordings (a robot identified on a 20 s unloaded run,
the 10 s loaded bag; the monitor's cell robot and task) are made once by this tree's code and read by both, the
robot.yaml files by the reference in format 1 (save_robot: a tree from before format 2 reads only that).

Prints one JSON object as the last stdout line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.robot_id import RobotIdentification, fit_given_model, validate_robot
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

RATE = 500.0
FRAME = "tool0"
MONITOR_TASK_S = 30.0
MONITOR_RUNS = 3         # runs of the monitor's task per process, for monitor_update_fastest_us


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def save_robot(robot: RobotIdentification, path: Path) -> dict[str, Path]:
    """robot.yaml as this tree writes it (for the tree "") and in format 1 (for the reference, "_reference"): format 2
    added effort.gain_covariance alone, which the bench's identifications do not have (the gains are given), so the
    two files say the same; a tree from before format 2 reads only format 1, a later one reads both alike."""
    robot.save(path)
    d = robot.to_dict()
    if d["format"] != 2 or d["effort"].pop("gain_covariance", None) is not None:
        raise SystemExit(f"bench/speed.py writes format 1 from format 2 without gain_covariance only, not format "
                         f"{d['format']} (gain_covariance {'given' if d['effort'].get('gain_covariance') else 'none'})")
    d["format"] = 1
    older = path.with_name(f"{path.stem}_format1.yaml")
    atomic_write_yaml(older, d)
    return {"": path, "_reference": older}


def make_inputs(folder: Path) -> tuple[dict[str, Path], Path]:
    """robot.yaml of a UR10 identified on a 20 s unloaded run, and a 10 s loaded bag (4 kg, CoM off the flange)."""
    model = RobotModel.from_urdf("ur10")
    phi = from_mass_com_inertia(4.0, np.array([0.02, -0.03, 0.08]), np.diag([0.02, 0.03, 0.015]))

    def rec(seconds, seed, payload):
        return synthetic_recording(model, *sum_of_sines(model, seconds, RATE, seed=seed), friction="linear",
                                   friction_params=np.tile([3.0, 2.0, 0.3], model.n), noise_std=0.5, delay=0.003,
                                   payload=payload, seed=seed)

    robot = fit_given_model(model, rec(20.0, 1, None), friction="linear")
    write_bag(folder / "loaded", rec(10.0, 2, (phi, FRAME)))
    return save_robot(robot, folder / "robot.yaml"), folder / "loaded"


def make_monitor_inputs(folder: Path) -> tuple[dict[str, Path], Path]:
    """bench/monitor.py's cell robot (robot.yaml) and 30 s of its pick-and-place task (t, q, q̇, τ in an .npz)."""
    from payload_id_core.excitation.fourier import load_trajectory  # noqa: PLC0415 - the monitor figure's only
    from payload_id_core.sim import simulate  # noqa: PLC0415
    from payload_id_core.sim.pick_place import pick_and_place  # noqa: PLC0415

    model = RobotModel.from_urdf("ur10")
    robot = fit_given_model(model, simulate(model, load_trajectory("ur10_payload"), None, "ur10", seed=1),
                           friction="nonlinear", estimator="wls")
    run = pick_and_place(model, "ur10", seconds=MONITOR_TASK_S, seed=5)
    np.savez(folder / "monitor_task.npz", t=run.t, q=run.q, qd=run.qd, tau=run.tau, frame=run.frame)
    return save_robot(robot, folder / "cell_robot.yaml"), folder / "monitor_task.npz"


def monitor_figures(robot: Path, task: Path) -> dict[str, float]:
    """PayloadMonitor.update per joint-state sample, 10-sample blocks, this process's code (run as a child)."""
    from payload_id_core.monitor import PayloadMonitor  # noqa: PLC0415

    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    ident = RobotIdentification.load(robot, model)
    run = np.load(task)
    t, q, qd, tau = run["t"], run["q"], run["qd"], run["tau"]
    blocks = range(0, t.size, 10)
    fastest = np.full(len(blocks), np.inf)
    for run_index in range(MONITOR_RUNS):
        monitor = PayloadMonitor(model, ident, str(run["frame"]))
        events = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for b, k in enumerate(blocks):
            a = time.perf_counter()
            events += len(monitor.update(t[k:k + 10], q[k:k + 10], qd[k:k + 10], tau[k:k + 10]).events)
            fastest[b] = min(fastest[b], time.perf_counter() - a)
        if run_index == 0:
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"monitor_update_us": wall / t.size * 1e6, "monitor_update_cpu_us": cpu / t.size * 1e6,
            "monitor_update_fastest_us": float(fastest.sum()) / t.size * 1e6, "monitor_events": float(events)}


def env_for(tree: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree / "src" / "payload_id_core"),
                                                          env.get("PYTHONPATH", "")]))
    return env


def cli_seconds(tree: Path | None, robot: Path, bag: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one `payload-id identify-payload` process: CPU (user + system) is what the load
    of the shared machine inflates least."""
    cmd = [sys.executable, "-c", "import sys; from payload_id_core.cli.main import main; sys.exit(main())",
           "identify-payload", "--urdf", "ur10", "--robot", str(robot), "--bag", str(bag), "--frame", FRAME,
           "--method", "difference-rls", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env_for(tree), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"identify-payload failed ({done.returncode}): {done.stderr}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def online_figures(robot: Path, bag: Path) -> dict[str, float]:
    """Per-sample update of both online methods, this process's code (run as a child with --online)."""
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    ident = RobotIdentification.load(robot, model)
    sig = conditioned_signals(read_bag(bag), model.joint_names, source="commanded", delay="estimate")
    figures = {}
    for method in ("direct-rls", "difference-rls"):
        est = OnlinePayloadEstimator(model, ident, FRAME, method, history_every=0, check_every=10**9)
        per = []
        c0 = time.process_time()
        for k in range(min(2000, len(sig))):
            a = time.perf_counter()
            est.update(sig.q[k], sig.qd[k], sig.qdd[k], sig.tau[k], sig.t[k])
            per.append(time.perf_counter() - a)
        name = method.replace('-', '_')
        figures[f"online_update_us_{name}"] = float(np.median(per) * 1e6)
        figures[f"online_update_cpu_us_{name}"] = (time.process_time() - c0) / len(per) * 1e6
    return figures


def robot_id_figures() -> dict[str, float]:
    """bench/dynamics.py's identify_robot_60s_s (WLS, nonlinear friction with α search, delay estimated, on
    60 s at 500 Hz) once in this process, after a warm-up run, with its validation RMSE ratio (the same model?)."""
    limit_blas_threads()
    model = RobotModel.from_urdf("ur10")
    noise = np.array([0.8, 0.8, 0.5, 0.2, 0.2, 0.1])
    truth_f = make_friction_model("nonlinear", model.joint_names, alpha=[0.45, 0.35, 0.6, 0.7, 0.5, 0.4])

    def recording(seed, duration):
        t, q, qd, qdd = sum_of_sines(model, duration, 500.0, seed=seed)
        return synthetic_recording(model, t, q, qd, qdd, friction=truth_f, friction_params=np.tile([3.0, 9.0, 0.1], 6),
                                   rotor_inertia=[0.6, 0.6, 0.3, 0.05, 0.05, 0.05], noise_std=noise, seed=seed)

    train, test = recording(1, 60.0), recording(2, 20.0)
    fit_given_model(model, recording(3, 2.0), delay=0.0)
    t0, c0 = time.perf_counter(), time.process_time()
    ident = fit_given_model(model, train, friction="nonlinear", estimator="wls", delay="estimate")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"identify_robot_60s_s": seconds, "identify_robot_60s_cpu_s": cpu,
            "identify_robot_60s_validation_rmse_ratio": float(np.max(validate_robot(ident, test) / noise))}


def robot_id_run(tree: Path | None) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--robot-id"], env=env_for(tree), capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def online_run(tree: Path | None, robot: Path, bag: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--online", str(robot), str(bag)], env=env_for(tree),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def monitor_run(tree: Path | None, robot: Path, task: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--monitor", str(robot), str(task)], env=env_for(tree),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=Path, help="a checkout of the code to compare with (its repository root)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--online", nargs=2, metavar=("ROBOT", "BAG"), help=argparse.SUPPRESS)
    parser.add_argument("--robot-id", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--monitor", nargs=2, metavar=("ROBOT", "TASK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.robot_id:
        print(json.dumps(robot_id_figures()))
        return
    if args.monitor:
        print(json.dumps(monitor_figures(Path(args.monitor[0]), Path(args.monitor[1]))))
        return
    if args.online:
        print(json.dumps(online_figures(Path(args.online[0]), Path(args.online[1]))))
        return
    trees: dict[str, Path | None] = {"": None}
    if args.reference is not None:
        trees["_reference"] = args.reference.resolve()
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        robot, bag = make_inputs(Path(tmp))
        cell_robot, task = make_monitor_inputs(Path(tmp))
        for repeat in range(args.repeats):
            # Alternate which tree goes first so that neither always runs on a warmer cache.
            order = list(trees.items()) if repeat % 2 == 0 else list(reversed(trees.items()))
            for suffix, tree in order:
                wall, cpu = cli_seconds(tree, robot[suffix], bag, Path(tmp) / f"payload{suffix}.yaml")
                samples.setdefault(f"cli_identify_payload_10s_bag_s{suffix}", []).append(wall)
                samples.setdefault(f"cli_identify_payload_10s_bag_cpu_s{suffix}", []).append(cpu)
                run_figures = (online_run(tree, robot[suffix], bag) | robot_id_run(tree)
                               | monitor_run(tree, cell_robot[suffix], task))
                for name, value in run_figures.items():
                    samples.setdefault(f"{name}{suffix}", []).append(value)
            log(f"repeat {repeat + 1}/{args.repeats}: " + ", ".join(f"{k} {v[-1]:.3g}" for k, v in samples.items()))
    figures = {name: statistics.median(values) for name, values in samples.items()}
    for suffix in trees:
        figures[f"online_update_us{suffix}"] = max(figures[f"online_update_us_direct_rls{suffix}"],
                                                   figures[f"online_update_us_difference_rls{suffix}"])
    figures["load_average_1min"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 4) for k, v in sorted(figures.items())}))


if __name__ == "__main__":
    main()
