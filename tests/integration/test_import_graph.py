"""The package's import graph: no cycle, and no import that runs back up the layer order.

Imports are read from the source with `ast` wherever they are written: at module level, inside a
function, or under `if TYPE_CHECKING:` (a type-only import still ties the two modules together).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "origamig"
PACKAGE_NAME = "origamig"  # as a layer prefix it names origamig/__init__.py only, not the folders

# Top to bottom, one layer a folder of the package. A module may import modules of its own layer
# (without a cycle) and of any layer below it, never one above. Each module belongs to the first
# layer with a prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("commands", ("origamig.cli",)),
    ("the service", ("origamig.serve",)),
    ("the package's face: the public API", (PACKAGE_NAME,)),
    ("studies: many runs", ("origamig.study",)),
    ("simulation: one run", ("origamig.sim",)),
    ("the runtime: a policy's life cycle, plans in time, one loop over a clock", ("origamig.runtime",)),
    ("policies", ("origamig.policies",)),
    ("one call: Algorithm 1, decision, solve", ("origamig.call",)),
    ("plans and the BILP", ("origamig.plan", "origamig.bilp")),
    ("snapshots", ("origamig.snapshot",)),
    ("referees", ("origamig.judge",)),
    ("cluster: hardware, records, state", ("origamig.cluster",)),
    (
        "errors, files, names, memo tables, lazy names, wording, the collector",
        (
            "origamig.collector",
            "origamig.errors",
            "origamig.files",
            "origamig.solver_registry",
            "origamig.memo",
            "origamig.lazy",
            "origamig.wording",
        ),
    ),
)
# The independent judges import nothing they judge, not even through another module.
JUDGES = ("origamig.judge.check", "origamig.judge.replay")
JUDGED = (
    "origamig.bilp",
    "origamig.cluster.mig",
    "origamig.plan.executor",
    "origamig.judge.objective",
    "origamig.cluster.datacenter",
)
# At most this many modules sit loose at the package root; the rest live in their layer's folder.
MAX_ROOT_MODULES = 10


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, one level up per extra dot
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from package import module` imports the module; `from module import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                if target.startswith("origamig") and target != name:
                    graph.add_edge(name, target)
    return graph


def _names(prefix: str, module: str) -> bool:
    return module == prefix or (prefix != PACKAGE_NAME and module.startswith(prefix + "."))


def layer_of(module: str) -> int:
    for n, (_, prefixes) in enumerate(LAYERS):
        if any(_names(p, module) for p in prefixes):
            return n
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    return import_graph()


def test_the_graph_is_read(graph: nx.DiGraph) -> None:
    # A few edges known by heart, one of them under TYPE_CHECKING and one inside a function.
    assert graph.has_edge("origamig.sim.engine", "origamig.policies.base")
    assert graph.has_edge("origamig.policies.base", "origamig.call.decision")  # TYPE_CHECKING
    assert graph.has_edge("origamig.policies.moves", "origamig.plan.executor")  # inside plan_moves()
    assert graph.number_of_nodes() > 50
    # The face sits between the commands (which read its version) and the layers it re-exports.
    assert graph.has_edge("origamig.cli.console_entry", "origamig")
    assert graph.has_edge("origamig", "origamig.call.solve")  # TYPE_CHECKING


def test_no_module_imports_in_a_cycle(graph: nx.DiGraph) -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def test_every_module_has_a_layer(graph: nx.DiGraph) -> None:
    for module in graph:
        layer_of(module)


def test_no_import_runs_back_up_the_layers(graph: nx.DiGraph) -> None:
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, b in graph.edges
        if layer_of(b) < layer_of(a)
    ]
    assert upward == []


@pytest.mark.parametrize("judge", JUDGES)
def test_the_judges_import_nothing_they_judge(graph: nx.DiGraph, judge: str) -> None:
    reached = nx.descendants(graph, judge)
    assert [m for m in sorted(reached) if m.startswith(JUDGED)] == []


def test_the_package_root_holds_few_modules() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_ROOT_MODULES, loose


def test_every_layer_is_a_folder_or_a_root_module() -> None:
    for _, prefixes in LAYERS:
        for prefix in prefixes:
            parts = prefix.split(".")[1:]
            if not parts:
                continue
            path = PACKAGE.joinpath(*parts)
            assert path.is_dir() or path.with_suffix(".py").is_file(), prefix


def command_modules() -> list[str]:
    """The modules of `origamig/cli/` that are a command: those that `register` one with the app."""
    out = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        if any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body):
            out.append(module_name(path))
    return out


def test_no_command_module_imports_another(graph: nx.DiGraph) -> None:
    """What two commands share lives in a module of its own (`cli/arguments.py`,
    `cli/results_view.py`, ...) or in the library, not in one of the commands."""
    commands = command_modules()
    assert len(commands) >= 8 and "origamig.cli.solve" in commands
    crossing = [f"{a} imports {b}" for a in commands for b in graph.successors(a) if b in commands]
    assert crossing == []
