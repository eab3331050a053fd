"""Red team (h97) of issue 29's merges h88 (robot.yaml friction_offset_drift, difference-rls's prior on its offsets'
change), h89 (the witnesses' materiality rule) and h91 (near_rest_epsilons).

A hand-edited friction_offset_drift record whose per-joint lists do not hold one value per run (a run taken out of
`runs` by hand and not out of the lists) raised numpy's ValueError out of OffsetSpread.from_dict's reshape: a
traceback and exit 1 on the command line instead of one line and exit 2. The CLI fuzzer never reached it: its
robot.yaml carries no drift record.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from cli_fixtures import Snapshot, assert_refused, make_cli_files
from session_cell import FRAME as CELL_FRAME
from session_cell import FRICTION as CELL_FRICTION
from session_cell import PHI as CELL_PHI
from session_cell import loaded_run, session_cell
from test_identify_robot_cli import _recording

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import write_bag
from payload_id_core.payload.held_out_error import measure_offset_spread
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording
from xtraj_cell import RATE as XTRAJ_RATE
from xtraj_cell import xtraj_cell


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_cli_files(tmp_path_factory.mktemp("h97"))


def _drift(runs, per_joint):
    return {"runs": runs, "offsets": {j: list(v) for j, v in per_joint.items()},
            "offsets_std": {j: [0.01] * len(v) for j, v in per_joint.items()}}


EDITS = {
    # On main: ValueError "cannot reshape array of size 2 into shape (4,newaxis)", a traceback and exit 1.
    "four runs, one value each": _drift(["a", "b", "c", "d"], {"joint1": [0.1], "joint2": [0.1]}),
    "no runs, one value each": _drift([], {"joint1": [0.1], "joint2": [0.1]}),
    "three runs, one value each": _drift(["a", "b", "c"], {"joint1": [0.1], "joint2": [0.1]}),
    # On main: accepted, one run per character of the string; a list is what identify-robot writes.
    "runs a string": _drift("ab", {"joint1": [0.1, 0.1], "joint2": [0.1, 0.1]}),
}


@pytest.mark.parametrize("case", list(EDITS))
def test_a_hand_edited_drift_record_is_refused_in_one_line(case, files, tmp_path, capfd):
    d = yaml.safe_load(files.robot.read_text())
    d["friction_offset_drift"] = EDITS[case]
    robot = tmp_path / "robot.yaml"
    robot.write_text(yaml.safe_dump(d))
    with pytest.raises(PayloadIdError, match="friction_offset_drift is not valid"):
        RobotIdentification.load(robot, RobotModel.from_urdf("planar_2r"))
    out = tmp_path / "payload.yaml"
    before = Snapshot.of(out)
    code = cli_main(["identify-payload", "--urdf", "planar_2r", "--robot", str(robot), "--bag", str(files.bag),
                     "--method", "difference-rls", "--frame", "tool0", "--out", str(out)])
    err = capfd.readouterr().err
    assert_refused(code, err, before)
    assert "friction_offset_drift" in err and "identify-robot" in err, err


# -- a drift run that carries a load --------------------------------------------------------------------------------

@pytest.mark.parametrize("mass", [0.5, 1.5])
def test_a_loaded_drift_run_is_refused_as_a_loaded_held_out_run_is(mass, tmp_path, capsys):
    """identify-robot refused a loaded --held-out run (its spurious payload mass beyond 5σ of zero) but took a loaded
    --drift run as drift: on the real UR10e the loaded 15harm and 01_31 runs as drift runs wrote the shoulder lift's
    prior std 22.8 N·m (0.48 from their unloaded twins), and difference-rls on those recordings then gave mass σ 2.36 /
    2.60 % (0.87 / 0.89 % with the right drift runs) and withheld the CoM that it reports at σ ≤ 4.5 mm. Now refused
    by name, exit 2, nothing written; the unloaded drift runs are still taken."""
    planar = RobotModel.from_urdf("planar_2r")
    phi = from_mass_com_inertia(mass, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))
    train = write_bag(tmp_path / "train", _recording(planar, 1))
    unloaded = write_bag(tmp_path / "unloaded", _recording(planar, 11))
    loaded = write_bag(tmp_path / "loaded", _recording(planar, 12, payload=(phi, "tool0")))
    out = tmp_path / "robot.yaml"
    code = cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(train), "--drift-bag", str(unloaded),
                     "--drift-bag", str(loaded), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "carries a load" in err and "--drift-bag" in err and err.count("\n") == 1, err
    assert not out.exists()
    code = cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", str(train), "--drift-bag", str(unloaded),
                     "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert RobotIdentification.load(out, planar).offset_drift is not None


# -- difference-rls's σ when the offsets moved -----------------------------------------------------------------------

def _payload_sign(model, run) -> np.ndarray:
    """(n,) the sign of the cell payload's mean torque on each joint over `run`'s motion."""
    cmd = run.commanded[0]
    return np.sign((payload_regressor(model, CELL_FRAME, cmd.positions, cmd.velocities, cmd.accelerations)
                    @ CELL_PHI).mean(axis=0))


def test_a_moved_offset_does_not_widen_difference_rls_sigma_when_its_estimate_is_unmoved():
    """difference-rls frees the constant friction offsets' change: with every joint's offset moved 0.6 N·m (in the
    sign of the payload's mean torque) its estimate is the honest run's (3.00060 against 3.00057 kg). Its mass σ was
    0.995 % against 0.185 %, not converged: the covariance's serial-correlation term
    (covariance_extra.online_covariance_extra) came from a batch fit with the offsets fixed, whose residual held the
    moved offsets as a constant (Newey–West variance × 44.4 against × 1.2). Its inflation now comes from a fit with
    the estimator's unknowns (OnlineEstimator.covariance_extra): 0.177 % with the offsets moved, 0.185 % without,
    converged, ok."""
    model, robot, honest = session_cell()
    moved = loaded_run(model, offsets=0.6 * _payload_sign(model, honest))
    before = identify_payload("difference-rls", model, robot, honest, CELL_FRAME)
    after = identify_payload("difference-rls", model, robot, moved, CELL_FRAME)
    assert after.mass == pytest.approx(before.mass, rel=5e-4)     # the premise: the offsets are free, the fit unmoved
    s_before, s_after = np.sqrt(before.covariance[0, 0]), np.sqrt(after.covariance[0, 0])
    assert s_after <= 1.5 * s_before, f"mass σ {s_after:.5f} kg with the offsets moved, {s_before:.5f} without"
    assert after.converged and after.quality is Quality.OK, after.notes


@pytest.fixture(scope="module")
def cell_with_drift():
    """The session cell's robot with the offsets' drift measured on three unloaded 6 s runs of other motions
    (identify-robot --drift-bag's record): prior std 0.010-0.25 N·m (the cell's offsets do not move)."""
    model, robot, honest = session_cell()
    runs = [synthetic_recording(model, *sum_of_sines(model, duration=6.0, rate_hz=100.0, seed=20 + s),
                                friction="linear", friction_params=CELL_FRICTION, noise_std=0.2, seed=30 + s)
            for s in range(3)]
    return model, replace(robot, offset_drift=measure_offset_spread(model, robot, runs)), honest


def test_offsets_moved_within_the_recorded_drift_do_not_widen_difference_rls_sigma(cell_with_drift):
    """With robot.yaml's drift record difference-rls holds its offsets by that prior, and the batch fit of its
    covariance's serial-correlation part now does too: every offset 3 × its prior std moves the mass +0.020 →
    +0.118 % (the prior's pull, which its σ carries) at σ 0.183 → 0.173 % (0.943 % with that fit's offsets fixed).
    0.6 N·m (up to 60 × the prior std) is beyond the recorded drift: still flagged suspect by the offsets' witness,
    not converged (σ 0.422 %: the part of the offsets the prior holds out is in the residual)."""
    model, robot, honest = cell_with_drift
    prior_std = robot.offset_drift.prior_std
    sign = _payload_sign(model, honest)
    before = identify_payload("difference-rls", model, robot, honest, CELL_FRAME)
    after = identify_payload("difference-rls", model, robot, loaded_run(model, offsets=3.0 * prior_std * sign),
                             CELL_FRAME)
    s_before, s_after = before.readable_std()[0], after.readable_std()[0]
    assert s_after <= 1.5 * s_before, f"mass σ {s_after:.5f} kg with the offsets moved, {s_before:.5f} without"
    assert abs(after.mass - CELL_PHI[0]) <= 2.0 * s_after, (after.mass, s_after)
    assert after.converged and after.quality is Quality.OK, after.notes
    beyond = identify_payload("difference-rls", model, robot, loaded_run(model, offsets=0.6 * sign), CELL_FRAME)
    assert beyond.quality is Quality.SUSPECT and not beyond.converged
    assert any("beyond the drift robot.yaml recorded" in r for r in beyond.quality_reasons), beyond.quality_reasons


def test_bench_accuracys_unloaded_drift_runs_are_not_refused_as_loaded():
    """The load test's level: bench/accuracy.py's UR10 xtraj seed 0 drift runs (unloaded 10 s sums of sines, the
    robot identified on another motion) read a spurious 17 g at 5.0σ with the offsets free; at the held-out runs' 5σ
    the bench's first run was refused as loaded."""
    xc = xtraj_cell("ur10")
    robot = xc.robot(0)
    runs = [xc.recording(sum_of_sines(xc.model, 10.0, XTRAJ_RATE, seed=3000 + i), None, 1.0, 4000 + i)
            for i in range(3)]
    spread = measure_offset_spread(xc.model, robot, runs)
    assert len(spread.runs) == 3 and np.all(spread.prior_std > 0)
