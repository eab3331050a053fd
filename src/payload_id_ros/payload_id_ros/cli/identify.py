"""`payload-id identify --ros`: the command-line action client of a running payload_estimator.

Sends one Identify goal, prints the streaming feedback (elapsed time, mass ± σ, CoM, convergence
measure) and the final estimate, optionally next to a known truth (--truth payload.yaml), and can
write everything to --out (YAML). SIGINT (Ctrl-C) or SIGTERM (`timeout`, a supervisor) cancels the goal:
the arm decelerates to rest, the client waits (CANCEL_WAIT s at most) for the goal's answer, prints the partial
estimate, writes --out with `partial: true` and exits 130 / 143 (128 + the signal). A second signal leaves at
once. An aborted goal prints the node's reason (and the partial estimate when the cell cut the motion short)
and exits 2.
"""

from __future__ import annotations

import argparse
import math
import signal
import time

import numpy as np

from payload_id_core.cli import number, positive_list
from payload_id_core.errors import PayloadIdError
from payload_id_core.io import atomic_write_yaml, read_yaml_mapping
from payload_id_core.payload import ONLINE_SPECS, ConvergenceRule
from payload_id_core.payload_estimate import PayloadEstimate, millimetres

STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}
SERVER_GONE = 3.0   # s the action server may be missing from the graph before the goal counts as orphaned
CANCEL_WAIT = 20.0  # s a cancel (signal or --timeout) waits for the goal's answer: the stop and the final estimate
ROUND_OFF = 1e-12   # SI units (kg, kg·m²) or mm: far below anything a payload's numbers resolve


def add_arguments(p) -> None:
    p.add_argument("--ros", action="store_true", required=True,
                   help="talk to a running payload_estimator node (the only mode; offline: identify-payload)")
    p.add_argument("--method", default="", help=f"{' | '.join(s.name for s in ONLINE_SPECS)} (default: the node's)")
    p.add_argument("--trajectory", default="", help="bundled trajectory name or YAML path (default: the node's)")
    p.add_argument("--namespace", default="", help="namespace of the payload_estimator node")
    p.add_argument("--max-duration", type=number(at_least=0, unit="s"), default=0.0,
                   help="s of motion at most (0: whole trajectory)")
    p.add_argument("--stop-when-converged", action="store_true", help="end the motion once converged")
    # The online estimator's settings; left out, the goal's field is empty / 0: the estimator's default.
    p.add_argument("--convergence", choices=[r.value for r in ConvergenceRule], default="",
                   help="convergence rule (default covariance: the estimate's own σ; xu: Xu 2024's calm samples)")
    p.add_argument("--forgetting", type=number(above=0, at_most=1), default=0.0, metavar="λ",
                   help="RLS forgetting factor in (0, 1] (default 1: none)")
    # Bounded like every number here (1 kN·m is far above any arm's torque noise).
    p.add_argument("--noise-std", type=positive_list(at_most=1000.0, unit="N·m"), default=[], metavar="K[,K...]",
                   help="N·m torque noise weighting the rows: one value or one per joint (default: the method's)")
    # What is known of the payload (identify-payload's flags); left out: the node's parameters.
    p.add_argument("--bounding-box", type=_box, default=[], metavar="X0,Y0,Z0,X1,Y1,Z1",
                   help="m, payload frame: the box holding all of the payload's mass (a negative first corner "
                        "needs the = form: --bounding-box=-0.1,...)")
    p.add_argument("--known-mass", type=number(above=0, at_most=1000.0, unit="kg"), default=0.0, metavar="KG",
                   help="the payload's weighed mass (the node checks it against the rated payload)")
    p.add_argument("--known-mass-std", type=number(above=0, at_most=1000.0, unit="kg"), default=0.0, metavar="KG",
                   help="its standard deviation (default 0.5 %% of it)")
    p.add_argument("--apply", action="store_true", help="send the result to the robot controller (UR/Franka)")
    p.add_argument("--apply-even-if-suspect", action="store_true",
                   help="with --apply: send a SUSPECT or FAILED estimate too (the node refuses it otherwise)")
    # Waits are bounded (a day, an hour): a mistyped 1e6 would otherwise block a script for eleven days.
    p.add_argument("--timeout", type=number(above=0, at_most=86400, unit="s"), default=300.0,
                   help="s to wait for the result")
    p.add_argument("--server-timeout", type=number(above=0, at_most=3600, unit="s"), default=20.0,
                   help="s to wait for the action server")
    p.add_argument("--truth", default=None, help="payload.yaml of the true payload, printed beside the estimate")
    p.add_argument("--out", default=None, help="write result, feedback history and errors to this YAML")


def _box(text: str) -> list[float]:
    """--bounding-box's six numbers (the node checks the corners: payload.priors)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not six comma-separated numbers") from None
    if len(values) != 6 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"'{text}': give six finite numbers X0,Y0,Z0,X1,Y1,Z1 (m)")
    return values


def action_name(namespace: str) -> str:
    ns = namespace.strip("/")
    return f"/{ns}/payload_estimator/identify" if ns else "/payload_estimator/identify"


def feedback_line(fb) -> str:
    p = fb.estimate.payload
    com = ", ".join(millimetres(v, s) for v, s in zip((p.com.x, p.com.y, p.com.z), (p.com_std.x, p.com_std.y,
                                                                                   p.com_std.z)))
    return (f"  t={fb.elapsed:6.2f} s  mass {p.mass:7.3f} ± {p.mass_std:.3f} kg  "
            f"CoM [{com}] mm  σm/m {100 * fb.convergence_measure:.2f} %")


def compare(estimate: dict, truth: dict) -> dict:
    """Errors of mass (kg, %) and CoM (mm) against the truth."""
    m, mt = estimate["mass"], truth["mass"]
    c, ct = np.array(estimate["com"], float), np.array(truth.get("com", [0, 0, 0]), float)   # None -> NaN
    return {"mass_err_kg": float(m - mt), "mass_err_pct": float(100 * (m - mt) / mt),
            "com_err_mm": float(1e3 * np.linalg.norm(c - ct))}


def print_estimate(est: dict, truth: dict | None) -> None:
    s = est["std"]
    rows = [("mass [kg]", est["mass"], s["mass"], truth and truth["mass"])]
    for k, axis in enumerate("xyz"):
        c = est["com"][k]
        rows.append((f"com {axis} [mm]", None if c is None else 1e3 * c, s["com"][k] and 1e3 * s["com"][k],
                     truth and 1e3 * truth["com"][k]))
    for key in ["ixx", "iyy", "izz", "ixy", "ixz", "iyz"]:
        rows.append((f"{key} [kg m²]", est["inertia"][key], s["inertia"][key], truth and truth["inertia"].get(key)))
    print(f"  {'':14s} {'estimate':>12s} {'± σ':>10s}" + (f" {'truth':>12s}" if truth else ""))
    for name, v, sd, tv in rows:
        # Below ROUND_OFF a number is the conversions' round-off (a truth's products of inertia came out as
        # -4.3e-19 kg·m²), not something anyone measured: shown as 0.
        fmt = lambda x: (f"{x if abs(x) > ROUND_OFF else 0.0:12.5g}" if x is not None  # noqa: E731
                         else f"{'undetermined':>12s}")
        sdf = f"{sd:10.3g}" if sd is not None else f"{'n/a':>10s}"
        print(f"  {name:14s} {fmt(v)} {sdf}" + (f" {fmt(tv)}" if truth else ""))


def run(args) -> int:
    # rclpy and the generated action type load only for this subcommand: the other commands run
    # without a sourced ROS environment.
    import rclpy  # noqa: PLC0415 - ROS only for this subcommand
    from rclpy.action import ActionClient  # noqa: PLC0415 - ROS only for this subcommand
    from rclpy.node import Node  # noqa: PLC0415 - ROS only for this subcommand
    from rclpy.signals import SignalHandlerOptions  # noqa: PLC0415 - ROS only for this subcommand

    from payload_id_msgs.action import Identify  # noqa: PLC0415 - ROS only for this subcommand
    from payload_id_ros.conversions import (  # noqa: PLC0415 - ROS only for this subcommand
        parameters_to_dict,
        payload_yaml_context,
    )

    truth = None
    if args.truth:
        truth_doc = read_yaml_mapping(args.truth, "--truth file", "give a payload.yaml")
        truth = PayloadEstimate.from_dict(truth_doc).to_dict()

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)     # our own SIGINT/SIGTERM: _Signals
    signals = _Signals()
    node = Node("payload_id_identify_client")
    history: list[dict] = []
    try:
        client: ActionClient[Identify.Goal, Identify.Result, Identify.Feedback] = ActionClient(
            node, Identify, action_name(args.namespace))
        if not client.wait_for_server(timeout_sec=args.server_timeout):
            raise PayloadIdError(f"no payload_estimator answers on {action_name(args.namespace)}",
                                 "start the cell (make demo, or ros2 launch payload_id_ros identify.launch.py)")

        def on_feedback(msg):
            fb = msg.feedback
            if fb.estimate.method:          # before the excitation starts there is no estimate yet
                print(feedback_line(fb), flush=True)
                p = fb.estimate.payload
                history.append({"elapsed": float(fb.elapsed), "mass": float(p.mass), "mass_std": float(p.mass_std),
                                "com": [float(p.com.x), float(p.com.y), float(p.com.z)],
                                "com_std": [float(p.com_std.x), float(p.com_std.y), float(p.com_std.z)],
                                "inertia": [float(getattr(p, k)) for k in ("ixx", "iyy", "izz")],
                                "inertia_std": [float(getattr(p, f"{k}_std")) for k in ("ixx", "iyy", "izz")],
                                "convergence_measure": float(fb.convergence_measure),
                                # the estimate's own flag: the feedback's elapsed is the goal's clock, the declaration
                                # is dated on joint-state stamps (bench/cell.py declared_estimate)
                                "converged": bool(fb.estimate.converged),
                                "wall": time.monotonic()})   # when it arrived: bench/cell_feedback.py's gaps

        goal = Identify.Goal(method=args.method, trajectory=args.trajectory, max_duration=args.max_duration,
                             stop_when_converged=args.stop_when_converged, apply_to_controller=args.apply,
                             apply_even_if_suspect=args.apply_even_if_suspect, convergence=args.convergence,
                             forgetting=args.forgetting, noise_std=list(args.noise_std),
                             bounding_box=list(args.bounding_box), known_mass=args.known_mass,
                             known_mass_std=args.known_mass_std)
        print(f"identify: goal sent to {action_name(args.namespace)} "
              f"(method {args.method or 'node default'}, trajectory {args.trajectory or 'node default'})", flush=True)
        t0 = time.monotonic()
        # From here a signal no longer interrupts: it is heard by the loops below, which cancel the goal (a goal
        # left running would move the arm with nobody waiting for its answer).
        signals.defer()
        send = client.send_goal_async(goal, feedback_callback=on_feedback)
        _spin_until(node, send, 10.0)
        handle = send.result() if send.done() else None
        if handle is None:
            raise PayloadIdError("the payload_estimator did not answer the goal within 10 s",
                                 "check that the node runs and is not overloaded (ros2 node list)")
        if not handle.accepted:
            raise PayloadIdError("the payload_estimator rejected the goal", "an identification is already running")
        result_future = handle.get_result_async()
        timed_out = False
        gone_since: float | None = None
        while not result_future.done() and signals.received is None:
            rclpy.spin_once(node, timeout_sec=0.1)
            if time.monotonic() - t0 > args.timeout:
                timed_out = True
                break
            # A killed estimator never answers: say so instead of waiting out --timeout.
            gone_since = None if client.server_is_ready() else (gone_since or time.monotonic())
            if gone_since is not None and time.monotonic() - gone_since > SERVER_GONE:
                raise PayloadIdError("the payload_estimator left during the goal (killed?): no answer will come",
                                     "restart it and check its log; the arm may still be playing the excitation")
        if not result_future.done():
            why = f"{signals.name}" if signals.received is not None else f"the {args.timeout:g} s timeout"
            print(f"identify: {why}: cancelling the goal (the arm decelerates to rest) ...", flush=True)
            handle.cancel_goal_async()
            _spin_until(node, result_future, CANCEL_WAIT)
        response = result_future.result() if result_future.done() else None
        if response is None:
            if signals.received is not None:
                raise PayloadIdError(f"the goal was cancelled ({signals.name}) but the payload_estimator did not "
                                     f"answer within {CANCEL_WAIT:g} s", "check the payload_estimator log")
            raise PayloadIdError(f"no result within {args.timeout:g} s" + (" (cancelled)" if timed_out else ""),
                                 "check the payload_estimator log")
        wall = time.monotonic() - t0
        status = STATUS.get(response.status, str(response.status))
        res = response.result
        print(f"identify: {status}: {res.message}", flush=True)
        # An estimate from a motion cut short: the client's or a signal's cancel, or the cell's (aborted with one).
        has_estimate = bool(res.estimate.method)
        partial = status == "canceled" or (status == "aborted" and has_estimate)
        out = {"status": status, "message": res.message, "wall_time_s": wall, "partial": partial,
               "feedback": history}
        if signals.received is not None:
            out["interrupted_by"] = signals.name
        if not has_estimate:
            # Ended before the excitation: no estimate to print or write (the message's empty one is no payload).
            out["estimate"] = None
            _write(args.out, out)
            if status == "aborted":
                raise PayloadIdError(f"identification aborted: {res.message}", "fix the cause named above and retry")
            return 128 + signals.received if signals.received is not None else (0 if status == "succeeded" else 1)
        est = parameters_to_dict(res.estimate.payload)
        out.update({"estimate": est, "method": res.estimate.method, "converged": bool(res.converged),
                    "convergence_time": float(res.convergence_time) if math.isfinite(res.convergence_time) else None,
                    "physically_consistent": bool(res.estimate.physically_consistent),
                    "quality": {"status": res.estimate.quality or "ok", "reasons": list(res.estimate.quality_reasons)},
                    "torque_rmse_before": [float(x) for x in res.torque_rmse_before],
                    "torque_rmse_after": [float(x) for x in res.torque_rmse_after],
                    "applied_to_controller": bool(res.applied_to_controller),
                    # What payload.yaml says of the priors, the physical narrowing and the notes (the result's own).
                    **payload_yaml_context(res.estimate)})
        if est["mass"] is not None and has_estimate:
            if partial:
                print("  partial estimate (the motion was cut short):")
            print_estimate(est, truth)
            if res.torque_rmse_before:
                print("  torque RMSE before [N m]: " + " ".join(f"{x:.3f}" for x in res.torque_rmse_before))
                print("  torque RMSE after  [N m]: " + " ".join(f"{x:.3f}" for x in res.torque_rmse_after))
            ct = out["convergence_time"]
            print(f"  converged: {out['converged']}" + (f" after {ct:.2f} s of motion" if ct is not None else ""))
            if out["quality"]["status"] != "ok":
                print(f"  quality: {out['quality']['status'].upper()}: " + "; ".join(out["quality"]["reasons"]))
            if truth is not None:
                out["truth"] = truth
                out["errors"] = compare(est, truth)
                e = out["errors"]
                print(f"  error: mass {e['mass_err_kg']:+.4f} kg ({e['mass_err_pct']:+.2f} %), "
                      f"CoM {e['com_err_mm']:.2f} mm", flush=True)
        _write(args.out, out)
        if status == "aborted":
            raise PayloadIdError(f"identification aborted: {res.message}", "fix the cause named above and retry")
        if signals.received is not None:
            return 128 + signals.received       # the shell's convention: 130 after SIGINT, 143 after SIGTERM
        return 0 if status == "succeeded" else 1
    except KeyboardInterrupt:                # a signal before the goal was sent, or a second one: leave now
        return 128 + (signals.received or signal.SIGINT)
    finally:
        signals.restore()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def _spin_until(node, future, timeout: float) -> None:
    """Spin `node` until `future` is done or `timeout` s pass (a signal does not end it: the loop asks)."""
    import rclpy  # noqa: PLC0415 - ROS only for this subcommand

    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline and rclpy.ok():
        rclpy.spin_once(node, timeout_sec=min(0.1, max(deadline - time.monotonic(), 0.0)))


class _Signals:
    """SIGINT and SIGTERM for the action client. Until `defer()`: KeyboardInterrupt (nothing sent yet, leave).
    After it: the first one is recorded in `received` for the loops to cancel the goal and print its partial
    estimate; a second one raises KeyboardInterrupt (leave at once)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._deferred = False
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""

    def defer(self) -> None:
        self._deferred = True

    def _on_signal(self, signum, _frame) -> None:
        first = self.received is None
        if first:
            self.received = signum
        if not self._deferred or not first:
            raise KeyboardInterrupt

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _write(path, data) -> None:
    if path:
        atomic_write_yaml(path, data)
