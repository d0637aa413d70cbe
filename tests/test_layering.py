"""Architecture checks on the source (AST only, nothing imported): imports point down the layers and
form no cycle between modules (function-level imports count), the package root stays lazy, the
controller layer does no I/O, and files and functions stay small.

Layers, low → high (a module may import its own layer or lower):
  0 workbench.config   1 workbench.stats   2 workbench.controller
  3 workbench.measure, workbench.planning (planning may import measure, not the reverse)
  4 workbench.findings, workbench.params, workbench.store   5 workbench.lease, workbench.output
  6 workbench.pipeline   7 analysis/ (the reports: at the repository's top, above the workflows)
  8 workbench.cli (its grammar: workbench.cli_args), workbench.dagrun, workbench.preload
  9 dags/, plugins/
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
PKG = SRC / "workbench"
DAGS = REPO / "dags"
PLUGINS = REPO / "plugins"       # the Airflow plugin: Airflow's top, beside the DAGs
ANALYSIS = REPO / "analysis"     # the reports, plots, surfaces and comparisons: above the pipeline

LAYERS = {
    "workbench.config": 0,
    "workbench.stats": 1,
    "workbench.controller": 2,
    "workbench.measure": 3,
    "workbench.planning": 3,
    "workbench.findings": 4,     # validation, warnings, bottleneck, split, regression verdicts: of records
    "workbench.params": 4,       # the Params, RatingPlan, the validation pass
    "workbench.store": 4,        # the Store and its layout; S3/MinIO and directory backends
    "workbench.lease": 5,        # slot leases (on a RatingPlan)
    "workbench.output": 5,       # the console's lines, the notifications of a run
    "workbench.pipeline": 6,     # the workflows: rating steps, run_rating, sweeps, nights, comparisons
    "analysis": 7,               # reports, plots, surfaces, comparisons: what entry points and DAG tasks call
    "workbench.cli": 8,
    "workbench.cli_args": 8,     # the command line's grammar (flags, usage errors), for workbench.cli
    "workbench.dagrun": 8,
    "workbench.preload": 8,    # Airflow's task-forking processes import the pipeline once (airflow_local_settings)
    "dags": 9,
    "plugins": 9,
}
# Imports between different units of one rank: allowed only where listed (importer, imported).
SAME_RANK_ALLOWED = {("workbench.planning", "workbench.measure"),   # planning.dryrun simulates
                     ("workbench.cli", "workbench.cli_args")}        # the commands use their grammar

PURE_DIRS = (PKG / "controller", PKG / "stats")
PURE_FORBIDDEN_TOP = {
    "airflow", "ansible", "ansible_runner", "minio", "urllib3", "requests", "subprocess", "socket",
    "os", "shutil", "tempfile", "pathlib", "io", "pandas", "great_expectations", "matplotlib",
    "pyarrow",
}
PURE_FORBIDDEN_MODULES = ("workbench.measure", "workbench.findings", "analysis", "workbench.params", "workbench.store",
                          "workbench.lease", "workbench.output", "workbench.pipeline")

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


@dataclass(frozen=True)
class Import:
    path: Path
    lineno: int
    target: str            # absolute module imported (from X import m, m a module → X.m)
    name: str | None       # from X import name: the name; None for `import X`
    in_function: bool
    text: str

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.lineno}: {self.text}"


def py_files(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py")
                  if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(d).parts))


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC if path.is_relative_to(SRC) else REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_FILES = py_files(PKG, ANALYSIS, DAGS, PLUGINS)
KNOWN_MODULES = {module_name(p) for p in ALL_FILES}


@lru_cache(maxsize=None)
def tree_of(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def imports_of(path: Path) -> list[Import]:
    """Every import in the file (module level and inside functions/classes), resolved to absolute."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            text = ast.unparse(child) if isinstance(child, (ast.Import, ast.ImportFrom)) else ""
            if isinstance(child, ast.Import):
                out.extend(Import(path, child.lineno, a.name, None, in_function, text) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:                                       # relative → absolute
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    out.append(Import(path, child.lineno, sub if sub in KNOWN_MODULES else base, a.name,
                                      in_function, text))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree_of(path), False)
    return out


def unit_of(module: str) -> str | None:
    """The LAYERS key `module` belongs to (longest prefix), or None."""
    hits = [u for u in LAYERS if module == u or module.startswith(u + ".")]
    return max(hits, key=len) if hits else None


def lazy_api() -> dict[str, str]:
    """workbench/__init__.py's _API: public name → module that defines it (read from the AST)."""
    for node in tree_of(PKG / "__init__.py").body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_API" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def top(module: str) -> str:
    return module.partition(".")[0]


def import_graph() -> dict[str, dict[str, Import]]:
    """Module → each module of the package (or dags/) it imports → the first import that does: module-level
    and function-level imports alike (a function-level import is a dependency all the same); a lazy
    re-export of the root counts as the module that defines it."""
    api = lazy_api()
    graph: dict[str, dict[str, Import]] = {module_name(p): {} for p in ALL_FILES}
    for path in ALL_FILES:
        for imp in imports_of(path):
            target = api.get(imp.name, imp.target) if imp.target == "workbench" else imp.target
            if target in graph:
                graph[module_name(path)].setdefault(target, imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, or of one that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_cycles(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The import cycles: in each strongly connected set of modules, a shortest cycle through each of its
    modules ([m0, m1, …, m0], starting at its least module), each cycle once."""
    cycles: set[tuple[str, ...]] = set()
    for comp in strongly_connected(graph):
        members = set(comp)
        for start in comp:                         # breadth-first back to `start` inside the component
            came_from: dict[str, str] = {}
            frontier = [start]
            while start not in came_from and frontier:
                nxt = []
                for v in frontier:
                    for w in sorted(graph[v]):
                        if w in members and w not in came_from:
                            came_from[w] = v
                            nxt.append(w)
                frontier = nxt
            path = [start]
            while len(path) == 1 or path[-1] != start:
                path.append(came_from[path[-1]])
            ring = path[::-1][:-1]                 # start → … (without the closing start)
            i = ring.index(min(ring))
            cycles.add(tuple(ring[i:] + ring[:i]))
    return [[*c, c[0]] for c in sorted(cycles)]


def cycle_text(cycle: list[str], graph: dict[str, dict[str, Import]]) -> str:
    edges = [graph[a][b] for a, b in zip(cycle, cycle[1:])]
    return " → ".join(cycle) + "".join(
        f"\n    {e.where()}" + ("  (in a function)" if e.in_function else "") for e in edges)


# --- tests -------------------------------------------------------------------------------------

def test_every_file_has_a_layer():
    orphans = [str(p.relative_to(REPO)) for p in ALL_FILES
               if module_name(p) != "workbench" and unit_of(module_name(p)) is None]
    assert not orphans, "files in no layer (add them to LAYERS in tests/test_layering.py):\n" + "\n".join(orphans)


def test_imports_point_down():
    """Every import of the package and the DAGs points to its own unit or a lower layer, and no modules
    import each other, directly or round a longer cycle (module-level and function-level imports)."""
    api = lazy_api()
    bad = []
    for path in ALL_FILES:
        src_mod = module_name(path)
        src_unit = unit_of(src_mod)
        if src_unit is None:                      # the package root: test_package_root_is_lazy
            continue
        for imp in imports_of(path):
            if top(imp.target) not in ("workbench", "analysis"):
                continue
            target = imp.target
            if target == "workbench" and imp.name in api:       # a lazy re-export: where it really lives
                target = api[imp.name]
            if target == "workbench":
                continue                                        # the root itself imports stdlib only
            dst_unit = unit_of(target)
            if dst_unit is None:
                bad.append(f"{imp.where()}  ({target} is in no layer)")
            elif dst_unit != src_unit:
                s, d = LAYERS[src_unit], LAYERS[dst_unit]
                if d > s:
                    bad.append(f"{imp.where()}  (up: {src_unit} [{s}] → {dst_unit} [{d}])")
                elif d == s and (src_unit, dst_unit) not in SAME_RANK_ALLOWED:
                    bad.append(f"{imp.where()}  (sideways: {src_unit} → {dst_unit}, both layer {s})")
    graph = import_graph()
    bad += [f"import cycle: {cycle_text(c, graph)}" for c in import_cycles(graph)]
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_package_root_is_lazy():
    """workbench/__init__.py imports only the standard library at module level (the public API is
    loaded on first use), and every lazy re-export names a module that defines it."""
    root = PKG / "__init__.py"
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    bad = [imp.where() for imp in imports_of(root) if not imp.in_function and top(imp.target) not in stdlib]
    assert not bad, "non-stdlib imports at module level of workbench/__init__.py:\n" + "\n".join(bad)
    for name, mod in lazy_api().items():
        files = [p for p in ALL_FILES if module_name(p) == mod]
        assert files, f"_API[{name!r}] = {mod!r}: no such module"
        defined = {n.name for n in tree_of(files[0]).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
            t.id for n in tree_of(files[0]).body if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        assert name in defined, f"_API[{name!r}] = {mod!r}: {mod} defines no {name}"


def test_no_from_workbench_import_of_api_names_inside_the_package():
    """Inside workbench, `from workbench import X` only for submodules: the lazy re-exports would hide
    the real dependency (and its layer)."""
    bad = [f"{imp.where()}  (import it from {lazy_api().get(imp.name, 'its subpackage')})"
           for path in py_files(PKG) if path != PKG / "__init__.py"
           for imp in imports_of(path) if imp.target == "workbench" and imp.name is not None]
    assert not bad, "from workbench import <non-module> inside the package:\n" + "\n".join(bad)


def test_controller_layer_does_no_io():
    bad = [imp.where() for path in py_files(*PURE_DIRS) for imp in imports_of(path)
           if top(imp.target) in PURE_FORBIDDEN_TOP
           or any(imp.target == m or imp.target.startswith(m + ".") for m in PURE_FORBIDDEN_MODULES)]
    assert not bad, "I/O or orchestration imports in workbench.controller / workbench.stats:\n" + "\n".join(bad)


def test_files_and_functions_are_small():
    """No file of the package, analysis/, dags/ or plugins/ over MAX_FILE_LINES, no function over
    MAX_FUNCTION_LINES."""
    bad = []
    for path in ALL_FILES:
        rel = path.relative_to(REPO)
        n = len(path.read_text().splitlines())
        if n > MAX_FILE_LINES:
            bad.append(f"{rel}: {n} lines (> {MAX_FILE_LINES})")
        for node in ast.walk(tree_of(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    bad.append(f"{rel}:{node.lineno}: {node.name}() {length} lines (> {MAX_FUNCTION_LINES})")
    assert not bad, "too big:\n" + "\n".join(bad)


def test_test_files_mirror_the_modules():
    """tests/<layer>/test_<module>[_<aspect>].py tests src/workbench/<layer>/<module>.py, and
    tests/reports/ the modules of analysis/ (a test folder named analysis/ would shadow the package
    as a namespace); every layer folder of the package has its folder of tests."""
    tests = REPO / "tests"
    layer_dirs = {p.name: p for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(layer_dirs) <= {p.name for p in tests.iterdir() if p.is_dir()}, sorted(layer_dirs)
    assert not (tests / "analysis").exists(), "tests of analysis/ live in tests/reports/"
    layer_dirs["reports"] = ANALYSIS
    strays = []
    for name, src in layer_dirs.items():
        modules = {p.stem for p in src.glob("*.py")} - {"__init__"}
        for f in (tests / name).glob("test_*.py"):
            stem = f.stem.removeprefix("test_")
            if not any(stem == m or stem.startswith(f"{m}_") for m in modules):
                strays.append(f"{f.relative_to(REPO)}: no module {name}/{stem.split('_')[0]}.py")
    assert not strays, "\n".join(strays)
