"""Offline identification of the unloaded robot: base parameters, rotor inertia, friction (→ robot.yaml).

Model (Xu 2024 eq. 1–4; Khalil 2007 eq. 1–3; Tadese 2022 eq. 4):
    τ = Y_b(q, q̇, q̈) π_b + diag(q̈) Ia + F(q̇, T; shape) θ_f,    θ = [π_b, Ia, θ_f]
π_b = K φ are the rigid-body base parameters (base_params). A drive's rotor inertia Ia_j whose
column q̈_j e_j already lies in the span of the base columns (joint 1 of a robot whose first axis
is vertical: it acts exactly like Izz1) cannot be told apart; it is absorbed into that base
parameter and only the others are separate unknowns. Friction shape parameters (α of Xu eq. 2,
Stribeck velocity, Tadese's σ3, σ4) are found per joint by an outer search around the linear
least squares, the inner problem staying linear, then refined jointly for all joints by Gauss–Newton
(variable projection). The covariance of θ is marginal over those shapes: θ's block of the
Gauss–Newton covariance of [θ, shapes] (shape_marginal_covariance); the shapes' own std goes to
robot.yaml (friction.shape_std).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.robot_id import estimators
from payload_id_core.dynamics.base_params import BaseParameters, compute_base_parameters, standard_parameter_names
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.files import atomic_write_yaml, read_yaml_mapping
from payload_id_core.dynamics.friction import FrictionModel, joint_columns, make_friction_model, smooth_sign
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor, rigid_body_regressor

# A trajectory whose column-normalised regressor has a larger condition number leaves parameters
# unexcited (well-designed excitations reach 10–300; Tadese §3.2.3, Xu §4).
COND_LIMIT = 1e5
_SHAPE_SEARCH_SAMPLES = 8000
_CHUNK = 4096  # samples per regressor chunk: bounds memory to a few MB per chunk
FORMAT_VERSION = 1


# -- structure: which unknowns the data can see ---------------------------------------------------

@dataclass
class RotorStructure:
    """Rotor inertias: `free` joints get their own unknown; absorbed ones add C[:, j] Ia_j to π_b."""

    free: np.ndarray          # (r,) joint indices with an own Ia unknown
    absorbed: np.ndarray      # (b, n) π_b += absorbed @ Ia (zero columns for free joints)


def rotor_structure(model: RobotModel, base: BaseParameters, seed: int = 1) -> RotorStructure:
    """Which rotor-inertia columns are independent of the base regressor (numerically, random states)."""
    rng = np.random.default_rng(seed)
    n = model.n
    n_samples = max(40, 3 * (base.b + n) // n)
    q = rng.uniform(-np.pi, np.pi, (n_samples, n))
    qd, qdd = rng.standard_normal((n_samples, n)), rng.standard_normal((n_samples, n))
    wb = base.reduce(rigid_body_regressor(model, q, qd, qdd)).reshape(-1, base.b)
    absorbed = np.zeros((base.b, n))
    free = []
    basis = wb
    for j in range(n):
        col = np.zeros((n_samples, n))
        col[:, j] = qdd[:, j]
        col = col.reshape(-1)
        coef = np.linalg.lstsq(basis, col, rcond=None)[0]
        if np.linalg.norm(basis @ coef - col) > 1e-7 * np.linalg.norm(col):
            free.append(j)
            basis = np.column_stack([basis, col])
        else:
            c = coef[:base.b]
            c[np.abs(c) < 1e-9] = 0.0
            absorbed[:, j] = c
    return RotorStructure(np.array(free, dtype=int), absorbed)


def inertial_map(base: BaseParameters, rotor: RotorStructure, n: int) -> np.ndarray:
    """A with θ_I = [π_b, Ia_free] = A ψ, ψ = [φ (10 n), Ia (n)] (the SDP's variables)."""
    r = rotor.free.size
    a = np.zeros((base.b + r, 11 * n))
    a[:base.b, :10 * n] = base.K
    a[:base.b, 10 * n:] = rotor.absorbed
    a[base.b + np.arange(r), 10 * n + rotor.free] = 1.0
    return a


def _base_names(base: BaseParameters, rotor: RotorStructure, joint_names: list[str]) -> list[str]:
    names = list(base.names)
    for j in range(len(joint_names)):
        for i in np.flatnonzero(rotor.absorbed[:, j]):
            c = rotor.absorbed[i, j]
            names[i] += f" + Ia{j + 1}" if abs(c - 1) < 1e-9 else f" + {c:.6g}*Ia{j + 1}"
    return names


# -- the result ---------------------------------------------------------------------------------

@dataclass
class RobotIdentification:
    """An identified robot: everything robot.yaml holds, and the regressor to use it."""

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
    effort_scale: np.ndarray          # (n,) drive gains the torques were computed with
    rmse: np.ndarray                  # (n,) N·m on the identification data
    sigma: np.ndarray                 # (n,) noise std per joint (WLS weights)
    estimator: str = "wls"
    source: str = "commanded"
    physically_consistent: bool | None = None
    standard_parameters: np.ndarray | None = None   # ψ of the feasible fit (φ, Ia), when computed
    condition_number: float = float("nan")
    validation_rmse: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    # (n, s) std of the friction shape parameters (α, ...) when identified; cov is then marginal over them
    shape_std: np.ndarray | None = None
    _model: RobotModel | None = field(default=None, repr=False)

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
    def _require_model(self, model: RobotModel | None) -> RobotModel:
        model = model or self._model
        if model is None:
            raise PayloadIdError("this robot identification has no robot model attached",
                                 "load it with RobotIdentification.load(path, model)")
        return model

    def regressor(self, q, qd, qdd, temperature=None, model: RobotModel | None = None) -> np.ndarray:
        """(N, n, p) with predict = regressor @ theta."""
        return full_regressor(self._require_model(model), self.base, self.rotor, self.friction,
                              q, qd, qdd, temperature)

    def predict(self, q, qd, qdd, temperature=None, model: RobotModel | None = None) -> np.ndarray:
        """(N, n) joint torques of the unloaded robot."""
        return self.regressor(q, qd, qdd, temperature, model) @ self.theta

    def friction_torque(self, qd, temperature=None) -> np.ndarray:
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
            "estimator": self.estimator,
            "signals": self.source,
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
            "notes": list(self.notes),
        }
        if self.validation_rmse is not None:
            d["validation_torque_rmse"] = dict(zip(self.joint_names, fl(self.validation_rmse)))
        if self.standard_parameters is not None:
            d["standard_parameters"] = fl(self.standard_parameters)
        return d

    def _friction_dict(self) -> dict:
        d = self.friction.to_dict()
        if self.shape_std is not None and self.friction.shape_names:
            d["shape_std"] = {name: [None if not np.isfinite(v) else float(v) for v in self.shape_std[:, i]]
                              for i, name in enumerate(self.friction.shape_names)}
        return d

    def save(self, path) -> None:
        atomic_write_yaml(path, self.to_dict())

    @classmethod
    def from_dict(cls, d: dict, model: RobotModel, source: str = "robot.yaml") -> "RobotIdentification":
        try:
            if d.get("format") != FORMAT_VERSION:
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
            val = d.get("validation_torque_rmse")
            psi = d.get("standard_parameters")
            return cls(
                joint_names=names, urdf_path=d["urdf"]["path"], urdf_sha256=sha,
                gravity=np.asarray(d["gravity"], dtype=float), base=base, rotor=RotorStructure(free, absorbed),
                friction=friction, theta=theta, theta_names=list(par["names"]),
                cov=np.asarray(d["covariance"], dtype=float).reshape(theta.size, theta.size), rel_std=rel,
                effort_scale=np.asarray(d["effort_scale"], dtype=float),
                rmse=np.array([d["torque_rmse"][j] for j in names]),
                sigma=np.array([d["noise_std"][j] for j in names]),
                estimator=d.get("estimator", "wls"), source=d.get("signals", "commanded"),
                physically_consistent=d.get("physically_consistent"),
                standard_parameters=None if psi is None else np.asarray(psi, dtype=float),
                condition_number=float(d.get("condition_number", np.nan)),
                validation_rmse=None if val is None else np.array([val[j] for j in names]),
                notes=list(d.get("notes") or []), shape_std=shape_std, _model=model,
            )
        except (KeyError, TypeError, ValueError) as err:
            raise PayloadIdError(f"{source} is not a valid robot.yaml ({type(err).__name__}: {err})",
                                 "re-run payload-id identify-robot") from err

    @classmethod
    def load(cls, path, model: RobotModel) -> "RobotIdentification":
        d = read_yaml_mapping(path, "robot file", "run payload-id identify-robot to write it")
        ident = cls.from_dict(d, model, str(path))
        if np.linalg.norm(model.gravity - ident.gravity) > 1e-9:
            model.set_gravity(ident.gravity)
        return ident


# -- regressors ---------------------------------------------------------------------------------

def inertial_regressor(model: RobotModel, base: BaseParameters, rotor: RotorStructure, q, qd, qdd,
                       extra: int = 0) -> np.ndarray:
    """(N, n, b + r [+ extra]): base rigid-body columns and the free rotor-inertia columns, built in
    chunks; `extra` zero columns are left at the end for the caller (friction) to fill in place."""
    q, qd, qdd = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd))
    n_samples, n = q.shape
    r = rotor.free.size
    out = np.zeros((n_samples, n, base.b + r + extra))
    for s in range(0, n_samples, _CHUNK):
        e = min(s + _CHUNK, n_samples)
        out[s:e, :, :base.b] = base.reduce(rigid_body_regressor(model, q[s:e], qd[s:e], qdd[s:e]))
    out[:, rotor.free, base.b + np.arange(r)] = qdd[:, rotor.free]
    return out


def full_regressor(model, base, rotor, friction: FrictionModel, q, qd, qdd, temperature=None) -> np.ndarray:
    """(N, n, p): [base rigid body, free rotor inertias, friction] columns, θ's order."""
    out = inertial_regressor(model, base, rotor, q, qd, qdd, extra=friction.n_params)
    k, off = friction.per_joint, base.b + rotor.free.size
    if k:
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        temp = None if temperature is None else np.atleast_2d(np.asarray(temperature, dtype=float))
        for j in range(friction.n):
            out[:, j, off + j * k: off + (j + 1) * k] = joint_columns(
                friction.kind, qd[:, j], friction.shape[j], None if temp is None else temp[:, j],
                friction.sign_epsilon)
    return out


# -- excitation check ---------------------------------------------------------------------------

def excitation_check(w, names: list[str], limit: float = COND_LIMIT) -> float:
    """Condition number of the column-normalised regressor (W (N, n, p) or its NormalEquations);
    PayloadIdError naming the unexcited parameters (large entries of the near-null right singular
    vectors) when above `limit`."""
    ne = w if isinstance(w, estimators.NormalEquations) else estimators.NormalEquations.from_data(
        w, np.zeros(w.shape[:2]))
    diag = np.einsum("jii->i", ne.gram)
    dead = [names[i] for i in np.flatnonzero(diag <= 1e-24 * max(diag.max(), 1e-300))]
    if dead:
        raise PayloadIdError(f"the trajectory leaves parameters unexcited: {', '.join(dead)} "
                             "(their regressor columns are zero, condition number infinite)",
                             "move every joint through a rich excitation (payload-id excite)")
    cond, s, vt = ne.condition_number()
    if cond > limit:
        weak = vt[s < s[0] / limit]
        score = np.max(np.abs(weak), axis=0)
        worst = [names[i] for i in np.argsort(-score) if score[i] > 0.2][:8]
        raise PayloadIdError(
            f"the trajectory leaves parameters unexcited: {', '.join(worst)} "
            f"(condition number {cond:.3g} > {limit:.0e})",
            "use a richer excitation trajectory (payload-id excite) that moves every joint over its range")
    return cond


# -- friction shape search ----------------------------------------------------------------------

def _fit_friction_shape(friction: FrictionModel, wi: np.ndarray, tau: np.ndarray, qd: np.ndarray,
                        temperature: np.ndarray | None) -> FrictionModel:
    """Per joint: the shape minimising the residual of that joint's torques with its friction columns
    and every inertial column free (a profile least squares; Xu 2024 identifies α_j this way, around
    the linear problem). 1-D: coarse grid then bounded Brent; 2-D: grid then Nelder–Mead."""
    from scipy.optimize import minimize, minimize_scalar  # noqa: PLC0415

    bounds = friction.shape_bounds
    if not bounds:
        return friction
    shape = friction.shape.copy()
    for j in range(friction.n):
        # A few thousand samples pin one or two shape numbers down; more only cost time.
        rows = slice(None, None, max(1, wi.shape[0] // _SHAPE_SEARCH_SAMPLES))
        a = wi[rows, j, :]
        a = np.ascontiguousarray(a[:, np.abs(a).max(axis=0) > 0])
        at = np.ascontiguousarray(a.T)
        y = np.ascontiguousarray(tau[rows, j])
        v = np.ascontiguousarray(qd[rows, j])
        # Normal equations of [A F] with A fixed: only the F blocks change per evaluation.
        ata, aty, yty = at @ a, at @ y, float(y @ y)
        temp = None if temperature is None else np.ascontiguousarray(temperature[rows, j])

        def cost(x, at=at, ata=ata, aty=aty, yty=yty, y=y, v=v, temp=temp):
            s = np.array([np.exp(c) if b[2] else c for c, b in zip(x, bounds)])
            f = joint_columns(friction.kind, v, s, temp, friction.sign_epsilon)
            af = at @ f
            g = np.block([[ata, af], [af.T, f.T @ f]])
            rhs = np.concatenate([aty, y @ f])
            dg = np.sqrt(np.diag(g))
            coef = np.linalg.lstsq(g / np.outer(dg, dg), rhs / dg, rcond=1e-13)[0]
            return float(yty - (rhs / dg) @ coef)

        lo = np.array([np.log(b[0]) if b[2] else b[0] for b in bounds])
        hi = np.array([np.log(b[1]) if b[2] else b[1] for b in bounds])
        if len(bounds) == 1:
            grid = np.linspace(lo[0], hi[0], 15)
            costs = [cost([g]) for g in grid]
            k = int(np.argmin(costs))
            a_, b_ = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
            res = minimize_scalar(lambda x: cost([x]), bounds=(a_, b_), method="bounded",
                                  options={"xatol": 1e-4 * (hi[0] - lo[0])})
            x = np.array([res.x if res.fun <= costs[k] else grid[k]])
        else:
            axes = [np.linspace(lo[i], hi[i], 7) for i in range(len(bounds))]
            pts = np.array(np.meshgrid(*axes)).reshape(len(bounds), -1).T
            costs = [cost(p) for p in pts]
            x0 = pts[int(np.argmin(costs))]
            res = minimize(cost, x0, method="Nelder-Mead", bounds=list(zip(lo, hi)),
                           options={"xatol": 1e-4, "fatol": 1e-10 * max(min(costs), 1e-30), "maxiter": 200})
            x = res.x if res.fun <= min(costs) else x0
        shape[j] = [np.exp(v) if b[2] else v for v, b in zip(x, bounds)]
    return friction.with_shape(shape)


# -- friction shape: joint refinement and its share of the uncertainty ----------------------------

def _shape_derivative_columns(friction: FrictionModel, v: np.ndarray, shape_j: np.ndarray, theta_fj: np.ndarray,
                              temp: np.ndarray | None) -> np.ndarray:
    """(N, s): ∂τ_f,j/∂s_i = (∂F_j/∂s_i) θ_f,j for one joint, by central differences (relative step
    1e-5: truncation ~1e-10, far below the noise; shape parameters are all positive)."""
    if friction.kind == "nonlinear":   # ∂/∂α (|q̇|^α sgn q̇) = |q̇|^α ln|q̇| sgn q̇ (→ 0 at q̇ = 0)
        av = np.abs(v)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(av > 0, av ** shape_j[0] * np.log(av), 0.0)
        return (d * smooth_sign(v, friction.sign_epsilon) * theta_fj[1])[:, None]
    out = np.empty((v.size, shape_j.size))
    for i in range(shape_j.size):
        h = 1e-5 * max(abs(shape_j[i]), 1e-3)
        up, dn = shape_j.copy(), shape_j.copy()
        up[i] += h
        dn[i] -= h
        out[:, i] = (joint_columns(friction.kind, v, up, temp, friction.sign_epsilon)
                     - joint_columns(friction.kind, v, dn, temp, friction.sign_epsilon)) @ theta_fj / (2 * h)
    return out


@dataclass
class _ShapeProblem:
    """Per-joint blocks of the joint problem in x = [θ (p), s (n·ns)]: τ_j = W_j(s_j) θ + noise.

    The inertial columns never change, so their Gram blocks are formed once; each evaluation only
    forms the friction (and shape-derivative) columns of every joint and their products."""

    friction: FrictionModel
    a: list                     # per joint (N, pi) contiguous inertial columns
    gi: np.ndarray              # (n, pi, pi)
    bi: np.ndarray              # (n, pi)
    tt: np.ndarray              # (n,)
    tau: list                   # per joint (N,)
    qd: list
    temp: list

    @classmethod
    def build(cls, friction, wi, tau, qd, temperature):
        n = friction.n
        a = [np.ascontiguousarray(wi[:, j, :]) for j in range(n)]
        ys = [np.ascontiguousarray(tau[:, j]) for j in range(n)]
        return cls(friction, a, np.array([x.T @ x for x in a]), np.array([x.T @ y for x, y in zip(a, ys)]),
                   np.array([y @ y for y in ys]), ys, [np.ascontiguousarray(qd[:, j]) for j in range(n)],
                   [None if temperature is None else np.ascontiguousarray(temperature[:, j]) for j in range(n)])

    def system(self, shape: np.ndarray, weights: np.ndarray, theta: np.ndarray | None = None):
        """Weighted normal equations (H, r, Σ w τᵀτ) of the columns [W(s)] (theta None) or of the
        Gauss–Newton Jacobian [W(s), ∂(W θ)/∂s] at θ."""
        fm, n = self.friction, self.friction.n
        pi, k = self.gi.shape[1], fm.per_joint
        ns = shape.shape[1] if theta is not None else 0
        p = pi + n * k
        size = p + n * ns
        h, r = np.zeros((size, size)), np.zeros(size)
        h[:pi, :pi] = np.einsum("j,jik->ik", weights, self.gi)
        r[:pi] = weights @ self.bi
        for j in range(n):
            c = joint_columns(fm.kind, self.qd[j], shape[j], self.temp[j], fm.sign_epsilon)
            idx = pi + j * k + np.arange(k)
            if ns:
                c = np.column_stack([c, _shape_derivative_columns(fm, self.qd[j], shape[j],
                                                                  theta[idx], self.temp[j])])
                idx = np.concatenate([idx, p + j * ns + np.arange(ns)])
            x = self.a[j].T @ c
            h[:pi, idx] += weights[j] * x
            h[idx, :pi] += weights[j] * x.T
            h[np.ix_(idx, idx)] += weights[j] * (c.T @ c)
            r[idx] += weights[j] * (c.T @ self.tau[j])
        return h, r, float(weights @ self.tt)

    def normal_equations(self, shape) -> estimators.NormalEquations:
        """Per-joint normal equations of [W_inertial, F(s)] from the cached inertial blocks."""
        fm, n = self.friction, self.friction.n
        pi, k = self.gi.shape[1], fm.per_joint
        p = pi + n * k
        gram, rhs = np.zeros((n, p, p)), np.zeros((n, p))
        gram[:, :pi, :pi], rhs[:, :pi] = self.gi, self.bi
        for j in range(n):
            c = joint_columns(fm.kind, self.qd[j], shape[j], self.temp[j], fm.sign_epsilon)
            idx = pi + j * k + np.arange(k)
            x = self.a[j].T @ c
            gram[j][:pi, idx], gram[j][idx, :pi] = x, x.T
            gram[j][np.ix_(idx, idx)] = c.T @ c
            rhs[j, idx] = c.T @ self.tau[j]
        pj = np.count_nonzero(np.einsum("jii->ji", gram) > 0, axis=1)
        return estimators.NormalEquations(gram, rhs, self.tt.copy(), self.tau[0].size, pj)

    def solve(self, shape, weights):
        """θ(s) of the weighted linear problem and its weighted residual sum of squares."""
        h, r, tt = self.system(shape, weights)
        d = np.sqrt(np.diag(h))
        d = np.where(d > 0, d, 1.0)
        theta = np.linalg.lstsq(h / np.outer(d, d), r / d, rcond=1e-13)[0] / d
        return theta, tt - 2 * theta @ r + theta @ h @ theta


def _scaled_inverse(h: np.ndarray, rcond: float = 1e-12) -> np.ndarray:
    d = np.sqrt(np.diag(h))
    d = np.where(d > 0, d, 1.0)
    return np.linalg.pinv(h / np.outer(d, d), rcond=rcond, hermitian=True) / np.outer(d, d)


def _refine_shape_jointly(problem: _ShapeProblem, shape: np.ndarray, weights: np.ndarray,
                          max_iter: int = 12) -> np.ndarray:
    """Gauss–Newton on every joint's shape at once, θ re-solved linearly at each step (variable
    projection). The per-joint search frees each joint's inertial columns on its own rows (a
    relaxation of the shared θ), so its shapes are not the weighted least squares of the whole
    model, and only at that estimate does the Jacobian covariance describe the scatter."""
    bounds = problem.friction.shape_bounds
    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    theta, cost = problem.solve(shape, weights)
    p = theta.size
    for _ in range(max_iter):
        h, r, _ = problem.system(shape, weights, theta)
        g = r - h[:, :p] @ theta
        inv = _scaled_inverse(h)
        step = (inv @ g)[p:].reshape(shape.shape)
        # A step below 2 % of the shapes' own std (inv is their covariance: weights 1/σ²) moves
        # nothing the data can tell apart; stop there rather than at machine precision.
        if np.all(np.abs(step) <= 0.02 * np.sqrt(np.maximum(np.diag(inv)[p:], 0.0)).reshape(shape.shape)):
            break
        lam, improved = 1.0, False
        for _ in range(6):
            trial = np.clip(shape + lam * step, lo, hi)
            th, c = problem.solve(trial, weights)
            if c < cost:
                improved = True
                break
            lam /= 2
        if not improved:
            break
        shape, theta, cost = trial, th, c
    return shape


def shape_marginal_covariance(problem: _ShapeProblem, shape: np.ndarray, theta: np.ndarray,
                              sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cov of θ marginal over the shapes, std of the shapes (n, ns)).

    The fit is linear in θ given the shapes, and cov(θ) = (WᵀΣ⁻¹W)⁻¹ is conditional on them; the
    shapes are themselves estimated from the same data and trade off with the friction
    coefficients (α against Fc and Fv). Linearising the whole model in x = [θ, s] at the estimate,
    J = [W, ∂(Wθ)/∂s], cov(x) = (JᵀΣ⁻¹J)⁻¹ (Gauss–Newton, same per-joint σ), and θ's block of it is
    the marginal covariance. A shape whose derivative column vanishes (e.g. α with Fv = 0) is not
    identified: NaN std, and it is left out (θ stays conditional on it)."""
    p = theta.size
    h, _, _ = problem.system(shape, 1.0 / np.asarray(sigma, dtype=float) ** 2, theta)
    ns_total = h.shape[0] - p
    diag = np.diag(h)[p:]
    keep = diag > 1e-12 * max(float(np.max(np.diag(h)[:p])), 1e-300)
    idx = np.concatenate([np.arange(p), p + np.flatnonzero(keep)])
    cov = _scaled_inverse(h[np.ix_(idx, idx)])
    shape_std = np.full(ns_total, np.nan)
    shape_std[keep] = np.sqrt(np.maximum(np.diag(cov)[p:], 0.0))
    return cov[:p, :p], shape_std.reshape(shape.shape)


# -- the pipeline -------------------------------------------------------------------------------

def _check_finite(name: str, a: np.ndarray | None, joint_names: list[str]) -> None:
    if a is None:
        return
    bad = ~np.isfinite(a)
    if bad.any():
        cols = [joint_names[j] for j in np.flatnonzero(bad.any(axis=0))]
        raise PayloadIdError(f"{int(bad.any(axis=1).sum())} samples hold NaN or infinite {name} (joints {cols})",
                             "clean the recording or record again")


def identify_from_signals(model: RobotModel, q, qd, qdd, tau, temperature=None, **options) -> RobotIdentification:
    """Identify θ = [π_b, Ia, θ_f] from regressor inputs (N, n) and torques (N, n) (already × effort_scale).

    Options: friction='nonlinear', estimator='wls', effort_scale=None, alpha=None (fixes the nonlinear
    friction exponent(s) instead of identifying them), sign_epsilon=None, source='commanded', seed=0,
    check_consistency=True, notes=None.
    BLAS runs single-threaded: the work is many products of 10–100-column blocks, which threaded
    OpenBLAS made ~5× slower on a loaded 2-core machine (measured on the scatter test: 19 s vs 3.5 s).
    """
    from payload_id_core.excitation.design import single_threaded_blas  # noqa: PLC0415

    with single_threaded_blas():
        return _identify_from_signals(model, q, qd, qdd, tau, temperature, **options)


def _identify_from_signals(model: RobotModel, q, qd, qdd, tau, temperature=None, *, friction: str = "nonlinear",
                           estimator: str = "wls", effort_scale=None, alpha=None, sign_epsilon: float | None = None,
                           source: str = "commanded", seed: int = 0, check_consistency: bool = True,
                           notes: list[str] | None = None) -> RobotIdentification:
    names = list(model.joint_names)
    q, qd, qdd, tau = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd, tau))
    for nm, a in (("positions", q), ("velocities", qd), ("accelerations", qdd), ("torques", tau),
                  ("temperatures", temperature)):
        _check_finite(nm, a, names)
    if q.shape[1] != model.n or tau.shape != q.shape:
        raise PayloadIdError(f"signals have shape {q.shape} / {tau.shape}, the robot has {model.n} joints",
                             "pass one column per joint in the model's order")
    if estimator not in estimators.ESTIMATORS:
        raise PayloadIdError(f"unknown estimator '{estimator}'", f"use one of {', '.join(estimators.ESTIMATORS)}")
    if temperature is None and friction == "temperature":
        raise PayloadIdError("--friction temperature needs joint temperatures, the recording has none",
                             "use --friction nonlinear, or record the drive temperatures")
    kw = {} if sign_epsilon is None else {"sign_epsilon": sign_epsilon}
    fm = make_friction_model(friction, names, alpha=alpha, **kw)
    base = compute_base_parameters(model, seed=seed)
    rotor = rotor_structure(model, base)
    wi = inertial_regressor(model, base, rotor, q, qd, qdd)
    theta_names = _base_names(base, rotor, names) + [f"Ia_{names[j]}" for j in rotor.free] + fm.param_names
    w = np.concatenate([wi, fm.columns(qd, temperature)], axis=2) if fm.n_params else wi
    ne = estimators.NormalEquations.from_data(w, tau)
    cond = excitation_check(ne, theta_names)
    del w
    problem = None
    if fm.shape_bounds and alpha is None:
        fm = _fit_friction_shape(fm, wi, tau, qd, temperature)
        problem = _ShapeProblem.build(fm, wi, tau, qd, temperature)
        ne = problem.normal_equations(fm.shape)
        sigma0 = estimators.sigma_floor(ne, estimators.ols(ne).sigma)
        fm = fm.with_shape(_refine_shape_jointly(problem, fm.shape, 1.0 / sigma0 ** 2))
        problem.friction = fm
        ne = problem.normal_equations(fm.shape)
    a_map = inertial_map(base, rotor, model.n)
    psi = None
    if estimator == "ols":
        fit = estimators.ols(ne)
    elif estimator == "wls":
        fit = estimators.wls(ne)
    else:
        prior = np.concatenate([model.standard_parameters(), np.zeros(model.n)])
        fit, psi = estimators.feasible(ne, None, a_map, model.n, prior=prior, nonnegative=fm.nonnegative)
    cov, rel_std, shape_std = fit.cov, fit.rel_std, None
    if problem is not None:
        # θ's covariance marginal over the estimated shapes, with the σ the fit used
        sigma = fit.sigma if estimator != "ols" else np.full(model.n, np.sqrt(
            float(ne.rss(fit.theta).sum()) / (ne.n_samples * model.n - fit.theta.size)))
        cov, shape_std = shape_marginal_covariance(problem, fm.shape, fit.theta, sigma)
        with np.errstate(divide="ignore"):
            rel_std = 100.0 * np.sqrt(np.maximum(np.diag(cov), 0.0)) / np.abs(fit.theta)
    consistent = None
    if check_consistency:
        gap = estimators.consistency_gap(a_map, fit.theta[:a_map.shape[0]], model.n)
        nonneg_ok = bool(np.all(fit.theta[a_map.shape[0]:][fm.nonnegative] >= -1e-9)) if fm.n_params else True
        consistent = bool(gap < 1e-6 and nonneg_ok)
    scale = np.ones(model.n) if effort_scale is None else np.broadcast_to(
        np.asarray(effort_scale, dtype=float), (model.n,)).copy()
    return RobotIdentification(
        joint_names=names, urdf_path=str(model.urdf_path), urdf_sha256=model.urdf_sha256, gravity=model.gravity,
        base=base, rotor=rotor, friction=fm, theta=fit.theta, theta_names=theta_names, cov=cov,
        rel_std=rel_std, shape_std=shape_std, effort_scale=scale, rmse=fit.rmse, sigma=fit.sigma, estimator=estimator,
        source=source, physically_consistent=consistent, standard_parameters=psi, condition_number=cond,
        notes=list(notes or []), _model=model)


def identify_robot(model: RobotModel, recording, friction: str = "nonlinear", estimator: str = "wls",
                   use_commanded: bool = True, *, effort_scale=None, cutoff_hz: float | None = None,
                   decimate: int = 1, delay: str | float = "estimate", alpha=None,
                   sign_epsilon: float | None = None, validate=None, seed: int = 0) -> RobotIdentification:
    """Identify the unloaded robot from a Recording (torques already × effort_scale, e.g. read_bag's).

    Signals come from conditioning.conditioned_signals: the commanded trajectory (Xu 2024 §3.2,
    delay-corrected) when `use_commanded`, else filtered and differentiated measurements.
    `effort_scale` is only recorded in the result (the Recording holds scaled torques).
    `validate`: a second Recording; its torque RMSE per joint goes to `validation_rmse`.
    """
    from payload_id_core.signals.conditioning import conditioned_signals  # noqa: PLC0415

    sig = conditioned_signals(recording, model.joint_names, source="commanded" if use_commanded else "measured",
                              cutoff_hz=cutoff_hz, decimate=decimate, delay=delay)
    ident = identify_from_signals(model, sig.q, sig.qd, sig.qdd, sig.tau, sig.temperature, friction=friction,
                                  estimator=estimator, effort_scale=effort_scale, alpha=alpha,
                                  sign_epsilon=sign_epsilon, source=sig.source, seed=seed, notes=sig.notes)
    if validate is not None:
        ident.validation_rmse = validate_robot(ident, validate, model, use_commanded=use_commanded,
                                               cutoff_hz=cutoff_hz, delay=delay)
    return ident


def validate_robot(ident: RobotIdentification, recording, model: RobotModel | None = None, *,
                   use_commanded: bool | None = None, cutoff_hz: float | None = None,
                   delay: str | float = "estimate") -> np.ndarray:
    """Torque RMSE per joint of the identified model on another recording (cross-validation)."""
    from payload_id_core.signals.conditioning import conditioned_signals  # noqa: PLC0415

    model = ident._require_model(model)
    use_commanded = ident.source == "commanded" if use_commanded is None else use_commanded
    sig = conditioned_signals(recording, model.joint_names, source="commanded" if use_commanded else "measured",
                              cutoff_hz=cutoff_hz, delay=delay)
    _check_finite("torques", sig.tau, model.joint_names)
    pred = ident.predict(sig.q, sig.qd, sig.qdd, sig.temperature, model=model)
    return np.sqrt(np.mean((sig.tau - pred) ** 2, axis=0))


validate = validate_robot


# -- drive gains ----------------------------------------------------------------------------------

def identify_effort_scale(model: RobotModel, unloaded, loaded, payload_mass: float, frame: str, *,
                          payload_phi=None, friction: str | FrictionModel = "linear", use_commanded: bool = True,
                          delay: str | float = "estimate") -> tuple[np.ndarray, np.ndarray]:
    """Drive gains k_j (torque = k_j × effort) from an unloaded and a loaded run (Gautier & Briot 2014).

    Both recordings hold raw efforts (read with effort_scale 1). Unknowns: the robot's θ (shared by
    both runs), the payload's parameters other than its known mass (or none when `payload_phi` is
    given), and k. Rows:  unloaded  W0 θ − diag(e0) k = 0;  loaded  W1 θ + Y_L' φ_L' − diag(e1) k
    = −Y_L,m m_L. Without the known mass every row would be homogeneous and k only known up to a
    common factor; the mass fixes the scale. That linear solution starts a Gauss–Newton refinement
    of the output-error form e = (W θ + Y_L φ_L)/k, free of the errors-in-variables bias of the
    noisy effort column. Returns (k, std of k).
    """
    from payload_id_core.signals.conditioning import conditioned_signals  # noqa: PLC0415

    model.frame_id(frame)  # an unknown frame fails before any work
    src = "commanded" if use_commanded else "measured"
    names = model.joint_names
    s0 = conditioned_signals(unloaded, names, source=src, delay=delay)
    s1 = conditioned_signals(loaded, names, source=src, delay=delay)
    for s in (s0, s1):
        _check_finite("efforts", s.tau, names)
    base = compute_base_parameters(model)
    rotor = rotor_structure(model, base)
    fm = friction if isinstance(friction, FrictionModel) else make_friction_model(friction, names)
    w0 = full_regressor(model, base, rotor, fm, s0.q, s0.qd, s0.qdd, s0.temperature)
    w1 = full_regressor(model, base, rotor, fm, s1.q, s1.qd, s1.qdd, s1.temperature)
    yl = payload_regressor(model, frame, s1.q, s1.qd, s1.qdd)
    n = model.n

    def effort_block(e):
        blk = np.zeros(e.shape + (n,))
        blk[:, np.arange(n), np.arange(n)] = -e
        return blk

    # Regressor of everything but the drive gains: u = X x + c, with x = [θ, φ_L'] and c the known
    # payload torque; the efforts are e_j = u_j / k_j + noise.
    if payload_phi is not None:
        c1 = yl @ np.asarray(payload_phi, dtype=float)
        x1, x0 = w1, w0
    else:
        c1 = yl[:, :, 0] * float(payload_mass)
        x1 = np.concatenate([w1, yl[:, :, 1:]], axis=2)
        x0 = np.concatenate([w0, np.zeros(w0.shape[:2] + (9,))], axis=2)
    xs = np.concatenate([x0, x1])                                  # (N0 + N1, n, m)
    cs = np.concatenate([np.zeros(s0.tau.shape), c1])
    es = np.concatenate([s0.tau, s1.tau])
    m = xs.shape[2]
    # Start: Gautier & Briot's linear form X x − diag(e) k = −c. Its effort column is noisy, which
    # biases k low (errors in variables), so refine by alternating the two exact linear sub-problems
    # of the output-error model e = (X x + c)/k (the noise stays on the output side).
    blk = np.zeros(es.shape + (n,))
    blk[:, np.arange(n), np.arange(n)] = -es
    a = np.concatenate([xs, blk], axis=2).reshape(-1, m + n)
    sol = np.linalg.lstsq(a, -cs.reshape(-1), rcond=1e-10)[0]
    k = sol[m:]
    if np.any(k <= 0) or np.any(~np.isfinite(k)):
        raise PayloadIdError(f"identified drive gains {np.round(k, 4).tolist()} are not all positive",
                             "check that the payload mass and frame are right and the runs excite every joint")
    x = np.linalg.lstsq(xs.reshape(-1, m), (es * k - cs).reshape(-1), rcond=1e-10)[0]
    sig = np.ones(n)
    for it in range(15):  # Gauss–Newton; joints weighted by their residual noise after the first step
        u = xs @ x + cs
        res = es - u / k
        if it > 0:
            sig = np.sqrt(np.mean(res ** 2, axis=0))
        jac = np.concatenate([xs / k[None, :, None], np.zeros(es.shape + (n,))], axis=2)
        jac[:, np.arange(n), m + np.arange(n)] = -u / k ** 2
        jw = (jac / sig[None, :, None]).reshape(-1, m + n)
        step = np.linalg.lstsq(jw, (res / sig).reshape(-1), rcond=1e-12)[0]
        x, k = x + step[:m], k + step[m:]
        if np.max(np.abs(step[m:] / k)) < 1e-10:
            break
    cov = np.linalg.pinv(jw.T @ jw, rcond=1e-12)
    k_std = np.sqrt(np.maximum(np.diag(cov)[m:], 0.0))
    if np.any(k <= 0) or np.any(~np.isfinite(k)):
        raise PayloadIdError(f"identified drive gains {np.round(k, 4).tolist()} are not all positive",
                             "check that the payload mass and frame are right and the runs excite every joint")
    return k, k_std
