"""The import graph of the zoo_lite package, read from its source with ``ast`` (nothing is imported).

One piece of code for the checks that keep the architecture (``tests/test_import_boundaries.py``:
no import cycle, no private name used across modules) and for the diagram
(``scripts/draw_architecture.py``). Standard library only.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Optional

__all__ = ["PACKAGE_ROOT", "module_name", "package_sources", "import_edges", "find_cycle", "private_uses"]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "zoo_lite"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_sources(root: Path = PACKAGE_ROOT) -> dict[str, tuple[str, str]]:
    """Every module under ``root``: name -> (file, source)."""
    return {module_name(path, root): (str(path.relative_to(root.parent)), path.read_text()) for path in sorted(root.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, skip_type_checking: bool) -> Iterator[ast.stmt]:
    """Every import statement, at any depth; those under ``if TYPE_CHECKING:`` only if asked."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and skip_type_checking and _is_type_checking(node.test):
            yield from (found for child in node.orelse for found in _imports(ast.Module([child], []), skip_type_checking))
            continue
        yield from _imports(node, skip_type_checking)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ``ImportFrom`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edges(sources: dict[str, tuple[str, str]], package: str = "zoo_lite") -> dict[str, set[str]]:
    """module -> the package modules it imports, at module or function level (not under
    ``if TYPE_CHECKING:``); ``from p import n`` is an edge to ``p.n`` when that is a module."""
    edges: dict[str, set[str]] = {module: set() for module in sources}
    for module, (path, source) in sources.items():
        is_package = path.endswith("__init__.py")
        for node in _imports(ast.parse(source, path), skip_type_checking=True):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                origin = _absolute(node, module, is_package)
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in sources else origin for a in node.names]
            edges[module].update(t for t in targets if t in sources and t != module
                                 and (t == package or t.startswith(package + ".")))
    return edges


def find_cycle(edges: dict[str, set[str]]) -> Optional[list[str]]:
    """One import cycle as its modules in order (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> Optional[list[str]]:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(sources: dict[str, tuple[str, str]], package: str = "zoo_lite") -> list[str]:
    """``file:line name`` of every private name a module takes from another package module:
    ``from zoo_lite.x import _name``, or ``alias._name`` on an imported package module."""
    found = []
    for module, (path, source) in sources.items():
        tree = ast.parse(source, path)
        is_package = path.endswith("__init__.py")
        aliases: dict[str, str] = {}  # local name -> package module it is bound to
        for node in _imports(tree, skip_type_checking=False):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package:
                        local = alias.asname or alias.name.split(".")[0]
                        aliases[local] = alias.name if alias.asname else package
                continue
            origin = _absolute(node, module, is_package)
            if not (origin == package or origin.startswith(package + ".")):
                continue
            for alias in node.names:
                if f"{origin}.{alias.name}" in sources:
                    aliases[alias.asname or alias.name] = f"{origin}.{alias.name}"
                if _is_private(alias.name) and origin != module:
                    found.append(f"{path}:{node.lineno} {origin}.{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                target = _dotted(node.value, aliases)
                if target is not None and target in sources and target != module:
                    found.append(f"{path}:{node.lineno} {target}.{node.attr}")
    return sorted(found)


def _dotted(node: ast.expr, aliases: dict[str, str]) -> Optional[str]:
    """The package module an expression like ``m`` or ``zoo_lite.data.shard`` names, if any."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base is not None else None
    return None
