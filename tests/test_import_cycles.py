"""No import cycle inside the package: its layers point one way.

The graph is read from the source (an AST scan, nothing imported): an edge A -> B for every
``import`` of a lattn_edu module B anywhere in module A, at the top or inside a function,
since a deferred import still ties the two modules together. An import of a package's name
(``from .. import records``) points at the module it names when there is one, else at the
package's ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "lattn_edu"


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that module ``name`` (at ``path``) imports, anywhere in it."""
    anchor = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = anchor
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            source = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # lattn_edu.x.name -> lattn_edu.x
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = SRC / PACKAGE) -> dict[str, set[str]]:
    paths = {module_name(p, root.parent): p for p in root.rglob("*.py")}
    return {name: imported_modules(name, path, set(paths)) for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_scan_sees_relative_deferred_and_absolute_imports():
    graph = import_graph()
    assert "lattn_edu.bench.harness" in graph["lattn_edu.bench.families"]  # from .harness import ...
    assert "lattn_edu.bench.peers" in graph["lattn_edu.bench.gated"]  # from . import peers, in a function
    assert "lattn_edu.records" in graph["lattn_edu.bench.cli"]  # from .. import records
    assert "lattn_edu" in graph["lattn_edu.bench.methods"]  # import lattn_edu as la


def test_the_cycle_finder_finds_a_cycle_and_only_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set(), "f": {"g"}, "g": {"f"}}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["f", "g"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, f"import cycles in the package: {found}"


UPPER_LAYERS = ("explorers", "exercises", "bench", "recall", "tracking", "book",
                "lm")  # teaching, measuring, book glue


def test_the_numerics_never_import_the_teaching_measuring_or_book_layers():
    """The core and backends stand alone; explorers, exercises, labs and chapters build on them,
    and book.py's helpers are for chapters only."""
    graph = import_graph()
    upper = tuple(f"{PACKAGE}.{layer}" for layer in UPPER_LAYERS)
    below = {name: targets for name, targets in graph.items()
             if not name.startswith(upper) and name not in (PACKAGE, f"{PACKAGE}.cli")}
    upward = {(name, target) for name, targets in below.items() for target in targets
              if target.startswith(upper)}
    assert not upward, f"numerics importing an upper layer: {sorted(upward)}"
    into_book = {name for name, targets in graph.items() if f"{PACKAGE}.book" in targets}
    assert not into_book, f"book.py is for chapters only; imported by {sorted(into_book)}"
