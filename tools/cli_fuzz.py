"""Property-based fuzzing of the offline command line's inputs (issue 32 item 3), shared by test/test_cli_fuzz.py
(a bounded number of examples in `make test`) and bench/fuzz.py (many more, figures in JSON).

A case is one input of a good run mutated, then one `payload-id` command run in-process on it:

  * recordings (a rosbag2 bag of the planar robot, a UR CSV pair of a synthetic UR10e): one field (positions,
    velocities, efforts, time stamps, the commanded positions) made huge, tiny, NaN, infinite, constant,
    reversed, duplicated or truncated at a drawn place;
  * YAML files (robot.yaml, payload.yaml, trajectory.yaml): an entry deleted, retyped (null, string, number,
    bool, list, mapping, NaN), a list lengthened or shortened, nested tens to thousands of levels deep, or the
    text cut short.

The contract (docs/design.md, command line): exit 0 with its output written and readable, exit 2 with one line
on stderr and the output as it was, or (identify-payload) exit 1 with the output written and marked failed;
never an exception escaping (a traceback), never a half-written or stray file. `run_case` judges one case and
names the defect's class when it breaks the contract.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import resource
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hypothesis import strategies as st

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.excitation.fourier import FourierTrajectory, rest_basis
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.signals.recording import Recording
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

PAYLOAD = {"frame": "tool0", "mass": 0.5, "com": [0.01, 0.0, 0.02],
           "inertia": {"ixx": 0.001, "ixy": 0.0, "ixz": 0.0, "iyy": 0.001, "iyz": 0.0, "izz": 0.001}}
UR_GAIN = 10.0          # the synthetic UR CSV's efforts are currents: torque / UR_GAIN


@dataclass
class FuzzInputs:
    """Good inputs every case starts from (small: each command on them takes well under a second)."""

    root: Path
    bag: Path                   # planar_2r run with its commanded trajectory
    robot: Path                 # robot.yaml identified from it
    payload: Path
    trajectory: Path
    ur_unloaded: Path           # UR CSV pair of one synthetic UR10e excitation, without / with 2 kg
    ur_loaded: Path
    ur_robot: Path              # robot.yaml identified from the unloaded CSV
    recording: Recording = field(repr=False)        # the bag as read
    ur_rows: np.ndarray = field(repr=False)         # the loaded UR CSV's numbers


def _ur_csv(path: Path, recording: Recording, rest_s: float, load_rest_s: float = 0.0) -> np.ndarray:
    """`recording` as a UR CSV (31 columns; currents = torque / UR_GAIN) with `rest_s` s at rest before it."""
    j = recording.joints
    dt = float(np.median(np.diff(j.t)))
    pad = int(round(rest_s / dt))
    end_pad = int(round(load_rest_s / dt)) + 10
    t = np.arange(pad + j.t.size + end_pad) * dt + 100.0
    rows = np.zeros((t.size, 31))
    rows[:, 0] = t
    q = np.vstack([np.repeat(j.q[:1], pad, 0), j.q, np.repeat(j.q[-1:], end_pad, 0)])
    tau = np.vstack([np.repeat(j.tau[:1], pad, 0), j.tau, np.repeat(j.tau[-1:], end_pad, 0)])
    rows[:, 1:7] = q
    rows[:, 7:13] = np.gradient(q, dt, axis=0)
    rows[:, 13:19] = tau / UR_GAIN
    write_csv_rows(path, rows)
    return rows


def write_csv_rows(path: Path, rows: np.ndarray) -> Path:
    path.write_text("\n".join(",".join(f"{v:.9g}" for v in r) for r in rows) + ("\n" if len(rows) else ""))
    return path


def make_inputs(root: Path) -> FuzzInputs:
    root.mkdir(parents=True, exist_ok=True)
    model = RobotModel.from_urdf("planar_2r")
    t, q, qd, qdd = sum_of_sines(model, 4.0, 100.0, seed=1)
    bag = write_bag(root / "bag", synthetic_recording(model, t, q, qd, qdd, noise_std=0.02, seed=1))
    robot = root / "robot.yaml"
    _must(["identify-robot", "--urdf", "planar_2r", "--bag", str(bag), "--friction", "linear", "--out", str(robot)])
    payload = root / "payload.yaml"
    payload.write_text(yaml.safe_dump(PAYLOAD))
    z = np.random.default_rng(0).normal(size=(model.n, rest_basis(3).shape[1])) * 0.05
    trajectory = root / "trajectory.yaml"
    FourierTrajectory.from_rest_coordinates(model.joint_names, 0.5, np.zeros(model.n), z, 3, 2.0).save(trajectory)

    ur = RobotModel.from_urdf("ur10e")
    t, q, qd, qdd = sum_of_sines(ur, 12.0, 100.0, seed=2, harmonics=3)
    un_rec = synthetic_recording(ur, t, q, qd, qdd, noise_std=0.05, seed=2)
    load = (from_mass_com_inertia(2.0, [0.0, 0.0, 0.05], np.eye(3) * 0.004), ur.default_payload_frame)
    lo_rec = synthetic_recording(ur, t, q, qd, qdd, noise_std=0.05, seed=3, payload=load)
    ur_unloaded, ur_loaded = root / "ur_unloaded.csv", root / "ur_loaded.csv"
    _ur_csv(ur_unloaded, un_rec, 1.0)
    ur_rows = _ur_csv(ur_loaded, lo_rec, 1.7, 0.6)
    ur_robot = root / "ur_robot.yaml"
    _must(["identify-robot", "--urdf", "ur10e", "--csv-ur", str(ur_unloaded), "--friction", "linear",
           "--effort-scale", str(UR_GAIN), "--out", str(ur_robot)])
    return FuzzInputs(root, bag, robot, payload, trajectory, ur_unloaded, ur_loaded, ur_robot,
                      read_bag(bag), ur_rows)


def _must(argv: list[str]) -> None:
    with captured_stderr() as err:
        code = cli_main(argv)
    if code != 0:
        raise RuntimeError(f"fuzz inputs: {' '.join(argv)} exited {code}: {err.text}")


# -- mutations -----------------------------------------------------------------------------------------------

VALUE_KINDS = ("huge", "large", "tiny", "nan", "inf", "zero", "constant", "reversed", "duplicated", "truncated",
               "negated")
HUGE = (1e30, -1e30, 1e300, 1e15, -1e6, 1e6)
LARGE = (50.0, -200.0, 1e3, 3e3)        # within the plausibility bounds of some joints, beyond the usual
TINY = (1e-300, 5e-324, -1e-12, 1e-9)


@st.composite
def value_mutation(draw, fields: tuple[str, ...]) -> dict:
    """One mutation of a recording's numbers: which field, what, where (fractions of the length, a joint)."""
    kind = draw(st.sampled_from(VALUE_KINDS))
    return {"field": draw(st.sampled_from(fields)), "kind": kind,
            "at": draw(st.floats(0.0, 1.0)), "to": draw(st.floats(0.0, 1.0)), "joint": draw(st.integers(0, 5)),
            "value": draw(st.sampled_from({"huge": HUGE, "large": LARGE, "tiny": TINY}.get(kind, (0.0,)))),
            "whole": draw(st.booleans())}


def _mutate_array(a: np.ndarray, m: dict, along_time: bool = True) -> np.ndarray:
    """`a` (N,) or (N, n) after mutation `m` (rows are samples)."""
    a = np.array(a, dtype=float, copy=True)
    n = a.shape[0]
    if n == 0:
        return a
    k = min(int(m["at"] * n), n - 1)
    k2 = max(k + 1, min(int(m["to"] * n), n))
    col = (slice(None),) if a.ndim == 1 else (slice(None), m["joint"] % a.shape[1])
    rows = slice(None) if m["whole"] else slice(k, k2)
    kind = m["kind"]
    if kind in ("huge", "large", "tiny"):
        a[(k,) + col[1:]] = m["value"]
    elif kind == "nan":
        a[(k,) + col[1:]] = math.nan
    elif kind == "inf":
        a[(k,) + col[1:]] = math.inf
    elif kind == "zero":
        a[(rows,) + col[1:]] = 0.0
    elif kind == "constant":
        a[(rows,) + col[1:]] = a[(k,) + col[1:]]
    elif kind == "negated":
        a[(rows,) + col[1:]] *= -1.0
    elif kind == "reversed":
        a[(rows,) + col[1:]] = a[(rows,) + col[1:]][::-1]
    elif kind == "duplicated" and along_time:
        a = np.concatenate([a[:k2], a[k:]])
    elif kind == "truncated" and along_time:
        a = a[:k] if not m["whole"] else a[k:]
    return a


def mutated_recording(recording: Recording, m: dict) -> Recording:
    """A copy of `recording` with one field mutated; duplication and truncation apply to every per-sample array
    (time included), as a logger that repeated or lost samples would leave them."""
    r = copy.deepcopy(recording)
    j = r.joints
    kind, fld = m["kind"], m["field"]
    if fld == "commanded":
        for c in r.commanded:
            c.positions = _mutate_array(c.positions, m, along_time=False)
        return r
    if fld == "time_from_start":
        for c in r.commanded:
            c.time_from_start = _mutate_array(c.time_from_start, m, along_time=False)
        return r
    if fld == "qd" and j.qd is None:
        return r
    if kind in ("duplicated", "truncated"):
        n = j.t.size
        idx = np.arange(n)
        kept = _mutate_array(idx.astype(float), m).astype(int)
        j.t = j.t[kept]
        if fld != "t":      # duplicated/truncated stamps with their samples
            j.q, j.tau = j.q[kept], j.tau[kept]
            j.qd = None if j.qd is None else j.qd[kept]
        else:               # the stamps alone shifted against the samples: equal lengths, repeated stamps
            j.t = np.resize(j.t, n) if j.t.size else np.zeros(0)
            if j.t.size != n:
                j.t = np.zeros(n)
        if j.temperature is not None:
            j.temperature = j.temperature[kept] if fld != "t" else j.temperature
        return r
    if fld == "t":
        j.t = _mutate_array(j.t, m)
    else:
        setattr(j, fld, _mutate_array(getattr(j, fld), m))
    return r


def mutated_csv_rows(rows: np.ndarray, m: dict) -> np.ndarray:
    """The UR CSV's rows with one column group mutated (time, positions, velocities, currents)."""
    groups = {"t": (0, 1), "q": (1, 7), "qd": (7, 13), "tau": (13, 19)}
    a, b = groups[m["field"]]
    if m["kind"] in ("duplicated", "truncated"):
        idx = _mutate_array(np.arange(rows.shape[0], dtype=float), m).astype(int)
        if m["field"] == "t":
            out = rows.copy()
            out[:, 0] = np.resize(rows[idx, 0], rows.shape[0]) if idx.size else 0.0
            return out
        return rows[idx]
    out = rows.copy()
    block = out[:, a:b]
    out[:, a:b] = _mutate_array(block if b - a > 1 else block[:, 0], m).reshape(block.shape)
    return out


TYPE_SWAPS: tuple[Any, ...] = (None, "", "abc", -1, 0, 1e308, math.nan, True, [], {}, [1.0, 2.0], {"a": 1}, "1e3",
                                12345678901234567890)
YAML_KINDS = ("delete", "retype", "wrap", "shorten", "lengthen", "deep", "cut_text", "add_key")
DEEP_TOKEN = "__fuzz_deep__"


@st.composite
def yaml_mutation(draw) -> dict:
    return {"kind": draw(st.sampled_from(YAML_KINDS)), "path": draw(st.lists(st.integers(0, 50), min_size=0,
                                                                            max_size=4)),
            "swap": draw(st.sampled_from(TYPE_SWAPS)), "depth": draw(st.sampled_from((3, 40, 300, 5000))),
            "cut": draw(st.floats(0.0, 1.0))}


def _walk(doc, path: list[int]) -> tuple[Any, Any]:
    """The container and key `path` (indices picked modulo the sizes) leads to in `doc`."""
    parent: Any = None
    key: Any = None
    node = doc
    for step in path:
        if isinstance(node, dict) and node:
            keys = list(node)
            parent, key = node, keys[step % len(keys)]
        elif isinstance(node, list) and node:
            parent, key = node, step % len(node)
        else:
            break
        node = parent[key]
    return parent, key


def mutated_yaml_text(text: str, m: dict) -> str:
    """The YAML document `text` with one mutation (its structure, a type or its depth) applied."""
    if m["kind"] == "cut_text":
        return text[: int(m["cut"] * len(text))]
    doc = yaml.safe_load(text)
    parent, key = _walk(doc, m["path"])
    if parent is None:
        parent, key = doc, next(iter(doc))
    kind = m["kind"]
    if kind == "delete":
        del parent[key]
    elif kind == "retype":
        parent[key] = m["swap"]
    elif kind == "wrap":
        parent[key] = [parent[key]]
    elif kind in ("shorten", "lengthen") and isinstance(parent[key], list):
        parent[key] = parent[key][:-1] if kind == "shorten" else parent[key] + parent[key][-1:] + [0.0]
    elif kind in ("shorten", "lengthen"):
        parent[key] = [] if kind == "shorten" else [parent[key], parent[key]]
    elif kind == "deep":
        parent[key] = DEEP_TOKEN
    elif kind == "add_key" and isinstance(parent, dict):
        parent[f"unknown_{key}"] = m["swap"]
    out = yaml.safe_dump(doc, sort_keys=False)
    d = m["depth"]
    return out.replace(DEEP_TOKEN, "[" * d + "1" + "]" * d)


# -- running a case ------------------------------------------------------------------------------------------

@dataclass
class Captured:
    text: str = ""


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """stderr of the code run inside, Python's and C's (MuJoCo, urdfdom print from C) alike."""
    out = Captured()
    py = io.StringIO()
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            with contextlib.redirect_stderr(py), contextlib.redirect_stdout(io.StringIO()):
                yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.text = tmp.read().decode(errors="replace") + py.getvalue()


@dataclass(frozen=True)
class Outcome:
    code: int | None
    err: str
    defect: str | None          # the class of the broken contract, None when the case was clean

    @property
    def clean(self) -> bool:
        return self.defect is None


def _snapshot(path: Path):
    if path.is_file():
        return ("file", path.read_bytes(), path.stat().st_mtime_ns)
    return ("dir" if path.is_dir() else "absent", None, None)


def _readable(out: Path) -> bool:
    if out.suffix == ".yaml":
        try:
            return isinstance(yaml.safe_load(out.read_text()), dict)
        except (OSError, yaml.YAMLError):
            return False
    if out.suffix == ".png":
        return out.is_file() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return (out / "metadata.yaml").is_file()      # a bag


# A process run (`outside`): the wall-clock bound of one command, far above a good run's few seconds.
OUTSIDE_TIMEOUT_S = 300
# Address space one case may add (in-process: to the process's own; outside: in all). A good case needs well
# under 1 GiB; an input that makes a command allocate without bound fails as MemoryError instead of the machine
# (one mutated case on the code before issue 32 grew to 21 GB and met the kernel's OOM killer).
CASE_ADDRESS_SPACE = 4 * 1024**3


@contextlib.contextmanager
def bounded_memory() -> Iterator[None]:
    """The process's address space limited to what it uses now plus CASE_ADDRESS_SPACE, restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        in_use = int(f.read().split()[0]) * resource.getpagesize()
    limit = in_use + CASE_ADDRESS_SPACE
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _bounded_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 * CASE_ADDRESS_SPACE, 2 * CASE_ADDRESS_SPACE))


def run_case(argv: list[str], out: Path, outside: bool = False) -> Outcome:
    """Run `payload-id argv` (its --out is `out`) in-process, or as its own process when `outside` (the exit code
    and stderr a user sees), and judge it by the contract (module docstring)."""
    before = _snapshot(out)
    if outside:
        try:
            proc = subprocess.run([sys.executable, "-m", "payload_id_core.cli.main", *argv], capture_output=True,
                                  text=True, timeout=OUTSIDE_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  preexec_fn=_bounded_child)
        except subprocess.TimeoutExpired:
            return Outcome(None, "", f"no end within {OUTSIDE_TIMEOUT_S} s")
        code, text = proc.returncode, proc.stderr
        if "Traceback" in text:
            last = [line for line in text.strip().splitlines() if line.strip()][-1]
            return Outcome(code, text, f"traceback {last.split(':')[0]}")
        return _judged(code, text, out, before)
    try:
        with captured_stderr() as err, bounded_memory():
            code = cli_main(argv)
    except BaseException as exc:      # noqa: BLE001 - anything escaping is the defect being looked for
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f for f in reversed(frames) if "payload_id" in f.filename), frames[-1] if frames else None)
        at = f" in {Path(where.filename).name}:{where.name}" if where else ""
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:500], f"traceback {type(exc).__name__}{at}")
    return _judged(code, err.text, out, before)


def _judged(code: int, text: str, out: Path, before) -> Outcome:
    stray = [p.name for p in out.parent.iterdir() if p.name.startswith(".")] if out.parent.is_dir() else []
    if "Traceback" in text:
        return Outcome(code, text, "traceback printed")
    if stray:
        return Outcome(code, text, "stray temporary file")
    if code == 0:
        return Outcome(code, text, None if _readable(out) else "exit 0 without a readable output")
    if code == 2:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if not 1 <= len(lines) <= 2:
            return Outcome(code, text, f"refusal in {len(lines)} lines")
        if _snapshot(out) != before:
            return Outcome(code, text, "output touched by a refusal")
        return Outcome(code, text, None)
    if code == 1 and out.suffix == ".yaml" and _readable(out):
        status = (yaml.safe_load(out.read_text()).get("quality") or {}).get("status")
        return Outcome(code, text, None if status == "failed" else f"exit 1 with quality {status}")
    return Outcome(code, text, f"exit {code}")


# -- the targets: which input is mutated, which command reads it ----------------------------------------------

Mutations = dict | list[dict]          # one mutation, or several applied in turn
Case = Callable[[FuzzInputs, Mutations, Path, bool], Outcome]


@dataclass(frozen=True)
class Target:
    """One fuzz target: a strategy of mutations and how a case is made and run from one."""

    name: str
    mutations: st.SearchStrategy
    case: Case


def _each(m: Mutations) -> list[dict]:
    return m if isinstance(m, list) else [m]


def _bag_case(command: list[str]) -> Case:
    def case(inputs: FuzzInputs, m: Mutations, work: Path, outside: bool = False) -> Outcome:
        recording = inputs.recording
        for one in _each(m):
            recording = mutated_recording(recording, one)
        try:
            bag = write_bag(work / "bag", recording)
        except Exception as exc:  # noqa: BLE001 - a mutation the bag format cannot hold is not a case
            return Outcome(None, str(exc), "unwritable mutation")
        argv, out = _argv(command, inputs, work, bag=bag)
        return run_case(argv, out, outside)
    return case


def _csv_case(command: list[str]) -> Case:
    def case(inputs: FuzzInputs, m: Mutations, work: Path, outside: bool = False) -> Outcome:
        rows = inputs.ur_rows
        for one in _each(m):
            rows = mutated_csv_rows(rows, one)
        csv = write_csv_rows(work / "loaded.csv", rows)
        argv, out = _argv(command, inputs, work, csv=csv)
        return run_case(argv, out, outside)
    return case


def _yaml_case(which: str, command: list[str]) -> Case:
    def case(inputs: FuzzInputs, m: Mutations, work: Path, outside: bool = False) -> Outcome:
        good = getattr(inputs, which)
        mutated = work / good.name
        text = good.read_text()
        for one in _each(m):
            try:
                text = mutated_yaml_text(text, one)
            except (yaml.YAMLError, RecursionError, TypeError, StopIteration):
                break       # the text is no mapping any more (cut short, nested deep): mutated enough
        mutated.write_text(text)
        argv, out = _argv(command, inputs, work, **{which: mutated})
        return run_case(argv, out, outside)
    return case


def _argv(command: list[str], inputs: FuzzInputs, work: Path, **given: Path) -> tuple[list[str], Path]:
    names = {"BAG": given.get("bag", inputs.bag), "GOOD_BAG": inputs.bag, "ROBOT": given.get("robot", inputs.robot),
             "PAYLOAD": given.get("payload", inputs.payload),
             "TRAJECTORY": given.get("trajectory", inputs.trajectory), "CSV": given.get("csv", inputs.ur_loaded),
             "UR_UNLOADED": inputs.ur_unloaded, "UR_ROBOT": inputs.ur_robot}
    out = work / {"identify-robot": "out.yaml", "identify-payload": "out.yaml", "report": "out.png",
                  "simulate": "out_bag"}[command[0]]
    return [str(names.get(a, a)) for a in command] + ["--out", str(out)], out


def _several(mutation: st.SearchStrategy) -> st.SearchStrategy:
    """One mutation (most cases: a defect found is then easy to read) or two to three applied in turn."""
    return st.one_of(mutation, st.lists(mutation, min_size=2, max_size=3))


_PAYLOAD = ["identify-payload", "--urdf", "planar_2r", "--robot", "ROBOT", "--frame", "tool0"]
_RECORDING_FIELDS = ("q", "qd", "tau", "t", "commanded", "time_from_start")
_CSV_FIELDS = ("q", "qd", "tau", "t")

TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("bag/khalil-1", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case([*_PAYLOAD, "--bag", "BAG", "--method", "khalil-1"])),
    Target("bag/difference-rls", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case([*_PAYLOAD, "--bag", "BAG", "--unloaded-bag", "GOOD_BAG", "--method", "difference-rls"])),
    Target("bag/direct-rls", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case([*_PAYLOAD, "--bag", "BAG", "--method", "direct-rls"])),
    Target("bag/khalil-3", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case([*_PAYLOAD, "--bag", "BAG", "--unloaded-bag", "GOOD_BAG", "--method", "khalil-3"])),
    Target("bag/khalil-4", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case([*_PAYLOAD, "--bag", "GOOD_BAG", "--unloaded-bag", "BAG", "--method", "khalil-4"])),
    Target("bag/identify-robot", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case(["identify-robot", "--urdf", "planar_2r", "--bag", "BAG", "--friction", "linear"])),
    Target("bag/report", _several(value_mutation(_RECORDING_FIELDS)),
           _bag_case(["report", "--urdf", "planar_2r", "--robot", "ROBOT", "--payload", "PAYLOAD", "--bag", "BAG"])),
    Target("csv/khalil-3", _several(value_mutation(_CSV_FIELDS)),
           _csv_case(["identify-payload", "--urdf", "ur10e", "--robot", "UR_ROBOT", "--csv-ur", "CSV",
                      "--unloaded-csv-ur", "UR_UNLOADED", "--method", "khalil-3"])),
    Target("csv/difference-rls", _several(value_mutation(_CSV_FIELDS)),
           _csv_case(["identify-payload", "--urdf", "ur10e", "--robot", "UR_ROBOT", "--csv-ur", "CSV",
                      "--unloaded-csv-ur", "UR_UNLOADED", "--method", "difference-rls"])),
    Target("yaml/robot", _several(yaml_mutation()),
           _yaml_case("robot", [*_PAYLOAD, "--bag", "GOOD_BAG", "--method", "khalil-1"])),
    Target("yaml/payload", _several(yaml_mutation()),
           _yaml_case("payload", ["report", "--urdf", "planar_2r", "--robot", "ROBOT", "--payload", "PAYLOAD",
                                  "--bag", "GOOD_BAG"])),
    Target("yaml/payload-simulate", _several(yaml_mutation()),
           _yaml_case("payload", ["simulate", "--urdf", "planar_2r", "--trajectory", "TRAJECTORY", "--payload",
                                  "PAYLOAD", "--lead-in", "0.1"])),
    Target("yaml/trajectory", _several(yaml_mutation()),
           _yaml_case("trajectory", ["simulate", "--urdf", "planar_2r", "--trajectory", "TRAJECTORY",
                                     "--lead-in", "0.1"])),
]}


def fresh_dir(parent: Path) -> Path:
    """An empty work directory for one case (its --out and the mutated input live there)."""
    return Path(tempfile.mkdtemp(prefix="case_", dir=parent))
