"""`make demo`: the simulated cell end to end (`python -m payload_id_ros.demo`).

1. The unloaded robot: the simulated UR10 plays a robot-identification trajectory without payload
   (`payload-id simulate`), and `payload-id identify-robot` turns the bag into robot.yaml, as on a
   real cell. Cached in out/demo_cache/ (keyed by the inputs), so a second demo skips it.
2. The cell: mock_hardware carrying a payload the estimator is never told about (3.5 kg, CoM off
   the flange axis), payload_estimator and excitation_player, started by the supervisor with
   config/ur10.yaml exactly as launch/sim_cell.launch.py would; on simulated time by default (mock_hardware owns
   /clock at most at real time, the other nodes use_sim_time), so a busy machine slows the simulation down instead
   of making it skip joint states (--clock real: the wall clock, as a real cell runs).
3. `payload-id identify --ros` (the command-line action client) asks for the identification and
   prints the streaming feedback and the final estimate next to the truth.
4. out/demo_report.png (mass, CoM error and inertia over the motion with their ±2σ bands, the truth and the
   convergence time; torque RMSE before/after) and out/demo_result.yaml (estimate, truth, errors, wall times, and the
   joint states the estimator received against those mock_hardware published: joint_state_delivery; the clock).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from payload_id_core.dynamics import bundled_urdf
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation import bundled_trajectories, load_trajectory
from payload_id_core.io import atomic_write_yaml
from payload_id_core.report import Convergence, estimate_lines, plot_report
from payload_id_core.robot_id import IDENTIFICATION_VERSION
from payload_id_core.sim import load_profile
from payload_id_ros.supervisor import Supervisor

ROBOT = "ur10"
PROFILE = "ur10"
FRAME = "tool0"
# The payload mock_hardware carries; only the demo's comparison reads it.
HIDDEN_PAYLOAD: dict[str, Any] = {"frame": FRAME, "mass": 3.5, "com": [0.03, -0.02, 0.08],
                  "inertia": {"ixx": 0.012, "ixy": 0.0, "ixz": 0.0, "iyy": 0.015, "iyz": 0.0, "izz": 0.009}}
# Bundled (payload_id_core/data/trajectories), designed with `payload-id excite --objective convergence`: the mass
# is known after 2 s of its motion, where ur10_payload's 10 s design spreads it over the period (declared
# converged at a median 1.95 s of 20 seeds on the simulated cell, ur10_payload at 5.35 s: bench/payload.py
# cell_convergence_*).
PAYLOAD_TRAJECTORY = "ur10_payload_fast"
# The unloaded robot plays the same excitation as the loaded one, as in Xu 2024 (π_a and π_b from one
# trajectory). Identified on another one, the robot model's Coulomb levels are those of that motion's load
# torques (the drives' friction grows with the torque they carry, sim profile load_coulomb): ur10_payload's robot
# put the fast run's mass 1 % off at 5σ. (ur10_base barely moves the shoulder pan joint, so its model
# extrapolates badly there.)
ROBOT_TRAJECTORY = PAYLOAD_TRAJECTORY
# The simulated drives lose torque in proportion to the torque they carry (profile ur10 load_coulomb, after Xu
# 2024 §4.3), so the demo identifies that too (identify-robot --gear-friction identify; off by default because
# one μ per drive made the real UR10e's masses worse: docs/design.md). Without it the robot model keeps the
# Coulomb levels of the whole identification run, and over the first seconds of that run, where an online
# estimate is declared, the difference leaked into the mass (bench/payload.py cell_convergence_*).
GEAR_FRICTION = True
# The payload monitor demo's robot: its task motion is none of the excitations; ur10_payload is what its
# thresholds were measured with (bench/monitor.py).
MONITOR_ROBOT_TRAJECTORY = "ur10_payload"
# mock_hardware's record of the joint states it published (its publish_log), in out/demo_logs: the run's
# demo_result.yaml joint_states compares what the estimator received with it.
PUBLISHED_LOG = "mock_hardware_published.log"
# mock_hardware's noise seed. The goal's excitation starts at whatever sample the simulated clock has reached when the
# command arrives, so even one seed gives another noise realisation under the excitation on every run.
NOISE_SEED = 7
# The unloaded robot's run's noise seed (`payload-id simulate --seed`). One identification serves every demo;
# bench/cell.py draws one per mock_hardware seed (--robot-seed) so that its runs are independent in the robot's error.
ROBOT_SEED = 11
# The cell's clock by default: simulated time, so the demo measures the estimator whatever else the machine runs. On
# the wall clock a stall of mock_hardware over 0.1 s makes it skip the periods it missed: at load 23-31 (h176) one
# demo of two on the wall clock aborted (joint states 0.67 s stale) and the other got 837 of the window's samples
# (covered 0.41, mass -10.6 %), where every run on /clock was complete (2000 of 2001). What /clock used to cost:
# mock_hardware published it with every 500 Hz joint state, and each message woke the estimator's executor (h170:
# idle CPU 11-12 % of a core on the wall clock against 20.5-26 % at load 7-12); it now ticks every 10 ms
# (mock_hardware clock_period), docs/design.md has the paired figures. --clock real (bench/cell.py CELL_CLOCK=real)
# runs the cell as a real one runs; the estimator's use_sim_time stays false unless a launch sets it.
CLOCKS = ("sim", "real")
DEFAULT_CLOCK = "sim"


def _cli(*args: str, log=None) -> None:
    cmd = [str(Path(sys.executable).parent / "payload-id"), *args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log is not None:
        log.write(proc.stdout)
    if proc.returncode != 0:
        raise PayloadIdError(f"`payload-id {' '.join(args)}` failed (exit {proc.returncode}): "
                             f"{proc.stdout.strip()[-800:]}", "see the message above")


def trajectory(name: str, cache: Path, objective: str, duration: float) -> str:
    """A bundled trajectory, or one designed once with `payload-id excite` and cached."""
    if name in bundled_trajectories():
        return name
    path = cache / f"{name}.yaml"
    if not path.is_file():
        print(f"demo: designing the {objective} excitation {path} (payload-id excite) ...", flush=True)
        _cli("excite", "--urdf", ROBOT, "--frame", FRAME, "--duration", str(duration), "--objective", objective,
             "--seeds", "1", "--out", str(path))
    return str(path)


def _key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.read_bytes() if isinstance(p, Path) else str(p).encode())
    return h.hexdigest()[:16]


def unloaded_robot_yaml(cache: Path, robot_trajectory: str, seed: int = ROBOT_SEED,
                        gear_friction: bool = False) -> Path:
    """robot.yaml of the simulated robot without payload: simulate a bag, identify-robot on it (cached).
    `gear_friction`: identify the drives' torque-dependent friction too (identify-robot --gear-friction identify).
    No held-out run (--held-out-bag), unlike a real cell's robot.yaml: the model error one measures replaced the
    loaded run's own serial-correlation inflation and narrowed the cell's inertia σ without its error (iyy within 2σ
    at 3 s 1.00 -> 0.50 over seeds 100-105) and held one run's convergence to 3.0 s (h161; docs/design.md "Prior
    knowledge", the demo's robot.yaml with a held-out run)."""
    cache.mkdir(parents=True, exist_ok=True)
    traj = load_trajectory(robot_trajectory)
    prof = load_profile(PROFILE, 6)
    scale = [float(k) for k in prof.effort_scale]
    key = _key(bundled_urdf(ROBOT), Path(prof.source), json.dumps(traj.to_dict(), sort_keys=True), seed, scale,
               IDENTIFICATION_VERSION, gear_friction)
    out = cache / f"{ROBOT}_unloaded_robot_{key}.yaml"
    if out.is_file():
        return out
    bag = cache / f"{ROBOT}_unloaded_{key}"
    with open(cache / "robot_identification.log", "w") as log:
        print(f"demo: identifying the unloaded simulated {ROBOT} (payload-id simulate + identify-robot) ...",
              flush=True)
        _cli("simulate", "--urdf", ROBOT, "--trajectory", robot_trajectory, "--profile", PROFILE, "--seed", str(seed),
             "--out", str(bag), log=log)
        # The drive gains (effort = current) are the UR figures the simulated drives use; a real cell
        # takes them from the robot's documentation the same way.
        _cli("identify-robot", "--urdf", ROBOT, "--bag", str(bag), "--friction", "nonlinear",
             "--effort-scale", ",".join(f"{k:g}" for k in scale), "--out", str(out),
             "--gear-friction", "identify" if gear_friction else "none", log=log)
    return out


def report_convergence(result: dict) -> Convergence | None:
    """The identify client's feedback history (`payload-id identify --out`) as the report's convergence panels."""
    fb = result.get("feedback") or []
    if not fb:
        return None
    column = lambda key: np.array([f[key] for f in fb], dtype=float)  # noqa: E731
    with_inertia = all("inertia" in f for f in fb)       # histories written before the inertia was recorded
    ct = result.get("convergence_time")
    return Convergence(column("elapsed"), column("mass"), column("mass_std"), column("com"), column("com_std"),
                       column("inertia") if with_inertia else None, column("inertia_std") if with_inertia else None,
                       float("nan") if ct is None else float(ct))


def report_panels(result: dict) -> dict:
    """plot_report's arguments for the demo's result: mass, CoM error and inertia over the motion against the
    hidden payload, and the torque RMSE before and after."""
    before = result.get("torque_rmse_before") or []
    truth = result["truth"]
    inertia = truth.get("inertia") or {}
    return {"joint_names": [f"j{k + 1}" for k in range(len(before))], "rmse_before": before,
            "rmse_after": result.get("torque_rmse_after") or [], "convergence": report_convergence(result),
            "truth_mass": truth["mass"], "truth_com": truth["com"],
            "truth_inertia": [inertia.get(k) or 0.0 for k in ("ixx", "iyy", "izz")],
            "numbers": estimate_lines(result["estimate"], truth) if result.get("estimate") else None,
            "title": f"simulated cell: {result.get('method', '')} identification of the hidden payload"}


def report_png(path: Path, result: dict) -> None:
    plot_report(path, **report_panels(result))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m payload_id_ros.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out", help="output directory (default out/)")
    ap.add_argument("--method", default="difference-rls", help="online method (difference-rls | direct-rls)")
    ap.add_argument("--trajectory", default=None, help=f"payload excitation (default: bundled {PAYLOAD_TRAJECTORY})")
    ap.add_argument("--robot-trajectory", default=None,
                    help="robot identification excitation (default: the payload excitation, as in Xu 2024)")
    ap.add_argument("--stop-when-converged", action="store_true", help="end the motion once converged")
    ap.add_argument("--seed", type=int, default=NOISE_SEED,
                    help=f"mock_hardware's noise seed (default {NOISE_SEED}; bench/cell.py runs several)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="identify (and cache) the unloaded robot of these arguments and stop: bench/cell.py's set-up")
    ap.add_argument("--robot-seed", type=int, default=ROBOT_SEED,
                    help=f"noise seed of the unloaded robot's simulated run, identified once per seed and cached "
                         f"(default {ROBOT_SEED})")
    ap.add_argument("--clock", choices=CLOCKS, default=DEFAULT_CLOCK,
                    help="sim: mock_hardware owns /clock (at most real time) and the nodes run on it, so a busy "
                         "machine slows the run instead of losing joint states; real: the wall clock "
                         f"(default {DEFAULT_CLOCK})")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    out = Path(args.out).resolve()
    cache = out / "demo_cache"
    try:
        payload_traj = args.trajectory or trajectory(PAYLOAD_TRAJECTORY, cache, "payload", 10.0)
        robot_traj = args.robot_trajectory or payload_traj
        robot_yaml = unloaded_robot_yaml(cache, robot_traj, seed=args.robot_seed, gear_friction=GEAR_FRICTION)
        t_setup = time.monotonic() - t_start
        print(f"demo: unloaded robot model {robot_yaml.name} ready ({t_setup:.1f} s)", flush=True)
        if args.prepare_only:
            return 0
        truth_path = cache / "hidden_payload.yaml"
        atomic_write_yaml(truth_path, HIDDEN_PAYLOAD)
        result = run_cell(out, robot_yaml, payload_traj, truth_path, args.method, args.stop_when_converged,
                          seed=args.seed, sim_time=args.clock == "sim")
    except PayloadIdError as err:
        print(f"demo: error: {err}", file=sys.stderr)
        return 2
    wall = time.monotonic() - t_start
    result["wall_time_s"] = {"demo": wall, "setup": t_setup, "identification_action": result.pop("wall_time_s", None)}
    atomic_write_yaml(out / "demo_result.yaml", result)
    report_png(out / "demo_report.png", result)
    e = result["errors"]
    print(f"demo: mass error {e['mass_err_pct']:+.2f} %, CoM error {e['com_err_mm']:.1f} mm; "
          f"wrote {out / 'demo_result.yaml'} and {out / 'demo_report.png'}; wall time {wall:.0f} s", flush=True)
    return 0


def run_cell(out: Path, robot_yaml: Path, payload_traj: str, truth_path: Path, method: str,
             stop_when_converged: bool = False, seed: int = NOISE_SEED, sim_time: bool = False) -> dict:
    """The cell up (on mock_hardware's /clock with `sim_time`: Supervisor.sim_time), the identification asked for by
    the command-line client, the cell stopped; the client's result with the run's joint-state delivery and the
    estimator's CPU."""
    hidden = HIDDEN_PAYLOAD
    i = hidden["inertia"]
    published_log = out / "demo_logs" / PUBLISHED_LOG
    saved = out / "demo_cache" / "last_payload.yaml"
    saved.unlink(missing_ok=True)                 # a failed goal must not leave the last run's joint states
    sup = Supervisor(cell="sim_cell", robot=ROBOT, log_dir=out / "demo_logs", sim_time=sim_time, overrides={
        "mock_hardware": {"payload_mass": hidden["mass"], "payload_com": hidden["com"], "payload_frame": FRAME,
                          "payload_inertia": [i["ixx"], i["ixy"], i["ixz"], i["iyy"], i["iyz"], i["izz"]],
                          "seed": seed, "publish_log": str(published_log)},
        "payload_estimator": {"robot_yaml": str(robot_yaml), "trajectory": payload_traj, "method": method,
                              "payload_frame": FRAME, "result_path": str(saved)},
    })
    clock = "simulated time, mock_hardware's /clock" if sim_time else "the wall clock"
    print(f"demo: starting the cell on {clock} (ROS_DOMAIN_ID={sup.env['ROS_DOMAIN_ID']}, logs in {sup.log_dir})",
          flush=True)
    result_file = out / "demo_cache" / "identify_result.yaml"
    with sup:
        sup.wait_for_log("mock_hardware", "simulating", 60)
        sup.wait_for_log("payload_estimator", "payload estimator ready", 60)
        sup.wait_for_log("excitation_player", "excitation player ready", 60)
        cmd = [str(Path(sys.executable).parent / "payload-id"), "identify", "--ros", "--method", method,
               "--truth", str(truth_path), "--out", str(result_file)]
        if stop_when_converged:
            cmd.append("--stop-when-converged")
        pid = sup.pid("payload_estimator")
        samples: list[tuple[float, float]] = []
        done = threading.Event()

        def sample_cpu():
            while not done.is_set():
                samples.append((time.monotonic(), process_cpu_seconds(pid)))
                done.wait(0.5)

        sampler = threading.Thread(target=sample_cpu, daemon=True)
        sampler.start()
        code = subprocess.run(cmd, env=sup.env).returncode
        done.set()
        sampler.join()
        samples.append((time.monotonic(), process_cpu_seconds(pid)))
        # Idle load after the goal (no goal; 500 Hz joint states still read), over 2 s: right after start-up
        # the process still settles (discovery, first imports) and would not show the steady state.
        t_idle, c_idle = time.monotonic(), process_cpu_seconds(pid)
        time.sleep(2.0)
        idle_pct = 100.0 * (process_cpu_seconds(pid) - c_idle) / (time.monotonic() - t_idle)
        t, c = np.array(samples).T
        rates = 100.0 * np.diff(c) / np.diff(t)
        # Median over 0.5 s intervals: the steady load while samples stream in at 500 Hz (most intervals
        # are in the excitation); the mean also counts the one-off work at the end of the goal.
        cpu_pct, cpu_mean = float(np.median(rates)), float(100.0 * (c[-1] - c[0]) / (t[-1] - t[0]))
        if code != 0:
            raise PayloadIdError(f"the identification failed (payload-id identify exit {code})",
                                 f"see the logs in {sup.log_dir}")
    with open(result_file) as f:
        result = yaml.safe_load(f)
    result["joint_states"] = joint_state_delivery(saved, published_log)
    result["clock"] = "simulated" if sim_time else "wall"
    result["estimator_cpu_pct"] = cpu_pct
    result["estimator_cpu_pct_mean"] = cpu_mean
    result["estimator_idle_cpu_pct"] = idle_pct
    print(f"demo: payload_estimator CPU during the identification: median {cpu_pct:.1f} % of one core "
          f"(mean {cpu_mean:.1f} % with the end-of-goal computations; {idle_pct:.1f} % idle)", flush=True)
    return result


def joint_state_delivery(saved: Path, published_log: Path) -> dict | None:
    """What the goal's excitation window received of the joint states (the estimator's result file's joint_states:
    payload_id_core.signals.stamp_holes.WindowCoverage) and how many mock_hardware published in that window (its
    publish_log, 'wall_s stamp_s' per joint state; None when it is not there), so a run that lost samples under load
    can be told from one that got them all. None: the estimator saved none (no window)."""
    try:
        delivery = (yaml.safe_load(saved.read_text()) or {}).get("joint_states")
    except (OSError, yaml.YAMLError):
        return None
    if not delivery:
        return None
    t0, t1 = delivery["window"]
    try:
        stamps = np.loadtxt(published_log, ndmin=2)[:, 1]
        delivery["published"] = int(np.count_nonzero((stamps >= t0) & (stamps <= t1)))
    except (OSError, ValueError, IndexError):
        delivery["published"] = None
    return delivery


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc/<pid>/stat (fields 14, 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
