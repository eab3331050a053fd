"""The monitor's state survives the estimator's death across processes (issue 31 item 4, h197), on simulated time.

The cell of test_monitor_node.py: payload_estimator (config/ur10.yaml, `monitor` on, a `result_path`) and the
excitation player on the simulated time of the kinematic fake robot (test/ros_cell/fake_hardware.py, efforts the
rigid-body model's, a 3 kg part picked at rest and put down on SIGUSR1), a listener (test/ros_cell/event_listener.py)
on ~/payload_event and ~/payload. The estimator is killed with SIGKILL (no clean stop, nothing written at exit) twice
and started again on the same result file (signal_cell.restart_ended):
  1. 0.3 s into the first excitation after the pick, inside the pick's re-estimate (a load is named once its
     re-estimate is determined: 6 blocks of 0.5 s of motion): the restarted node carries on re-estimating the change and
     names the pick, dated at the pick, on the next motion;
  2. mid-carry, 2 s into a later excitation: the restarted node publishes the part it carried (≈ 3 kg, within 3σ, ok).
The part is then put down and, on the next motion, `placed` is named and ~/payload returns to nothing (0 kg within 3σ).
Simulated time: the fake's clock stretches on a starved machine, so what the monitor sees does not depend on the load.
The kills too: the fake holds its clock at each kill's instant of the excitation (fake_hardware.py's holds: no /clock,
no joint state), the test waits for the estimator to say the clock stopped (it has drained every joint state it was
sent), kills it, restarts it and only then lets the clock go on. So the killed node has seen exactly the motion up to
that instant, however late this process reads anything (before, it read the excitation's feedback by polling, and in
CI33's quiet phase the pick was named from 3.2 s of task motion before a kill meant for 1.0 s into the excitation); the
premise (the pick not named by the killed node) is asserted, with what it saw, rather than assumed.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ros_cell.assets import identify_nodes, make_robot_yaml, make_trajectory
from ros_cell.json_lines import json_lines
from ros_cell.process_group import stop_groups
from ros_cell.signal_cell import OutputReader, restart_ended

# wall_clock: run alone after the others (Makefile). With the clock holds the kill's instant is the fake's, but in
# CI35's parallel phase the killed node named the pick "from 4.9 s of task motion" before a hold came (with the move to
# the excitation's start 1.3 s were due): the hold fell on another trajectory than the first excitation under that load
# (not diagnosed further: a resent goal request, player_client's RESEND_AFTER, is the suspect). Alone it passed 7 of 7
# (h215) and in CI34's parallel phase.
pytestmark = [pytest.mark.slow, pytest.mark.wall_clock]
HERE = Path(__file__).parent / "ros_cell"
PART_KG = 3.0
PICK_AFTER_S = 1.0          # simulated s after the fake is ready
MOTION_S = 8.0              # each motion (the player's Excite): enough to determine a re-estimate (~3-4 s of it)
# s into the first motion's excitation: with the move to its start (1 s, task motion too) 1.3 s of motion, under the
# 3 s (6 blocks of 0.5 s) that determine the pick's re-estimate, so it is not named yet (asserted).
KILL_IN_PICK_S = 0.3
KILL_MID_CARRY_S = 2.0      # s into the third motion
HOLDS = f"{KILL_IN_PICK_S},-,{KILL_MID_CARRY_S}"    # fake_hardware.py's clock holds: excitations 1 and 3
CLOCK_STOPPED = "monitor paused: the simulated clock has not moved"


@pytest.fixture(scope="module")
def cell(ros_env, tmp_path_factory):
    assets = tmp_path_factory.mktemp("monitor_restart_assets")
    make_robot_yaml(assets / "robot.yaml")
    make_trajectory(assets / "traj.yaml", duration=MOTION_S)
    with identify_nodes(ros_env, tmp_path_factory.mktemp("monitor_restart_logs"), assets,
                        result_path=assets / "result.yaml", estimator_parameters={"monitor": True},
                        use_sim_time=True) as sup:
        sup.wait_for_log("payload_estimator", "monitor started", 10)
        yield sup, assets


class _Run:
    """The processes of one run, each ended by its process group at `close`."""

    def __init__(self, sup, env: dict, assets: Path) -> None:
        self.sup, self.env, self.assets = sup, env, assets
        self.procs: list[subprocess.Popen] = []

    def spawn(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, *args], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def log(self) -> str:
        return self.sup.log_text("payload_estimator")

    def wait_log(self, said: int, text: str, timeout: float) -> str:
        """The estimator's first log line holding `text` after its first `said` characters."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = self.log()[said:]
            if text in new:
                return new[new.index(text):].splitlines()[0]
            time.sleep(0.05)
        raise AssertionError(f"no '{text}' within {timeout:g} s: {self.log()[-3000:]}")

    def excite(self) -> tuple[subprocess.Popen, OutputReader]:
        proc = self.spawn(str(HERE / "probe.py"), "excite", str(self.assets / "traj.yaml"), "--timeout", "180",
                          "--rest-window", "0.2")
        return proc, OutputReader(proc)

    def held(self, fake_out: OutputReader, excitation: int, timeout: float = 120.0) -> dict:
        """Until the fake holds its clock in its `excitation`-th excitation (its hold line), then until the estimator
        says the clock stopped (it drained every joint state it was sent: PayloadEstimator._on_clock_stalled). Returns
        the hold line with `drained`: whether the estimator said so (it says it once per silence)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hold = next((d for d in json_lines(fake_out.poll()) if d.get("excitation") == excitation), None)
            if hold is not None:
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"the fake did not hold excitation {excitation}: {fake_out.poll()[-2000:]}")
        said = len(self.log())
        deadline = time.monotonic() + 30.0
        while CLOCK_STOPPED not in self.log()[said:] and time.monotonic() < deadline:
            time.sleep(0.05)
        return {**hold, "drained": CLOCK_STOPPED in self.log()[said:]}

    @staticmethod
    def finished(reader: OutputReader, timeout: float = 180.0) -> None:
        """Until the Excite goal is answered (its client ends): it succeeded."""
        deadline = time.monotonic() + timeout
        while reader.proc.poll() is None and time.monotonic() < deadline:
            reader.poll()
            time.sleep(0.05)
        final = next((d for d in json_lines(reader.rest()) if "status" in d), None)
        assert final is not None and final["status"] == "succeeded", reader.text[-2000:]

    def kill_estimator(self, fake: subprocess.Popen) -> tuple[str, str]:
        """SIGKILL to the estimator's process group, then started again on the same parameters (its result file), and
        the fake's held clock let go (SIGUSR2). Returns (all the killed node said, what the restarted one said before
        the clock went on)."""
        started = next(s for s in self.sup.started if s.spec.name == "payload_estimator")
        os.killpg(started.proc.pid, signal.SIGKILL)
        assert started.proc.wait(timeout=20) == -signal.SIGKILL
        killed = self.log()
        assert restart_ended(self.sup) == ["payload_estimator"]
        restarted = self.log()[len(killed):]
        os.kill(fake.pid, signal.SIGUSR2)
        return killed, restarted

    def close(self) -> None:
        stop_groups(self.procs, grace=10.0, kill_wait=10.0)


@pytest.fixture(scope="module")
def heard(cell, ros_env):
    """The run: {listener text at each step, the fake's pick and place times, the estimator's log at each restart}."""
    sup, assets = cell
    run = _Run(sup, ros_env, assets)
    out: dict = {}
    try:
        listener = OutputReader(run.spawn(str(HERE / "event_listener.py"), "900"))
        deadline = time.monotonic() + 60
        while "listener ready" not in listener.poll() and time.monotonic() < deadline:
            time.sleep(0.05)
        said = len(run.log())
        fake = run.spawn(str(HERE / "fake_hardware.py"), "normal", "ur10", str(PART_KG), str(PICK_AFTER_S), "sim",
                         HOLDS)
        assert fake.stdout is not None and "fake hardware ready" in fake.stdout.readline()
        fake_out = OutputReader(fake)
        run.wait_log(said, "monitor floor: ", 30.0)                # the monitor is fed
        deadline = time.monotonic() + 30
        while "picked" not in fake_out.poll() and time.monotonic() < deadline:
            time.sleep(0.05)
        out["picked_at"] = next(d["picked"] for d in json_lines(fake_out.poll()) if "picked" in d)
        time.sleep(0.5)                                             # at rest after the pick: its window's fit adopted
        # 1. Killed inside the pick's re-estimate, at the fake's first hold.
        excite, reader = run.excite()
        out["first_hold"] = run.held(fake_out, 1)
        killed, out["first_restart_log"] = run.kill_estimator(fake)
        out["first_killed_log"] = killed[said:]
        said = len(killed)
        run.wait_log(said, "monitor floor: ", 60.0)                # the restarted node's monitor is fed
        run.finished(reader)
        excite, reader = run.excite()
        run.finished(reader)
        run.wait_log(said, "payload event: picked", 30.0)
        time.sleep(1.0)
        # 2. Killed mid-carry, in motion.
        excite, reader = run.excite()
        out["second_hold"] = run.held(fake_out, 3)
        out["at_second_kill"] = len(listener.poll())
        killed, out["second_restart_log"] = run.kill_estimator(fake)
        said = len(killed)
        run.wait_log(said, "monitor floor: ", 60.0)
        run.finished(reader)
        time.sleep(1.0)
        out["after_second_restart"] = len(listener.poll())
        # 3. The place, then a motion to name it.
        os.kill(fake.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while "placed" not in fake_out.poll() and time.monotonic() < deadline:
            time.sleep(0.05)
        out["placed_at"] = next(d["placed"] for d in json_lines(fake_out.poll()) if "placed" in d)
        time.sleep(0.5)
        for _ in range(2):
            # Named once the motion under it tells it from a push's release; nothing carried is determined (3σ within
            # the smallest change named) after a few seconds more of motion, which a second motion gives if need be.
            excite, reader = run.excite()
            run.finished(reader)
            time.sleep(1.5)                                         # the listener hears the last ~/payload
            if "payload event: placed" in run.log()[said:] and _nothing(_payloads(listener.poll())[-1]):
                break
        os.killpg(listener.proc.pid, signal.SIGINT)
        out["listener"] = listener.rest()
    finally:
        run.close()
    out["log"] = run.log()
    return out


def _payloads(text: str) -> list[dict]:
    return [d for d in json_lines(text) if "payload" in d]


def _nothing(payload: dict) -> bool:
    """~/payload says nothing is carried: ok, its mass within 3σ of 0."""
    return payload["quality"] == "ok" and abs(payload["mass"]) <= 3.0 * payload["mass_std"]


def test_a_restart_inside_the_picks_re_estimate_names_the_pick_at_its_time(heard):
    """Killed 0.3 s into the excitation after the pick (not named yet), the node restarts on its saved state (the change
    being re-estimated) and names the pick once, dated at the pick, with its mass."""
    hold, killed = heard["first_hold"], heard["first_killed_log"]
    # The premise, or this test tests nothing: the kill came at the hold, inside the re-estimate.
    assert abs(hold["into_excitation"] - KILL_IN_PICK_S) < 0.01, hold
    assert hold["drained"], f"the killed node never said the clock stopped at the hold {hold}: {killed[-3000:]}"
    assert "payload event: picked" not in killed, \
        f"premise lost: the pick was named before the kill {hold['into_excitation']:.3f} s into the excitation " \
        f"(picked at {heard['picked_at']:.3f} s, held at {hold['held']:.3f} s): kill earlier\n{killed[-3000:]}"
    assert "the payload monitor's re-estimate: the monitor goes on from it" in heard["first_restart_log"], \
        heard["first_restart_log"][-2000:]
    events = [d for d in json_lines(heard["listener"]) if "event" in d]
    picks = [d for d in events if d["event"] == "picked"]
    assert len(picks) == 1, events
    (pick,) = picks
    assert abs(pick["stamp"] - heard["picked_at"]) < 0.1 and pick["t_change_located"], (pick, heard["picked_at"])
    assert abs(pick["delta_mass"] - PART_KG) < 0.1, pick


def test_a_restart_mid_carry_publishes_the_part_carried(heard):
    """Killed mid-carry in motion: the restarted node's first ~/payload is the part carried, ok, within 3σ of 3 kg."""
    hold = heard["second_hold"]
    assert abs(hold["into_excitation"] - KILL_MID_CARRY_S) < 0.01 and hold["drained"], hold
    assert "loaded the last result" in heard["second_restart_log"], heard["second_restart_log"][-2000:]
    text = heard["listener"][heard["at_second_kill"]:heard["after_second_restart"]]
    after_kill = _payloads(text)
    assert after_kill, text
    for said in after_kill:
        assert said["quality"] == "ok", after_kill
        assert abs(said["mass"] - PART_KG) <= 3.0 * said["mass_std"] and abs(said["mass"] - PART_KG) < 0.1, said


def test_the_place_after_the_restarts_is_named_and_the_payload_returns_to_nothing(heard):
    events = [d for d in json_lines(heard["listener"]) if "event" in d]
    assert [d["event"] for d in events] == ["picked", "placed"], events
    place = events[-1]
    assert abs(place["stamp"] - heard["placed_at"]) < 0.1, (place, heard["placed_at"])
    assert abs(place["delta_mass"] + PART_KG) < 0.1, place
    last = _payloads(heard["listener"])[-1]
    assert _nothing(last), last
