"""The robot model's error on motions it was not fitted to, measured as the payload it would invent there.

A payload fit that uses robot.yaml's model (khalil-1, khalil-2, direct-rls, difference-rls) attributes to the
payload whatever torque the model mispredicts along the payload's columns. On a held-out recording of the
unloaded robot (a motion the model was not fitted to, no payload on the flange) the same fit therefore returns
a spurious payload φ_h whose true value is 0: the model error's image in payload parameters, measured, not
predicted. Over the held-out motions h = 1..H the mean square per parameter,

    C_me = diag((1/H) Σ_h φ_h²),

is the model-error term of a payload fit's covariance on another motion (payload/covariance_extra.py). It
replaces the two estimates of the same thing the fit makes without it: the Newey–West inflation of its own
residuals (which sees only the part of the model error the payload columns do not absorb) and the gear
friction's predicted worst case (gear_friction.UnmodelledGear). On the real UR10e (robot from the 14harm pair,
held-out: the 15harm and 01_31 unloaded runs) khalil-1's mass σ goes from 1.5-2.3 % to 0.8-0.9 % for errors of
0.1-1.0 %, and the CoM σ from 4-10 mm to ≤ 4 mm (docs/design.md "Model error measured on held-out motions").

That is the error of an estimate from a whole run. An online estimate partway through a motion has averaged less of
the model error, which does not shrink like noise: direct-rls fed the real UR10e's unloaded 15harm run (robot.yaml
from the 14harm pair) reads a spurious −0.10..−0.13 kg over 9-14 s of its 54 s, −0.004 kg at the end; on the loaded
run the same method is −0.11..−0.13 kg off over the same seconds. So each online method is also run over each
held-out run (`running`: per method, per run, its mass σ at the rows' assumed noise and its spurious mass every
payload/held_out_error.RUNNING_EVERY_S), and an estimate whose mass σ at that noise is s reads
prefix_mass_variance(method, s): per run, the largest spurious mass² at the points where the held-out run had
determined the mass at least as well (σ at most s), never below the run's whole-run φ_h², averaged over the runs.
Matched by the information the estimate has reached (OnlineEstimator.mass_information_std), not by seconds: the
held-out runs are other motions of other lengths; nor by the estimator's own σ, whose residual scale on a loaded run
holds more model error than on an unloaded one (real UR10e, 01_31 loaded: matched by own σ its σ went 0.8 → 1.4-2.9 %
for errors under 1 %). An estimate as well informed as a whole held-out run reads that run's whole-run error, as
before.

Part of the model's error depends on the load (load-dependent gear friction, drive nonlinearity), and no unloaded
run sees it: on the real UR10e direct-rls on 15harm-load read −4.41 % where 15harm's own unloaded twin read 2.87 %
(h166). A held-out LOADED run of known mass m_L (identify-robot --held-out-loaded-csv-ur with --known-payload-mass)
measures it for what is known there, the mass only (`LoadedModelError`): each method that takes this error into its
σ (khalil-1, direct-rls, difference-rls) run over it reads e_L = m̂ − m_L, whole-run and, for the online methods,
along the run against the same information σ as the unloaded record. The loaded error holds the motion's unloaded
part too, so only what it holds beyond the unloaded record's variance v_u is the load's, and that part grows with the
load (a friction ∝ the load's torque moves the mass ∝ the mass): for an estimate of mass m,

    v(m) = v_u + mean_L((m / m_L)² max(0, e_L² − v_u)),

at the same information σ on both sides where the record runs along the motion. At m = m_L it is the larger of the
two records; an estimate of a light part keeps nearly the unloaded one. (A pooled mean over unloaded and loaded runs
would dilute the one loaded run by the unloaded ones, which cannot see its error; the largest of the two would carry
a 2.8 kg run's load error to a 0.3 kg part.) Only the mass is scored: the CoM and inertia of the load are unknown,
and the methods' agreement on them is no truth.

Only the diagonal: a handful of held-out motions (H of them, rank H ≤ 10) cannot measure the correlations, and a
rank-1 C_me from one motion made the projection onto physical parameters (whose metric is the covariance,
payload/finish.py) move the mass along the one measured direction (khalil-1 on 15harm +0.14 → −1.93 %).
Entries a held-out motion does not determine are NaN there and left out of that entry's mean; an entry no
held-out motion determines leaves the measurement unusable (covariance() returns None).

A payload fit in another frame rigidly attached to the same body (tool0 on wrist_3_link) uses the same spurious
payloads moved to its frame: the payload adds X_a φ_a = X_b φ_b to the body's parameters (inertia.transform_matrix,
the rigid-body transform of inertial parameters), so φ_b = X_b⁻¹ X_a φ_a, and C_me is taken over the moved rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode

# difference-rls's first moments and inertia are converted from ε = θ_b − θ_a with the identification's row weights;
# with C_a (the robot identification's covariance) in that conversion (Xu's generalised J^#) or without it.
WITH_ROBOT_COVARIANCE, DATA_ONLY = "robot_covariance", "data_only"
CONVERSION_CRITERION = ("difference-rls's spurious first moments on the held-out unloaded runs (true value 0): the "
                        "conversion whose mean square over the runs and the three axes is smaller; a tie keeps "
                        f"{WITH_ROBOT_COVARIANCE}")
# The level at which chi2 (recorded next to the choice) says the two conversions differ beyond the noise and an
# identification error distributed as C_a.
CONVERSION_LEVEL = 0.99

# The fewest held-out motions whose measured model error the online rule's second route may declare on
# (payload/online/base.py; identify-robot notes a robot.yaml below it).
# The route declares because that error, which more rows do not shrink, dominates σ; what it then reports is right only
# as far as the error carries over to this motion, and a spread between motions needs two to be seen at all. With one,
# the real UR10e's cross-validation (robot.yaml given 01_31's unloaded run only) read 1.09 % of the load at the
# information direct-rls on 15harm had at 16.8 s, where 15harm's own unloaded run reads 2.87 % and the loaded run was
# −4.41 % off: declared at 3.74σ (docs/design.md, "Model error measured on held-out motions").
MIN_DECLARING_MOTIONS = 2

# A spurious mass this many of the run's own σ from zero is a load on the flange, not the model's error (the
# good held-out runs: 0.03σ and 1.1σ; the loaded 15harm run: 57σ). A smaller load cannot be told from the
# model error by the run itself; it widens every payload's σ rather than narrowing it. Here, not in
# payload/held_out_error.py: khalil-1's own-unloaded-run join uses it too, and held_out_error imports the methods.
MAX_MASS_SIGMAS = 5.0

# The payload run's own motion, where an unloaded run of it is given with it (identify-payload --unloaded-csv-ur):
# that run is robot.yaml's model error on exactly the motion the payload fit suffers it on, measured, where the held-out
# motions only sample other motions' errors (H of them: with one, its square is one draw of each entry's variance). So
# khalil-1 joins it to the held-out runs as one more motion (HeldOutModelError.covariance_with_run): the mean square
# over them and it, per entry, where that is larger than C_me. Never narrower: identify-payload cannot tell the
# calibration run itself (whose spurious payload is the fit's in-sample residual, ~0.1 g·m on the UR10e's 14harm run)
# from another motion, as identify-robot does when it refuses it as a held-out run. A run already held out is not
# counted twice (HeldOutModelError.holds_run), nor a run of another motion (khalil._with_own_unloaded_run, h220).
# Real UR10e, robot.yaml given only 01_31's unloaded run: khalil-1 on
# 15harm with its unloaded run CoM x −48.1 ± 4.0 mm against khalil-3's −41.4 ± 1.2 (1.6σ; −48.3 ± 1.3, 4.0σ, before).
OWN_UNLOADED_RUN = ("the payload run's own unloaded run joined to the held-out runs as one more motion: per entry the "
                    "larger of C_me and the mean square over the held-out runs and it")


def conversion_chi2_limit(runs: int) -> float:
    """χ² of 3 first moments per held-out run at CONVERSION_LEVEL."""
    from scipy.stats import chi2  # noqa: PLC0415 - half a second of start-up, only identify-robot's record needs it

    return float(chi2.ppf(CONVERSION_LEVEL, 3 * runs)) if runs > 0 else float("nan")


@dataclass
class DifferenceRLSConversion:
    """How difference-rls converts its first moments and inertia, chosen on held-out unloaded runs.

    With C_a the conversion weighs ε by (s² I⁻¹ + C_a)⁻¹: right where θ̂_a's error is the identification's noise (the
    simulated cell: robot and payload on different motions, C_a its true covariance). On the real UR10e the model's
    error on another motion is not of that shape: with the identification's per-joint weights, M = I/s² dwarfs
    C_a⁻¹ and the conversion follows C_a's directions, which carry the 14harm fit's error onto the 15harm motion. The
    spurious first moments difference-rls finds on the held-out unloaded 15harm run are (6.4, −9.6, 3.4) g·m with C_a
    and (−0.3, −1.3, 3.3) g·m without (01_31: (−3.7, 0.9, 2.6) and (−2.1, 0.6, 3.3)); on the loaded 15harm run its
    CoM y is 153.1 mm with C_a, 157.3 mm without, where khalil-3 finds 161.7 mm.

    Recorded next to the choice (chi2): how far the two conversions' first moments differ on the held-out runs,
    against what the noise (as it is, serially correlated) and an identification error distributed as C_a predict
    for their difference. Both conversions are linear in the same evidence, so the difference holds only the noise
    they weigh differently (a Hausman-type statistic; 3 dof per run). It says whether the mean squares' order is
    evidence or noise: real UR10e 10.5 (6 dof, 99 %: 16.8; p ≈ 0.1), simulated UR10 cell (identification 1001, one
    held-out run, the 3 % tie) 2.3 (3 dof, 99 %: 11.3)."""

    chosen: str
    spurious: dict[str, np.ndarray]  # conversion -> (H, 10) spurious payloads on the held-out runs
    criterion: str = CONVERSION_CRITERION
    # χ² of the two conversions' first-moment difference over the runs (3 dof each; NaN: not measured, e.g. a file
    # written before it was recorded).
    chi2: float = float("nan")

    @classmethod
    def choose(cls, spurious: dict[str, np.ndarray], chi2: float = float("nan")) -> DifferenceRLSConversion:
        rows = {k: np.asarray(v, dtype=float).reshape(-1, 10) for k, v in spurious.items()}
        choice = cls(WITH_ROBOT_COVARIANCE, rows, chi2=float(chi2))
        # NaN (a first moment some run left undetermined) compares False: the default stays.
        if choice.mean_square(DATA_ONLY) < choice.mean_square(WITH_ROBOT_COVARIANCE):
            choice.chosen = DATA_ONLY
        return choice

    def chi2_limit(self) -> float:
        """χ² at CONVERSION_LEVEL: beyond it the conversions' difference is not C_a's premise's (3 dof per run)."""
        return conversion_chi2_limit(self.spurious[WITH_ROBOT_COVARIANCE].shape[0])

    def mean_square(self, conversion: str) -> float:
        """The criterion's score of `conversion`: mean square spurious first moment, (kg·m)²; NaN when a held-out run
        left one undetermined."""
        first = self.spurious[conversion][:, 1:4]
        return float(np.mean(first**2)) if first.size and np.all(np.isfinite(first)) else float("nan")

    def to_dict(self) -> dict:
        d: dict = {"chosen": self.chosen, "criterion": self.criterion}
        if np.isfinite(self.chi2):
            d.update(chi2=self.chi2, chi2_limit=self.chi2_limit(), chi2_level=CONVERSION_LEVEL)
        d["spurious_payload"] = {k: [[None if not np.isfinite(x) else float(x) for x in row] for row in v]
                                 for k, v in self.spurious.items()}
        return d

    @classmethod
    def from_dict(cls, d, key: str) -> DifferenceRLSConversion:
        known = (WITH_ROBOT_COVARIANCE, DATA_ONLY)
        if not isinstance(d, dict) or d.get("chosen") not in known or not isinstance(d.get("spurious_payload"), dict):
            raise PayloadIdError(f"{key}.difference_rls is {d!r}, not a mapping {{chosen: one of {list(known)}, "
                                 "criterion, chi2, spurious_payload}",
                                 "the file is damaged; re-run payload-id identify-robot")
        try:
            spurious = {str(k): np.array([[np.nan if x is None else float(x) for x in row] for row in v],
                                         dtype=float).reshape(-1, 10) for k, v in d["spurious_payload"].items()}
            chi2 = float("nan") if d.get("chi2") is None else float(d["chi2"])
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.difference_rls.spurious_payload or chi2 is not numbers ({err})",
                                 "the file is damaged; re-run payload-id identify-robot") from err
        return cls(str(d["chosen"]), spurious, str(d.get("criterion", CONVERSION_CRITERION)), chi2)


def _worst_at(points: np.ndarray, whole: float, s: np.ndarray) -> np.ndarray:
    """(K,) per σ in `s`: the largest error² over `points` ((P, 2) [information σ, error]) at least as informed (σ at
    most that one), never below the whole run's error² `whole`² (HeldOutModelError.prefix_mass_variance's rule)."""
    p = np.asarray(points, dtype=float).reshape(-1, 2)
    p = p[np.isfinite(p).all(axis=1)]
    order = np.argsort(p[:, 0], kind="stable")
    reach = np.maximum.accumulate(p[order, 1] ** 2) if order.size else np.zeros(0)
    count = np.searchsorted(p[order, 0], s, side="right")
    worst = np.where(count > 0, reach[np.maximum(count - 1, 0)] if reach.size else 0.0, 0.0)
    return np.maximum(whole**2, worst)


@dataclass
class LoadedModelError:
    """The model's error on held-out loaded runs of known mass, in the mass only (module doc): per method, per run
    (K, 2) [mass σ at the rows' assumed noise, mass − known mass] (kg) along the run, its last row the whole run's
    (khalil-1: one row, the whole run)."""

    sources: list[str]
    known_mass: np.ndarray                 # (L,) kg, one per run
    running: dict[str, list[np.ndarray]]   # method -> per run (K, 2)

    def mass_variances(self, method: str, information_stds: np.ndarray | None, unloaded: np.ndarray,
                       mass: float) -> np.ndarray | None:
        """(K,) v(m) (module doc) for an estimate of `mass` kg whose mass σ at the assumed noise is each of
        `information_stds` (None: the whole run's), the unloaded record's variances there being `unloaded` (K,);
        None when `method` was not run over the loaded runs."""
        runs = self.running.get(str(method))
        if not runs or len(runs) != len(self.sources) or not np.isfinite(mass):
            return None
        v_u = np.asarray(unloaded, dtype=float).reshape(-1)
        load_part = []
        for points, known in zip(runs, self.known_mass):
            p = np.asarray(points, dtype=float).reshape(-1, 2)
            if not p.size or not np.isfinite(p[-1, 1]) or not known > 0:
                continue
            e2 = (np.full(v_u.shape, p[-1, 1] ** 2) if information_stds is None else
                  _worst_at(p, float(p[-1, 1]), np.asarray(information_stds, dtype=float).reshape(-1)))
            load_part.append((abs(float(mass)) / float(known)) ** 2 * np.maximum(e2 - v_u, 0.0))
        if not load_part:
            return None
        return v_u + np.mean(load_part, axis=0)

    def text(self) -> str:
        """identify-robot's progress line: each method's whole-run mass error on each loaded run."""
        return ("model error on held-out loaded runs (mass − known, whole run): " + "; ".join(
            f"{m} " + ", ".join(f"{100 * float(np.asarray(p).reshape(-1, 2)[-1, 1]) / k:+.2f} %"
                                for p, k in zip(runs, self.known_mass))
            for m, runs in self.running.items()))

    def to_dict(self) -> dict:
        return {"held_out": list(self.sources), "known_mass": [float(m) for m in self.known_mass],
                "columns": ["mass_std_at_assumed_noise", "mass_error"],
                "mass_error": {m: [np.asarray(p, dtype=float).round(6).tolist() for p in runs]
                               for m, runs in self.running.items()}}

    @classmethod
    def from_dict(cls, d, key: str) -> LoadedModelError:
        fix = "the file is damaged; re-run payload-id identify-robot"
        if not isinstance(d, dict) or not {"held_out", "known_mass", "mass_error"} <= set(d):
            raise PayloadIdError(f"{key}.loaded is {d!r}, not a mapping {{held_out, known_mass, mass_error}}", fix)
        sources = [str(s) for s in d["held_out"]]
        try:
            known = np.array(d["known_mass"], dtype=float).reshape(-1)
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.loaded.known_mass is not numbers ({err})", fix) from err
        if known.size != len(sources) or not np.all(known > 0):
            raise PayloadIdError(f"{key}.loaded: {known.size} known masses for {len(sources)} loaded runs, or a mass "
                                 "not positive", fix)
        return cls(sources, known, _running_from_dict(d["mass_error"], f"{key}.loaded", len(sources),
                                                      "mass_error", "mass_error"))


@dataclass
class HeldOutModelError:
    frame: str                       # the payload frame the spurious payloads are expressed in
    sources: list[str]               # the held-out recordings, one per row of `spurious`
    spurious: np.ndarray             # (H, 10) φ fitted on each held-out unloaded run (true value 0); NaN: undetermined
    notes: list[str] = field(default_factory=list)
    # difference-rls's moments conversion chosen on the same runs (None: not measured, files written before it).
    difference_rls: DifferenceRLSConversion | None = None
    # online method -> per held-out run (K, 2): [mass σ at the rows' assumed noise, spurious mass] (kg) along the run;
    # empty: not measured (files written before it), the whole-run C_me is used at every point of a motion.
    running: dict[str, list[np.ndarray]] = field(default_factory=dict)
    # The error on held-out loaded runs of known mass (None: none given, or a file written before it).
    loaded: LoadedModelError | None = None

    def prefix_mass_variance(self, method: str, information_std: float, mass: float | None = None) -> float | None:
        """The model error's mass variance for an online `method`'s estimate whose mass σ at the rows' assumed noise is
        `information_std` (module doc), kg², with the loaded runs' part for an estimate of `mass` kg (None: left out);
        None when `method` was not run over the held-out runs (then C_me's)."""
        if not np.isfinite(information_std):
            return None
        variances = self.prefix_mass_variances(method, np.array([information_std], dtype=float), mass)
        return None if variances is None or not np.isfinite(variances[0]) else float(variances[0])

    def prefix_mass_variances(self, method: str, information_stds: np.ndarray,
                              mass: float | None = None) -> np.ndarray | None:
        """prefix_mass_variance at each of `information_stds` (K,) at once (NaN where a σ is not finite or no run
        determined the mass); None when `method` was not run over the held-out runs."""
        runs = self.running.get(str(method))
        whole = np.asarray(self.spurious, dtype=float).reshape(-1, 10)[:, 0]
        if not runs or len(runs) != whole.size:
            return None
        s = np.asarray(information_stds, dtype=float).reshape(-1)
        # Its mass undetermined on a run (NaN): left out of the mean, as covariance() does.
        per_run = [_worst_at(points, float(phi), s) for points, phi in zip(runs, whole) if np.isfinite(phi)]
        if not per_run:
            return None
        unloaded = np.mean(per_run, axis=0)
        with_load = None if self.loaded is None or mass is None else self.loaded.mass_variances(method, s, unloaded,
                                                                                                float(mass))
        return np.where(np.isfinite(s), unloaded if with_load is None else with_load, np.nan)

    def mass_motions(self) -> int:
        """How many held-out motions determined the mass (their spurious masses are the sample C_me's mass variance
        and the running record's are taken over)."""
        return int(np.isfinite(np.asarray(self.spurious, dtype=float).reshape(-1, 10)[:, 0]).sum())

    def too_few_motions_note(self) -> Note | None:
        """Say, when identify-robot writes robot.yaml, that its model error rests on fewer held-out motions than the
        online rule declares on (MIN_DECLARING_MOTIONS), before a goal runs to its end without converging."""
        motions = self.mass_motions()
        if motions == 0 or motions >= MIN_DECLARING_MOTIONS:
            return None
        return Note(NoteCode.ROBOT_MODEL_ERROR_FEW_MOTIONS,
                    f"the model error was measured on {motions} held-out motion(s) that determine the mass: "
                    f"difference-rls and direct-rls will not declare convergence by it (a spread between motions "
                    f"needs {MIN_DECLARING_MOTIONS} to be seen); add a --held-out-csv-ur / --held-out-bag run of "
                    f"another motion")

    def covariance(self, method: str | None = None, mass: float | None = None) -> np.ndarray | None:
        """(10, 10) diagonal C_me over the held-out motions, None when some entry was determined by none of them; with
        `method` and `mass` (kg, its estimate) its mass variance holds the loaded runs' part too (module doc)."""
        s = np.asarray(self.spurious, dtype=float).reshape(-1, 10)
        known = np.isfinite(s)
        if s.shape[0] == 0 or not known.any(axis=0).all():
            return None
        cov = np.diag(np.sum(np.where(known, s, 0.0) ** 2, axis=0) / known.sum(axis=0))
        if self.loaded is not None and method is not None and mass is not None:
            with_load = self.loaded.mass_variances(method, None, np.array([cov[0, 0]]), float(mass))
            if with_load is not None:
                cov[0, 0] = float(with_load[0])
        return cov

    def holds_run(self, phi: np.ndarray, source: str | None) -> bool:
        """Whether an unloaded run whose spurious payload in this frame is `phi` (10,) is one of the held-out runs
        already: the same file, or the same samples (its φ one of the rows, to float rounding)."""
        if source and str(Path(source).resolve()) in {str(Path(s).resolve()) for s in self.sources}:
            return True
        rows = np.asarray(self.spurious, dtype=float).reshape(-1, 10)
        phi = np.asarray(phi, dtype=float).reshape(10)
        same = np.isclose(rows, phi, rtol=1e-9, atol=1e-12) | (np.isnan(rows) & np.isnan(phi))
        return bool(np.any(np.all(same, axis=1)))

    def covariance_with_run(self, cov: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """`cov` (this record's C_me for a payload fit, (10, 10)) with the payload run's own unloaded run joined as
        one more held-out motion (OWN_UNLOADED_RUN): per entry the larger of `cov`'s and the mean square over the
        held-out rows and `phi` (its spurious payload, NaN where undetermined)."""
        rows = np.vstack([np.asarray(self.spurious, dtype=float).reshape(-1, 10),
                          np.asarray(phi, dtype=float).reshape(1, 10)])
        known = np.isfinite(rows)
        count = known.sum(axis=0)
        joined = np.sum(np.where(known, rows, 0.0) ** 2, axis=0) / np.maximum(count, 1)
        out = np.array(cov, dtype=float, copy=True)
        diag = np.diag(out).copy()
        out[np.diag_indices(10)] = np.where(count > 0, np.maximum(diag, joined), diag)
        return out

    def in_frame(self, model: RobotModel, frame: str) -> HeldOutModelError | None:
        """The spurious payloads expressed in `frame`; None when `frame` is not rigidly attached to the body the
        measurement's frame is on (then the model error there is another one, and was not measured)."""
        if str(frame) == str(self.frame):
            return self
        joint_a, x_a = payload_transform(model, str(self.frame))
        joint_b, x_b = payload_transform(model, str(frame))
        if joint_a != joint_b:
            return None
        s = np.asarray(self.spurious, dtype=float).reshape(-1, 10)
        # An undetermined entry (NaN) leaves every entry it mixes into undetermined in the new frame.
        moved = s @ np.linalg.solve(x_b, x_a).T
        # The mass is the same in every frame: the running spurious masses stay as they are.
        return HeldOutModelError(str(frame), list(self.sources), moved, list(self.notes), self.difference_rls,
                                 self.running, self.loaded)

    def to_dict(self) -> dict:
        d: dict = {"frame": self.frame, "held_out": list(self.sources),
                   "spurious_payload": [[None if not np.isfinite(v) else float(v) for v in row]
                                        for row in self.spurious]}
        if self.difference_rls is not None:
            d["difference_rls"] = self.difference_rls.to_dict()
        if self.running:
            d["running_mass"] = {"columns": ["mass_std_at_assumed_noise", "spurious_mass"],
                                 **{m: [np.asarray(p, dtype=float).round(6).tolist() for p in runs]
                                    for m, runs in self.running.items()}}
        if self.loaded is not None:
            d["loaded"] = self.loaded.to_dict()
        return d

    @classmethod
    def from_dict(cls, d, source: str) -> HeldOutModelError:
        key = f"{source}: model_error"
        if not isinstance(d, dict) or not {"frame", "held_out", "spurious_payload"} <= set(d):
            raise PayloadIdError(f"{key} is {d!r}, not a mapping {{frame, held_out, spurious_payload}}",
                                 "re-run payload-id identify-robot")
        try:
            rows = np.array([[np.nan if v is None else float(v) for v in row] for row in d["spurious_payload"]],
                            dtype=float).reshape(-1, 10)
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.spurious_payload is not rows of 10 numbers ({err})",
                                 "the file is damaged; re-run payload-id identify-robot") from err
        sources = [str(s) for s in d["held_out"]]
        if len(sources) != rows.shape[0] or np.isinf(rows).any():
            raise PayloadIdError(f"{key}: {len(sources)} held-out recordings for {rows.shape[0]} spurious payloads",
                                 "the file is damaged; re-run payload-id identify-robot")
        conversion = None if d.get("difference_rls") is None else DifferenceRLSConversion.from_dict(
            d["difference_rls"], key)
        loaded = None if d.get("loaded") is None else LoadedModelError.from_dict(d["loaded"], key)
        return cls(str(d["frame"]), sources, rows, difference_rls=conversion,
                   running=_running_from_dict(d.get("running_mass"), key, len(sources)), loaded=loaded)


def _running_from_dict(d, key: str, runs: int, name: str = "running_mass",
                       column: str = "spurious_mass") -> dict[str, list[np.ndarray]]:
    """HeldOutModelError.running from robot.yaml's model_error.running_mass (absent: {}); LoadedModelError.running
    from model_error.loaded.mass_error (`name`, its second `column`)."""
    if d is None:
        return {}
    fix = "the file is damaged; re-run payload-id identify-robot"
    if not isinstance(d, dict):
        raise PayloadIdError(f"{key}.{name} is {d!r}, not a mapping of method to runs", fix)
    out: dict[str, list[np.ndarray]] = {}
    for method, per_run in d.items():
        if method == "columns":
            continue
        try:
            arrays = [np.array(p, dtype=float).reshape(-1, 2) for p in per_run]
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.{name}.{method} is not rows of [mass_std_at_assumed_noise, "
                                 f"{column}] ({err})", fix) from err
        if len(arrays) != runs or any(np.isinf(a).any() or (a[:, 0] < 0).any() for a in arrays):
            raise PayloadIdError(f"{key}.{name}.{method}: {len(arrays)} runs for {runs} held-out recordings, "
                                 "or a σ negative or infinite", fix)
        out[str(method)] = arrays
    return out


def moments_robot_covariance(robot) -> bool:
    """Whether difference-rls converts its first moments and inertia with the robot identification's covariance:
    as robot.yaml's held-out runs chose (DifferenceRLSConversion), else yes (Xu 2024's generalised J^#)."""
    me = getattr(robot, "model_error", None)
    choice = getattr(me, "difference_rls", None)
    return choice is None or choice.chosen != DATA_ONLY
