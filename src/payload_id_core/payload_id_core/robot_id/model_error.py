"""The robot model's error on motions it was not fitted to, measured as the payload it would invent there.

A payload fit that uses robot.yaml's model (khalil-1, khalil-2, direct-rls, difference-rls) attributes to the
payload whatever torque the model mispredicts along the payload's columns. On a held-out recording of the
unloaded robot (a motion the model was not fitted to, no payload on the flange) the same fit therefore returns
a spurious payload φ_h whose true value is 0: the model error's image in payload parameters, measured, not
predicted. Over the held-out motions h = 1..H the mean square per parameter,

    C_me = diag((1/H) Σ_h φ_h²),

is the model-error term of a payload fit's covariance on another motion (payload/covariance_extra.py). It
replaces the two estimates of the same thing the fit makes without it: the Newey–West inflation of its own
residuals (which sees only the part of the model error the payload columns do not absorb) and the gear
friction's predicted worst case (gear_friction.UnmodelledGear). On the real UR10e (robot from the 14harm pair,
held-out: the 15harm and 01_31 unloaded runs) khalil-1's mass σ goes from 1.5-2.3 % to 0.8-0.9 % for errors of
0.1-1.0 %, and the CoM σ from 4-10 mm to ≤ 4 mm (docs/design.md "Model error measured on held-out motions").

Only the diagonal: a handful of held-out motions (H of them, rank H ≤ 10) cannot measure the correlations, and a
rank-1 C_me from one motion made the projection onto physical parameters (whose metric is the covariance,
payload/finish.py) move the mass along the one measured direction (khalil-1 on 15harm +0.14 → −1.93 %).
Entries a held-out motion does not determine are NaN there and left out of that entry's mean; an entry no
held-out motion determines leaves the measurement unusable (covariance() returns None).

A payload fit in another frame rigidly attached to the same body (tool0 on wrist_3_link) uses the same spurious
payloads moved to its frame: the payload adds X_a φ_a = X_b φ_b to the body's parameters (inertia.transform_matrix,
the rigid-body transform of inertial parameters), so φ_b = X_b⁻¹ X_a φ_a, and C_me is taken over the moved rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_transform
from payload_id_core.errors import PayloadIdError


@dataclass
class HeldOutModelError:
    frame: str                       # the payload frame the spurious payloads are expressed in
    sources: list[str]               # the held-out recordings, one per row of `spurious`
    spurious: np.ndarray             # (H, 10) φ fitted on each held-out unloaded run (true value 0); NaN: undetermined
    notes: list[str] = field(default_factory=list)

    def covariance(self) -> np.ndarray | None:
        """(10, 10) diagonal C_me over the held-out motions, None when some entry was determined by none of them."""
        s = np.asarray(self.spurious, dtype=float).reshape(-1, 10)
        known = np.isfinite(s)
        if s.shape[0] == 0 or not known.any(axis=0).all():
            return None
        return np.diag(np.sum(np.where(known, s, 0.0) ** 2, axis=0) / known.sum(axis=0))

    def in_frame(self, model: RobotModel, frame: str) -> HeldOutModelError | None:
        """The spurious payloads expressed in `frame`; None when `frame` is not rigidly attached to the body the
        measurement's frame is on (then the model error there is another one, and was not measured)."""
        if str(frame) == str(self.frame):
            return self
        joint_a, x_a = payload_transform(model, str(self.frame))
        joint_b, x_b = payload_transform(model, str(frame))
        if joint_a != joint_b:
            return None
        s = np.asarray(self.spurious, dtype=float).reshape(-1, 10)
        # An undetermined entry (NaN) leaves every entry it mixes into undetermined in the new frame.
        moved = s @ np.linalg.solve(x_b, x_a).T
        return HeldOutModelError(str(frame), list(self.sources), moved, list(self.notes))

    def to_dict(self) -> dict:
        return {"frame": self.frame, "held_out": list(self.sources),
                "spurious_payload": [[None if not np.isfinite(v) else float(v) for v in row] for row in self.spurious]}

    @classmethod
    def from_dict(cls, d, source: str) -> HeldOutModelError:
        key = f"{source}: model_error"
        if not isinstance(d, dict) or not {"frame", "held_out", "spurious_payload"} <= set(d):
            raise PayloadIdError(f"{key} is {d!r}, not a mapping {{frame, held_out, spurious_payload}}",
                                 "re-run payload-id identify-robot")
        try:
            rows = np.array([[np.nan if v is None else float(v) for v in row] for row in d["spurious_payload"]],
                            dtype=float).reshape(-1, 10)
        except (TypeError, ValueError) as err:
            raise PayloadIdError(f"{key}.spurious_payload is not rows of 10 numbers ({err})",
                                 "the file is damaged; re-run payload-id identify-robot") from err
        sources = [str(s) for s in d["held_out"]]
        if len(sources) != rows.shape[0] or np.isinf(rows).any():
            raise PayloadIdError(f"{key}: {len(sources)} held-out recordings for {rows.shape[0]} spurious payloads",
                                 "the file is damaged; re-run payload-id identify-robot")
        return cls(str(d["frame"]), sources, rows)
