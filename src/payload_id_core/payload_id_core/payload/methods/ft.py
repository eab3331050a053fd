"""The `ft` method: the wrist F/T sensor's wrench instead of joint torques (Duan 2022, Atkeson 1986),
implemented in payload_id_core.ft; this adapter hands on the options it takes."""

from __future__ import annotations

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.ft import identify_payload_ft
from payload_id_core.payload.options import FT_OPTIONS, PayloadOptions
from payload_id_core.payload.priors import apply_prior
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording


def ft(model: RobotModel, robot: RobotIdentification | None, loaded: Recording, frame: str,
       unloaded: Recording | None, options: PayloadOptions) -> PayloadEstimate:
    """Payload from the wrist F/T sensor's readings in `loaded` (robot and unloaded are not used); the box and
    known mass (options.payload_prior) applied to its estimate as finish.finish applies them to the others'."""
    est = identify_payload_ft(model, loaded, frame, **options.given(FT_OPTIONS))
    return apply_prior(est, options.payload_prior) if options.payload_prior is not None else est
