"""Issue 12 item 2 on the real UR10e recordings (../shared/data/ur10e; skipped without them).

The issue's phantom load: motor currents read as torques gave 0.25 kg for the 2.805 kg load, written
`converged: true`. Every dynamic method must now mark such an estimate SUSPECT (not converged), and
leave the estimates made with the drive gains OK: the checks must not cry wolf on the real robot.
"""

import numpy as np
import pytest
from conftest import UR10E_DATA, requires_ur10e_data

import ur10e_data as rd  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.io.ur_csv import README_DRIVE_GAINS
from payload_id_core.notes import NoteCode, has_note
from payload_id_core.payload_estimate import Quality
from payload_id_core.robot_id import check_scale

DATA = UR10E_DATA
PAIR = "15harm"

pytestmark = requires_ur10e_data


@pytest.fixture(scope="module")
def real():
    model = RobotModel.from_urdf(str(DATA / "ur10e.urdf"))
    raw = rd.load_pairs(DATA, effort_scale=None, names=[rd.GAIN_PAIR, PAIR])     # efforts = motor currents (A)
    gains, _ = rd.identify_gains(model, raw[rd.GAIN_PAIR], decimate=4)
    robot, _ = rd.identify_ur10e_robot(model, rd.rescaled(raw[rd.GAIN_PAIR].unloaded, gains), "linear")
    robot_amperes, _ = rd.identify_ur10e_robot(model, raw[rd.GAIN_PAIR].unloaded, "linear")
    p = raw[PAIR]
    scaled = rd.PreparedPair(PAIR, rd.rescaled(p.unloaded, gains), rd.rescaled(p.loaded, gains), p.offset_s,
                             p.max_mismatch_rad)
    return model, robot, robot_amperes, gains, scaled, p


def test_scale_check_on_the_real_robot(real):
    model, robot, robot_amperes, gains, _, _ = real
    assert check_scale(robot).factor == pytest.approx(1.0, abs=0.03) and check_scale(robot).plausible
    assert check_scale(robot_amperes).factor == pytest.approx(0.08, abs=0.01)
    assert not check_scale(robot_amperes).plausible
    # The README's published gains are 14-15 % below the identified ones on the loaded joints, and give the
    # mass 13 % low (test_ur10e_real): the check must see them too.
    readme, _ = rd.identify_ur10e_robot(model, rd.rescaled(real[5].unloaded, np.array(README_DRIVE_GAINS)),
                                        "linear")
    assert not check_scale(readme).plausible


@pytest.mark.parametrize("robot_unit", ["newton_metres", "amperes"])
def test_unscaled_currents_give_suspect_not_converged(real, robot_unit):
    model, robot, robot_amperes, _, _, currents = real
    est = rd.identify_payloads(model, robot if robot_unit == "newton_metres" else robot_amperes, currents)
    for method, e in est.items():
        assert not isinstance(e, str), f"{method}: {e}"
        assert e.mass < 0.3 * rd.LOAD_MASS_KG, method                    # the phantom load
        assert e.quality is Quality.SUSPECT and not e.converged, (method, e.mass, e.quality_reasons)


def test_estimates_with_the_gains_stay_ok(real):
    """OK for every method. The online methods are not declared converged: the rule judges the σ they report
    (with the serially correlated residuals' part, 1.6 % here), which stays above its 0.5 % on these 52 s; it
    used to judge the recursion's own σ and declared them converged while they reported 1.6 %."""
    model, robot, _, _, scaled, _ = real
    est = rd.identify_payloads(model, robot, scaled)
    for method, e in est.items():
        assert not isinstance(e, str), f"{method}: {e}"
        assert e.quality is Quality.OK, (method, e.quality_reasons)
        online = method in ("direct-rls", "difference-rls")
        assert e.converged is not online, method
        if online:
            assert e.readable_std()[0] > 0.005 * e.mass and has_note(e.notes, NoteCode.PAYLOAD_NOT_CONVERGED)
