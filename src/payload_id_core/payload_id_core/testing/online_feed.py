"""An online payload estimator fed offline as the ROS session feeds it: blocks of the convergence check's period
until it declares, the way the convergence tests (test_convergence_excitation, test_convergence_settled,
test_convergence_model_error) and benches (bench/payload.py, bench/cell_convergence.py) judge a declaration."""

from __future__ import annotations

import numpy as np

from payload_id_core.payload.online.base import OnlineEstimator
from payload_id_core.signals.conditioning import Signals

CHECK_BLOCK = 25        # samples per block: the convergence check's period (OnlineEstimator's check_every default)


def feed_until_converged(est: OnlineEstimator, sig: Signals, block: int = CHECK_BLOCK) -> int:
    """Feeds `sig` to `est` `block` samples at a time until it declares convergence or the samples run out; the
    number of samples fed (the rest, sig[k:], is left for the caller)."""
    k = 0
    while k < sig.t.size and not est.converged:
        est.update_batch(sig.t[k:k + block], sig.q[k:k + block], sig.qd[k:k + block], sig.qdd[k:k + block],
                         sig.tau[k:k + block])
        k += block
    return min(k, sig.t.size)


def reported_mass_std(est: OnlineEstimator, own_mass_var: float, sig: Signals, k: int) -> float:
    """kg: the mass σ a goal that stops at sample k reports: the estimator's own variance `own_mass_var` with what
    covariance_extra adds on the samples fed (serially correlated residuals, model error, the offsets' drift)."""
    extra, _ = est.covariance_extra(sig.q[:k], sig.qd[:k], sig.qdd[:k], sig.tau[:k])
    return float(np.sqrt(own_mass_var + extra[0, 0]))
