"""The module graph of src/ and scripts/, read from the source: no import circles (an import
under `if TYPE_CHECKING:` or inside a function counts: it is still a dependency), and no
private name (`_x`) taken from another module of the project."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
SCRIPTS = REPO / "scripts"


def _modules() -> dict[str, Path]:
    """Every module of the project by its import name: tokenwalk.* from src/, and the scripts
    by file name, as they import each other (the folder is on sys.path when one runs)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    for path in sorted(SCRIPTS.glob("*.py")):
        found[path.stem] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, str, int]]:
    """(module, name imported from it or "", line) for each import of a known module in
    `path`. `from package import submodule` depends on the submodule, not the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package
                for _ in range(node.level - 1):
                    up = up.rpartition(".")[0]
                base = f"{up}.{base}" if node.module else up
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}", "", node.lineno
                elif base in known:
                    yield base, alias.name, node.lineno


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: {target for target, _, _ in _imports(name, path, known)} - {name}
        for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_finds_a_circle_through_a_type_checking_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from c import C\n"
    )
    (tmp_path / "c.py").write_text("def f():\n    from a import g\n")
    known = {"a", "b", "c"}
    graph = {n: {t for t, _, _ in _imports(n, tmp_path / f"{n}.py", known)} for n in sorted(known)}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({**graph, "c": set()}) == []


def test_no_import_circles() -> None:
    assert circles(_graph()) == []


def test_no_private_name_taken_from_another_module() -> None:
    modules = _modules()
    known = set(modules)
    taken = [
        f"{path.relative_to(REPO)}:{line}: {target}.{imported}"
        for name, path in modules.items()
        for target, imported, line in _imports(name, path, known)
        if imported.startswith("_") and not imported.startswith("__") and target != name
    ]
    assert taken == []


# where a system's kind of memory may be read: the one choice of how to answer
# (costs.compare.placed) and the input checks that drop placement flags on one pool of memory
UNIFIED_READERS = {
    ("tokenwalk.costs.compare", "placed"),
    ("tokenwalk.cli.checks", "on_system"),
    ("tokenwalk.cli.compare_cmd", "systems_of"),
}


def test_one_pool_or_placed_is_chosen_in_one_function() -> None:
    """decode, prefill, trace, budget, spec, compare and serve choose between one pool of memory
    and a placement on cards through `costs.compare.placed` (and `system_plan`, which calls it),
    never by reading `System.unified` themselves."""
    found = []
    for name, path in _modules().items():
        if not name.startswith("tokenwalk.") or name == "tokenwalk.system":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Attribute) and node.attr == "unified":
                    if (name, fn.name) not in UNIFIED_READERS:
                        found.append(f"{name}.{fn.name}:{node.lineno}")
    assert not sorted(set(found)), sorted(set(found))
