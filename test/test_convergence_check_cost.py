"""The online convergence rule's batch check made cheaper without changing an answer (h158): robot.yaml's residual
over the samples fed kept one sample's rows at a time (against_robot_fit.FedResidual), one SVD for the rank analysis
and the first solve of weighted_lstsq, and the model-error route refused without the batch fit where robot.yaml
cannot make it pass (online/base._may_be_model_limited). Each is checked against the computation it replaces, to
the bit. A few seconds (one 8 s UR10 run at 100 Hz)."""

import numpy as np
import pytest

from payload_id_core.dynamics import bundled_urdf
from payload_id_core.payload import against_robot_fit as fit
from payload_id_core.payload.jacobian import identifiable_entries
from payload_id_core.payload.linear import weighted_lstsq
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.online.base import OnlineEstimator
from payload_id_core.testing.sim_runs import drift_run, given_gains_robot
from payload_id_core.testing.synthetic import sum_of_sines


@pytest.fixture(scope="module")
def ur10_run():
    """(model, robot without a measured model error, (t, q, q̇, q̈, τ) of drift_run's seed-2 run: its motion and
    torques)."""
    model, robot = given_gains_robot(str(bundled_urdf("ur10")))
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=2)
    tau = drift_run(model, 2).joints.tau              # its recording keeps the first len(tau) samples
    return model, robot, (t[:len(tau)], q[:len(tau)], qd[:len(tau)], qdd[:len(tau)], tau)


def test_the_fed_residual_is_the_whole_runs_to_the_bit(ur10_run):
    model, robot, (_, q, qd, qdd, tau) = ur10_run
    fed = fit.FedResidual(model, robot, model.default_payload_frame)
    for end in (7, 300, 301, q.shape[0]):          # blocks of 7, 293, 1 and the rest, the arrays grown twice
        got = fed.on(q[:end], qd[:end], qdd[:end], tau[:end])
    whole = fit.residual_on(model, robot, model.default_payload_frame, q, qd, qdd, tau)
    for name in ("y_a", "tau_a", "r", "w_l", "fric", "qd"):
        assert np.array_equal(getattr(got, name), getattr(whole, name)), name
    moving = np.flatnonzero(np.max(np.abs(qd), axis=1) > 0.05)
    assert np.array_equal(whole.rows(moving).r, fit.residual_on(model, robot, model.default_payload_frame, q[moving],
                                                                qd[moving], qdd[moving], tau[moving]).r)


def test_one_svd_serves_the_rank_analysis_and_the_first_solve():
    """weighted_lstsq's determined entries are identifiable_entries' with every column live (the SVD shared) and with
    a dead one (its own); the undetermined column (a copy of another) is found either way."""
    rng = np.random.default_rng(3)
    W = rng.standard_normal((200, 3, 5))
    W[..., 4] = W[..., 1]
    y = rng.standard_normal((200, 3))
    sol = weighted_lstsq(W, y)
    assert list(sol.identifiable) == list(identifiable_entries(W.reshape(-1, 5))) == [True, False, True, True, False]
    W[..., 2] = 0.0
    sol = weighted_lstsq(W, y)
    assert list(sol.identifiable) == list(identifiable_entries(W.reshape(-1, 5))) == [True, False, False, True, False]


def _run(model, robot, samples, monkeypatch, skip: bool):
    calls: list[int] = []
    parts = OnlineEstimator.covariance_extra_parts

    def counted(self, *a, **kw):
        calls.append(self.samples)
        return parts(self, *a, **kw)

    monkeypatch.setattr(OnlineEstimator, "covariance_extra_parts", counted)
    if not skip:
        monkeypatch.setattr(OnlineEstimator, "_may_be_model_limited", lambda self, z, std: True)
    # A bar of 0.02 %: the rule looks for the whole run (at 0.5 % its first route declares at 2.25 s)
    est = OnlinePayloadEstimator(model, robot, model.default_payload_frame, "difference-rls", rate_hz=100.0,
                                 mass_rel_std=0.0002)
    est.update_batch(*samples)
    monkeypatch.undo()
    return est, calls


def test_the_model_error_route_is_refused_without_the_batch_fit_only_where_it_cannot_pass(ur10_run, monkeypatch):
    """robot.yaml without a measured model error: the lasting share is 0, the route can never pass. With the fit
    skipped the estimate, its history and the declaration are the same to the bit, with fewer batch fits."""
    model, robot, samples = ur10_run
    assert robot.model_error is None
    fast, fast_calls = _run(model, robot, samples, monkeypatch, skip=True)
    slow, slow_calls = _run(model, robot, samples, monkeypatch, skip=False)
    assert len(fast_calls) < len(slow_calls), (fast_calls, slow_calls)
    a, b = fast.estimate(), slow.estimate()
    assert np.array_equal(a.phi, b.phi) and np.array_equal(a.covariance, b.covariance, equal_nan=True)
    assert fast.converged == slow.converged
    assert np.array_equal([fast.convergence_time], [slow.convergence_time], equal_nan=True)
    assert np.array_equal(a.history["phi"], b.history["phi"], equal_nan=True)
