"""How far the constant friction offsets B_j move between runs, measured on held-out unloaded runs (robot.yaml
friction_offset_drift; identify-robot --drift-bag / --drift-csv-ur).

Real drives' offsets move between runs and days (the UR10e's unloaded recordings: −0.29..+0.34 N·m per joint against
the calibration run, no warm-up or load pattern; docs/design.md "The methods", the friction offsets). A payload fit
that keeps robot.yaml's offsets then reads a moved offset as payload; one that frees them (difference-rls) pays for
the freedom where an offset is nearly collinear with the payload's mean gravity torque (the simulated Panda: mass
0.342 % free against 0.178 % fixed). Neither assumption is measured. This record is: on each held-out unloaded run
h (a motion the robot was not fitted to), robot.yaml's whole model with only the offsets free,

    τ_j − (Y θ̂_a)_j ≈ c_j ΔB_hj      (c_j the offset's regressor column on joint j),

gives ΔB_hj with its σ_hj (Newey–West: the residuals are serially correlated on real drives). Over the H runs,
with ΔB_hj ~ N(0, s_j²) about robot.yaml's offsets and Jeffreys' prior p(s_j²) ∝ 1/s_j², the posterior of s_j² is
scaled-inverse-χ²(H, rms_j²), rms_j² = (1/H) Σ_h ΔB_hj² (Gelman et al., Bayesian Data Analysis, 3rd ed., §3.2),
and a new run's offset change is Student-t_H(0, rms_j). The prior a payload fit takes (`prior_std`) is the Gaussian
with that predictive's 95 % interval, rms_j · t_{H,0.975} / 1.96 (×6.5 with one run, ×2.2 with two, ×1.4 with four:
few runs say little, and the prior says so), never below what the runs themselves resolve (`resolution`, the RMS
of σ_hj). `spread` is the point estimate of s_j with the runs' noise taken out, and robot.yaml's own identification
error as well (below), for the reader and for the methods that hold the offsets (`drift_std`).

ΔB_hj holds the robot model's error on run h's motion where it projects on the offset column, as the loaded run's
free offsets would: that is part of what a payload fit's offsets absorb, so it is measured with them, not removed.
Part of it is θ̂_a's identification error, g_hj δθ_a with g_hj = c_jᵀ Y_j / c_jᵀ c_j (the offset's own error δB_j
among it): its std under robot.yaml's C_a, √(g_hj C_a g_hjᵀ), is `identification_std`. A payload fit already carries
C_a through its response to robot.yaml's whole regressor (methods/common.robot_sensitivity_cov), so a term that added
the offsets' spread with that part in counted it twice: on the simulated cells (bench/accuracy.py xtraj, whose offsets
do not move) C_a's part is 0.009-0.026 N·m per joint on the Panda (0.01-0.085 on the UR10's shoulder lift) against a
spread of 0-0.044 N·m with the noise out (docs/design.md, h127).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.run_records import per_joint_dict, per_run_dict, read_per_run, reading_record, run_sources

# The level of the predictive interval the Gaussian prior matches (two-sided).
PREDICTIVE_LEVEL = 0.95
CRITERION = ("per joint, robot.yaml's model with only the constant friction offsets free on each held-out unloaded "
             "run; prior_std = the Gaussian with the 95 % interval of the Student-t_H predictive of a new run's "
             "offset change (scaled-inverse-chi2 posterior of the spread, Jeffreys prior), never below the runs' "
             "own resolution; for the methods that hold the offsets, the spread with the runs' noise and robot.yaml's "
             "identification covariance along the offset column taken out, widened by the same factor")


def predictive_factor(runs: int) -> float:
    """t_{H, 0.975} / z_0.975: how much wider than the runs' RMS the Gaussian prior is for H runs."""
    from scipy.stats import norm, t  # noqa: PLC0415 - half a second of start-up the payload fits never need

    q = 0.5 + 0.5 * PREDICTIVE_LEVEL
    return float(t.ppf(q, runs) / norm.ppf(q))


@dataclass
class OffsetSpread:
    """The offsets' change ΔB_hj on held-out unloaded runs (N·m, against robot.yaml's), its σ, and what follows:
    `prior_std` (n,), the Gaussian prior on a payload run's offset change (module docstring)."""

    joint_names: list[str]
    runs: list[str]                  # the held-out runs' sources
    offsets: np.ndarray              # (H, n) ΔB_hj, N·m
    offsets_std: np.ndarray          # (H, n) σ_hj, N·m (Newey–West)
    criterion: str = CRITERION
    # (H, n) N·m: the std of ΔB_hj that robot.yaml's C_a predicts (module docstring); None: not recorded (a file
    # written before h127), taken as 0, the record's width as it was then.
    identification_std: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.offsets = np.atleast_2d(np.asarray(self.offsets, dtype=float))
        self.offsets_std = np.atleast_2d(np.asarray(self.offsets_std, dtype=float))
        n, H = len(self.joint_names), len(self.runs)
        if H < 1 or self.offsets.shape != (H, n) or self.offsets_std.shape != (H, n):
            raise PayloadIdError(f"friction offset drift: {H} runs, offsets {self.offsets.shape} and std "
                                 f"{self.offsets_std.shape} for {n} joints", "re-run payload-id identify-robot")
        # A σ whose square underflows (below ~1.5e-154 N·m) is no measurement, and its prior's 1/σ² is infinite:
        # a hand-edited 1e-300 made difference-rls fail in cvxpy ("Problem data contains NaN or Inf"; h133).
        with np.errstate(over="ignore"):     # a huge σ is judged elsewhere (from_dict's effort limits)
            resolvable = bool(np.all(np.square(self.offsets_std) >= np.finfo(float).tiny))
        if not (np.all(np.isfinite(self.offsets)) and np.all(np.isfinite(self.offsets_std)) and resolvable):
            raise PayloadIdError("friction offset drift: an offset change is not finite or its std not positive "
                                 "(nor above 1e-154 N·m)", "re-run payload-id identify-robot with its --drift runs")
        if self.identification_std is not None:
            self.identification_std = np.atleast_2d(np.asarray(self.identification_std, dtype=float))
            if self.identification_std.shape != (H, n) or not np.all(np.isfinite(self.identification_std)) \
                    or np.any(self.identification_std < 0):
                raise PayloadIdError(f"friction offset drift: identification_std {self.identification_std.shape} is "
                                     f"not {H} run(s) × {n} joints of finite stds ≥ 0",
                                     "re-run payload-id identify-robot with its --drift runs")

    @property
    def rms(self) -> np.ndarray:
        return np.sqrt(np.mean(self.offsets**2, axis=0))

    @property
    def resolution(self) -> np.ndarray:
        """(n,) N·m: the RMS of the runs' own σ, the smallest spread they can tell from noise."""
        return np.sqrt(np.mean(self.offsets_std**2, axis=0))

    @property
    def identification(self) -> np.ndarray:
        """(n,) N·m: the RMS over the runs of identification_std, robot.yaml's C_a seen along each offset column
        (0 where not recorded)."""
        if self.identification_std is None:
            return np.zeros(len(self.joint_names))
        return np.sqrt(np.mean(self.identification_std**2, axis=0))

    @property
    def spread(self) -> np.ndarray:
        """(n,) N·m: the point estimate of the offsets' between-run std, the runs' noise and robot.yaml's
        identification error (C_a, which a payload fit's σ carries on its own) taken out: E[rms²] = resolution² +
        identification² + s² (0 when the runs show none beyond them)."""
        return np.sqrt(np.maximum(self.rms**2 - self.resolution**2 - self.identification**2, 0.0))

    @property
    def prior_std(self) -> np.ndarray:
        """(n,) N·m: the std of the Gaussian prior on a new run's offset change (module docstring)."""
        return np.maximum(self.rms * predictive_factor(len(self.runs)), self.resolution)

    @property
    def drift_std(self) -> np.ndarray:
        """(n,) N·m: the width of a new run's true offset change, the runs' own noise out: `spread` widened by the
        same Student-t_H factor as prior_std (0 where the runs show no drift beyond their resolution). The runs'
        noise is what the robot model mispredicts along the offset column on their motions (module docstring); on a
        payload run that error is in the σ's model-error term already (the residuals' Newey–West inflation, or
        robot.yaml's measured model error), and θ̂_a's identification error in its C_a term, so a method that holds
        the offsets fixed adds only this."""
        return self.spread * predictive_factor(len(self.runs))

    def per_offset_parameter(self, param_names: Sequence[str], per_joint: np.ndarray | None = None) -> np.ndarray:
        """(k,) N·m: `per_joint` (default prior_std) on each friction parameter that is a joint's constant offset
        (B_<joint>, the friction model's param_names), NaN on the others."""
        std = dict(zip(self.joint_names, self.prior_std if per_joint is None else per_joint))
        out = np.full(len(param_names), np.nan)
        for i, name in enumerate(param_names):
            kind, _, joint = name.partition("_")
            if kind == "B" and joint in std:
                out[i] = float(std[joint])
        return out

    def to_dict(self) -> dict:
        names = self.joint_names
        ident = {} if self.identification_std is None else {
            "identification_std": per_run_dict(self.identification_std, names)}
        return {"criterion": self.criterion, "runs": list(self.runs),
                "offsets": per_run_dict(self.offsets, names), "offsets_std": per_run_dict(self.offsets_std, names),
                **ident,
                # Derived from the runs' offsets on reading (edit the runs, not these): for the reader.
                "spread": per_joint_dict(self.spread, names), "prior_std": per_joint_dict(self.prior_std, names)}

    @classmethod
    def from_dict(cls, d: dict, joint_names: list[str], source: str,
                  effort_limits: np.ndarray | None = None) -> OffsetSpread:
        """The record as robot.yaml holds it; with `effort_limits` (n,) N·m (the URDF's), an offset change or its σ
        beyond its joint's limit is refused: no friction offset moves by more than the drive can give (h133: a
        hand-edited 1000 N·m on a UR10 made khalil-1's σ 284 kg, "no payload detected" for a 4 kg part).
        A record written before h127 has no identification_std: read as before (nothing taken out)."""
        with reading_record(source, "friction_offset_drift", "re-run payload-id identify-robot with its --drift runs"):
            runs = run_sources(d, "the drift runs' sources")
            ident = (read_per_run(d, "identification_std", joint_names, len(runs))
                     if "identification_std" in d else None)
            spread = cls(list(joint_names), runs, read_per_run(d, "offsets", joint_names, len(runs)),
                         read_per_run(d, "offsets_std", joint_names, len(runs)), str(d.get("criterion", CRITERION)),
                         ident)
        limits = None if effort_limits is None else np.asarray(effort_limits, dtype=float).reshape(-1)
        if limits is not None and limits.size == len(joint_names):
            worst = np.maximum(np.max(np.abs(spread.offsets), axis=0), np.max(spread.offsets_std, axis=0))
            beyond = np.isfinite(limits) & (limits > 0) & (worst > limits)
            if beyond.any():
                j = int(np.flatnonzero(beyond)[0])
                raise PayloadIdError(f"{source}: friction_offset_drift of {joint_names[j]} reaches {worst[j]:.4g} N·m, "
                                     f"beyond the joint's effort limit {limits[j]:g} N·m: no offset drift",
                                     "re-run payload-id identify-robot with its --drift runs")
        return spread
