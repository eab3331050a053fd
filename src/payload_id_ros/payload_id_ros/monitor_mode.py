"""The payload_estimator's monitor mode, its ROS wiring: the ~/monitor service (std_srvs/SetBool) that starts and
stops it, ~/payload_event and ~/monitor_residual, and the re-estimates applied to the controller on a worker thread.

The monitoring itself is payload_id_core.monitor.live (LiveMonitor). Between goals the node hands it every batch
of live joint states; a goal suspends it, and it restarts on the goal's estimate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool

from payload_id_core.monitor import LiveMonitor
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_msgs.msg import PayloadEvent
from payload_id_ros import conversions as conv
from payload_id_ros.controller_payload import ControllerPayload
from payload_id_ros.sensor_inbox import JointStateBatch

EVENTS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


class MonitorMode:
    """`live` is None while the mode is off. `estimate()` gives the estimate a new monitor starts on;
    `publish(est)` makes a re-estimate the node's estimate; `apply` (None: off) sends re-estimates to the
    controller."""

    def __init__(self, node: Node, new_monitor: Callable[[], LiveMonitor], refusal: Callable[[], str],
                 estimate: Callable[[], PayloadEstimate | None], publish: Callable[[PayloadEstimate], None],
                 apply: ControllerPayload | None, busy: Callable[[], bool], callback_group: CallbackGroup) -> None:
        self._node, self._new_monitor, self._refusal = node, new_monitor, refusal
        self._estimate, self._publish, self._controller, self._busy = estimate, publish, apply, busy
        self.live: LiveMonitor | None = None
        self.pub_event = node.create_publisher(PayloadEvent, "~/payload_event", EVENTS)
        self.pub_residual = node.create_publisher(JointState, "~/monitor_residual", 10)
        self._lock = threading.Lock()
        self._apply_pending: PayloadEstimate | None = None     # the newest re-estimate, for the apply thread
        self._apply_thread: threading.Thread | None = None
        node.create_service(SetBool, "~/monitor", self._on_request, callback_group=callback_group)

    @property
    def on(self) -> bool:
        return self.live is not None

    def _on_request(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.success, response.message = self.switch(bool(request.data))
        return response

    def switch(self, on: bool) -> tuple[bool, str]:
        """(done, what happened or why not)."""
        if not on:
            self.live = None
            return True, "monitor stopped"
        refusal = self._refusal()
        if refusal:
            return False, refusal
        self.live = self._new_monitor()          # built on the next joint states, on the last estimate
        self._node.get_logger().info("monitor started")
        return True, "monitor started"

    def restart(self) -> None:
        """After a goal: the next joint states start a new monitor on the goal's estimate."""
        live = self.live
        if live is not None:
            live.restart()

    def feed(self, js: JointStateBatch) -> None:
        live = self.live
        if live is None or self._busy():
            return
        log = self._node.get_logger()
        step = live.feed(js.t, js.q, js.qd, js.effort, self._estimate())
        update = step.update
        if update.paused:
            log.warn(update.paused)
        for event in update.events:
            self.pub_event.publish(conv.payload_event_msg(event, live.frame))
            log.info(f"payload event: {event.kind.value} at {event.t_change:.3f} s, {event.mass_change_text} "
                     f"({event.reason})")
        if update.residual is not None and self.pub_residual.get_subscription_count() > 0:
            t, r = update.residual
            self.pub_residual.publish(conv.joint_state_msg(conv.sec_to_time(t), live.model.joint_names,
                                                           np.zeros(0), np.zeros(0), r))
        est = step.estimate
        if est is not None:
            self._publish(est)
            log.info(f"monitor: payload re-estimated from task motion: "
                     f"{conv.mass_text(est.mass, float(np.sqrt(est.covariance[0, 0])))}")
            if self._controller is not None:
                self._apply_in_background(est)

    def check_input(self, now: float, last_stamp: float | None) -> None:
        """Joint states that stop arriving feed nothing, so the monitor cannot notice: the node says so."""
        live = self.live
        if live is None or self._busy() or last_stamp is None:
            return
        warning = live.silence(now, last_stamp)
        if warning:
            self._node.get_logger().warn(warning)

    def _apply_in_background(self, est: PayloadEstimate) -> None:
        """The service call blocks until the controller answers, and this executor is single-threaded (the
        answer would never be processed): a worker thread applies the newest re-estimate, one call at a time."""
        with self._lock:
            self._apply_pending = est
            if self._apply_thread is not None:
                return              # the running worker takes the newest when its call ends
            self._apply_thread = threading.Thread(target=self._apply_worker, name="monitor_apply", daemon=True)
            self._apply_thread.start()

    def _apply_worker(self) -> None:
        assert self._controller is not None
        while True:
            with self._lock:
                est, self._apply_pending = self._apply_pending, None
                if est is None or self._busy():
                    # Nothing newer; or a goal runs, whose own result supersedes it. Cleared under the lock,
                    # so a re-estimate queued from now on starts a new worker.
                    self._apply_thread = None
                    return
            self._controller.apply(est, empty_ok=True)
