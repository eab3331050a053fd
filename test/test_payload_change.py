"""The payload changed during the run (payload/payload_change.py; issue 29, h133's red team): the witness locates
h133's two changes and names them first (before h146 the first reason named a gain drift, "warmer drives?"), names a
0.3 kg step on the 4 kg part, and reads runs with one payload, or whose drives drifted, within its limit (the MuJoCo
cell's gain drift: test_redteam_h120). Simulated 8 s UR10 runs (sim_runs, the robot cached per process)."""

import numpy as np
import pytest

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.payload_change import hotelling_quantile, small_sample_scatter
from payload_id_core.payload_estimate import Quality
from payload_id_core.testing.sim_runs import (
    drift_run,
    given_gains_robot,
    goal_stopped_when_converged,
    linear_friction_run,
)

CHANGE_WORDS = "the payload changed during"
FIX_WORDS = "run the goal again with the part held still"


def _changed_at(model, t_change: float, mass: float = 4.5, seed: int = 2):
    """drift_run's run (4.0 kg) with `mass` kg from `t_change` s after its first sample (h133's cases: seed 2, 4.5)."""
    rec = drift_run(model, seed)
    payload = from_mass_com_inertia(mass, [0.02, -0.03, 0.08], np.diag([0.02, 0.03, 0.015]))
    heavier = linear_friction_run(model, seed, payload=payload, frame=model.default_payload_frame)
    later = rec.joints.t - rec.joints.t[0] > t_change
    rec.joints.tau[later] = heavier.joints.tau[later]
    return rec


def _when(reason: str) -> float:
    return float(reason.split("near t = ")[1].split(" s")[0])


def _masses(reason: str) -> tuple[float, float]:
    part = reason.split("(mass ")[1]
    return float(part.split(" kg before")[0]), float(part.split("before, ")[1].split(" kg after")[0])


def _note(est):
    return next(n.text for n in map(Note.from_any, est.notes) if n.code is NoteCode.PAYLOAD_CHANGE)


def _note_when(note: str) -> float:
    return float(note.split("likeliest change time ")[1].split(" s")[0])


def test_the_witness_locates_both_h133_changes_within_half_a_second():
    """The note on h133's two cases: the step beyond its limit, the change time within 0.5 s of the truth."""
    model, robot = given_gains_robot("ur10")
    est = identify_payload("direct-rls", model, robot, _changed_at(model, 4.0), model.default_payload_frame)
    note = _note(est)
    chi2 = float(note.split("largest χ² ")[1].split(" ")[0])
    assert chi2 > float(note.split("(limit ")[1].split(" ")[0]), note
    assert abs(_note_when(note) - 4.0) < 0.5, note
    res = _goal(model, robot, _changed_at(model, 0.5))
    assert abs(_note_when(_note(res.estimate)) - (0.5 - 0.01)) < 0.5, _note(res.estimate)


def _goal(model, robot, rec):
    return goal_stopped_when_converged(model, robot, model.default_payload_frame, rec).finished


def test_a_change_at_half_the_run_is_named_first_with_its_time_and_masses():
    """h133: 4.0 then 4.5 kg from the 4th second, direct-rls (4.27 kg, a blend): on main the first reason named a
    gain drift ("every joint's factor free together ... warmer drives?")."""
    model, robot = given_gains_robot("ur10")
    rec = _changed_at(model, 4.0)
    est = identify_payload("direct-rls", model, robot, rec, model.default_payload_frame)
    assert est.quality is not Quality.OK and not est.converged
    first = est.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS) and FIX_WORDS in first, est.quality_reasons
    assert abs(_when(first) - 4.0) < 0.05
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.1) and after == pytest.approx(4.5, abs=0.1)
    # the gain witness's reading follows, as what it reads with one payload
    assert all(r.startswith("read with one payload") for r in est.quality_reasons[1:]
               if "factor" in r), est.quality_reasons


def test_an_early_change_in_a_goal_that_stops_when_converged_is_named_first():
    """h133: 4.5 kg from 0.5 s into a goal fed in 0.1 s batches that stops when converged (difference-rls declared
    at 3.09 s, 4.572 kg): the goal's result names the change at 0.5 s, not a gain drift."""
    model, robot = given_gains_robot("ur10")
    res = _goal(model, robot, _changed_at(model, 0.5))
    assert not res.converged
    first = res.estimate.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS + " the identify goal"), res.estimate.quality_reasons
    # the judged samples start at the goal's first joint state (0.01 s into the recording)
    assert abs(_when(first) - (0.5 - 0.01)) < 0.05
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.15) and after == pytest.approx(4.5, abs=0.15)


@pytest.mark.parametrize("t_change", [2.3, 5.7])
def test_a_three_hundred_gram_step_on_a_four_kilogram_part_is_named(t_change):
    """The smallest change the issue asks to be seen (0.3 kg on 4 kg), between the splits (every 0.4 s of this run):
    difference-rls suspect, the change named first within 0.1 s, the masses within 0.1 kg. At 5.7 s no other witness
    flags it: h146 named it only after one did (strict xfail); it is named alone now (χ² 628 against its limit 205)."""
    model, robot = given_gains_robot("ur10")
    est = identify_payload("difference-rls", model, robot, _changed_at(model, t_change, 4.3, seed=3),
                           model.default_payload_frame, delay=0.0)
    assert est.quality is not Quality.OK and not est.converged
    first = est.quality_reasons[0]
    assert first.startswith(CHANGE_WORDS), est.quality_reasons
    assert abs(_when(first) - t_change) < 0.1, first
    before, after = _masses(first)
    assert before == pytest.approx(4.0, abs=0.1) and after == pytest.approx(4.3, abs=0.1)


@pytest.mark.parametrize("factor", [None, "two_joints"])
def test_one_payload_is_no_change_with_or_without_a_gain_drift(factor):
    """An honest run, and h86's shoulder lift and elbow × 1.03 (constant over the run: the free factors take it;
    without them the step read χ² 37.6 on 4, beyond 24.4): the step within its limit, no change named."""
    model, robot = given_gains_robot("ur10")
    scale = None
    if factor:
        scale = np.ones(model.n)
        scale[[1, 2]] = 1.03
    est = identify_payload("difference-rls", model, robot, drift_run(model, 4, scale), model.default_payload_frame,
                           delay=0.0)
    note = _note(est)
    chi2 = float(note.split("largest χ² ")[1].split(" ")[0])
    limit = float(note.split("(limit ")[1].split(" ")[0])
    assert chi2 < limit / 2, note
    assert not any(r.startswith(CHANGE_WORDS) for r in est.quality_reasons), est.quality_reasons
    if factor:
        assert est.quality is not Quality.OK and "factor" in est.quality_reasons[0]
    else:
        assert est.quality is Quality.OK, est.quality_reasons


# -- the step's reference per split (payload_change.small_sample_scatter, hotelling_quantile) --------------------------

def _synthetic_split(rng, split: int, blocks: int = 20, n: int = 1000, q: int = 4):
    """A regression with q smooth columns unequal over the run (a sine of 1-4 cycles each: within a stretch they are
    nearly collinear, as the payload's columns are over a slow motion), white heteroskedastic noise, and a step in all
    q from stretch `split`: the step's Wald statistic with the plain scatter times B/(B − 1) (h146) and with the
    bias-reduced one, and the new one's ν."""
    t = np.arange(n) / n
    w = np.stack([np.sin(2 * np.pi * (k + 1) * t + k) * (1 + 0.5 * np.cos(3 * t + k)) for k in range(q)], 1)
    starts = np.linspace(0, n, blocks + 1).round().astype(int)
    step = w * (np.arange(n) >= starts[split])[:, None]
    step_perp = step - w @ np.linalg.solve(w.T @ w, w.T @ step)
    info = np.stack([step_perp[a:b].T @ step_perp[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)])
    total = step_perp.T @ step_perp
    x = np.hstack([w, step])
    e = rng.standard_normal(n) * (1 + 0.5 * np.sin(5 * t))
    coef, *_ = np.linalg.lstsq(x, e, rcond=None)
    res = e - x @ coef
    score = np.stack([step_perp[a:b].T @ res[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)])
    plain = score.T @ score * blocks / (blocks - 1)
    adjusted, nu = small_sample_scatter(score[None], info[None], total[None])
    delta = coef[q:]

    def wald(meat):
        return float(delta @ np.linalg.solve(np.linalg.solve(total, np.linalg.solve(total, meat).T), delta))
    return wald(plain), wald(adjusted[0]), float(nu[0])


def test_equal_stretches_give_bester_conley_hansens_reference():
    """B stretches with equal information: ν = B − 1 and the scatter is the plain one × B/(B − 1), so the limit is
    h146's (G − 1) q / (G − q) F(q, G − q) = 61.8 over 15 splits at 0.999."""
    rng = np.random.default_rng(0)
    total = np.diag([4.0, 3.0, 2.0, 1.0])
    info = np.broadcast_to(total / 20, (1, 20, 4, 4)).copy()
    score = rng.standard_normal((1, 20, 4))
    score -= score.mean(axis=1, keepdims=True)          # a fitted step's scores sum to zero
    adjusted, nu = small_sample_scatter(score, info, total[None])
    assert nu[0] == pytest.approx(19.0, rel=1e-9)
    assert adjusted[0] == pytest.approx(score[0].T @ score[0] * 20 / 19, rel=1e-9)
    assert hotelling_quantile(1 - 0.001 / 15, 4, 19.0) == pytest.approx(61.8, abs=0.05)


def test_the_step_test_holds_its_size_where_h146s_did_not():
    """Unequal stretches (the payload's columns over a motion): at 5 % the step's Wald statistic against h146's
    reference (ν = 19 at every split) rejects an unchanged payload 35-51 % of the time (measured, 400 runs per split,
    two seeds); against its own ν 5.3-5.5 % in mid-run (ν 7.4) and below 5 % near the ends, where the few stretches on
    one side leave ν near q − 1 (3 of 20 after the split: ν ≈ 3, the limit infinite)."""
    rng = np.random.default_rng(1)
    for split, low, high in ((9, 0.01, 0.10), (16, 0.0, 0.05)):
        old = new = 0
        runs = 200
        for _ in range(runs):
            w_old, w_new, nu = _synthetic_split(rng, split)
            old += w_old > hotelling_quantile(0.95, 4, 19.0)
            new += w_new > hotelling_quantile(0.95, 4, nu)
        assert old / runs > 0.25, (split, old / runs)
        assert low <= new / runs <= high, (split, new / runs, nu)
    assert _synthetic_split(rng, 17)[2] < 4.0
