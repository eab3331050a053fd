"""A stand-in for the robot controller's payload service, recording every request it gets.

  fake_controller.py ur|franka accept|refuse|silent OUT.jsonl [SERVICE]

ur: ur_msgs/srv/SetPayload on /io_and_status_controller/set_payload; franka: franka_msgs/srv/SetLoad on
/service_server/set_load (the test-only packages of test/interfaces, on PYTHONPATH). Each request is
appended to OUT.jsonl as one JSON line ({"mass", "com", "inertia" 3x3, ...}) before it is answered:
accept (success), refuse (success false, a Franka error text) or silent (never answers: a controller that
hangs). Prints "fake controller ready" once the service exists.
"""
import json
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

REFUSAL = "fake controller: payload refused on purpose"


def ur_request(req) -> dict:
    p = req.payload
    return {"mass": p.m, "com": [p.com.x, p.com.y, p.com.z],
            "inertia": [[p.ixx, p.ixy, p.ixz], [p.ixy, p.iyy, p.iyz], [p.ixz, p.iyz, p.izz]],
            "transition_time": req.transition_time.sec + 1e-9 * req.transition_time.nanosec}


def franka_request(req) -> dict:
    flat = list(req.load_inertia)       # column-major 3x3
    return {"mass": req.mass, "com": list(req.center_of_mass),
            "inertia": [[flat[row + 3 * col] for col in range(3)] for row in range(3)]}


def main() -> None:
    kind, behaviour, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if kind == "ur":
        from ur_msgs.srv import SetPayload as srv_type  # noqa: PLC0415 - the test-only package, on PYTHONPATH
        service, describe = "/io_and_status_controller/set_payload", ur_request
    else:
        from franka_msgs.srv import SetLoad as srv_type  # noqa: PLC0415 - the test-only package, on PYTHONPATH
        service, describe = "/service_server/set_load", franka_request
    service = sys.argv[4] if len(sys.argv) > 4 else service
    rclpy.init()
    node = Node("fake_controller")

    def on_request(req, resp):
        with open(out, "a") as f:
            f.write(json.dumps(describe(req)) + "\n")
        if behaviour == "silent":
            while True:              # never answers; SIGINT ends it
                time.sleep(0.1)
        resp.success = behaviour == "accept"
        if hasattr(resp, "error") and not resp.success:
            resp.error = REFUSAL
        return resp

    node.create_service(srv_type, service, on_request)
    print("fake controller ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
