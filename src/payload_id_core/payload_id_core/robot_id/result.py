"""An identified robot (RobotIdentification) and its file, robot.yaml.

θ = [π_b (b), Ia_free (r), θ_f] of τ = Y_b π_b + diag(q̈) Ia + F(q̇, T; shape) θ_f (Xu 2024
eq. 1–4; Khalil 2007 eq. 1–3; Tadese 2022 eq. 4), its covariance, and what produced it.
Notes are stored as {code, text}; a robot.yaml written before notes had codes (plain strings)
still reads, its notes as NoteCode.INFO.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from os import PathLike

import numpy as np
from numpy.typing import ArrayLike

from payload_id_core.dynamics.base_params import BaseParameters, standard_parameter_names
from payload_id_core.dynamics.friction import FrictionModel
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_yaml, read_yaml_mapping
from payload_id_core.notes import Note
from payload_id_core.robot_id import gear_friction
from payload_id_core.robot_id.choice_record import FrictionChoice, GainModelChoice, LoadFrictionChoices
from payload_id_core.robot_id.gain_spread import GainSpread
from payload_id_core.robot_id.gear_friction import GearFriction, UnmodelledGear
from payload_id_core.robot_id.model_error import HeldOutModelError
from payload_id_core.robot_id.offset_spread import OffsetSpread
from payload_id_core.robot_id.regressors import full_regressor
from payload_id_core.robot_id.structure import RotorStructure, inertial_map
from payload_id_core.signals.effort import EffortUnit, check_drive_gains

# 2: effort.gain_covariance (the drive gains' joint covariance with θ, gain_uncertainty.py). Files of format 1 are
# read as before: their gains' std enters the payloads as independent errors.
FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)
# How effort_scale_source begins when the gains were identified from a loaded run with a known mass.
IDENTIFIED_GAINS_SOURCE = "identified from "


def _optional_float(value) -> float:
    """A number from robot.yaml, NaN when absent (files written before the field existed)."""
    return float("nan") if value is None else float(value)


@dataclass
class RobotIdentification:
    """An identified robot: everything robot.yaml holds, and the regressor to use it.

    `notes` are Note objects; plain strings given here (or read from an older robot.yaml) become
    NoteCode.INFO notes. `model` is the RobotModel the regressor evaluates on (attached by the
    identification and by `load`; None after `from_dict` without one)."""

    joint_names: list[str]
    urdf_path: str
    urdf_sha256: str
    gravity: np.ndarray
    base: BaseParameters
    rotor: RotorStructure
    friction: FrictionModel
    theta: np.ndarray                 # [π_b (b), Ia_free (r), θ_f]
    theta_names: list[str]
    cov: np.ndarray
    rel_std: np.ndarray               # percent
    effort_scale: np.ndarray          # (n,) drive gains the torques were computed with (torque = effort × gain)
    rmse: np.ndarray                  # (n,) N·m on the identification data
    sigma: np.ndarray                 # (n,) noise std per joint (WLS weights)
    estimator: str = "wls"
    source: str = "commanded"
    # The measured tracking error was in the motion the parameters were fitted to (signals/tracking.py); every
    # consumer's signals then add it too. False: files written before it, or a stand-in command.
    tracking_error: bool = False
    # (n,) N·m: with the tracking error added, the fitted model's torque RMSE on the commanded motion alone, the
    # residual scale the payload monitor was tuned on (monitor_noise_scale). None: the same as rmse.
    rmse_commanded: np.ndarray | None = None
    physically_consistent: bool | None = None
    standard_parameters: np.ndarray | None = None   # ψ of the feasible fit (φ, Ia), when computed
    condition_number: float = float("nan")
    validation_rmse: np.ndarray | None = None
    notes: list[Note] = field(default_factory=list)
    # (n, s) std of the friction shape parameters (α, ...) when identified; cov is then marginal over them
    shape_std: np.ndarray | None = None
    # What the identification's raw efforts were (EffortUnit value), the gains' std (None: exact / given)
    # and where the gains came from (e.g. "identified from <pair> with a known 2.805 kg", "given", "none").
    effort_unit: str = EffortUnit.UNKNOWN.value
    effort_scale_std: np.ndarray | None = None
    effort_scale_source: str = ""
    # The identified gains' part of the joint covariance of (θ, r), r_j = δk_j / k_j (payload/gain_uncertainty.py):
    # C_r (n, n), the relative gains' covariance with their correlations, and S (p, n) = ∂θ/∂r, how θ moves when it
    # is identified from efforts scaled by gains off by r. None: gains given, none, or a file of format 1.
    gain_covariance: GainCovariance | None = None
    # Identified gravity parameters over the URDF's (robot_id/scale_check.py); NaN: not checked
    urdf_scale_factor: float = float("nan")
    # Gear friction μ_j|τ_j| sgn(q̇_j) (gear_friction.py): the measured torques the parameters were fitted to
    # had it removed, and every consumer removes it too (gear_corrected). None: not modelled (files before it).
    gear: GearFriction | None = None
    # The gear friction the run shows when `gear` leaves it out of the model (gear_friction.UnmodelledGear): the
    # payload fits count what it would do on their motion as model error. None: none shown, or written before.
    unmodelled_gear: UnmodelledGear | None = None
    # The model's error on held-out unloaded motions, as the payload it invents there (model_error.py): the
    # payload fits' model-error covariance term. None: not measured (no held-out recording given, older files).
    model_error: HeldOutModelError | None = None
    # How far the constant friction offsets moved on held-out unloaded runs (offset_spread.py): difference-rls's
    # prior on a payload run's offset change. None: not measured (no --drift run given, older files).
    offset_drift: OffsetSpread | None = None
    # How the friction model was chosen: candidates, held-out scores, criterion (friction_choice.py). None: files
    # written before issue 29 item 1.
    friction_choice: FrictionChoice | None = None
    # Per payload method, the load-dependent friction on or off as chosen on held-out loaded runs of known mass
    # (friction_choice.LoadFrictionChoices). None: not chosen (no such run given); the methods' rule applies.
    load_friction_choice: LoadFrictionChoices | None = None
    # The friction model the drive gains were fitted with, the criterion and the candidates' numbers
    # (choice_record.GainModelChoice, robot.yaml effort.gain_model). None: gains given, or files written before.
    gain_model: GainModelChoice | None = None
    # The gains found on held-out loaded runs of known mass, robot.yaml's model fixed (gain_spread.py, robot.yaml
    # effort.gain_check): effort_scale_std already carries their spread. None: no --gain-check run, older files.
    gain_check: GainSpread | None = None
    # When the robot was identified (UTC, ISO 8601), when its run was recorded (its first joint state, when the
    # stamps are wall-clock time; "" otherwise) and the drives' mean temperature per joint in that run (°C, None
    # where the driver reports none): drive gains and friction drift as the drives warm up (issue 29 item 5).
    identified_at: str = ""
    recorded_at: str = ""
    drive_temperature: np.ndarray | None = None
    model: RobotModel | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.notes = [Note.from_any(n) for n in self.notes]
        self.effort_unit = EffortUnit.parse(self.effort_unit).value
        if self.gear is not None:      # what load() would refuse is refused here, before any file is written
            gear_friction.check_mu(self.gear.mu, len(self.joint_names), "gear friction μ")
            check_gear_std(self.gear.mu, self.gear.mu_std, "gear friction μ's std")

    @property
    def gains_identified_with_load(self) -> bool:
        """The drive gains were identified from a loaded run with a known mass (identify-robot
        --known-payload-mass writes that source), not given by hand."""
        return self.effort_scale_source.startswith(IDENTIFIED_GAINS_SOURCE)

    @property
    def gains_absorbed_load_friction(self) -> bool:
        """The gains were identified with a known mass without a load-dependent friction in their fit, so they have
        absorbed it (files written before effort.gain_model: every identified gain)."""
        return self.gains_identified_with_load and not (self.gain_model is not None
                                                        and self.gain_model.load_friction_fitted)

    # -- sizes and slices ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.joint_names)

    @property
    def b(self) -> int:
        return self.base.b

    @property
    def n_inertial(self) -> int:
        return self.base.b + self.rotor.free.size

    @property
    def pi_b(self) -> np.ndarray:
        """Base parameters π_b (rotor inertias of absorbed joints included)."""
        return self.theta[:self.base.b]

    @property
    def rotor_inertia(self) -> np.ndarray:
        """(n,) identified Ia; NaN where absorbed into π_b."""
        ia = np.full(self.n, np.nan)
        ia[self.rotor.free] = self.theta[self.base.b:self.n_inertial]
        return ia

    @property
    def friction_params(self) -> np.ndarray:
        return self.theta[self.n_inertial:]

    @property
    def inertial_map(self) -> np.ndarray:
        return inertial_map(self.base, self.rotor, self.n)

    # -- evaluation -----------------------------------------------------------------------------
    @property
    def monitor_noise_scale(self) -> np.ndarray:
        """(n,) N·m: the torque residual scale the payload monitor's thresholds are set in (monitor/monitor.py).
        They were tuned against the model's RMSE on the commanded motion; with the measured tracking error in
        the fit (signals/tracking.py) the RMSE is up to 20 % smaller on the simulated UR10's wrist, while the
        monitor's own residual, on measured velocities, is not: with that smaller scale it raised 4 false events
        in 16 minutes of task motion where it raised none. So the commanded motion's RMSE stays its scale."""
        return np.asarray(self.rmse if self.rmse_commanded is None else self.rmse_commanded, dtype=float)

    def require_model(self, model: RobotModel | None = None) -> RobotModel:
        """`model` if given, else the attached one; PayloadIdError when there is neither."""
        model = model or self.model
        if model is None:
            raise PayloadIdError("this robot identification has no robot model attached",
                                 "load it with RobotIdentification.load(path, model)")
        return model

    def regressor(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, temperature: ArrayLike | None = None,
                  model: RobotModel | None = None) -> np.ndarray:
        """(N, n, p) with predict = regressor @ theta."""
        return full_regressor(self.require_model(model), self.base, self.rotor, self.friction,
                              q, qd, qdd, temperature)

    def predict(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, temperature: ArrayLike | None = None,
                model: RobotModel | None = None) -> np.ndarray:
        """(N, n) joint torques of the unloaded robot."""
        return self.regressor(q, qd, qdd, temperature, model) @ self.theta

    def gear_corrected(self, tau: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """Measured torques (or raw efforts) with the gear friction μ|τ| sgn_ε(q̇) taken off, as the parameters
        were fitted (gear_friction.py); unchanged when the identification has none."""
        if self.gear is None or not self.gear.active:
            return np.asarray(tau, dtype=float)
        return gear_friction.remove(tau, qd, self.gear.mu, self.friction.sign_epsilon)

    def friction_torque(self, qd: ArrayLike, temperature: ArrayLike | None = None) -> np.ndarray:
        return self.friction.torque(self.friction_params, qd, temperature)

    # -- robot.yaml -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        fl = lambda a: [float(x) for x in np.asarray(a).reshape(-1)]  # noqa: E731
        rel = [None if not np.isfinite(x) else float(x) for x in self.rel_std]
        d = {
            "format": FORMAT_VERSION,
            "urdf": {"path": str(self.urdf_path), "sha256": self.urdf_sha256},
            "joint_names": list(self.joint_names),
            "gravity": fl(self.gravity),
            "effort_scale": fl(self.effort_scale),
            "effort": {
                "unit": self.effort_unit,
                "scale_std": None if self.effort_scale_std is None else fl(self.effort_scale_std),
                "source": self.effort_scale_source,
                # The parameters are torques in these gains' units: a later edit of effort_scale alone
                # would turn every payload into a scaled wrong one, so the file keeps what they were.
                "identified_with": fl(self.effort_scale),
                "gain_covariance": None if self.gain_covariance is None else self.gain_covariance.to_dict(),
            },
            "scale_check": {"urdf_factor": None if not np.isfinite(self.urdf_scale_factor)
                            else float(self.urdf_scale_factor)},
            "estimator": self.estimator,
            "signals": self.source,
            "tracking_error": bool(self.tracking_error),
            "base_parameters": self.base.to_dict(),
            "rotor_inertia": {
                "free_joints": [self.joint_names[j] for j in self.rotor.free],
                "absorbed": {self.joint_names[j]: {self.base.names[i]: float(self.rotor.absorbed[i, j])
                                                   for i in np.flatnonzero(self.rotor.absorbed[:, j])}
                             for j in range(self.n) if self.rotor.absorbed[:, j].any()},
            },
            "friction": self._friction_dict(),
            "parameters": {
                "names": list(self.theta_names),
                "values": fl(self.theta),
                "relative_std_percent": rel,
            },
            "covariance": [fl(row) for row in self.cov],
            "torque_rmse": dict(zip(self.joint_names, fl(self.rmse))),
            "noise_std": dict(zip(self.joint_names, fl(self.sigma))),
            "condition_number": float(self.condition_number),
            "physically_consistent": self.physically_consistent,
            "notes": [Note.from_any(n).to_dict() for n in self.notes],
            "identified": {
                "at": self.identified_at or None,
                "recorded_at": self.recorded_at or None,
                "drive_temperature_c": None if self.drive_temperature is None
                else dict(zip(self.joint_names, fl(self.drive_temperature))),
            },
        }
        if self.validation_rmse is not None:
            d["validation_torque_rmse"] = dict(zip(self.joint_names, fl(self.validation_rmse)))
        if self.rmse_commanded is not None:
            d["torque_rmse_commanded_motion"] = dict(zip(self.joint_names, fl(self.rmse_commanded)))
        if self.standard_parameters is not None:
            d["standard_parameters"] = fl(self.standard_parameters)
        if self.model_error is not None:
            d["model_error"] = self.model_error.to_dict()
        if self.offset_drift is not None:
            d["friction_offset_drift"] = self.offset_drift.to_dict()
        if self.friction_choice is not None:
            d["friction_choice"] = self.friction_choice.to_dict(self.joint_names)
        if self.load_friction_choice is not None:
            d["load_friction_choice"] = self.load_friction_choice.to_dict()
        if self.gain_model is not None:    # identified gains only: without it a file reads as one written before
            effort = d["effort"]
            assert isinstance(effort, dict)
            effort["gain_model"] = self.gain_model.to_dict(self.joint_names)
        if self.gain_check is not None:
            effort = d["effort"]
            assert isinstance(effort, dict)
            effort["gain_check"] = self.gain_check.to_dict()
        return d

    def _friction_dict(self) -> dict:
        d = self.friction.to_dict()
        if self.gear is not None:
            d["gear"] = {"mu": [float(x) for x in self.gear.mu],
                         "mu_std": [None if not np.isfinite(x) else float(x) for x in self.gear.mu_std]}
        if self.unmodelled_gear is not None:
            g = self.unmodelled_gear
            d["gear_unmodelled"] = {"mu": [float(x) for x in g.mu],
                                    "mu_std": [None if not np.isfinite(x) else float(x) for x in g.mu_std],
                                    "theta_shift": [float(x) for x in g.theta_shift]}
        if self.shape_std is not None and self.friction.shape_names:
            d["shape_std"] = {name: [None if not np.isfinite(v) else float(v) for v in self.shape_std[:, i]]
                              for i, name in enumerate(self.friction.shape_names)}
        return d

    def fingerprint(self) -> str:
        """sha256 of what robot.yaml holds (to_dict, keys sorted): what a state saved with this identification's numbers
        in it (the monitor's carried covariance, result_file) checks it is read back with. Two files with the same
        content give the same; a re-identification, a held-out run added, or a hand edit of a number does not."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True, default=str).encode()).hexdigest()

    def save(self, path: str | PathLike) -> None:
        atomic_write_yaml(path, self.to_dict())

    @classmethod
    def from_dict(cls, d: dict, model: RobotModel, source: str = "robot.yaml") -> RobotIdentification:
        try:
            if d.get("format") not in READABLE_FORMATS:
                raise PayloadIdError(f"{source}: unknown robot.yaml format {d.get('format')!r}",
                                     "re-run payload-id identify-robot")
            sha = d["urdf"]["sha256"]
            if sha != model.urdf_sha256:
                raise PayloadIdError(f"{source} was identified for another URDF ({d['urdf']['path']}, "
                                     f"sha256 {sha[:12]}…) than {model.urdf_path} ({model.urdf_sha256[:12]}…)",
                                     "pass the URDF it was made with, or re-run identify-robot for this one")
            names = list(d["joint_names"])
            if names != list(model.joint_names):
                raise PayloadIdError(f"{source} holds joints {names}, the model has {model.joint_names}",
                                     "load the model with the same joints")
            n = len(names)
            base = BaseParameters.from_dict(d["base_parameters"], standard_parameter_names(model))
            free = np.array([names.index(j) for j in d["rotor_inertia"]["free_joints"]], dtype=int)
            absorbed = np.zeros((base.b, n))
            for joint, row in (d["rotor_inertia"].get("absorbed") or {}).items():
                for bname, coef in row.items():
                    absorbed[base.names.index(bname), names.index(joint)] = coef
            friction = FrictionModel.from_dict(d["friction"], names)
            par = d["parameters"]
            rel = np.array([np.inf if x is None else x for x in par["relative_std_percent"]], dtype=float)
            theta = np.asarray(par["values"], dtype=float)
            expected = base.b + free.size + friction.n_params
            if theta.size != expected:
                raise PayloadIdError(f"{source}: {theta.size} parameter values, the model structure needs {expected}",
                                     "the file is damaged; re-run identify-robot")
            sstd = (d["friction"] or {}).get("shape_std")
            shape_std = None if not sstd else np.array(
                [[np.nan if v is None else v for v in sstd[nm]] for nm in friction.shape_names], dtype=float).T
            gear = _gear(d["friction"], n, source)
            unmodelled_gear = _unmodelled_gear(d["friction"], n, theta, source)
            if gear is not None and unmodelled_gear is not None:
                raise PayloadIdError(f"{source}: friction has both gear and gear_unmodelled: the gear friction is "
                                     "either in the model or left out of it", "re-run payload-id identify-robot")
            val = d.get("validation_torque_rmse")
            rmse_cmd = d.get("torque_rmse_commanded_motion")
            psi = d.get("standard_parameters")
            effort = d.get("effort") or {}   # absent in robot.yaml files written before effort units
            when = d.get("identified") or {}  # absent in robot.yaml files written before issue 29
            temps = when.get("drive_temperature_c")
            choice = None if d.get("friction_choice") is None else FrictionChoice.from_dict(
                d["friction_choice"], names, source)
            if choice is not None and choice.chosen != friction.kind:
                raise PayloadIdError(f"{source}: friction_choice.chosen is {choice.chosen} but the friction model is "
                                     f"{friction.kind}: the file was edited after identification",
                                     "re-run payload-id identify-robot")
            if not isinstance(effort, dict):
                raise PayloadIdError(f"{source}: effort is {effort!r}, not a mapping {{unit, scale_std, source}}",
                                     "re-run payload-id identify-robot")
            ident = cls(
                joint_names=names, urdf_path=d["urdf"]["path"], urdf_sha256=sha,
                gravity=_gravity(d["gravity"], source), base=base, rotor=RotorStructure(free, absorbed),
                friction=friction, theta=theta, theta_names=list(par["names"]),
                cov=np.asarray(d["covariance"], dtype=float).reshape(theta.size, theta.size), rel_std=rel,
                effort_scale=_gains_as_identified(d["effort_scale"], effort.get("identified_with"), n, source),
                rmse=np.array([d["torque_rmse"][j] for j in names]),
                sigma=np.array([d["noise_std"][j] for j in names]),
                estimator=d.get("estimator", "wls"), source=d.get("signals", "commanded"),
                tracking_error=_flag(d.get("tracking_error", False), "tracking_error", source),
                physically_consistent=d.get("physically_consistent"),
                standard_parameters=None if psi is None else np.asarray(psi, dtype=float),
                condition_number=float(d.get("condition_number", np.nan)),
                validation_rmse=None if val is None else np.array([val[j] for j in names]),
                rmse_commanded=_rmse_commanded(rmse_cmd, d.get("tracking_error", False), names, source),
                notes=[Note.from_any(n) for n in d.get("notes") or []], shape_std=shape_std,
                effort_unit=EffortUnit.parse(effort.get("unit")).value,
                effort_scale_std=_scale_std(effort.get("scale_std"), n, source),
                effort_scale_source=str(effort.get("source", "")),
                gain_covariance=None if effort.get("gain_covariance") is None else GainCovariance.from_dict(
                    effort["gain_covariance"], n, theta.size, source),
                gain_model=None if effort.get("gain_model") is None else GainModelChoice.from_dict(
                    effort["gain_model"], names, source),
                gain_check=None if effort.get("gain_check") is None else GainSpread.from_dict(
                    effort["gain_check"], names, source),
                urdf_scale_factor=_optional_float((d.get("scale_check") or {}).get("urdf_factor")), gear=gear,
                unmodelled_gear=unmodelled_gear,
                model_error=None if d.get("model_error") is None else HeldOutModelError.from_dict(
                    d["model_error"], source),
                offset_drift=None if d.get("friction_offset_drift") is None else OffsetSpread.from_dict(
                    d["friction_offset_drift"], names, source, model.limits.effort),
                friction_choice=choice,
                load_friction_choice=None if d.get("load_friction_choice") is None else LoadFrictionChoices.from_dict(
                    d["load_friction_choice"], source),
                identified_at=str(when.get("at") or ""), recorded_at=str(when.get("recorded_at") or ""),
                drive_temperature=None if temps is None else np.array([float(temps[j]) for j in names]),
                model=model,
            )
            _check_gain_covariance(ident, source)
            _check_gain_check(ident, source)
            _check_load_friction_spread(ident, source)
            return ident
        except (KeyError, TypeError, ValueError) as err:
            raise PayloadIdError(f"{source} is not a valid robot.yaml ({type(err).__name__}: {err})",
                                 "re-run payload-id identify-robot") from err

    @classmethod
    def load(cls, path: str | PathLike, model: RobotModel) -> RobotIdentification:
        d = read_yaml_mapping(path, "robot file", "run payload-id identify-robot to write it")
        ident = cls.from_dict(d, model, str(path))
        if np.linalg.norm(model.gravity - ident.gravity) > 1e-9:
            model.set_gravity(ident.gravity)
        return ident


def _gravity(values, source: str) -> np.ndarray:
    """robot.yaml's gravity: three finite numbers (m/s²) in the base frame."""
    g = np.asarray(values, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise PayloadIdError(f"{source}: gravity {values!r:.60} is not three finite numbers (m/s², base frame)",
                             "re-run payload-id identify-robot")
    return g


def _rmse_commanded(values, tracking: bool, names: list[str], source: str) -> np.ndarray | None:
    """robot.yaml's torque_rmse_commanded_motion: per joint, finite and positive; only with tracking_error."""
    if values is None:
        return None
    fix = "re-run payload-id identify-robot"
    if tracking is not True:
        raise PayloadIdError(f"{source}: torque_rmse_commanded_motion is given but tracking_error is not true "
                             "(the two are written together)", fix)
    if not isinstance(values, dict) or set(values) != set(names):
        raise PayloadIdError(f"{source}: torque_rmse_commanded_motion is {values!r}, not one value per joint "
                             f"{names}", fix)
    out = np.array([v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                    for v in (values[j] for j in names)], dtype=float)
    if not np.all(np.isfinite(out) & (out > 0.0)):
        raise PayloadIdError(f"{source}: torque_rmse_commanded_motion {values} holds values that are not "
                             "positive N·m", fix)
    return out


def _flag(value, key: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise PayloadIdError(f"{source}: {key} is {value!r}, not true or false", "re-run payload-id identify-robot")
    return value


def _gear(friction: dict, n: int, source: str) -> GearFriction | None:
    """friction.gear: None (written before gear friction was modelled) or n coefficients and their std."""
    g = (friction or {}).get("gear")
    if g is None:
        return None
    if not isinstance(g, dict) or "mu" not in g:
        raise PayloadIdError(f"{source}: friction.gear is {g!r}, not a mapping {{mu, mu_std}}",
                             "re-run payload-id identify-robot")
    mu = gear_friction.check_mu(g["mu"], n, f"{source}: friction.gear.mu")
    std = _mu_std(g.get("mu_std"), n, f"{source}: friction.gear.mu_std")
    check_gear_std(mu, std, f"{source}: friction.gear.mu_std")
    return GearFriction(mu, std)


def check_gear_std(mu: np.ndarray, std: np.ndarray, what: str) -> None:
    """A fitted μ's σ is never 0 (identify-robot writes null where μ was given). Read as "known exactly", a 0 would
    make difference-rls's μ_j exact (load_friction.prior_std), so a 0 where μ is not 0 is refused, not guessed at."""
    zero = (np.asarray(mu) > 0) & (np.asarray(std) == 0)
    if np.any(zero):
        raise PayloadIdError(f"{what} is 0 for joint(s) {np.flatnonzero(zero).tolist()} whose μ is not 0: no "
                             "identification knows μ exactly",
                             "write null there (μ given, not fitted), or re-run payload-id identify-robot "
                             "--gear-friction identify")


def _mu_std(raw, n: int, key: str) -> np.ndarray:
    """A gear friction's mu_std: n standard deviations, None (NaN) where given rather than fitted."""
    raw = [None] * n if raw is None else raw
    try:
        std = np.array([np.nan if v is None else v for v in raw], dtype=float) if isinstance(raw, list) else None
    except (TypeError, ValueError):
        std = None
    if std is None or std.shape != (n,) or np.any(std[~np.isnan(std)] < 0) or np.any(np.isinf(std)):
        raise PayloadIdError(f"{key} is {raw!r}, not {n} standard deviations", "re-run payload-id identify-robot")
    return std


# friction.gear_unmodelled.theta_shift: a gear friction of a few percent moves the parameters by a fraction of
# their own size (UR10 cell: ≤ 0.3 of the largest; a 1 s run: 310 on a parameter whose σ is 235).
SHIFT_LIMIT = 1e3


def _unmodelled_gear(friction: dict, n: int, theta: np.ndarray, source: str) -> UnmodelledGear | None:
    """friction.gear_unmodelled: None (none shown, or written before) or {mu, mu_std, theta_shift}."""
    g = (friction or {}).get("gear_unmodelled")
    if g is None:
        return None
    key = f"{source}: friction.gear_unmodelled"
    if not isinstance(g, dict) or not {"mu", "theta_shift"} <= set(g):
        raise PayloadIdError(f"{key} is {g!r}, not a mapping {{mu, mu_std, theta_shift}}",
                             "re-run payload-id identify-robot")
    mu = gear_friction.check_mu(g["mu"], n, f"{key}.mu")
    std = _mu_std(g.get("mu_std"), n, f"{key}.mu_std")
    try:
        shift = np.asarray(g["theta_shift"], dtype=float).reshape(-1)
    except (TypeError, ValueError):
        shift = np.full(0, np.nan)
    p = theta.size
    if shift.size != p or not np.all(np.isfinite(shift)):
        raise PayloadIdError(f"{key}.theta_shift is not {p} finite values (one per parameter)",
                             "the file is damaged; re-run payload-id identify-robot")
    scale = float(np.max(np.abs(theta))) + 1.0
    if np.max(np.abs(shift)) > SHIFT_LIMIT * scale:
        raise PayloadIdError(f"{key}.theta_shift reaches {np.max(np.abs(shift)):.3g}, more than {SHIFT_LIMIT:g} times "
                             "the largest parameter: not the shift of a friction term",
                             "the file is damaged; re-run payload-id identify-robot")
    return UnmodelledGear(mu, std, shift)


def _scale_std(values, n: int, source: str) -> np.ndarray | None:
    """effort.scale_std: None (gains given or none) or n finite non-negative values."""
    if values is None:
        return None
    std = np.atleast_1d(np.asarray(values, dtype=float))
    if std.shape != (n,) or not np.all(np.isfinite(std)) or np.any(std < 0):
        raise PayloadIdError(f"{source}: effort.scale_std {std.tolist()} is not {n} finite non-negative values",
                             "re-run payload-id identify-robot")
    return std


def _gains_as_identified(gains, identified_with, n: int, source: str) -> np.ndarray:
    """effort_scale, refused when it is no longer the gains the parameters were identified with."""
    scale = check_drive_gains(gains, n, f"{source}: effort_scale")
    if identified_with is None:          # files written before the gains were recorded twice
        return scale
    then = check_drive_gains(identified_with, n, f"{source}: effort.identified_with")
    if not np.allclose(scale, then, rtol=1e-9, atol=0.0):
        raise PayloadIdError(
            f"{source}: effort_scale {np.round(scale, 6).tolist()} is not the drive gains its parameters were "
            f"identified with {np.round(then, 6).tolist()}: every torque (and payload) would be off by their ratio",
            "re-run payload-id identify-robot with the new gains (--effort-scale, or --known-payload-mass), "
            "or restore effort_scale")
    return scale


def _check_gain_check(ident: RobotIdentification, source: str) -> None:
    """effort.gain_check's gains were found against effort_scale and widened scale_std: an edit of either alone
    would leave the σ the payloads take without the runs that measured it."""
    check = ident.gain_check
    if check is None:
        return
    if not np.allclose(check.reference, ident.effort_scale, rtol=1e-9, atol=0.0) or ident.effort_scale_std is None \
            or not np.allclose(ident.effort_scale_std, check.widened_std(), rtol=1e-9, atol=0.0):
        raise PayloadIdError(f"{source}: effort.gain_check does not match effort_scale and effort.scale_std (the file "
                             "was edited after identification)", "re-run payload-id identify-robot")


def _check_load_friction_spread(ident: RobotIdentification, source: str) -> None:
    """effort.gain_model.load_friction_spread is a part of each gain's relative σ (identify-robot adds it in
    quadrature), which the payloads' gain share takes off again (payload.gain_uncertainty.load_friction_spread): one
    beyond the whole σ would take off more than the file holds."""
    gm = ident.gain_model
    if gm is None or gm.load_friction_spread is None:
        return
    rel = None if ident.effort_scale_std is None else \
        np.asarray(ident.effort_scale_std, dtype=float) / np.asarray(ident.effort_scale, dtype=float)
    if rel is None or np.any(gm.load_friction_spread > rel * (1 + 1e-9)):
        raise PayloadIdError(f"{source}: effort.gain_model.load_friction_spread "
                             f"{np.round(gm.load_friction_spread, 6).tolist()} exceeds the gains' relative σ "
                             f"{None if rel is None else np.round(rel, 6).tolist()}: the file was edited after "
                             "identification", "re-run payload-id identify-robot")


def _check_gain_covariance(ident: RobotIdentification, source: str) -> None:
    """effort.gain_covariance's diagonal is (scale_std / effort_scale)², as identify-robot writes it: the payload fits
    take its `relative` in place of scale_std (payload.gain_uncertainty.gain_relative_covariance), so a scale_std edited
    by hand (a user widening it for drives warmer than at identification) with the covariance left as it was, or a
    covariance copied from another identification, silently set the gains' σ the file's scale_std does not say."""
    cov = ident.gain_covariance
    if cov is None:
        return
    std = ident.effort_scale_std
    if std is None:
        raise PayloadIdError(f"{source}: effort.gain_covariance is given without effort.scale_std: the gains' joint "
                             "covariance belongs to an identification of their standard deviations",
                             "re-run payload-id identify-robot, or remove effort.gain_covariance")
    scale = np.asarray(ident.effort_scale, dtype=float).reshape(-1)
    expected = np.asarray(std, dtype=float).reshape(-1) / scale
    got = np.sqrt(np.maximum(np.diag(cov.relative), 0.0))
    if not np.allclose(got, expected, rtol=1e-6, atol=1e-12):
        raise PayloadIdError(f"{source}: effort.gain_covariance's relative standard deviations "
                             f"{np.round(got, 6).tolist()} are not effort.scale_std / effort_scale "
                             f"{np.round(expected, 6).tolist()}: the file was edited after identification, or the "
                             "covariance is another identification's",
                             "re-run payload-id identify-robot (or remove effort.gain_covariance to use scale_std "
                             "alone, as a format-1 file)")


@dataclass(frozen=True)
class GainCovariance:
    """The identified drive gains' share of the joint covariance of (θ, r), r_j = δk_j / k_j: cov(r) = `relative`
    (n, n), θ's response `theta_sensitivity` (p, n) = ∂θ/∂r, so cov(θ, r) = S C_r and the gains add S C_r Sᵀ to
    cov(θ) (a rank-n factor [S; I] C_r^½). The noise of the unloaded run both fits share is left out of cov(θ, r):
    the robot's own covariance (cov) carries it."""

    relative: np.ndarray            # (n, n)
    theta_sensitivity: np.ndarray   # (p, n)

    def to_dict(self) -> dict:
        return {"relative": [[float(x) for x in row] for row in self.relative],
                "theta_sensitivity": [[float(x) for x in row] for row in self.theta_sensitivity]}

    @classmethod
    def from_dict(cls, d, n: int, p: int, source: str) -> GainCovariance:
        if not isinstance(d, dict):
            raise PayloadIdError(f"{source}: effort.gain_covariance is {d!r}, not a mapping "
                                 "{relative, theta_sensitivity}", "re-run payload-id identify-robot")
        rel = np.asarray(d["relative"], dtype=float)
        sens = np.asarray(d["theta_sensitivity"], dtype=float)
        ok = (rel.shape == (n, n) and sens.shape == (p, n) and np.all(np.isfinite(rel)) and np.all(np.isfinite(sens))
              and np.allclose(rel, rel.T, rtol=1e-9, atol=0.0) and np.all(np.linalg.eigvalsh(rel) > -1e-12 * max(
                  float(np.max(np.abs(rel))), 1e-300)))
        if not ok:
            raise PayloadIdError(f"{source}: effort.gain_covariance is not a symmetric positive semidefinite {n}×{n} "
                                 f"relative covariance with a finite {p}×{n} theta_sensitivity",
                                 "re-run payload-id identify-robot")
        return cls(rel, sens)
