"""The payload run's own unloaded run joined to robot.yaml's held-out runs (robot_id/model_error.OWN_UNLOADED_RUN,
HeldOutModelError.covariance_with_run / holds_run; khalil-1 reads it where identify-payload is given one).

The spurious payloads are the real UR10e's (robot.yaml from the 14harm pair): 01_31's unloaded run the one held-out
motion, 15harm's unloaded run the payload run's own (m·c_x −2.88 against −15.33 g·m), 14harm's the calibration run
(its in-sample residual, ~0.1 g·m)."""

from __future__ import annotations

import numpy as np
import pytest

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
