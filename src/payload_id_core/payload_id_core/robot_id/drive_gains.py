"""Drive gains k_j (torque = k_j × effort) from an unloaded and a loaded run (Gautier & Briot 2014)."""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.base_params import compute_base_parameters
from payload_id_core.dynamics.friction import FrictionModel, make_friction_model
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.errors import PayloadIdError
from payload_id_core.robot_id.regressors import full_regressor
from payload_id_core.robot_id.signal_checks import require_finite
from payload_id_core.robot_id.structure import rotor_structure
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.signals.recording import Recording


def identify_effort_scale(model: RobotModel, unloaded: Recording, loaded: Recording, payload_mass: float, frame: str,
                          *, payload_phi: np.ndarray | None = None, friction: str | FrictionModel = "linear",
                          use_commanded: bool = True, delay: str | float = "estimate") -> tuple[np.ndarray, np.ndarray]:
    """Drive gains k_j (torque = k_j × effort) from an unloaded and a loaded run (Gautier & Briot 2014).

    Both recordings hold raw efforts (read with effort_scale 1). Unknowns: the robot's θ (shared by
    both runs), the payload's parameters other than its known mass (or none when `payload_phi` is
    given), and k. Rows:  unloaded  W0 θ − diag(e0) k = 0;  loaded  W1 θ + Y_L' φ_L' − diag(e1) k
    = −Y_L,m m_L. Without the known mass every row would be homogeneous and k only known up to a
    common factor; the mass fixes the scale. That linear solution starts a Gauss–Newton refinement
    of the output-error form e = (W θ + Y_L φ_L)/k, free of the errors-in-variables bias of the
    noisy effort column. Returns (k, std of k).
    """
    model.frame_id(frame)  # an unknown frame fails before any work
    src = "commanded" if use_commanded else "measured"
    names = model.joint_names
    s0 = conditioned_signals(unloaded, names, source=src, delay=delay)
    s1 = conditioned_signals(loaded, names, source=src, delay=delay)
    for s in (s0, s1):
        require_finite("efforts", s.tau, names)
    base = compute_base_parameters(model)
    rotor = rotor_structure(model, base)
    fm = friction if isinstance(friction, FrictionModel) else make_friction_model(friction, names)
    w0 = full_regressor(model, base, rotor, fm, s0.q, s0.qd, s0.qdd, s0.temperature)
    w1 = full_regressor(model, base, rotor, fm, s1.q, s1.qd, s1.qdd, s1.temperature)
    yl = payload_regressor(model, frame, s1.q, s1.qd, s1.qdd)
    n = model.n

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
    _require_positive(k)
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
    _require_positive(k)
    return k, k_std


def _require_positive(k: np.ndarray) -> None:
    if np.any(k <= 0) or np.any(~np.isfinite(k)):
        raise PayloadIdError(f"identified drive gains {np.round(k, 4).tolist()} are not all positive",
                             "check that the payload mass and frame are right and the runs excite every joint")
