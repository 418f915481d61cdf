"""Public names of a package imported on first use, so that importing one of its modules does not
import all of them.

A training worker imports its runner module, ``zoo_lite.learn.pytorch.runner``; Python runs the
package's ``__init__`` first, and an ``__init__`` that imports the Estimator would bring the whole
driver side along (the XShards methods, pandas: about 0.5 s and 60 MiB per worker, measured on 2
cores). A package that uses this module lists its public names as imports under
``if TYPE_CHECKING:``, where readers, type checkers and the documentation's generator see them,
and hands its module ``__getattr__`` and ``__dir__`` to :func:`lazy_exports`, which reads that
block and imports a name's module when the name is first asked for (PEP 562).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from typing import Any, Callable

__all__ = ["lazy_exports"]


def _type_checking_imports(source_path: str, package: str) -> dict[str, str]:
    """Name -> module of the ``from X import name`` statements under ``if TYPE_CHECKING:`` of a
    package's ``__init__`` (relative imports resolved against ``package``)."""
    with open(source_path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), source_path)
    exports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    module = (package + "." + statement.module) if statement.level else statement.module
                    exports.update({alias.asname or alias.name: module for alias in statement.names})
    return exports


def lazy_exports(package: str, init_path: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``, whose ``__init__`` at
    ``init_path`` lists its public names as imports under ``if TYPE_CHECKING:``: a name is
    imported from its module when first asked for, then kept in the package. A submodule that
    was not imported yet is imported when asked for as an attribute.

    Examples
    --------
    >>> import subprocess, sys
    >>> code = "import sys, zoo_lite.data; print('pandas' in sys.modules, zoo_lite.data.XShards.__name__, 'pandas' in sys.modules)"
    >>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    ['False', 'XShards', 'True']
    """
    exports = _type_checking_imports(init_path, package)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
