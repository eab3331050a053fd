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

    # -- ROS nodes (payload_id_ros) --
    GOAL_CANCELLED = "node.goal_cancelled"          # the identify goal was cancelled: the estimate is partial


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


def has_note(notes: Iterable[Note], code: NoteCode) -> bool:
    return any(n.code is code for n in notes)


def notes_with(notes: Iterable[Note], code: NoteCode) -> list[Note]:
    return [n for n in notes if n.code is code]
