"""The estimator's last result on disk, read back at start so the estimate and the wrench compensation survive a
restart.

The file is payload.yaml (PayloadEstimate.to_dict, its covariance_about_frame_origin included) plus:
  status                         how the goal ended (GoalOutcome: converged | finished | cancelled | interrupted),
                                 or `monitor`: a payload monitor's re-estimate from task motion
  monitor_tare                   with status monitor: {mass: kg, variance: kg²}, the empty flange's re-estimated
                                 mass the part was reported less (monitor.PayloadState.part), so a monitor
                                 started on the file after a restart carries on from the same part
  monitor_unloaded_friction      with status monitor: the unloaded robot's friction the monitor learnt on the
                                 empty flange (monitor.UnloadedFriction.to_dict: its normal equations and the
                                 fit in use), which a monitor started with a part on could not learn
  monitor_unconfirmed            with status monitor: why the payload saved is not confirmed yet ('' : it is): restored
                                 after a refuted re-estimate (monitor.PayloadState.unconfirmed), so a monitor
                                 started on the file goes on doubting it instead of taking it as settled
  monitor_watched_until          with status monitor: s, the last joint-state stamp the monitor had seen when it saved
                                 (joint-state time, not the node's clock); a monitor started on the file after a
                                 restart says a change that rises in its residual at the start is not located within
                                 [this stamp, its alarm] (monitor.PayloadMonitor.carry_on_from_part). Absent in
                                 files saved before it was kept (null: not known)
  monitor_carried                with status monitor: what the published covariance does not say of the payload the
                                 monitor carried (MonitorCarried: the covariance it decides with, what publishing adds
                                 to it, robot.yaml's held-out model error in that, and robot.yaml's fingerprint), so
                                 a monitor started on the file decides, names changes and publishes as before the
                                 restart. A file of another robot.yaml is refused. Absent in files saved before it
                                 was kept: the monitor then decides with the published covariance, as before. With
                                 the state itself (h181: the fit carried, whether determined and since when, the
                                 undecided change, an identified inertia, the change being re-estimated), so a change
                                 not settled at the restart goes on being re-estimated and is named as it would have
                                 been; absent in files saved before it was kept (the published payload, settled).
                                 Since h197 with the doubt (why the payload is in doubt, and the doubt's implied mass
                                 in the change), whether the monitor was armed, and saved whenever that state
                                 changes materially, not only with a publication (monitor.carried_saves)
  partial                        true for a cancelled or interrupted goal's estimate
  joint_states                   a goal's: what its excitation window received of the joint states
                                 (stamp_holes.WindowCoverage.to_dict: window [t0, t1] in their stamps, received
                                 samples, period_s, lost_s, longest_lost_s, lost_stretches, covered_share, complete)
  ft_parameters                  the F/T compensation parameters in ft.yaml's form (ft.storage), when there are any
  stamp                          s, the node's clock when it was written
Files written before notes had codes (plain strings) still load (PayloadEstimate.from_dict).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np
import yaml

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.ft.compensate import FtParameters
from payload_id_core.ft.storage import ft_parameters_from_dict, ft_parameters_to_dict
from payload_id_core.io.files import atomic_write_yaml
from payload_id_core.payload.goal_outcome import GoalOutcome
from payload_id_core.payload.priors import MAX_KNOWN_MASS_KG
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.stamp_holes import WindowCoverage

EVENT_KINDS = ("picked", "placed", "changed", "contact")   # monitor.EventKind's values


@dataclass(frozen=True)
class MonitorCarried:
    """What a restarted monitor needs of the payload it carried beyond the published covariance (monitor.PayloadState):
    `cov` (10, 10), the covariance it decides with (the alarm's F Σ Fᵀ, a refutation's 3σ); `published_extra` (10, 10)
    or None, what the published covariance adds to it; `held_out_var` (kg²), robot.yaml's held-out model error in that
    extra's mass, which a change named against this payload carries in its σ (ReestimateJudge.named_std); `robot_yaml`,
    the fingerprint (RobotIdentification.fingerprint) of the robot.yaml that measured that error.

    The state itself, which the published estimate need not be (h181): `fit` (10,), the φ the monitor carried, tare
    in and inertia as held (the published estimate is the part, its inertia a point mass, and while a change is not
    named yet the payload settled before it); `determined` and `since` (s; NaN: the initial payload), so a change still
    being re-estimated goes on being re-estimated; the undecided change (`undecided`, `undecided_var` kg²,
    `undecided_since` s) the published σ covers; `inertia_identified`, the initial payload's inertia identified (a
    goal's), published as such; and `change`, the change being re-estimated (PayloadMonitor.carried_change: the payload
    settled before it and its window's load not decided yet, checked by `change_from_dict`). None / defaults: files
    saved before they were kept (the published payload is carried on, settled, as before)."""
    cov: np.ndarray
    published_extra: np.ndarray | None
    held_out_var: float
    robot_yaml: str
    fit: np.ndarray | None = None
    determined: bool = True
    since: float = float("nan")
    undecided: str = ""
    undecided_var: float = 0.0
    undecided_since: float = float("nan")
    inertia_identified: bool = False
    change: dict | None = None
    doubt: str = ""             # why the payload is in doubt ('' : it is not; PayloadState.doubt), h197
    armed: bool = True          # False: the monitor was disarmed (a contact's residual not back yet), h197

    def to_dict(self) -> dict:
        d = {"covariance": np.asarray(self.cov, dtype=float).tolist(),
             "published_extra": None if self.published_extra is None else
             np.asarray(self.published_extra, dtype=float).tolist(),
             "held_out_variance": float(self.held_out_var), "robot_yaml_sha256": self.robot_yaml}
        if self.fit is not None:
            d.update(fit=np.asarray(self.fit, dtype=float).tolist(), determined=bool(self.determined),
                     since=_stamp_or_none(self.since), undecided=str(self.undecided),
                     undecided_variance=float(self.undecided_var), undecided_since=_stamp_or_none(self.undecided_since),
                     inertia_identified=bool(self.inertia_identified), change=self.change, doubt=str(self.doubt),
                     armed=bool(self.armed))
        return d

    @classmethod
    def from_dict(cls, raw, where: str) -> MonitorCarried:
        """PayloadIdError naming `where` when it is not what to_dict writes: 10 × 10 finite matrices, a finite variance
        not below 0, a fingerprint; and, where the state is kept, a 10-vector fit, flags, stamps and the change."""
        if not isinstance(raw, dict):
            raise PayloadIdError(f"{where} is not a mapping", _FIX)
        cov, extra = _matrix(raw, "covariance", False, where), _matrix(raw, "published_extra", True, where)
        var, robot_yaml = _variance(raw, "held_out_variance", where), raw.get("robot_yaml_sha256")
        if not isinstance(robot_yaml, str) or not robot_yaml:
            raise PayloadIdError(f"{where} robot_yaml_sha256 is not robot.yaml's fingerprint", _FIX)
        assert cov is not None
        if raw.get("fit") is None:
            return cls(cov, extra, var, robot_yaml)
        fit = _vector(raw, "fit", where)
        change = raw.get("change")
        if change is not None:
            change_from_dict(change, f"{where} change")
        # `doubt` since h197 (absent: none, as those files saved no doubt)
        doubt = _text(raw, "doubt", where) if "doubt" in raw else ""
        armed = _flag(raw, "armed", where) if "armed" in raw else True
        return cls(cov, extra, var, robot_yaml, fit, _flag(raw, "determined", where), _stamp(raw, "since", where),
                   _text(raw, "undecided", where), _variance(raw, "undecided_variance", where),
                   _stamp(raw, "undecided_since", where), _flag(raw, "inertia_identified", where), change, doubt, armed)


_FIX = "delete the file; the next identification writes it anew"


def _stamp_or_none(t: float) -> float | None:
    return None if not math.isfinite(t) else float(t)


def _matrix(raw: dict, key: str, optional: bool, where: str) -> np.ndarray | None:
    value = raw.get(key)
    if value is None and optional:
        return None
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (10, 10) or not np.all(np.isfinite(a)):
        raise PayloadIdError(f"{where} {key} is not 10 × 10 finite numbers", _FIX)
    return a


def _vector(raw: dict, key: str, where: str, allow_nan: bool = False) -> np.ndarray:
    try:
        a = np.asarray(raw.get(key), dtype=float)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (10,) or not (allow_nan or np.all(np.isfinite(a))):
        raise PayloadIdError(f"{where} {key} is not 10 finite numbers", _FIX)
    return a


def _number(value) -> TypeGuard[int | float]:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _variance(raw: dict, key: str, where: str) -> float:
    value = raw.get(key)
    if not _number(value) or not math.isfinite(value) or value < 0.0:
        raise PayloadIdError(f"{where} {key} is not a variance in kg² (finite, not negative)", _FIX)
    return float(value)


def _stamp(raw: dict, key: str, where: str, optional: bool = True) -> float:
    """A joint-state stamp in s; null: none (NaN)."""
    value = raw.get(key)
    if value is None and optional:
        return float("nan")
    if not _number(value) or not math.isfinite(value):
        raise PayloadIdError(f"{where} {key} is not a joint-state stamp in seconds" +
                             (" (null when none)" if optional else ""), _FIX)
    return float(value)


def _flag(raw: dict, key: str, where: str) -> bool:
    value = raw.get(key)
    if not isinstance(value, bool):
        raise PayloadIdError(f"{where} {key} is not true or false", _FIX)
    return value


def _text(raw: dict, key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise PayloadIdError(f"{where} {key} is not a sentence ('' when none)", _FIX)
    return value


def change_from_dict(raw, where: str) -> dict:
    """The change being re-estimated as PayloadMonitor.carried_change writes it, checked (PayloadIdError naming the
    field): `before_fit` (10), `before_covariance` (10 × 10), `before_published_extra` (10 × 10 or null),
    `before_held_out_variance` (kg²), `before_since` (s or null), `started` (s), `unlocated` (''), `unnamed` (s of its
    alarm while not named, or null), `named` (its window's load named already), `pending` (null, or its window's load:
    kind, t_change, t_alarm, t_verdict, delta_mass, delta_mass_std, delta_phi, reason, t_change_located), and since
    h197 (absent before): for a doubt `doubt_mass`, `doubt_mass_std` (kg, or null), `change_share` (per joint, (N·m)²:
    the misfit the change's size allows its re-estimate). Returned as read."""
    if not isinstance(raw, dict):
        raise PayloadIdError(f"{where} is not a mapping", _FIX)
    _vector(raw, "before_fit", where)
    _matrix(raw, "before_covariance", False, where)
    _matrix(raw, "before_published_extra", True, where)
    _variance(raw, "before_held_out_variance", where)
    _stamp(raw, "before_since", where)
    _stamp(raw, "started", where, optional=False)
    _text(raw, "unlocated", where)
    _stamp(raw, "unnamed", where)
    _flag(raw, "named", where)
    for key in ("doubt_mass", "doubt_mass_std"):
        value = raw.get(key)
        if value is not None and (not _number(value) or not math.isfinite(value)):
            raise PayloadIdError(f"{where} {key} is not a mass in kg (null when none)", _FIX)
    share = raw.get("change_share")
    if share is not None and (not isinstance(share, list) or
                              not all(_number(v) and math.isfinite(v) and v >= 0.0 for v in share)):
        raise PayloadIdError(f"{where} change_share is not a list of variances in (N·m)² (absent: none)", _FIX)
    pending = raw.get("pending")
    if pending is not None:
        if not isinstance(pending, dict):
            raise PayloadIdError(f"{where} pending is not a mapping", _FIX)
        if pending.get("kind") not in EVENT_KINDS:
            raise PayloadIdError(f"{where} pending kind is not one of {', '.join(EVENT_KINDS)}", _FIX)
        for key in ("t_change", "t_alarm", "t_verdict"):
            _stamp(pending, key, f"{where} pending", optional=False)
        for key in ("delta_mass", "delta_mass_std"):
            if not _number(pending.get(key)):
                raise PayloadIdError(f"{where} pending {key} is not a number in kg", _FIX)
        _vector(pending, "delta_phi", f"{where} pending", allow_nan=True)
        _text(pending, "reason", f"{where} pending")
        _flag(pending, "t_change_located", f"{where} pending")
    return raw


class ResultUnreadable(Exception):
    """The file exists but cannot be read or parsed as YAML (the message says why)."""


@dataclass
class SavedResult:
    estimate: PayloadEstimate          # with its covariance
    ft_params: FtParameters | None     # the compensation parameters saved with it
    partial: bool                      # a cancelled or interrupted identification's estimate
    monitor_tare: tuple[float, float] | None = None   # (kg, kg²): a monitor re-estimate's tare (None: a goal's)
    monitor_unloaded: dict | None = None   # a monitor re-estimate's unloaded friction (None: a goal's, or not learnt)
    monitor_unconfirmed: str = ""          # why a monitor's saved payload is not confirmed yet ('' : it is; a goal's)
    monitor_watched_until: float | None = None   # s: the last joint-state stamp its monitor had seen (None: unknown)
    monitor_carried: MonitorCarried | None = None   # a monitor's covariance beyond the published (None: older files)


MONITOR_STATUS = "monitor"


def write_result(path: str | os.PathLike, model: RobotModel, est: PayloadEstimate, outcome: GoalOutcome | None,
                 ft_params: FtParameters | None, stamp: float,
                 monitor_tare: tuple[float, float] | None = None, monitor_unloaded: dict | None = None,
                 monitor_unconfirmed: str = "", monitor_watched_until: float | None = None,
                 monitor_carried: MonitorCarried | None = None, joint_states: WindowCoverage | None = None) -> None:
    """Write atomically (io.files.atomic_write_yaml: a reader never sees half a file); OSError
    (io.files.OutputNotWritable included) when it cannot be written. `outcome` None: a monitor's re-estimate,
    with its `monitor_tare` (kg, kg²), `monitor_unloaded` friction, `monitor_unconfirmed` mark, the last joint-state
    stamp it had seen (`monitor_watched_until`) and its covariance beyond the published one (`monitor_carried`).
    `joint_states`: what a goal's excitation window received of them."""
    d = est.to_dict()
    d["status"] = MONITOR_STATUS if outcome is None else outcome.value
    d["partial"] = outcome is not None and outcome.partial
    if outcome is None:
        tare = monitor_tare or (0.0, 0.0)
        d["monitor_tare"] = {"mass": float(tare[0]), "variance": float(tare[1])}
        if monitor_unloaded is not None:
            d["monitor_unloaded_friction"] = monitor_unloaded
        d["monitor_unconfirmed"] = str(monitor_unconfirmed)
        d["monitor_watched_until"] = None if monitor_watched_until is None else float(monitor_watched_until)
        if monitor_carried is not None:
            d["monitor_carried"] = monitor_carried.to_dict()
    if joint_states is not None:
        d["joint_states"] = joint_states.to_dict()
    if ft_params is not None:
        d["ft_parameters"] = ft_parameters_to_dict(model, ft_params)
    d["stamp"] = stamp
    atomic_write_yaml(path, d)


def read_result(path: str | os.PathLike, model: RobotModel, robot_yaml: str | None = None) -> SavedResult | None:
    """The saved result; None when there is no file. ResultUnreadable when it cannot be read or is not YAML,
    PayloadIdError when its content is malformed (or its F/T parameters belong to another URDF, or its monitor's
    carried covariance to another robot.yaml than the one whose fingerprint is `robot_yaml`; None: not checked, the
    node has no robot.yaml and no monitor)."""
    try:
        with open(path) as f:
            d = yaml.safe_load(f)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as err:
        raise ResultUnreadable(str(err)) from err
    if not isinstance(d, dict):
        raise PayloadIdError(f"{path} holds no YAML mapping", "delete it; the next identification writes it anew")
    est = PayloadEstimate.from_dict(d)      # with its covariance
    ft_params = None
    if d.get("ft_parameters"):
        if not isinstance(d["ft_parameters"], dict):
            raise PayloadIdError(f"{path} ft_parameters is not a mapping",
                                 "delete the file; the next identification writes it anew")
        ft_params = ft_parameters_from_dict(model, d["ft_parameters"], f"{path} ft_parameters")
    tare = None
    if d.get("status") == MONITOR_STATUS:
        raw = d.get("monitor_tare") or {}
        try:
            tare = (float(raw.get("mass", 0.0)), float(raw.get("variance", 0.0)))
        except (AttributeError, TypeError, ValueError) as err:
            raise PayloadIdError(f"{path} monitor_tare is not {{mass: kg, variance: kg²}}",
                                 "delete the file; the next identification writes it anew") from err
        # A tare no empty flange reads: NaN made the restarted monitor's fit NaN (blind, no event, no warning for the
        # rest of the carry), 1e6 kg a `placed` −1000000 kg at its first alarm, a negative variance a NaN σ.
        if not (math.isfinite(tare[0]) and abs(tare[0]) <= MAX_KNOWN_MASS_KG and math.isfinite(tare[1])
                and tare[1] >= 0.0):
            raise PayloadIdError(f"{path} monitor_tare {raw} is no empty flange's mass (finite, within "
                                 f"{MAX_KNOWN_MASS_KG:g} kg) and variance (finite, not negative)",
                                 "delete the file; the next identification writes it anew")
    unloaded = d.get("monitor_unloaded_friction") if d.get("status") == MONITOR_STATUS else None
    if unloaded is not None and not isinstance(unloaded, dict):
        raise PayloadIdError(f"{path} monitor_unloaded_friction is not a mapping",
                             "delete the file; the next identification writes it anew")
    unconfirmed = d.get("monitor_unconfirmed") or "" if d.get("status") == MONITOR_STATUS else ""
    if not isinstance(unconfirmed, str):
        raise PayloadIdError(f"{path} monitor_unconfirmed is not a sentence ('' when the payload is confirmed)",
                             "delete the file; the next identification writes it anew")
    watched = d.get("monitor_watched_until") if d.get("status") == MONITOR_STATUS else None
    if watched is not None and (isinstance(watched, bool) or not isinstance(watched, (int, float))
                                or not math.isfinite(watched)):
        raise PayloadIdError(f"{path} monitor_watched_until is not a joint-state stamp in seconds (null when unknown)",
                             "delete the file; the next identification writes it anew")
    carried = None
    if d.get("status") == MONITOR_STATUS and d.get("monitor_carried") is not None:
        carried = MonitorCarried.from_dict(d["monitor_carried"], f"{path} monitor_carried")
        if robot_yaml is not None and carried.robot_yaml != robot_yaml:
            # Its held-out model error and its tare are that robot.yaml's errors, not this one's.
            raise PayloadIdError(f"{path} holds the payload monitor's state saved with another robot.yaml "
                                 f"(fingerprint {carried.robot_yaml[:12]}…, this node's {robot_yaml[:12]}…)",
                                 "delete the file, or run an identify goal: the monitor starts on its result")
    return SavedResult(est, ft_params, bool(d.get("partial")), tare, unloaded, unconfirmed,
                       None if watched is None else float(watched), carried)

