"""The result every payload method returns, and its payload.yaml form (DESIGN.md).

It is the vocabulary below both the payload methods (payload/) and the wrist F/T sensor (ft/), which
identifies a payload too and compensates one identified any way.

Methods estimate φ_L (10 parameters in the payload frame, about its origin, pinocchio order) with
a covariance. People read mass, CoM and inertia about the CoM; their standard deviations come from
first-order propagation of the covariance of φ_L through that (nonlinear) conversion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from payload_id_core.dynamics.inertia import PARAM_NAMES, from_mass_com_inertia, to_mass_com_inertia
from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note, NoteCode, has_note

INERTIA_KEYS = ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"]
UNDETERMINED = "undetermined by this motion"   # what people read where a number is not determined
_I_INDEX = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}


def readable_vector(phi: np.ndarray) -> np.ndarray:
    """[mass, cx, cy, cz, ixx, ixy, ixz, iyy, iyz, izz] (inertia about the CoM)."""
    m, c, ic = to_mass_com_inertia(phi)
    return np.concatenate([[m], c, [ic[_I_INDEX[k]] for k in INERTIA_KEYS]])


def readable_dict(frame: str, value, std, known) -> dict:
    """payload.yaml's frame, mass, com, inertia and std from the readable_vector `value`, its `std` and which of
    them are identified (`known`, 10 each): a value not identified and NaN are None; a σ is given wherever finite."""
    num = lambda x, ok=True: float(x) if ok and np.isfinite(x) else None  # noqa: E731
    return {
        "frame": str(frame),       # a PayloadFrame (str subclass) is written as its plain string
        "mass": num(value[0], known[0]),
        "com": [num(v, k) for v, k in zip(value[1:4], known[1:4])],
        "inertia": {k: num(v, known[4]) for k, v in zip(INERTIA_KEYS, value[4:])},
        "std": {
            "mass": num(std[0]),
            "com": [num(s) for s in std[1:4]],
            "inertia": {k: num(s) for k, s in zip(INERTIA_KEYS, std[4:])},
        },
    }


def millimetres(metres: float, std_metres: float = float("nan")) -> str:
    """'87.9 ± 1.2' (mm): σ to two significant digits and the value to the same decimal place (0.1 mm at least,
    1 µm at most); without a finite σ, to 0.1 mm."""
    value, std = 1e3 * metres, 1e3 * std_metres
    decimals = min(3, max(1, 1 - math.floor(math.log10(std)))) if math.isfinite(std) and std > 0 else 1
    shown = round(value, decimals) + 0.0      # + 0.0: no "-0.0" for a value that rounds to zero
    return f"{shown:.{decimals}f}" + (f" ± {std:.{decimals}f}" if math.isfinite(std) else "")


def readable_jacobian(phi: np.ndarray) -> np.ndarray:
    """∂ readable_vector / ∂ φ at `phi` (central differences): first-order propagation of φ's covariance."""
    phi = np.asarray(phi, dtype=float)
    h = 1e-7 * np.maximum(1.0, np.abs(phi))
    jac = np.zeros((10, 10))
    for k in range(10):
        dp = np.zeros(10)
        dp[k] = h[k]
        jac[:, k] = (readable_vector(phi + dp) - readable_vector(phi - dp)) / (2 * h[k])
    return jac


def _com_from_file(com) -> list[float]:
    """payload.yaml's `com`: three numbers [x, y, z] in metres (a null entry reads as 0)."""
    if not isinstance(com, (list, tuple)) or len(com) != 3:
        count = f"{len(com)} values" if isinstance(com, (list, tuple)) else f"{type(com).__name__} {com!r:.40}"
        raise ValueError(f"com is {count}, not three numbers [x, y, z] in metres")
    return [float(c or 0.0) for c in com]


def covariance_from_file(d: dict, phi: np.ndarray) -> np.ndarray:
    """φ's covariance as payload.yaml gives it: `covariance_about_frame_origin`, or, in files
    written before it was stored, the one whose first-order propagation gives back the file's `std` (correlations
    unknown: taken as none between mass, CoM and inertia entries); NaN when the file gives neither (hand-written)."""
    stored = d.get("covariance_about_frame_origin")
    if stored:
        cov = np.array(stored, dtype=float)
        if cov.shape != (10, 10):
            raise ValueError(f"covariance_about_frame_origin has shape {cov.shape}, not (10, 10)")
        return cov
    std_d = d.get("std")
    if not isinstance(std_d, dict) or std_d.get("mass") is None:
        return np.full((10, 10), np.nan)
    inertia = std_d.get("inertia") or {}
    std = np.array([std_d["mass"], *(std_d.get("com") or [None] * 3), *(inertia.get(k) for k in INERTIA_KEYS)],
                   dtype=float)
    jinv = np.linalg.pinv(readable_jacobian(phi))
    return jinv @ np.diag(np.nan_to_num(std, nan=0.0) ** 2) @ jinv.T


HISTORY_ROWS_IN_FILE = 100   # payload.yaml keeps the convergence history this short: a person reads the file too


def history_to_file(history: dict) -> dict:
    """An online method's history {t, phi, std} for payload.yaml: at most HISTORY_ROWS_IN_FILE rows, evenly spaced,
    the last one kept (the report draws the convergence from it), 6 significant digits, NaN as null."""
    t = np.asarray(history["t"], dtype=float)
    rows = np.unique(np.round(np.linspace(0, t.size - 1, min(t.size, HISTORY_ROWS_IN_FILE))).astype(int))
    short = lambda x: float(f"{x:.6g}") if np.isfinite(x) else None  # noqa: E731
    return {"t": [short(v) for v in t[rows]],
            **{key: [[short(v) for v in row] for row in np.asarray(history[key], dtype=float)[rows]]
               for key in ("phi", "std")}}


def history_from_file(d) -> dict | None:
    """payload.yaml's history back as arrays (None when absent)."""
    if not d:
        return None
    history = {key: np.array(d[key], dtype=float) for key in ("t", "phi", "std")}
    if history["phi"].shape != (history["t"].size, 10) or history["std"].shape != history["phi"].shape:
        raise ValueError("history's t, phi and std do not have one row of 10 per time")
    return history


class Quality(str, Enum):
    """Whether the project stands behind an estimate (the rule: never a confident wrong answer).

    ok: nothing found against it. suspect: a check failed (model error, implausible scale, ...); the
    numbers are reported with the reasons but are not applied to a controller unless overridden.
    failed: the estimate must not be used at all."""

    OK = "ok"
    SUSPECT = "suspect"
    FAILED = "failed"


@dataclass
class PayloadEstimate:
    frame: str
    phi: np.ndarray                        # (10,) in the payload frame, about its origin
    covariance: np.ndarray                 # (10, 10) of phi; NaN rows/cols where not identifiable
    method: str
    identifiable: np.ndarray = field(default_factory=lambda: np.ones(10, dtype=bool))  # per entry of phi
    converged: bool = True
    convergence_time: float = float("nan")  # s of motion used until declared converged
    physically_consistent: bool = True     # of the raw estimate; False -> phi was projected
    # Note(code, text); plain strings from code not yet converted to codes read as INFO (Note.from_any)
    notes: list[Note | str] = field(default_factory=list)
    history: dict | None = None            # online methods: {"t": (K,), "phi": (K,10), "std": (K,10)}
    quality: Quality = Quality.OK
    quality_reasons: list[str] = field(default_factory=list)   # one sentence per failed check
    # [mass, CoM, inertia]: whether the recorded data determine them, judged from the covariance
    # against physical scales (finish.judge_determination); `identifiable` is the structural answer.
    determined: np.ndarray = field(default_factory=lambda: np.ones(3, dtype=bool))
    # Prior knowledge applied (payload/priors.py PayloadPrior.to_dict: bounding_box {min, max}, known_mass, its std),
    # and the numbers of READABLE order it rather than the motion determined ("mass", "com x", "inertia ixx", ...).
    prior: dict | None = None
    prior_pinned: list[str] = field(default_factory=list)
    # ... and those the box only bounds: the motion leaves them loose, the box limits them, nobody pins them.
    prior_bounded: list[str] = field(default_factory=list)
    # The parts of the prior given but not used ("bounding_box", "known_mass") and why: the data contradict them, their
    # σ is degenerate, or the box's sampler did not settle. The numbers above are then the data's own for that part.
    prior_not_applied: dict[str, str] = field(default_factory=dict)
    # Readable entries ("inertia ixx", ...) whose σ physical consistency (J ⪰ 0) narrowed without a box, with their σ
    # over the motion's own (payload/physical_posterior.py): those are not the motion's alone.
    physically_narrowed: dict[str, float] = field(default_factory=dict)

    def mark(self, quality: Quality, reason: str) -> None:
        """Lower the quality to `quality` (never raise it) and record why."""
        order = [Quality.OK, Quality.SUSPECT, Quality.FAILED]
        if order.index(quality) > order.index(self.quality):
            self.quality = quality
        self.quality_reasons.append(reason)

    # -- what people read -----------------------------------------------------------------------
    @property
    def mass(self) -> float:
        return float(self.phi[0])

    @property
    def com(self) -> np.ndarray:
        return to_mass_com_inertia(self.phi)[1]

    @property
    def inertia_about_com(self) -> np.ndarray:
        return to_mass_com_inertia(self.phi)[2]

    def readable_std(self) -> np.ndarray:
        """Standard deviations of readable_vector(phi); NaN where not identified (readable_identifiable)."""
        std = self.propagated_std()
        std[~self.readable_identifiable()] = np.nan
        return std

    def published_std(self) -> np.ndarray:
        """readable_std, but a CoM the motion identifies and has not determined to COM_STD_LIMIT keeps its σ: it is
        published (~/payload) as not identified with that σ, so that its numbers, which the message carries all the
        same, can be checked. With NaN there, the monitor's first re-estimate after a pick was published with quality
        ok and the CoM [20.5, -10.5, 65.8] mm (truth [20, -10, 60]) of σ NaN: its z σ was 8.4 mm, beyond the 5 mm
        limit (h190, h198). Not for no payload (a CoM of no mass means nothing) nor a CoM not identifiable."""
        std = self.readable_std()
        known = self.readable_identifiable()
        if known[0] and np.asarray(self.identifiable, dtype=bool)[:4].all() and not known[1:4].all() \
                and not has_note(self.notes, NoteCode.PAYLOAD_NO_PAYLOAD):
            std[1:4] = self.propagated_std()[1:4]
        return std

    def undetermined_com_text(self) -> str:
        """'CoM undetermined by this motion (σ x, y, z mm)' for a payload whose CoM is published as not identified
        (with its σ where published_std gives one: the rviz label and the monitor's log say it beside the mass), ''
        for a determined CoM or nothing carried."""
        known = self.readable_identifiable()
        if not known[0] or known[1:4].all() or self.mass == 0.0:
            return ""
        std = self.published_std()[1:4]
        return f"CoM {UNDETERMINED}" + (f" (σ {', '.join(f'{1e3 * s:.1f}' for s in std)} mm)"
                                        if np.all(np.isfinite(std)) else "")

    def propagated_std(self) -> np.ndarray:
        """Standard deviations of readable_vector(phi) by a numerical Jacobian of the conversion, whatever
        the data determine (unknown covariance entries count as 0)."""
        cov = np.where(np.isfinite(self.covariance), self.covariance, 0.0)
        jac = readable_jacobian(self.phi)
        return np.sqrt(np.maximum(np.diag(jac @ cov @ jac.T), 0.0))

    def readable_identifiable(self) -> np.ndarray:
        """Which of [mass, cx, cy, cz, ixx..izz] are identified: structurally (CoM needs m and m·c; inertia
        all ten) and by the recorded data (`determined`; the inertia about the CoM needs the CoM)."""
        ok = np.asarray(self.identifiable, dtype=bool)
        mass_ok, com_det, inertia_det = (bool(v) for v in np.asarray(self.determined, dtype=bool))
        com_ok = [bool(ok[0] and ok[1 + k] and mass_ok and com_det) for k in range(3)]
        inertia_ok = bool(ok.all() and all(com_ok) and inertia_det)
        return np.array([bool(ok[0]) and mass_ok, *com_ok] + [inertia_ok] * 6)

    def identified_entries(self) -> np.ndarray:
        """Per entry of phi: identifiable and determined by the data (what payload.yaml's `identifiable` says)."""
        det = np.asarray(self.determined, dtype=bool)
        return np.asarray(self.identifiable, dtype=bool) & np.array([det[0]] + [det[1]] * 3 + [det[2]] * 6)

    def summary(self) -> str:
        """Mass, CoM and inertia about the CoM for people, each ± σ, or why it is not given."""
        if has_note(self.notes, NoteCode.PAYLOAD_NO_PAYLOAD):
            return next(n.text for n in map(Note.from_any, self.notes) if n.code is NoteCode.PAYLOAD_NO_PAYLOAD)
        val, std, known = readable_vector(self.phi), self.readable_std(), self.readable_identifiable()
        with_std = bool(np.isfinite(self.covariance).any())   # a hand-written file or a message carries none

        def pm(s: float, fmt: str) -> str:
            return f" ± {s:{fmt}}" if with_std and np.isfinite(s) else ""

        mass = f"mass {val[0]:.4f}{pm(std[0], '.4f')} kg" if known[0] else f"mass {UNDETERMINED}"
        # The CoM in millimetres, as people measure a tool (payload.yaml stays in metres).
        com = ("CoM [" + ", ".join(millimetres(v, s if with_std else float("nan")) if k else "?"
                                   for v, s, k in zip(val[1:4], std[1:4], known[1:4])) + "] mm"
               if any(known[1:4]) else f"CoM {UNDETERMINED}")
        inertia = ("inertia about the CoM [" + ", ".join(f"{k} {v:.4g}{pm(s, '.2g')}" for k, v, s in
                                                          zip(INERTIA_KEYS, val[4:], std[4:])) + "] kg·m²"
                   if known[4] else f"inertia {UNDETERMINED}")
        return f"{mass}, {com}, {inertia}"

    def prior_not_applied_text(self) -> str:
        """One sentence naming each part of the prior that was given and not used, and why ('' when none)."""
        return "; ".join(f"{part.replace('_', ' ')} given but NOT applied: {why}"
                         for part, why in self.prior_not_applied.items())

    # -- payload.yaml -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        num = lambda x: float(x) if np.isfinite(x) else None  # noqa: E731
        return {
            **readable_dict(self.frame, readable_vector(self.phi), self.readable_std(), self.readable_identifiable()),
            "method": self.method,
            "converged": bool(self.converged),
            "convergence_time": num(self.convergence_time),
            "physically_consistent": bool(self.physically_consistent),
            "identifiable": {name: bool(v) for name, v in zip(PARAM_NAMES, self.identified_entries())},
            "parameters_about_frame_origin": [float(v) for v in self.phi],
            "quality": {"status": self.quality.value, "reasons": list(self.quality_reasons)},
            "notes": [Note.from_any(n).to_dict() for n in self.notes],
            # φ's covariance: read back, the σ above are the file's (from_dict). Unknown entries (NaN) as 0: which
            # entries are known is `identifiable`'s to say.
            "covariance_about_frame_origin": np.nan_to_num(self.covariance, nan=0.0).tolist(),
            # What was known before the motion, and what it (not the motion) determined.
            **({"prior": {**self.prior, "pinned": list(self.prior_pinned), "bounded": list(self.prior_bounded),
                          **({"not_applied": dict(self.prior_not_applied)} if self.prior_not_applied else {})}}
               if self.prior else {}),
            **({"physically_narrowed": dict(self.physically_narrowed)} if self.physically_narrowed else {}),
            # Last: the convergence over the motion of an online method (what `payload-id report` draws).
            **({"history": history_to_file(self.history)} if self.history else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> PayloadEstimate:
        """Read payload.yaml (also a hand-written one with only frame, mass, com, inertia; notes as {code, text}
        or, from files written before notes had codes, plain strings), with the covariance its σ come from
        (covariance_from_file) and the online history when the file carries them."""
        try:
            if d.get("parameters_about_frame_origin"):
                phi = np.array(d["parameters_about_frame_origin"], dtype=float)
                if phi.shape != (10,):
                    raise ValueError(f"parameters_about_frame_origin has {phi.size} entries, not 10")
            else:
                inertia = d.get("inertia") or {}
                if not isinstance(inertia, dict):
                    raise ValueError(f"inertia is {inertia!r:.40}, not a mapping {{ixx, ixy, ixz, iyy, iyz, izz}}")
                ic = np.zeros((3, 3))
                for k, (i, j) in _I_INDEX.items():
                    ic[i, j] = ic[j, i] = float(inertia.get(k) or 0.0)
                phi = from_mass_com_inertia(float(d["mass"]), _com_from_file(d.get("com", [0, 0, 0])), ic)
            ident = d.get("identifiable")
            identifiable = (np.array([bool(ident[n]) for n in PARAM_NAMES]) if ident else np.ones(10, dtype=bool))
            quality_d = d.get("quality") or {}   # absent in files written before the quality field
            if not isinstance(quality_d, dict):
                raise ValueError(f"quality is {quality_d!r}, not {{status, reasons}}")
            quality = Quality(quality_d.get("status", Quality.OK.value))
            covariance = covariance_from_file(d, phi)
            history = history_from_file(d.get("history"))
            ct = d.get("convergence_time")
            convergence_time = float("nan") if ct is None else float(ct)
            notes: list[Note | str] = [Note.from_any(n) for n in d.get("notes") or []]
            prior_d = d.get("prior") or None
            if prior_d is not None and not isinstance(prior_d, dict):
                raise ValueError(f"prior is {prior_d!r}, not {{bounding_box, known_mass, known_mass_std, pinned}}")
            prior = ({k: v for k, v in prior_d.items() if k not in ("pinned", "bounded", "not_applied")}
                     if prior_d else None)
            pinned = [str(p) for p in (prior_d or {}).get("pinned") or []]
            bounded = [str(p) for p in (prior_d or {}).get("bounded") or []]
            not_applied = (prior_d or {}).get("not_applied") or {}
            if not isinstance(not_applied, dict):
                raise ValueError(f"prior.not_applied is {not_applied!r:.40}, not {{part: reason}}")
            narrowed = d.get("physically_narrowed") or {}
            if not isinstance(narrowed, dict):
                raise ValueError(f"physically_narrowed is {narrowed!r:.40}, not {{entry: σ ratio}}")
        except (KeyError, TypeError, ValueError, RuntimeError) as err:   # RuntimeError: pinocchio, negative inertia
            raise PayloadIdError(f"payload file is malformed ({err})",
                                 "give frame, mass, com [x,y,z] and inertia {ixx..izz} as payload-id writes them",
                                 ) from err
        return cls(frame=str(d.get("frame", "")), phi=phi, covariance=covariance, history=history,
                   method=str(d.get("method", "given")), identifiable=identifiable,
                   converged=bool(d.get("converged", True)), convergence_time=convergence_time,
                   physically_consistent=bool(d.get("physically_consistent", True)), notes=notes,
                   quality=quality, quality_reasons=[str(r) for r in quality_d.get("reasons") or []],
                   prior=prior, prior_pinned=pinned, prior_bounded=bounded,
                   prior_not_applied={str(k): str(v) for k, v in not_applied.items()},
                   physically_narrowed={str(k): float(v) for k, v in narrowed.items()})
