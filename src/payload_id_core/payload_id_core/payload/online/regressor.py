"""Per-sample regressor rows of one robot identification, fast enough for one update per control sample.

The online estimators build the rows of every sample themselves instead of calling the
identification's batch regressor: that one allocates per call, which costs more than the RLS update.
The rows are checked against the batch regressor once, when an estimator is built.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.jacobian import theta_layout
from payload_id_core.payload.load_friction import load_changeable_friction


class FastRegressor:
    """Per-sample regressor rows for one robot identification, without per-call Python overhead.

    rigid_into(out, q, qd, qdd) -> Y_rb (B, n, 10n) from pinocchio (its own Data, reused);
    friction_values(qd) -> (..., n, k) each joint's own friction columns, for one sample or a block;
    identification_rows_into(out, ...) -> the identification's rows [π_b | rotor | friction] (B, n, p).
    """

    def __init__(self, model: RobotModel, robot):
        self.model = model
        self.robot = robot
        self.fm = robot.friction
        self.kind = self.fm.kind
        self.n = model.n
        self.k = self.fm.per_joint
        self.eps = float(self.fm.sign_epsilon)
        self.shape = np.asarray(self.fm.shape, dtype=float)
        self._rows = np.arange(self.n)
        # Friction kinds whose columns have a closed form here; the others go through robot.friction.columns.
        self.closed_form = self.kind in ("none", "linear", "nonlinear") and not self.fm.needs_temperature
        self._alpha = self.shape[:, 0] if self.kind == "nonlinear" else None
        # Scatter indices of the per-joint friction values into the block-diagonal rows:
        # joint friction_rows[i] has value i at column friction_cols[i] of the friction block.
        self.friction_rows = np.repeat(self._rows, self.k)
        self.friction_cols = (self._rows[:, None] * self.k + np.arange(self.k)).reshape(-1)
        self.changeable = load_changeable_friction(self.fm)
        self._pm = model.model
        self._pd = model.model.createData()    # own workspace: other users of model.data are not disturbed
        self._reg = pin.computeJointTorqueRegressor
        # The identification's θ layout: [π_b | rotor | friction].
        self.layout = theta_layout(robot)
        lay = self.layout
        self.independent = np.asarray(robot.base.independent)
        self.n_rotor = lay.rotor.stop - lay.rotor.start
        self.kf = lay.friction.stop - lay.friction.start
        # Rotor inertias with their own unknown (the others are absorbed into π_b by the identification).
        self.rotor_free = np.asarray(getattr(getattr(robot, "rotor", None), "free", np.arange(self.n_rotor)), dtype=int)
        # Where identification_rows_into scatters the rotor and friction values (fixed: computed once, not per sample).
        self._rotor_cols = lay.base.stop + np.arange(self.n_rotor)
        self._friction_cols_p = lay.friction.start + self.friction_cols

    def friction_values(self, qd: np.ndarray, out: np.ndarray | None = None, constants_written: bool = False
                        ) -> np.ndarray:
        """(..., n, k): each joint's own friction columns (the nonzero entries of its row), into `out` when given
        (a work array of that shape: no allocation per sample); constants_written: `out` already holds the
        constant columns (an earlier call wrote them), which are then not written again."""
        qd = np.asarray(qd, dtype=float)
        if not self.closed_form:
            flat = qd.reshape(-1, self.n)
            cols = self.fm.columns(flat)
            vals = cols[:, self._rows[:, None], self._rows[:, None] * self.k + np.arange(self.k)]
            if out is None:
                return vals.reshape(qd.shape + (self.k,))
            out[...] = vals.reshape(qd.shape + (self.k,))
            return out
        v = np.empty(qd.shape + (self.k,)) if out is None else out
        if self.k == 0:
            return v
        self.varying_columns_into(qd, v[..., 0], v[..., 1])
        if not constants_written:
            v[..., 2] = 1.0
        return v

    def varying_columns_into(self, qd: np.ndarray, sgn: np.ndarray, second: np.ndarray) -> None:
        """The closed-form friction values' two columns that vary with q̇ (the third is 1) into `sgn` (tanh(q̇/ε), or
        sgn(q̇) for ε = 0) and `second` (q̇, or |q̇|^α sgn(q̇) for the nonlinear kind): views of a friction-value
        buffer (..., n, k) a caller keeps (friction_values makes them per call, ~0.2 µs of a ~20 µs online update)."""
        if self.eps > 0:
            np.divide(qd, self.eps, out=sgn)
            np.tanh(sgn, out=sgn)
        else:
            np.sign(qd, out=sgn)
        if self.kind == "linear":
            second[...] = qd
        else:                               # |q̇|^α sgn(q̇)
            assert self._alpha is not None     # the nonlinear kind's exponents
            np.abs(qd, out=second)
            np.power(second, self._alpha, out=second)
            second *= sgn

    def rigid_into(self, out: np.ndarray, q, qd, qdd) -> None:
        """(B, n, 10n) rigid-body rows of B samples into `out` (one pinocchio call each)."""
        reg, pm, pd = self._reg, self._pm, self._pd
        for i in range(q.shape[0]):
            out[i] = reg(pm, pd, q[i], qd[i], qdd[i])

    def identification_rows_into(self, out: np.ndarray, y_rb: np.ndarray, fv: np.ndarray | None, qdd) -> None:
        """The identification's rows [π_b | rotor | friction] (B, n, p) into `out` from the rigid rows
        y_rb and friction values fv (zeros kept where the structure has them: only the nonzero entries
        are written)."""
        B = y_rb.shape[0]
        b = self.layout.base.stop
        out[:, :, :b] = y_rb[:, :, self.independent]
        if self.n_rotor:
            out[:, self.rotor_free, self._rotor_cols] = qdd[:, self.rotor_free]
        if self.kf:
            if fv is None:
                raise TypeError("the identification's rows need the friction values fv: the model has friction")
            out[:, self.friction_rows, self._friction_cols_p] = fv.reshape(B, -1)

    def source_layout(self) -> tuple[int, int, int]:
        """(qdd offset, friction offset, length) of one sample's source vector for identification_gather:
        [Y_rb (n·10n) | q̈ (n) | friction values (n·k) | 0]: the last entry stays 0 (the structural zeros)."""
        n = self.n
        rigid = n * 10 * n
        return rigid, rigid + n, rigid + n + n * self.k + 1

    def identification_gather(self, u: int) -> np.ndarray:
        """(n, u) indices into one sample's source vector (source_layout) whose values are that sample's rows of
        the unknowns [π_b | rotor | friction | anything after, left 0]: identification_rows_into as one gather
        (three fancy-index writes were ~4 µs of a ~34 µs difference-rls update)."""
        n, b = self.n, self.layout.base.stop
        qdd_at, fv_at, length = self.source_layout()
        index = np.full((n, u), length - 1, dtype=np.intp)
        index[:, :b] = self._rows[:, None] * 10 * n + self.independent[None, :]
        index[self.rotor_free, self._rotor_cols] = qdd_at + self.rotor_free
        index[self.friction_rows, self._friction_cols_p] = fv_at + np.arange(self.friction_rows.size)
        return index

    def check_against_identification(self) -> None:
        """The fast rows must equal the identification's batch regressor (same θ layout)."""
        rng = np.random.default_rng(1)
        q, qd, qdd = rng.standard_normal((3, 2, self.n)) * 0.5
        theirs = np.asarray(self.robot.regressor(q, qd, qdd))
        mine = np.zeros((2, self.n, self.layout.p))
        y_rb = np.empty((2, self.n, 10 * self.n))
        self.rigid_into(y_rb, q, qd, qdd)
        self.identification_rows_into(mine, y_rb, self.friction_values(qd) if self.kf else None, qdd)
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=1e-9, atol=1e-9):
            raise PayloadIdError("the robot identification's regressor has a layout the online estimator does not know",
                                 "re-run payload-id identify-robot with this version")
