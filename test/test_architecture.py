"""The layering docs/design.md promises, checked on the source: no import cycle, lower layers never
import higher ones, the core never imports ROS, the ROS package holds no science of its own.

Every check reads the imports inside functions too: a function-level import runs as surely as a module-level
one, only later, so it can tie a cycle or reach up a layer just the same."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "src/payload_id_core/payload_id_core"
ROS = REPO / "src/payload_id_ros/payload_id_ros"

# Layer rank of each core subpackage: a module may import its own layer and those of lower rank only.
# (errors, notes, blas, numpy_kernels, resources, scipy_startup: the foundation every layer uses.)
LAYERS = {
    "errors": 0, "notes": 0, "blas": 0, "numpy_kernels": 0, "resources": 0, "lazy_exports": 0, "scipy_startup": 0,
    "io": 1, "signals": 1,
    "dynamics": 2,
    "robot_id": 3, "excitation": 3,
    # The payload result (PayloadEstimate, payload.yaml): what every payload method and the F/T sensor return.
    "payload_estimate": 3,
    # The wrist F/T sensor identifies a payload and compensates one; the payload methods and the identify session
    # use it (the ft method, the sensor's calibration), so it sits below them.
    "ft": 4,
    "payload": 5,
    "sim": 6, "report": 6, "robot_drawing": 6,
    # identify-robot's path (every choice robot.yaml records): robot_id's fits and the payload layer's held-out
    # measurements (model error, load friction), which the command line and library callers both call.
    "robot_identification": 6,
    # Monitoring during task motion (issue 17): the residual on the identified robot + payload; its change
    # detection and re-estimation will stand on payload/.
    "monitor": 6,
    # Optimal excitation design simulates runs (Xu 2024's Λ0 from a simulated run) and identifies them:
    # an application of the layers below it, like the synthetic data generators.
    "excitation_design": 7,
    "testing": 7,
    # The offline command line: the edge where flags become calls into every layer; nothing imports it.
    "cli": 8,
}


def _module_name(path: Path, root: Path, package: str) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [package, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _function_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements inside a function (at any depth), each once."""
    found: dict[int, ast.Import | ast.ImportFrom] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update((id(n), n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return sorted(found.values(), key=lambda node: node.lineno)


def _imported_names(node: ast.Import | ast.ImportFrom, path: Path, module: str) -> set[str]:
    """Modules one import statement names (absolute; relative imports resolved)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        pkg = module.split(".")[: -node.level] if not path.name == "__init__.py" else \
            module.split(".")[: len(module.split(".")) - node.level + 1]
        base = ".".join([*pkg, base]) if base else ".".join(pkg)
    # `from pkg import submodule` imports the submodule too.
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def _imports(path: Path, module: str) -> set[str]:
    """Modules imported by `path`, at module level and inside functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _imported_names(node, path, module)
    return found


def _packages_above(module: str) -> set[str]:
    """The packages importing `module` runs first: `import a.b.c` runs a/__init__ and a/b/__init__."""
    parts = module.split(".")
    return {".".join(parts[:k]) for k in range(1, len(parts))}


def _core_modules() -> dict[str, Path]:
    return {_module_name(p, CORE, "payload_id_core"): p for p in CORE.rglob("*.py")}


def test_core_has_no_import_cycle() -> None:
    """No cycle through any import, at module level or inside a function, counting the packages an import runs
    (importing payload.methods.common runs payload/methods/__init__ and everything it imports). A module's own
    packages are running already when it runs, so importing from them is no edge."""
    modules = _core_modules()
    graph = {name: {dep for m in _imports(path, name) for dep in {m} | _packages_above(m)
                    if dep in modules and dep != name and dep not in _packages_above(name)}
             for name, path in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def _layer(module: str) -> str:
    """The most specific LAYERS key naming `module` ('' for the package itself)."""
    parts = module.split(".")[1:]
    for k in range(len(parts), 0, -1):
        key = ".".join(parts[:k])
        if key in LAYERS:
            return key
    return ""


@pytest.mark.parametrize("name", sorted(_core_modules()))
def test_core_module_imports_only_its_layer_and_below(name):
    path = _core_modules()[name]
    own = _layer(name)
    if own not in LAYERS:          # the package's own __init__
        return
    upward = sorted(m for m in _imports(path, name)
                    if m.startswith("payload_id_core.") and _layer(m) in LAYERS and LAYERS[_layer(m)] > LAYERS[own])
    assert not upward, f"{name} (layer {own}) imports higher layers: {upward}"


def test_every_core_subpackage_has_a_layer():
    missing = sorted(name for name in _core_modules() if name != "payload_id_core" and not _layer(name))
    assert not missing, missing


def test_core_never_imports_ros():
    for name, path in _core_modules().items():
        ros = sorted(m for m in _imports(path, name)
                     if m.split(".")[0] in {"rclpy", "payload_id_ros", "payload_id_msgs", "launch", "launch_ros"})
        assert not ros, f"{name} imports {ros}"


def test_ros_package_holds_no_numerics_of_its_own():
    """The nodes adapt messages to core calls: scipy, pinocchio, cvxpy and mujoco belong to the core."""
    for path in ROS.rglob("*.py"):
        name = _module_name(path, ROS, "payload_id_ros")
        science = sorted(m for m in _imports(path, name)
                         if m.split(".")[0] in {"scipy", "pinocchio", "cvxpy", "mujoco"})
        assert not science, f"{name} imports {science}"


def test_function_level_imports_say_why():
    """An import inside a function is for a heavy, optional dependency (cvxpy, mujoco, matplotlib) and says so on
    its line (`# noqa: PLC0415 - why`); the other checks here read it like any import."""
    silent = []
    for name, path in sorted(_core_modules().items()):
        lines = path.read_text().splitlines()
        for node in _function_level_imports(ast.parse("\n".join(lines), filename=str(path))):
            text = " ".join(lines[node.lineno - 1:node.end_lineno])
            if not re.search(r"noqa: PLC0415 - \S", text):
                silent.append(f"{name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, "function-level imports without their reason:\n" + "\n".join(silent)


def _lazy_face(name: str, path: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]] | None:
    """A lazy face's (_EXPORTS, its TYPE_CHECKING imports), each as submodule -> names; None for other modules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    exports: dict[str, set[str]] | None = None
    typed: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            exports = {sub: set(names) for sub, names in ast.literal_eval(node.value).items()}
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.dump(imp)
                typed.setdefault(imp.module.removeprefix(name + "."), set()).update(a.name for a in imp.names)
    return None if exports is None else (exports, typed)


@pytest.mark.parametrize("name", sorted(n for n, p in _core_modules().items() if p.name == "__init__.py"))
def test_lazy_face_names_what_it_loads(name):
    """A lazy face (lazy_exports) loads each name from the submodule its TYPE_CHECKING imports name, so what type
    checkers see is what runs; and every name is there."""
    face = _lazy_face(name, _core_modules()[name])
    if face is None:
        return
    exports, typed = face
    assert exports == typed, f"{name}: _EXPORTS {exports} but TYPE_CHECKING imports {typed}"
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(n for names in exports.values() for n in names)
    for submodule, names in exports.items():
        defining = importlib.import_module(f"{name}.{submodule}")
        for n in sorted(names):
            assert getattr(module, n) is getattr(defining, n), f"{name}.{n}"


def _ros_core_imports() -> list[tuple[str, int, str, list[str]]]:
    """(ROS module, line, core module, names) of every `from payload_id_core... import` and `import payload_id_core...`
    in payload_id_ros, at module level or inside functions."""
    found = []
    for path in sorted(ROS.rglob("*.py")):
        name = _module_name(path, ROS, "payload_id_ros")
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "payload_id_core":
                found.append((name, node.lineno, node.module or "", [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found.extend((name, node.lineno, a.name, []) for a in node.names
                             if a.name.split(".")[0] == "payload_id_core")
    return found


def test_ros_package_imports_the_core_through_its_faces():
    """The nodes use the core through each package's face (its __init__ and __all__) or a top-level module, never a
    package's own modules: those can move or split without the ROS package noticing."""
    modules = _core_modules()
    packages = {n for n, p in modules.items() if p.name == "__init__.py"}
    past = []
    for ros_module, line, core, names in _ros_core_imports():
        # `from payload_id_core.payload import session` reaches a private module just the same.
        reached = [core] + [f"{core}.{n}" for n in names if f"{core}.{n}" in modules]
        private = [m for m in reached if m not in packages and m.rsplit(".", 1)[0] != "payload_id_core"]
        if private:
            past.append(f"{ros_module}:{line}: {', '.join(private)}")
            continue
        if core in packages and core != "payload_id_core":
            public = set(importlib.import_module(core).__all__)
            past.extend(f"{ros_module}:{line}: {core}.{n} is not in its __all__" for n in names if n not in public)
    assert not past, "payload_id_ros imports past the core's faces:\n" + "\n".join(past)


def test_faces_keep_light_imports_light():
    """A face must not make its light modules heavy: the recording types, the file writer, the marker geometry and
    the trajectory tools load no scipy.signal, rosbags, mujoco, cvxpy, matplotlib or the identify session, and the
    simulation's face loads no mujoco (a cell built without a backend of its own does, sim.cell)."""
    probe = """
import sys
import payload_id_core.dynamics, payload_id_core.excitation, payload_id_core.io.files
import payload_id_core.payload.markers, payload_id_core.signals.recording
light = [m for m in ("scipy.signal", "rosbags", "mujoco", "cvxpy", "matplotlib", "payload_id_core.payload.session")
         if m in sys.modules]
import payload_id_core.sim
print(light, [m for m in ("mujoco", "cvxpy", "matplotlib") if m in sys.modules])
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []", out
