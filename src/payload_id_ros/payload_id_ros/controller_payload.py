"""Tell the robot controller the identified payload: UR's set_payload or Franka's set_load service.

The controller interface is chosen by the message package that is installed: ur_msgs (UR ROS 2
driver, /io_and_status_controller/set_payload: mass and CoG) before franka_msgs (franka_ros2,
/service_server/set_load: mass, CoM and inertia about the CoM). Neither is a dependency of
payload_id (each comes with its robot's driver), so both are imported only when a goal asks to apply
its result.

The rule above all others: never a confident wrong answer. An estimate whose quality is not ok
(suspect or failed, PayloadEstimate.quality) is not pushed to a controller, whose hand guiding and
collision detection would otherwise fight a phantom load, unless the goal explicitly overrides.
"""

from __future__ import annotations

from typing import Any

from rclpy.client import Client
from rclpy.node import Node

from payload_id_core.payload.estimate import PayloadEstimate, Quality
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import wait_for_future

UR_SERVICE = "/io_and_status_controller/set_payload"
FRANKA_SERVICE = "/service_server/set_load"
SERVICE_WAIT = 2.0          # s for the controller's service to be discovered
CALL_TIMEOUT = 5.0          # s for its answer


class ControllerPayload:
    """Client of the controller's payload service, on `node` (which must be spun by an executor)."""

    def __init__(self, node: Node):
        self.node = node

    def apply(self, est: PayloadEstimate, even_if_suspect: bool = False) -> tuple[bool, str]:
        """(applied, a sentence saying what happened). Never raises for an absent or failing controller.
        A suspect or failed estimate is refused unless `even_if_suspect` (the goal's override)."""
        refusal = apply_refusal(est, even_if_suspect)
        if refusal:
            self.node.get_logger().warn(refusal)
            return False, refusal
        try:
            from ur_msgs.srv import SetPayload as UrSetPayload  # noqa: PLC0415 - optional: only with the UR driver
        except ImportError:
            UrSetPayload = None
        if UrSetPayload is not None:
            return self._call(UrSetPayload, UR_SERVICE, conv.fill_ur_set_payload(UrSetPayload.Request(), est),
                              "UR set_payload", "the UR controller")
        try:
            from franka_msgs.srv import SetLoad  # noqa: PLC0415 - optional: only with franka_ros2
        except ImportError:
            msg = ("apply_to_controller: the controller interface is unavailable (neither ur_msgs nor franka_msgs "
                   "is installed); the result was not applied")
            self.node.get_logger().warn(msg)
            return False, msg
        return self._call(SetLoad, FRANKA_SERVICE, conv.fill_franka_set_load(SetLoad.Request(), est),
                          "Franka set_load", "the Franka controller")

    def _call(self, srv_type, service: str, request, what: str, controller: str) -> tuple[bool, str]:
        cli: Client[Any, Any] = self.node.create_client(srv_type, service)
        if not cli.wait_for_service(timeout_sec=SERVICE_WAIT):
            return False, f"{what} service {service} is not available"
        future = cli.call_async(request)
        response = future.result() if wait_for_future(future, CALL_TIMEOUT) else None   # None: no answer
        ok = response is not None and bool(response.success)
        return ok, f"applied to {controller}" if ok else f"{what} failed"



def apply_refusal(est: PayloadEstimate, even_if_suspect: bool = False) -> str:
    """Why `est` must not be applied to a controller (empty: it may be)."""
    if est.quality is Quality.OK or even_if_suspect:
        return ""
    return (f"not applied to the controller: the estimate is {est.quality.value.upper()} ("
            + "; ".join(est.quality_reasons) + "); set apply_even_if_suspect to apply it anyway")
