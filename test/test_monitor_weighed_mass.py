"""The mass σ ~/payload publishes for a part of weighed mass (the node's known_mass) against the alarm's floor
(LiveMonitor.floored, issue 31; h190, h198).

The floor keeps a re-estimate's mass σ at half the smallest change the alarm can see: a change below it cannot be
excluded since the data were fitted. A weighed mass bounds the part carried whatever the alarm saw, so once applied
(the data agree with it) the mass's σ is the data's combined with the scale's, pinned by it or not. Before h198 it was
left alone only when the known mass pinned the mass: with data sharper than the scale, the σ was raised to half the
floor, 0.018-0.034 kg published for a part weighed to 0.004 kg (test_monitor_priors_ros's cell). Without a known mass,
or with one the data contradict, or on the empty flange, the floor stands.
"""
import numpy as np
import pytest
from session_cell import session_cell

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.monitor.live import LiveMonitor
from payload_id_core.monitor.state import MonitorUpdate, PayloadState
from payload_id_core.payload.priors import PayloadPrior

MASS = 2.0
PHI = from_mass_com_inertia(MASS, [0.02, -0.01, 0.06], np.diag([0.004, 0.005, 0.003]))
FLOOR = 0.1            # kg: the stub alarm's floor; half of it is what the floor raises a mass σ to
WEIGHED_STD = 0.004    # kg: the scale's σ (test_monitor_priors_ros's known_mass_std)


class _Stub:
    """A PayloadMonitor that answers every batch with one re-estimate newly determined, its alarm's floor FLOOR."""

    def __init__(self, state: PayloadState) -> None:
        self.state = state

    def update(self, t, q, qd, tau):
        return MonitorUpdate(estimate=self.state)

    def mass_floor(self, q):
        return FLOOR, 1

    def recent_floor(self):
        return float("nan")

    def carried_key(self):
        """What decides in the state (LiveMonitor marks each publication saved with it, carried_saves: h197)."""
        return (self.state.determined, self.state.since)


@pytest.fixture(scope="module")
def cell():
    model, robot, _ = session_cell()
    return model, robot


def _published(cell, mass: float, mass_std: float, prior: PayloadPrior | None):
    model, robot = cell
    phi = PHI * (mass / MASS)
    cov = np.diag([mass_std**2] + [(mass * 0.001) ** 2] * 3 + [1e-6] * 6)
    live = LiveMonitor(model, robot, "tool0", None, prior=prior)
    live.monitor = _Stub(PayloadState(phi=phi, cov=cov, determined=True, since=1.0,  # type: ignore[assignment]
                                      seconds_of_motion=4.0))
    batch = (np.zeros(1), np.zeros((1, model.n)), np.zeros((1, model.n)), np.zeros((1, model.n)), None)
    est = live.feed(*batch).estimate
    assert est is not None
    return est


def test_a_weighed_mass_sharper_than_the_data_keeps_its_sigma(cell):
    """The known mass pins the mass (data σ 0.02 kg, scale 0.004): published at the combined 0.0039 kg (as before)."""
    est = _published(cell, MASS, 0.02, PayloadPrior.checked(None, MASS, WEIGHED_STD))
    assert "mass" in est.prior_pinned
    assert est.propagated_std()[0] == pytest.approx((0.02**-2 + WEIGHED_STD**-2) ** -0.5, rel=1e-3)


def test_data_sharper_than_the_weighed_mass_are_not_widened_to_the_floor(cell):
    """Data σ 0.002 kg, scale 0.004: the mass is not pinned by the scale (0.0018 > half the data's), and main raised
    its σ to half the floor, 0.05 kg, 12× the scale's. Published: the two combined, 0.0018 kg, never above the
    scale's."""
    est = _published(cell, MASS + 0.001, 0.002, PayloadPrior.checked(None, MASS, WEIGHED_STD))
    assert "mass" not in est.prior_pinned and "known_mass" not in est.prior_not_applied
    combined = (0.002**-2 + WEIGHED_STD**-2) ** -0.5
    assert est.propagated_std()[0] == pytest.approx(combined, rel=1e-3)
    assert est.propagated_std()[0] <= WEIGHED_STD
    assert est.mass == pytest.approx(MASS + 0.001 * WEIGHED_STD**2 / (WEIGHED_STD**2 + 0.002**2), abs=1e-6)


def test_the_floor_stands_without_a_weighed_mass_or_against_one(cell):
    """No known mass: the data's 0.002 kg raised to half the floor (0.05). A known mass the data put 0.5 kg away
    (≫ 3 combined σ): not applied, suspect, and the floor stands as without it."""
    plain = _published(cell, MASS, 0.002, None)
    assert plain.propagated_std()[0] == pytest.approx(FLOOR / 2, rel=1e-6)
    against = _published(cell, MASS, 0.002, PayloadPrior.checked(None, MASS + 0.5, WEIGHED_STD))
    assert "known_mass" in against.prior_not_applied
    assert against.propagated_std()[0] == pytest.approx(FLOOR / 2, rel=1e-6)


def test_the_empty_flange_keeps_the_floor_with_a_weighed_mass_given(cell):
    """Nothing carried: the prior is a carried part's, not applied to the empty flange, and the floor stands."""
    est = _published(cell, 0.0, 0.002, PayloadPrior.checked(None, MASS, WEIGHED_STD))
    assert est.prior is None and est.mass == 0.0
    assert est.propagated_std()[0] == pytest.approx(FLOOR / 2, rel=1e-6)
