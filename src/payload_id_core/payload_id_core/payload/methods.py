"""Every payload method of DESIGN.md behind one call: identify_payload(method, model, robot, loaded, frame, ...).

  difference-rls  Xu 2024 Algorithm 1 (online.py): RLS on θ_b from θ_a, payload from ε = θ_b − θ_a.
  direct-rls      RLS on [φ_L, Δφ_f] from τ − Y θ_a (online.py).
  khalil-1        Khalil 2007 §V-A-1, eq. 22–23: WLS of φ_L from τ_T − W χ with the known robot parameters.
  khalil-2        §V-A-2, eq. 24–28: re-identify the loaded robot, payload from the differences (through
                  the numerical payload Jacobian instead of the RX90's grouping relations).
  khalil-3        §V-A-3, eq. 29: WLS of φ_L from loaded minus unloaded torques on the same trajectory.
  khalil-4        §V-A-4, eq. 30: one WLS of [θ, φ_L] on the stacked unloaded and loaded runs.
  gaz-static      Gaz 2017 §V, eq. 40–44: gravity coefficients from static poses, loaded and unloaded;
                  mass and first moments from their difference.
  gaz-dtau        Gaz 2017 eq. 26 + 28: ε̂ = Ȳ_L^# (τ̄_L − τ̄) in one shot, then φ_L = J_ε^# ε̂.
  ft              Duan 2022 / Atkeson 1986 with the wrist F/T sensor (payload_id_core.ft, loaded lazily).

Every method returns a PayloadEstimate: φ_L with covariance, which entries the robot and the motion
determine (the others are fixed to the prior, 0 by default, with NaN std), converged / convergence
time (offline methods: the seconds of motion used), notes, and a physically consistent φ_L (projected
by consistency.project_feasible when the raw one is not, with physically_consistent=False).

Common options: source ('commanded' default when recorded, else 'measured'), delay ('estimate' or s),
cutoff_hz, decimate (conditioning.conditioned_signals); friction_change (estimate Δφ_f, see each
method's default); load_friction (the load-dependent Coulomb friction μ_j of load_friction.py, default
LOAD_FRICTION_DEFAULT per method); include_robot_uncertainty (default True: the robot identification's covariance
enters the payload's); prior (PayloadEstimate or φ for undetermined entries); project (default True).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from payload_id_core.signals.recording import Recording
from payload_id_core.errors import PayloadIdError
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.finish import finish as finish_estimate, model_error_notes, model_error_ratio, prior_phi
from payload_id_core.payload.jacobian import difference_jacobian, theta_layout
from payload_id_core.payload.linear import LinearSolution, generalized_lstsq, weighted_lstsq
from payload_id_core.payload.load_friction import ITERATIONS, load_friction_columns, sign_epsilon
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.dynamics.regressor import payload_transform, rigid_body_regressor

_SIGNAL_KEYS = ("source", "delay", "cutoff_hz", "decimate")
# Load-dependent Coulomb friction (load_friction.py): modelled by default where it helped both on the
# simulated UR10 cell (μ = 0.02: mass bias over 6 seeds +0.89/+0.94/+0.89 % -> −0.03/+0.17/−0.13 %) and
# on synthetic data without it (bench setting, 6 seeds: +0.28/−0.17/+0.27 % -> +0.22/−0.18/+0.07 %).
# khalil-3 is the exception: +1.04 -> +0.04 % on the cell but −0.08 -> −0.25 % on the synthetic data,
# so it stays off there unless asked for (load_friction=True).
LOAD_FRICTION_DEFAULT = {"direct-rls": True, "difference-rls": True, "khalil-1": True, "khalil-3": False}


def load_friction_on(method: str, options: dict) -> bool:
    value = options.get("load_friction")
    return bool(LOAD_FRICTION_DEFAULT.get(method, False) if value is None else value)
# Joint samples must cover the commanded excitation to within this fraction of its duration.
COVERAGE_TOL = 0.02


# -- inputs -------------------------------------------------------------------------------------
def check_robot_matches(model: RobotModel, robot) -> None:
    names = list(getattr(robot, "joint_names", model.joint_names))
    if names != list(model.joint_names):
        raise PayloadIdError(f"the robot identification is for joints {names}, the URDF has {model.joint_names}",
                             "use the robot.yaml identified with this URDF (payload-id identify-robot)")
    sha = getattr(robot, "urdf_sha256", None)
    if sha and sha != model.urdf_sha256:
        raise PayloadIdError("the robot identification was made for another URDF (hash differs)",
                             "re-run payload-id identify-robot with this URDF")


def check_covers_excitation(recording: Recording, what: str = "loaded recording") -> None:
    """A recording cut short (bag stopped early) cannot carry the excitation it was meant to."""
    if not recording.commanded:
        return
    from payload_id_core.signals.commanded import commanded_span  # noqa: PLC0415

    t0, t1 = commanded_span(recording.commanded)
    t = recording.joints.t
    if t.size == 0:
        raise PayloadIdError(f"{what} {recording.source} holds no joint states", "record /joint_states")
    tol = max(COVERAGE_TOL * (t1 - t0), 0.05)
    if t[-1] < t1 - tol or t[0] > t0 + tol:
        covered = max(0.0, min(t[-1], t1) - max(t[0], t0))
        raise PayloadIdError(
            f"{what} {recording.source or ''} covers only {covered:.2f} s of its {t1 - t0:.2f} s commanded excitation "
            f"(joint states from {t[0]:.2f} s to {t[-1]:.2f} s, command from {t0:.2f} s to {t1:.2f} s)",
            "record the whole excitation: start the bag before the trajectory and stop it after the end")


def _signals(recording: Recording, model: RobotModel, options: dict):
    from payload_id_core.signals.conditioning import conditioned_signals  # noqa: PLC0415

    kw = {k: options[k] for k in _SIGNAL_KEYS if options.get(k) is not None}
    notes: list[str] = []
    if "source" not in kw:
        kw["source"] = "commanded" if recording.commanded else "measured"
        if not recording.commanded:
            notes.append("no commanded trajectory recorded: measured motion (filtered, differentiated) used")
    sig = conditioned_signals(recording, model.joint_names, **kw)
    sig.notes = list(sig.notes) + notes
    if len(sig) < 10:
        raise PayloadIdError(f"{recording.source or 'recording'} has only {len(sig)} usable samples",
                             "record a longer excitation")
    return sig


def _duration(sig) -> float:
    return float(sig.t[-1] - sig.t[0] + (np.median(np.diff(sig.t)) if sig.t.size > 1 else 0.0))


def _prior(options: dict) -> np.ndarray:
    return prior_phi(options.get("prior"))


def finish(frame, method, z, cov, ok, notes, options: dict, **kw) -> PayloadEstimate:
    return finish_estimate(frame, method, z, cov, ok, notes, prior=options.get("prior"),
                           project=options.get("project", True), **kw)


def _robot_cov(robot) -> np.ndarray | None:
    cov = getattr(robot, "cov", None)
    if cov is None:
        return None
    cov = np.asarray(cov, dtype=float)
    return np.where(np.isfinite(cov), cov, 0.0)


def _payload_rows(model: RobotModel, robot, frame: str, sig, friction_change: bool):
    """W_L (N, n, 10) [+ friction columns (N, n, k n)] and the robot's full regressor (N, n, p)."""
    y_rb = rigid_body_regressor(model, sig.q, sig.qd, sig.qdd)
    joint, X = payload_transform(model, frame)
    w_l = y_rb[..., 10 * (joint - 1):10 * joint] @ X
    y_a = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature) if robot is not None else None
    if friction_change:
        lay = theta_layout(robot)
        w_l = np.concatenate([w_l, y_a[..., lay.friction]], axis=-1)
    return w_l, y_a


def _solve_with_load_friction(W: np.ndarray, y: np.ndarray, tau_a: np.ndarray, qd: np.ndarray, eps: float,
                              use: bool) -> tuple[LinearSolution, np.ndarray, list[str]]:
    """Per-joint WLS of y ≈ W z; with `use` the load-dependent Coulomb columns
    (load_friction.py) are built from the first solution's payload torque W_L φ̂_L and the fit repeated.
    Returns (solution, the matrix actually used, notes: one line when the columns were used)."""
    sol = weighted_lstsq(W, y)
    if not use:
        return sol, W, []
    n = W.shape[1]
    W0 = W
    for _ in range(ITERATIONS):
        tau_b = tau_a + W0[..., :10] @ sol.x[:10]
        W = np.concatenate([W0, load_friction_columns(tau_a, tau_b, qd, eps)], axis=-1)
        sol = weighted_lstsq(W, y)
    mu = sol.x[-n:]
    mu_std = np.sqrt(np.diag(sol.cov)[-n:])
    return sol, W, [f"load-dependent Coulomb friction μ per joint (N·m per N·m of load change): "
                    f"{np.round(mu, 4).tolist()} ± {np.round(mu_std, 4).tolist()}"]


def _robot_sensitivity_cov(W: np.ndarray, sigma: np.ndarray, y_a: np.ndarray, sol: LinearSolution,
                           robot_cov: np.ndarray) -> np.ndarray:
    """Covariance that θ_a's uncertainty adds to x = W^# (τ − Y_a θ_a): S C_a Sᵀ, S = (WᵀΣ⁻¹W)^# WᵀΣ⁻¹ Y_a."""
    N, n, u = W.shape
    w = 1.0 / sigma
    Ww = (W * w[None, :, None]).reshape(N * n, u)
    Yw = (y_a * w[None, :, None]).reshape(N * n, -1)
    ok = sol.identifiable
    A = Ww[:, ok]
    S = np.zeros((u, Yw.shape[1]))
    S[ok] = np.linalg.lstsq(A, Yw, rcond=None)[0]
    return S @ robot_cov @ S.T


# -- the methods --------------------------------------------------------------------------------
def _online(method: str):
    def run(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
        check_covers_excitation(loaded)
        sig = _signals(loaded, model, options)
        keys = ("friction_change", "noise_std", "p0", "forgetting", "convergence", "mass_rel_std", "xu_tol",
                "xu_count", "check_every", "min_time", "history_every")
        kw = {k: options[k] for k in keys if k in options}
        kw["rate_hz"] = 1.0 / float(np.median(np.diff(sig.t)))
        kw["include_robot_uncertainty"] = options.get("include_robot_uncertainty", True)
        kw["load_friction"] = load_friction_on(method, options)
        est_online = OnlinePayloadEstimator(model, robot, frame, method, prior=_prior(options), **kw)
        raw = est_online.run(sig.t, sig.q, sig.qd, sig.qdd, sig.tau)
        z, cov, ok = est_online._payload()
        notes = list(sig.notes) + raw.notes
        if not est_online.converged:
            notes.append(f"not converged after {_duration(sig):.2f} s of motion ({est_online.convergence_rule} rule)")
        return finish(frame, method, z, cov, ok, notes, options, converged=est_online.converged,
                      convergence_time=est_online.convergence_time, history=raw.history)
    run.__doc__ = f"`{method}`: the online estimator fed with the whole recording (online.py)."
    return run


def khalil_1(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Khalil 2007 eq. 23: χ_L = W_L^+ (Y_T − W χ), weighted per joint; friction assumed unchanged
    unless friction_change=True (then Δφ_f joins the unknowns, as the paper suggests)."""
    check_covers_excitation(loaded)
    sig = _signals(loaded, model, options)
    fc = bool(options.get("friction_change", False))
    W, y_a = _payload_rows(model, robot, frame, sig, fc)
    theta_a = np.asarray(robot.theta, dtype=float)
    tau_a = y_a @ theta_a
    sol, W, lf_notes = _solve_with_load_friction(W, sig.tau - tau_a, tau_a, sig.qd, sign_epsilon(robot),
                                                 load_friction_on("khalil-1", options))
    cov = sol.cov
    rc = _robot_cov(robot)
    if options.get("include_robot_uncertainty", True) and rc is not None:
        cov = cov + _robot_sensitivity_cov(W, sol.sigma, y_a, sol, rc)
    notes = list(sig.notes) + [f"torque residual std per joint: {np.round(sol.sigma, 4).tolist()} N·m"] + lf_notes
    notes += model_error_notes(model_error_ratio(sol.sigma, robot))
    return finish(frame, "khalil-1", sol.x, cov, sol.identifiable, notes, options,
                  convergence_time=_duration(sig), friction_unknowns=W.shape[-1] - 10 - (model.n if lf_notes else 0))


def _difference_payload(model, robot, frame, theta_b: np.ndarray, cov_b: np.ndarray, ok_b: np.ndarray,
                        options: dict) -> LinearSolution:
    """z = J^# (θ_b − θ_a) weighted by cov(ε); θ_b entries the loaded data did not fix get no weight."""
    J = difference_jacobian(model, robot, frame, friction_change=True)
    eps = theta_b - np.asarray(robot.theta, dtype=float)
    C = np.where(np.isfinite(cov_b), cov_b, 0.0)
    rc = _robot_cov(robot)
    if options.get("include_robot_uncertainty", True) and rc is not None:
        C = C + rc
    if not ok_b.all():
        big = 1e8 * max(float(np.max(np.diag(C))), 1e-12)
        C[~ok_b, :] = 0.0
        C[:, ~ok_b] = 0.0
        C[~ok_b, ~ok_b] = big
        eps = np.where(ok_b, eps, 0.0)
    return generalized_lstsq(J, eps, C)


def khalil_2(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Khalil 2007 eq. 24–28: WLS re-identification of all robot parameters with the payload, then
    the payload from the parameter variations through the payload Jacobian."""
    check_covers_excitation(loaded)
    sig = _signals(loaded, model, options)
    y_b = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    re = weighted_lstsq(y_b, sig.tau)
    sol = _difference_payload(model, robot, frame, re.x, re.cov, re.identifiable, options)
    notes = list(sig.notes) + [f"loaded robot re-identified: {int(re.identifiable.sum())} of {re.x.size} "
                               f"parameters determined, torque residual std {np.round(re.sigma, 4).tolist()} N·m"]
    kf = sol.x.size - 10
    return finish(frame, "khalil-2", sol.x, sol.cov, sol.identifiable, notes, options,
                  convergence_time=_duration(sig), friction_unknowns=kf)


def same_trajectory_torques(model: RobotModel, loaded_sig, unloaded: Recording, options: dict, method: str,
                            tol_rad: float | None = None) -> np.ndarray:
    """Unloaded torques at the loaded samples' trajectory times; refuses another trajectory.

    Both runs are put on the time of their own trajectory start (the first commanded point, or the
    first sample when nothing was commanded) and their motions compared sample by sample.
    """
    check_covers_excitation(unloaded, "unloaded recording")
    un = _signals(unloaded, model, {**options, "source": loaded_sig.source})
    t_l = loaded_sig.t - loaded_sig.t[0]
    t_u = un.t - un.t[0]
    tol_rad = tol_rad if tol_rad is not None else options.get("same_trajectory_tol_rad")
    tol = float(tol_rad if tol_rad is not None else (1e-3 if loaded_sig.source == "commanded" else 2e-2))
    dur_l, dur_u = t_l[-1], t_u[-1]
    if abs(dur_l - dur_u) > max(0.02 * dur_l, 0.05):
        raise PayloadIdError(f"{method} needs the unloaded run on the same trajectory, but it lasts {dur_u:.2f} s "
                             f"and the loaded one {dur_l:.2f} s",
                             "replay the same trajectory without payload, or use khalil-4 or difference-rls")
    inside = t_l <= dur_u
    q_u = np.column_stack([np.interp(t_l, t_u, un.q[:, j]) for j in range(model.n)])
    dev = float(np.max(np.abs(q_u[inside] - loaded_sig.q[inside])))
    if dev > tol:
        raise PayloadIdError(f"{method} needs the unloaded run on the same trajectory, but the two motions differ by "
                             f"up to {dev:.3g} rad", "replay the same trajectory without payload, or use khalil-4 or "
                             "difference-rls")
    return np.column_stack([np.interp(t_l, t_u, un.tau[:, j]) for j in range(model.n)])


def khalil_3(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Khalil 2007 eq. 29: χ_L = W_L^+ (Y_T − Y_wL), Y_wL the unloaded torques on the same trajectory.
    Needs no robot parameters at all (robot may be None); friction assumed unchanged by default."""
    if unloaded is None:
        raise PayloadIdError("khalil-3 needs the unloaded run of the same trajectory", "pass --unloaded-bag")
    check_covers_excitation(loaded)
    sig = _signals(loaded, model, options)
    tau_u = same_trajectory_torques(model, sig, unloaded, options, "khalil-3")
    fc = bool(options.get("friction_change", False))
    lf = load_friction_on("khalil-3", options)
    W, y_a = _payload_rows(model, robot if (fc or lf) else None, frame, sig, fc)
    tau_a = None
    if lf:
        # The unloaded model torque sets the load the drives carry: the identified robot's, else the URDF's
        # (not the unloaded run's measured torque: its noise is in the fitted difference too).
        tau_a = (y_a @ np.asarray(robot.theta, dtype=float) if robot is not None
                 else np.array([model.rnea(q, qd, qdd) for q, qd, qdd in zip(sig.q, sig.qd, sig.qdd)]))
    sol, W, lf_notes = _solve_with_load_friction(W, sig.tau - tau_u, tau_a, sig.qd, sign_epsilon(robot), lf)
    notes = list(sig.notes) + [f"loaded − unloaded torque residual std per joint: {np.round(sol.sigma, 4).tolist()} N·m"]
    notes += lf_notes
    return finish(frame, "khalil-3", sol.x, sol.cov, sol.identifiable, notes, options,
                  convergence_time=_duration(sig), friction_unknowns=W.shape[-1] - 10 - (model.n if lf_notes else 0))


def khalil_4(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Khalil 2007 eq. 30: [Y_a; Y_b] = [[W_a, 0], [W_b, W_L]] [χ; χ_L], one WLS with weights per run
    and joint. robot.yaml only supplies the parameter definition (base set, friction shape)."""
    if unloaded is None:
        raise PayloadIdError("khalil-4 needs an unloaded run (any exciting trajectory)", "pass --unloaded-bag")
    check_covers_excitation(loaded)
    check_covers_excitation(unloaded, "unloaded recording")
    sig_b = _signals(loaded, model, options)
    sig_a = _signals(unloaded, model, options)
    fc = bool(options.get("friction_change", False))
    y_a = robot.regressor(sig_a.q, sig_a.qd, sig_a.qdd, sig_a.temperature)
    W_l, y_b = _payload_rows(model, robot, frame, sig_b, fc)
    p, u = y_a.shape[-1], W_l.shape[-1]
    top = np.concatenate([y_a, np.zeros(y_a.shape[:2] + (u,))], axis=-1)
    bottom = np.concatenate([y_b, W_l], axis=-1)
    # Weights per run and joint (Khalil §III): first an ordinary solution, then each block whitened.
    A = np.concatenate([top, bottom], axis=0)
    b = np.concatenate([sig_a.tau, sig_b.tau], axis=0)
    first = weighted_lstsq(A, b, iterate_weights=False)
    r = b - A @ first.x
    na = y_a.shape[0]
    s_a = np.sqrt(np.mean(r[:na] ** 2, axis=0))
    s_b = np.sqrt(np.mean(r[na:] ** 2, axis=0))
    w = np.concatenate([np.broadcast_to(1 / np.maximum(s_a, 1e-12), (na, model.n)),
                        np.broadcast_to(1 / np.maximum(s_b, 1e-12), (r.shape[0] - na, model.n))])
    sol = weighted_lstsq(A * w[..., None], b * w, sigma=np.ones(model.n))
    z = sol.x[p:]
    cov = sol.cov[p:, p:]
    ok = sol.identifiable[p:]
    notes = list(sig_b.notes) + [f"global identification: {p} robot + {u} payload unknowns; torque residual std "
                                 f"unloaded {np.round(s_a, 4).tolist()}, loaded {np.round(s_b, 4).tolist()} N·m"]
    return finish(frame, "khalil-4", z, cov, ok, notes, options, convergence_time=_duration(sig_b),
                  friction_unknowns=u - 10)


def _gravity_basis(model: RobotModel, seed: int = 0) -> np.ndarray:
    """(r, 10 n) orthonormal rows spanning what gravity torques see: Y_g φ = (Y_g Vᵀ)(V φ)."""
    rng = np.random.default_rng(seed)
    lim = model.limits
    lo = np.where(np.isfinite(lim.lower), np.maximum(lim.lower, -np.pi), -np.pi)
    hi = np.where(np.isfinite(lim.upper), np.minimum(lim.upper, np.pi), np.pi)
    q = lo + (hi - lo) * rng.random((max(40, 20 * model.n), model.n))
    z = np.zeros_like(q)
    Yg = rigid_body_regressor(model, q, z, z).reshape(-1, 10 * model.n)
    _, s, vt = np.linalg.svd(Yg, full_matrices=False)
    return vt[s > 1e-9 * s[0]]


def _static_mask(sig, vel_tol: float, acc_tol: float) -> np.ndarray:
    return np.all(np.abs(sig.qd) <= vel_tol, axis=1) & np.all(np.abs(sig.qdd) <= acc_tol, axis=1)


def _coulomb_at_rest(robot, n: int) -> np.ndarray:
    """(n,) the Coulomb level Fc per joint of the robot's friction model: half the jump of the friction
    torque across zero velocity, read just outside the smooth-sign band (viscous terms are negligible there)."""
    eps = float(getattr(robot.friction, "sign_epsilon", 0.0)) or 1e-4
    v = np.full((1, n), 5.0 * eps)
    try:
        jump = robot.friction_torque(v) - robot.friction_torque(-v)
    except PayloadIdError:               # temperature models need a temperature: no estimate of the band
        return np.zeros(n)
    return np.maximum(0.5 * np.asarray(jump, dtype=float).reshape(n), 0.0)


def _in_row_space(A: np.ndarray, B: np.ndarray, rtol: float = 1e-6) -> bool:
    """Whether every row of A (…, u) is a combination of the rows of B (…, u)."""
    A = A.reshape(-1, A.shape[-1])
    B = B.reshape(-1, B.shape[-1])
    _, s, vt = np.linalg.svd(B, full_matrices=False)
    basis = vt[s > rtol * s[0]]
    return bool(np.linalg.norm(A - (A @ basis.T) @ basis) <= rtol * max(np.linalg.norm(A), 1e-300) * 1e3)


def gaz_static(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Gaz 2017 §V eq. 40–44: gravity coefficients π_g (loaded and unloaded) from static samples,
    ε_g = π_{L,g} − π_g, p_{L,g} = (m, m·c) = J_εg^# ε_g. The unloaded coefficients come from an
    unloaded recording of static poses when given, else from the robot identification's gravity
    model (the footnote to eq. 26). Options: vel_tol (rad/s, 0.01), acc_tol (rad/s², 0.05)."""
    vel_tol = float(options.get("vel_tol", 0.01))
    acc_tol = float(options.get("acc_tol", 0.05))
    check_covers_excitation(loaded)
    sig = _signals(loaded, model, options)
    V = _gravity_basis(model)
    joint, X = payload_transform(model, frame)
    lay = theta_layout(robot)
    theta_a = np.asarray(robot.theta, dtype=float)
    zero = lambda a: np.zeros_like(a)  # noqa: E731

    def static_fit(s, what):
        m = _static_mask(s, vel_tol, acc_tol)
        if m.sum() < 3:
            raise PayloadIdError(f"gaz-static: the {what} has only {int(m.sum())} static samples "
                                 f"(|q̇| ≤ {vel_tol} rad/s and |q̈| ≤ {acc_tol} rad/s² on every joint)",
                                 "record the robot resting in many different poses, or choose a dynamic method")
        q = s.q[m]
        yg = rigid_body_regressor(model, q, zero(q), zero(q))
        # Friction at rest: the offsets B of the unloaded identification (Coulomb terms vanish at q̇ = 0).
        f0 = robot.regressor(q, zero(q), zero(q), None if s.temperature is None else s.temperature[m])[..., lay.friction]
        target = s.tau[m] - f0 @ theta_a[lay.friction]
        return weighted_lstsq(yg @ V.T, target), yg, m, target

    loaded_fit, yg_l, mask_l, target_l = static_fit(sig, "loaded recording")
    poses = len(np.unique(np.round(sig.q[mask_l], 3), axis=0))
    notes = list(sig.notes) + [f"{int(mask_l.sum())} static samples in {poses} poses of the loaded run"]
    if unloaded is not None:
        sig_u = _signals(unloaded, model, options)
        unloaded_fit, yg_u, mask_u, _ = static_fit(sig_u, "unloaded recording")
        pi_a, cov_a = unloaded_fit.x, np.nan_to_num(unloaded_fit.cov)
        notes.append(f"unloaded gravity coefficients from {int(mask_u.sum())} static samples of the unloaded run")
    else:
        # The identified robot's gravity torques at the loaded poses, expressed in the same coefficients.
        K = np.asarray(robot.base.K, dtype=float)
        phi_a = K.T @ np.linalg.solve(K @ K.T, theta_a[lay.base])
        pi_a = V @ phi_a
        cov_a = np.zeros((V.shape[0],) * 2)
        rc = _robot_cov(robot)
        if options.get("include_robot_uncertainty", True) and rc is not None:
            T = V @ K.T @ np.linalg.solve(K @ K.T, np.eye(K.shape[0]))
            cov_a = T @ rc[lay.base, lay.base] @ T.T
        notes.append("unloaded gravity coefficients from the robot identification")
    J = V[:, 10 * (joint - 1):10 * joint] @ X
    if loaded_fit.identifiable.all():
        sol = generalized_lstsq(J[:, :4], loaded_fit.x - pi_a, np.nan_to_num(loaded_fit.cov) + cov_a)
    else:
        # Too few poses fix every gravity coefficient: ε would carry the free ones' arbitrary values.
        # Solve eq. 44 in the row space of the static regressor instead, A (π_a + J p) ≈ τ, which is the
        # same estimate where the coefficients are determined and says which of m, m·c the poses fix.
        A = yg_l @ V.T
        if unloaded is not None and not unloaded_fit.identifiable.all() and not _in_row_space(A, yg_u @ V.T):
            raise PayloadIdError("gaz-static: the unloaded run's static poses do not cover the loaded run's, so "
                                 "the unloaded gravity torques at the loaded poses are unknown",
                                 "rest the unloaded robot in the same poses, or leave out the unloaded run to use "
                                 "the robot identification's gravity model")
        sol = weighted_lstsq(A @ J[:, :4], target_l - A @ pi_a)
        notes.append(f"{poses} static pose(s) leave gravity coefficients undetermined: the payload was solved "
                     "in the row space of the static regressor (robot uncertainty not propagated)")
        if not sol.identifiable[0]:
            raise PayloadIdError(f"gaz-static: the {int(mask_l.sum())} static samples of the loaded run hold "
                                 f"{poses} distinct pose(s), which do not determine the payload's mass",
                                 "record the robot resting in several poses that tilt the last link differently "
                                 "(Gaz 2017 §VI used 10 poses ±7° per joint), or choose a dynamic method")
        if not sol.identifiable.all():
            names = [n for n, ok in zip(("mcx", "mcy", "mcz"), sol.identifiable[1:]) if not ok]
            notes.append(f"the static poses do not determine {', '.join(names)}: reported as not identifiable")
    # Friction at rest is anywhere in ±Fc (stiction, hysteresis), constant while a pose is held: a
    # systematic error per pose and joint that the sample scatter does not show. Propagate it as a uniform
    # distribution (variance Fc²/3) through the same linear estimator; Gaz 2017 measured link-side
    # torques, where this term does not exist, but motor currents carry it.
    def solve(y):
        if loaded_fit.identifiable.all():
            fit = weighted_lstsq(yg_l @ V.T, y, sigma=loaded_fit.sigma)
            return generalized_lstsq(J[:, :4], fit.x, np.nan_to_num(loaded_fit.cov) + cov_a).x
        return weighted_lstsq(A @ J[:, :4], y, sigma=sol.sigma).x

    fc = _coulomb_at_rest(robot, model.n)
    if np.any(fc > 0):
        pose_of = np.unique(np.round(sig.q[mask_l], 3), axis=0, return_inverse=True)[1].reshape(-1)
        stiction = np.zeros((4, 4))
        for k in range(poses):
            for j in np.flatnonzero(fc > 0):
                y = np.zeros_like(target_l)
                y[pose_of == k, j] = 1.0
                dp = solve(y)
                stiction += (fc[j] ** 2 / 3.0) * np.outer(dp, dp)
        sol.cov = sol.cov + stiction
        notes.append(f"friction at rest (±Fc = {np.round(fc, 2).tolist()} N·m per joint) included in the "
                     "uncertainty, as a systematic error per pose")
    z = np.zeros(10)
    z[:4] = sol.x
    cov = np.full((10, 10), np.nan)
    cov[:4, :4] = sol.cov
    ok = np.zeros(10, dtype=bool)
    ok[:4] = sol.identifiable
    return finish(frame, "gaz-static", z, cov, ok, notes, options,
                  convergence_time=float(mask_l.sum()) * float(np.median(np.diff(sig.t))))


def gaz_dtau(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Gaz 2017 eq. 26 + 28 in one shot: ε̂ = Ȳ_L^# Δτ̄ with Δτ̄ = τ̄_L − τ̄ (the unloaded torques on the
    same trajectory when an unloaded run is given, else the identified robot's prediction), then
    p_L = J_ε^# ε̂ weighted by cov(ε̂). friction_change (default False) lets ε̂ include Δφ_f."""
    check_covers_excitation(loaded)
    sig = _signals(loaded, model, options)
    y_b = robot.regressor(sig.q, sig.qd, sig.qdd, sig.temperature)
    lay = theta_layout(robot)
    theta_a = np.asarray(robot.theta, dtype=float)
    if unloaded is not None:
        tau_u = same_trajectory_torques(model, sig, unloaded, options, "gaz-dtau")
        source = "unloaded run on the same trajectory"
    else:
        tau_u = y_b @ theta_a
        source = "robot identification's prediction"
    fc = bool(options.get("friction_change", False))
    cols = np.r_[np.arange(lay.base.start, lay.base.stop),
                 np.arange(lay.friction.start, lay.friction.stop) if fc else np.array([], dtype=int)]
    re = weighted_lstsq(y_b[..., cols], sig.tau - tau_u)
    eps = np.zeros(lay.p)
    eps[cols] = re.x
    C = np.zeros((lay.p, lay.p))
    C[np.ix_(cols, cols)] = np.nan_to_num(re.cov)
    rc = _robot_cov(robot)
    if unloaded is None and options.get("include_robot_uncertainty", True) and rc is not None:
        C[np.ix_(cols, cols)] += _robot_sensitivity_cov(y_b[..., cols], re.sigma, y_b, re, rc)
    rest = np.setdiff1d(np.arange(lay.p), cols)
    # Parameters held at zero change are known exactly; a tiny variance keeps C invertible.
    C[rest, rest] = 1e-12 * max(float(np.max(np.diag(C))), 1e-12)
    J = difference_jacobian(model, robot, frame, friction_change=fc)
    sol = generalized_lstsq(J, eps, C)
    notes = list(sig.notes) + [f"Δτ against the {source}"]
    return finish(frame, "gaz-dtau", sol.x, sol.cov, sol.identifiable, notes, options,
                  convergence_time=_duration(sig), friction_unknowns=sol.x.size - 10)


def _ft(model, robot, loaded, frame, unloaded=None, **options) -> PayloadEstimate:
    """Wrist F/T sensor method (Duan 2022, Atkeson 1986), implemented in payload_id_core.ft."""
    from payload_id_core.ft import identify_payload_ft  # noqa: PLC0415 - optional, heavy

    known = ("sensor_frame", "source", "cutoff_hz", "delay", "force_range", "torque_range", "mode", "sensor_mount",
             "estimate_tilt", "static_accel_tol", "gravity_norm", "project")
    return identify_payload_ft(model, loaded, frame, **{k: options[k] for k in known if k in options})


METHODS: dict[str, Callable[..., PayloadEstimate]] = {
    "difference-rls": _online("difference-rls"),
    "direct-rls": _online("direct-rls"),
    "khalil-1": khalil_1,
    "khalil-2": khalil_2,
    "khalil-3": khalil_3,
    "khalil-4": khalil_4,
    "gaz-static": gaz_static,
    "gaz-dtau": gaz_dtau,
    "ft": _ft,
}


def identify_payload(method: str, model: RobotModel, robot, loaded: Recording, frame: str | None = None,
                     unloaded: Recording | None = None, **options) -> PayloadEstimate:
    """The payload on `frame` (default: model.default_payload_frame) by `method` (see METHODS)."""
    if method not in METHODS:
        raise PayloadIdError(f"unknown payload method '{method}'", f"use one of: {', '.join(METHODS)}")
    frame = frame or model.default_payload_frame
    model.frame_id(frame)  # a frame not in the URDF is bad input, whatever the method
    if robot is not None:
        check_robot_matches(model, robot)
    elif method not in ("khalil-3", "ft"):
        raise PayloadIdError(f"{method} needs the unloaded robot's identification", "pass --robot robot.yaml")
    return METHODS[method](model, robot, loaded, frame, unloaded, **options)
