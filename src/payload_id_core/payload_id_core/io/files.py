"""Writing output files all-or-nothing: a failed command never leaves half a file behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename."""
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class _Dumper(yaml.SafeDumper):
    """safe_dump plus Note, stored as {code, text} wherever it appears (results' notes lists)."""


_Dumper.add_representer(Note, lambda dumper, note: dumper.represent_dict(note.to_dict()))


def atomic_write_yaml(path: str | os.PathLike, data: dict) -> None:
    atomic_write_text(path, yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None))


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory that replaces `path` only if the block finishes without error.

    Used for rosbag2 output, which is a directory: a crash mid-write leaves no bag at `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_parent = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    tmp = tmp_parent / path.name
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp_parent, ignore_errors=True)


def read_yaml_mapping(path: str | os.PathLike, what: str, fix: str) -> dict:
    """Load a YAML file that must hold a mapping, or raise PayloadIdError naming `what` and `fix`.

    `what` names the file for the user ("robot file", "payload file"); `fix` says what to do when
    it is missing or malformed ("run payload-id identify-robot first").
    """
    path = Path(path)
    if not path.is_file():
        raise PayloadIdError(f"{what} {path} does not exist", fix)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise PayloadIdError(f"{what} {path} is not valid YAML ({err})", fix) from err
    if not isinstance(data, dict):
        raise PayloadIdError(f"{what} {path} holds no YAML mapping", fix)
    return data
