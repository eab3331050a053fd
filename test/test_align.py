"""Two runs of one trajectory put on one clock (payload_id_core.signals.align, issue 12 item 4).

Synthetic recordings like a UR CSV's: irregular 10/12 ms logger steps, rest of different lengths
before and after the motion, no recorded command (a smoothed stand-in), each run on its own clock.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from payload_id_core.cli.main import main as cli_main
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import NoteCode, notes_with
from payload_id_core.payload.methods import on_same_trajectory
from payload_id_core.signals.align import aligned_pair, needs_alignment, trajectory_offset
from payload_id_core.signals.commanded import smoothed_trajectory
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording

NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
         "wrist_3_joint"]
MOTION_S = 12.0
FREQ_HZ = np.array([0.15, 0.22, 0.31, 0.4, 0.27, 0.35])


def _positions(tau: np.ndarray, freq_hz: np.ndarray = FREQ_HZ) -> np.ndarray:
    """Joint positions at trajectory time `tau` (rest outside 0..MOTION_S, smooth start and stop)."""
    inside = (tau >= 0) & (tau <= MOTION_S)
    envelope = np.where(inside, 0.5 * (1 - np.cos(2 * np.pi * np.clip(tau, 0, MOTION_S) / MOTION_S)), 0.0)
    return 0.4 * envelope[:, None] * np.sin(2 * np.pi * freq_hz[None, :] * tau[:, None]) + 0.1 * np.arange(6)


def _times(clock0: float, duration: float, seed: int) -> np.ndarray:
    steps = np.random.default_rng(seed).choice([0.010, 0.012], size=int(duration / 0.010) + 10)
    t = clock0 + np.concatenate([[0.0], np.cumsum(steps)])
    return t[t <= clock0 + duration]


def _run(clock0: float, rest_before: float, rest_after: float, seed: int, load: float = 0.0,
         freq_hz: np.ndarray = FREQ_HZ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """t, q, q̇, torques of one run; its trajectory starts at clock0 + rest_before."""
    t = _times(clock0, rest_before + MOTION_S + rest_after, seed)
    q = _positions(t - clock0 - rest_before, freq_hz)
    qd = np.gradient(q, t, axis=0)
    tau = 20 * np.sin(q) + load * np.cos(q)
    return t, q, qd, tau


def _recording(t, q, qd, tau, source: str) -> Recording:
    stand_in = smoothed_trajectory(t, q, NAMES, 5.0)
    return Recording(JointSamples(t, list(NAMES), q, qd, tau), [stand_in], None, source)


def _pair(offset_s: float = 1234.5678, load_freq=FREQ_HZ):
    """Unloaded run (trajectory at 1.30 s of its clock) and loaded run (at 2.10 s + offset of the same clock)."""
    un = _recording(*_run(100.0, 1.30, 0.80, seed=1), source="unloaded")
    lo = _recording(*_run(100.0 + offset_s, 2.10, 3.00, seed=2, load=5.0, freq_hz=load_freq), source="loaded")
    true_offset = offset_s + 2.10 - 1.30
    return un, lo, true_offset


def test_offset_recovered_to_a_fraction_of_a_sample():
    un, lo, true_offset = _pair()
    pair = aligned_pair(un, lo)
    # The logger steps are 10-12 ms: the least-squares shift finds the offset to well under a millisecond.
    assert abs(pair.fit.offset_s - true_offset) < 1e-3, (pair.fit.offset_s, true_offset)
    assert abs(trajectory_offset(un, lo, (101.0, 114.0)).offset_s - true_offset) < 1e-3
    assert pair.fit.max_rad < 1e-3
    # One grid, one length, both starting at 0 s, on the same trajectory time.
    assert len(pair.unloaded.joints) == len(pair.loaded.joints)
    assert pair.unloaded.joints.t[0] == pair.loaded.joints.t[0] == 0.0
    np.testing.assert_allclose(pair.loaded.joints.q, pair.unloaded.joints.q, atol=2e-3)
    # The loaded run's extra rest is what is dropped: 0.8 s more before, 2.2 s more after (10-12 ms steps).
    (ub, ua), (lb, la) = pair.dropped_unloaded, pair.dropped_loaded
    assert 60 <= lb - ub <= 85 and 180 <= la - ua <= 225, (pair.dropped_unloaded, pair.dropped_loaded)


def test_aligned_torque_difference_is_the_load_alone():
    un, lo, _ = _pair()
    pair = aligned_pair(un, lo)
    q = pair.unloaded.joints.q
    diff = pair.loaded.joints.tau - pair.unloaded.joints.tau
    # Away from the filter's ends, loaded − unloaded = the load term 5 cos q (a misalignment of one
    # 10 ms sample would leave up to 20 cos q · q̇ · 10 ms ≈ 0.2 N·m of motion in it; measured 0.9 mN·m).
    inner = slice(50, -50)
    np.testing.assert_allclose(diff[inner], 5 * np.cos(q[inner]), atol=0.005)


def test_alignment_note_says_what_and_by_how_much():
    un, lo, true_offset = _pair()
    pair = aligned_pair(un, lo)
    [note] = notes_with(pair.loaded.notes, NoteCode.SIGNALS_RUNS_ALIGNED)
    assert note is pair.note
    assert f"{pair.fit.offset_s:+.4f} s" in note.text
    assert f"loaded {pair.dropped_loaded[0]}/{pair.dropped_loaded[1]}" in note.text
    assert f"RMS {pair.fit.rms_rad * 1e3:.2f} mrad" in note.text


def test_different_trajectories_are_refused():
    un, lo, _ = _pair(load_freq=FREQ_HZ * 1.3)
    with pytest.raises(PayloadIdError) as err:
        aligned_pair(un, lo)
    assert err.value.problem.startswith("the loaded and unloaded runs are not the same trajectory")
    assert "khalil-4 or difference-rls" in err.value.fix


def test_only_sample_by_sample_methods_with_stand_in_commands_are_aligned():
    un, lo, _ = _pair()
    loaded, unloaded, options = on_same_trajectory("khalil-3", lo, un)
    assert loaded is not lo and unloaded is not un and options == {"delay": 0.0}
    assert len(loaded.joints) == len(unloaded.joints)
    for method in ("gaz-dtau",):
        assert on_same_trajectory(method, lo, un)[2] == {"delay": 0.0}
    # khalil-4 stacks the runs (any trajectory): nothing to align.
    assert on_same_trajectory("khalil-4", lo, un) == (lo, un, {})
    assert on_same_trajectory("khalil-3", lo, None) == (lo, None, {})


def test_a_recorded_command_is_never_realigned():
    un, lo, _ = _pair()

    def recorded(rec: Recording) -> Recording:
        c = rec.commanded[0]
        command = CommandedTrajectory(c.start_time, c.joint_names, c.time_from_start, c.positions, c.velocities,
                                      c.accelerations)   # no smoothing_cutoff_hz: a command the controller got
        return Recording(rec.joints, [command], None, rec.source)

    assert not needs_alignment(recorded(un), recorded(lo))
    assert on_same_trajectory("khalil-3", recorded(lo), recorded(un))[2] == {}
    assert needs_alignment(un, lo)


def _write_ur_csv(path: Path, t, q, qd, current) -> Path:
    rows = np.zeros((t.size, 31))
    rows[:, 0], rows[:, 1:7], rows[:, 7:13], rows[:, 13:19] = t, q, qd, current
    path.write_text("\n".join(",".join(f"{v:.9g}" for v in r) for r in rows) + "\n")
    return path


def test_cli_refuses_csv_runs_of_different_trajectories(tmp_path, capsys):
    un = _write_ur_csv(tmp_path / "unloaded.csv", *_run(100.0, 1.3, 0.8, seed=1))
    lo = _write_ur_csv(tmp_path / "loaded.csv", *_run(500.0, 2.1, 3.0, seed=2, load=5.0, freq_hz=FREQ_HZ * 1.3))
    out = tmp_path / "payload.yaml"
    rc = cli_main(["identify-payload", "--urdf", "ur10e", "--method", "khalil-3", "--csv-ur", str(lo),
                   "--unloaded-csv-ur", str(un), "--effort-scale", "10", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1, err
    assert "not the same trajectory" in err and "khalil-4 or difference-rls" in err
    assert not out.exists()
