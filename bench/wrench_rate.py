"""Compensated-wrench delivery on the simulated cell (issue 16): 500 Hz sensor samples in, how many come out
of payload_estimator's ~/wrench_compensated at a subscriber, and how late.

Starts the sim_cell (mock_hardware with its F/T sensor, payload_estimator, excitation_player) through the
supervisor on its own ROS domain, identifies the payload once (the compensation needs the F/T parameters),
then samples the two streams RUNS times with test/ros_cell/probe.py's `wrench` command (a subscriber of depth
200, the depth a consumer of every sample needs):

  wrench_out_fraction     of the raw samples heard while both streams ran, the fraction heard compensated (median)
  wrench_latency_ms_p99   99th percentile of (compensated arrival − raw arrival) of one sample, ms (median)

The last stdout line is one JSON object.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from payload_id_ros.demo import unloaded_robot_yaml
from payload_id_ros.supervisor import Supervisor

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "test" / "ros_cell" / "probe.py"     # the same client the cell tests use
RUNS, COUNT = 5, 1500


def _last_json(out: str) -> dict:
    return json.loads([x for x in out.splitlines() if x.startswith("{")][-1])


def main() -> int:
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               ROS_DOMAIN_ID=str(random.Random().randint(102, 200)))
    robot_yaml = unloaded_robot_yaml(REPO / "out" / "demo_cache", "ur10_payload")
    with tempfile.TemporaryDirectory() as tmp:
        sup = Supervisor(cell="sim_cell", robot="ur10", env=env, log_dir=Path(tmp) / "logs", overrides={
            "mock_hardware": {"payload_mass": 3.5, "payload_com": [0.03, -0.02, 0.08]},
            "payload_estimator": {"robot_yaml": str(robot_yaml), "trajectory": "ur10_payload",
                                  "result_path": str(Path(tmp) / "last_payload.yaml")}})
        sup.start()
        try:
            sup.wait_for_log("payload_estimator", "payload estimator ready", 60)
            sup.wait_for_log("excitation_player", "excitation player ready", 60)
            subprocess.run([sys.executable, str(PROBE), "identify", "--rest-window", "0.2"], env=env,
                           capture_output=True, text=True, timeout=120, check=True)
            runs = [_last_json(subprocess.run([sys.executable, str(PROBE), "wrench", "--count", str(COUNT),
                                               "--timeout", "30"], env=env, capture_output=True, text=True,
                                              timeout=60, check=True).stdout) for _ in range(RUNS)]
        finally:
            sup.stop()
    print(json.dumps({"wrench_out_fraction": round(float(np.median([r["out_fraction"] for r in runs])), 4),
                      "wrench_latency_ms_p99": round(float(np.median([r["latency_ms_p99"] for r in runs])), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
