"""Listens to the payload estimator's monitor: one JSON line per ~/payload_event and per ~/payload (its method, mass,
σ, CoM, quality and the priors it says were given, probe.prior_dict), for argv[1] seconds after "listener ready"
(printed once both publishers are matched). With argv[2] = on/off it first calls ~/monitor (std_srvs/SetBool) and
prints the answer."""
import json
import math
import sys
import time
from typing import Any

import rclpy
from probe import prior_dict  # noqa: E402 - sibling script in test/ros_cell
from rclpy.client import Client
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import SetBool

from payload_id_msgs.msg import PayloadEstimate, PayloadEvent


def _num(x: float):
    return None if math.isnan(x) else x


def _payload(m: PayloadEstimate) -> dict:
    p = m.payload
    return {"mass": p.mass, "mass_std": _num(p.mass_std), "com": [p.com.x, p.com.y, p.com.z],
            "com_std": [_num(v) for v in (p.com_std.x, p.com_std.y, p.com_std.z)], "com_identified": p.com_identified,
            "quality": m.quality,
            **prior_dict(m)}


def main() -> None:
    seconds = float(sys.argv[1])
    rclpy.init()
    node = Node("event_listener")
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
    events = node.create_subscription(PayloadEvent, "/payload_estimator/payload_event", lambda m: print(json.dumps(
        {"event": m.kind, "delta_mass": _num(m.delta_mass), "alarm_delay": m.alarm_delay, "reason": m.reason,
         "t_change_located": m.t_change_located,
         "stamp": m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec}), flush=True),
        QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
    payload = node.create_subscription(PayloadEstimate, "/payload_estimator/payload", lambda m: print(json.dumps(
        {"payload": m.method, **_payload(m)}), flush=True), latched)
    deadline = time.monotonic() + 30.0
    while (events.get_publisher_count() == 0 or payload.get_publisher_count() == 0) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    if len(sys.argv) > 2:
        client: Client[Any, Any] = node.create_client(SetBool, "/payload_estimator/monitor")
        client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(SetBool.Request(data=sys.argv[2] == "on"))
        rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
        r = future.result()
        if r is None:
            print(json.dumps({"monitor_success": None, "monitor_message": "no answer"}), flush=True)
        else:
            print(json.dumps({"monitor_success": r.success, "monitor_message": r.message}), flush=True)
    print("listener ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
