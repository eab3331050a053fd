"""Simulation benchmarks. Last stdout line: one JSON object.

sim_realtime_factor: simulated seconds per wall second for a 10 s UR10 excitation at 500 Hz with the
ur10 profile (friction, noise, F/T), median of 3 runs, model build included.
mock_hw_jitter_ms_p50 / _p99: |inter-arrival − 2 ms| of /joint_states received in this process from a
mock_hardware node running in another process for a few seconds.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import numpy as np


def realtime_factor(runs: int = 3) -> float:
    from payload_id_core.excitation import FourierTrajectory
    from payload_id_core.model import RobotModel
    from payload_id_core.sim import simulate

    model = RobotModel.from_urdf("ur10")
    z = np.random.default_rng(1).standard_normal((6, 7)) * 0.25
    traj = FourierTrajectory.from_rest_coordinates(model.joint_names, 0.1, [0.0, -1.4, 1.2, -1.0, -1.3, 0.0], z, 5)
    factors = []
    for seed in range(runs):
        t0 = time.perf_counter()
        rec = simulate(model, traj, None, "ur10", seed=seed, lead_in=0.0, lead_out=0.0)
        factors.append((rec.joints.t[-1] - rec.joints.t[0]) / (time.perf_counter() - t0))
    return float(np.median(factors))


def jitter(seconds: float = 4.0) -> tuple[float, float, float]:
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(101, 200)))
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=env["ROS_DOMAIN_ID"])
    import rclpy
    from sensor_msgs.msg import JointState

    proc = subprocess.Popen([sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p", "urdf:=ur10",
                             "-p", "profile:=ur10", "-p", "rate_hz:=500.0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    node = rclpy.create_node("mock_hw_jitter_probe")
    arrivals: list[float] = []
    node.create_subscription(JointState, "/joint_states", lambda _m: arrivals.append(time.monotonic()), 200)
    try:
        deadline = time.monotonic() + 30.0
        while not arrivals and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        warm = time.monotonic() + 1.0
        while time.monotonic() < warm:
            rclpy.spin_once(node, timeout_sec=0.01)
        arrivals.clear()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.01)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        node.destroy_node()
        rclpy.try_shutdown()
    a = np.array(arrivals)
    if a.size < 10:
        return float("nan"), float("nan"), 0.0
    dev = np.abs(np.diff(a) - 0.002) * 1e3
    return float(np.percentile(dev, 50)), float(np.percentile(dev, 99)), float((a.size - 1) / (a[-1] - a[0]))


def main() -> None:
    rtf = realtime_factor()
    print(f"sim_realtime_factor (10 s UR10, ur10 profile, 2 ms physics, median of 3): {rtf:.1f}")
    p50, p99, rate = jitter()
    print(f"mock_hardware: joint_states at {rate:.1f} Hz received; jitter p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    print(json.dumps({"sim_realtime_factor": round(rtf, 2), "mock_hw_jitter_ms_p50": round(p50, 4),
                      "mock_hw_jitter_ms_p99": round(p99, 4), "mock_hw_rate_hz": round(rate, 1)}))


if __name__ == "__main__":
    main()
