"""Data-layer speed: rosbag2 write/read of 60 s at 500 Hz (6 joints + commanded + wrench), commanded
sampling and the conditioning pipeline on 30 000 samples, the real UR CSV reader.

Prints one JSON object (figure -> median over repeats) as the last stdout line.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from payload_id_core.io import bag as bag_io
from payload_id_core.io.ur_csv import README_DRIVE_GAINS, read_ur_csv
from payload_id_core.signals import commanded, conditioning
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording, WrenchSamples

REPEATS = 3
NAMES = [f"joint{i}" for i in range(1, 7)]
# The real recording is found like the tests find it (tools/ur10e_data.py); without it that one figure is left out.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ur10e_data  # noqa: E402 - found through the sys.path entry above

UR_FILE = ur10e_data.default_data_dir() / "ur-20_02_19_15harm50sec.csv"


def recording(duration=60.0, rate=500.0, cmd_rate=100.0, delay=0.004):
    t_cmd = np.arange(0.0, duration, 1.0 / cmd_rate)
    w = 2 * np.pi * 0.1 * np.arange(1, 7)

    def motion(t):
        return (0.5 * np.sin(np.outer(t, w)), 0.5 * w * np.cos(np.outer(t, w)), -0.5 * w**2 * np.sin(np.outer(t, w)))

    traj = CommandedTrajectory(1.0, NAMES, t_cmd, *motion(t_cmd))
    t = 1.0 + np.arange(int(duration * rate)) / rate
    rng = np.random.default_rng(0)
    q = motion(t - 1.0 - delay)[0] + rng.normal(0, 1e-5, (t.size, 6))
    joints = JointSamples(t, NAMES, q, motion(t - 1.0 - delay)[1], rng.normal(size=(t.size, 6)))
    wrench = WrenchSamples(t, "ft", rng.normal(size=(t.size, 3)), rng.normal(size=(t.size, 3)))
    return Recording(joints, [traj], wrench)


def timed(fn):
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    rec = recording()
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for storage in ("mcap", "sqlite3"):
            path = Path(tmp) / storage
            figures[f"write_bag_60s_500hz_{storage}_s"], _ = timed(partial(bag_io.write_bag, path, rec, storage))
            figures[f"read_bag_60s_500hz_{storage}_s"], _ = timed(partial(bag_io.read_bag, path))
    t = rec.joints.t
    figures["sample_commanded_30000_ms"] = 1e3 * timed(lambda: commanded.sample_commanded(rec.commanded, t))[0]
    sec, sig = timed(lambda: conditioning.conditioned_signals(rec, NAMES, source="commanded", delay="estimate"))
    figures["conditioned_signals_commanded_estimate_delay_60s_s"] = sec
    figures["delay_error_ms"] = abs(sig.delay_used - 0.004) * 1e3
    figures["conditioned_signals_measured_60s_s"], _ = timed(
        lambda: conditioning.conditioned_signals(rec, NAMES, source="measured"))
    if UR_FILE.is_file():
        figures["read_ur_csv_s"], _ = timed(lambda: read_ur_csv(UR_FILE, README_DRIVE_GAINS))
    else:
        why = ur10e_data.data_missing_reason(UR_FILE.parent)
        print(f"bench data_io: read_ur_csv_s left out: {why}", file=sys.stderr)
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
