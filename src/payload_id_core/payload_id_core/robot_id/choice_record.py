"""robot.yaml's record of how the robot model's choices were made (issue 29 item 1): the friction model's candidates,
held-out scores, criterion and choice (FrictionChoice), and each payload method's load-dependent friction chosen on
held-out loaded runs (LoadFrictionChoices), and the friction model the drive gains were fitted with (GainModelChoice,
chosen here by choose_gain_model). The choosing itself: friction_choice.py, payload/load_friction_choice.py; the
criteria are stated in friction_choice.py's docstring and in CRITERION / LOAD_FRICTION_CRITERION /
GAIN_MODEL_CRITERION here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode

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


# -- the drive gains' friction model (issue 29 items 1 and 5) ------------------------------------------------------

GAIN_LINEAR = "linear"
GAIN_SHAPED_LOAD = "shaped_load_friction"
# The unloaded run's shapes with one load Coulomb μ shared by the determined joints (the gears' one efficiency; h115).
GAIN_SHARED_MU = "shaped_shared_mu"
GAIN_MODELS = (GAIN_LINEAR, GAIN_SHAPED_LOAD, GAIN_SHARED_MU)
# Simplest first (fewest unknowns): the held-out criterion's order for candidates the held-out data cannot separate.
GAIN_MODELS_SIMPLEST_FIRST = (GAIN_LINEAR, GAIN_SHARED_MU, GAIN_SHAPED_LOAD)
# A load-dependent Coulomb level μ (N·m per N·m transmitted) outside this is no gear's: the fit that needs one has
# traded it for a gain (the two are near one column where the load's torque keeps one sign), and is not a candidate.
GAIN_MU_RANGE = (0.0, 0.1)
GAIN_MU_SIGMAS = 3.0
# How far beyond GAIN_MU_RANGE a μ_j may lie before it is no gear's (mu_plausible).
GAIN_MU_TOLERANCE = (f"the larger of {GAIN_MU_SIGMAS:g} of its σ and the relative σ of the candidate's own gain on "
                     "that joint (a μ_j whose friction torque μ_j|τ_j| stays below the torque that gain is known to "
                     "cannot have traded itself for it)")
# A Newey–West σ is itself an estimate (from one pair of runs): the richer model must narrow it by more than this
# fraction to replace the linear one (on `simulate --profile ur10` at 100 Hz the two tie at 1.8 %).
GAIN_SCORE_MARGIN = 0.2
GAIN_MODEL_CRITERION = (
    "the gains' serially correlated (Newey-West) relative σ on the joints the known mass determines, RMS over those "
    "joints: a friction model that misses what the load changes leaves slow residuals that move the gains and widen "
    "that σ, one that trades a friction term for a gain widens it through their collinearity; the linear model "
    f"unless the other's is smaller by more than {100 * GAIN_SCORE_MARGIN:g} %; a candidate whose load friction μ_j "
    f"lies beyond [{GAIN_MU_RANGE[0]:g}, {GAIN_MU_RANGE[1]:g}] by more than {GAIN_MU_TOLERANCE} is not eligible")


def mu_plausible(mu: np.ndarray, mu_std: np.ndarray, gain_rel_std: np.ndarray) -> bool:
    """Whether a load-friction candidate's μ_j (n,) with their σ (n,) are a gear's: within GAIN_MU_RANGE up to the
    larger of GAIN_MU_SIGMAS σ_μj and `gain_rel_std` (n,), the relative (Newey–West) σ of the candidate's own gain k_j.

    The range's purpose is the trade: where the load's torque keeps one sign, μ_j|τ_j| sgn(q̇_j) ≈ μ_j τ_j is one column
    with the gain, so a μ_j beyond a gear's range moves k_j by up to as much (relative), one for one. A μ_j whose
    friction torque μ_j|τ_j| is below σ_kj/k_j × |τ_j|, the torque the gain itself is known to over the run (the joint's
    torque noise and slow model error against the load's torque, gain_fit_covariance), moves k_j by less than its σ:
    no trade the gains could show, whatever its sign. σ_μ alone cannot say that: it shrinks with the noise while the
    model's own error (the unloaded run's friction shapes, the sign smoothing) does not. A noise-free planar
    calibration put μ at −3.6e-6 ± 1.9e-6 and −5.1e-6 ± 1.2e-6, refused, and the linear fit was kept with gains 1.9σ
    and 5.9σ off (+0.10 / +0.58 %); this candidate's own gains, 8.0003 and 5.0005 for 8 and 5, have σ 2.4e-5 and
    4.2e-5 relative. Where the gain's σ is the larger and μ_j the trade (σ_kj/k_j ≈ σ_μj), the test is the 3σ one."""
    resolution = np.where(np.isfinite(gain_rel_std), np.asarray(gain_rel_std, dtype=float), 0.0)
    tol = np.maximum(GAIN_MU_SIGMAS * np.asarray(mu_std, dtype=float), resolution)
    mu = np.asarray(mu, dtype=float)
    return bool(np.all((mu + tol >= GAIN_MU_RANGE[0]) & (mu - tol <= GAIN_MU_RANGE[1])))


@dataclass
class HeldOutGainScore:
    """A gain candidate's prediction of held-out loaded runs of known mass (robot_id/gain_model_holdout.py): its
    score and the σ of its excess over the best candidate's (friction_choice's CRITERION numbers, over the determined
    joints), and each held-out part's mass with its gains fixed and its σ (kg; recorded, not judged)."""

    score: float
    excess_std: float
    mass: list[float] = field(default_factory=list)
    mass_std: list[float] = field(default_factory=list)      # kg, each part's mass σ (Newey–West)

    def to_dict(self) -> dict:
        return {"score": float(self.score), "excess_std": float(self.excess_std),
                "mass_kg": [float(m) for m in self.mass], "mass_std_kg": [float(s) for s in self.mass_std]}

    @classmethod
    def from_dict(cls, d) -> HeldOutGainScore:
        return cls(float(d["score"]), float(d["excess_std"]), [float(m) for m in d.get("mass_kg") or []],
                   [float(s) for s in d.get("mass_std_kg") or []])


@dataclass
class GainCandidate:
    """One friction model the drive gains were fitted with: its gains, their serially correlated σ (what the
    criterion compares and robot.yaml's scale_std then is) and, for the load-friction models, μ_j and its σ;
    `held_out` its held-out prediction (GAIN_HOLDOUT_CRITERION) when it was judged on one."""

    kind: str
    scale: np.ndarray                  # (n,) gains relative to the efforts the fit saw
    serial_std: np.ndarray             # (n,) their Newey–West std (floored at the textbook one)
    score: float                       # RMS over the determined joints of serial_std / scale
    eligible: bool = True
    mu: np.ndarray | None = None       # (n,) load-friction μ_j (0 where not fitted), None for the linear model
    mu_std: np.ndarray | None = None
    held_out: HeldOutGainScore | None = None

    def to_dict(self, joint_names: Sequence[str]) -> dict:
        by_joint = lambda a: dict(zip(joint_names, (float(x) for x in a)))  # noqa: E731
        d = {"score_pct": 100 * float(self.score), "eligible": bool(self.eligible), "scale": by_joint(self.scale),
             "serial_std": by_joint(self.serial_std)}
        if self.mu is not None and self.mu_std is not None:
            d["load_friction_mu"] = by_joint(self.mu)
            d["load_friction_mu_std"] = by_joint(self.mu_std)
        if self.held_out is not None:
            d["held_out"] = self.held_out.to_dict()
        return d


GAIN_HOLDOUT_CRITERION = (
    "held-out loaded runs of known mass (identify-robot --gain-check runs, or without them the calibration's loaded "
    "run split into contiguous halves, each predicted by the candidates fitted without it): each candidate's gains, θ, "
    "friction and μ fixed, the load's CoM and inertia fitted on the held-out samples, the mass the known one; "
    "score the mean over held-out samples of the squared effort residual over the smallest held-out RMSE of any "
    "candidate, averaged over the joints the known mass determines; the simplest eligible candidate (linear, one "
    f"shared μ, a μ per joint) whose excess over the best is within {SEPARATION_SIGMAS:g} σ of the paired difference "
    f"(σ from {BLOCKS_PER_RUN} block means per held-out part); a candidate whose load friction μ_j lies beyond "
    f"[{GAIN_MU_RANGE[0]:g}, {GAIN_MU_RANGE[1]:g}] by more than {GAIN_MU_TOLERANCE} is not eligible")


def model_choice_weight(candidates: Sequence[GainCandidate], chosen: str) -> float:
    """The weight of the candidates the criterion did not choose in the chosen gains' σ (GAIN_CHOICE_SPREAD): each
    eligible candidate weighs 1/score² (its gains' measured σ as its evidence), the others not at all. The two
    fits' gains differ by what their friction models get wrong; which of them is right the one pair cannot say
    beyond their scores, so the chosen gains are off by that distance with the other's weight."""
    inv = {c.kind: 1.0 / c.score ** 2 for c in candidates if c.eligible and np.isfinite(c.score) and c.score > 0}
    if chosen not in inv or len(inv) < 2:
        return 0.0
    return float(sum(v for k, v in inv.items() if k != chosen) / sum(inv.values()))


GAIN_CHOICE_SPREAD = (
    "σ of a determined gain: the chosen fit's σ and √w × its distance to the other candidate's gain combined in "
    "quadrature, w the other candidate's weight (model_choice_weight: each eligible candidate ∝ 1/score²); the "
    "shift is one direction, so it enters effort.gain_covariance as a rank-one term")


GAIN_LOAD_FRICTION_SPREAD = (
    "relative std of a determined gain whose fit left out its joint's load-Coulomb level μ_j|τ_j| sgn(q̇_j): "
    "|∂k_j/∂μ_j| × μ_j's σ were it freed on the calibration run (bounded by a prior σ of 0.1), in quadrature with the "
    "gain's σ; ~0 where the motion separates the two, large where the joint's torque keeps the sign of its velocity; "
    "a diagonal term of effort.gain_covariance, which the payloads' gain share leaves out (the gains absorbed the "
    "load friction the payload fits leave out)")


@dataclass
class GainModelChoice:
    """robot.yaml effort.gain_model: which friction model the drive gains were fitted with, by which criterion, the
    candidates' numbers, and the joints whose gains the known mass determines (the criterion's joints).
    `choice_weight`: the other candidates' weight in the gains' σ (model_choice_weight, GAIN_CHOICE_SPREAD);
    None in files written before it, whose σ is the chosen fit's alone."""

    chosen: str
    criterion: str
    determined: list[str]
    candidates: list[GainCandidate]
    choice_weight: float | None = None
    # the held-out loaded runs (or parts) the candidates were judged on (GAIN_HOLDOUT_CRITERION); empty: judged by
    # GAIN_MODEL_CRITERION, the calibration pair's own σ
    held_out: list[str] = field(default_factory=list)
    # (n,) the relative std the chosen gains take from their joints' load friction where the fit left it out and the
    # calibration run cannot separate it from the gain (GAIN_LOAD_FRICTION_SPREAD); None in files written before it
    load_friction_spread: np.ndarray | None = None

    def choice_spread(self, joint_names: Sequence[str]) -> np.ndarray:
        """(n,) relative shift of the chosen gains that model-choice uncertainty adds, one direction:
        √w (k_other − k_chosen) / k_chosen on the determined joints (w = choice_weight), 0 elsewhere and in files
        without a choice_weight."""
        out = np.zeros(len(joint_names))
        chosen = self.candidate(self.chosen)
        if not self.choice_weight or chosen is None:
            return out
        det = np.array([j in self.determined for j in joint_names])
        # More than one other candidate: their distances averaged with their weights, so the shift stays one
        # direction of size √w (two candidates: the other's distance, as before).
        inv = {c.kind: 1.0 / c.score ** 2 for c in self.candidates
               if c.kind != self.chosen and c.eligible and np.isfinite(c.score) and c.score > 0}
        total = sum(inv.values())
        for c in self.candidates:
            if c.kind in inv:
                out += inv[c.kind] / total * np.where(det, (c.scale - chosen.scale) / chosen.scale, 0.0)
        return np.sqrt(self.choice_weight) * out

    @property
    def load_friction_fitted(self) -> bool:
        """The chosen gains were fitted with the load-dependent friction: they have not absorbed it."""
        return self.chosen in (GAIN_SHAPED_LOAD, GAIN_SHARED_MU)

    def candidate(self, kind: str) -> GainCandidate | None:
        return next((c for c in self.candidates if c.kind == kind), None)

    def text(self) -> str:
        plausible = lambda c: "" if c.eligible else " (μ not plausible)"  # noqa: E731
        if self.held_out:
            parts = ", ".join(f"{c.kind} " + ("not judged" if c.held_out is None else f"{c.held_out.score:.4g}" + (
                "" if not c.held_out.excess_std else f" (± {c.held_out.excess_std:.2g})")) + plausible(c)
                for c in self.candidates)
            return (f"drive gains fitted with the {self.chosen} friction model (held-out prediction of "
                    f"{'; '.join(self.held_out)} on {', '.join(self.determined) or 'no joint'}: {parts})")
        parts = ", ".join(f"{c.kind} {100 * c.score:.3g} %" + plausible(c) for c in self.candidates)
        return (f"drive gains fitted with the {self.chosen} friction model (their Newey-West σ on "
                f"{', '.join(self.determined) or 'no joint'}, RMS: {parts}; no held-out loaded run judged them)")

    def to_dict(self, joint_names: Sequence[str]) -> dict:
        d: dict = {"chosen": self.chosen, "criterion": self.criterion, "determined": list(self.determined),
                   "candidates": {c.kind: c.to_dict(joint_names) for c in self.candidates}}
        if self.held_out:
            d["held_out"] = list(self.held_out)
        if self.choice_weight is not None:
            d["choice_weight"] = float(self.choice_weight)
            d["choice_spread"] = GAIN_CHOICE_SPREAD
        if self.load_friction_spread is not None:
            d["load_friction_spread"] = dict(zip(joint_names, (float(x) for x in self.load_friction_spread)))
            d["load_friction_spread_rule"] = GAIN_LOAD_FRICTION_SPREAD
        return d

    @classmethod
    def from_dict(cls, d, joint_names: Sequence[str], source: str) -> GainModelChoice:
        key = f"{source}: effort.gain_model"
        try:
            if d["chosen"] not in GAIN_MODELS:
                raise ValueError(f"chosen is {d['chosen']!r}, not one of {', '.join(GAIN_MODELS)}")
            cands = []
            for kind, c in (d.get("candidates") or {}).items():
                if kind not in GAIN_MODELS:
                    raise ValueError(f"candidate {kind!r} is not one of {', '.join(GAIN_MODELS)}")
                has_mu = c.get("load_friction_mu") is not None
                cands.append(GainCandidate(str(kind), _by_joint(c, "scale", joint_names),
                                           _by_joint(c, "serial_std", joint_names), float(c["score_pct"]) / 100,
                                           c.get("eligible", True),
                                           _by_joint(c, "load_friction_mu", joint_names) if has_mu else None,
                                           _by_joint(c, "load_friction_mu_std", joint_names) if has_mu else None,
                                           None if c.get("held_out") is None else
                                           HeldOutGainScore.from_dict(c["held_out"])))
            determined = [str(j) for j in d.get("determined") or []]
            held_out = [str(r) for r in d.get("held_out") or []]
            _check_candidates(cands, determined, joint_names)
            if held_out and any(c.held_out is None for c in cands if c.eligible):
                raise ValueError("held_out names runs but not every eligible candidate has its held-out score")
            if not held_out and any(c.held_out is not None for c in cands):
                raise ValueError("a candidate has a held-out score but held_out names no run")
            spread = None if d.get("load_friction_spread") is None else \
                _by_joint(d, "load_friction_spread", joint_names)
            if spread is not None and not np.all(np.isfinite(spread) & (spread >= 0)):
                raise ValueError(f"load_friction_spread {spread.tolist()} is not finite and non-negative")
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise PayloadIdError(f"{key} is damaged ({type(err).__name__}: {err})",
                                 "re-run payload-id identify-robot") from err
        # The choice decides whether the payload fits model the load friction (RobotIdentification.
        # gains_absorbed_load_friction): a `chosen` the recorded candidates do not give flips that for gains fitted
        # the other way (real UR10e: load friction on with gains that absorbed it moved difference-rls by +3-5 %).
        picked = choose_gain_model(cands)
        if picked != d["chosen"]:
            raise PayloadIdError(f"{key}: chosen is {d['chosen']} but its candidates' numbers give {picked} by its "
                                 "criterion: the file was edited after identification",
                                 "re-run payload-id identify-robot")
        weight = d.get("choice_weight")
        if weight is not None:
            # The weight sets the gains' σ (scale_std, gain_covariance): one the candidates do not give was edited.
            expected = model_choice_weight(cands, picked)
            if not (isinstance(weight, (int, float)) and abs(float(weight) - expected) <= 1e-6 + 1e-6 * expected):
                raise PayloadIdError(f"{key}: choice_weight is {weight!r} but its candidates' scores give "
                                     f"{expected:.6g}: the file was edited after identification",
                                     "re-run payload-id identify-robot")
        return cls(str(d["chosen"]), str(d["criterion"]), determined, cands,
                   None if weight is None else float(weight), held_out, spread)


def _by_joint(d: Mapping, key: str, joint_names: Sequence[str]) -> np.ndarray:
    return np.array([float(d[key][j]) for j in joint_names])


def _check_candidates(cands: Sequence[GainCandidate], determined: Sequence[str], joint_names: Sequence[str]) -> None:
    """What identify-robot writes: the linear candidate (the criterion's reference), each kind once, finite scores
    and gains, `eligible` a boolean, and `determined` naming the robot's joints."""
    kinds = [c.kind for c in cands]
    if GAIN_LINEAR not in kinds or len(set(kinds)) != len(kinds):
        raise ValueError(f"candidates are {kinds}: the {GAIN_LINEAR} one once, each other kind at most once")
    for c in cands:
        if not isinstance(c.eligible, bool):
            raise ValueError(f"candidate {c.kind}: eligible is {c.eligible!r}, not true or false")
        # score is inf where no joint is determined (drive_gains.gain_candidate): only NaN and signs are damage.
        if not (c.score > 0 and np.all(np.isfinite(c.scale)) and np.all(c.scale > 0) and np.all(c.serial_std >= 0)):
            raise ValueError(f"candidate {c.kind}: score, scale or serial_std not a positive number")
    unknown = sorted(set(determined) - set(joint_names))
    if unknown:
        raise ValueError(f"determined names {unknown}, not joints of this robot ({', '.join(joint_names)})")


def choose_gain_model(candidates: Sequence[GainCandidate]) -> str:
    """The kind the criterion picks among `candidates`. Judged on held-out loaded runs (every candidate has its
    held_out score): GAIN_HOLDOUT_CRITERION, the simplest eligible candidate within SEPARATION_SIGMAS of the best
    eligible one's score. Otherwise GAIN_MODEL_CRITERION, the linear one first: another replaces it only when
    eligible and its score is below (1 − GAIN_SCORE_MARGIN) × the linear one's."""
    order = {k: i for i, k in enumerate(GAIN_MODELS_SIMPLEST_FIRST)}
    judged = sorted(((c, c.held_out) for c in candidates if c.held_out is not None and c.eligible),
                    key=lambda ch: order.get(ch[0].kind, len(order)))
    if judged:
        best = min(h.score for _, h in judged)
        return next(c.kind for c, h in judged if h.score - best <= SEPARATION_SIGMAS * h.excess_std)
    linear = next(c for c in candidates if c.kind == GAIN_LINEAR)
    better = [c for c in candidates if c.kind != GAIN_LINEAR and c.eligible
              and c.score < (1.0 - GAIN_SCORE_MARGIN) * linear.score]
    return min(better, key=lambda c: c.score).kind if better else GAIN_LINEAR
