"""The payload run's own unloaded run joined to robot.yaml's held-out runs (robot_id/model_error.OWN_UNLOADED_RUN,
HeldOutModelError.covariance_with_run / holds_run; khalil-1 reads it where identify-payload is given one).

The spurious payloads are the real UR10e's (robot.yaml from the 14harm pair): 01_31's unloaded run the one held-out
motion, 15harm's unloaded run the payload run's own (m·c_x −2.88 against −15.33 g·m), 14harm's the calibration run
(its in-sample residual, ~0.1 g·m)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import UR10E_DATA_MISSING

from payload_id_core.cli.main import main as cli_main
from payload_id_core.robot_id.model_error import HeldOutModelError

HELD_0131 = np.array([30.599, -2.8773, -0.2104, 2.2928, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) * 1e-3
OWN_15HARM = np.array([-0.7188, -15.3291, -1.1093, 5.1407, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) * 1e-3
CALIBRATION_14HARM = np.array([-0.107, -0.1246, -0.1219, -0.0897, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]) * 1e-3


def _record():
    return HeldOutModelError("wrist_3_link", ["/data/ur-20_01_31-unload.csv"], HELD_0131.reshape(1, 10))


def test_the_own_motion_s_larger_error_joins_the_held_out_motion_per_entry():
    me = _record()
    cov = me.covariance()
    joined = me.covariance_with_run(cov, OWN_15HARM)
    std = 1e3 * np.sqrt(np.diag(joined))
    # m·c_x: √((2.88² + 15.33²) / 2) = 11.03 g·m (was 2.88); m·c_z √((2.29² + 5.14²)/2) = 3.98 (was 2.29)
    assert std[1] == pytest.approx(11.03, abs=0.01) and std[3] == pytest.approx(3.98, abs=0.01), std
    # the mass: the own run's −0.72 g would narrow 30.6 g to 21.6 g: never narrower
    assert std[0] == pytest.approx(30.599, abs=1e-3), std
    assert np.all(np.diag(joined) >= np.diag(cov))


def test_the_calibration_run_as_the_own_run_does_not_narrow_it():
    me = _record()
    cov = me.covariance()
    # its in-sample residual (0.12 g·m) would halve every variance as one more motion
    np.testing.assert_array_equal(me.covariance_with_run(cov, CALIBRATION_14HARM), cov)


def test_an_entry_the_own_run_leaves_undetermined_keeps_the_held_out_value():
    me = _record()
    cov = me.covariance()
    phi = OWN_15HARM.copy()
    phi[1] = np.nan
    joined = me.covariance_with_run(cov, phi)
    assert joined[1, 1] == cov[1, 1] and joined[3, 3] > cov[3, 3]


def test_a_run_already_held_out_is_not_counted_twice():
    me = _record()
    assert me.holds_run(OWN_15HARM, "/data/../data/ur-20_01_31-unload.csv")   # the same file
    assert me.holds_run(HELD_0131 * (1 + 1e-12), "/elsewhere/copy.csv")       # the same samples, another name
    assert not me.holds_run(OWN_15HARM, "/data/ur-20_02_19_15harm50sec.csv")
    assert not me.holds_run(OWN_15HARM, None)


# -- the real UR10e through identify-payload (h220: an "unloaded run" of another motion) ---------------------------
# robot.yaml from the 14harm pair with 01_31's unloaded run the one held-out motion; khalil-1 on 15harm's loaded run.
# Before h220 jointwise-joint_6.csv (wrist 3 alone) given as --unloaded-csv-ur was joined as "this motion unloaded":
# its spurious payload (mass −0.41 kg, first moments (−146, −46, 48) g·m: what a motion that barely determines the
# payload leaves, not 15harm's model error) took the mass σ 0.0322 → 0.292 kg (9×, the estimate +0.24 % off either
# way) and withheld the CoM; jointwise-joint_1.csv took it to 12.97 kg (−18.3 kg spurious, below the 5σ refusal).

@pytest.fixture(scope="module")
def ur10e_15harm(tmp_path_factory):
    if UR10E_DATA_MISSING is not None:
        pytest.skip(UR10E_DATA_MISSING)
    tmp = tmp_path_factory.mktemp("own_unloaded_run")
    robot = tmp / "robot.yaml"
    assert cli_main(["identify-robot", "--urdf", str(DATA / "ur10e.urdf"),
                     "--csv-ur", str(DATA / "ur-20_02_19_14harm50sec.csv"),
                     "--loaded-csv-ur", str(DATA / "ur-20_02_19_14harm50secLoad.csv"), "--known-payload-mass", "2.805",
                     "--held-out-csv-ur", str(DATA / "ur-20_01_31-unload.csv"), "--out", str(robot)]) == 0
    cache: dict[str | None, dict] = {}

    def estimate(unloaded: str | None) -> dict:
        if unloaded not in cache:
            out = tmp / f"payload_{unloaded}.yaml"
            extra = [] if unloaded is None else ["--unloaded-csv-ur", str(DATA / unloaded)]
            assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot),
                             "--csv-ur", str(DATA / "ur-20_02_19_15harm50secLoad.csv"), *extra,
                             "--method", "khalil-1", "--out", str(out)]) == 0
            cache[unloaded] = yaml.safe_load(out.read_text())
        return cache[unloaded]

    return estimate


def _own_run_note(est: dict) -> str:
    return " ".join(n["text"] for n in est["notes"] if n["code"] == "payload.model_error_measured"
                    and "joined" in n["text"])


def test_an_unloaded_run_of_another_motion_is_not_joined(ur10e_15harm):
    alone = ur10e_15harm(None)
    other = ur10e_15harm("jointwise-joint_6.csv")
    # σ as without it (main before h220: mass σ 0.0322 → 0.292 kg, the CoM withheld), and the reason said
    assert other["std"]["mass"] == pytest.approx(alone["std"]["mass"], rel=1e-9), other["std"]
    assert other["std"]["com"] == pytest.approx(alone["std"]["com"], rel=1e-9), other["std"]
    assert other["com"][0] == pytest.approx(alone["com"][0], rel=1e-9)
    assert "not an unloaded run of this motion" in _own_run_note(other), _own_run_note(other)


def test_this_motion_s_own_unloaded_run_is_still_joined(ur10e_15harm):
    alone = ur10e_15harm(None)
    own = ur10e_15harm("ur-20_02_19_15harm50sec.csv")
    # CoM x σ 1.3 → 4.0 mm (its m·c_x −15.3 g·m), −48.1 mm against khalil-3's −41.4 ± 1.2: 1.6σ (4.0σ without it)
    assert 1e3 * alone["std"]["com"][0] == pytest.approx(1.3, abs=0.1)
    assert 1e3 * own["std"]["com"][0] == pytest.approx(4.0, abs=0.1)
    assert abs(1e3 * own["com"][0] + 41.4) / np.hypot(1e3 * own["std"]["com"][0], 1.2) < 2.0
    assert "this motion unloaded, joined" in _own_run_note(own), _own_run_note(own)
