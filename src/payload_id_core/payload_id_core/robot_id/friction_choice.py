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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode

if TYPE_CHECKING:  # robot.yaml (result.py) holds a FrictionChoice: only the type is needed here
    from payload_id_core.dynamics.model import RobotModel
    from payload_id_core.robot_id.result import RobotIdentification
    from payload_id_core.signals.conditioning import Signals

# Simplest first: the order breaks ties between candidates the held-out data cannot separate.
FRICTION_CANDIDATES = ("linear", "nonlinear", "stribeck")
BLOCKS_PER_RUN = 20
SEPARATION_SIGMAS = 2.0
CRITERION = (f"held-out torque prediction: mean over held-out samples of (1/n) Σ_j (e_j / s_j)², s_j the smallest "
             f"held-out RMSE of any candidate on joint j; the simplest candidate whose excess over the best is within "
             f"{SEPARATION_SIGMAS:g} σ of the paired difference (σ from {BLOCKS_PER_RUN} block means per run)")


@dataclass
class CandidateScore:
    kind: str
    score: float                      # mean normalized squared held-out residual (1 would be the per-joint best)
    excess: float                     # score − the best candidate's score
    excess_std: float                 # std of that paired difference (0 for the best itself)
    rmse: np.ndarray                  # (n,) held-out torque RMSE per joint, N·m
    spurious_mass: list[float] = field(default_factory=list)  # kg, khalil-1 on each held-out excitation (info)

    def to_dict(self, joint_names: Sequence[str]) -> dict:
        d = {"kind": self.kind, "score": float(self.score), "excess": float(self.excess),
             "excess_std": float(self.excess_std),
             "held_out_torque_rmse": dict(zip(joint_names, (float(x) for x in self.rmse)))}
        if self.spurious_mass:
            d["held_out_spurious_mass_kg"] = [float(m) for m in self.spurious_mass]
        return d


@dataclass
class FrictionChoice:
    """How robot.yaml's friction model was chosen: `chosen`, by `criterion`, over `candidates` scored on
    `held_out` (their sources); `reason` says whether the data separated it from the others."""

    chosen: str
    criterion: str
    reason: str
    held_out: list[str] = field(default_factory=list)
    candidates: list[CandidateScore] = field(default_factory=list)

    def note(self) -> Note:
        if not self.candidates:
            return Note(NoteCode.ROBOT_FRICTION_CHOSEN, f"friction model {self.chosen}: {self.reason}")
        scores = ", ".join(f"{c.kind} {c.score:.4g}" + ("" if c.excess_std == 0 else
                                                         f" (+{c.excess:.3g} ± {c.excess_std:.2g})")
                           for c in self.candidates)
        return Note(NoteCode.ROBOT_FRICTION_CHOSEN,
                    f"friction model {self.chosen} chosen on {len(self.held_out)} held-out recording(s): "
                    f"{self.reason}; held-out scores {scores}")

    def to_dict(self, joint_names: Sequence[str]) -> dict:
        return {"chosen": self.chosen, "criterion": self.criterion, "reason": self.reason,
                "held_out": list(self.held_out), "candidates": [c.to_dict(joint_names) for c in self.candidates]}

    @classmethod
    def from_dict(cls, d, joint_names: Sequence[str], source: str) -> FrictionChoice:
        key = f"{source}: friction_choice"
        if not isinstance(d, dict) or not {"chosen", "criterion", "reason"} <= set(d):
            raise PayloadIdError(f"{key} is {d!r}, not a mapping {{chosen, criterion, reason, ...}}",
                                 "re-run payload-id identify-robot")
        try:
            cands = [CandidateScore(str(c["kind"]), float(c["score"]), float(c["excess"]), float(c["excess_std"]),
                                    np.array([float(c["held_out_torque_rmse"][j]) for j in joint_names]),
                                    [float(m) for m in c.get("held_out_spurious_mass_kg") or []])
                     for c in d.get("candidates") or []]
        except (KeyError, TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.candidates is damaged ({type(err).__name__}: {err})",
                                 "re-run payload-id identify-robot") from err
        return cls(str(d["chosen"]), str(d["criterion"]), str(d["reason"]), [str(s) for s in d.get("held_out") or []],
                   cands)


def given_choice(kind: str) -> FrictionChoice:
    return FrictionChoice(kind, "given (--friction)", "given by the user, not chosen from data")


def unchosen_default(kind: str) -> FrictionChoice:
    return FrictionChoice(kind, "none: no held-out recording", "no held-out recording to choose on: the default "
                          "kept, not chosen from data (give --held-out-csv-ur/--held-out-bag or --friction-cv-csv-ur/"
                          "--friction-cv-bag to choose)")


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


def choose_friction(fits: dict[str, RobotIdentification], held_out: Sequence[Signals], sources: Sequence[str],
                    model: RobotModel) -> FrictionChoice:
    """The friction model by CRITERION among `fits` (kind → identification of the same run, any order)."""
    kinds = [k for k in FRICTION_CANDIDATES if k in fits] + [k for k in fits if k not in FRICTION_CANDIDATES]
    if not held_out:
        raise PayloadIdError("no held-out recording to choose the friction model on",
                             "give an unloaded run of another motion (--held-out-csv-ur, --friction-cv-csv-ur)")
    res = {k: [held_out_residuals(fits[k], s, model) for s in held_out] for k in kinds}
    rmse = {k: np.sqrt(np.mean(np.concatenate(res[k]) ** 2, axis=0)) for k in kinds}
    scale = np.maximum(np.min(np.stack([rmse[k] for k in kinds]), axis=0), 1e-12)
    loss = {k: [np.mean((e / scale) ** 2, axis=1) for e in res[k]] for k in kinds}
    score = {k: float(np.mean(np.concatenate(loss[k]))) for k in kinds}
    best = min(kinds, key=lambda k: score[k])
    excess_std = {k: 0.0 if k == best else _block_mean_std([a - b for a, b in zip(loss[k], loss[best])])
                  for k in kinds}
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


# -- load-dependent friction on or off, per payload method, from loaded runs of known mass ---------------------------
LOAD_FRICTION_CRITERION = (
    "held-out loaded runs of known mass: per method, the RMS over runs of the mass error with the load-dependent "
    f"friction columns (on) and without (off); on only when its RMS is smaller by more than {SEPARATION_SIGMAS:g} × "
    "the estimates' own mass σ (RMS over runs of the larger of σ_on, σ_off: noise and the measured model error, "
    "which is what makes the two differ from one motion to the next); otherwise off, the model with fewer unknowns")


@dataclass
class LoadFrictionChoice:
    """One payload method's load-dependent friction, chosen on held-out loaded runs of known mass."""

    on: bool
    reason: str
    mass_error: dict[str, list[float]]      # "on"/"off" → kg, estimate − known mass, per held-out run
    mass_std: dict[str, list[float]]        # "on"/"off" → kg, the estimates' σ

    def to_dict(self) -> dict:
        return {"chosen": "on" if self.on else "off", "reason": self.reason,
                "mass_error_kg": {k: [float(x) for x in v] for k, v in self.mass_error.items()},
                "mass_std_kg": {k: [float(x) for x in v] for k, v in self.mass_std.items()}}


@dataclass
class LoadFrictionChoices:
    """robot.yaml load_friction_choice: per method (khalil-1, ...) on or off, the criterion and the runs."""

    criterion: str
    held_out: list[str]
    known_mass: float
    methods: dict[str, LoadFrictionChoice]

    def for_method(self, method: str) -> LoadFrictionChoice | None:
        return self.methods.get(str(method))

    def to_dict(self) -> dict:
        return {"criterion": self.criterion, "held_out": list(self.held_out), "known_mass_kg": float(self.known_mass),
                "methods": {m: c.to_dict() for m, c in self.methods.items()}}

    @classmethod
    def from_dict(cls, d, source: str) -> LoadFrictionChoices:
        key = f"{source}: load_friction_choice"
        try:
            methods = {}
            for m, c in (d["methods"] or {}).items():
                if c["chosen"] not in ("on", "off"):
                    raise ValueError(f"{m}.chosen is {c['chosen']!r}, not on or off")
                methods[str(m)] = LoadFrictionChoice(
                    c["chosen"] == "on", str(c["reason"]),
                    {k: [float(x) for x in v] for k, v in (c.get("mass_error_kg") or {}).items()},
                    {k: [float(x) for x in v] for k, v in (c.get("mass_std_kg") or {}).items()})
            return cls(str(d["criterion"]), [str(s) for s in d["held_out"]], float(d["known_mass_kg"]), methods)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise PayloadIdError(f"{key} is damaged ({type(err).__name__}: {err})",
                                 "re-run payload-id identify-robot") from err


def choose_load_friction(error: Mapping[bool, Sequence[float]],
                         std: Mapping[bool, Sequence[float]]) -> LoadFrictionChoice:
    """On or off by LOAD_FRICTION_CRITERION from the mass errors and σ (kg) per held-out run, keyed by on."""
    e = {k: np.asarray(error[k], dtype=float) for k in (False, True)}
    s = {k: np.asarray(std[k], dtype=float) for k in (False, True)}
    rms = {k: float(np.sqrt(np.mean(e[k] ** 2))) for k in e}
    # Not the Hausman std of the difference, √|σ_on² − σ_off²|: it sees only the noise. On the real UR10e a choice
    # made at 2.0 of it on one motion (difference-rls, 14harm: off 0.014 kg, on 0.004 kg, std 0.0047 kg) gave +3.3 %
    # at 3.8σ on the next (01_31), where off gave −1.2 %: how the columns act varies by motion with the model error.
    diff_std = float(np.sqrt(np.mean(np.maximum(s[True], s[False]) ** 2)))
    gain = rms[False] - rms[True]
    on = gain > SEPARATION_SIGMAS * diff_std
    verdict = ("on: smaller by more than" if on else
               "off: on is worse" if gain <= 0 else "off: on not better by more than")
    reason = (f"mass error RMS on {rms[True]:.4g} kg, off {rms[False]:.4g} kg, their σ {diff_std:.2g} kg; "
              f"{verdict}" + ("" if gain <= 0 and not on else f" {SEPARATION_SIGMAS:g} σ"))
    return LoadFrictionChoice(bool(on), reason, {"on": e[True].tolist(), "off": e[False].tolist()},
                              {"on": s[True].tolist(), "off": s[False].tolist()})
