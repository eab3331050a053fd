"""difference-rls and direct-rls offline: the online estimator (payload/online.py) fed with a whole recording.

  difference-rls  Xu 2024 Algorithm 1: RLS on θ_b from θ_a, payload from ε = θ_b − θ_a.
  direct-rls      RLS on [φ_L, Δφ_f] from τ − Y θ_a.
"""

from __future__ import annotations

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.finish import prior_phi
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import (
    check_covers_excitation,
    finish,
    load_friction_on,
    method_signals,
    motion_duration,
    online_covariance_extra,
)
from payload_id_core.payload.online import OnlinePayloadEstimator
from payload_id_core.payload.options import ONLINE_OPTIONS, PayloadOptions
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording


def run_online(method: PayloadMethod, model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
               options: PayloadOptions) -> PayloadEstimate:
    """The online estimator `method` over the whole loaded recording, finished like the offline methods."""
    check_covers_excitation(loaded)
    sig = method_signals(loaded, model, options, robot)
    kw = options.given(ONLINE_OPTIONS)
    if "moment_noise_std" in kw and method is not PayloadMethod.DIFFERENCE_RLS:
        raise PayloadIdError(f"moment_noise_std weights difference-rls's first moments and inertia; {method.value} "
                             "has one weighting", "give noise_std instead, or use --method difference-rls")
    kw["rate_hz"] = 1.0 / float(np.median(np.diff(sig.t)))
    kw["include_robot_uncertainty"] = options.include_robot_uncertainty
    kw["load_friction"], lf_notes = load_friction_on(method, options, robot)
    estimator = OnlinePayloadEstimator(model, robot, frame, method.value, prior=prior_phi(options.prior), **kw)
    raw = estimator.run(sig.t, sig.q, sig.qd, sig.qdd, sig.tau)
    z, cov, ok = estimator.payload_solution()
    extra, extra_notes = online_covariance_extra(model, robot, frame, sig.q, sig.qd, sig.qdd, sig.tau,
                                                 load_friction=kw["load_friction"])
    cov = cov.copy()
    cov[:10, :10] += extra
    notes = [*sig.notes, *lf_notes, *raw.notes, *extra_notes]
    if not estimator.converged:
        notes.append(Note(NoteCode.PAYLOAD_NOT_CONVERGED, f"not converged after {motion_duration(sig):.2f} s of motion "
                          f"({estimator.convergence_rule} rule)"))
    return finish(frame, method, z, cov, ok, notes, options, converged=estimator.converged,
                  convergence_time=estimator.convergence_time, history=raw.history)


def difference_rls(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
                   unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """`difference-rls`: Xu 2024 Algorithm 1 over the whole recording."""
    return run_online(PayloadMethod.DIFFERENCE_RLS, model, robot, loaded, frame, options)


def direct_rls(model: RobotModel, robot: RobotIdentification, loaded: Recording, frame: str,
               unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """`direct-rls`: RLS on [φ_L, Δφ_f] over the whole recording."""
    return run_online(PayloadMethod.DIRECT_RLS, model, robot, loaded, frame, options)
