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


MONITOR_STATUS = "monitor"


def write_result(path: str | os.PathLike, model: RobotModel, est: PayloadEstimate, outcome: GoalOutcome | None,
                 ft_params: FtParameters | None, stamp: float,
                 monitor_tare: tuple[float, float] | None = None, monitor_unloaded: dict | None = None,
                 monitor_unconfirmed: str = "", monitor_watched_until: float | None = None,
                 joint_states: WindowCoverage | None = None) -> None:
    """Write atomically (io.files.atomic_write_yaml: a reader never sees half a file); OSError
    (io.files.OutputNotWritable included) when it cannot be written. `outcome` None: a monitor's re-estimate,
    with its `monitor_tare` (kg, kg²), `monitor_unloaded` friction, `monitor_unconfirmed` mark and the last joint-state
    stamp it had seen (`monitor_watched_until`). `joint_states`: what a goal's excitation window received of them."""
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
    if joint_states is not None:
        d["joint_states"] = joint_states.to_dict()
    if ft_params is not None:
        d["ft_parameters"] = ft_parameters_to_dict(model, ft_params)
    d["stamp"] = stamp
    atomic_write_yaml(path, d)


def read_result(path: str | os.PathLike, model: RobotModel) -> SavedResult | None:
    """The saved result; None when there is no file. ResultUnreadable when it cannot be read or is not YAML,
    PayloadIdError when its content is malformed (or its F/T parameters belong to another URDF)."""
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
    return SavedResult(est, ft_params, bool(d.get("partial")), tare, unloaded, unconfirmed,
                       None if watched is None else float(watched))

