"""A small stand-in for `ros2 launch` where `launch` cannot be installed (make demo, end-to-end tests).

It starts the executables of a cell (payload_id_ros.cell.CELLS, the table the launch files mirror)
with the same parameter files, on loopback-only discovery and its own ROS_DOMAIN_ID, writes each
node's output to a log file, and stops every process it started by PID: SIGINT first (the nodes
stop the arm and shut down cleanly), SIGKILL after a timeout.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from payload_id_core.errors import PayloadIdError
from payload_id_ros.cell import CELLS, NodeSpec, clock_parameters, parameter_files


def cell_environment(domain_id: int | None = None, base: dict | None = None) -> dict:
    """Environment for the cell's processes: loopback discovery, a domain of its own (DESIGN.md)."""
    env = dict(os.environ if base is None else base)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    elif "ROS_DOMAIN_ID" not in env:
        env["ROS_DOMAIN_ID"] = str(random.Random().randint(1, 100))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def executable_path(name: str) -> str:
    """The console script next to this interpreter (the venv's, so its bootstrapper sets the libraries)."""
    path = Path(sys.executable).parent / name
    if not path.is_file():
        raise PayloadIdError(f"executable {name} is not installed next to {sys.executable}",
                             "run make setup (pip install -e src/payload_id_ros)")
    return str(path)


@dataclass
class Started:
    spec: NodeSpec
    proc: subprocess.Popen
    log: Path


@dataclass
class Supervisor:
    cell: str = "sim_cell"
    robot: str = "ur10"
    namespace: str = ""
    overrides: dict[str, dict] = field(default_factory=dict)   # node name -> {parameter: value}
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))   # made the cell's in __post_init__
    log_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="payload_id_cell_")))
    started: list[Started] = field(default_factory=list)
    # On simulated time: mock_hardware owns /clock and the other nodes run on it (cell.clock_parameters).
    sim_time: bool = False

    def __post_init__(self) -> None:
        if self.cell not in CELLS:
            raise PayloadIdError(f"unknown cell '{self.cell}'", f"use one of: {', '.join(CELLS)}")
        clock_parameters(self.cell, CELLS[self.cell][0], self.sim_time)   # a cell with no clock owner: refused now
        self.env = cell_environment(base=self.env)
        self.log_dir = Path(self.log_dir)        # a str is accepted too
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def command(self, spec: NodeSpec) -> list[str]:
        """The command line `ros2 launch` would build for this node: parameter files, then overrides."""
        cmd = [executable_path(spec.executable), "--ros-args", "-r", f"__node:={spec.name}"]
        if self.namespace:
            cmd += ["-r", f"__ns:=/{self.namespace.strip('/')}"]
        for f in parameter_files(spec, self.robot):
            cmd += ["--params-file", str(f)]
        extra = {**clock_parameters(self.cell, spec, self.sim_time), **self.overrides.get(spec.name, {})}
        if extra:
            path = self.log_dir / f"{spec.name}.overrides.yaml"
            path.write_text(yaml.safe_dump({f"/**/{spec.name}": {"ros__parameters": dict(extra)}}))
            cmd += ["--params-file", str(path)]
        return cmd

    def start(self, only: list[str] | None = None) -> Supervisor:
        for spec in CELLS[self.cell]:
            if only is not None and spec.name not in only:
                continue
            log = self.log_dir / f"{spec.name}.log"
            with open(log, "a") as out:
                proc = subprocess.Popen(self.command(spec), env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            self.started.append(Started(spec, proc, log))
        return self

    def pid(self, name: str) -> int:
        return self._get(name).proc.pid

    def log_text(self, name: str) -> str:
        return self._get(name).log.read_text(errors="replace")

    def _get(self, name: str) -> Started:
        for s in self.started:
            if s.spec.name == name:
                return s
        raise KeyError(name)

    def wait_for_log(self, name: str, text: str, timeout: float = 30.0) -> None:
        """Block until the node's log contains `text` (its ready line); PayloadIdError if it dies or times out."""
        s = self._get(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in s.log.read_text(errors="replace"):
                return
            if s.proc.poll() is not None:
                raise PayloadIdError(f"{name} exited with code {s.proc.returncode}: {self.log_text(name)[-2000:]}",
                                     "see its log")
            time.sleep(0.1)
        raise PayloadIdError(f"{name} did not print '{text}' within {timeout:g} s: {self.log_text(name)[-2000:]}",
                             "see its log")

    def dead(self) -> list[str]:
        return [s.spec.name for s in self.started if s.proc.poll() is not None]

    def stop(self, timeout: float = 5.0, only: list[str] | None = None) -> dict[str, int]:
        """SIGINT every process group we started (last started first), SIGKILL those still alive after `timeout`.
        `only`: stop just these nodes (e.g. to restart one)."""
        chosen = [s for s in self.started if only is None or s.spec.name in only]
        for s in reversed(chosen):
            if s.proc.poll() is None:
                try:
                    os.killpg(s.proc.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        codes = {}
        for s in reversed(chosen):
            try:
                codes[s.spec.name] = s.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(s.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                codes[s.spec.name] = s.proc.wait(timeout=5)
        self.started = [s for s in self.started if s not in chosen]
        return codes

    def __enter__(self) -> Supervisor:
        return self.start() if not self.started else self

    def __exit__(self, *exc) -> None:
        self.stop()
