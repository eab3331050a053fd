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
                                 was kept: the monitor then decides with the published covariance, as before
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


@dataclass(frozen=True)
class MonitorCarried:
    """What a restarted monitor needs of the payload it carried beyond the published covariance (monitor.PayloadState):
    `cov` (10, 10), the covariance it decides with (the alarm's F Σ Fᵀ, a refutation's 3σ); `published_extra` (10, 10)
    or None, what the published covariance adds to it; `held_out_var` (kg²), robot.yaml's held-out model error in that
    extra's mass, which a change named against this payload carries in its σ (ReestimateJudge.named_std); `robot_yaml`,
    the fingerprint (RobotIdentification.fingerprint) of the robot.yaml that measured that error."""
    cov: np.ndarray
    published_extra: np.ndarray | None
    held_out_var: float
    robot_yaml: str

    def to_dict(self) -> dict:
        return {"covariance": np.asarray(self.cov, dtype=float).tolist(),
                "published_extra": None if self.published_extra is None else
                np.asarray(self.published_extra, dtype=float).tolist(),
                "held_out_variance": float(self.held_out_var), "robot_yaml_sha256": self.robot_yaml}

    @classmethod
    def from_dict(cls, raw, where: str) -> MonitorCarried:
        """PayloadIdError naming `where` when it is not what to_dict writes: 10 × 10 finite matrices, a finite variance
        not below 0, a fingerprint."""
        fix = "delete the file; the next identification writes it anew"
        if not isinstance(raw, dict):
            raise PayloadIdError(f"{where} is not a mapping", fix)

        def matrix(key: str, optional: bool) -> np.ndarray | None:
            value = raw.get(key)
            if value is None and optional:
                return None
            try:
                a = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                a = np.zeros(0)
            if a.shape != (10, 10) or not np.all(np.isfinite(a)):
                raise PayloadIdError(f"{where} {key} is not 10 × 10 finite numbers", fix)
            return a

        cov, extra = matrix("covariance", False), matrix("published_extra", True)
        var, robot_yaml = raw.get("held_out_variance"), raw.get("robot_yaml_sha256")
        if isinstance(var, bool) or not isinstance(var, (int, float)) or not math.isfinite(var) or var < 0.0:
            raise PayloadIdError(f"{where} held_out_variance is not a variance in kg² (finite, not negative)", fix)
        if not isinstance(robot_yaml, str) or not robot_yaml:
            raise PayloadIdError(f"{where} robot_yaml_sha256 is not robot.yaml's fingerprint", fix)
        assert cov is not None
        return cls(cov, extra, float(var), robot_yaml)


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

