"""mock_hardware across processes: joint states at the configured rate, a JointTrajectory moves the
simulated robot, a bad one is refused (robot holds still), the payload service changes the torques."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import WrenchStamped
from rclpy.client import Client
from rclpy.experimental import EventsExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from payload_id_msgs.srv import SetPayload
from payload_id_ros.conversions import sec_to_time

pytestmark = pytest.mark.wall_clock   # the node's publishing rate and its simulated/wall time ratio

Q0 = [0.0, -1.2, 1.0, -1.4, -1.57, 0.0]
CLOCK_PERIOD = 0.01     # s: mock_hardware's default clock_period


def _end(proc: subprocess.Popen) -> None:
    """End the node by its PID: SIGTERM, then SIGKILL if it has not exited within 5 s."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_mock_hardware_node(ros_env: dict) -> None:
    cmd = [sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p", "urdf:=ur10",
           "-p", "profile:=clean", "-p", "rate_hz:=500.0", "-p", f"initial_positions:={Q0}"]
    proc = subprocess.Popen(cmd, env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None  # piped: read when the node dies
    rclpy.init()
    node = rclpy.create_node("mock_hardware_probe")
    states: list[tuple[float, float, np.ndarray, np.ndarray]] = []
    wrenches: list[WrenchStamped] = []

    def on_js(msg: JointState):
        states.append((time.monotonic(), msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                       np.array(msg.position), np.array(msg.effort)))

    node.create_subscription(JointState, "/joint_states", on_js, 100)
    node.create_subscription(WrenchStamped, "/ft_sensor/wrench", wrenches.append, 100)
    pub = node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", 10)
    client: Client[Any, Any] = node.create_client(SetPayload, "/mock_hardware/set_payload")  # untyped srv

    def spin_for(seconds: float):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.01)

    def trajectory(names, target, t=1.0):
        msg = JointTrajectory()
        msg.joint_names = names
        p = JointTrajectoryPoint()
        p.positions = list(map(float, target))
        p.velocities = [0.0] * len(target)
        p.time_from_start = Duration(sec=int(t), nanosec=int((t % 1) * 1e9))
        msg.points = [p]
        return msg

    names = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
             "wrist_3_joint"]
    try:
        deadline = time.monotonic() + 20.0
        while not states and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            spin_for(0.1)
        assert states, "no joint states from mock_hardware"
        spin_for(0.5)
        states.clear()
        spin_for(2.0)
        arrival = np.array([s[0] for s in states])
        stamps = np.array([s[1] for s in states])
        rate = (len(states) - 1) / (arrival[-1] - arrival[0])
        assert 400 < rate < 600, rate                       # configured 500 Hz, across processes
        assert np.median(np.diff(stamps)) == pytest.approx(0.002, abs=1e-6)
        assert wrenches and wrenches[-1].header.frame_id == "wrist_3_link"   # default payload frame
        np.testing.assert_allclose(states[-1][2], Q0, atol=1e-6)

        # Refused: an unknown joint. The robot holds still.
        pub.publish(trajectory(names[:5] + ["gripper_joint"], np.array(Q0) + 0.3))
        spin_for(1.0)
        np.testing.assert_allclose(states[-1][2], Q0, atol=1e-6)

        target = np.array(Q0) + np.array([0.2, -0.1, 0.15, 0.1, -0.2, 0.3])
        pub.publish(trajectory(names, target, 1.0))
        spin_for(0.5)
        mid = states[-1][2]
        assert 0.05 < np.abs(mid - Q0).max() < 0.3          # on its way
        spin_for(1.5)
        np.testing.assert_allclose(states[-1][2], target, atol=1e-4)

        assert client.wait_for_service(timeout_sec=5.0)
        before = states[-1][3].copy()
        req = SetPayload.Request()
        req.payload.frame_id = "tool0"
        req.payload.mass = 5.0
        req.payload.com.z = 0.05
        req.payload.ixx = req.payload.iyy = req.payload.izz = 0.01
        fut = client.call_async(req)
        end = time.monotonic() + 5.0
        while not fut.done() and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        response = fut.result() if fut.done() else None
        assert response is not None and response.success, response
        spin_for(1.5)
        # 5 kg more on the flange: the shoulder lift holds tens of N·m more.
        assert abs(states[-1][3][1] - before[1]) > 20.0
    finally:
        _end(proc)
        node.destroy_node()
        rclpy.try_shutdown()


@pytest.mark.slow
def test_mock_hardware_on_simulated_time(ros_env: dict) -> None:
    """sim_time with real_time_factor 4: /clock runs ~4x the wall clock, ticking every clock_period (10 ms, not
    with each joint state), joint states are 2 ms apart on it, and a trajectory stamped to start 1 s later on the
    simulated clock moves the robot then."""
    cmd = [sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p", "urdf:=ur10",
           "-p", "profile:=clean", "-p", "sim_time:=true", "-p", "real_time_factor:=4",
           "-p", f"initial_positions:={Q0}"]
    proc = subprocess.Popen(cmd, env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None  # piped: read when the node dies
    rclpy.init()
    node = rclpy.create_node("sim_time_probe",
                             parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, True)])
    states: list[tuple[float, float, np.ndarray, float]] = []   # (wall, stamp, q, probe's clock: /clock)
    ticks: list[float] = []                                     # every /clock message's time

    node.create_subscription(Clock, "/clock", lambda m: ticks.append(m.clock.sec + 1e-9 * m.clock.nanosec),
                             QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT))

    def on_js(m):
        states.append((time.monotonic(), m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, np.array(m.position),
                       node.get_clock().now().nanoseconds * 1e-9))

    node.create_subscription(JointState, "/joint_states", on_js, 500)
    pub = node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", 10)
    # 4x of 500 Hz is 4000 messages/s on two topics: spin_once cannot keep up, the events executor can.
    executor = EventsExecutor()
    executor.add_node(node)

    def spin_for(seconds: float):
        executor.spin_until_future_complete(Future(), timeout_sec=seconds)

    try:
        deadline = time.monotonic() + 20.0
        while not (states and states[-1][3] > 0) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            spin_for(0.1)
        assert states and states[-1][3] > 0, "no /clock or joint states from mock_hardware"
        spin_for(0.3)
        states.clear()
        ticks.clear()
        spin_for(1.5)
        wall, stamps, _, clock = (np.array([s[i] for s in states]) for i in range(4))
        factor = (clock[-1] - clock[0]) / (wall[-1] - wall[0])
        # Asked 4x: never faster than asked; clearly faster than real time even when other processes take
        # the cores (measured 4.00 on a quiet machine, 2.1 with two busy loops beside the suite).
        assert 1.5 < factor < 4.4, factor
        steps = np.diff(stamps)
        assert np.median(steps) == pytest.approx(0.002, abs=1e-6)
        assert np.allclose(steps / 0.002, np.round(steps / 0.002), atol=1e-3)   # whole periods of sim time only
        # /clock ticks every 10 ms of simulated time (5 samples), not with each sample: 100 a simulated second.
        tick_steps = np.diff(ticks)
        assert np.median(tick_steps) == pytest.approx(CLOCK_PERIOD, abs=1e-6), np.median(tick_steps)
        assert np.allclose(tick_steps / CLOCK_PERIOD, np.round(tick_steps / CLOCK_PERIOD), atol=1e-3)
        # Stamped on the clock it publishes: the probe's /clock trails a stamp by up to one clock period plus
        # delivery (a few periods; at 4x a 25 ms wall-clock hiccup of the probe is 0.1 s of it, seen once in CI at
        # 0.1000000000000005), while a stamp on any other clock (the wall's, ~1.7e9 s) would be off by far more than
        # a second.
        lag = np.abs(stamps - clock)
        assert np.median(lag) <= CLOCK_PERIOD + 0.01 and lag.max() < 1.0, (np.median(lag), lag.max())

        names = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                 "wrist_3_joint"]
        target = np.array(Q0) + np.array([0.2, -0.1, 0.15, 0.1, -0.2, 0.3])
        start = node.get_clock().now().nanoseconds * 1e-9 + 1.0    # 1 s from now on the simulated clock
        msg = JointTrajectory()
        msg.header.stamp = sec_to_time(start)
        msg.joint_names = names
        point = JointTrajectoryPoint(positions=target.tolist(), velocities=[0.0] * 6,
                                     time_from_start=Duration(sec=1, nanosec=0))
        msg.points = [point]
        states.clear()
        sent = time.monotonic()
        pub.publish(msg)
        while time.monotonic() - sent < 5.0 and not (states and np.abs(states[-1][2] - target).max() < 1e-4):
            spin_for(0.05)
        t = np.array([s[1] for s in states])
        q = np.array([s[2] for s in states])
        err = np.abs(q - target).max(axis=1)
        held = t < start
        assert held.sum() > 100 and np.abs(q[held] - Q0).max() < 1e-6     # waits for its start on sim time
        arrived = np.flatnonzero(err < 1e-3)
        assert arrived.size, err.min()
        assert start + 0.9 < t[arrived[0]] < start + 1.2, t[arrived[0]] - start   # 1 s of simulated motion
        wall_arrival = states[arrived[0]][0] - sent
        assert wall_arrival < 1.2, wall_arrival                # ~2 s of sim time in ~0.5 s of wall time
    finally:
        _end(proc)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


@pytest.mark.slow
def test_mock_hardware_refuses_a_speed_factor_on_wall_time(ros_env):
    proc = subprocess.run([sys.executable, "-m", "payload_id_ros.mock_hardware", "--ros-args", "-p",
                           "real_time_factor:=4.0"], env=ros_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "real_time_factor 4 without simulated time" in proc.stderr and "sim_time:=true" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
