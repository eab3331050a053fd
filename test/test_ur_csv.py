"""The real UR10e recordings of ../shared/data/ur10e: reading, the stand-in commanded motion, bad files."""


import numpy as np
import pytest
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import README_DRIVE_GAINS, SMOOTHING_CUTOFF_HZ, UR_JOINT_NAMES, read_ur_csv
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.signals import commanded, conditioning, filtering

pytestmark = requires_ur10e_data
FILES = ["ur-20_01_31-load.csv", "ur-20_01_31-unload.csv", "ur-20_02_19_14harm50sec.csv",
         "ur-20_02_19_14harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv", "ur-20_02_19_15harm50secLoad.csv",
         "validation-p1.csv", "validation-p2.csv", "validation-p3.csv"]
CLEAN = "ur-20_02_19_14harm50sec.csv"


@pytest.mark.parametrize("name", FILES)
def test_reads_every_real_file(name):
    rec = read_ur_csv(DATA / name, README_DRIVE_GAINS)
    j = rec.joints
    assert j.joint_names == UR_JOINT_NAMES
    assert len(j) > 700
    assert np.all(np.diff(j.t) > 0)
    assert np.median(np.diff(j.t)) == pytest.approx(0.010, abs=5e-4)   # about 100 Hz
    assert np.abs(j.q).max() < 2 * np.pi                               # radians, within UR joint range
    assert has_note(rec.notes, NoteCode.SIGNALS_MEASURED_AS_COMMANDED)
    # The stand-in command: smoothed measured positions on a uniform grid at the median rate,
    # covering the recording to within one step, flagged for the torque filter.
    (cmd,) = rec.commanded
    assert cmd.smoothing_cutoff_hz == SMOOTHING_CUTOFF_HZ
    step = np.diff(cmd.time_from_start)
    assert np.ptp(step) < 1e-9 and step[0] == pytest.approx(np.median(np.diff(j.t)), rel=1e-9)
    assert cmd.start_time == j.t[0] and 0 <= j.t[-1] - cmd.end_time < step[0]
    q_cmd = commanded.sample_commanded(rec.commanded, j.t, UR_JOINT_NAMES)[0]
    assert np.abs(q_cmd - j.q)[50:-50].max() < 2e-3          # the filter keeps the motion (rad)
    # The validation files are static poses (the velocity columns are zero): the reader says so.
    static = has_note(rec.notes, NoteCode.SIGNALS_STATIC_RECORDING)
    assert static == name.startswith("validation")
    assert (np.ptp(j.q, axis=0).max() < 1e-3) == static


def test_columns_and_scaling():
    raw = np.loadtxt(DATA / CLEAN, delimiter=",")
    rec = read_ur_csv(DATA / CLEAN, README_DRIVE_GAINS)
    assert len(rec.joints) == raw.shape[0] == 5375
    np.testing.assert_array_equal(rec.joints.t, raw[:, 0])
    np.testing.assert_array_equal(rec.joints.q, raw[:, 1:7])
    np.testing.assert_array_equal(rec.joints.qd, raw[:, 7:13])
    np.testing.assert_allclose(rec.joints.tau, raw[:, 13:19] * README_DRIVE_GAINS, rtol=1e-15)
    unscaled = read_ur_csv(DATA / CLEAN)
    np.testing.assert_array_equal(unscaled.joints.tau, raw[:, 13:19])
    assert has_note(unscaled.notes, NoteCode.IO_CURRENTS_AS_TORQUES)
    assert not has_note(rec.notes, NoteCode.IO_CURRENTS_AS_TORQUES)
    # The velocity columns are the derivative of the position columns (so the mapping is right).
    dq = filtering.central_difference(rec.joints.q, rec.joints.t)
    assert np.sqrt(np.mean((dq - rec.joints.qd) ** 2)) < 0.02 * np.sqrt(np.mean(rec.joints.qd ** 2))


@pytest.mark.parametrize("name", [CLEAN, "ur-20_02_19_15harm50sec.csv"])
def test_currents_times_gains_match_the_controller_torques_of_gravity_joints(name):
    """Shoulder-lift and elbow torques are dominated by gravity, which the controller's own model
    (columns 26-31) knows well: gain × measured current must follow it closely."""
    raw = np.loadtxt(DATA / name, delimiter=",")
    rec = read_ur_csv(DATA / name, README_DRIVE_GAINS)
    for j in (1, 2):
        target = raw[:, 25 + j]
        assert np.corrcoef(rec.joints.tau[:, j], target)[0, 1] > 0.9
        ratio = np.dot(rec.joints.tau[:, j], target) / np.dot(rec.joints.tau[:, j], rec.joints.tau[:, j])
        assert ratio == pytest.approx(1.0, abs=0.1)  # the model is not ground truth


def test_corrupt_logger_rows_and_cut_last_line_are_dropped_with_notes():
    name = "ur-20_02_19_15harm50secLoad.csv"
    rec = read_ur_csv(DATA / name, README_DRIVE_GAINS)
    assert len(rec.joints) == 6107 - 1 - 9   # 6107 lines: the last has no newline
    assert has_note(rec.notes, NoteCode.IO_TRUNCATED_LINE)
    assert has_note(rec.notes, NoteCode.IO_CORRUPT_ROWS_DROPPED)
    assert rec.joints.t[0] == pytest.approx(3047.693)
    assert np.abs(rec.joints.tau).max() < 250.0   # no garbage values (1e154 in the dropped rows)


def test_stand_in_command_is_smooth_between_its_points():
    """The controller's quintic segments between the stand-in's points must not ring. Points with
    raw positions and velocities but filtered accelerations (the former reader) gave 68-102 rad/s²
    spikes between 10 ms points, 150-200x the motion's RMS acceleration of 0.4-0.5 rad/s²."""
    rec = read_ur_csv(DATA / "ur-20_02_19_15harm50sec.csv", README_DRIVE_GAINS)
    j = rec.joints
    fine = np.arange(j.t[0] + 1.0, j.t[-1] - 1.0, 0.001)
    _, _, qdd = commanded.sample_commanded(rec.commanded, fine, UR_JOINT_NAMES)
    rms = np.sqrt(np.mean(rec.commanded[0].accelerations ** 2, axis=0))
    assert np.all(np.abs(qdd).max(axis=0) < 5 * rms), np.abs(qdd).max(axis=0) / rms
    # ... while following the measured motion: positions to 2 mrad, velocities to 2 % of their RMS.
    q, qd, _ = commanded.sample_commanded(rec.commanded, j.t, UR_JOINT_NAMES)
    inner = slice(100, -100)
    assert np.abs(q - j.q)[inner].max() < 2e-3
    rel = np.sqrt(np.mean((qd - j.qd)[inner] ** 2, axis=0)) / np.sqrt(np.mean(j.qd[inner] ** 2, axis=0))
    assert np.all(rel < 0.02), rel


def test_commanded_pipeline_on_real_data():
    rec = read_ur_csv(DATA / "ur-20_02_19_15harm50sec.csv", README_DRIVE_GAINS)
    sig = conditioning.conditioned_signals(rec, UR_JOINT_NAMES, source="commanded", delay="estimate")
    assert abs(sig.delay_used) < 1e-3                        # zero-phase smoothing: no delay
    assert has_note(sig.notes, NoteCode.SIGNALS_MEASURED_AS_COMMANDED)
    # The torques pass the stand-in's filter (parallel filtering), and the filter's first and last
    # 3/fc = 0.6 s are dropped.
    assert has_note(sig.notes, NoteCode.SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN)
    edge = 3.0 / SMOOTHING_CUTOFF_HZ
    step = 0.025                                             # two logging intervals (10-12 ms)
    assert sig.t[0] == pytest.approx(rec.joints.t[0] + edge, abs=step)
    assert sig.t[-1] == pytest.approx(rec.joints.t[-1] - edge, abs=step)
    k = np.searchsorted(rec.joints.t, sig.t)
    raw = rec.joints.tau[k]
    removed = raw - sig.tau
    assert np.all(np.sqrt(np.mean(removed ** 2, axis=0)) > 0.1)      # 0.3-2.6 N·m of current ripple and noise
    in_band = filtering.filtered_derivatives(sig.t, removed, 1.0, derivatives=0)[0][100:-100]
    assert np.all(np.sqrt(np.mean(in_band ** 2, axis=0)) < 0.01 * raw.std(axis=0))   # the motion's band kept
    # The same signals as the measured-signal pipeline at the same cutoff (one filter, one
    # differentiation): accelerations agree to a few percent of their RMS.
    meas = conditioning.conditioned_signals(rec, UR_JOINT_NAMES, source="measured", cutoff_hz=SMOOTHING_CUTOFF_HZ)
    common, a, b = np.intersect1d(sig.t, meas.t, return_indices=True)
    assert common.size > 0.99 * sig.t.size                   # the same samples, up to the delay's edge
    rms = np.sqrt(np.mean(meas.qdd[b] ** 2, axis=0))
    diff = np.sqrt(np.mean((sig.qdd[a] - meas.qdd[b]) ** 2, axis=0))
    assert np.all(diff < 0.05 * rms), diff / rms
    np.testing.assert_allclose(sig.tau[a], meas.tau[b], atol=1e-9)


def _write(tmp_path, rows, name="bad.csv", trailing_newline=True):
    path = tmp_path / name
    path.write_text("\n".join(rows) + ("\n" if trailing_newline else ""))
    return path


def _real_rows(n=300):
    return (DATA / CLEAN).read_text().splitlines()[:n]


def _expect(path, match, **kw):
    with pytest.raises(PayloadIdError, match=match) as err:
        read_ur_csv(path, README_DRIVE_GAINS, **kw)
    assert err.value.fix
    return str(err.value)


def test_bad_files(tmp_path):
    rows = _real_rows()
    _expect(_write(tmp_path, [",".join(r.split(",")[:30]) for r in rows]), "has 30 columns, expected 31")
    mid = list(rows)
    mid[100] = ",".join(mid[100].split(",")[:25])
    _expect(_write(tmp_path, mid), "line 101 has 25 columns, expected 31")
    swapped = list(rows)
    swapped[150], swapped[151] = swapped[151], swapped[150]
    _expect(_write(tmp_path, swapped), "time does not increase after row 151")
    nan = list(rows)
    fields = nan[42].split(",")
    fields[15] = "nan"
    nan[42] = ",".join(fields)
    msg = _expect(_write(tmp_path, nan), "1 of 300 rows hold NaN or inf")
    assert "columns i3" in msg and "line 43" in msg
    _expect(_write(tmp_path, ["t," + ",".join(f"c{i}" for i in range(30))] + rows),
            "line 1 holds a value that is not a number")
    _expect(_write(tmp_path, []), "is empty")
    _expect(tmp_path / "missing.csv", "does not exist")
    with pytest.raises(PayloadIdError, match="not six finite"):
        read_ur_csv(_write(tmp_path, rows), [1.0, 2.0])
    # A cut-short last line is only forgiven at the very end of a file without a final newline.
    cut = list(rows)
    cut[-1] = ",".join(cut[-1].split(",")[:20])
    assert len(read_ur_csv(_write(tmp_path, cut, trailing_newline=False)).joints) == 299
    _expect(_write(tmp_path, cut), "line 300 has 20 columns")


COLLISION_FILES = ["contact-collision_2link.csv", "contact-collision_3link.csv", "contact-collision_wrist.csv",
                   "contact-collision_free.csv"]


@pytest.mark.parametrize("name", COLLISION_FILES)
def test_reads_the_25_column_collision_recordings(name):
    """Their first 19 columns are the 31-column layout's (time, q, q̇, currents); the last six, undocumented, are
    read past."""
    raw = np.loadtxt(DATA / name, delimiter=",")
    assert raw.shape[1] == 25
    rec = read_ur_csv(DATA / name, README_DRIVE_GAINS)
    assert len(rec.joints) == raw.shape[0] > 1500
    np.testing.assert_array_equal(rec.joints.t, raw[:, 0])
    np.testing.assert_array_equal(rec.joints.q, raw[:, 1:7])
    np.testing.assert_array_equal(rec.joints.qd, raw[:, 7:13])
    np.testing.assert_allclose(rec.joints.tau, raw[:, 13:19] * README_DRIVE_GAINS, rtol=1e-15)
    assert np.median(np.diff(rec.joints.t)) == pytest.approx(0.010, abs=5e-4)
    dq = filtering.central_difference(rec.joints.q, rec.joints.t)
    assert np.sqrt(np.mean((dq - rec.joints.qd) ** 2)) < 0.05 * np.sqrt(np.mean(rec.joints.qd ** 2))
    assert not has_note(rec.notes, NoteCode.SIGNALS_STATIC_RECORDING)


def test_a_file_mixing_the_two_layouts_names_its_line(tmp_path):
    lines = (DATA / "contact-collision_free.csv").read_text().splitlines()[:20]
    lines[7] += ",0,0,0,0,0,0"
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PayloadIdError, match="line 8 has 31 columns, expected 25"):
        read_ur_csv(path)
    path.write_text("\n".join(",".join(line.split(",")[:24]) for line in lines) + "\n")
    with pytest.raises(PayloadIdError, match="has 24 columns, expected 31 or 25"):
        read_ur_csv(path)
