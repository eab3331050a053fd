"""payload_estimator node: identifies the payload on the flange while the arm plays an excitation.

Subscribes /joint_states (matched by name), the commanded trajectory topic and /ft_sensor/wrench.
Action ~/identify (payload_id_msgs/action/Identify, identify_action.py): asks the excitation player (its
~/excite action, player_client.py) to play the trajectory, runs the online method on the samples
(payload_id_core.payload.session), streams feedback a few times a second, stops early when converged if the goal
asks, and returns the result. Cancel stops the motion (the player's decelerating stop) and returns the partial
estimate; a second goal while one runs is rejected; bad input aborts with the reason and stops the motion.

Monitor mode (monitor_mode.py; parameter `monitor`, service ~/monitor std_srvs/SetBool to start and stop it):
between goals, the live joint states feed payload_id_core.monitor.PayloadMonitor on the robot identification and
the last estimate; its events go out on ~/payload_event (payload_id_msgs/PayloadEvent), its residual on
~/monitor_residual (sensor_msgs/JointState, effort = measured minus modelled joint torque, N m, once per 20 ms
batch), and a re-estimate from the task motion replaces ~/payload once its mass and CoM are determined (persisted
with the monitor's tare, so a restart mid-carry goes on from the part carried). `monitor_apply_to_controller`
applies those re-estimates to the controller on a worker thread, under the identify action's refusals; a part put
down (nothing carried, to 3σ) applies the empty payload. A goal suspends it; it restarts on the goal's estimate.
Switched off and on it goes on from what it held (toggles rate-limited).

Publishes ~/payload (transient-local: late subscribers get the last estimate), ~/markers (rviz),
~/wrench_compensated (sensor wrench minus offsets, payload gravity and inertia, every sensor sample,
computed in batches and only while someone subscribes: payload_id_core.ft.stream). Every result (a cancelled
goal's partial estimate too, flagged `partial`) is written to `result_path` with the F/T compensation parameters
(ft.yaml format) and read back at start, so compensation survives a restart (payload_id_core.payload.result_file).

CPU: the 500 Hz joint states and wrenches are not executor callbacks; a 50 Hz timer drains them
in batches (sensor_inbox), 4 Hz while nothing takes every sample (IDLE_DRAIN_PERIOD), and the goal thread feeds
the online method block-wise (update_batch).
Joint states count as stale by the time their last one was taken; the goal thread drains the queue
itself before it says so, and a goal waits for a live sample first (joint_state_watch.py).
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType, ROSClock
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from payload_id_core.dynamics import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.excitation import load_trajectory
from payload_id_core.ft import CompensationStream, FtParameters
from payload_id_core.io import OutputNotWritable, check_output_file
from payload_id_core.monitor import LiveMonitor
from payload_id_core.payload import (
    GoalOutcome,
    IdentificationRun,
    KnownMassLimit,
    MonitorCarried,
    ResultUnreadable,
    goal_options,
    goal_prior,
    read_result,
    write_result,
)
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import DriveGains, RobotIdentification, resolve_drive_gains
from payload_id_core.signals import EffortUnit, WindowCoverage, check_drive_gains
from payload_id_msgs.action import Identify
from payload_id_msgs.msg import PayloadEstimate as PayloadEstimateMsg
from payload_id_ros import conversions as conv
from payload_id_ros.action_thread import threaded
from payload_id_ros.controller_payload import ControllerPayload
from payload_id_ros.estimator_parameters import EstimatorParameters
from payload_id_ros.identify_action import IdentifyAction
from payload_id_ros.joint_state_watch import JointStateWatch
from payload_id_ros.monitor_mode import MonitorMode
from payload_id_ros.node_main import run_node
from payload_id_ros.parameters import declare_parameters
from payload_id_ros.player_client import ExcitationPlayerClient
from payload_id_ros.sensor_inbox import JointStateBatch, SensorInbox
from payload_id_ros.sim_clock import ClockStall

__all__ = ["EstimatorParameters", "PayloadEstimator", "main"]   # the parameter table: estimator_parameters.py

DRAIN_PERIOD = 0.02          # s: sensor queues drained (and the wrench compensated) at 50 Hz
# s: ... at 4 Hz while nothing takes every sample (no goal, monitor off, no compensated wrench asked for). Each drain
# woke the executor and rebuilt its wait set, and with its fixed work (the batch's arrays, the publishers' watch, the
# clock) that was about half of the idle node's 10 % of a core (py-spy, `make demo`'s cell). 125 joint states wait
# in the 1000-deep queue (sensor_inbox.INBOX_QOS), the last one taken is at most this old (a goal's start drains
# first), and a goal, the monitor or a subscriber to the compensated wrench puts the 50 Hz back at once or at the
# next drain.
IDLE_DRAIN_PERIOD = 0.25
CLOCK_WATCH_PERIOD = 0.1     # s (steady): how often simulated time is checked for having stopped
# The compensated wrench leaves in bursts of one drain period (10 samples at 500 Hz): a history of the
# sensor-data depth (5) would drop half of each. Subscribers that want every sample need a depth of
# >= 2 bursts too (rviz, which draws only the newest, does not).
WRENCH_OUT_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


class PayloadEstimator(Node):
    def __init__(self) -> None:
        super().__init__("payload_estimator")
        self.params = declare_parameters(self, EstimatorParameters)
        params = self.params
        self.model = RobotModel.from_urdf(params.urdf)
        # Resolved and checked once (a frame the URDF lacks fails at start, with the list); goals take it as given.
        self.frame = self.model.payload_frame(params.payload_frame)
        self.effort_unit = EffortUnit.parse(params.effort_unit)
        override = params.effort_scale_override
        # Zero, negative, NaN or a wrong count stop the node at start, naming the parameter.
        self.effort_scale = None if override is None else check_drive_gains(override, self.model.n,
                                                                            "parameter effort_scale")
        # What is known of the payload: bad values stop the node at start, naming the parameter.
        self._mass_limit = KnownMassLimit(self.model, params.rated_payload_kg)
        self.prior = goal_prior(params.bounding_box_given or (), params.known_mass, params.known_mass_std,
                                rated_payload=self._mass_limit(params.known_mass))
        self.robot: RobotIdentification | None = None
        self.robot_error: str | None = None
        self.gains: np.ndarray | None = None       # torque = effort × gains (None: the efforts are torques)
        self.drive_gains: DriveGains | None = None  # resolved once at start; every goal takes them as given
        self._load_robot()

        self.estimate: PayloadEstimate | None = None
        self._saved_tare: tuple[float, float] | None = None    # a saved monitor re-estimate's, for the monitor
        self._saved_unloaded: dict | None = None    # and the unloaded robot's friction saved with it
        self._saved_unconfirmed = ""                # and why its payload was not confirmed yet ('' : it was)
        self._saved_watched_until: float | None = None   # and the last joint-state stamp its monitor had seen
        self._saved_carried: MonitorCarried | None = None   # and its covariance beyond the published one
        self.compensation = CompensationStream(self.model, params.sensor_frame, params.use_wrench_inertia)
        sensors = MutuallyExclusiveCallbackGroup()
        # Samples stamped further ahead than stale_timeout are a clock jump: dropped (a lag is judged per goal).
        self.inbox = SensorInbox(self, self.model.joint_names, params.joint_states_topic, params.wrench_topic,
                                 future_tolerance=params.stale_timeout, publisher_silence_s=params.publisher_silence_s)
        self.joint_states = JointStateWatch(self.inbox, self.now, params.stale_timeout, self._on_joint_states)
        self.create_subscription(JointTrajectory, params.trajectory_topic, self._on_trajectory, 10,
                                 callback_group=sensors)
        self._drain_timer = self.create_timer(DRAIN_PERIOD, self._drain, callback_group=sensors)
        self._drain_period = DRAIN_PERIOD
        self._publishing_wrench = False
        # The drain above runs on the node's time: on simulated time it stops with /clock, so a clock whose owner died
        # is watched on the steady clock.
        self._clock_stall = ClockStall(self.now, self._on_simulated_time)
        self.create_timer(CLOCK_WATCH_PERIOD, self._watch_clock, callback_group=sensors,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.pub_payload = self.create_publisher(PayloadEstimateMsg, "~/payload", LATCHED)
        self.pub_markers = self.create_publisher(MarkerArray, "~/markers", LATCHED)
        self.pub_wrench = self.create_publisher(WrenchStamped, "~/wrench_compensated", WRENCH_OUT_QOS)
        self.controller = ControllerPayload(self, self.model, self.frame, params.controller_settings)
        self.monitor = MonitorMode(self, self._new_live_monitor, self._monitor_refusal, lambda: self.estimate,
                                   self.set_estimate, self.controller if params.monitor_apply_to_controller else None,
                                   lambda: self.identify.busy, sensors, persist=self._save_monitor_estimate)
        actions = ReentrantCallbackGroup()
        player = ExcitationPlayerClient(self, params.excite_action, params.excite_timeout, actions,
                                        params.trajectory_topic, self.model, params.excite_answer_timeout)
        self.identify = IdentifyAction(self, player)
        self._server = ActionServer(self, Identify, "~/identify", execute_callback=threaded(self.identify.execute),
                                    goal_callback=self.identify.on_goal,
                                    cancel_callback=lambda _h: CancelResponse.ACCEPT, callback_group=actions)
        self._load_last_result()
        self._warn_if_result_unwritable()
        if params.monitor:
            ok, why = self.monitor.switch(True)
            if not ok:
                self.get_logger().error(f"monitor not started: {why}")
        self.get_logger().info(f"payload estimator ready: {self.model.n} joints, payload frame {self.frame}, "
                               f"method {params.method}")

    def wind_down(self, reason: str):
        """First SIGINT / SIGTERM (node_main): the running goal stops the motion, saves its partial estimate and
        is aborted with `reason` while the executor still delivers the answer. Returns the predicate "done"."""
        self.identify.interrupt(reason)
        if self.identify.busy:
            self.get_logger().warn(f"{reason}: ending the running goal")
        return lambda: not self.identify.busy

    def close(self) -> None:
        """Before the node is destroyed: the inbox's side node goes with it."""
        self.inbox.destroy()

    # -- configuration ----------------------------------------------------------------------------
    def _load_robot(self) -> None:
        robot_yaml = self.params.robot_yaml
        if not robot_yaml:
            self.robot_error = ("no robot.yaml of the unloaded robot (parameter robot_yaml is empty); "
                                "run payload-id identify-robot on a bag of the robot without payload and set "
                                "robot_yaml")
            self.get_logger().warn(self.robot_error)
            return
        try:
            self.robot = RobotIdentification.load(robot_yaml, self.model)
            # The gains a goal will use, decided now so a conflict with effort_scale is reported at start
            # (and every goal is refused with that reason) rather than after the arm has moved.
            gains = resolve_drive_gains(self.effort_unit, self.robot, self.effort_scale, self.model.n,
                                        recording_source="the driver's joint states", robot_source=robot_yaml,
                                        given_name="the effort_scale parameter")
        except PayloadIdError as err:
            self.robot = None
            self.robot_error = str(err)
            self.get_logger().error(f"robot_yaml {robot_yaml}: {err}")
            return
        self.drive_gains = gains
        if gains.source != "none":
            self.gains = np.asarray(gains.scale, dtype=float)
            self.get_logger().info(f"drive gains {np.round(gains.scale, 6).tolist()} from {gains.source}")

    def new_run(self, request: Identify.Goal) -> IdentificationRun:
        """The online identification the goal asks for; bad requests fail here, before anything moves."""
        method = request.method or self.params.method
        prior = goal_prior(request.bounding_box, request.known_mass, request.known_mass_std, self.prior,
                           self._mass_limit(request.known_mass))
        options = goal_options(request.convergence, request.forgetting, request.noise_std, self.model.n, prior)
        traj_name = request.trajectory or self.params.trajectory
        if not traj_name:
            raise PayloadIdError("no trajectory given and no default", "set the goal's trajectory or the "
                                 "node's trajectory parameter")
        traj = load_trajectory(traj_name).for_model(self.model.joint_names)
        if traj.duration is None:    # never: FourierTrajectory.__post_init__ fills in the Optional field
            raise PayloadIdError("the trajectory has no duration", "report this")
        if self.robot is None:
            raise PayloadIdError(self.robot_error or "no robot identification", "set robot_yaml")
        return IdentificationRun(self.model, self.robot, self.frame, method, traj.duration,
                                 float(request.max_duration), self.effort_scale, self.effort_unit, options=options,
                                 drive_gains=self.drive_gains)

    # -- the result file (payload_id_core.payload.result_file) ------------------------------------
    def _load_last_result(self) -> None:
        path = self.params.result_path
        if not path:
            return
        try:
            saved = read_result(path, self.model, None if self.robot is None else self.robot.fingerprint())
        except ResultUnreadable as err:
            self.get_logger().warn(f"cannot read the last result {path}: {err}; starting without")
            return
        except PayloadIdError as err:
            self.get_logger().warn(f"last result {path}: {err}; starting without")
            return
        if saved is None:
            return
        if saved.ft_params is not None:
            self.compensation.restore(saved.ft_params)
        self.set_estimate(saved.estimate, ft_params=saved.ft_params)
        self._saved_tare = saved.monitor_tare
        self._saved_unloaded = saved.monitor_unloaded
        self._saved_unconfirmed = saved.monitor_unconfirmed
        self._saved_watched_until = saved.monitor_watched_until
        self._saved_carried = saved.monitor_carried
        kind = " (partial: a cancelled identification)" if saved.partial else ""
        if saved.monitor_tare is not None:
            kind = " (the payload monitor's re-estimate: the monitor goes on from it)"
        self.get_logger().info(f"loaded the last result from {path}{kind}: "
                               f"{conv.mass_text(saved.estimate.mass, float('nan'))}")

    def _warn_if_result_unwritable(self) -> None:
        """Said once at start-up, so a cell learns before its first goal that results will not survive a restart."""
        if not self.params.result_path:
            return
        try:
            check_output_file(self.params.result_path)
        except OutputNotWritable as err:
            self.get_logger().warn(f"result_path: {err}; estimates will be delivered and published but not persisted")

    def save_result(self, est: PayloadEstimate, outcome: GoalOutcome,
                    joint_states: WindowCoverage | None = None) -> str:
        """The estimate, how its goal ended, what its window received of the joint states and the F/T compensation
        parameters, to `result_path`. Returns why it could not be written ("" if it was): a full disk or a
        read-only directory must not cost the goal its estimate."""
        if not self.params.result_path:
            return ""
        try:
            write_result(self.params.result_path, self.model, est, outcome, self.compensation.params, self.now(),
                         joint_states=joint_states)
        except OSError as err:   # OutputNotWritable included
            problem = f"the estimate was not persisted: {err}"
            self.get_logger().error(problem)
            return problem
        return ""

    def _save_monitor_estimate(self, est: PayloadEstimate, tare: tuple[float, float], unloaded: dict | None,
                               unconfirmed: str = "", watched_until: float | None = None,
                               carried: MonitorCarried | None = None) -> None:
        """A monitor re-estimate to `result_path` with its tare, the unloaded robot's friction learnt, why it is not
        confirmed yet, the last joint-state stamp watched and the covariance decided with beyond the published one, so
        a restart mid-carry starts from the part carried, corrects its re-estimates as before, does not take a payload
        it still doubted for settled, does not date a change made while it was down at its first sample, and decides,
        publishes and names changes with the σ it had (robot.yaml's held-out model error included)."""
        if not self.params.result_path:
            return
        try:
            write_result(self.params.result_path, self.model, est, None, self.compensation.params, self.now(),
                         monitor_tare=tare, monitor_unloaded=unloaded, monitor_unconfirmed=unconfirmed,
                         monitor_watched_until=watched_until, monitor_carried=carried)
        except OSError as err:
            self.get_logger().error(f"the monitor's re-estimate was not persisted: {err}")

    # -- subscriptions ----------------------------------------------------------------------------
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _drain(self) -> None:
        """50 Hz (4 Hz idle: pace_drain): take the queued joint states and wrenches; feed the goal's buffers or the
        monitor; compensate the wrench."""
        self._drain_sensors()
        self.pace_drain()

    def pace_drain(self) -> None:
        """The drain timer at DRAIN_PERIOD while a goal, the monitor or the compensated wrench takes every sample,
        else at IDLE_DRAIN_PERIOD; restarted when it changes, so that a goal accepted now is drained from now on."""
        period = (DRAIN_PERIOD if self.identify.busy or self.monitor.on or self._publishing_wrench
                  else IDLE_DRAIN_PERIOD)
        if period != self._drain_period:
            self._drain_period = period
            self._drain_timer.timer_period_ns = round(period * 1e9)
            self._drain_timer.reset()

    def _drain_sensors(self) -> None:
        self.joint_states.drain()
        latest = self.joint_states.latest
        self.monitor.check_input(self.now(), None if latest is None else latest.stamp)
        publish = self.compensation.params is not None and self.pub_wrench.get_subscription_count() > 0
        self._publishing_wrench = publish
        self.inbox.want_wrench(self.identify.collecting or publish)
        wr = self.inbox.drain_wrenches()
        if wr is None:
            return
        self.compensation.hear_sensor(self.inbox.wrench_frame or "")
        self.identify.collect_wrenches(wr)
        if publish:
            out = self.compensation.compensate(*wr)
            for msg in [] if out is None else conv.wrench_msgs(out.t, out.frame, out.wrench):
                self.pub_wrench.publish(msg)

    def _on_simulated_time(self) -> bool:
        clock = self.get_clock()
        return isinstance(clock, ROSClock) and clock.ros_time_is_active

    def _watch_clock(self) -> None:
        """Steady 10 Hz: the monitor says when simulated time stopped (ClockStall; nothing on the wall clock)."""
        stalled = self._clock_stall.stalled_for()
        if stalled > 0.0:
            # The samples that came after the drain timer's last run would wait in the inbox for the clock to move
            # again, and a restarted simulator's first samples would be drained with them, one batch from two
            # publishers: the monitor paused for a second driver (seen under load, h186).
            self.joint_states.drain()
            latest = self.joint_states.latest
            self.monitor.check_clock(stalled, None if latest is None else latest.stamp)

    def _on_joint_states(self, js: JointStateBatch) -> None:
        """Each batch drained (JointStateWatch.drain): placed in time for compensation, then a goal's or the
        monitor's."""
        self.compensation.add_joint_states(js.t, js.q, js.qd)
        if not self.identify.collect_joint_states(js):
            self.monitor.feed(js)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not msg.points:
            return
        cmd = conv.msg_to_commanded(msg, self.now())
        self.compensation.add_commanded(cmd)
        self.identify.collect_commanded(cmd)

    # -- estimate state ---------------------------------------------------------------------------
    def set_estimate(self, est: PayloadEstimate, measure: float | None = None,
                     ft_params: FtParameters | None = None) -> None:
        """`est` is the payload from now on: published, drawn, and compensated for (with the run's own F/T
        calibration `ft_params` when there is one)."""
        self.estimate = est
        now = self.now()
        self.pub_payload.publish(conv.estimate_to_msg(est, now, measure))
        self.pub_markers.publish(conv.markers_msg(est, now))
        warning = self.compensation.follow(est, ft_params)
        if warning:
            self.get_logger().warn(warning)

    # -- monitor mode (monitor_mode.py) -------------------------------------------------------------
    def _monitor_refusal(self) -> str:
        return "" if self.robot is not None else f"no robot model to watch the payload with: {self.robot_error}"

    def _new_live_monitor(self) -> LiveMonitor:
        assert self.robot is not None
        live = LiveMonitor(self.model, self.robot, self.frame, self.gains, self.params.rated_payload_kg,
                           self.params.stale_timeout, self.prior, publisher_silence_s=0.0)
        # The saved monitor re-estimate's tare goes with the estimate it was saved with (the node's at start).
        live.saved_tare, self._saved_tare = self._saved_tare, None
        live.saved_unloaded, self._saved_unloaded = self._saved_unloaded, None
        live.saved_unconfirmed, self._saved_unconfirmed = self._saved_unconfirmed, ""
        live.saved_watched_until, self._saved_watched_until = self._saved_watched_until, None
        live.saved_carried, self._saved_carried = self._saved_carried, None
        return live


def main(args=None) -> int:
    # Our own SIGINT/SIGTERM handling (node_main): rclpy's would shut the context down under a running goal, which
    # then could neither stop the motion nor be answered.
    return run_node("payload_estimator", PayloadEstimator, args, close=PayloadEstimator.close, own_signals=True,
                    wind_down=PayloadEstimator.wind_down)


if __name__ == "__main__":
    raise SystemExit(main())
