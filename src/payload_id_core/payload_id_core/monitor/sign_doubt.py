"""How far the identified friction law may be off where a joint moves slowly: the sign's smoothing (issue 31, h182).

The identified law is (Fc + Fv|q̇|^α) sgn_ε(q̇) with sgn_ε(v) = tanh(v/ε) (dynamics.friction.smooth_sign, ε 0.01 rad/s
on the simulated UR10 cell and by default): a choice, not a measurement, since the identification's motions seldom
dwell below ε. A drive's friction reaches its Coulomb level at a speed of its own (the cell's simulator: 5 mrad/s), so
at a few mrad/s the law is off by up to its own value with a sharp sign less its value with the smoothed one,
u_j = |τ_f,j(q̇, sgn) − τ_f,j(q̇, sgn_ε)|, and the observer's residual carries that error through its low-pass (gain K).

Measured on test_redteam_issue31_h87's 5 kg part placed as a fast move begins (9.55 s): the pan joint at 8-20 mrad/s
(0.103 of the fastest joint's speed, just above the creep rule's 0.1, so trusted) reads −1.5 to −0.4 N·m against the
true payload from 9.62 s, against its level at rest of 0.55 N·m (11.2 per row for the true Δφ); the law's sharp-less-
smoothed gap there is 1.6 N·m at 10 mrad/s and 0.8 N·m at 15. The simulator with its sign smoothed at ε as the law's
is, the place is named `placed` at 9.55 s; as is, the window's fit moves an unobservable moment to take the pan's rows
and is called a contact on wrist 2's single trusted row (16.4 per row).

Only in motion (PayloadMonitor's `moving`): at rest the measured speed is the encoder's noise (about 1 mrad/s against
ε), u swings by N·m while the friction does not (stiction), and the level learnt at rest holds the residual's spread.
The verdict (detect.classify) whitens each row by this variance added to the level: rows where the law cannot be
trusted weigh less, never more, and the alarm is not changed.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from payload_id_core.dynamics.friction import FrictionModel
from payload_id_core.robot_id.result import RobotIdentification


class FrictionSignDoubt:
    """The friction law's low-speed error bound, filtered as the residual is, per sample; `kept_s` of it kept."""

    def __init__(self, robot: RobotIdentification, gain: np.ndarray, kept_s: float):
        fr = robot.friction
        self.robot, self.gain, self.kept_s = robot, np.asarray(gain, dtype=float), float(kept_s)
        # None: the law has a sharp sign already (ε 0), or no friction: nothing is smoothed that could be off.
        self.sharp = (FrictionModel(fr.kind, list(fr.joint_names), fr.shape, 0.0)
                      if fr.sign_epsilon > 0 and fr.kind != "none" and not fr.needs_temperature else None)
        self._filtered = np.zeros(len(gain))
        self._t_last: float | None = None
        self._kept: deque = deque()          # (t, ū (n,)): the bound through the observer's low-pass

    def reset(self) -> None:
        """The observers restart (a pause): the filtered bound does too."""
        self._filtered[:] = 0.0
        self._t_last = None
        self._kept.clear()

    def update(self, t: np.ndarray, qd: np.ndarray, moving: list[float] | np.ndarray) -> None:
        """A run's samples (t (N,), q̇ (N, n)) and whether the robot moved at each (1/0): the bound, filtered
        (ū ← e^{−KΔt} ū + (1 − e^{−KΔt}) u: a bound on the low-passed error), kept where the robot moved, 0 at rest."""
        if self.sharp is None:
            return
        t = np.asarray(t, dtype=float)
        u = np.abs(self.sharp.torque(self.robot.friction_params, qd) - self.robot.friction_torque(qd))
        dt = np.diff(t, prepend=t[0] if self._t_last is None else self._t_last)
        keep = np.exp(-self.gain[None, :] * dt[:, None])
        if self._t_last is None:
            keep[0] = 0.0            # the first sample after a (re)start: the filter starts at it
        ubar = np.empty_like(u)
        f = self._filtered
        for k in range(t.size):
            f = keep[k] * f + (1.0 - keep[k]) * u[k]
            ubar[k] = f
        self._filtered = f
        self._t_last = float(t[-1])
        self._kept.extend(zip(t.tolist(), ubar * np.asarray(moving, dtype=float)[:, None]))
        while self._kept and self._kept[0][0] < self._t_last - self.kept_s:
            self._kept.popleft()

    def variance(self, t: np.ndarray) -> np.ndarray | None:
        """(N, n) N·m²: ū² at the samples stamped `t` (0 where none is kept); None when the law has nothing smoothed."""
        if self.sharp is None:
            return None
        out = np.zeros((len(t), len(self.gain)))
        if not self._kept:
            return out
        stamps = np.array([s for s, _ in self._kept])
        rows = np.array([u for _, u in self._kept])
        k = np.searchsorted(stamps, t)
        found = (k < stamps.size) & (stamps[np.minimum(k, stamps.size - 1)] == t)
        out[found] = rows[k[found]] ** 2
        return out
