"""The payload_estimator's monitor mode, its ROS wiring: the ~/monitor service (std_srvs/SetBool) that starts and
stops it, ~/payload_event and ~/monitor_residual, and the re-estimates applied to the controller on a worker thread.

The monitoring itself is payload_id_core.monitor.live (LiveMonitor). Between goals the node hands it every batch
of live joint states; a goal suspends it, and it restarts on the goal's estimate. Switching it off keeps the
LiveMonitor (the carried payload, its σ and tare, a change being re-estimated): switched on again it goes on
from there, so a toggle neither loses a pick nor finds it twice; switches come at most one per
MIN_TOGGLE_INTERVAL_S (refused with the reason). Every re-estimate is handed to `persist`, and so is the monitor's
carried state whenever it changes materially between re-estimates (LiveStep.save, rate-limited) (the node writes it to
its result file with the tare, whether it is still unconfirmed, the last joint-state stamp watched and the covariance
the monitor decided with beyond the published one, so a restart mid-carry starts from the part carried, as sure of it
as before and with the same σ, and does not date a change made while it was down at its first sample).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool

from payload_id_core.monitor import LiveMonitor, ToggleLimit
from payload_id_core.payload import MonitorCarried
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_msgs.msg import PayloadEvent
from payload_id_ros import conversions as conv
from payload_id_ros.controller_payload import ControllerPayload
from payload_id_ros.sensor_inbox import JointStateBatch

EVENTS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


class MonitorMode:
    """`live` is None while the mode is off. `estimate()` gives the estimate a new monitor starts on;
    `publish(est)` makes a re-estimate the node's estimate; `apply` (None: off) sends re-estimates to the
    controller; `persist(est, tare, unloaded, unconfirmed, watched_until, carried)` saves a re-estimate with the tare,
    the unloaded robot's friction learnt, why the payload is not confirmed yet, the last joint-state stamp the monitor
    had seen and its covariance beyond the published one (LiveMonitor.carried) (None: not saved); `clock` (monotonic s)
    times the switches."""

    def __init__(self, node: Node, new_monitor: Callable[[], LiveMonitor], refusal: Callable[[], str],
                 estimate: Callable[[], PayloadEstimate | None], publish: Callable[[PayloadEstimate], None],
                 apply: ControllerPayload | None, busy: Callable[[], bool], callback_group: CallbackGroup,
                 persist: Callable[[PayloadEstimate, tuple[float, float], dict | None, str, float,
                                    MonitorCarried | None], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node, self._new_monitor, self._refusal = node, new_monitor, refusal
        self._estimate, self._publish, self._controller, self._busy = estimate, publish, apply, busy
        self._persist, self._clock = persist, clock
        self.live: LiveMonitor | None = None
        self._kept: LiveMonitor | None = None       # switched off: what it held, for when it is switched on
        self._toggles = ToggleLimit()
        self.pub_event = node.create_publisher(PayloadEvent, "~/payload_event", EVENTS)
        # A drain late on a loaded machine brings several 20 ms residuals at once (MonitorUpdate.residuals).
        self.pub_residual = node.create_publisher(JointState, "~/monitor_residual", 50)
        self._lock = threading.Lock()
        self._apply_pending: PayloadEstimate | None = None     # the newest re-estimate, for the apply thread
        self._apply_thread: threading.Thread | None = None
        self._not_applied_said = ""             # the undecided change last said to keep the controller as it was
        node.create_service(SetBool, "~/monitor", self._on_request, callback_group=callback_group)

    @property
    def on(self) -> bool:
        return self.live is not None

    def _on_request(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.success, response.message = self.switch(bool(request.data))
        return response

    def switch(self, on: bool) -> tuple[bool, str]:
        """(done, what happened or why not). A switch to the state it is in is no switch; switching off comes at
        most once per MIN_TOGGLE_INTERVAL_S (ToggleLimit), the rest refused with the reason."""
        if on == self.on:
            return True, "monitor already " + ("running" if on else "stopped")
        if not on:
            why = self._toggles.refusal(self._clock())
            if why:
                return False, why
            live, self.live = self.live, None
            assert live is not None
            live.suspend()
            self._kept = live
            return True, "monitor stopped (its carried payload is kept for when it is started again)"
        refusal = self._refusal()
        if refusal:
            return False, refusal
        # Switching on is never refused for the rate: it resumes what was kept. Only switching off is limited, so
        # a client toggling at 100 Hz leaves the monitor on nearly all the time, not off half of it.
        kept, self._kept = self._kept, None
        # Built on the next joint states, on the last estimate; or the one switched off, as it was.
        self.live = kept if kept is not None else self._new_monitor()
        what = "monitor resumed on the payload it carried" if kept is not None else "monitor started"
        self._node.get_logger().info(what)
        return True, what

    def restart(self) -> None:
        """After a goal: the next joint states start a new monitor on the goal's estimate (one switched off as
        well: the goal's estimate supersedes what it held)."""
        for live in (self.live, self._kept):
            if live is not None:
                live.restart()

    def feed(self, js: JointStateBatch) -> None:
        live = self.live
        if live is None or self._busy():
            return
        log = self._node.get_logger()
        if live.monitor is None:
            # A monitor starts (switched on, or after a goal): its floor is said, and ~/payload's mass σ raised to
            # half of it, since from now on a change below it cannot be excluded (the mass is left as it was).
            last = self._estimate()
            floor, joint = live.floor(js.q[-1], last)
            log.info(f"monitor floor: the smallest mass change its alarm sees here is {floor:.3f} kg (joint "
                     f"{live.model.joint_names[joint]}); ~/payload's mass σ is kept at least half of it")
            if live.saved_refused:
                log.warn(live.saved_refused)
                live.saved_refused = ""
            floored = None if last is None else live.floored(last, js.q[-1])
            if floored is not None and floored is not last:
                self._publish(floored)
        step = live.feed(js.t, js.q, js.qd, js.effort, self._estimate(), getattr(js, "second_source", ""))
        update = step.update
        if update.paused:
            log.warn(update.paused)
        for resumed in step.resumed:
            log.info(resumed)
        for event in update.events:
            self.pub_event.publish(conv.payload_event_msg(event, live.frame))
            # when_text: "at t", or "between a and b s (its time not located)", never the span's start as a date
            log.info(f"payload event: {event.kind.value} {event.when_text}, {event.mass_change_text} "
                     f"({event.reason})")
        if update.residuals and self.pub_residual.get_subscription_count() > 0:
            for t, r in update.residuals:
                self.pub_residual.publish(conv.joint_state_msg(conv.sec_to_time(t), live.model.joint_names,
                                                               np.zeros(0), np.zeros(0), r))
        est = step.estimate
        if est is not None:
            self._publish(est)
            log.info(f"monitor: payload re-estimated from task motion: "
                     f"{conv.mass_text(est.mass, float(np.sqrt(est.covariance[0, 0])))}"
                     + (f", {est.undetermined_com_text()}" if est.undetermined_com_text() else ""))
        saved = self._estimate()
        if step.save and self._persist is not None and saved is not None:
            # Every publication, and the carried state whenever it changed materially between them (rate-limited,
            # carried_saves): with the estimate ~/payload says now, which a restarted node publishes first.
            self._persist(saved, live.tare, live.unloaded_friction, live.unconfirmed, float(js.t[-1]), live.carried)
        if est is not None:
            undecided = update.estimate.undecided if update.estimate is not None else ""
            if update.estimate is not None and update.estimate.unwatched:
                # Published for the pause (said above): nothing new is known of the payload, the controller keeps
                # what it holds.
                pass
            elif self._controller is not None and not undecided:
                # An undecided change is published for its σ (the payload before it, or the re-estimate held, ± the
                # change): nothing new to give the controller, which keeps what it holds until it is decided.
                self._apply_in_background(est)
            elif self._controller is not None:
                self._say_not_applied(est, undecided)

    def _say_not_applied(self, est: PayloadEstimate, undecided: str) -> None:
        """An undecided publication is not given to the controller: said once per undecided change, with what it keeps
        (h143: on the real UR10e a pick named +2.918 kg came with an undecided change, as did every re-estimate after
        it, and the controller was silently left without the part for the 54 s it was carried)."""
        if undecided == self._not_applied_said:
            return
        self._not_applied_said = undecided
        self._node.get_logger().warn(
            f"monitor: the controller was not given the re-estimate "
            f"({conv.mass_text(est.mass, float(np.sqrt(est.covariance[0, 0])))}) and keeps whatever it was given "
            f"before: {undecided}")

    def check_input(self, now: float, last_stamp: float | None) -> None:
        """Joint states that stop arriving feed nothing, so the monitor cannot notice: the node says so."""
        live = self.live
        if live is None or self._busy() or last_stamp is None:
            return
        warning = live.silence(now, last_stamp)
        if warning:
            self._node.get_logger().warn(warning)

    def check_clock(self, stalled_s: float, last_stamp: float | None) -> None:
        """On simulated time: a clock stopped `stalled_s` wall seconds ago stops the joint states and the node's own
        timers (check_input's with them), so a watch on the wall clock says it instead."""
        live = self.live
        if live is None or self._busy() or last_stamp is None:
            return
        warning = live.clock_stopped(stalled_s)
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
            outcome = self._controller.apply(est, empty_ok=True)
            if not outcome.applied:
                # The rule of the identify goal: the refusal is said with its reason, and so is what the
                # controller is left holding (the payload before this change, which the monitor no longer
                # stands behind: after a place, a part on an empty flange).
                self._node.get_logger().warn(
                    f"monitor: the controller was not given the re-estimate "
                    f"({conv.mass_text(est.mass, float(np.sqrt(est.covariance[0, 0])))}) and keeps whatever it "
                    f"held before: {outcome.message}; apply the payload by hand or run an identify goal")
