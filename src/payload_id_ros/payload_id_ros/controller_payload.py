"""Tell the robot controller the identified payload: UR's set_payload or Franka's set_load service.

Interfaces (checked against the drivers' sources; test/interfaces/README.md names the commits):
  UR     ur_msgs/srv/SetPayload on /io_and_status_controller/set_payload: `geometry_msgs/Inertia payload`
         (m, com in the tool flange frame tool0, inertia about the CoM) + `transition_time` (ur_controllers
         >= 7.0.0); older ur_msgs carry `mass` + `center_of_gravity` only (conversions.fill_ur_set_payload).
  Franka franka_msgs/srv/SetLoad on /service_server/set_load: mass, center_of_mass in the flange frame
         (link 8), load_inertia about the CoM (3x3, column-major); the answer carries an error text.
Neither message package is a dependency of payload_id (each comes with its robot's driver): they are
imported when a goal first asks to apply its result, and their absence skips the apply step with the reason.

The payload is identified in the payload frame; the controller takes it in `controller_frame` (the
flange), so mass, CoM and inertia are moved there first (the frames must ride on one body).

The rule above all others: never a confident wrong answer. Nothing reaches the controller, whose hand
guiding and collision detection would otherwise fight a phantom load, when the estimate's quality is
not ok (unless the goal overrides), when its mass is not positive, above the robot's rated payload
(`rated_payload_kg`, unset: nothing is applied) or its CoM not identified, or when it is not a physical
body. Every outcome is one ApplyStatus, tagged "[controller.…]" at the end of the apply sentence of the action
result's message (apply_status reads it back); applied_to_controller is true only for APPLIED.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

import numpy as np
from rclpy.client import Client
from rclpy.node import Node

from payload_id_core.dynamics import RobotModel, is_physically_consistent, to_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft import payload_transform, resolve_sensor_frame
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import wait_for_future

UR_SERVICE = "/io_and_status_controller/set_payload"
FRANKA_SERVICE = "/service_server/set_load"


class ControllerKind(str, Enum):
    """Which payload service the controller offers (parameter `controller`)."""

    AUTO = "auto"        # whichever message package is installed, ur_msgs first
    UR = "ur"            # ur_msgs/srv/SetPayload
    FRANKA = "franka"    # franka_msgs/srv/SetLoad


class ApplyStatus(str, Enum):
    """How the apply step ended. The value leads the apply sentence of the Identify result's message."""

    APPLIED = "controller.applied"                  # the controller accepted the payload
    REFUSED_QUALITY = "controller.refused_quality"  # suspect / failed estimate, no override: not sent
    REFUSED_RANGE = "controller.refused_range"      # mass <= 0, above the rated payload, not identified, unphysical
    SKIPPED = "controller.skipped"                  # no message package or no such service: nothing sent
    CONTROLLER_REFUSED = "controller.rejected"      # the controller answered success = false
    TIMEOUT = "controller.timeout"                  # the controller did not answer in time


class ApplyOutcome(NamedTuple):
    """(applied, message): the message is a sentence for people ending in "[<ApplyStatus value>]"."""

    applied: bool
    message: str

    @classmethod
    def of(cls, status: ApplyStatus, text: str) -> ApplyOutcome:
        return cls(status is ApplyStatus.APPLIED, f"{text} [{status.value}]")

    @property
    def status(self) -> ApplyStatus | None:
        return apply_status(self.message)


def apply_status(message: str) -> ApplyStatus | None:
    """The ApplyStatus a result message carries (None: the apply step did not run)."""
    found = _STATUS_TAG.search(message)
    return ApplyStatus(found.group(1)) if found else None


_STATUS_TAG = re.compile(r"\[(controller\.[a-z_]+)\]")


@dataclass(frozen=True)
class ControllerSettings:
    """The estimator's controller parameters (payload_estimator.EstimatorParameters)."""

    kind: ControllerKind = ControllerKind.AUTO
    service: str = ""                    # '' = the interface's standard service
    frame: str = ""                      # '' = the payload frame
    rated_payload_kg: float = 0.0        # 0: not configured, nothing is applied
    wait: float = 2.0                    # s for the service to be discovered
    timeout: float = 5.0                 # s for its answer


@dataclass(frozen=True)
class PayloadForController:
    """The payload as the controller takes it: mass (kg), CoM (m) and inertia about the CoM (kg m^2), in `frame`."""

    frame: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray


class ControllerPayload:
    """Client of the controller's payload service, on `node` (which must be spun by an executor)."""

    def __init__(self, node: Node, model: RobotModel | None = None, payload_frame: str = "",
                 settings: ControllerSettings | None = None):
        self.node = node
        self.model = model
        self.settings = settings or ControllerSettings()
        if model is not None and payload_frame:
            # A controller frame the URDF lacks, or one on another body, stops the node at start.
            controller_frame_transform(model, payload_frame, self.settings.frame or payload_frame)

    def apply(self, est: PayloadEstimate, even_if_suspect: bool = False, empty_ok: bool = False) -> ApplyOutcome:
        """What happened; never raises for an absent, refusing or silent controller. A suspect or failed
        estimate is refused unless `even_if_suspect` (the goal's override); out-of-range values always are.
        `empty_ok` (the payload monitor's, after a part was put down): an estimate of exactly nothing (φ = 0)
        applies the empty payload, mass 0, which the controllers take as "no payload"."""
        if empty_ok and not np.any(np.asarray(est.phi, dtype=float)) and (est.quality is Quality.OK
                                                                            or even_if_suspect):
            payload = PayloadForController(self.settings.frame or est.frame, 0.0, np.zeros(3), np.zeros((3, 3)))
        else:
            refusal = apply_refusal(est, even_if_suspect, self.settings.rated_payload_kg)
            if refusal:
                return self._log(ApplyOutcome(False, refusal))
            try:
                payload = self._in_controller_frame(est)
            except PayloadIdError as err:
                return self._log(ApplyOutcome.of(ApplyStatus.REFUSED_RANGE, f"not applied to the controller: {err}"))
        srv_type, kind = self._service_type()
        if srv_type is None:
            return self._log(ApplyOutcome.of(ApplyStatus.SKIPPED, kind))
        if kind is ControllerKind.UR:
            return self._call(srv_type, self.settings.service or UR_SERVICE,
                              conv.fill_ur_set_payload(srv_type.Request(), payload), "UR set_payload")
        return self._call(srv_type, self.settings.service or FRANKA_SERVICE,
                          conv.fill_franka_set_load(srv_type.Request(), payload), "Franka set_load")

    def _in_controller_frame(self, est: PayloadEstimate) -> PayloadForController:
        frame = self.settings.frame or est.frame
        phi = np.asarray(est.phi, dtype=float)
        if frame != est.frame:
            if self.model is None:
                raise PayloadIdError(f"no robot model to move the payload from {est.frame} to {frame}",
                                     "report this")
            phi = controller_frame_transform(self.model, est.frame, frame) @ phi
        mass, com, inertia = to_mass_com_inertia(phi)
        return PayloadForController(frame, mass, com, inertia)

    def _service_type(self) -> tuple[Any, Any]:
        """(the service class, its ControllerKind) or (None, why the apply step is skipped)."""
        kind = self.settings.kind
        if kind in (ControllerKind.UR, ControllerKind.AUTO):
            try:
                from ur_msgs.srv import SetPayload  # noqa: PLC0415 - optional: only with the UR driver
            except ImportError:
                SetPayload = None
            if SetPayload is not None:
                return SetPayload, ControllerKind.UR
        if kind in (ControllerKind.FRANKA, ControllerKind.AUTO):
            try:
                from franka_msgs.srv import SetLoad  # noqa: PLC0415 - optional: only with franka_ros2
            except ImportError:
                SetLoad = None
            if SetLoad is not None:
                return SetLoad, ControllerKind.FRANKA
        missing = {ControllerKind.UR: "ur_msgs, the UR driver's messages, is not installed",
                   ControllerKind.FRANKA: "franka_msgs, franka_ros2's messages, is not installed",
                   ControllerKind.AUTO: "neither ur_msgs nor franka_msgs is installed"}[kind]
        return None, (f"apply step skipped: {missing}; source the robot driver's workspace before starting "
                      "the estimator")

    def _call(self, srv_type, service: str, request, what: str) -> ApplyOutcome:
        cli: Client[Any, Any] = self.node.create_client(srv_type, service)
        try:
            if not cli.wait_for_service(timeout_sec=self.settings.wait):
                return self._log(ApplyOutcome.of(
                    ApplyStatus.SKIPPED, f"apply step skipped: the {what} service {service} does not exist "
                    f"(not found within {self.settings.wait:g} s); start the robot driver's controller (or set "
                    "controller_service)"))
            future = cli.call_async(request)
            if not wait_for_future(future, self.settings.timeout):
                future.cancel()
                return self._log(ApplyOutcome.of(
                    ApplyStatus.TIMEOUT, f"not applied: the controller did not answer {what} ({service}) within "
                    f"{self.settings.timeout:g} s; check the controller and apply the estimate again"))
            response = future.result()
        finally:
            self.node.destroy_client(cli)
        if response is None or not bool(response.success):
            reason = str(getattr(response, "error", "") or "no reason given")
            return self._log(ApplyOutcome.of(ApplyStatus.CONTROLLER_REFUSED,
                                          f"not applied: the controller refused {what} ({service}): {reason}"))
        return self._log(ApplyOutcome.of(ApplyStatus.APPLIED, f"applied to the controller by {what} ({service})"))

    def _log(self, outcome: ApplyOutcome) -> ApplyOutcome:
        log = self.node.get_logger()
        if outcome.applied:
            log.info(outcome.message)
        else:
            log.warn(outcome.message)
        return outcome


def controller_frame_transform(model: RobotModel, payload_frame: str, controller_frame: str) -> np.ndarray:
    """10x10 X with φ_controller = X φ_payload; both frames must ride on the same body."""
    if controller_frame == payload_frame:
        return np.eye(10)
    try:
        target = resolve_sensor_frame(model, controller_frame)
    except PayloadIdError as err:
        raise PayloadIdError(f"parameter controller_frame '{controller_frame}' is not in the URDF "
                             f"{model.urdf_path.name}", err.fix) from err
    joint, _ = model.frame_in_joint(payload_frame)
    if joint != target.joint:
        raise PayloadIdError(
            f"controller_frame '{controller_frame}' is not rigidly attached to the payload frame '{payload_frame}'",
            "give the controller's flange frame (UR: tool0; Franka: panda_link8 / fr3_link8)")
    return payload_transform(model, target, payload_frame)


def apply_refusal(est: PayloadEstimate, even_if_suspect: bool = False,
                  rated_payload_kg: float | None = None) -> str:
    """Why `est` must not be applied to a controller, with its ApplyStatus tag (empty: it may be).
    `rated_payload_kg` None: no upper check (the node always gives its parameter; 0 there means not
    configured, which refuses)."""
    if est.quality is not Quality.OK and not even_if_suspect:
        return ApplyOutcome.of(ApplyStatus.REFUSED_QUALITY,
                               f"not applied to the controller: the estimate is {est.quality.value.upper()} ("
                               + "; ".join(est.quality_reasons) + "); set apply_even_if_suspect to apply it anyway"
                               ).message
    known = est.readable_identifiable()
    mass = est.mass
    why = ""
    if not (known[0] and all(known[1:4])):
        why = "its mass or centre of mass was not identified"
    elif not (math.isfinite(mass) and np.all(np.isfinite(est.phi))):
        why = "it holds NaN or infinite values"
    elif mass <= 0.0:
        why = f"its mass {mass:.4f} kg is not positive"
    elif rated_payload_kg is not None and rated_payload_kg <= 0.0:
        why = "the robot's rated payload is not configured (parameter rated_payload_kg = 0)"
    elif rated_payload_kg is not None and mass > rated_payload_kg:
        why = f"its mass {mass:.4f} kg is above the robot's rated payload {rated_payload_kg:g} kg"
    elif not is_physically_consistent(np.asarray(est.phi, dtype=float)):
        why = "its mass, centre of mass and inertia are not those of a physical body"
    if why:
        return ApplyOutcome.of(ApplyStatus.REFUSED_RANGE, f"not applied to the controller: {why}").message
    return ""
