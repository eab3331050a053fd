"""A load or a push: does the motion's acceleration refute a change the monitor fitted as a load (issue 31)?

At rest a load φ on the flange changes the joint torques only through its gravity wrench, τ = Jᵀ(q) [m(−g);
m c × (−g)]: a constant force at a point fixed on the flange, which a person's hand pressing there produces as well
(40 N straight down is a 4.1 kg part). In motion the two part: a load's wrench is its inertial one,
[m(a − g); m c × (a − g) + I α + ω × I ω] (Khalil & Dombre 2002, §9.3: the Newton-Euler wrench of a body), which
follows the move's accelerations, while a push held by a person stays what it is (a force constant in the base
frame, on a point of the link). So over the rows the re-estimate fits since a change, two models of the same
momentum residual are compared:
  - load:  b = A (φ_ref + Δφ),   Δφ = (Δm, Δ(m c)) free (the inertia held at φ_ref's);
  - push:  b = A φ_ref + G w,    w: a constant force on a point fixed on the flange (12 columns, see
                                 FilteredContactJacobian),
with A the filtered payload regressor's transient-free rows (detect.transient_free_rows), b the residual's, φ_ref
the payload before the change, and G the observer's filter run on the push's joint-torque columns (r₀'s response
to such a push, as F is its response to a payload; De Luca & Mattone 2003 eq. 8). At rest G spans the load's
columns (and more), so the push model fits at least as well: nothing is decided there. When the push model leaves
clearly less misfit than the load's (by `LoadOrPushSettings.refute_chi2` of the rows' variance, AR(1)-correlated
rows counted as the independent ones they are worth), the load is refuted: a push. Anything less decides nothing
(gentle motion does not tell them apart, and a robot model's own error can favour either by tens: the monitor's
other rules stand).

A person may meanwhile push a link before the flange, and neither model above has such a push: at rest the push
model's 12 columns fit any constant joint torque, the load's 4 only a gravity wrench, so a real load under a push on
the upper arm read "push over load" (h139: a 1.31 kg pick with 70 N held 4.5 s on the upper arm, by 459). So the
comparison that refutes a pending load (LoadOrPushJudgement.with_earlier_push) puts a constant force on a point of an
earlier link (pushed_links: the upper arm, whose push leaves the elbow and the wrists untouched) in both, and lets
the push be on any link from there to the flange (the links between: the forearm, wrist 1, wrist 2):
  - load + earlier push:   b = A (φ_ref + Δφ) + G_e w_e;
  - push on link k:        b = A φ_ref + G_k w + G_e w_e,   k the flange or a link between, whichever fits best
                           (one push, 12 columns, wherever it is),
and a load is refuted only when both comparisons (without and with that push) refute it: the load is read as
favourably as either lets it be.

The rows are kept as normal equations of [A | G | G_e | G_1 … | b], with the last RECENT_S of additions one by one so
that a contact's rows can be taken out again (as refine.PayloadRefiner.drop_since).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.monitor.observer import MomentumFilter
from payload_id_core.monitor.refine import RECENT_S

WORLD_ALIGNED = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
WRENCH = 12       # a constant force at a point fixed on the flange: f (3) and the products d_i f_j (9)
LOAD = 4          # Δm, Δ(m c): the columns of a load a task motion determines


def _moment_map() -> tuple[np.ndarray, np.ndarray]:
    """(B₀, E): the (6, 12) matrix B(R) = B₀ + (R's 9 entries, row by row) @ E with Jᵀ B(R) the push's 12 joint-torque
    columns (FilteredContactJacobian): B(R) = blockdiag(I₃, C(R)), C(R)[w, 3i + j] = ((R e_i) × e_j)_w
    = Σ_a ε_waj R[a, i], the moment of a unit force along e_j at the point R e_i from the frame's origin."""
    base = np.zeros((6, WRENCH))
    base[:3, :3] = np.eye(3)
    levi_civita = np.zeros((3, 3, 3))
    for w, a, j in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi_civita[w, a, j], levi_civita[w, j, a] = 1.0, -1.0
    linear = np.zeros((3, 3, 6, WRENCH))          # [a, i] of R -> [3 + w, 3 + 3 i + j] of B
    for a in range(3):
        for i in range(3):
            linear[a, i, 3:, 3 + 3 * i: 6 + 3 * i] = levi_civita[:, a, :]
    return base, linear.reshape(9, 6 * WRENCH)


def pushed_links(model: RobotModel, frame: str, earlier_joint: int = 2) -> list[str]:
    """pinocchio's joint frames of the links before the flange that contact_wrench puts a push on (module docstring):
    first the earlier link, the one the `earlier_joint`-th joint (from the base, 1-based) of the chain that carries
    `frame` moves (the UR's upper arm, moved by its shoulder-lift joint: a push there leaves the elbow and the wrists
    untouched, so those still tell a load from a push), then each link between it and the flange's. A chain of fewer
    joints: none."""
    pm = model.model
    chain = [int(j) for j in pm.supports[pm.frames[model.frame_id(frame)].parentJoint] if j > 0]
    return [str(pm.names[j]) for j in chain[earlier_joint - 1:-1]]


class FilteredContactJacobian:
    """G(t), (n, 12): the momentum observer's filter on the joint torques of a constant force f (base frame) pushing
    on a point o + R d fixed on the link of `frame` (o, R: the frame's origin and orientation; d unknown, as where a
    hand presses): τ = J_vᵀ f + J_ωᵀ ((R d) × f) = J_vᵀ f + Σ_ij d_i f_j J_ωᵀ (R e_i × e_j), linear in (f, d_i f_j) once
    the products are taken as free (J at the frame, LOCAL_WORLD_ALIGNED). So G w is the residual such a push leaves.
    A load's gravity wrench at rest is one of them (f = m(−g), d = c); in motion a load's is not. Reset it with the
    observer.

    Its columns are worked out on every joint-state sample the monitor takes, so that work is kept to pinocchio's
    frame Jacobian and one product a block (issue 35): Jᵀ B(R) with B linear in R's entries (_moment_map), in place
    of a cross product and an einsum per block (the same numbers up to rounding: test_monitor_speed_paths). The
    monitor runs the filter on them together with its other filters (PayloadMonitor._run)."""

    def __init__(self, model: RobotModel, frame: str, gain: np.ndarray):
        self.pm = model.model
        self.data = self.pm.createData()      # its own: the monitor's model data may be in use elsewhere
        self.frame_id = model.frame_id(frame)
        self.n = model.n
        # data.oMf's element for the frame, which every computeFrameJacobian updates in place (looked up once)
        self._placement = self.data.oMf[self.frame_id]
        self._base, self._linear = _moment_map()
        self._filter = MomentumFilter(gain, (model.n, WRENCH))

    def reset(self) -> None:
        self._filter.reset()

    def columns(self, q: np.ndarray) -> np.ndarray:
        """The push's joint-torque columns Jᵀ B(R) at each of the joint states q (N, n): (N, n, 12)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        N = q.shape[0]
        J = np.empty((N, 6, self.n))
        R = np.empty((N, 3, 3))
        jacobian, pm, data, frame_id = pin.computeFrameJacobian, self.pm, self.data, self.frame_id
        for q_k, J_k, R_k in zip(q, J, R):
            J_k[...] = jacobian(pm, data, q_k, frame_id, WORLD_ALIGNED)
            R_k[...] = self._placement.rotation
        B = (R.reshape(N, 9) @ self._linear).reshape(N, 6, WRENCH)
        B += self._base
        return np.matmul(np.transpose(J, (0, 2, 1)), B)

    def filter_inputs(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, f) of the filter for the joint states q (N, n): a constant external torque Jᵀ w enters the observer as
        the motor torque does, r = K(∫τ_ext − ∫r), so no momentum and the columns, each (N, n, 12)."""
        f = self.columns(q)
        return np.zeros_like(f), f

    def update(self, t: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Feed samples (t (N,), q (N, n)); returns G after each one, (N, n, 12)."""
        return self._filter.update(np.atleast_1d(np.asarray(t, dtype=float)), *self.filter_inputs(q))


@dataclass
class LoadOrPushSettings:
    # How much less a constant force on the flange must leave than a load, in the rows' own variance (AR(1)-correlated
    # rows counted as the independent ones they are worth), for the motion to refute the load (LoadOrPush.judge's
    # statistic below −this). On the simulated UR10 cell 40 N held 2 s on the flange in motion gave −167 and −335,
    # real picks and places +140 to +525 (4 kg, 2.3 kg), but −0.3 to +7 after gentle motion; the real UR10e's
    # 2.8 kg pick (its robot model errs more) −34 to −48 over 1-2 s: the margin is that, not more.
    refute_chi2: float = 100.0
    min_moving_rows: int = 50       # rows in motion (of the re-estimate's stride) before anything is judged
    # s of motion under a window's load whose rows favour a push (statistic below 0, short of refuting the load) before
    # it is named all the same (PayloadMonitor._maybe_publish): the motion may yet refute it. 40 N held on the flange
    # into a move read −76 after 0.9 s of motion, −101 0.75 s later; real picks after gentle motion −85 to +7.
    favours_push_wait_s: float = 3.0


@dataclass(frozen=True)
class LoadOrPushJudgement:
    statistic: float      # (S_push − S_load) / (s² · AR(1) factor) (LoadOrPush.judge): > 0 the load fits better
    load_misfit: float    # per row
    push_misfit: float    # per row
    rows: int
    moving_rows: int
    load_evidence: float = 0.0   # what the load's columns explain beyond the push's, per column, in the rows' variance
    push_evidence: float = 0.0   # what the push's columns explain beyond the load's, per column
    # The same comparison with a push on the earlier link in both models (module docstring; None: not made)
    with_earlier_push: LoadOrPushJudgement | None = None
    earlier: bool = False        # this is that comparison

    @property
    def most_for_load(self) -> LoadOrPushJudgement:
        """Of this comparison and the one with an earlier link's push in both, the one that favours the load more:
        what refutes a load must refute it either way."""
        other = self.with_earlier_push
        return self if other is None or self.statistic >= other.statistic else other

    @property
    def text(self) -> str:
        both = ", with a push on an earlier link in both" if self.earlier else ""
        return (f"a constant force on the flange leaves {self.push_misfit:.2f} per row, a load {self.load_misfit:.2f}"
                f"{both}; evidence per column of a load {self.load_evidence:.1f}, of a push {self.push_evidence:.1f}, "
                f"over {self.moving_rows} rows in motion")


class LoadOrPush:
    """The rows since a change, for LoadOrPush.judge (module docstring). `links`: how many links before the flange
    the push's columns are given for (pushed_links: the earlier link first; 0, the flange's alone)."""

    def __init__(self, settings: LoadOrPushSettings | None = None, links: int = 0):
        self.s = settings or LoadOrPushSettings()
        self.pushes = WRENCH * (1 + links)
        self.restart(np.zeros(10), float("nan"))

    def restart(self, phi_ref: np.ndarray, t: float) -> None:
        self.phi_ref = np.asarray(phi_ref, dtype=float).copy()
        self.t0 = t
        u = LOAD + self.pushes + 1
        self.ZtZ = np.zeros((u, u))
        self.rows = 0
        self.moving_rows = 0
        self._recent: deque = deque()

    def add(self, t: np.ndarray, A: np.ndarray, G: np.ndarray, b: np.ndarray, scale: np.ndarray,
            moving: np.ndarray) -> None:
        """Rows A (N, n, 10), G (N, n, 12 (1 + links): the push's columns on the flange, then on each of `links`),
        b (N, n) (untrusted joints' rows already zero), whitened by `scale` (n,); `moving` (N,) bool: the robot moved
        at that row."""
        if t.size == 0:
            return
        b_ref = b - A @ self.phi_ref
        Z = np.concatenate([A[..., :LOAD], G, b_ref[..., None]], axis=2) / scale[None, :, None]
        Z = Z.reshape(-1, Z.shape[-1])
        ZtZ = Z.T @ Z
        rows = int(np.count_nonzero(np.any(Z != 0.0, axis=1)))
        moving_rows = int(np.sum(moving))
        self.ZtZ += ZtZ
        self.rows += rows
        self.moving_rows += moving_rows
        self._recent.append((float(t[0]), ZtZ, rows, moving_rows))
        while self._recent and self._recent[0][0] < float(t[-1]) - RECENT_S:
            self._recent.popleft()

    def drop_since(self, t: float) -> None:
        """Take out the rows added from `t` on (within the last RECENT_S), as PayloadRefiner.drop_since."""
        while self._recent and self._recent[-1][0] >= t:
            _, ZtZ, rows, moving_rows = self._recent.pop()
            self.ZtZ -= ZtZ
            self.rows -= rows
            self.moving_rows -= moving_rows
        if self.rows <= 0:
            self.ZtZ[:] = 0.0
            self.rows = self.moving_rows = 0

    def _misfit(self, cols: np.ndarray) -> float:
        """The least residual sum of squares of b on the columns `cols` (ridge-free; pinv on a rank-deficient set)."""
        ZtZ = self.ZtZ
        u = ZtZ.shape[0] - 1
        M, v, btb = ZtZ[np.ix_(cols, cols)], ZtZ[cols, u], ZtZ[u, u]
        x = np.linalg.lstsq(M, v, rcond=1e-10)[0]
        return float(max(btb - v @ x, 0.0))

    def judge(self, correlation: float) -> LoadOrPushJudgement | None:
        """The comparison (None: too few rows in motion to say anything). `correlation`: the rows' AR(1) variance
        factor (detect.ar1_factor at the re-estimate's stride)."""
        if self.moving_rows < self.s.min_moving_rows or self.rows <= LOAD + WRENCH:
            return None
        load = np.arange(LOAD)
        flange, *links = (np.arange(LOAD + k, LOAD + k + WRENCH) for k in range(0, self.pushes, WRENCH))
        plain = self._compare(correlation, [(load, 0.0)], [(flange, 0.0)])
        if not links or self.rows <= LOAD + self.pushes:
            return plain
        # The earlier link's push is in a model where it explains more than `refute_chi2` of the rows' variance (the
        # margin by which rows must favour a push to call one), in both models alike; the push is on whichever link
        # fits best, the flange or one between.
        earlier, *between = links
        price = self.s.refute_chi2
        on_links = (flange, *between)
        with_earlier = self._compare(
            correlation, [(load, 0.0), (np.concatenate([load, earlier]), price)],
            [(k, 0.0) for k in on_links] + [(np.concatenate([k, earlier]), price) for k in on_links], earlier=True)
        return replace(plain, with_earlier_push=with_earlier)

    def _compare(self, correlation: float, loads: list[tuple[np.ndarray, float]],
                 pushes: list[tuple[np.ndarray, float]], earlier: bool = False) -> LoadOrPushJudgement:
        """The comparison of the load model with the push model, each the best of its alternatives: (columns, their
        price in the rows' variance), the columns indices into ZtZ."""
        both = np.union1d(np.concatenate([c for c, _ in loads]), np.concatenate([c for c, _ in pushes]))
        # The rows' variance (floored at the unit the rows are whitened to), AR(1)-correlated rows counted as the
        # independent ones they are worth, on the largest model.
        variance = max(self._misfit(both) / max(self.rows - both.size, 1), 1.0) * correlation

        def best(models: list[tuple[np.ndarray, float]]) -> tuple[float, float, np.ndarray]:
            fits = [(self._misfit(cols), price, cols) for cols, price in models]
            return min(fits, key=lambda fit: fit[0] / variance + fit[1])

        s_load, load_price, load = best(loads)
        s_push, push_price, push = best(pushes)
        pair = np.union1d(load, push)
        s_both = self._misfit(pair)
        unit = max(s_both / max(self.rows - pair.size, 1), 1e-12) * correlation
        load_evidence = (s_push - s_both) / (unit * LOAD)
        push_evidence = (s_load - s_both) / (unit * WRENCH)
        # How much more the push model leaves than the load model, in that variance (each with its price).
        stat = (s_push - s_load) / variance + push_price - load_price
        return LoadOrPushJudgement(float(stat), s_load / self.rows, s_push / self.rows, self.rows, self.moving_rows,
                                   float(load_evidence), float(push_evidence), earlier=earlier)
