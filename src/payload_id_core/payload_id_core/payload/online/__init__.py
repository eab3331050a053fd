"""Online payload estimators: one update per control sample, an estimate with uncertainty at any time.

Two forms (DESIGN.md method table), one class each:
  direct-rls      direct_rls.DirectRLS: RLS straight on z = [φ_L, Δφ_f] from τ − Y θ_a (Khalil 2007
                  method 1, recursive).
  difference-rls  difference_rls.DifferenceRLS: Xu 2024 Algorithm 1, RLS on the loaded robot's θ_b and
                  the payload from ε = θ_b − θ_a through the payload Jacobian.
Both share base.OnlineEstimator (blocks, convergence rules, history, the estimate); rls.py is the
recursive least squares (Xu 2024 eq. 8–11), regressor.py the per-sample rows.
"""

from __future__ import annotations

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.online.base import ConvergenceRule, OnlineEstimator, gram_identifiable
from payload_id_core.payload.online.difference_rls import DifferenceRLS
from payload_id_core.payload.online.direct_rls import DirectRLS
from payload_id_core.payload.online.regressor import FastRegressor
from payload_id_core.payload.online.rls import RecursiveLeastSquares

ESTIMATORS: dict[str, type[OnlineEstimator]] = {cls.method: cls for cls in (DirectRLS, DifferenceRLS)}
ONLINE_METHODS = tuple(ESTIMATORS)


def OnlinePayloadEstimator(model: RobotModel, robot, frame: str, method: str = "direct-rls",  # noqa: N802 - was a class
                           **options) -> OnlineEstimator:
    """The online estimator of `method` ('direct-rls' or 'difference-rls') with its options."""
    cls = ESTIMATORS.get(str(method))
    if cls is None:
        raise PayloadIdError(f"'{method}' is not an online method", f"use one of {', '.join(ONLINE_METHODS)}")
    return cls(model, robot, frame, **options)


__all__ = ["ConvergenceRule", "ESTIMATORS", "ONLINE_METHODS", "DifferenceRLS", "DirectRLS", "FastRegressor",
           "OnlineEstimator", "OnlinePayloadEstimator", "RecursiveLeastSquares", "gram_identifiable"]
