"""The layout of robot.yaml's per-run, per-joint records (effort.gain_check: gain_spread.py; friction_offset_drift:
offset_spread.py). Both hold the held-out runs a measurement was made on and, per field, one value per run for every
joint (written by per_run_dict / per_joint_dict, read by the read_ functions):

    runs: [<source>, ...]
    <field>: {<joint>: [<value of run 1>, <value of run 2>, ...], ...}

What a hand edit breaks (a key taken out, a run taken out of `runs` and not out of the lists, a value that is not a
number, the record's own check of its values) is one line naming the file, the record and the fix
("<file>: <record> is not valid (<what>); <fix>"): the command line exits 2 on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from payload_id_core.errors import PayloadIdError


@contextmanager
def reading_record(source: str, record: str, fix: str) -> Iterator[None]:
    """Any fault met reading `record` of the file `source` (a missing key, a wrong type or count, the dataclass's own
    check, which does not know the file) as the one PayloadIdError the module docstring gives."""
    try:
        yield
    except (KeyError, TypeError, ValueError) as err:
        raise PayloadIdError(f"{source}: {record} is not valid ({type(err).__name__}: {err})", fix) from err
    except PayloadIdError as err:
        raise PayloadIdError(f"{source}: {record} is not valid ({err.problem})", err.fix) from err


def run_sources(d: Mapping, what: str) -> list[str]:
    """The record's `runs`, a list of the runs' sources (`what` names them in the error): a string would otherwise be
    read as one run per character."""
    if not isinstance(d["runs"], list):
        raise TypeError(f"runs is {type(d['runs']).__name__}, not a list of {what}")
    return [str(r) for r in d["runs"]]


def read_per_run(d: Mapping, key: str, joint_names: Sequence[str], runs: int,
                      dtype: type = float) -> np.ndarray:
    """(runs, n) d[key][joint][run]. Every joint's list holds one value per run: a run taken out of `runs` by hand but
    not out of the lists (or the other way) would otherwise pair the wrong runs with the wrong values, or fail
    reshaping. With dtype bool every value is true or false (YAML's), not a number read as one."""
    for j in joint_names:
        values = d[key][j]
        if not isinstance(values, list) or len(values) != runs:
            raise ValueError(f"{key} of {j} holds {len(values) if isinstance(values, list) else 'no list'}"
                             f" value(s) for {runs} run(s)")
        if dtype is bool and not all(isinstance(v, bool) for v in values):
            raise ValueError(f"{key} holds a value that is not true or false")
    return np.array([d[key][j] for j in joint_names], dtype=dtype).T.reshape(runs, len(joint_names))


def read_per_joint(d: Mapping, key: str, joint_names: Sequence[str]) -> np.ndarray:
    """(n,) d[key][joint], one number per joint."""
    return np.array([d[key][j] for j in joint_names], dtype=float)


def per_run_dict(a: np.ndarray, joint_names: Sequence[str], kind: type = float) -> dict:
    """{joint: [value per run]} of (runs, n) `a`, as read_per_run reads it."""
    return {j: [kind(x) for x in a[:, i]] for i, j in enumerate(joint_names)}


def per_joint_dict(a: np.ndarray, joint_names: Sequence[str]) -> dict:
    """{joint: value} of (n,) `a`, as read_per_joint reads it."""
    return {j: float(x) for j, x in zip(joint_names, a)}
