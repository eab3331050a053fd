"""The friction model chosen by cross-validation on recordings the robot was not fitted to (issue 29 item 1).

Every candidate (FRICTION_CANDIDATES, simplest first: linear, nonlinear, Stribeck) is identified on the same
run with the same drive gains; each then predicts the torques of the held-out recordings (other unloaded
motions, and the one-joint-at-a-time runs, which isolate each joint's friction). Criterion:

    loss_c(t) = (1/n) Σ_j (e_cj(t) / s_j)²,    score_c = mean_t loss_c(t)

with e_c the held-out torque residual of candidate c and s_j the smallest held-out RMSE any candidate reaches
on joint j (one scale for every candidate, so joints in different units weigh alike and the scores compare).
Whether two candidates differ is judged on the paired difference d(t) = loss_c(t) − loss_best(t): its
standard error comes from the means of BLOCKS_PER_RUN contiguous blocks per run (held-out residuals are
serially correlated over seconds; the block means are nearly independent — the batch-means estimate). The
choice is the simplest candidate whose excess over the best score is within SEPARATION_SIGMAS of that error
(the "one standard error" rule of cross-validated model selection, Hastie, Tibshirani & Friedman, The
Elements of Statistical Learning §7.10, with a paired two-sided 95 % band): a richer model is kept only where
the held-out data show it predicts better by more than their own noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.choice_record import (
    BLOCKS_PER_RUN,
    CRITERION,
    FRICTION_CANDIDATES,
    LOAD_FRICTION_CRITERION,
    SEPARATION_SIGMAS,
    CandidateScore,
    FrictionChoice,
    LoadFrictionChoice,
    LoadFrictionChoices,
    choose_load_friction,
    given_choice,
    unchosen_default,
)
from payload_id_core.robot_id.result import RobotIdentification
from payload_id_core.signals.conditioning import Signals

__all__ = ["BLOCKS_PER_RUN", "CRITERION", "FRICTION_CANDIDATES", "LOAD_FRICTION_CRITERION", "SEPARATION_SIGMAS",
           "CandidateScore", "FrictionChoice", "LoadFrictionChoice", "LoadFrictionChoices", "choose_friction",
           "choose_load_friction", "given_choice", "held_out_residuals", "held_out_scores", "identify_candidates",
           "unchosen_default"]


def held_out_residuals(ident: RobotIdentification, sig: Signals, model: RobotModel) -> np.ndarray:
    """(N, n) measured minus predicted torque of `ident` on the held-out signals."""
    pred = ident.predict(sig.q, sig.qd, sig.qdd, sig.temperature, model=model)
    return ident.gear_corrected(sig.tau, sig.qd) - pred


def _block_mean_std(d: Sequence[np.ndarray]) -> float:
    """Std of the pooled mean of per-run series `d` from BLOCKS_PER_RUN contiguous block means per run."""
    sums, sizes = [], []
    for run in d:
        for block in np.array_split(run, min(BLOCKS_PER_RUN, run.size)):
            sums.append(float(block.sum()))
            sizes.append(block.size)
    s, m = np.asarray(sums), np.asarray(sizes, dtype=float)
    total = m.sum()
    mean = s.sum() / total
    k = s.size
    if k < 2:
        return float("inf")
    # Var(Σ_k S_k / N) with S_k − m_k·mean as the block's centred sum (batch means, unequal blocks)
    return float(np.sqrt(np.sum((s - m * mean) ** 2) * k / (k - 1)) / total)


def held_out_scores(res: dict[str, list[np.ndarray]]) -> tuple[dict[str, np.ndarray], dict[str, float],
                                                                  dict[str, float]]:
    """(RMSE per joint, score, σ of the excess over the best) of each candidate's held-out residuals `res` (kind →
    one (N, n) array per held-out run, the same runs for every kind): CRITERION's numbers (module docstring)."""
    kinds = list(res)
    rmse = {k: np.sqrt(np.mean(np.concatenate(res[k]) ** 2, axis=0)) for k in kinds}
    scale = np.maximum(np.min(np.stack([rmse[k] for k in kinds]), axis=0), 1e-12)
    loss = {k: [np.mean((e / scale) ** 2, axis=1) for e in res[k]] for k in kinds}
    score = {k: float(np.mean(np.concatenate(loss[k]))) for k in kinds}
    best = min(kinds, key=lambda k: score[k])
    excess_std = {k: 0.0 if k == best else _block_mean_std([a - b for a, b in zip(loss[k], loss[best])])
                  for k in kinds}
    return rmse, score, excess_std


def choose_friction(fits: dict[str, RobotIdentification], held_out: Sequence[Signals], sources: Sequence[str],
                    model: RobotModel) -> FrictionChoice:
    """The friction model by CRITERION among `fits` (kind → identification of the same run, any order)."""
    kinds = [k for k in FRICTION_CANDIDATES if k in fits] + [k for k in fits if k not in FRICTION_CANDIDATES]
    if not held_out:
        raise PayloadIdError("no held-out recording to choose the friction model on",
                             "give an unloaded run of another motion (--held-out-csv-ur, --friction-cv-csv-ur)")
    res = {k: [held_out_residuals(fits[k], s, model) for s in held_out] for k in kinds}
    rmse, score, excess_std = held_out_scores(res)
    best = min(kinds, key=lambda k: score[k])
    within = [k for k in kinds if score[k] - score[best] <= SEPARATION_SIGMAS * excess_std[k]]
    chosen = within[0]
    if chosen == best:
        worse = [k for k in kinds if k not in within]
        tied = [k for k in within if k != best]
        reason = "best held-out score" + (
            f"; {', '.join(worse)} worse by more than {SEPARATION_SIGMAS:g} σ of the difference" if worse else "") + (
            f"; {', '.join(tied)} within {SEPARATION_SIGMAS:g} σ but not simpler" if tied else "")
    else:
        reason = (f"not separated from the best ({best}, +{score[chosen] - score[best]:.3g} ± "
                  f"{excess_std[chosen]:.2g}, within {SEPARATION_SIGMAS:g} σ): the simplest such candidate chosen")
    cands = [CandidateScore(k, score[k], score[k] - score[best], excess_std[k], rmse[k]) for k in kinds]
    return FrictionChoice(chosen, CRITERION, reason, list(sources), cands)


def identify_candidates(identify: Callable[[str], RobotIdentification],
                        candidates: Sequence[str] = FRICTION_CANDIDATES) -> dict[str, RobotIdentification]:
    """kind → identify(kind), every candidate fitted the same way on the same run."""
    return {k: identify(k) for k in candidates}
