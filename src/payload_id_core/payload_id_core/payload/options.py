"""Every option a payload method reads, typed, with a refusal for a name no method knows.

identify_payload(method, ..., **options) takes options as keywords (the CLI, tools/ur10e_data.py and the
benches build them as dicts); PayloadOptions.from_kwargs turns them into this one frozen object, so
a misspelt option is bad input instead of a silently ignored keyword, and the methods read typed
attributes instead of looking keys up. None means "not given": the method's own default, or the
callee's (conditioning.conditioned_signals, OnlinePayloadEstimator, ft.identify_ft). A choice typed as a
string (source, convergence) becomes its enum here, an unknown one refused. Which method reads which
option is the method registry's (methods/registry.py): an option given to a method that does not read it
is refused there, naming the methods that do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any

import numpy as np

from payload_id_core.errors import Choice, PayloadIdError, parse_choice
from payload_id_core.payload.online.base import ConvergenceRule
from payload_id_core.payload.priors import PayloadPrior
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.conditioning import SignalSource


class LoadFriction(Choice):
    """identify-payload --load-friction: the method's default, or the load-dependent friction forced on or off."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"

    def as_option(self) -> bool | None:
        """PayloadOptions.load_friction: None (the method's default), True or False."""
        return None if self is LoadFriction.AUTO else self is LoadFriction.ON


@dataclass(frozen=True)
class PayloadOptions:
    # -- signals (conditioning.conditioned_signals) ----------------------------------------------
    source: SignalSource | None = None     # 'commanded' (default when recorded) or 'measured'
    delay: str | float | None = None       # 'estimate' or seconds
    cutoff_hz: float | None = None
    decimate: int | None = None
    # -- the payload model ---------------------------------------------------------------------------
    friction_change: bool | None = None    # estimate Δφ_f (None: each method's default)
    load_friction: bool | None = None      # load-dependent Coulomb μ (None: LOAD_FRICTION_DEFAULT per method)
    include_robot_uncertainty: bool = True  # the robot identification's covariance enters the payload's
    # khalil-1: robot.yaml's parameters fitted with the run under their covariance (C_a, and the offsets' recorded
    # drift) instead of held at their values (payload/robot_prior.py); None: only where robot.yaml records neither a
    # drift nor a measured model error (on the real UR10e the fit under C_a moved the mass by −0.5..−1.3 %)
    robot_prior: bool | None = None
    prior: PayloadEstimate | Sequence[float] | np.ndarray | None = None  # φ for undetermined entries (None: 0)
    payload_prior: PayloadPrior | None = None  # what is known: bounding box, weighed mass (payload/priors.py)
    project: bool = True                   # project an inconsistent estimate onto the feasible set
    # -- an unloaded run on the same trajectory (khalil-3, gaz-dtau) -------------------------------
    same_trajectory_tol_rad: float | None = None  # None: 1 mrad recorded command, 20 mrad measured/stand-in
    # -- gaz-static: what counts as resting --------------------------------------------------------
    vel_tol: float = 0.01                  # rad/s
    acc_tol: float = 0.05                  # rad/s²
    # -- online estimators run over the recording (OnlinePayloadEstimator's keywords) ---------------
    noise_std: float | Sequence[float] | None = None
    moment_noise_std: float | Sequence[float] | None = None   # difference-rls: weights of all but the mass
    p0: float | None = None
    forgetting: float | None = None
    convergence: ConvergenceRule | None = None   # 'covariance' or 'xu'
    mass_rel_std: float | None = None
    xu_tol: float | None = None
    xu_count: int | None = None
    check_every: int | None = None
    min_time: float | None = None
    settle_time: float | None = None
    history_every: int | None = None
    # -- ft (ft.identify_ft's keywords) ------------------------------------------------------------
    sensor_frame: str | None = None
    sensor_mount: Any = None               # (URDF frame, pin.SE3 of the sensor in it)
    mode: str | None = None                # 'static' or 'dynamic'
    force_range: float | Sequence[float] | None = None
    torque_range: float | Sequence[float] | None = None
    estimate_tilt: bool | None = None
    static_accel_tol: float | None = None
    gravity_norm: float | None = None

    def __post_init__(self) -> None:
        # The strings users type become their enums once, here; the layers below compare members.
        if self.source is not None:
            object.__setattr__(self, "source", parse_choice(SignalSource, self.source, "signal source"))
        if self.convergence is not None:
            object.__setattr__(self, "convergence",
                               parse_choice(ConvergenceRule, self.convergence, "convergence rule"))

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_kwargs(cls, **options) -> PayloadOptions:
        """The options given as keywords; a name that is not an option is bad input naming the valid ones."""
        valid = cls.names()
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise PayloadIdError(f"unknown payload option{'s' if len(unknown) > 1 else ''} "
                                 f"{', '.join(repr(k) for k in unknown)}", f"use one of: {', '.join(valid)}")
        return cls(**options)

    def given(self, names: Iterable[str]) -> dict[str, Any]:
        """{name: value} of the options among `names` that were given (not None), to hand on as keywords."""
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def given_names(self) -> list[str]:
        """The options given: those not at their default (None for most; the switches' True, gaz-static's
        tolerances)."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            default = None if f.default is MISSING else f.default
            if value is None and default is None:
                continue
            if default is None or isinstance(value, (np.ndarray, list, tuple)) or value != default:
                out.append(f.name)
        return out

    def with_changes(self, **changes) -> PayloadOptions:
        return replace(self, **changes)


# Which options each callee takes, handed on only when given so that its own defaults apply.
SIGNAL_OPTIONS = ("source", "delay", "cutoff_hz", "decimate")
ONLINE_OPTIONS = ("friction_change", "noise_std", "moment_noise_std", "p0", "forgetting", "convergence", "mass_rel_std",
                  "xu_tol", "xu_count", "check_every", "min_time", "settle_time",
                  "history_every")
FT_OPTIONS = ("sensor_frame", "source", "cutoff_hz", "delay", "force_range", "torque_range", "mode", "sensor_mount",
              "estimate_tilt", "static_accel_tol", "gravity_norm", "project")
