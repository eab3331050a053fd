"""Simulation benchmarks. Last stdout line: one JSON object.

sim_realtime_factor: simulated seconds per wall second for a 10 s UR10 excitation at 500 Hz with the
ur10 profile (friction, noise, F/T), median of 3 runs, model build included.
mock_hw_jitter_ms_p50 / _p99: |inter-arrival − 2 ms| of /joint_states received in this process from a
mock_hardware node running in another process for 6 s (after 1 s warm-up).
mock_hw_publish_jitter_ms_p50 / _p99: the same on the node's own publish times (its publish_log), and
mock_hw_publish_late_ms_p50 / _p99: publish time − schedule (stamp), less the smallest such offset.
mock_hw_sim_time_max_factor: simulated/wall seconds of the node on /clock with real_time_factor 0.
p50 is the median over the run. The machine's load average is printed with them: on a shared 2-core
machine the tails are the other processes' scheduling, not the node's.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from rclpy.task import Future
from sensor_msgs.msg import JointState

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import FourierTrajectory
from payload_id_core.sim import simulate

try:
    from rclpy.experimental import EventsExecutor as Executor  # least dispatch overhead in rclpy
except ImportError:  # pragma: no cover - older rclpy
    from rclpy.executors import SingleThreadedExecutor as Executor


def realtime_factor(runs: int = 3) -> float:
    model = RobotModel.from_urdf("ur10")
    z = np.random.default_rng(1).standard_normal((6, 7)) * 0.25
    traj = FourierTrajectory.from_rest_coordinates(model.joint_names, 0.1, [0.0, -1.4, 1.2, -1.0, -1.3, 0.0], z, 5)
    factors = []
    for seed in range(runs):
        t0 = time.perf_counter()
        rec = simulate(model, traj, None, "ur10", seed=seed, lead_in=0.0, lead_out=0.0)
        factors.append((rec.joints.t[-1] - rec.joints.t[0]) / (time.perf_counter() - t0))
    return float(np.median(factors))


def _deviation_ms(times: np.ndarray, period: float = 0.002) -> np.ndarray:
    return np.abs(np.diff(times) - period) * 1e3


def jitter(seconds: float = 6.0) -> dict:
    """Run mock_hardware (ur10 profile, real time, 500 Hz) in another process for `seconds` after a 1 s
    warm-up; returns subscriber-side and publisher-side timing (the node's publish_log)."""
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(101, 200)))
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=env["ROS_DOMAIN_ID"])
    log = Path(tempfile.mkdtemp(prefix="mock_hw_jitter_")) / "publish.log"
    proc = subprocess.Popen([sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p", "urdf:=ur10",
                             "-p", "profile:=ur10", "-p", "rate_hz:=500.0", "-p", f"publish_log:={log}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    node = rclpy.create_node("mock_hw_jitter_probe")
    received: list[tuple[float, float]] = []

    def on_js(msg):
        received.append((time.monotonic(), msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec))

    node.create_subscription(JointState, "/joint_states", on_js, 200)
    executor = Executor()
    executor.add_node(node)

    def spin_for(duration: float) -> None:   # EventsExecutor: spin here (its shutdown hangs under a spinning thread)
        executor.spin_until_future_complete(Future(), timeout_sec=duration)

    try:
        deadline = time.monotonic() + 60.0
        while not received and time.monotonic() < deadline:
            spin_for(0.1)
        spin_for(1.0)
        first = len(received)
        spin_for(seconds)
        window = received[first:]
    finally:
        proc.send_signal(signal.SIGINT)     # the node flushes its publish log on a clean shutdown
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    out = {"mock_hw_jitter_ms_p50": float("nan"), "mock_hw_jitter_ms_p99": float("nan"),
           "mock_hw_publish_jitter_ms_p50": float("nan"), "mock_hw_publish_jitter_ms_p99": float("nan"),
           "mock_hw_publish_late_ms_p50": float("nan"), "mock_hw_publish_late_ms_p99": float("nan"),
           "mock_hw_rate_hz": 0.0, "mock_hw_lost_fraction": float("nan")}
    if len(window) < 10:
        return out
    arrival, stamp = np.array(window).T
    dev = _deviation_ms(arrival)
    out.update(mock_hw_jitter_ms_p50=float(np.median(dev)), mock_hw_jitter_ms_p99=float(np.percentile(dev, 99)),
               mock_hw_rate_hz=float((arrival.size - 1) / (arrival[-1] - arrival[0])),
               mock_hw_lost_fraction=float(1.0 - arrival.size / (round((stamp[-1] - stamp[0]) / 0.002) + 1)))
    if log.is_file():
        pub = np.loadtxt(log, ndmin=2)
        pub = pub[(pub[:, 1] >= stamp[0]) & (pub[:, 1] <= stamp[-1])]   # the subscriber's window
        if pub.shape[0] > 10:
            pdev = _deviation_ms(pub[:, 0])
            # Lateness against the schedule: wall − stamp, less its smallest value (the clocks' offset).
            late = (pub[:, 0] - pub[:, 1]) * 1e3
            late -= late.min()
            out.update(mock_hw_publish_jitter_ms_p50=float(np.median(pdev)),
                       mock_hw_publish_jitter_ms_p99=float(np.percentile(pdev, 99)),
                       mock_hw_publish_late_ms_p50=float(np.median(late)),
                       mock_hw_publish_late_ms_p99=float(np.percentile(late, 99)))
    return out


def fastest_factor(seconds: float = 4.0) -> float:
    """Simulated seconds per wall second of mock_hardware with sim_time:=true real_time_factor:=0 (as fast
    as it can, ur10 profile, publishing /clock, joint states and wrench), from its publish_log."""
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(101, 200)))
    log = Path(tempfile.mkdtemp(prefix="mock_hw_fast_")) / "publish.log"
    proc = subprocess.Popen([sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p", "urdf:=ur10",
                             "-p", "profile:=ur10", "-p", "sim_time:=true", "-p", "real_time_factor:=0",
                             "-p", f"publish_log:={log}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60.0
        while (not log.is_file() or log.stat().st_size == 0) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(seconds)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    pub = np.loadtxt(log, ndmin=2) if log.is_file() else np.empty((0, 2))
    if pub.shape[0] < 1000:
        return float("nan")
    pub = pub[500:]                     # past the start-up
    return float((pub[-1, 1] - pub[0, 1]) / (pub[-1, 0] - pub[0, 0]))


def main() -> None:
    rtf = realtime_factor()
    print(f"sim_realtime_factor (10 s UR10, ur10 profile, 2 ms physics, median of 3): {rtf:.1f}")
    j = jitter()
    print(f"mock_hardware: joint_states at {j['mock_hw_rate_hz']:.1f} Hz received "
          f"(lost {100 * j['mock_hw_lost_fraction']:.2f} %); "
          f"|inter-arrival - 2 ms| p50 {j['mock_hw_jitter_ms_p50']:.3f} ms, "
          f"p99 {j['mock_hw_jitter_ms_p99']:.3f} ms; publisher |inter-publish - 2 ms| p50 "
          f"{j['mock_hw_publish_jitter_ms_p50']:.3f} ms, p99 {j['mock_hw_publish_jitter_ms_p99']:.3f} ms; "
          f"publish lateness p50 {j['mock_hw_publish_late_ms_p50']:.3f} ms, "
          f"p99 {j['mock_hw_publish_late_ms_p99']:.3f} ms")
    fast = fastest_factor()
    print(f"mock_hardware sim_time, real_time_factor 0 (as fast as possible): {fast:.1f}x real time")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (other work shares them)")
    figures = {"sim_realtime_factor": round(rtf, 2)}
    figures.update({k: round(v, 4) for k, v in j.items()})
    figures["mock_hw_sim_time_max_factor"] = round(fast, 2)
    figures["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
