"""Ending the tests' child processes: each is started in a session of its own (start_new_session), so its process
group holds it and whatever it started; the group is sent SIGINT (a ROS node's clean shutdown), given a grace period,
then SIGKILLed. The one copy of that loop for test/ and test/ros_cell (h198: seven copies before)."""
from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable


def stop_groups(procs: Iterable[subprocess.Popen], grace: float = 5.0, kill_wait: float | None = 5.0) -> bool:
    """SIGINT the process group of each of `procs` still running, all at once (their shutdowns overlap), then wait
    for each up to `grace` s from when it is reached; a group still alive then is SIGKILLed and waited for up to
    `kill_wait` s (None: as long as it takes; a process that outlives it raises subprocess.TimeoutExpired). A process
    already ended is only reaped. True when every one ended within its grace (none was killed)."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    clean = True
    for proc in procs:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            clean = False
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=kill_wait)
    return clean


def stop_group(proc: subprocess.Popen, grace: float = 5.0, kill_wait: float | None = 5.0) -> bool:
    """stop_groups of the one process `proc`."""
    return stop_groups([proc], grace, kill_wait)
