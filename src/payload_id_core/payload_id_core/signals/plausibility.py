"""Samples no robot can produce, refused before any fit sees them.

A finite but absurd sample (one effort of 1e30, one position of 1e6 rad: a driver glitch, a corrupted
file, a unit mix-up) passes the readers' NaN/inf checks. Left in, it ruins every fit in a way that
names nothing: the recursive estimators' innovation covariance overflows and loses positive
definiteness (numpy's LinAlgError), a batch fit returns a model that explains the glitch. The bounds
are the URDF's limits with a wide margin, so that no real recording of the robot comes near them:

  * positions (measured and commanded) outside the joint's limits by more than POSITION_MARGIN_RAD,
    for joints with finite limits (a continuous joint has none to judge by);
  * measured velocities beyond VELOCITY_LIMIT_FACTOR × the URDF's velocity limit;
  * torques (efforts × the drive gains in use) beyond EFFORT_LIMIT_FACTOR × the URDF's effort limit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_id_core.errors import PayloadIdError
from payload_id_core.signals.recording import Recording

POSITION_MARGIN_RAD = 2.0 * np.pi    # a whole turn beyond a limit: not a tracking error, not an encoder offset
VELOCITY_LIMIT_FACTOR = 10.0
EFFORT_LIMIT_FACTOR = 100.0          # also far above a 10 % wrong drive gain or a payload beyond the rating

_FIX = ("cut the glitch out of the recording (e.g. `ros2 bag convert` with a time range), re-record it, or check "
        "the URDF and the drive gains (--effort-scale) belong to this robot")


def check_plausible(recording: Recording, joint_names: Sequence[str], lower: np.ndarray, upper: np.ndarray,
                    velocity: np.ndarray, effort: np.ndarray) -> None:
    """Refuse `recording` (efforts already in N·m by the gains in use) when a sample of one of `joint_names`
    is beyond the URDF limits `lower`, `upper`, `velocity`, `effort` (per joint, that order) by the module's
    margins; PayloadIdError names the first such sample (field, joint, time, value, bound)."""
    joints = recording.joints
    names = [j for j in joint_names if j in joints.joint_names]
    col = {j: list(joint_names).index(j) for j in names}
    picked = [col[j] for j in names]
    idx = [joints.joint_names.index(j) for j in names]
    lo, hi = np.asarray(lower, float)[picked], np.asarray(upper, float)[picked]
    has_range = np.isfinite(lo) & np.isfinite(hi) & (hi - lo < 1e6)
    lo = np.where(has_range, lo - POSITION_MARGIN_RAD, -np.inf)
    hi = np.where(has_range, hi + POSITION_MARGIN_RAD, np.inf)
    source = recording.source or "recording"
    _refuse_outside(source, "joint position", "rad", joints.t, joints.q[:, idx], lo, hi, names, "outside its limits")
    for trajectory in recording.commanded:
        shared = [j for j in names if j in trajectory.joint_names]
        if shared:
            rows = [names.index(j) for j in shared]
            _refuse_outside(source, "commanded position", "rad", trajectory.start_time + trajectory.time_from_start,
                            trajectory.positions[:, [trajectory.joint_names.index(j) for j in shared]],
                            lo[rows], hi[rows], shared, "outside its limits")
    bounds = [(joints.qd, "joint velocity", "rad/s", np.asarray(velocity, float)[picked] * VELOCITY_LIMIT_FACTOR,
               f"beyond {VELOCITY_LIMIT_FACTOR:g}× its velocity limit"),
              (joints.tau, "joint torque", "N·m", np.asarray(effort, float)[picked] * EFFORT_LIMIT_FACTOR,
               f"beyond {EFFORT_LIMIT_FACTOR:g}× its effort limit, efforts × the drive gains in use")]
    for values, what, unit, bound, why in bounds:
        if values is None:
            continue
        bound = np.where(bound > 0, bound, np.inf)      # a URDF without a limit: nothing to judge by
        _refuse_outside(source, what, unit, joints.t, values[:, idx], -bound, bound, names, why)


def _refuse_outside(source: str, what: str, unit: str, t: np.ndarray, values: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray, names: list[str], why: str) -> None:
    bad = (values < lo) | (values > hi)
    if not bad.any():
        return
    k, j = np.argwhere(bad)[0]
    bound = hi[j] if values[k, j] > hi[j] else lo[j]
    raise PayloadIdError(f"{source}: {int(bad.sum())} of {bad.size} {what} values no robot can produce, the first "
                         f"{names[j]} = {values[k, j]:.6g} {unit} at t = {t[k]:.3f} s "
                         f"({why}; bound {bound:.4g} {unit})", _FIX)
