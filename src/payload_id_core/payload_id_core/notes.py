"""Notes a result carries: a machine-readable code for programs, a sentence for people.

Commands print the text; programs (the CLI's decisions, the nodes, tests) act on the code, never on
the wording, so a sentence can be improved without breaking a caller. Codes are dotted
`<layer>.<what>` names, grouped here so the full vocabulary is visible in one place; add a member
when a new kind of note is introduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable


class NoteCode(str, Enum):
    """Every kind of note the core emits. The value is what payload.yaml / robot.yaml store."""

    INFO = "info"                                   # a plain remark; also what older files' notes read as

    # -- payload layer: offline methods (payload/methods/) and the finishing path (payload/finish.py) --
    PAYLOAD_MEASURED_SIGNALS = "payload.measured_signals"      # no command recorded: measured motion used
    PAYLOAD_RESIDUAL = "payload.residual"                      # the fit's torque residual std per joint
    PAYLOAD_ROBOT_REIDENTIFIED = "payload.robot_reidentified"  # khalil-2: the loaded robot's re-identification
    PAYLOAD_UNLOADED_REFERENCE = "payload.unloaded_reference"  # what the unloaded torques / gravity came from
    PAYLOAD_STATIC_SAMPLES = "payload.static_samples"          # gaz-static: static samples and poses used
    PAYLOAD_ROW_SPACE = "payload.row_space"                    # gaz-static: solved in the static regressor's row space
    PAYLOAD_STICTION = "payload.stiction"                      # gaz-static: friction at rest in the uncertainty
    PAYLOAD_LOAD_FRICTION = "payload.load_friction"            # load-dependent Coulomb μ per joint estimated
    PAYLOAD_FRICTION_CHANGE = "payload.friction_change"        # Δφ_f under load estimated
    PAYLOAD_NOT_IDENTIFIABLE = "payload.not_identifiable"      # entries fixed to the prior / not determined
    PAYLOAD_MODEL_ERROR = "payload.model_error"                # residual RMS / unloaded identification RMS
    PAYLOAD_MODEL_ERROR_HIGH = "payload.model_error_high"      # that ratio above the limit: std understates
    PAYLOAD_NOT_CONVERGED = "payload.not_converged"            # online method run offline did not converge
    PAYLOAD_PROJECTED = "payload.projected"                    # raw estimate inconsistent: projected
    PAYLOAD_ONLINE_PROGRESS = "payload.online.progress"      # online: samples and motion fed, the convergence rule


@dataclass(frozen=True)
class Note:
    code: NoteCode
    text: str

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict:
        return {"code": self.code.value, "text": self.text}

    @classmethod
    def from_any(cls, item: "Note | str | dict") -> "Note":
        """A note as stored: {code, text}; a bare string (files written before codes existed) reads as INFO."""
        if isinstance(item, Note):
            return item
        if isinstance(item, dict):
            try:
                code = NoteCode(str(item.get("code", NoteCode.INFO.value)))
            except ValueError:
                code = NoteCode.INFO  # a code from a newer release: keep the text, forget the code
            return cls(code, str(item.get("text", "")))
        return cls(NoteCode.INFO, str(item))


def has_note(notes: Iterable[Note | str], code: NoteCode) -> bool:
    return any(Note.from_any(n).code is code for n in notes)


def notes_with(notes: Iterable[Note | str], code: NoteCode) -> list[Note]:
    """The notes carrying `code` (plain strings, not yet converted by their layer, read as INFO)."""
    return [note for note in map(Note.from_any, notes) if note.code is code]
