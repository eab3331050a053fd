"""Fault injection across processes (issue 32 items 1, 2, 4): SIGINT, SIGTERM and SIGKILL to each process of the
identify cell (payload_estimator, excitation_player, the robot's driver: test/ros_cell/fake_hardware.py, and the
command-line client `payload-id identify --ros`) at each of five points of a goal (sent, moving to the start pose,
early, middle and end of the excitation), on one shared cell (test/ros_cell/signal_cell.py says how each case is
judged). CI runs a subset (test/test_signal_faults.py); this runs the whole matrix, or the cases named:

  signal_faults.py [--targets a,b] [--signals SIGINT,...] [--points sent,...]

One JSON line per case, then the figures: cases tried, clean, defects by class, tracebacks, goals unanswered,
runs where the arm moved on (> 2 s) after its goal ended, and after the signal itself (a killed player is
noticed after its 2 s of silence). Wall-clock figures: inflated on a loaded machine.
"""
import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))

from ros_cell.signal_cell import POINTS, SIGNALS, TARGETS, SignalCell  # noqa: E402 - after the path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--signals", default=",".join(SIGNALS))
    ap.add_argument("--points", default=",".join(POINTS))
    args = ap.parse_args()
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    defects: Counter = Counter()
    moving_after_signal = []            # s the arm moved after the signal, per case reached
    tried = clean = unreached = 0
    with tempfile.TemporaryDirectory() as tmp:
        cell = SignalCell(env, Path(tmp))
        try:
            for target in args.targets.split(","):
                for signame in args.signals.split(","):
                    for point in args.points.split(","):
                        case = cell.run(target, signame, point)
                        print(json.dumps(case.summary()), flush=True)
                        if not case.reached:
                            unreached += 1
                            continue
                        tried += 1
                        moving_after_signal.append(case.summary()["moving_after_signal_s"])
                        found = case.defects()
                        clean += not found
                        defects.update(f"{c} ({target} {signame})" for c in found)
        finally:
            cell.close()
    print(json.dumps({"cases_tried": tried, "clean": clean, "points_not_reached": unreached,
                      "defects_by_class": dict(defects),
                      "tracebacks": sum(v for k, v in defects.items() if k.startswith("traceback")),
                      "unanswered": sum(v for k, v in defects.items() if k.startswith("unanswered")),
                      "arm_moving": sum(v for k, v in defects.items() if k.startswith("arm_moving")),
                      "arm_moving_after_signal_over_2s": sum(m > 2.0 for m in moving_after_signal),
                      "arm_moving_after_signal_max_s": max(moving_after_signal, default=0.0)}))


if __name__ == "__main__":
    main()
