"""`make demo-monitor`: the payload monitor on the simulated cell end to end (`python -m payload_id_ros.demo_monitor`).

1. The unloaded robot model, as `make demo` makes it (cached in out/demo_cache/).
2. The cell (mock_hardware on the `ur10` profile, payload_estimator with `monitor:=true`), started by the
   supervisor with config/ur10.yaml as launch/sim_cell.launch.py would.
3. A pick-and-place task driven from this process over ROS, as a cell's own program would: point-to-point
   moves on the controller's JointTrajectory topic (no excitation), a part picked, regrasped and put down
   at rests through mock_hardware's ~/set_payload, and a push from the environment during a move
   (mock_hardware's `external_torque`). The estimator is told nothing of it.
4. What the estimator said (~/payload_event, ~/payload, ~/monitor_residual), printed next to the truth, and
   out/demo_monitor.png (the residual, the events and the estimated mass over time) and
   out/demo_monitor.yaml.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from rcl_interfaces.srv import SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_core.dynamics import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io import atomic_write_yaml
from payload_id_core.monitor import mass_change_text
from payload_id_core.sim import point_to_point
from payload_id_msgs.msg import PayloadEstimate, PayloadEvent
from payload_id_msgs.srv import SetPayload
from payload_id_ros import conversions as conv
from payload_id_ros.demo import MONITOR_ROBOT_TRAJECTORY, PROFILE, ROBOT, trajectory, unloaded_robot_yaml
from payload_id_ros.supervisor import Supervisor

FRAME = "tool0"
HOME = [0.0, -1.4, 1.4, -1.6, -1.6, 0.0]
REACH_RAD = 0.5
MOVE_S, REST_S = 1.5, 0.6
PART = {"mass": 3.0, "com": [0.01, -0.02, 0.07], "inertia": [0.01, 0.0, 0.0, 0.012, 0.0, 0.008]}
REGRASPED = {**PART, "com": [0.06, 0.03, 0.05]}          # the same part, held 5 cm further out
PUSH = [0.0, 18.0, -10.0, 0.0, 0.0, 0.0]                  # N·m at the joints, during a move
PUSH_S = 0.12
# The task: ("move", n) n moves with rests; ("pick"|"regrasp"|"place") at a rest; ("push",) during the next move.
TASK = [("move", 3), ("pick",), ("move", 3), ("push",), ("move", 3), ("regrasp",), ("move", 5), ("place",),
        ("move", 4)]


@dataclass
class Record:
    """What the demo saw: the truth it made, and what the estimator published (times in s since `t0`, on the
    driver's clock: the wall clock, or /clock on simulated time)."""

    t0: float
    truth: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    estimates: list[dict] = field(default_factory=list)
    residual: list[tuple[float, list[float]]] = field(default_factory=list)


class TaskDriver:
    """An rclpy node (in this process) that drives the task and listens to the estimator. `sim_time`: the cell runs
    on mock_hardware's /clock, and the task is paced and dated on it (`now`, `sleep`), not on the wall clock."""

    def __init__(self, record: Record, sim_time: bool = False):
        self.model = RobotModel.from_urdf(ROBOT)
        self.sim_time = sim_time
        # A context of its own: the caller (a test) may run other rclpy nodes in this process.
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node("demo_monitor_task", context=self.context,
                         parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, sim_time)])
        self.record = record
        self.traj_pub = self.node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory",
                                                   10)
        self.set_payload: Any = self.node.create_client(SetPayload, "/mock_hardware/set_payload")
        self.set_params: Any = self.node.create_client(SetParameters, "/mock_hardware/set_parameters")
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(PayloadEvent, "/payload_estimator/payload_event", self._on_event,
                                      QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(PayloadEstimate, "/payload_estimator/payload", self._on_estimate, latched)
        self.node.create_subscription(JointState, "/payload_estimator/monitor_residual", self._on_residual, 50)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()

    def now(self) -> float:
        """s on the driver's clock: the wall clock's, or /clock's on simulated time (0 until the first is heard)."""
        return self.node.get_clock().now().nanoseconds * 1e-9

    def sleep(self, seconds: float) -> None:
        """`seconds` on the driver's clock: on simulated time the task waits for the simulation, however slowly a
        loaded machine lets it run, so every move, rest and push lasts the samples it was meant to."""
        if not self.sim_time:
            time.sleep(seconds)
            return
        end = self.now() + seconds
        while self.now() < end:
            time.sleep(0.002)

    # -- listening ------------------------------------------------------------------------------
    def _t(self, stamp) -> float:
        return conv.time_to_sec(stamp) - self.record.t0

    def _on_event(self, msg) -> None:
        # Not located (t_change_located false): the stamp is the earliest the change can have come and alarm_delay the
        # span it came in, no latency (heard, summarise).
        self.record.events.append({"t_change": self._t(msg.header.stamp), "kind": msg.kind,
                                   "t_change_located": bool(msg.t_change_located),
                                   "alarm_delay_ms": 1e3 * msg.alarm_delay, "delta_mass": msg.delta_mass,
                                   "delta_mass_std": msg.delta_mass_std, "reason": msg.reason})

    def _on_estimate(self, msg) -> None:
        p = msg.payload
        self.record.estimates.append({"t": self.now() - self.record.t0, "method": msg.method, "mass": p.mass,
                                      "mass_std": p.mass_std, "com": [p.com.x, p.com.y, p.com.z],
                                      "com_identified": bool(p.com_identified)})

    def _on_residual(self, msg) -> None:
        self.record.residual.append((self._t(msg.header.stamp), list(msg.effort)))

    # -- driving --------------------------------------------------------------------------------
    def wait_for_cell(self, timeout: float) -> None:
        for client in (self.set_payload, self.set_params):
            if not client.wait_for_service(timeout_sec=timeout):
                raise PayloadIdError(f"{client.srv_name} did not appear within {timeout:g} s",
                                     "see the cell's logs (mock_hardware)")
        deadline = time.monotonic() + timeout
        while self.traj_pub.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise PayloadIdError("nobody listens on the controller's JointTrajectory topic",
                                     "see mock_hardware's log")
            time.sleep(0.05)
        while self.sim_time and self.now() == 0.0:
            if time.monotonic() > deadline:
                raise PayloadIdError("no /clock heard on simulated time", "see mock_hardware's log (sim_time:=true)")
            time.sleep(0.05)

    def move(self, q0: np.ndarray, q1: np.ndarray, duration: float) -> None:
        """Rest to rest, starting on receipt (a zero stamp), as the cell's program would command it."""
        self.traj_pub.publish(conv.commanded_to_msg(point_to_point(self.model, 0.0, q0, q1, duration)))

    def carry(self, part: dict | None, kind: str) -> None:
        req = SetPayload.Request()
        if part is not None:
            req.payload.mass = float(part["mass"])
            req.payload.com.x, req.payload.com.y, req.payload.com.z = (float(c) for c in part["com"])
            i = part["inertia"]
            p = req.payload
            p.ixx, p.ixy, p.ixz, p.iyy, p.iyz, p.izz = (float(x) for x in i)
            p.frame_id = FRAME
        response = self._call(self.set_payload, req)
        if not response.success:
            raise PayloadIdError(f"mock_hardware refused the payload: {response.message}", "report this")
        self.record.truth.append({"t": self.now() - self.record.t0, "kind": kind,
                                  "mass": 0.0 if part is None else part["mass"],
                                  "com": None if part is None else list(part["com"])})

    def push(self, torque: list[float], kind: str = "contact") -> None:
        req = SetParameters.Request()
        req.parameters = [Parameter("external_torque", Parameter.Type.DOUBLE_ARRAY, torque).to_parameter_msg()]
        result = self._call(self.set_params, req).results[0]
        if not result.successful:
            raise PayloadIdError(f"mock_hardware refused the push: {result.reason}", "report this")
        if any(torque):
            self.record.truth.append({"t": self.now() - self.record.t0, "kind": kind, "mass": None,
                                      "com": None, "duration": PUSH_S})

    def _call(self, client, request, timeout: float = 5.0):
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > deadline:
                raise PayloadIdError(f"{client.srv_name} did not answer within {timeout:g} s",
                                     "see mock_hardware's log")
            time.sleep(0.005)
        return future.result()


def run_task(driver: TaskDriver, task=TASK, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    q = np.array(HOME)
    push_next = False
    driver.sleep(2.0)                      # at rest: the monitor learns the residual's level
    for step in task:
        if step[0] == "move":
            for _ in range(step[1]):
                target = np.array(HOME) + rng.uniform(-REACH_RAD, REACH_RAD, 6)
                driver.move(q, target, MOVE_S)
                q = target
                if push_next:
                    driver.sleep(0.4 * MOVE_S)
                    driver.push(PUSH)
                    driver.sleep(PUSH_S)
                    driver.push([0.0] * 6)
                    driver.sleep(0.6 * MOVE_S - PUSH_S)
                    push_next = False
                else:
                    driver.sleep(MOVE_S)
                driver.sleep(REST_S)
        elif step[0] == "push":
            push_next = True
        else:
            driver.sleep(REST_S / 2)
            part = {"pick": PART, "regrasp": REGRASPED, "place": None}[step[0]]
            driver.carry(part, {"pick": "picked", "regrasp": "changed", "place": "placed"}[step[0]])
            driver.sleep(REST_S / 2)
    driver.sleep(1.0)


def summarise(record: Record) -> dict:
    """Each true change with the first event heard for it (of any kind: the caller judges the kind): dated within
    0.2 s of it, or not located within a span that holds it; and the last re-estimate published before the next
    change."""
    rows = []
    for k, truth in enumerate(record.truth):
        nxt = record.truth[k + 1]["t"] if k + 1 < len(record.truth) else float("inf")
        heard = [e for e in record.events if _matches(e, truth["t"])]
        row = {"truth": truth, "event": heard[0] if heard else None}
        if truth["mass"] is not None:
            after = [e for e in record.estimates if truth["t"] < e["t"] < nxt and e["method"] == "monitor"]
            if after:
                est = after[-1]
                row["estimate"] = est
                row["mass_err_kg"] = est["mass"] - truth["mass"]
        rows.append(row)
    false = [e for e in record.events if not any(_matches(e, tr["t"]) for tr in record.truth)]
    return {"changes": rows, "false_events": false}


def _matches(event: dict, t: float) -> bool:
    """The event heard is about a change at t: dated within 0.2 s of it, or not located within a span that holds it
    (with the same 0.2 s either side: the truth is stamped when the demo commands it, the span by joint states)."""
    if event.get("t_change_located", True):
        return abs(event["t_change"] - t) < 0.2
    return event["t_change"] - 0.2 <= t <= event["t_change"] + event["alarm_delay_ms"] / 1e3 + 0.2


def plot(path: Path, record: Record) -> None:
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, (ax_r, ax_m) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    if record.residual:
        t = np.array([r[0] for r in record.residual])
        r = np.array([r[1] for r in record.residual])
        for j in range(r.shape[1]):
            ax_r.plot(t, r[:, j], lw=0.8, label=f"j{j + 1}")
    for tr in record.truth:
        if tr["kind"] == "contact":
            ax_r.axvspan(tr["t"], tr["t"] + tr["duration"], color="0.7", alpha=0.6)
        for ax in (ax_r, ax_m):
            ax.axvline(tr["t"], color="k", ls=":", lw=0.8)
    for e in record.events:
        label = f"{e['kind']}\n{e['delta_mass']:+.2f} kg" if e["kind"] != "contact" else "contact"
        if not e.get("t_change_located", True):
            # Its stamp is no date: the span it came in is shaded, the label at its start says so.
            ax_r.axvspan(e["t_change"], e["t_change"] + e["alarm_delay_ms"] / 1e3, color="C3", alpha=0.15)
            label += "\n(time not located)"
        ax_r.annotate(label,
                      (e["t_change"], 0), xytext=(3, 30), textcoords="offset points", fontsize=8, color="C3",
                      arrowprops={"arrowstyle": "->", "color": "C3"})
    ax_r.set_ylabel("residual r (N·m)")
    ax_r.set_title("payload monitor on the simulated UR10 cell: residual, events (red) and true changes (dotted; "
                   "grey: push)", fontsize=10)
    ax_r.legend(ncol=6, fontsize=8, loc="upper left")
    # The truth: the mass carried from each change on.
    t_truth, m_truth = [0.0], [0.0]
    for tr in record.truth:
        if tr["mass"] is not None:
            t_truth.append(tr["t"])
            m_truth.append(tr["mass"])
    end = record.residual[-1][0] if record.residual else t_truth[-1] + 1.0
    ax_m.step([*t_truth, end], [*m_truth, m_truth[-1]], where="post", color="k", label="truth")
    est = [e for e in record.estimates if e["method"] == "monitor"]
    if est:
        te = np.array([e["t"] for e in est])
        me = np.array([e["mass"] for e in est])
        se = np.array([e["mass_std"] for e in est])
        ax_m.errorbar(te, me, yerr=2 * se, fmt="o", color="C3", ms=4, capsize=3,
                      label="~/payload from the monitor (±2σ)")
    ax_m.set_ylabel("mass (kg)")
    ax_m.set_xlabel("time (s)")
    ax_m.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def heard(event: dict) -> str:
    """What the estimator said about one change: its kind, the mass change (none for a contact) and the alarm's delay;
    for a change whose time was not located, the span it came in (its alarm_delay is that span's length, no
    latency)."""
    said = f"{event['kind']}: {mass_change_text(event['delta_mass'], event['delta_mass_std'])}, "
    if event.get("t_change_located", True):
        return said + f"alarm after {event['alarm_delay_ms']:.0f} ms"
    t0 = event["t_change"]
    return said + f"its time not located: between {t0:.2f} and {t0 + event['alarm_delay_ms'] / 1e3:.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m payload_id_ros.demo_monitor", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out", help="output directory (default out/)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    cache = out / "demo_cache"
    t_start = time.monotonic()
    try:
        robot_yaml = unloaded_robot_yaml(cache, trajectory(MONITOR_ROBOT_TRAJECTORY, cache, "base", 20.0))
        record = run_cell(out, robot_yaml)
    except PayloadIdError as err:
        print(f"demo-monitor: error: {err}", file=sys.stderr)
        return 2
    summary = summarise(record)
    for row in summary["changes"]:
        tr, ev = row["truth"], row["event"]
        said = "nothing heard" if ev is None else heard(ev)
        truth = tr["kind"] + ("" if tr["mass"] is None else f" (carrying {tr['mass']:.3f} kg)")
        est = row.get("estimate")
        then = "" if est is None else f"; then ~/payload {est['mass']:.3f} ± {est['mass_std']:.3f} kg"
        print(f"demo-monitor: t = {tr['t']:6.2f} s  truth: {truth:28s} estimator: {said}{then}", flush=True)
    print(f"demo-monitor: {len(summary['false_events'])} events with no change behind them", flush=True)
    atomic_write_yaml(out / "demo_monitor.yaml", {
        "truth": record.truth, "events": record.events, "estimates": record.estimates,
        "summary": summary, "wall_time_s": time.monotonic() - t_start})
    plot(out / "demo_monitor.png", record)
    print(f"demo-monitor: wrote {out / 'demo_monitor.yaml'} and {out / 'demo_monitor.png'}", flush=True)
    return 0


def run_cell(out: Path, robot_yaml: Path, task=TASK, env: dict | None = None,
             estimator: dict | None = None, sim_time: bool = False) -> Record:
    """The cell up, the task driven, the cell stopped (by PID); `env` and `estimator` (parameters) for tests.
    `sim_time`: mock_hardware owns the clock (/clock, at most real time) and every node and the task run on it.
    In real time a loaded machine makes mock_hardware skip the periods it missed (over 100 ms late), and the
    monitor rightly pauses on those gaps and cannot date a change made in one; on simulated time the simulation
    slows down instead, so the same samples reach the monitor whatever the machine's load (a test's choice)."""
    sup = Supervisor(cell="sim_cell", robot=ROBOT, log_dir=out / "demo_monitor_logs",
                     env=dict(os.environ) if env is None else env, sim_time=sim_time, overrides={
        "mock_hardware": {"profile": PROFILE, "seed": 7, "initial_positions": HOME},
        "payload_estimator": {"robot_yaml": str(robot_yaml), "payload_frame": FRAME, "monitor": True,
                              "result_path": "", **(estimator or {})},
    })
    print(f"demo-monitor: starting the cell (ROS_DOMAIN_ID={sup.env['ROS_DOMAIN_ID']}, logs in {sup.log_dir})",
          flush=True)
    with sup:
        sup.wait_for_log("mock_hardware", "simulating", 60)
        sup.wait_for_log("payload_estimator", "monitor started", 60)
        # This process joins the cell's domain, loopback only, like the nodes the supervisor started.
        for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE"):
            os.environ[key] = sup.env[key]
        record = Record(t0=0.0)
        driver = TaskDriver(record, sim_time)
        try:
            driver.wait_for_cell(30.0)
            record.t0 = driver.now()
            print("demo-monitor: running the pick-and-place task (about 40 s) ...", flush=True)
            run_task(driver, task)
        finally:
            driver.close()
    return record


if __name__ == "__main__":
    sys.exit(main())
