"""Writing output files all-or-nothing: a failed command never leaves half a file behind.

Every output goes through a temporary file (or directory) beside the target, fsync and one rename,
so a reader sees the old file or the new one, never a mix. The new file gets the permissions a plain
`open(path, "w")` would give it (a replaced file keeps its mode, a new one 0666 minus the umask),
not mkstemp's private 0600. A target that cannot be written (a directory, a path under a regular
file, a read-only directory or file system) raises OutputNotWritable, which is both the bad input
the command line prints in one line and the OSError a ROS node catches.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from payload_id_core.errors import PayloadIdError
from payload_id_core.notes import Note

# A rosbag2 directory holds this file; atomic_directory replaces only such directories (or empty ones).
_BAG_MARKER = "metadata.yaml"


class OutputNotWritable(PayloadIdError, OSError):
    """The output path cannot be written; nothing was written and any existing file is untouched."""


def _refusal(path: Path, why: str) -> OutputNotWritable:
    return OutputNotWritable(f"cannot write {path}: {why}",
                             "choose an output path in a writable directory (e.g. --out ./result.yaml)")


def _process_umask() -> int:
    """The umask, read without changing it (os.umask sets it process-wide, racing other threads)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _new_file_mode(path: Path) -> int:
    """The mode `open(path, "w")` would leave: the replaced file's, or 0666 minus the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_process_umask()


def check_output_file(path: str | os.PathLike) -> Path:
    """Refuse, before any work, an output file path that is a directory or whose parent cannot hold it."""
    path = Path(path)
    if path.is_dir():
        raise _refusal(path, "it is a directory")
    _check_parent(path)
    return path


def check_output_directory(path: str | os.PathLike) -> Path:
    """Refuse, before any work, a bag output that would replace something that is not a bag (a file,
    a directory with other content) or whose parent cannot hold it."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise _refusal(path, "it is a file, and the output is a rosbag2 directory")
    if path.is_dir() and any(path.iterdir()) and not (path / _BAG_MARKER).is_file():
        raise _refusal(path, "it is a directory that is not a rosbag2 bag (no metadata.yaml), and it would "
                             "be replaced")
    _check_parent(path)
    return path


def _check_parent(path: Path) -> None:
    """The nearest existing ancestor must be a writable directory (missing ones are created)."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise _refusal(path, f"{ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise _refusal(path, f"the directory {ancestor} is not writable")


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _refusal(path, err.strerror or str(err)) from err


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (a crash right after it must not bring the old file back)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename."""
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory, fsync and a rename."""
    path = check_output_file(path)
    _make_parent(path)
    mode = _new_file_mode(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise _refusal(path, err.strerror or str(err)) from err
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and not isinstance(err, PayloadIdError):
            raise _refusal(path, err.strerror or str(err)) from err
        raise
    _fsync_directory(path.parent)


# libyaml's emitter when PyYAML has it: the same SafeRepresenter makes the same nodes (numbers, keys, order), only a
# long string may fold at another place; ~4x faster (the monitor's result file, 15 kB: 12.9 -> 3.3 ms of process time,
# which the monitor pays at every save of its state, h197).
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):
    """safe_dump plus Note, stored as {code, text} wherever it appears (results' notes lists), and a str subclass
    (a checked PayloadFrame, a Choice enum) stored as the plain string it is."""


_Dumper.add_representer(Note, lambda dumper, note: dumper.represent_dict(note.to_dict()))
_Dumper.add_multi_representer(str, lambda dumper, text: dumper.represent_str(str.__str__(text)))


def atomic_write_yaml(path: str | os.PathLike, data: dict) -> None:
    atomic_write_text(path, yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None))


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory that replaces `path` only if the block finishes without error.

    Used for rosbag2 output, which is a directory: a crash mid-write leaves no bag at `path`, and an
    existing bag is moved aside (not deleted) until the new one is in place. Only a bag or an empty
    directory is ever replaced (check_output_directory).
    """
    path = check_output_directory(path)
    _make_parent(path)
    try:
        tmp_parent = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    except OSError as err:
        raise _refusal(path, err.strerror or str(err)) from err
    tmp = tmp_parent / path.name
    try:
        yield tmp
        try:
            if path.exists():
                os.replace(path, tmp_parent / f"{path.name}.old")
            os.replace(tmp, path)
        except OSError as err:
            raise _refusal(path, err.strerror or str(err)) from err
        _fsync_directory(path.parent)
    finally:
        shutil.rmtree(tmp_parent, ignore_errors=True)


# libyaml's composer recurses in C once per nesting level and crashes the process (a segmentation fault, no
# exception) some ten thousand levels down; below C_YAML_MAX_DEPTH it is safe (5000 levels were read here).
C_YAML_MAX_DEPTH = 2000


def yaml_depth_bound(text: str) -> int:
    """An upper bound of the nesting depth of the YAML document `text`: a flow level opens with [ or {, and a block
    level takes at least one character of its line (indentation or a compact '- ', '? ', ': ' indicator)."""
    return text.count("[") + text.count("{") + max(map(len, text.splitlines()), default=0) + 1


def parse_yaml(text: str):
    """yaml.safe_load(text), read by libyaml when PyYAML has it and the document cannot nest deep enough to crash
    it: the same SafeConstructor builds the same values, about 9x faster (a UR10 robot.yaml: 0.27 s -> 0.03 s).
    A document libyaml refuses is read again by the Python parser, so errors are PyYAML's own as before."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None and yaml_depth_bound(text) <= C_YAML_MAX_DEPTH:
        try:
            return yaml.load(text, Loader=loader)   # noqa: S506 - CSafeLoader is the safe loader, in C
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def read_yaml_mapping(path: str | os.PathLike, what: str, fix: str) -> dict:
    """Load a YAML file that must hold a mapping, or raise PayloadIdError naming `what` and `fix`.

    `what` names the file for the user ("robot file", "payload file"); `fix` says what to do when
    it is missing or malformed ("run payload-id identify-robot first").
    """
    path = Path(path)
    if path.is_dir():
        raise PayloadIdError(f"{what} {path} is a directory", fix)
    if not path.is_file():
        raise PayloadIdError(f"{what} {path} does not exist", fix)
    try:
        data = parse_yaml(path.read_text())
    except RecursionError as err:
        # PyYAML's composer recurses once per level: a few thousand nested [ or { exhaust Python's stack.
        raise PayloadIdError(f"{what} {path} nests deeper than YAML can be read here (thousands of levels)",
                             fix) from err
    except UnicodeDecodeError as err:
        raise PayloadIdError(f"{what} {path} is not a text file ({err.reason} at byte {err.start})", fix) from err
    except OSError as err:
        raise PayloadIdError(f"{what} {path} cannot be read ({err.strerror or err})", fix) from err
    except yaml.YAMLError as err:
        raise PayloadIdError(f"{what} {path} is not valid YAML ({_one_line(err)})", fix) from err
    if not isinstance(data, dict):
        raise PayloadIdError(f"{what} {path} holds no YAML mapping", fix)
    depth = yaml_depth(data)
    if depth > MAX_YAML_DEPTH:
        raise PayloadIdError(f"{what} {path} nests {depth} levels deep (no file of payload_id nests more than "
                             f"{MAX_YAML_DEPTH})", fix)
    return data


# Deepest nesting a file of this project may have: robot.yaml's deepest entries are 4 levels down. A deeper
# document is not one of ours, and code reading it (or writing it back) need not recurse through it.
MAX_YAML_DEPTH = 32


def yaml_depth(data) -> int:
    """How many containers deep `data` nests (a scalar 0, {} or [] 1), walked without recursion; a container
    met again (a YAML alias) is counted once."""
    deepest, seen = 0, set()
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in seen:
            continue
        seen.add(id(node))
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _one_line(err: Exception) -> str:
    """A YAML parser error squeezed onto one line (the command line prints one line per refusal)."""
    return " ".join(str(err).split())
