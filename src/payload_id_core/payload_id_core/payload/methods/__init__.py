"""Every payload method of DESIGN.md behind one call: identify_payload(method, model, robot, loaded, frame, ...).

  difference-rls  Xu 2024 Algorithm 1 (online.py): RLS on θ_b from θ_a, payload from ε = θ_b − θ_a.
  direct-rls      RLS on [φ_L, Δφ_f] from τ − Y θ_a (online.py).
  khalil-1..4     Khalil 2007 §V-A, eq. 22–30 (khalil.py).
  gaz-static      Gaz 2017 §V, eq. 40–44: gravity coefficients from static poses (gaz.py).
  gaz-dtau        Gaz 2017 eq. 26 + 28: ε̂ = Ȳ_L^# (τ̄_L − τ̄) in one shot, then φ_L = J_ε^# ε̂ (gaz.py).
  ft              Duan 2022 / Atkeson 1986 with the wrist F/T sensor (payload_id_core.ft, ft.py).

Every method returns a PayloadEstimate: φ_L with covariance, which entries the robot and the motion
determine (the others are fixed to the prior, 0 by default, with NaN std), converged / convergence
time (offline methods: the seconds of motion used), notes (Note with a NoteCode), and a physically
consistent φ_L (projected by consistency.project_feasible when the raw one is not, with
physically_consistent=False) - all through payload/finish.py.

Options are the fields of payload/options.PayloadOptions (an unknown name is refused): source
('commanded' default when recorded, else 'measured'), delay ('estimate' or s), cutoff_hz, decimate
(conditioning.conditioned_signals); friction_change (estimate Δφ_f, see each method's default);
load_friction (the load-dependent Coulomb friction μ_j of load_friction.py, default
LOAD_FRICTION_DEFAULT per method); include_robot_uncertainty (default True: the robot identification's
covariance enters the payload's); prior (PayloadEstimate or φ for undetermined entries); project
(default True); and the online estimators' and the F/T method's own.
"""

from __future__ import annotations

from collections.abc import Callable

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.payload.estimate import PayloadEstimate
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import check_robot_matches, needs_robot_identification, on_same_trajectory
from payload_id_core.payload.methods.ft import ft
from payload_id_core.payload.methods.gaz import gaz_dtau, gaz_static
from payload_id_core.payload.methods.khalil import khalil_1, khalil_2, khalil_3, khalil_4
from payload_id_core.payload.methods.online import difference_rls, direct_rls
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording

# (model, robot, loaded, frame, unloaded, options) -> PayloadEstimate. The robot-free methods
# (common.ROBOT_FREE_METHODS) also accept robot None; identify_payload passes None to those only.
MethodFunction = Callable[[RobotModel, RobotIdentification, Recording, str, Recording | None, PayloadOptions],
                          PayloadEstimate]

METHODS: dict[PayloadMethod, MethodFunction] = {
    PayloadMethod.DIFFERENCE_RLS: difference_rls,
    PayloadMethod.DIRECT_RLS: direct_rls,
    PayloadMethod.KHALIL_1: khalil_1,
    PayloadMethod.KHALIL_2: khalil_2,
    PayloadMethod.KHALIL_3: khalil_3,
    PayloadMethod.KHALIL_4: khalil_4,
    PayloadMethod.GAZ_STATIC: gaz_static,
    PayloadMethod.GAZ_DTAU: gaz_dtau,
    PayloadMethod.FT: ft,
}


def identify_payload(method: PayloadMethod | str, model: RobotModel, robot: RobotIdentification | None,
                     loaded: Recording, frame: str | None = None, unloaded: Recording | None = None,
                     **options) -> PayloadEstimate:
    """The payload on `frame` (default: model.default_payload_frame) by `method` (see METHODS).

    `options` are PayloadOptions fields; an unknown method or option is a PayloadIdError naming the valid ones."""
    method = PayloadMethod.parse(method)
    opts = PayloadOptions.from_kwargs(**options)
    frame = frame or model.default_payload_frame
    model.frame_id(frame)  # a frame not in the URDF is bad input, whatever the method
    if robot is not None:
        check_robot_matches(model, robot)
    elif needs_robot_identification(method):
        raise PayloadIdError(f"{method} needs the unloaded robot's identification", "pass --robot robot.yaml")
    # A None robot gets past the check above only for the robot-free methods, which accept it.
    est = METHODS[method](model, robot, loaded, frame, unloaded, opts)  # type: ignore[arg-type]
    # The robot identification's and the recordings' scale against the URDF: torques may not be torques.
    return judge_quality(est, robot, model, (loaded, unloaded))


__all__ = ["METHODS", "PayloadMethod", "PayloadOptions", "identify_payload", "needs_robot_identification",
           "on_same_trajectory"]
