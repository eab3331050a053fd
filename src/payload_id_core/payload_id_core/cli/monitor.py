"""`payload-id monitor`: replay a recording through the payload monitor offline, as the node would run it.

    payload-id monitor --urdf U --robot robot.yaml (--bag B | --csv-ur CSV) [--frame F] [--payload P.yaml]
                       --out events.yaml [--plot events.png]

The joint states go to monitor.replay (the payload_estimator's monitor-mode blocks, the same LiveMonitor), started
on --payload's estimate (the one an identify goal left; none: nothing carried). events.yaml holds `events:`, a list
of {kind, t_change, t_change_located, t_alarm, delta_mass, delta_mass_std, reason} (a contact's mass change is null;
t_change_located false: the change came while the monitor was disarmed and its time could not be located, t_change is
the earliest it can have come and the reason says so; the plot shades its span), `started_on:` (a --payload that is not
ok is not started on, as the node does not, and a warning says so), and `payload:`,
what is carried at the end, with σ as ~/payload would say it (at least half the monitor's `floor`, the smallest mass
change its alarm was sure to see over the last samples: a smaller one cannot be excluded; no more than half what a
change can move the mass, LiveMonitor.hidden_change; `mass_std_fit` is the re-estimate's own). The monitor's loads
are bounded by the URDF robot's rated payload (payload.mass_limit.rated_payload;
the node's rated_payload_kg). --plot draws the residual per joint with each event marked and labelled, and the carried
mass with its ±2σ band. `undecided:` (same keys; kind null when nothing was fitted yet) lists the changes seen but not
decided when the recording ended (a load is named once it holds, which needs what comes after it). Bad input
(PayloadIdError) is one line and exit 2, checked before anything is written; both files are written atomically.
"""

from __future__ import annotations

import argparse
import io
import math
import sys

import numpy as np

from payload_id_core.cli.inputs import add_recording_arguments, add_urdf_argument, read_runs
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_bytes, atomic_write_yaml, check_output_file, read_yaml_mapping
from payload_id_core.monitor.detect import Event
from payload_id_core.monitor.replay import Replay, replay
from payload_id_core.monitor.state import Undecided
from payload_id_core.payload.mass_limit import rated_payload
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id import RobotIdentification


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_urdf_argument(parser)
    parser.add_argument("--robot", required=True, help="robot.yaml of the unloaded robot (payload-id identify-robot)")
    add_recording_arguments(parser, what="the task to replay")
    parser.add_argument("--frame", help="payload frame (default: --payload's, else the child link of the last joint)")
    parser.add_argument("--payload", help="payload.yaml carried at the start (default: nothing carried)")
    parser.add_argument("--out", required=True, help="events.yaml to write")
    parser.add_argument("--plot", help="events.png: residual per joint with the events, carried mass ±2σ")


def _number(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)


def event_dict(e: Event) -> dict:
    return {"kind": e.kind.value, "t_change": _number(e.t_change), "t_change_located": bool(e.t_change_located),
            "t_alarm": _number(e.t_alarm), "delta_mass": _number(e.delta_mass),
            "delta_mass_std": _number(e.delta_mass_std), "reason": e.reason}


def undecided_dict(u: Undecided) -> dict:
    return {"kind": None if u.kind is None else u.kind.value, "t_change": _number(u.t_change),
            "t_change_located": bool(u.t_change_located), "t_alarm": _number(u.t_alarm),
            "delta_mass": _number(u.delta_mass), "delta_mass_std": _number(u.delta_mass_std), "reason": u.reason}


def payload_dict(result: Replay) -> dict | None:
    est = result.final_payload()
    if est is None:
        return None
    std = est.readable_std()
    known = est.readable_identifiable()
    com = est.com if known[1:4].all() and est.mass > 0 else None
    fit = result.state.to_estimate(result.frame) if result.state is not None else est
    return {"frame": est.frame, "mass": _number(est.mass), "mass_std": _number(float(std[0])),
            "mass_std_fit": _number(float(np.sqrt(max(float(fit.covariance[0, 0]), 0.0)))),
            "floor": _number(result.floor_kg),
            "com": None if com is None else [_number(c) for c in com],
            "com_std": None if com is None else [_number(float(s)) for s in std[1:4]],
            "determined": bool(result.state is not None and result.state.determined), "converged": bool(est.converged),
            "quality": est.quality.value}


def _check_outputs(out: str, plot: str | None) -> None:
    """Both files refused before any work: events.yaml was written before a --plot under a file failed (exit 2 with
    the yaml left behind), and a --plot naming --out replaced events.yaml with the picture (exit 0)."""
    if plot is not None and not plot.lower().endswith(".png"):
        raise PayloadIdError(f"--plot {plot} is not a .png file", "name the plot something.png")
    out_path = check_output_file(out)
    if plot is not None and check_output_file(plot).resolve() == out_path.resolve():
        raise PayloadIdError(f"--plot {plot} is --out's file", "give the plot and events.yaml different names")


def _started_on(payload: PayloadEstimate | None, path: str | None) -> tuple[str, bool]:
    """(what the monitor starts on, whether that is not what was given). A --payload that is not ok is not started on
    (LiveMonitor.new_monitor: the node starts only on an ok estimate): 01_31-load replayed with a suspect 2.788 kg
    payload started from nothing carried without a word, and named `picked` +3.335 kg for the part already on."""
    if payload is None:
        return "nothing carried (no --payload)", False
    if payload.quality is Quality.OK:
        return f"--payload {path}: {payload.mass:.3f} kg", False
    why = "; ".join(payload.quality_reasons) or "no reason given"
    return (f"nothing carried: --payload {path} ({payload.mass:.3f} kg) is {payload.quality.value} ({why}), and the "
            "monitor starts only on an ok payload, as the node does"), True


def run(args: argparse.Namespace) -> int:
    _check_outputs(args.out, args.plot)
    model = RobotModel.from_urdf(args.urdf)
    robot = RobotIdentification.load(args.robot, model)
    payload = (PayloadEstimate.from_dict(read_yaml_mapping(args.payload, "payload file",
                                                           "give --payload a payload.yaml (identify-payload)"))
               if args.payload else None)
    frame = model.payload_frame(args.frame or (payload.frame if payload is not None else None))
    if payload is not None and model.payload_frame(payload.frame) != frame:
        raise PayloadIdError(f"--payload is given in {payload.frame}, --frame is {frame}",
                             "give --frame the payload file's frame, or leave it out")
    recording = read_runs(args, model, robot).run
    started_on, not_given = _started_on(payload, args.payload)
    if not_given:
        print(f"warning: the monitor starts on {started_on}", file=sys.stderr)
    # The rated payload of the URDF's robot, as the node's rated_payload_kg (config/*.yaml) bounds the monitor's
    # loads: without any bound the replay named `picked` +12197 kg on the real UR10e's jointwise-joint_6. A robot the
    # name does not give (0) is bounded by its joints' holding capacity (mass_limit.monitor_max_mass), as the node.
    result = replay(model, robot, frame, recording.joints, payload, rated_payload(model.model.name) or 0.0)
    if result.state is None:
        raise PayloadIdError(f"{recording.source}: no joint state the monitor could use",
                             "give a recording with finite joint states in time order")
    carried = payload_dict(result)
    assert carried is not None       # result.state is not None
    doc = {"events": [event_dict(e) for e in result.events],
           "undecided": [undecided_dict(u) for u in result.undecided], "payload": carried,
           "paused": result.paused, "recording": str(recording.source), "frame": frame, "started_on": started_on}
    png = _plot(result, model.joint_names) if args.plot else None
    atomic_write_yaml(args.out, doc)
    if png is not None:
        atomic_write_bytes(args.plot, png)
    print(f"{len(result.events)} events ({', '.join(e.kind.value for e in result.events) or 'none'}); carried at the "
          f"end: {carried['mass']:.3f} ± {carried['mass_std']:.3f} kg (the alarm's floor there "
          f"{result.floor_kg:.3f} kg) -> {args.out}")
    for e in result.events:
        print(f"  {e.kind.value} {e.when_text}: {e.mass_change_text} ({e.reason})")
    for u in result.undecided:
        print(f"  {u.t_change:.3f} s {'change' if u.kind is None else u.kind.value}, {u.reason}")
    return 0


def _plot(result: Replay, joint_names: list[str]) -> bytes:
    import matplotlib  # noqa: PLC0415 - heavy, and only when a plot is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - after the backend is chosen

    n = result.residual.shape[1]
    fig, axes = plt.subplots(n + 1, 1, figsize=(12, 1.6 * (n + 1)), sharex=True)
    t = result.t
    for j in range(n):
        axes[j].plot(t, result.residual[:, j], lw=0.7)
        axes[j].set_ylabel(f"{joint_names[j]}\nN·m", fontsize=7)
    colours = {"picked": "tab:green", "placed": "tab:orange", "changed": "tab:purple", "contact": "tab:red"}
    for e in result.events:
        for ax in axes:
            if e.t_change_located:
                ax.axvline(e.t_change, color=colours[e.kind.value], lw=0.8, ls="--")
            else:       # came somewhere in the span, not at its start: the span is drawn, no line
                ax.axvspan(e.t_change, e.t_alarm, color=colours[e.kind.value], alpha=0.12, lw=0)
        label = e.kind.value if e.t_change_located else f"{e.kind.value} (time not located)"
        axes[0].annotate(label, (e.t_change, 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                         color=colours[e.kind.value], rotation=90, va="top")
    ax = axes[-1]
    ax.plot(t, result.mass, color="k", lw=0.8)
    ax.fill_between(t, result.mass - 2 * result.mass_std, result.mass + 2 * result.mass_std, color="0.8")
    ax.set_ylabel("carried\nkg ±2σ", fontsize=7)
    ax.set_xlabel("time [s]")
    axes[0].set_title("monitor residual per joint, events, carried mass")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()
