"""One table of the payload methods: what each runs, what it needs, which options it reads, its defaults.

Everything that names a method reads this table: identify_payload's dispatch and its option check, the
CLI (identify-payload's --method choices and help, which flags apply), the cell session (which methods
run online, and their estimator classes), docs/design.md's method table (test_method_registry compares
them) and the tests. A new offline method is its module, one MethodSpec in METHOD_SPECS and its test.

The PayloadMethod enum (method_names.py) stays the name: its values are what users type and payload.yaml
stores; METHOD_SPECS maps each member to its spec.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import Choice, PayloadIdError
from payload_id_core.payload.method_names import PayloadMethod
from payload_id_core.payload.methods.ft import ft
from payload_id_core.payload.methods.gaz import gaz_dtau, gaz_static
from payload_id_core.payload.methods.khalil import khalil_1, khalil_2, khalil_3, khalil_4
from payload_id_core.payload.methods.online import difference_rls, direct_rls
from payload_id_core.payload.online import DifferenceRLS, DirectRLS, OnlineEstimator
from payload_id_core.payload.options import FT_OPTIONS, ONLINE_OPTIONS, SIGNAL_OPTIONS, PayloadOptions
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification
from payload_id_core.signals.recording import Recording

# (model, robot, loaded, frame, unloaded, options) -> PayloadEstimate. The methods that do not need the robot
# identification also accept robot None; identify_payload passes None to those only.
MethodFunction = Callable[[RobotModel, RobotIdentification, Recording, str, Recording | None, PayloadOptions],
                          PayloadEstimate]


class UnloadedRun(Choice):
    """What a method does with a run of the same robot without the payload."""

    NOT_USED = "not used"
    OPTIONAL = "optional"          # a better reference than the robot identification's prediction
    REQUIRED = "required"


class Measurement(Choice):
    """What a method fits the payload to."""

    TORQUES_IN_MOTION = "joint torques along an exciting motion"
    TORQUES_AT_REST = "joint torques at rest (static poses)"
    WRIST_WRENCH = "the wrist F/T sensor's wrench"


@dataclass(frozen=True)
class MethodSpec:
    method: PayloadMethod
    runner: MethodFunction
    summary: str                       # one line: what it fits, and the paper (docs/design.md's method table)
    options: frozenset[str]            # the PayloadOptions fields it reads; any other one given is refused
    measurement: Measurement = Measurement.TORQUES_IN_MOTION
    online: bool = False               # runs on the cell, one update per control sample (estimator: its class)
    estimator: type[OnlineEstimator] | None = None
    needs_robot: bool = True           # needs the unloaded robot's identification (robot.yaml)
    unloaded: UnloadedRun = UnloadedRun.NOT_USED
    same_trajectory: bool = False      # subtracts the unloaded run sample by sample: both on one trajectory time
    # Load-dependent Coulomb friction (load_friction.py) modelled when the caller does not say: on for every
    # method fitting joint torques of a loaded run. History: first on where it helped both on the simulated UR10
    # cell (μ = 0.02: mass bias over 6 seeds +0.89/+0.94/+0.89 % -> −0.03/+0.17/−0.13 %) and on synthetic data
    # without it; khalil-2/3/4 and gaz-dtau were left out and stayed +0.8 to +1.2 % on the cell (issue 13; the
    # cell's friction has the term, the synthetic data's constant friction change does not: there khalil-3 moves
    # −0.08 -> −0.25 %, within its σ). bench/accuracy.py measures every method with it.
    load_friction_default: bool = False

    @property
    def name(self) -> str:
        return self.method.value

    @property
    def fits_joint_efforts(self) -> bool:
        """Whether the method's answer rests on the recorded joint efforts (and the robot identification built on
        them): only then can their unit or the identification's scale make it wrong."""
        return self.measurement is not Measurement.WRIST_WRENCH

    def reads(self, option: str) -> bool:
        return option in self.options


# The options by what reads them: the signal conditioning, the finishing (prior, projection), the robot
# identification's covariance, the payload model's friction unknowns, and the recursive estimators' own.
_SIGNALS = frozenset(SIGNAL_OPTIONS)
_FINISH = frozenset({"prior", "payload_prior", "project"})
_TORQUE_FIT = _SIGNALS | _FINISH | {"include_robot_uncertainty"}
# khalil-3 and khalil-4 take the unloaded run as the reference, not θ_a: cov(θ_a) never enters their covariance.
_UNLOADED_REFERENCE = _TORQUE_FIT - {"include_robot_uncertainty"}
_LOAD_MODEL = frozenset({"friction_change", "load_friction"})
_ONLINE = _TORQUE_FIT | _LOAD_MODEL | (frozenset(ONLINE_OPTIONS) - {"moment_noise_std"})

SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(PayloadMethod.DIFFERENCE_RLS, difference_rls,
               "Xu 2024 Algorithm 1: RLS on the loaded robot's θ_b from θ_a, payload from ε = θ_b − θ_a",
               _ONLINE | {"moment_noise_std"}, online=True, estimator=DifferenceRLS, load_friction_default=True),
    MethodSpec(PayloadMethod.DIRECT_RLS, direct_rls,
               "RLS straight on [φ_L, Δφ_f] from τ − Y θ_a (Khalil 2007 method 1, recursive)",
               _ONLINE, online=True, estimator=DirectRLS, load_friction_default=True),
    MethodSpec(PayloadMethod.KHALIL_1, khalil_1,
               "Khalil 2007 §V-A-1, eq. 23: WLS of φ_L on τ − Y θ_a", _TORQUE_FIT | _LOAD_MODEL | {"robot_prior"},
               load_friction_default=True),
    MethodSpec(PayloadMethod.KHALIL_2, khalil_2,
               "Khalil 2007 §V-A-2, eq. 24–28: the robot re-identified with the payload, φ_L from the variation",
               _TORQUE_FIT | {"load_friction"}, load_friction_default=True),
    MethodSpec(PayloadMethod.KHALIL_3, khalil_3,
               "Khalil 2007 §V-A-3, eq. 29: WLS of φ_L on loaded minus unloaded torques of one trajectory",
               _UNLOADED_REFERENCE | _LOAD_MODEL | {"same_trajectory_tol_rad"}, needs_robot=False,
               unloaded=UnloadedRun.REQUIRED, same_trajectory=True, load_friction_default=True),
    MethodSpec(PayloadMethod.KHALIL_4, khalil_4,
               "Khalil 2007 §V-A-4, eq. 30: one WLS of [θ, φ_L] on the stacked unloaded and loaded runs",
               _UNLOADED_REFERENCE | _LOAD_MODEL, unloaded=UnloadedRun.REQUIRED, load_friction_default=True),
    MethodSpec(PayloadMethod.GAZ_STATIC, gaz_static,
               "Gaz 2017 §V, eq. 40–44: gravity coefficients from static poses (mass and CoM only)",
               _TORQUE_FIT | {"vel_tol", "acc_tol"}, measurement=Measurement.TORQUES_AT_REST,
               unloaded=UnloadedRun.OPTIONAL),
    MethodSpec(PayloadMethod.GAZ_DTAU, gaz_dtau,
               "Gaz 2017 eq. 26 + 28: ε̂ = Ȳ_L^# (τ̄_L − τ̄) in one shot, then φ_L = J_ε^# ε̂",
               _TORQUE_FIT | _LOAD_MODEL | {"same_trajectory_tol_rad"}, unloaded=UnloadedRun.OPTIONAL,
               same_trajectory=True, load_friction_default=True),
    MethodSpec(PayloadMethod.FT, ft,
               "Duan 2022 / Atkeson 1986: φ_L, sensor offsets and base tilt from the wrench (payload_id_core.ft)",
               frozenset(FT_OPTIONS) | {"payload_prior"}, measurement=Measurement.WRIST_WRENCH, needs_robot=False),
)
METHOD_SPECS: dict[PayloadMethod, MethodSpec] = {spec.method: spec for spec in SPECS}
ONLINE_SPECS: tuple[MethodSpec, ...] = tuple(spec for spec in SPECS if spec.online)


def method_spec(method: PayloadMethod | str) -> MethodSpec:
    """The spec of `method`; an unknown name is bad input naming the known ones."""
    return METHOD_SPECS[PayloadMethod.parse(method)]


def online_spec(method: PayloadMethod | str) -> MethodSpec:
    """The spec of an online `method`: an offline one is refused with the way to run it, an unknown one
    naming the known ones."""
    try:
        spec = method_spec(method)
    except PayloadIdError:
        raise PayloadIdError(f"unknown method '{method}'",
                             f"use one of: {', '.join(sorted(s.name for s in SPECS))}") from None
    if not spec.online:
        raise PayloadIdError(f"method '{spec.name}' needs a whole recording (it is not online)",
                             f"on the cell use one of {', '.join(s.name for s in ONLINE_SPECS)}, or record a bag "
                             "and run payload-id identify-payload")
    return spec


def readers_of(option: str) -> list[str]:
    """The names of the methods that read `option`."""
    return [spec.name for spec in SPECS if spec.reads(option)]


def refuse_unread_options(spec: MethodSpec, options: PayloadOptions | Iterable[str],
                          labels: Mapping[str, str] | None = None) -> None:
    """Refuse an option `spec`'s method does not read (it would be silently ignored), naming the methods that
    read it. `options`: the PayloadOptions given, or the names given; `labels`: how the caller names an option
    (the CLI: its flag)."""
    given = options.given_names() if isinstance(options, PayloadOptions) else list(options)
    unread = [name for name in given if not spec.reads(name)]
    if not unread:
        return
    name = unread[0]
    label = (labels or {}).get(name, name)
    readers = readers_of(name)
    also = f" (nor {', '.join((labels or {}).get(n, n) for n in unread[1:])})" if len(unread) > 1 else ""
    raise PayloadIdError(f"{label} is not read by {spec.name}{also}: only {', '.join(readers)} read it",
                         f"drop {label}, or use --method {readers[0]}" if readers else f"drop {label}")


def method_table() -> str:
    """docs/design.md's method table, from this one (test_method_registry keeps the two equal)."""
    rows = ["| method | what it fits, and the paper | data | online | robot.yaml | unloaded run | options of its own |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for spec in SPECS:
        own = sorted(spec.options - _TORQUE_FIT) if spec.options >= _UNLOADED_REFERENCE else sorted(spec.options)
        if spec.options >= _UNLOADED_REFERENCE and not spec.reads("include_robot_uncertainty"):
            own.append("(not include_robot_uncertainty)")
        rows.append(f"| {spec.name} | {spec.summary} | {spec.measurement} | {'yes' if spec.online else 'no'} | "
                    f"{'needed' if spec.needs_robot else 'optional'} | {spec.unloaded}"
                    f"{', same trajectory' if spec.same_trajectory else ''} | "
                    f"{', '.join(own) or '-'} |")
    return "\n".join(rows)


__all__ = ["METHOD_SPECS", "ONLINE_SPECS", "SPECS", "Measurement", "MethodFunction", "MethodSpec", "UnloadedRun",
           "method_spec", "method_table", "online_spec", "readers_of", "refuse_unread_options"]
