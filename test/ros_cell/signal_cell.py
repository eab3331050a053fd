"""Fault injection across processes (issue 32 item 4): a signal to one process of the identify cell at one point of
a goal, and what the cell did about it.

The cell: payload_estimator + excitation_player (the supervisor, config/ur10.yaml, as the launch file starts them),
the kinematic fake robot (fake_hardware.py: it follows the commanded trajectory and publishes /joint_states) and a
watcher (probe.py watch: the trajectories sent, when the arm last moved). The client is probe.py identify, or, for
target "cli", `payload-id identify --ros --out`. One case: start a goal, wait for its point, send the signal to the
target, wait for the goal's end, and judge it (`Case.defects`):

  traceback        a Traceback in a node's log or the client's stderr
  exit_code        a signalled node or CLI (SIGINT/SIGTERM) did not exit 0, 130 or 143 (the CLI: 128 + the signal)
  unanswered       the goal was never answered by a live estimator (a killed estimator cannot answer)
  false_success    the player or the driver was lost before the excitation's end, and the goal succeeded
  arm_moving       the arm moved more than AT_REST_WITHIN s after the signal or after the goal's answer
  result_torn      the result file is unreadable or lacks its status / partial fields
  not_partial      a goal cut short answered or saved without saying its estimate is partial
  cli_output       the CLI, signalled, printed no partial estimate or wrote no --out marked partial

A shared cell serves every case: a process that was signalled is restarted before the next.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from ros_cell.assets import make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines
from ros_cell.process_group import stop_group

from payload_id_ros.supervisor import Supervisor

HERE = Path(__file__).parent
TARGETS = ("payload_estimator", "excitation_player", "hardware", "cli")
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
# Points of a goal: sent (before any motion), moving to the start pose, early in the excitation, mid-excitation,
# in its last moments (the settle and the final estimate).
POINTS = ("sent", "to_start", "early", "middle", "end")
AT_REST_WITHIN = 2.0        # s
TRAJECTORY_S = 3.0
MASS = 2.0
GOAL_END = ("aborted:", "excitation finished", "converged; motion", "cancelled after", "cancelled before")


def _payload_id() -> str:
    return str(Path(sys.executable).with_name("payload-id"))


@dataclass
class Case:
    target: str
    signal: str
    point: str
    reached: bool = False                   # the point was reached and the signal sent
    signal_wall: float = 0.0
    answer_wall: float | None = None        # when the client heard the answer (or the goal's end was logged)
    status: str | None = None
    message: str = ""
    exit_code: int | None = None
    last_moving_wall: float = 0.0
    trajectories: int = 0
    result: dict | None = None              # the result file after the case (None: absent)
    result_changed: bool = False
    cli_out: dict | None = None
    cli_stdout: str = ""
    client_exit: int | None = None
    client_stderr: str = ""
    tracebacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def moving_after(self) -> float:
        """s the arm moved after the later of the signal and the goal's answer."""
        ref = max(self.signal_wall, self.answer_wall or 0.0)
        return max(0.0, self.last_moving_wall - ref)

    def defects(self) -> list[str]:
        if not self.reached:
            return []
        out = []
        killed = self.signal == "SIGKILL"
        if self.tracebacks:
            out.append("traceback")
        # The driver here is the test's fake robot: its exit code is not the product's (mock_hardware keeps rclpy's
        # handlers); a traceback of it still counts.
        if not killed and self.target != "hardware" and self.exit_code not in (0, 130, 143):
            out.append("exit_code")
        estimator_killed = killed and self.target == "payload_estimator"
        if self.answer_wall is None and not estimator_killed:
            out.append("unanswered")
        # The motion was cut short before its end by the player's or the driver's loss: never a success.
        if self.target in ("excitation_player", "hardware") and self.point != "end" and self.status == "succeeded":
            out.append("false_success")
        if self.moving_after > AT_REST_WITHIN:
            out.append("arm_moving")
        if self.result is not None and ("status" not in self.result or "partial" not in self.result
                                        or "mass" not in self.result):
            out.append("result_torn")
        cut_short = self.status in ("canceled", "aborted")
        if cut_short and self.result_changed and self.result is not None and not self.result.get("partial"):
            out.append("not_partial")
        if self.target == "cli" and not killed and self.status in ("canceled", "aborted"):
            has_estimate = self.cli_out is not None and self.cli_out.get("estimate") is not None
            before_motion = "before the excitation started" in self.message
            if self.cli_out is None or not self.cli_out.get("partial") or \
                    (has_estimate and "partial estimate" not in self.cli_stdout) or (before_motion and has_estimate):
                out.append("cli_output")
        return out

    def summary(self) -> dict:
        return {"target": self.target, "signal": self.signal, "point": self.point, "reached": self.reached,
                "status": self.status, "message": self.message[:160], "exit_code": self.exit_code,
                "moving_after_s": round(self.moving_after, 2),
                "moving_after_signal_s": round(max(0.0, self.last_moving_wall - self.signal_wall), 2),
                "answered": self.answer_wall is not None,
                "partial": None if self.result is None else self.result.get("partial"),
                "defects": self.defects(), "notes": self.notes}


class SignalCell:
    """The shared cell; `run(target, signal, point)` plays one case."""

    def __init__(self, env: dict, workdir: Path) -> None:
        self.env, self.dir = env, workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        make_trajectory(self.dir / "traj.yaml", duration=TRAJECTORY_S)
        make_robot_yaml(self.dir / "robot.yaml")
        self.result_path = self.dir / "result.yaml"
        self.sup = Supervisor(cell="identify", robot="ur10", env=env, log_dir=self.dir / "logs",
                              overrides={"payload_estimator": {"robot_yaml": str(self.dir / "robot.yaml"),
                                                               "trajectory": str(self.dir / "traj.yaml"),
                                                               "result_path": str(self.result_path)}})
        self.fake: subprocess.Popen | None = None
        self.children: list[subprocess.Popen] = []     # every process started here, ended by PID in close()
        self.log_offsets: dict[str, int] = {}

    # -- processes ----------------------------------------------------------------------------------
    def _spawn(self, *args: str, **kw) -> subprocess.Popen:
        # stderr goes to a file, never an undrained pipe: a child whose rcl or DDS log lines (stale shared-memory
        # ports after a SIGKILL case) filled a 64 KiB pipe would block mid-write, and not end after SIGINT.
        err_path = self.dir / "logs" / f"child-{len(self.children)}.err"
        err_path.parent.mkdir(parents=True, exist_ok=True)
        with err_path.open("w") as err:
            proc = subprocess.Popen(list(args), env=self.env, stdout=subprocess.PIPE, stderr=err, text=True,
                                    start_new_session=True, **kw)
        proc.stderr_path = err_path  # type: ignore[attr-defined]
        self.children.append(proc)
        return proc

    def ensure(self) -> None:
        """Every process of the cell up and ready (those a case ended restarted)."""
        restart_ended(self.sup)
        if self.fake is None or self.fake.poll() is not None:
            self.fake = self._spawn(sys.executable, str(HERE / "fake_hardware.py"), "normal", "ur10", str(MASS))
            line = self.fake.stdout.readline() if self.fake.stdout else ""
            if "fake hardware ready" not in line:
                raise RuntimeError(f"fake hardware did not start: {line}")

    def _restart_fake(self) -> None:
        if self.fake is not None and self.fake.poll() is None:
            stop_group(self.fake, grace=5.0, kill_wait=5.0)
        self.fake = None

    def close(self) -> None:
        self.sup.stop()
        for proc in self.children:      # one after the other, each given its grace
            if proc.poll() is None:
                stop_group(proc, grace=5.0, kill_wait=5.0)

    def _log_since(self, node: str) -> str:
        try:
            return self.sup.log_text(node)[self.log_offsets.get(node, 0):]
        except KeyError:
            return ""

    # -- one case -------------------------------------------------------------------------------------
    def run(self, target: str, signame: str, point: str, client_kind: str = "") -> Case:
        """`client_kind`: "cli" or "probe" (default: the CLI when it is the target, else the probe)."""
        client_kind = client_kind or ("cli" if target == "cli" else "probe")
        if point == "to_start":
            self._restart_fake()         # back at its rest pose, away from the start pose: the goal moves there
        self.ensure()
        case = Case(target, signame, point)
        for node in ("payload_estimator", "excitation_player"):
            self.log_offsets[node] = len(self.sup.log_text(node))
        before = self.result_path.read_bytes() if self.result_path.exists() else None
        watcher = self._spawn(sys.executable, str(HERE / "probe.py"), "watch")
        assert watcher.stdout is not None
        watcher.stdout.readline()                    # {"watching": true}
        time.sleep(1.0)                              # its subscriptions matched (loopback discovery)
        out_file = self.dir / "cli_out.yaml"
        out_file.unlink(missing_ok=True)
        if client_kind == "cli":
            client = self._spawn(_payload_id(), "identify", "--ros", "--method", "direct-rls", "--out", str(out_file))
        else:
            client = self._spawn(sys.executable, str(HERE / "probe.py"), "identify", "--method", "direct-rls",
                                 "--rest-window", "0.2", "--timeout", "40", "--until-server-gone")
        wread, cread = OutputReader(watcher), OutputReader(client)
        if point == "sent":
            # The probe says so just before it sends; the CLI as it sends.
            marker = "goal sent" if client_kind == "cli" else "trajectory_publishers"
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline and marker not in cread.poll() and client.poll() is None:
                time.sleep(0.02)
            case.reached = marker in cread.text and client.poll() is None
        else:
            # The excitation is the trajectory of its duration; the move to the start pose comes before it.
            def wanted() -> dict | None:
                for t in _trajs(wread.poll()):
                    if (abs(t["t_end"] - TRAJECTORY_S) < 0.05) is (point != "to_start"):
                        return t
                return None

            deadline = time.monotonic() + 40
            while time.monotonic() < deadline and wanted() is None and client.poll() is None:
                cread.poll()
                time.sleep(0.02)
            got = wanted()
            if got is not None:
                lag = {"to_start": 0.3, "early": 0.6, "middle": TRAJECTORY_S / 2, "end": TRAJECTORY_S + 0.25}[point]
                time.sleep(max(0.0, got["stamp"] + lag - time.time()))
                case.reached = client.poll() is None
        if not case.reached:
            case.notes.append(f"point not reached ({len(_trajs(wread.text))} trajectories, client exit "
                              f"{client.poll()})")
        if case.reached:
            pid = self._pid(target, client)
            case.signal_wall = time.time()
            os.killpg(pid, SIGNALS[signame])
            case.exit_code = self._wait_target(target, client, signame)
            if target == "hardware" and self.fake is not None and self.fake.stderr is not None:
                err = self.fake.stderr.read()
                if "Traceback" in err:
                    case.tracebacks.append("hardware: " + err[-1500:])
        # The goal's end: the client's answer (a live one) or the estimator's log line (the client killed).
        stdout, stderr = self._finish_client(client, cread)
        case.client_exit, case.client_stderr = client.returncode, stderr
        case.cli_stdout = stdout if client_kind == "cli" else ""
        if client_kind == "cli":
            if case.exit_code is None and client.returncode is not None:
                case.exit_code = client.returncode
            if out_file.exists():
                case.cli_out = yaml.safe_load(out_file.read_text())
                case.status = case.cli_out.get("status")
                case.message = case.cli_out.get("message", "")
            if any(x.startswith(("identify: succeeded", "identify: canceled", "identify: aborted"))
                   for x in stdout.splitlines()):
                case.answer_wall = time.time()
        else:
            final = next((d for d in json_lines(stdout) if "status" in d), None)
            if final is not None:
                case.status, case.message = final["status"], final.get("message", "")
                case.answer_wall = time.time()
        if case.answer_wall is None:
            # The client could not hear it (killed): the estimator's log says whether the goal was ended.
            deadline = time.monotonic() + TRAJECTORY_S + 12
            while time.monotonic() < deadline:
                if any(k in self._log_since("payload_estimator") for k in GOAL_END):
                    case.answer_wall = time.time()
                    case.notes.append("answered to a dead client (estimator log)")
                    break
                if "payload_estimator" in self.sup.dead():
                    break
                time.sleep(0.1)
        elif target == "cli" and case.status is None:
            case.notes.append("no --out written")
        time.sleep(AT_REST_WITHIN + 0.5)               # the rest window after the answer
        os.killpg(watcher.pid, signal.SIGINT)
        wout = wread.rest()
        final_watch = next((d for d in json_lines(wout) if "last_moving_wall" in d), {})
        # The watcher streams one line per trajectory and one per 0.1 s of motion as it hears them; its summary comes
        # only if it ends within 10 s of SIGINT. Twice in CI's wall-clock phase (after the other ROS modules) the
        # summary was missing on this machine: the trajectories and the last motion are then read from the streamed
        # lines (within 0.1 s), and the case says so.
        streamed_moving = [float(d["moving"]) for d in json_lines(wout) if "moving" in d]
        case.last_moving_wall = max([float(final_watch.get("last_moving_wall", 0.0)), *streamed_moving])
        case.trajectories = max(len(final_watch.get("trajectories", [])), len(_trajs(wout)))
        if not final_watch:
            case.notes.append("the watcher's summary is missing (not ended within 10 s of SIGINT): trajectories "
                              "and the arm's last motion read from its streamed lines; its stderr ends: "
                              + wread.stderr()[-400:])
        if case.answer_wall is not None and case.answer_wall < case.signal_wall:
            case.answer_wall = case.signal_wall
        after = self.result_path.read_bytes() if self.result_path.exists() else None
        case.result_changed = after != before
        if after is not None:
            try:
                case.result = yaml.safe_load(after)
            except yaml.YAMLError:
                case.result = {}
        for node in ("payload_estimator", "excitation_player"):
            if "Traceback" in self._log_since(node):
                case.tracebacks.append(node)
        if "Traceback" in stderr:
            case.tracebacks.append("client")
        return case

    def player_log_since_case(self) -> str:
        """The excitation player's log since the last case started."""
        return self._log_since("excitation_player")

    def _pid(self, target: str, client: subprocess.Popen) -> int:
        if target == "cli":
            return client.pid
        if target == "hardware":
            assert self.fake is not None
            return self.fake.pid
        return self.sup.pid(target)

    def _wait_target(self, target: str, client: subprocess.Popen, signame: str) -> int | None:
        """The signalled process's exit code (None: still alive after 20 s, then killed)."""
        if target == "cli":
            return None                         # read when the client ends
        proc = self.fake if target == "hardware" else self.sup._get(target).proc
        assert proc is not None
        try:
            return proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
            return None

    def _finish_client(self, client: subprocess.Popen, reader: OutputReader) -> tuple[str, str]:
        try:
            client.wait(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait(timeout=5)
        out = reader.rest()
        return out, reader.stderr()


READY = {"payload_estimator": "payload estimator ready", "excitation_player": "excitation player ready"}


def restart_ended(sup: Supervisor, timeout: float = 90.0) -> list[str]:
    """Every node of the identify cell that has ended (a signal, a crash) started again, with the parameters it was
    started with, and waited for until its log says it is ready (RuntimeError if it does not within `timeout` s).
    Returns the nodes restarted."""
    names = {s.spec.name for s in sup.started if s.proc.poll() is None}
    gone = [s for s in sup.started if s.proc.poll() is not None]
    sup.started = [s for s in sup.started if s not in gone]
    restarted = []
    for node, ready in READY.items():
        if node not in names:
            log = sup.log_dir / f"{node}.log"
            before = log.read_text(errors="replace").count(ready) if log.exists() else 0
            sup.start(only=[node])
            deadline = time.monotonic() + timeout
            while sup.log_text(node).count(ready) <= before:
                if time.monotonic() > deadline or node in sup.dead():
                    raise RuntimeError(f"{node} did not start: {sup.log_text(node)[-2000:]}")
                time.sleep(0.1)
            restarted.append(node)
    return restarted


def _trajs(text: str) -> list[dict]:
    return [d for d in json_lines(text) if "traj" in d]


class OutputReader:
    """A child's stdout read without blocking as it comes (`poll`: everything so far), the rest at its end."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.text = proc, ""
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)

    def poll(self) -> str:
        assert self.proc.stdout is not None
        try:
            chunk = self.proc.stdout.read()
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            self.text += chunk
        return self.text

    def rest(self) -> str:
        """Everything, once the process has ended (waited for, 10 s at most)."""
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), True)
        self.text += self.proc.stdout.read() or ""
        return self.text

    def stderr(self) -> str:
        path = getattr(self.proc, "stderr_path", None)
        return path.read_text(errors="replace") if path is not None and path.exists() else ""
