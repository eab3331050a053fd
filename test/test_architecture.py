"""The layering docs/design.md promises, checked on the source: no import cycle, lower layers never
import higher ones, the core never imports ROS, the ROS package holds no science of its own.

Every check reads the imports inside functions too: a function-level import runs as surely as a module-level
one, only later, so it can tie a cycle or reach up a layer just the same."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "src/payload_id_core/payload_id_core"
ROS = REPO / "src/payload_id_ros/payload_id_ros"

# Layer rank of each core subpackage: a module may import its own layer and those of lower rank only.
# (errors, notes, blas, resources: the foundation every layer uses.)
LAYERS = {
    "errors": 0, "notes": 0, "blas": 0, "resources": 0,
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
