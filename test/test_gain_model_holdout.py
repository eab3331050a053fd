"""The drive gains' friction model judged on held-out loaded runs (issue 29 items 1 and 5, h128;
robot_id/gain_model_holdout.py, choice_record.GAIN_HOLDOUT_CRITERION): the choice rule, its record in robot.yaml and
its refusal of a hand edit, and the held-out prediction itself on a simulated pair whose truth is known. Seconds."""

from __future__ import annotations

import numpy as np
import pytest

from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.choice_record import (
    GAIN_HOLDOUT_CRITERION,
    GAIN_LINEAR,
    GAIN_SHAPED_LOAD,
    GAIN_SHARED_MU,
    GainCandidate,
    GainModelChoice,
    HeldOutGainScore,
    choose_gain_model,
    model_choice_weight,
)
from payload_id_core.robot_id.drive_gains import DriveGainRows
from payload_id_core.robot_id.gain_model_holdout import predict_held_out, split_rows

NAMES = ["a", "b", "c"]


def _cand(kind: str, score: float, held: tuple[float, float] | None, eligible: bool = True,
          scale: float = 10.0) -> GainCandidate:
    mu = None if kind == GAIN_LINEAR else np.array([0.0, 0.02, 0.02])
    return GainCandidate(kind, np.full(3, scale), np.full(3, 0.1), score, eligible, mu,
                         None if mu is None else np.full(3, 0.005),
                         None if held is None else HeldOutGainScore(held[0], held[1], [4.0, 4.01]))


def test_the_simplest_candidate_within_the_held_out_noise_is_chosen():
    # the one-μ model predicts best and linear is worse beyond 2σ of the paired difference: one μ
    cands = [_cand(GAIN_LINEAR, 0.029, (4.9, 0.56)), _cand(GAIN_SHAPED_LOAD, 0.043, (1.44, 0.33)),
             _cand(GAIN_SHARED_MU, 0.0064, (1.0, 0.0))]
    assert choose_gain_model(cands) == GAIN_SHARED_MU
    # linear within 2σ of the best: the simplest, linear, whatever the calibration's own σ says
    cands[0] = _cand(GAIN_LINEAR, 0.029, (1.5, 0.3))
    assert choose_gain_model(cands) == GAIN_LINEAR
    # the best held-out score is an ineligible candidate's (μ no gear's): judged among the others only
    cands = [_cand(GAIN_LINEAR, 0.02, (1.3, 0.1)), _cand(GAIN_SHAPED_LOAD, 0.01, (1.2, 0.1)),
             _cand(GAIN_SHARED_MU, 0.01, None, eligible=False)]
    assert choose_gain_model(cands) == GAIN_LINEAR
    # without held-out scores: the calibration's own σ (GAIN_MODEL_CRITERION), as before
    assert choose_gain_model([_cand(GAIN_LINEAR, 0.029, None), _cand(GAIN_SHAPED_LOAD, 0.01, None)]) == \
        GAIN_SHAPED_LOAD


def _choice(chosen: str = GAIN_SHARED_MU) -> GainModelChoice:
    cands = [_cand(GAIN_LINEAR, 0.029, (4.9, 0.56), scale=9.5), _cand(GAIN_SHAPED_LOAD, 0.043, (1.44, 0.33)),
             _cand(GAIN_SHARED_MU, 0.0064, (1.0, 0.0), scale=10.0)]
    return GainModelChoice(chosen, GAIN_HOLDOUT_CRITERION, ["b", "c"], cands, model_choice_weight(cands, chosen),
                           ["loaded part 1 of 2", "loaded part 2 of 2"])


def test_the_held_out_choice_round_trips_and_a_hand_edit_is_refused():
    g = _choice()
    d = g.to_dict(NAMES)
    assert d["held_out"] == ["loaded part 1 of 2", "loaded part 2 of 2"]
    assert d["candidates"][GAIN_SHARED_MU]["held_out"] == {"score": 1.0, "excess_std": 0.0, "mass_kg": [4.0, 4.01],
                                                           "mass_std_kg": []}
    back = GainModelChoice.from_dict(d, NAMES, "robot.yaml")
    assert back.chosen == GAIN_SHARED_MU and back.held_out == g.held_out and back.load_friction_fitted
    assert back.to_dict(NAMES) == d
    assert "held-out prediction" in back.text() and "shaped_shared_mu 1" in back.text()
    # the σ shift: one direction, the other candidates' distances averaged by their weights (√w in size)
    shift = back.choice_spread(NAMES)
    assert shift[0] == 0.0 and shift[1] == shift[2] < 0.0
    edited = dict(d, chosen=GAIN_LINEAR)
    with pytest.raises(PayloadIdError, match="candidates' numbers give shaped_shared_mu"):
        GainModelChoice.from_dict(edited, NAMES, "robot.yaml")
    unscored = {**d, "candidates": {**d["candidates"], GAIN_LINEAR: {
        k: v for k, v in d["candidates"][GAIN_LINEAR].items() if k != "held_out"}}}
    with pytest.raises(PayloadIdError, match="held-out score"):
        GainModelChoice.from_dict(unscored, NAMES, "robot.yaml")


def test_a_held_out_part_is_predicted_by_the_fit_without_it():
    """Rows of a known output-error model (θ, gains, the load's φ'): the fit on the other samples predicts the
    held-out ones to their noise and finds the known mass there."""
    rng = np.random.default_rng(3)
    model_n, n0, n1, m_theta = 2, 600, 600, 4
    truth_k, truth_theta = np.array([10.0, 8.0]), rng.normal(size=m_theta)
    truth_phi, mass = rng.normal(scale=0.3, size=9), 4.0
    x0 = np.concatenate([rng.normal(size=(n0, model_n, m_theta)), np.zeros((n0, model_n, 9))], axis=2)
    yl = rng.normal(size=(n1, model_n, 10))
    x1 = np.concatenate([rng.normal(size=(n1, model_n, m_theta)), yl[..., 1:]], axis=2)
    c1 = yl[..., 0] * mass
    xs, cs = np.concatenate([x0, x1]), np.concatenate([np.zeros((n0, model_n)), c1])
    u = xs @ np.r_[truth_theta, truth_phi] + cs
    es = u / truth_k + rng.normal(scale=0.01, size=u.shape)
    rows = DriveGainRows(xs, cs, es, np.sign(rng.normal(size=u.shape)), n0, c1, yl)
    held = np.zeros(n1, bool)
    held[n1 // 2:] = True
    train, test = split_rows(rows, held)
    assert train.xs.shape[0] == n0 + n1 // 2 and test.xs.shape[0] == n1 // 2 and test.n_unloaded == 0
    res, found, std = predict_held_out(train, test, np.zeros(model_n, bool), False, mass)
    assert np.allclose(np.sqrt(np.mean(res ** 2, axis=0)), 0.01, rtol=0.15)
    assert abs(found - mass) < 3 * std < 0.01 * mass
