"""Joint friction models as regressor columns: τ_f = F(q̇, T; shape) θ_f, linear in θ_f.

Each joint's friction acts on that joint's torque only, so the columns are block-diagonal: k per
joint, joint-major (θ_f = [θ_1 (k), θ_2 (k), ...]). Nonlinear shape parameters (the exponent α
of Xu 2024 eq. 2, the Stribeck velocity, Tadese's σ3 and σ4) are held per joint in `shape`; the
identification finds them by an outer 1-D/2-D search around the linear least squares
(robot_id.friction_shapes.search_friction_shape), the same two-level scheme Xu 2024 uses for α,
refines them for all joints at once by Gauss–Newton and reports their std (robot.yaml friction.shape_std).

Kinds (θ per joint):
  none:        nothing
  linear:      Fc sgn(q̇) + Fv q̇ + B                                   [Fc, Fv, B]
  nonlinear:   (Fc + Fv |q̇|^α) sgn(q̇) + B           (Xu 2024 eq. 2)  [Fc, Fv, B], shape α
  stribeck:    (Fc + (Fs − Fc) e^{−(q̇/vs)²}) sgn(q̇) + Fv q̇ + B
                                                     (Tadese 2022 eq. 11) [Fc, Fs, Fv, B], shape vs
  temperature: Fc sgn(q̇) + σ2(T) (1 − e^{−|σ3 q̇|^σ4}) sgn(q̇) + B,  σ2(T) = σ2o + σ2T T
                                            (Tadese 2022 eq. 14–16) [Fc, σ2o, σ2T, B], shape σ3, σ4
The temperature model is the steady-state (static) form of eq. 16: the LuGre bristle state σ0 z +
σ1 ż settles within milliseconds and equals g(q̇) sgn(q̇) at the excitation's time scale. Only σ2
is temperature dependent here; the slopes σ3T, σ4T of eq. 15 need runs at several steady
temperatures (Tadese §3.1.1) and are not identifiable from one excitation run.

Sign function: sgn(q̇) = tanh(q̇ / ε) with ε = `sign_epsilon` (default 0.01 rad/s; 0 gives the hard
sign). Real friction passes continuously through zero velocity (pre-sliding; Tadese §2.4 adopts a
dynamic model for that reason), and with a hard sign the noise of measured velocities near a
reversal flips whole Coulomb columns at random. At 0.01 rad/s the smoothing only touches the
milliseconds around each reversal of an excitation trajectory. ε is not identified: fitted with α on the real
UR10e runs, no ε predicts the held-out runs' torques better than 0.01 beyond their noise (α absorbs it;
bench/sign_epsilon.py, design.md "Sign smoothing ε judged on held-out runs").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.regressor import rotor_inertia_columns  # noqa: F401 - part of this module's API (api.md)
from payload_id_core.errors import PayloadIdError

KINDS = ("none", "linear", "nonlinear", "stribeck", "temperature")
DEFAULT_SIGN_EPSILON = 0.01  # rad/s

_PARAMS = {
    "none": [],
    "linear": ["Fc", "Fv", "B"],
    "nonlinear": ["Fc", "Fv", "B"],
    "stribeck": ["Fc", "Fs", "Fv", "B"],
    "temperature": ["Fc", "s2o", "s2T", "B"],
}
# Parameters that are ≥ 0 for a physical friction (offsets B and the temperature slope are signed).
_NONNEGATIVE = {"Fc", "Fs", "Fv", "s2o"}
_SHAPE = {  # name, default, lower, upper, searched in log space?
    "none": [],
    "linear": [],
    "nonlinear": [("alpha", 1.0, 0.1, 3.0, False)],
    "stribeck": [("vs", 0.05, 1e-3, 1.0, True)],
    "temperature": [("s3", 2.0, 0.05, 200.0, True), ("s4", 1.0, 0.3, 3.0, False)],
}


def smooth_sign(v: np.ndarray, eps: float) -> np.ndarray:
    return np.sign(v) if eps <= 0 else np.tanh(v / eps)


def joint_columns(kind: str, qd: np.ndarray, shape: np.ndarray, temperature: np.ndarray | None = None,
                  eps: float = DEFAULT_SIGN_EPSILON) -> np.ndarray:
    """(N, k) friction columns of one joint for velocities qd (N,) and shape parameters (s,); with qd (N, n) and
    shape (s, n) (temperature (N, n)), (N, n, k) for every joint at once (all_joint_columns)."""
    qd = np.asarray(qd, dtype=float)
    sgn = smooth_sign(qd, eps)
    one = np.ones_like(qd)
    if kind == "none":
        return np.zeros((qd.size, 0))
    if kind == "linear":
        return np.stack([sgn, qd, one], axis=-1)
    if kind == "nonlinear":
        return np.stack([sgn, np.abs(qd) ** shape[0] * sgn, one], axis=-1)
    if kind == "stribeck":
        e = np.exp(-(qd / shape[0]) ** 2)
        return np.stack([sgn * (1.0 - e), sgn * e, qd, one], axis=-1)
    if kind == "temperature":
        if temperature is None:
            raise PayloadIdError("the temperature friction model needs joint temperatures",
                                 "record the drives' temperatures or choose --friction nonlinear")
        h = (1.0 - np.exp(-np.abs(shape[0] * qd) ** shape[1])) * sgn
        return np.stack([sgn, h, np.asarray(temperature, float) * h, one], axis=-1)
    raise PayloadIdError(f"unknown friction model '{kind}'", f"use one of {', '.join(KINDS)}")


def all_joint_columns(kind: str, qd: np.ndarray, shape: np.ndarray, temperature: np.ndarray | None = None,
                      eps: float = DEFAULT_SIGN_EPSILON) -> np.ndarray:
    """(N, n, k): joint_columns of every joint at once, for velocities qd (N, n) and shapes (n, s) (the same
    element-wise operations, one call instead of n: the payload monitor evaluates them for every block)."""
    qd = np.asarray(qd, dtype=float)
    if kind == "none":
        return np.zeros(qd.shape + (0,))
    return joint_columns(kind, qd, np.asarray(shape, dtype=float).T, temperature, eps)


def default_shape(kind: str, n: int) -> np.ndarray:
    """(n, s) default shape parameters of friction `kind` for n joints ((n, 0) for a kind without any)."""
    spec = _SHAPE.get(kind, [])
    return np.tile([s[1] for s in spec], (n, 1)).reshape(n, len(spec))


@dataclass
class FrictionModel:
    """Friction of every joint of one kind; `shape` (n, s) holds the nonlinear shape parameters."""

    kind: str
    joint_names: list[str]
    # None asks for the kind's default shape, filled in by __post_init__: after construction it is always an array.
    shape: np.ndarray = field(default=None)  # type: ignore[arg-type]
    sign_epsilon: float = DEFAULT_SIGN_EPSILON

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PayloadIdError(f"unknown friction model '{self.kind}'", f"use one of {', '.join(KINDS)}")
        n, spec = len(self.joint_names), _SHAPE[self.kind]
        if self.shape is None:
            self.shape = default_shape(self.kind, n)
        self.shape = np.asarray(self.shape, dtype=float).reshape(n, len(spec))

    # -- description ----------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.joint_names)

    @property
    def per_joint(self) -> int:
        return len(_PARAMS[self.kind])

    @property
    def n_params(self) -> int:
        return self.per_joint * self.n

    @property
    def param_names(self) -> list[str]:
        return [f"{p}_{j}" for j in self.joint_names for p in _PARAMS[self.kind]]

    @property
    def nonnegative(self) -> np.ndarray:
        """Mask over θ_f of the coefficients a physical friction keeps ≥ 0 (feasible estimator)."""
        return np.array([p in _NONNEGATIVE for _ in self.joint_names for p in _PARAMS[self.kind]], dtype=bool)

    @property
    def shape_names(self) -> list[str]:
        return [s[0] for s in _SHAPE[self.kind]]

    @property
    def shape_bounds(self) -> list[tuple[float, float, bool]]:
        return [(s[2], s[3], s[4]) for s in _SHAPE[self.kind]]

    @property
    def needs_temperature(self) -> bool:
        return self.kind == "temperature"

    # -- evaluation -----------------------------------------------------------------------------
    def columns(self, qd, temperature=None) -> np.ndarray:
        """(N, n, k n): block-diagonal friction regressor, τ_f = columns(q̇) @ θ_f."""
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        n_samples, k = qd.shape[0], self.per_joint
        out = np.zeros((n_samples, self.n, k * self.n))
        if k == 0:
            return out
        temp = None if temperature is None else np.atleast_2d(np.asarray(temperature, dtype=float))
        cols = all_joint_columns(self.kind, qd, self.shape, temp, self.sign_epsilon)
        for j in range(self.n):
            out[:, j, j * k:(j + 1) * k] = cols[:, j]
        return out

    def torque(self, params, qd, temperature=None) -> np.ndarray:
        """(N, n) friction torque for θ_f = `params` (joint-major, see param_names)."""
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        params = np.asarray(params, dtype=float).reshape(self.n, self.per_joint)
        out = np.zeros(qd.shape)
        temp = None if temperature is None else np.atleast_2d(np.asarray(temperature, dtype=float))
        cols = all_joint_columns(self.kind, qd, self.shape, temp, self.sign_epsilon)
        for j in range(self.n):
            out[:, j] = cols[:, j] @ params[j]
        return out

    def with_shape(self, shape) -> FrictionModel:
        return FrictionModel(self.kind, list(self.joint_names), np.array(shape, dtype=float), self.sign_epsilon)

    # -- robot.yaml -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "model": self.kind,
            "sign_epsilon": float(self.sign_epsilon),
            "shape": {name: [float(v) for v in self.shape[:, i]] for i, name in enumerate(self.shape_names)},
        }

    @classmethod
    def from_dict(cls, d: dict, joint_names: list[str]) -> FrictionModel:
        kind = d.get("model", "none")
        spec = _SHAPE.get(kind, [])
        shape = default_shape(kind, len(joint_names))
        if spec:
            shape_d = d.get("shape") or {}
            missing = [s[0] for s in spec if s[0] not in shape_d]
            if missing:
                raise PayloadIdError(f"robot.yaml friction model '{kind}' lacks shape parameters {missing}",
                                     "re-run payload-id identify-robot")
            shape = np.array([shape_d[s[0]] for s in spec], dtype=float).T
        return cls(kind, list(joint_names), shape, _read_sign_epsilon(d.get("sign_epsilon", DEFAULT_SIGN_EPSILON)))


def _read_sign_epsilon(value) -> float:
    """robot.yaml's ε: the smoothing the friction parameters were identified with, so a finite number > 0. In code ε = 0
    (the hard sign) is a choice; in robot.yaml it, a negative ε (every Coulomb column's sign flipped), NaN or text
    can only have been typed by hand, under parameters identified with another sign law."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise PayloadIdError(f"robot.yaml friction.sign_epsilon is {value!r}, not a finite velocity > 0 rad/s "
                             "(the sign smoothing the friction was identified with)",
                             f"restore the value payload-id identify-robot wrote ({DEFAULT_SIGN_EPSILON:g}) or "
                             "re-run identify-robot")
    return float(value)


def make_friction_model(kind: str, joint_names: list[str], alpha=None, *, shape=None,
                        sign_epsilon: float = DEFAULT_SIGN_EPSILON) -> FrictionModel:
    """A friction model for `joint_names`. `alpha` (scalar or per joint) sets the nonlinear model's
    exponent; `shape` (n, s) sets any kind's shape parameters directly."""
    if alpha is not None:
        if kind != "nonlinear":
            raise PayloadIdError(f"alpha is a parameter of the nonlinear friction model, not '{kind}'",
                                 "drop alpha or use kind='nonlinear'")
        shape = np.broadcast_to(np.asarray(alpha, dtype=float), (len(joint_names),)).reshape(-1, 1)
    shape = default_shape(kind, len(joint_names)) if shape is None else np.array(shape, dtype=float)
    return FrictionModel(kind, list(joint_names), shape, sign_epsilon)
