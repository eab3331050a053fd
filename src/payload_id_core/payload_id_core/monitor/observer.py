"""De Luca's generalized-momentum residual on the identified robot plus the current payload.

With p = M(q) q̇ the generalized momentum, the rigid-body model gives ṗ = τ + Cᵀ(q, q̇) q̇ − g(q) − τ_f(q̇)
(Ṁ = C + Cᵀ), so the residual

    r(t) = K ( ∫₀ᵗ (τ + Cᵀq̇ − g − τ_f − r) ds − (p(t) − p(0)) )            (De Luca & Mattone 2003, eq. 8,
                                                                            with the opposite sign; Gaz &
                                                                            De Luca 2017 §II)
obeys ṙ = K ((τ − τ̂) − r): a first-order low-pass of the motor torque the model does not explain, needing
no joint acceleration. The sign is the project's residual convention (measured minus model, like
payload.residuals), so a picked payload shows as a step of its own torques +Y_L φ_L (De Luca's r, the
external torque, is its negative), a contact as a transient. The integral uses the trapezoidal rule: the
rectangle rule's error, dt/2 · d(τ + β)/dt, is 0.4 N·m on a UR10 shoulder at 500 Hz.

The model terms come from the robot identification, not the URDF: every term is linear in the parameters,
so each is the identification's own torque prediction τ̂(q, q̇, q̈) = Y(q, q̇, q̈) θ at chosen arguments:
    g(q) + τ_f(0) = τ̂(q, 0, 0)
    M(q) v        = τ̂(q, 0, v) − τ̂(q, 0, 0)                       (the momentum, with v = q̇)
    C(q, q̇) q̇     = τ̂(q, q̇, 0) − τ̂(q, 0, 0) − (τ_f(q̇) − τ_f(0))
    Ṁ q̇           = ∂/∂q [M(q) v]·q̇ at v = q̇                       (central difference along q̇)
    Cᵀ q̇          = Ṁ q̇ − C q̇.
The current payload φ_L adds its regressor Y_L(q, q̇, q̈) φ_L to τ̂ the same way.

FilteredPayloadRegressor runs the same recursion on the payload's regressor alone: F(t), (n, 10), with
r₀ = F φ_L (same recursion, same start; up to the trapezoid's error) when r₀ is the residual against the
unloaded robot and φ_L the payload carried since the start. So the residual against any payload φ is r₀ − F φ without
restarting anything, and φ itself is a linear fit of r₀ on F, needing no joint acceleration (the
"filtered dynamics" identification).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.result import RobotIdentification

DERIVATIVE_STEP_S = 1e-4      # s: the central difference of M(q) q̇ along the motion (q ± h q̇)


@dataclass
class ObserverModel:
    """The dynamics the residual compares the measured torques with: the unloaded robot identification
    plus, when a payload is carried, its parameters φ_L in `frame` (None: no payload)."""

    model: RobotModel
    robot: RobotIdentification
    frame: str = ""
    phi: np.ndarray | None = None

    def torque(self, q, qd, qdd) -> np.ndarray:
        """(N, n) τ̂(q, q̇, q̈): the robot's prediction plus the payload's torque."""
        tau = np.asarray(self.robot.predict(q, qd, qdd, model=self.model), dtype=np.float64)
        if self.phi is not None:
            tau = tau + payload_regressor(self.model, self.frame, q, qd, qdd) @ np.asarray(self.phi, dtype=float)
        return tau

    def friction(self, qd) -> np.ndarray:
        return np.asarray(self.robot.friction_torque(qd), dtype=float)

    def terms(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, β) per sample, both (N, n): the momentum M(q) q̇ and β = Cᵀq̇ − g − τ_f, so ṗ = τ + β."""
        zero = np.zeros_like(qd)
        rest = self.torque(q, zero, zero)                      # g + τ_f(0)
        momentum = self.torque(q, zero, qd) - rest
        coriolis = self.torque(q, qd, zero) - rest - (self.friction(qd) - self.friction(zero))
        h = DERIVATIVE_STEP_S
        ahead, behind = q + h * qd, q - h * qd
        m_dot_qd = ((self.torque(ahead, zero, qd) - self.torque(ahead, zero, zero))
                    - (self.torque(behind, zero, qd) - self.torque(behind, zero, zero))) / (2 * h)
        gravity = rest - self.friction(zero)
        beta = (m_dot_qd - coriolis) - gravity - self.friction(qd)
        return momentum, beta


def payload_observer_terms(model: RobotModel, frame: str, q: np.ndarray, qd: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(P, B), each (N, n, 10): the payload's momentum M_L(q) q̇ = P φ and β_L = B φ (ObserverModel.terms
    for the payload's regressor alone; a payload has no friction)."""
    zero = np.zeros_like(qd)

    def y(qq, vv, aa):
        return payload_regressor(model, frame, qq, vv, aa)

    rest = y(q, zero, zero)
    momentum = y(q, zero, qd) - rest
    coriolis = y(q, qd, zero) - rest
    h = DERIVATIVE_STEP_S
    ahead, behind = q + h * qd, q - h * qd
    m_dot_qd = ((y(ahead, zero, qd) - y(ahead, zero, zero)) - (y(behind, zero, qd) - y(behind, zero, zero))) / (2 * h)
    return momentum, (m_dot_qd - coriolis) - rest


class FilteredPayloadRegressor:
    """F(t), (n, 10): MomentumObserver's recursion on the payload regressor, F φ being the residual a payload
    φ carried since the start would leave. Reset it together with the observer it pairs with."""

    def __init__(self, model: RobotModel, frame: str, gain: np.ndarray):
        self.model, self.frame = model, frame
        self.gain = np.asarray(gain, dtype=float)
        self.F = np.zeros((model.n, 10))
        self._p0: np.ndarray | None = None
        self._integral = np.zeros((model.n, 10))
        self._b_last = np.zeros((model.n, 10))
        self._t_last: float | None = None

    def reset(self) -> None:
        self.F[:] = 0.0
        self._p0 = None
        self._integral[:] = 0.0
        self._t_last = None

    def update(self, t, q, qd) -> np.ndarray:
        """Feed samples (t (N,), q, q̇ (N, n)); returns F after each one, (N, n, 10)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        q, qd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd))
        P, B = payload_observer_terms(self.model, self.frame, q, qd)
        out = np.empty_like(P)
        g = self.gain[:, None]
        for k in range(t.size):
            if self._p0 is None:
                self._p0, self._t_last, self._b_last = P[k].copy(), t[k], B[k].copy()
                out[k] = self.F
                continue
            dt = t[k] - self._t_last
            # MomentumObserver's recursion with τ_L = ṗ_L − β_L in place of τ: ∫τ_L = Δp_L − ∫β_L.
            self._integral -= 0.5 * dt * (B[k] + self._b_last) + dt * self.F
            self.F = g * (self._integral + (P[k] - self._p0))
            self._t_last, self._b_last = t[k], B[k].copy()
            out[k] = self.F
        return out


class MomentumObserver:
    """The residual r, sample by sample or in blocks, at a fixed gain K (1/s, per joint or one for all).

    Discretised on the samples' own time steps (trapezoidal for τ + β, the previous sample's r for the
    feedback), so a block gives the same r as feeding its samples one at a time.
    """

    def __init__(self, dynamics: ObserverModel, gain: float | np.ndarray = 50.0):
        n = dynamics.model.n
        self.dynamics = dynamics
        self.gain = np.broadcast_to(np.asarray(gain, dtype=float), (n,)).copy()
        if not np.all(np.isfinite(self.gain) & (self.gain > 0)):
            raise PayloadIdError(f"observer gain {gain} must be positive and finite", "give K in 1/s, e.g. 50")
        self.r = np.zeros(n)
        self._p0: np.ndarray | None = None
        self._integral = np.zeros(n)
        self._f_last = np.zeros(n)           # τ + β at the previous sample
        self._t_last: float | None = None

    def reset(self) -> None:
        """Start again at the next sample (after a gap in the joint states, or a change of model)."""
        self.r[:] = 0.0
        self._p0 = None
        self._integral[:] = 0.0
        self._t_last = None

    def set_payload(self, frame: str, phi: np.ndarray | None) -> None:
        """The payload the residual compares against from now on: the momentum and integral restart, r too."""
        self.dynamics.frame, self.dynamics.phi = frame, None if phi is None else np.asarray(phi, dtype=float)
        self.reset()

    def update(self, t, q, qd, tau) -> np.ndarray:
        """Feed samples (t (N,), q, q̇, τ (N, n)); returns r after each one, (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        q, qd, tau = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, tau))
        momentum, beta = self.dynamics.terms(q, qd)
        out = np.empty_like(tau)
        f = tau + beta
        for k in range(t.size):
            if self._p0 is None:
                self._p0, self._t_last, self._f_last = momentum[k].copy(), t[k], f[k].copy()
                out[k] = self.r
                continue
            dt = t[k] - self._t_last
            if not dt > 0:
                raise PayloadIdError(f"joint-state time {t[k]} is not after the previous one {self._t_last}",
                                     "feed samples in time order (reset() after a clock jump)")
            self._integral += 0.5 * dt * (f[k] + self._f_last) - dt * self.r
            self.r = self.gain * (self._integral - (momentum[k] - self._p0))
            self._t_last, self._f_last = t[k], f[k].copy()
            out[k] = self.r
        return out
