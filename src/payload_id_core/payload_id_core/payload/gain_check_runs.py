"""Held-out loaded runs of known mass that check robot.yaml's drive gains (identify-robot --gain-check-csv-ur /
--gain-check-bag, robot.yaml effort.gain_check, robot_id/gain_spread.py).

Three steps, in the order identify_robot takes them:
  * `check_run_signals`, before any fit: the run conditioned with the calibration's own preprocessing (the command or
    the measured motion, --delay, --cutoff-hz, --decimate), finite, covering its excitation, long enough: a bad run
    fails in seconds, not after the identification.
  * `refuse_contradicted_masses`, once robot.yaml's model is fitted: the mass each run's load has with robot.yaml's
    gains (khalil-1's regression, Khalil 2007 eq. 23, mass free) against the --gain-check-mass given. A given mass off
    by δ moves every run's gains by δ on the joints the load torques (the mass and a common gain factor are one
    column), so a wrong mass would be read as drift and widen the gains' σ (h108: 10 % high, simulated elbow σ 0.81 →
    3.25 %, real 1.72 → 4.53 %). The run's fitted mass has the fit's Newey–West σ and the gains' share of it: the
    calibration's σ widened by GAIN_DRIFT_ALLOWANCE, by the load-only rule of payload/gain_uncertainty.py. A given mass
    more than MAX_MASS_SIGMAS of that σ from it, on one run or on the runs together (a mass error is common to runs of
    one load, the gains' drift is not), is refused.
  * `gain_check` / `measure_gain_spread`: each run's gains with robot.yaml's model fixed, the mass given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.gain_uncertainty import gain_covariance, joint_information
from payload_id_core.payload.linear import weighted_lstsq
from payload_id_core.payload.methods.common import check_covers_excitation, method_signals, payload_rows
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.robot_id.drive_gains import GAIN_LOAD_SNR, fit_gains_output_error, gain_fit_covariance
from payload_id_core.robot_id.gain_spread import GainSpread
from payload_id_core.signals.conditioning import Signals
from payload_id_core.signals.recording import Recording

# A held-out check run's gain (or, with robot.yaml's gains, its load's mass) this far from robot.yaml's (relative) is no
# drive's drift but another load than the mass given, another robot or efforts in other units: the real UR10e's three
# pairs' gains differ by at most 8 % (wrist 3), their check runs' by at most 6.7 %.
MAX_GAIN_CHANGE = 0.25
# A check run needs this many samples after conditioning before its Newey–West σ means anything (the long-run
# covariance's bandwidth alone reaches tens of samples on real drives; held_out_error.MIN_DRIFT_SAMPLES alike).
MIN_CHECK_SAMPLES = 200
# Relative, per joint: how far a drive's gain moves between occasions beyond the calibration's σ, which the fitted
# mass of a check run must allow. The real UR10e's three pairs, each calibrated with the known 2.805 kg, give gains
# whose spread is 1.3 / 0.5 / 1.0 % (shoulder lift, elbow, wrist 1: the joints the load torques; RMS 1.0 %), each
# spread holding its calibration's σ of 0.2-1.2 % too.
GAIN_DRIFT_ALLOWANCE = 0.01
# A given mass this many σ from the mass the run carries with robot.yaml's gains is refused. Honest masses: real UR10e
# (each pair's calibration, the other two loaded runs as checks) at most 1.2σ per run; simulated (test_gain_check,
# the elbow's and wrist 1's gains drawn 3 % apart, three times the real spread) at most 4.1σ per run, 2.9σ together.
# 10 % high: real 4.5-9.6σ per run, 6.4σ or more for each calibration's two runs together; simulated 3.4-11.5σ per
# run. Measured in h114 (docs/design.md, "the gains' σ from held-out loaded runs").
MAX_MASS_SIGMAS = 5.0


def check_run_signals(model: RobotModel, run: Recording, options: PayloadOptions,
                      robot: RobotIdentification | None = None) -> Signals:
    """The check run's conditioned signals with `options` (the calibration's preprocessing); with `robot` its tracking
    error and gear friction as robot.yaml's (method_signals). PayloadIdError naming the run when it holds non-finite
    samples, is cut short of its excitation or holds too few samples after conditioning."""
    what = f"gain check run {run.source or '(unnamed)'}"
    joints = run.joints
    if not all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in (joints.t, joints.q, joints.tau)):
        raise PayloadIdError(f"{what} holds non-finite samples (NaN or inf) in its time, positions or efforts",
                             "give a complete recording of a loaded run")
    check_covers_excitation(run, what)
    sig = method_signals(run, model, options, robot)
    if sig.q.shape[0] < MIN_CHECK_SAMPLES:
        raise PayloadIdError(f"{what}: {sig.q.shape[0]} samples after conditioning, fewer than the "
                             f"{MIN_CHECK_SAMPLES} the gains' σ needs", "give a longer loaded run (tens of seconds)")
    return sig


def carried_mass(model: RobotModel, robot: RobotIdentification, sig: Signals, frame: str,
                 calibration_rel_std: np.ndarray) -> tuple[float, float]:
    """(kg, kg): the mass the run's load has with robot.yaml's gains and model (τ − Y θ̂_a ≈ W_L φ, Khalil 2007 eq. 23,
    the whole φ free) and its σ: the fit's own (Newey–West) and the gains' share, their relative σ
    `calibration_rel_std` (n,) widened by GAIN_DRIFT_ALLOWANCE, by the load-only rule (gain_uncertainty.py)."""
    W, y_a = payload_rows(model, robot, frame, sig, False)
    sol = weighted_lstsq(W, sig.tau - y_a @ np.asarray(robot.theta, dtype=float))
    if not sol.identifiable[0]:
        return float(sol.x[0]), float("inf")
    gains = gain_covariance(joint_information(W, sol.sigma), sol.x[:10], sol.identifiable[:10],
                            np.hypot(np.asarray(calibration_rel_std, dtype=float), GAIN_DRIFT_ALLOWANCE))
    return float(sol.x[0]), float(np.sqrt(abs(sol.cov[0, 0]) + gains[0, 0]))


def refuse_contradicted_masses(found: np.ndarray, std: np.ndarray, masses: Sequence[float],
                               sources: Sequence[str]) -> None:
    """PayloadIdError when a given mass is more than MAX_MASS_SIGMAS σ (or MAX_GAIN_CHANGE) from the mass its run
    carries with robot.yaml's gains (`found` ± `std`, kg), or the masses are together: their relative deviations'
    inverse-variance mean, a common error of the masses given (module docstring)."""
    found, std, given = (np.asarray(a, dtype=float) for a in (found, std, masses))
    z = (given - found) / std
    fix = ("give the mass each run carries (--gain-check-mass, once for all or once per run), or leave out a run of "
           "another load, robot or effort unit")
    for h in range(found.size):
        if abs(z[h]) > MAX_MASS_SIGMAS or not abs(found[h] / given[h] - 1.0) <= MAX_GAIN_CHANGE:
            raise PayloadIdError(
                f"--gain-check-mass {given[h]:g} kg is contradicted by gain check run {sources[h]}: with robot.yaml's "
                f"drive gains its load weighs {found[h]:.4g} ± {std[h]:.2g} kg ({abs(z[h]):.1f} σ away, the limit "
                f"{MAX_MASS_SIGMAS:g} σ allows the gains' drift): another load, a wrong mass, robot or effort unit",
                fix)
    rel, rel_std = given / found - 1.0, std / found
    weight = 1.0 / rel_std ** 2
    together = float(np.sum(weight * rel) / np.sqrt(np.sum(weight))) if found.size > 1 else 0.0
    if abs(together) > MAX_MASS_SIGMAS:
        listed = ", ".join(f"{f:.4g} ± {s:.2g}" for f, s in zip(found, std))
        raise PayloadIdError(
            f"--gain-check-mass {', '.join(f'{m:g}' for m in given)} kg is contradicted by the gain check runs "
            f"together: with robot.yaml's drive gains their loads weigh {listed} kg, the masses given "
            f"{100 * float(np.sum(weight * rel) / np.sum(weight)):+.2g} % off them at {abs(together):.1f} σ (limit "
            f"{MAX_MASS_SIGMAS:g} σ): a wrong mass", fix)


def gain_check(model: RobotModel, robot: RobotIdentification, sig: Signals, mass: float, frame: str,
               what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((n,), (n,), (n,)): the relative drive gains ρ_j = k_run,j / k_j of a loaded run of known `mass` (its signals
    `sig`, efforts in robot.yaml's torque units), robot.yaml's model fixed and only the gains and the load's CoM and
    inertia free (gain_spread.py), their Newey–West σ, and whether the run determines them (its load torques the joint
    at least GAIN_LOAD_SNR × its noise). PayloadIdError when a gain is beyond MAX_GAIN_CHANGE."""
    W, y_a = payload_rows(model, robot, frame, sig, False)
    known = W[..., 0] * float(mass)
    cs = y_a @ np.asarray(robot.theta, dtype=float) + known
    xs = W[..., 1:]
    rho, phi, _, noise, jw, res = fit_gains_output_error(xs, cs, sig.tau, np.zeros_like(sig.tau),
                                                         np.zeros(model.n, bool))
    m = xs.shape[2]
    std = np.sqrt(np.maximum(np.diag(gain_fit_covariance(jw, res / noise, 0))[m:m + model.n], 0.0))
    load = known + xs @ phi
    determined = np.sqrt(np.mean(load ** 2, axis=0)) >= GAIN_LOAD_SNR * noise * rho
    off = determined & ~(np.abs(rho - 1.0) <= MAX_GAIN_CHANGE)
    if off.any():
        parts = ", ".join(f"{model.joint_names[j]} ×{rho[j]:.3g}" for j in np.flatnonzero(off))
        raise PayloadIdError(f"{what}: with the known {mass:g} kg its drive gains differ from robot.yaml's by more "
                             f"than {100 * MAX_GAIN_CHANGE:g} % ({parts}): another load, robot or effort unit",
                             "give a loaded run of this robot with the mass it carries (--gain-check-mass)")
    return rho, std, determined


def measure_gain_spread(model: RobotModel, robot: RobotIdentification, runs: Sequence[Recording],
                        masses: Sequence[float], calibration_std: np.ndarray, frame: str | None = None,
                        options: PayloadOptions | None = None) -> GainSpread:
    """robot.yaml's effort.gain_check from held-out loaded runs of known masses (efforts in robot.yaml's torque
    units: the gains found are relative to robot.yaml's, recorded absolute); `calibration_std` the gains' std the
    calibration gave (absolute); `options` the calibration's preprocessing (default: the payload fits' defaults).
    The masses are judged first (refuse_contradicted_masses)."""
    frame = model.payload_frame(frame)
    options = options or PayloadOptions()
    ref = np.asarray(robot.effort_scale, dtype=float)
    sources = [r.source or f"gain check run {i + 1}" for i, r in enumerate(runs)]
    sigs = [check_run_signals(model, r, options, robot) for r in runs]
    carried = np.array([carried_mass(model, robot, s, frame, np.asarray(calibration_std, dtype=float) / ref)
                        for s in sigs]).reshape(-1, 2)
    refuse_contradicted_masses(carried[:, 0], carried[:, 1], masses, sources)
    checks = [gain_check(model, robot, s, m, frame, f"gain check run {src}")
              for s, m, src in zip(sigs, masses, sources, strict=True)]
    return GainSpread(list(model.joint_names), sources, np.asarray(masses, dtype=float), ref,
                      np.array([c[0] for c in checks]) * ref, np.array([c[1] for c in checks]) * ref,
                      np.array([c[2] for c in checks]), calibration_std)
