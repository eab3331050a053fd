"""Test probe: drives the cell's actions and watches its topics, printing JSON lines.

  probe.py identify [--method M] [--trajectory T] [--cancel-after S] [--second-goal] [--stop-when-converged]
                    [--max-duration S] [--rest-window S]
  probe.py excite TRAJECTORY [--cancel-after S] [--rest-window S] [--until-server-gone]
  probe.py latest [--timeout S]        a late subscriber of /payload_estimator/payload
  probe.py wrench [--count N]          statistics of /payload_estimator/wrench_compensated
  probe.py burst [--count N]           N identify goals sent at once: how many were accepted, the result
  probe.py watch                       until SIGINT: trajectories sent to the controller, when the arm last moved

identify/excite also record every JointTrajectory sent to the controller and, after the result,
watch /joint_states for --rest-window seconds to tell whether the arm is at rest.
"""
import argparse
import json
import math
import time
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_msgs.action import Excite, Identify
from payload_id_msgs.msg import PayloadEstimate

STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}


def emit(**kw):
    print(json.dumps(kw, default=float), flush=True)


def player_matched(node: Node, sub) -> bool:
    """The excitation player's trajectory publisher is known and every publisher known is matched to `sub`. Not
    just "a publisher": the estimator publishes on the topic too (the stop it sends for a dead player)."""
    infos = node.get_publishers_info_by_topic(sub.topic_name)
    return any(i.node_name == "excitation_player" for i in infos) and sub.get_publisher_count() >= len(infos)


def traj_summary(msg: JointTrajectory, t_recv: float) -> dict:
    pts = msg.points
    end = pts[-1].time_from_start
    return {"stamp": msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, "received": t_recv, "n": len(pts),
            "t_end": end.sec + 1e-9 * end.nanosec, "q_first": list(pts[0].positions),
            "v_first": list(pts[0].velocities), "v_last": list(pts[-1].velocities),
            "a_last": list(pts[-1].accelerations),
            "max_acc": float(np.max(np.abs([p.accelerations for p in pts]))) if pts[0].accelerations else None,
            "max_vel": float(np.max(np.abs([p.velocities for p in pts]))) if pts[0].velocities else None}


class Watcher:
    def __init__(self, node: Node):
        self.node = node
        self.trajs: list[dict] = []
        self.js: list[tuple[float, list[float], list[float]]] = []   # (wall, positions, velocities)
        self.traj_sub = node.create_subscription(JointTrajectory, "/joint_trajectory_controller/joint_trajectory",
                                                 lambda m: self.trajs.append(traj_summary(m, time.time())), 10)
        node.create_subscription(JointState, "/joint_states",
                                 lambda m: self.js.append((time.monotonic(), list(m.position), list(m.velocity))),
                                 qos_profile_sensor_data)

    def wait_matched(self, timeout: float = 30.0) -> None:
        """Until the player's trajectory publisher is matched: a goal sent earlier could have its first
        trajectory (the move to the start pose) published before this probe hears the topic."""
        t0 = time.monotonic()
        while not player_matched(self.node, self.traj_sub) and time.monotonic() - t0 < timeout:
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def until_played_out(self, settle: float = 0.5, timeout: float = 10.0) -> None:
        """Until the last trajectory received has been played out (its stamp plus its duration, wall clock). The
        player publishes its decelerating stop as it exits, so when its action server disappears the robot is
        still following that stop: a rest window opened then would see it move."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < settle:     # a stop published just before the exit may still be in flight
            rclpy.spin_once(self.node, timeout_sec=0.05)
        end = max((tr["stamp"] + tr["t_end"] for tr in self.trajs), default=0.0)
        while time.time() < end + 0.1 and time.monotonic() - t0 < timeout:
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def rest(self, window: float) -> dict:
        t0 = time.monotonic()
        while time.monotonic() - t0 < window:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        tail = [s for s in self.js if s[0] >= t0]
        if not tail:
            return {"rest_samples": 0}
        q = np.array([s[1] for s in tail])
        v = np.array([s[2] for s in tail]) if tail[0][2] else np.zeros_like(q)
        return {"rest_samples": len(tail), "rest_max_qd": float(np.max(np.abs(v))),
                "rest_q_span": float(np.max(np.ptp(q, axis=0)))}


def run_goal(node, watcher, client, goal, args, feedback_fn, second=None) -> None:
    if not client.wait_for_server(timeout_sec=20.0):
        emit(error="no server")
        return
    watcher.wait_matched()
    emit(trajectory_publishers=watcher.traj_sub.get_publisher_count())
    send = client.send_goal_async(goal, feedback_callback=feedback_fn)
    rclpy.spin_until_future_complete(node, send, timeout_sec=10.0)
    handle = send.result()
    if handle is None or not handle.accepted:
        emit(status="rejected")
        return
    t0 = time.monotonic()
    if second is not None:
        send2 = client.send_goal_async(second)
        rclpy.spin_until_future_complete(node, send2, timeout_sec=10.0)
        emit(second_goal_accepted=bool(send2.result() and send2.result().accepted))
    res_f = handle.get_result_async()
    cancelled = False
    while not res_f.done() and time.monotonic() - t0 < args.timeout:
        rclpy.spin_once(node, timeout_sec=0.05)
        if args.until_server_gone and not client.server_is_ready():
            emit(error="server gone", after=time.monotonic() - t0)
            watcher.until_played_out()
            emit(trajectories=watcher.trajs, **watcher.rest(args.rest_window))
            return
        if args.cancel_after and not cancelled and time.monotonic() - t0 > args.cancel_after:
            handle.cancel_goal_async()
            cancelled = True
            emit(cancel_sent=time.monotonic() - t0)
    if not res_f.done():
        emit(error="timeout")
        emit(trajectories=watcher.trajs, **watcher.rest(args.rest_window))
        return
    res = res_f.result()
    emit(status=STATUS.get(res.status, res.status), wall=time.monotonic() - t0, **result_dict(res.result))
    emit(trajectories=watcher.trajs, **watcher.rest(args.rest_window))


def result_dict(r) -> dict:
    if isinstance(r, Excite.Result):
        return {"message": r.message, "success": r.success, "duration": r.duration}
    p = r.estimate.payload
    return {"message": r.message, "mass": p.mass, "mass_std": p.mass_std, "com": [p.com.x, p.com.y, p.com.z],
            "com_std": [p.com_std.x, p.com_std.y, p.com_std.z], "converged": r.converged,
            "convergence_time": r.convergence_time if math.isfinite(r.convergence_time) else None,
            "rmse_before": list(r.torque_rmse_before), "rmse_after": list(r.torque_rmse_after),
            "method": r.estimate.method, "frame": p.frame_id, "applied": r.applied_to_controller,
            "quality": r.estimate.quality, "quality_reasons": list(r.estimate.quality_reasons),
            **prior_dict(r.estimate)}


def prior_dict(est: PayloadEstimate) -> dict:
    """The priors a PayloadEstimate message says were given, what became of them, the entries physical consistency
    narrowed and the notes (payload.yaml's prior:, physically_narrowed: and notes:)."""
    return {"bounding_box": list(est.bounding_box), "known_mass": est.known_mass,
            "known_mass_std": est.known_mass_std, "prior_pinned": list(est.prior_pinned),
            "prior_bounded": list(est.prior_bounded),
            "prior_not_applied": dict(zip(est.prior_not_applied, est.prior_not_applied_reasons)),
            "physically_narrowed": dict(zip(est.physically_narrowed, est.physically_narrowed_ratio)),
            "notes": [{"code": c, "text": t} for c, t in zip(est.note_codes, est.notes)]}


def burst(node, args) -> None:
    """`--count` goals sent in one go (a double-clicking user, a retrying client): the answers, then the result
    of every accepted goal."""
    client: ActionClient[Any, Any, Any] = ActionClient(node, Identify, "/payload_estimator/identify")
    if not client.wait_for_server(timeout_sec=20.0):
        emit(error="no server")
        return
    goal = Identify.Goal(method=args.method, trajectory=args.traj_opt)
    sends = [client.send_goal_async(goal) for _ in range(args.count)]
    t0 = time.monotonic()
    while not all(f.done() for f in sends) and time.monotonic() - t0 < 30.0:
        rclpy.spin_once(node, timeout_sec=0.05)
    handles = [f.result() for f in sends if f.done()]
    accepted = [h for h in handles if h is not None and h.accepted]
    emit(answered=len(handles), accepted=len(accepted), rejected=len(handles) - len(accepted))
    for h in accepted:
        res_f = h.get_result_async()
        while not res_f.done() and time.monotonic() - t0 < args.timeout:
            rclpy.spin_once(node, timeout_sec=0.05)
        if not res_f.done():
            emit(error="timeout")
            continue
        res = res_f.result()
        if res is None:
            emit(error="no result")
            continue
        emit(status=STATUS.get(res.status, res.status), **result_dict(res.result))


def watch(node) -> None:
    """Until SIGINT: one line per trajectory sent to the controller ({"traj": k, "wall": ...}) and one per 0.1 s of
    motion ({"moving": wall}), then the arm's motion: the wall time of the last joint state moving faster than
    MOVING rad/s, and the trajectories."""
    moving = 1e-4
    trajs: list[dict] = []
    last_moving = [0.0]
    samples = [0]

    def on_traj(m):
        trajs.append(traj_summary(m, time.time()))
        emit(traj=len(trajs), wall=time.time(), t_end=trajs[-1]["t_end"], stamp=trajs[-1]["stamp"])

    def on_js(m):
        samples[0] += 1
        if m.velocity and max(abs(v) for v in m.velocity) > moving:
            now = time.time()
            # Streamed too (a line at most every 0.1 s while moving): a watcher that does not end after SIGINT
            # must not leave the arm's last motion unknown to the harness.
            if now - last_moving[0] > 0.1:
                emit(moving=now)
            last_moving[0] = now

    sub = node.create_subscription(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", on_traj, 10)
    node.create_subscription(JointState, "/joint_states", on_js, qos_profile_sensor_data)
    t0 = time.monotonic()       # a goal sent before discovery ends would have its first trajectory unheard here
    while not player_matched(node, sub) and time.monotonic() - t0 < 30.0:
        rclpy.spin_once(node, timeout_sec=0.05)
    emit(watching=True)
    try:
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    emit(last_moving_wall=last_moving[0], samples=samples[0], trajectories=trajs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what")
    ap.add_argument("trajectory", nargs="?", default="")
    ap.add_argument("--method", default="")
    ap.add_argument("--trajectory", dest="traj_opt", default="")
    ap.add_argument("--cancel-after", type=float, default=0.0)
    ap.add_argument("--second-goal", action="store_true")
    ap.add_argument("--stop-when-converged", action="store_true")
    ap.add_argument("--apply", action="store_true")
    ap.add_argument("--max-duration", type=float, default=0.0)
    ap.add_argument("--convergence", default="")
    ap.add_argument("--forgetting", type=float, default=0.0)
    ap.add_argument("--noise-std", type=float, nargs="*", default=[])
    ap.add_argument("--bounding-box", type=float, nargs="*", default=[])
    ap.add_argument("--known-mass", type=float, default=0.0)
    ap.add_argument("--rest-window", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=60.0)
    # For a server killed mid-goal: no result will come, so stop waiting when it leaves the graph.
    ap.add_argument("--until-server-gone", action="store_true")
    ap.add_argument("--count", type=int, default=200)
    args = ap.parse_args()
    rclpy.init()
    node = Node("probe")
    if args.what == "latest":
        got: list[PayloadEstimate] = []
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(PayloadEstimate, "/payload_estimator/payload", got.append, qos)
        t0 = time.monotonic()
        while not got and time.monotonic() - t0 < args.timeout:
            rclpy.spin_once(node, timeout_sec=0.05)
        if got:
            p = got[-1].payload
            emit(mass=p.mass, com=[p.com.x, p.com.y, p.com.z], frame=p.frame_id, method=got[-1].method,
                 after=time.monotonic() - t0, quality=got[-1].quality, **prior_dict(got[-1]))
        else:
            emit(error="no estimate")
    elif args.what == "wrench":
        # Deep enough for the estimator's bursts (it compensates a DRAIN_PERIOD batch at a time): a subscriber
        # with the sensor-data depth of 5 loses most of each burst on its own side.
        qos = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)
        compensated: list[tuple[float, WrenchStamped]] = []
        node.create_subscription(WrenchStamped, "/payload_estimator/wrench_compensated",
                                 lambda m: compensated.append((time.monotonic(), m)), qos)
        raw: list[tuple[float, WrenchStamped]] = []
        node.create_subscription(WrenchStamped, "/ft_sensor/wrench", lambda m: raw.append((time.monotonic(), m)), qos)
        t0 = time.monotonic()
        # Both streams: the two subscriptions match their publishers at different moments after start-up.
        while (len(compensated) < args.count or len(raw) < args.count) and time.monotonic() - t0 < args.timeout:
            rclpy.spin_once(node, timeout_sec=0.005)

        def stamp(m: WrenchStamped) -> int:
            return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec

        def rows(msgs) -> np.ndarray:
            return np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                              m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z] for _, m in msgs])

        w, r = rows(compensated), rows(raw)
        # Delivery: of the sensor samples this probe heard while both streams ran, the fraction that came out
        # compensated; latency: compensated arrival minus the raw sample's arrival, both heard here.
        raw_at = {stamp(m): t for t, m in raw}
        out_at = {stamp(m): t for t, m in compensated}
        span = [s for s in raw_at if out_at and min(out_at) <= s <= max(out_at)]
        latency = [out_at[s] - raw_at[s] for s in span if s in out_at]
        emit(n=len(compensated), rate=len(compensated) / (time.monotonic() - t0),
             non_finite=int(np.count_nonzero(~np.isfinite(w).all(axis=1))) if len(w) else 0,
             mean=w.mean(0).tolist() if len(w) else None, std=w.std(0).tolist() if len(w) else None,
             raw_mean=r.mean(0).tolist() if len(r) else None,
             out_fraction=(sum(s in out_at for s in span) / len(span)) if span else 0.0,
             latency_ms_p99=float(np.percentile(latency, 99) * 1e3) if latency else None)
    elif args.what == "burst":
        burst(node, args)
    elif args.what == "watch":
        watch(node)
    else:
        watcher = Watcher(node)
        client: ActionClient[Any, Any, Any]   # the generated action types are untyped
        if args.what == "identify":
            client = ActionClient(node, Identify, "/payload_estimator/identify")

            def fb(msg):
                f = msg.feedback
                emit(feedback=f.elapsed, mass=f.estimate.payload.mass, mass_std=f.estimate.payload.mass_std,
                     measure=f.convergence_measure, wall=time.time())

            goal = Identify.Goal(method=args.method, trajectory=args.traj_opt, max_duration=args.max_duration,
                                 stop_when_converged=args.stop_when_converged, apply_to_controller=args.apply,
                                 convergence=args.convergence, forgetting=args.forgetting, noise_std=args.noise_std,
                                 bounding_box=args.bounding_box, known_mass=args.known_mass)
            second = Identify.Goal(method=args.method, trajectory=args.traj_opt) if args.second_goal else None
        else:
            client = ActionClient(node, Excite, "/excitation_player/excite")

            def fb(msg):
                f = msg.feedback
                emit(feedback=f.elapsed, progress=f.progress, phase=f.phase)

            goal = Excite.Goal(trajectory=args.trajectory, speed_scale=1.0)
            second = Excite.Goal(trajectory=args.trajectory) if args.second_goal else None
        run_goal(node, watcher, client, goal, args, fb, second)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
