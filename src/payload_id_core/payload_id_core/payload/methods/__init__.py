"""Every payload method of DESIGN.md behind one call: identify_payload(method, model, robot, loaded, frame, ...).

The methods, their papers, what each needs and which options it reads: registry.METHOD_SPECS.

Every method returns a PayloadEstimate: φ_L with covariance, which entries the robot and the motion
determine (the others are fixed to the prior, 0 by default, with NaN std), converged / convergence
time (offline methods: the seconds of motion used), notes (Note with a NoteCode), and a physically
consistent φ_L (projected by dynamics.consistency.project_feasible when the raw one is not, with
physically_consistent=False) - all through payload/finish.py.

Options are the fields of payload/options.PayloadOptions (an unknown name is refused): source
('commanded' default when recorded, else 'measured'), delay ('estimate' or s), cutoff_hz, decimate
(conditioning.conditioned_signals); friction_change (estimate Δφ_f, see each method's default);
load_friction (the load-dependent Coulomb friction μ_j of load_friction.py, default
MethodSpec.load_friction_default); include_robot_uncertainty (default True: the robot identification's
covariance enters the payload's); prior (PayloadEstimate or φ for undetermined entries); project
(default True); and the online estimators' and the F/T method's own. Which method reads which, what
each needs and its defaults: registry.py's METHOD_SPECS, the one table everything reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from payload_id_core.dynamics.model import PayloadFrame, RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note
from payload_id_core.payload.against_robot import JudgedRun, judge_against_robot
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.common import (
    aligned_runs,
    check_robot_matches,
    load_friction_on,
    method_signals,
)
from payload_id_core.payload.methods.registry import (
    METHOD_SPECS,
    ONLINE_SPECS,
    SPECS,
    MethodFunction,
    MethodSpec,
    method_spec,
    online_spec,
    readers_of,
    refuse_unread_options,
)
from payload_id_core.payload.options import PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording

# method -> runner, read from the registry (kept for callers that only dispatch).
METHODS: dict[PayloadMethod, MethodFunction] = {spec.method: spec.runner for spec in SPECS}


def needs_robot_identification(method: PayloadMethod | str) -> bool:
    """Whether `method` needs the unloaded robot's identification (robot.yaml)."""
    return method_spec(method).needs_robot


def prepared_options(spec: MethodSpec, options: PayloadOptions, robot: RobotIdentification | None,
                     labels: Mapping[str, str] | None = None) -> tuple[PayloadOptions, list[Note]]:
    """`options` checked against what `spec`'s method reads (refused naming the methods that read an option it
    does not), with the load-dependent friction decided (the method's default unless given; off when the
    drive gains absorbed it: common.load_friction_on) and the note that says why it differs from the default.
    `labels`: how the caller names an option in the refusal (the CLI: its flag)."""
    refuse_unread_options(spec, options, labels)
    if not spec.reads("load_friction"):
        return options, []
    on, notes = load_friction_on(spec.load_friction_default, options, robot, spec.name)
    return options.with_changes(load_friction=on), notes


def on_same_trajectory(method: PayloadMethod | str, loaded: Recording, unloaded: Recording | None
                       ) -> tuple[Recording, Recording | None, dict]:
    """The loaded and unloaded runs as `method` should receive them, and the options that go with them: put on
    one trajectory clock (common.aligned_runs) for a method that subtracts them sample by sample, else as given."""
    if not method_spec(method).same_trajectory:
        return loaded, unloaded, {}
    return aligned_runs(loaded, unloaded)


@dataclass(frozen=True)
class PayloadRequest:
    """What identify_payload is asked, checked once where it enters (payload_request): the method's spec, the robot
    (checked against the URDF; None only for a method that needs none), the payload frame (resolved, in the URDF)
    and the options (those the method reads only, the load-dependent friction decided). The layers below take it as
    given."""

    spec: MethodSpec
    model: RobotModel
    robot: RobotIdentification | None
    frame: PayloadFrame
    options: PayloadOptions
    notes: tuple[Note, ...] = ()         # why the payload model differs from the method's default

    def with_options(self, **changes) -> PayloadRequest:
        """The request with `changes` to options the method reads (on_same_trajectory's delay)."""
        refuse_unread_options(self.spec, changes)
        return replace(self, options=self.options.with_changes(**changes))


def payload_request(method: PayloadMethod | str, model: RobotModel, robot: RobotIdentification | None,
                    frame: str | None = None, *, labels: Mapping[str, str] | None = None,
                    **options) -> PayloadRequest:
    """The request checked: an unknown method or option, an option the method does not read (named as `labels`
    say, the CLI: by its flag), a frame the URDF lacks, a robot identification of another URDF, or none for a
    method that needs one: PayloadIdError."""
    spec = method_spec(method)
    opts, notes = prepared_options(spec, PayloadOptions.from_kwargs(**options), robot, labels)
    payload_frame = model.payload_frame(frame)  # a frame not in the URDF is bad input, whatever the method
    if robot is not None:
        check_robot_matches(model, robot)
    elif spec.needs_robot:
        raise PayloadIdError(f"{spec.name} needs the unloaded robot's identification",
                             "pass --robot robot.yaml (payload-id identify-robot)")
    return PayloadRequest(spec, model, robot, payload_frame, opts, tuple(notes))


def estimate_payload(request: PayloadRequest, loaded: Recording, unloaded: Recording | None = None
                     ) -> PayloadEstimate:
    """The payload `request` asks for, from the loaded run (and the unloaded one, for the methods that use it)."""
    for what, recording in (("loaded", loaded), ("unloaded", unloaded)):
        if recording is not None:
            recording.joints.refuse_non_finite(f"the {what} recording"
                                               + (f" ({recording.source})" if recording.source else ""))
    # A None robot got past payload_request only for the methods that need none, which accept it.
    est = request.spec.runner(request.model, request.robot, loaded, request.frame, unloaded,  # type: ignore[arg-type]
                              request.options)
    est.notes.extend(request.notes)
    # The robot identification's and the recordings' scale against the URDF: torques may not be torques. Judged only
    # for a method that fits joint efforts: the F/T method never reads them, so their unit cannot make it wrong.
    if not request.spec.fits_joint_efforts:
        return judge_quality(est)
    # Every method whose torques robot.yaml's gains scale is judged, khalil-3 too: it needs no robot model, but its
    # loaded-minus-unloaded torque carries the gains' error straight into the mass (real UR10e, both runs' efforts
    # × 1.02: +2.0 % at 3.2σ, converged and ok, while every method that needs robot.yaml was flagged).
    if request.robot is not None:
        run = JudgedRun(request.model, request.robot, method_signals(loaded, request.model, request.options,
                                                                     request.robot),
                        request.frame, request.spec.method, bool(request.options.load_friction),
                        loaded.source or "the loaded run", with_unloaded=unloaded is not None)
        judge_against_robot(run, est)
    return judge_quality(est, request.robot, request.model, (loaded, unloaded))


def identify_payload(method: PayloadMethod | str, model: RobotModel, robot: RobotIdentification | None,
                     loaded: Recording, frame: str | None = None, unloaded: Recording | None = None,
                     **options) -> PayloadEstimate:
    """The payload on `frame` (default: model.default_payload_frame) by `method` (see METHOD_SPECS).

    `options` are PayloadOptions fields; an unknown method or option is a PayloadIdError naming the valid ones,
    an option the method does not read one naming the methods that read it."""
    return estimate_payload(payload_request(method, model, robot, frame, **options), loaded, unloaded)


__all__ = ["METHODS", "METHOD_SPECS", "ONLINE_SPECS", "SPECS", "MethodSpec", "PayloadMethod", "PayloadOptions",
           "PayloadRequest", "estimate_payload", "identify_payload", "method_spec", "needs_robot_identification",
           "on_same_trajectory", "online_spec", "payload_request", "prepared_options", "readers_of",
           "refuse_unread_options"]
