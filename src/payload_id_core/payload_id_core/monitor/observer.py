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

import functools
from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.friction import all_joint_columns, smooth_sign
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor, payload_transform, rigid_body_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.regressors import full_regressor
from payload_id_core.robot_id.result import RobotIdentification

DERIVATIVE_STEP_S = 1e-4      # s: the central difference of M(q) q̇ along the motion (q ± h q̇)
MEMO_MAX_SAMPLES = 512        # the largest block whose rigid-body regressor is kept for its second user


@dataclass
class ObserverModel:
    """The dynamics the residual compares the measured torques with: the unloaded robot identification
    plus, when a payload is carried, its parameters φ_L in `frame` (None: no payload)."""

    model: RobotModel
    robot: RobotIdentification
    frame: str = ""
    phi: np.ndarray | None = None
    # The block's rigid-body regressor, shared with the FilteredPayloadRegressor given the same memo (PayloadMonitor
    # gives both one); each ObserverModel has its own otherwise.
    memo: RigidRegressorMemo = field(default_factory=lambda: RigidRegressorMemo(), repr=False, compare=False)

    def torque(self, q, qd, qdd) -> np.ndarray:
        """(N, n) τ̂(q, q̇, q̈): the robot's prediction plus the payload's torque."""
        tau = np.asarray(self.robot.predict(q, qd, qdd, model=self.model), dtype=np.float64)
        if self.phi is not None:
            tau = tau + payload_regressor(self.model, self.frame, q, qd, qdd) @ np.asarray(self.phi, dtype=float)
        return tau

    # Whether `terms` keeps its block's regressor for robot_regressor_terms: only where C_a is carried (the monitor's
    # theta_cov), the one user of it. (7 N, n, p) of `terms`' block; None: not kept.
    keep_regressor: bool = False
    last_regressor: np.ndarray | None = field(default=None, repr=False, compare=False)

    def robot_regressor_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """(P_a, B_a), each (N, n, p): the momentum and β of the last block `terms` made, in the regressor form of
        robot.yaml's parameters θ (p = θ's size), so that (P_a δθ, B_a δθ) are what an error δθ of θ changes in them.
        The friction columns drop out of both (τ_f(0) cancels in the momentum, τ_f(q̇) in β = Ṁq̇ − τ̂(q, q̇, 0)), so
        combine_terms needs no friction of its own here."""
        assert self.last_regressor is not None
        return combine_terms(self.last_regressor)

    def friction(self, qd) -> np.ndarray:
        return np.asarray(self.robot.friction_torque(qd), dtype=float)

    def terms(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, β) per sample, both (N, n): the momentum M(q) q̇ and β = Cᵀq̇ − g − τ_f, so ṗ = τ + β.
        momentum_terms(self.torque, q, qd, self.friction), from the block's shared rigid-body regressor."""
        (Q, V, A), rigid = self.memo.stacked(self.model, q, qd)
        robot = self.robot
        regressor = full_regressor(self.model, robot.base, robot.rotor, robot.friction, Q, V, A, rigid=rigid)
        if self.keep_regressor:
            # The robot's parameter error δθ moves r₀ by the same filter of this regressor (robot_regressor_terms).
            self.last_regressor = regressor
        tau = regressor @ robot.theta
        if self.phi is not None:
            tau = tau + payload_block(self.model, self.frame, rigid) @ np.asarray(self.phi, dtype=float)
        fr = self.friction(np.concatenate([qd, np.zeros_like(qd)]))
        return combine_terms(tau, fr[:len(qd)], fr[len(qd):])


def payload_block(model: RobotModel, frame: str, rigid: np.ndarray) -> np.ndarray:
    """(N, n, 10): payload_regressor from the standard rigid-body regressor (N, n, 10 n) at the same samples."""
    joint, x = _payload_transform(model, frame)
    return np.ascontiguousarray(rigid[..., 10 * (joint - 1): 10 * joint]) @ x


@functools.lru_cache(maxsize=16)
def _payload_transform(model: RobotModel, frame: str) -> tuple[int, np.ndarray]:
    """payload_transform, made once per model and frame (the URDF does not change; pinocchio's frame lookup and the
    10×10 transform were ~2 % of the monitor's update, made twice per block). The X returned is shared: not to be
    written."""
    joint, x = payload_transform(model, frame)
    x.setflags(write=False)
    return joint, x


def small_median(values: np.ndarray) -> float:
    """np.median of a short 1-D array, to the bit (the middle value, or the mean of the two middle ones as np.mean
    takes it: their sum over 2), without np.median's general machinery (~1.5 % of the monitor's update, per block).
    NaN where a value is NaN, as np.median."""
    v = np.sort(values)
    m = v.size // 2
    if v.size and np.isnan(v[-1]):
        return float("nan")
    return float(v[m]) if v.size % 2 else float((v[m - 1] + v[m]) / 2)


def stacked_arguments(q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, V, A), each (7 N, n): the seven argument sets (q, q̇, q̈) of the module docstring's identities,
    stacked so that one prediction call covers them: (q, 0, 0), (q, 0, q̇), (q, q̇, 0), (q⁺, 0, q̇), (q⁺, 0, 0),
    (q⁻, 0, q̇), (q⁻, 0, 0) with q± = q ± h q̇. One call of N·7 rows costs a seventh of seven calls' overhead."""
    h = DERIVATIVE_STEP_S
    zero = np.zeros_like(qd)
    ahead, behind = q + h * qd, q - h * qd
    return (np.concatenate([q, q, q, ahead, ahead, behind, behind]),
            np.concatenate([zero, zero, qd, zero, zero, zero, zero]),
            np.concatenate([zero, qd, zero, qd, zero, qd, zero]))


def combine_terms(stacked: np.ndarray, friction_qd: np.ndarray | None = None,
                  friction_zero: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(p, β) from a linear torque prediction τ̂ evaluated at stacked_arguments ((7 N, ...), any trailing shape),
    with the friction τ_f(q̇) and τ_f(0) (N, n) when τ̂ includes friction (module docstring's identities)."""
    # Seven views by slicing (np.split's general machinery cost ~2 % of the monitor's update)
    rows = stacked.shape[0] // 7
    rest, with_v, with_qd, ahead_v, ahead_0, behind_v, behind_0 = (stacked[i * rows:(i + 1) * rows] for i in range(7))
    momentum = with_v - rest                          # rest = g + τ_f(0)
    coriolis = with_qd - rest
    gravity = rest
    if friction_qd is not None:
        coriolis = coriolis - (friction_qd - friction_zero)
        gravity = rest - friction_zero
    m_dot_qd = ((ahead_v - ahead_0) - (behind_v - behind_0)) / (2 * DERIVATIVE_STEP_S)
    beta = (m_dot_qd - coriolis) - gravity
    if friction_qd is not None:
        beta = beta - friction_qd
    return momentum, beta


def momentum_terms(torque, q: np.ndarray, qd: np.ndarray, friction=None) -> tuple[np.ndarray, np.ndarray]:
    """(p, β): the momentum M(q) q̇ and β = Cᵀq̇ − g − τ_f from a torque prediction τ̂(q, q̇, q̈) that is
    linear in the parameters (the module docstring's identities); `friction(q̇)` is τ_f, None when the
    prediction has none. Works for any trailing shape of τ̂ (a regressor's columns too)."""
    stacked = torque(*stacked_arguments(q, qd))
    if friction is None:
        return combine_terms(stacked)
    fr = friction(np.concatenate([qd, np.zeros_like(qd)]))
    return combine_terms(stacked, fr[:len(qd)], fr[len(qd):])


class RigidRegressorMemo:
    """The last block's standard rigid-body regressor at its stacked_arguments: the observer (robot and payload
    torques) and FilteredPayloadRegressor need it for the same joint states, one after the other, and pinocchio's
    regressor is most of their cost. One per monitor (PayloadMonitor hands the same memo to both): a memo shared
    by every monitor of the process let one monitor's block evict another's, and tied them together across
    threads. The regressor kept is never written to."""

    def __init__(self) -> None:
        self._last: tuple | None = None     # (model, key, arguments, regressor)

    def stacked(self, model: RobotModel, q: np.ndarray, qd: np.ndarray
                ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """stacked_rigid_regressor(model, q, q̇), computed once for consecutive calls with the same model and
        joint states."""
        key = (q.shape, q.tobytes(), qd.tobytes())
        last = self._last
        if last is not None and last[0] is model and last[1] == key:
            return last[2], last[3]
        args, rigid = stacked_rigid_regressor(model, q, qd)
        # Kept only for blocks of a driver's size: a whole recording fed at once would hold its regressor (GBs) alive.
        self._last = (model, key, args, rigid) if q.shape[0] <= MEMO_MAX_SAMPLES else None
        return args, rigid


def stacked_rigid_regressor(model: RobotModel, q: np.ndarray, qd: np.ndarray
                            ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """(stacked_arguments(q, q̇), the standard rigid-body regressor there (7 N, n, 10 n))."""
    args = stacked_arguments(q, qd)
    return args, rigid_body_regressor(model, *args)


def payload_observer_terms(model: RobotModel, frame: str, q: np.ndarray, qd: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(P, B), each (N, n, 10): the payload's momentum M_L(q) q̇ = P φ and β_L = B φ (a payload has no
    friction)."""
    return momentum_terms(lambda qq, vv, aa: payload_regressor(model, frame, qq, vv, aa), q, qd)


class MomentumFilter:
    """y = K (∫ f ds − ∫ y ds − (p − p(t₀))) on the samples' own time steps (trapezoidal for f, the previous
    y for the feedback), for p and f of any trailing shape: De Luca's observer with p the momentum and
    f = τ + β, or the same filter on a regressor's columns. A block gives the same y as its samples one at
    a time."""

    def __init__(self, gain: np.ndarray, shape: tuple[int, ...]):
        self.gain = np.asarray(gain, dtype=float).reshape((-1,) + (1,) * (len(shape) - 1))
        self.y = np.zeros(shape)
        self._p0: np.ndarray | None = None
        self._integral = np.zeros(shape)
        self._f_last = np.zeros(shape)
        self._t_last: float | None = None
        self._scratch = np.empty(shape)

    def reset(self) -> None:
        """Start again at the next sample."""
        self.y = np.zeros_like(self.y)
        self._p0 = None
        self._integral[:] = 0.0
        self._t_last = None

    def update(self, t: np.ndarray, p: np.ndarray, f: np.ndarray) -> np.ndarray:
        out = np.empty_like(f)
        first = 0
        if self._p0 is None and t.size:
            self._p0, self._t_last, self._f_last = p[0].copy(), t[0], f[0].copy()
            out[0] = self.y
            first = 1
        if first == t.size:
            return out
        # Everything but the feedback of y is known for the whole block: the trapezoid's increments and the
        # momentum's change, taken at once; the loop keeps only y's recursion, in place.
        dt: np.ndarray = np.diff(np.concatenate((np.array([self._t_last], dtype=float), t[first:])))
        bad = np.flatnonzero(~(dt > 0))
        stop = first + (int(bad[0]) if bad.size else dt.size)
        m = stop - first
        trailing = (1,) * (f.ndim - 1)
        increment = (0.5 * dt[:m]).reshape((-1,) + trailing) * (f[first:stop] + np.concatenate(
            (self._f_last[None], f[first:stop - 1])))
        change = p[first:stop] - self._p0
        integral, gain, scratch, y = self._integral, self.gain, self._scratch, self.y
        # The samples' views and time steps taken by iteration (indexing each per sample cost ~10 % of the filter).
        for step, inc, moved, y_next in zip(dt[:m].tolist(), increment, change, out[first:stop]):
            np.multiply(step, y, out=scratch)
            np.subtract(inc, scratch, out=scratch)
            integral += scratch
            y = y_next
            np.subtract(integral, moved, out=scratch)
            np.multiply(gain, scratch, out=y)
        if m:
            self.y = out[stop - 1].copy()
            self._t_last, self._f_last = t[stop - 1], f[stop - 1].copy()
        if stop < t.size:
            raise PayloadIdError(f"joint-state time {t[stop]} is not after the previous one {self._t_last}",
                                 "feed samples in time order (reset() after a clock jump)")
        return out


class FilteredPayloadRegressor:
    """F(t), (n, 10): MomentumObserver's filter on the payload regressor, F φ being the residual a payload
    φ carried since the start would leave. Reset it together with the observer it pairs with."""

    def __init__(self, model: RobotModel, frame: str, gain: np.ndarray, memo: RigidRegressorMemo | None = None):
        self.model, self.frame = model, frame
        self.memo = RigidRegressorMemo() if memo is None else memo   # the observer's, to share its regressor
        self._filter = MomentumFilter(gain, (model.n, 10))
        self.terms: tuple[np.ndarray, np.ndarray] | None = None     # (P, B) of the last block

    def reset(self) -> None:
        self._filter.reset()

    def update(self, t, q, qd) -> np.ndarray:
        """Feed samples (t (N,), q, q̇ (N, n)); returns F after each one, (N, n, 10)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self._filter.update(t, *self.filter_inputs(q, qd))

    def filter_inputs(self, q, qd) -> tuple[np.ndarray, np.ndarray]:
        """(p, f) of the filter for the samples q, q̇ (N, n), each (N, n, 10); sets `terms`."""
        q, qd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd))
        # payload_observer_terms(model, frame, q, q̇), from the block's shared rigid-body regressor
        P, B = combine_terms(payload_block(self.model, self.frame, self.memo.stacked(self.model, q, qd)[1]))
        self.terms = (P, B)
        # The observer's filter with τ_L = ṗ_L − β_L in place of τ and no momentum of its own:
        # ∫τ_L = Δp_L − ∫β_L, i.e. p → −P, f → −B.
        return -P, -B


class MomentumObserver:
    """The residual r, sample by sample or in blocks, at a fixed gain K (1/s, per joint or one for all)."""

    def __init__(self, dynamics: ObserverModel, gain: float | np.ndarray = 50.0):
        n = dynamics.model.n
        self.dynamics = dynamics
        self.gain = np.broadcast_to(np.asarray(gain, dtype=float), (n,)).copy()
        if not np.all(np.isfinite(self.gain) & (self.gain > 0)):
            raise PayloadIdError(f"observer gain {gain} must be positive and finite", "give K in 1/s, e.g. 50")
        self._filter = MomentumFilter(self.gain, (n,))
        self.terms: tuple[np.ndarray, np.ndarray] | None = None     # (p, β) of the last block

    @property
    def r(self) -> np.ndarray:
        return self._filter.y

    def reset(self) -> None:
        """Start again at the next sample (after a gap in the joint states, or a change of model)."""
        self._filter.reset()

    def set_payload(self, frame: str, phi: np.ndarray | None) -> None:
        """The payload the residual compares against from now on: the momentum and integral restart, r too."""
        self.dynamics.frame, self.dynamics.phi = frame, None if phi is None else np.asarray(phi, dtype=float)
        self.reset()

    def update(self, t, q, qd, tau) -> np.ndarray:
        """Feed samples (t (N,), q, q̇, τ (N, n)); returns r after each one, (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self._filter.update(t, *self.filter_inputs(q, qd, tau))

    def filter_inputs(self, q, qd, tau) -> tuple[np.ndarray, np.ndarray]:
        """(p, f) of the filter for the samples q, q̇, τ (N, n): the momentum and τ + β; sets `terms`."""
        q, qd, tau = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, tau))
        momentum, beta = self.dynamics.terms(q, qd)
        self.terms = (momentum, beta)
        return momentum, tau + beta


class FilteredLoadFriction:
    """L(t), (n, 2 + k): the observer's filter on each joint's friction columns for the load-dependent
    Coulomb friction, so that r₀ = F φ + L[:, 0] ⊙ μ + (what the unloaded identification got wrong).

    Friction of a geared (strain-wave) drive grows with the load it transmits (Tadese 2022 §1 and its
    refs. 13, 15: friction "with load correction"; Xu 2024 §4.3: joint 2's Coulomb level 15.07 → 15.87
    N·m with the payload): τ_f,j = (Fc_j + μ_j |τ_j| + Fv_j |q̇_j|^α) sgn(q̇_j) + B_j. Two things follow for
    a residual against the unloaded identification:
      - a payload adds μ_j (|τ_b,j| − |τ_a,j|) sgn(q̇_j) (payload.load_friction's column, column 0 here): it
        follows the payload's own torque with the sign of the power flow (+μ when the drive lifts the load,
        −μ when the load back-drives it), which no rigid load reproduces;
      - an identification without μ (robot_id's kinds, Xu 2024 eq. 2) fits μ|τ_a| sgn(q̇) with its own
        friction columns as best it can, and leaves the rest in the unloaded residual at every move: on the
        simulated UR10 cell the empty flange is re-estimated at −0.075 kg from it (−0.011 kg without μ).
        Column 1, |τ̂_a,j| sgn(q̇_j), and columns 2.., the identification's own friction columns of joint j
        (dynamics.friction.joint_columns), span that rest.
    A fit of r₀ on F alone leaks both into the mass (−3.8 % after 5 s on the cell).

    Model torques, not measured ones (|τ_meas| carries the fit's own noise: errors in variables). They
    need no joint acceleration: τ̂_a = ṗ − β from the observer's own momentum and β (the module
    docstring's ṗ = τ + β), τ̂_b = τ̂_a + (Ṗ − B) φ̂ from the payload's, ṗ by a backward difference between
    samples. The velocity noise this puts on τ̂ matters only where τ̂ changes sign, and the filter then
    low-passes the columns as the observer low-passes the friction torque itself."""

    def __init__(self, gain: np.ndarray, robot: RobotIdentification):
        fr = robot.friction
        self.kind = fr.kind if fr.kind in ("linear", "nonlinear", "stribeck") else "none"
        self.shape, self.sign_epsilon = np.asarray(fr.shape, dtype=float), float(fr.sign_epsilon)
        n = len(fr.joint_names)
        self.k = all_joint_columns(self.kind, np.zeros((1, n)), self.shape, eps=self.sign_epsilon).shape[2]
        self._filter = MomentumFilter(gain, (n, 2 + self.k))
        self._last: tuple[float, np.ndarray, np.ndarray] | None = None     # (t, p, P) of the previous sample

    def reset(self) -> None:
        self._filter.reset()
        self._last = None

    def update(self, t: np.ndarray, qd: np.ndarray, p: np.ndarray, beta: np.ndarray, P: np.ndarray, B: np.ndarray,
               phi: np.ndarray) -> np.ndarray:
        """Feed a block's velocities and observer terms (MomentumObserver.terms, FilteredPayloadRegressor.terms)
        with the payload estimate φ̂ now; returns L after each sample, (N, n, 2 + k)."""
        return self._filter.update(t, *self.filter_inputs(t, qd, p, beta, P, B, phi))

    def filter_inputs(self, t: np.ndarray, qd: np.ndarray, p: np.ndarray, beta: np.ndarray, P: np.ndarray,
                      B: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, f) of the filter for a block (update's arguments): no momentum, the friction columns, each
        (N, n, 2 + k)."""
        t_prev, p_prev, P_prev = self._last if self._last is not None else (t[0], p[0], P[0])
        dt = np.diff(np.concatenate([[t_prev], t]))
        dt[dt <= 0] = np.inf             # the first sample after a reset: no difference, τ̂ taken with ṗ = 0
        tau_a = np.diff(np.concatenate([p_prev[None], p]), axis=0) / dt[:, None] - beta
        pl = np.concatenate([P_prev[None], P]) @ phi           # the payload's momentum, φ̂ now for all samples
        tau_b = tau_a + np.diff(pl, axis=0) / dt[:, None] - B @ phi
        sgn = smooth_sign(qd, self.sign_epsilon)
        c = np.empty(qd.shape + (2 + self.k,))
        c[..., 0] = (np.abs(tau_b) - np.abs(tau_a)) * sgn
        c[..., 1] = np.abs(tau_a) * sgn
        c[..., 2:] = all_joint_columns(self.kind, qd, self.shape, eps=self.sign_epsilon)
        self._last = (float(t[-1]), p[-1].copy(), P[-1].copy())
        return np.zeros_like(c), c
