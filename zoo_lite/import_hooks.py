"""Fixes that run just before a package's first import, in every process that imported zoo_lite.

``import zoo_lite`` calls :func:`install_import_hooks`, which puts one :class:`BeforeFirstImport`
finder at the front of ``sys.meta_path``: before the first ``import torchvision`` it runs
:func:`~zoo_lite.learn.pytorch.torchvision_import.make_torchvision_importable`, so that a user's
plain ``import torchvision`` works beside a CPU-only torch. Until then it costs one string
comparison per module imported for the first time and imports nothing.

Every process that runs zoo_lite's code has imported zoo_lite before the user's code runs there:
the driver, Spark's Python workers (zoo_lite's per-partition function is unpickled before the
user's function it calls) and Ray workers (zoo_lite's runner is built before the user's
creators run).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence

__all__ = ["BeforeFirstImport", "install_import_hooks", "TORCHVISION_HOOK"]


class BeforeFirstImport:
    """A ``sys.meta_path`` finder that runs ``fix`` just before the first import of the
    top-level package ``name`` (or the first ``importlib.util.find_spec`` of it), then leaves
    ``sys.meta_path``; it finds nothing itself, so the usual finders import the package.

    Parameters
    ----------
    name : str
        A top-level package name, e.g. ``"torchvision"`` (its submodules import it first).
    fix : callable
        Called with no argument, once, before the package's finders run.

    Examples
    --------
    >>> ran = []
    >>> hook = BeforeFirstImport("no_such_package", lambda: ran.append("fixed")).install()
    >>> import no_such_package
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: No module named 'no_such_package'
    >>> ran, hook in sys.meta_path
    (['fixed'], False)
    """

    def __init__(self, name: str, fix: Callable[[], Any]) -> None:
        self.name = name
        self.fix = fix

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> None:
        if fullname == self.name:
            self.remove()   # first, so that the fix may look for the package itself
            self.fix()
        return None

    def install(self) -> "BeforeFirstImport":
        """Put the hook first in ``sys.meta_path`` (once), unless ``name`` is imported already."""
        if self.name not in sys.modules and self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        return self

    def remove(self) -> None:
        """Take the hook out of ``sys.meta_path``, if it is there."""
        while self in sys.meta_path:
            sys.meta_path.remove(self)

    def __repr__(self) -> str:
        return f"BeforeFirstImport({self.name!r}, {getattr(self.fix, '__qualname__', self.fix)})"


def _make_torchvision_importable() -> None:
    # imported only now: it imports torch, which torchvision is about to import anyway
    from zoo_lite.learn.pytorch.torchvision_import import make_torchvision_importable

    make_torchvision_importable()


#: runs the torchvision fix before ``import torchvision`` (see the module docstring)
TORCHVISION_HOOK = BeforeFirstImport("torchvision", _make_torchvision_importable)


def install_import_hooks() -> None:
    """Install zoo_lite's import hooks in this process (``import zoo_lite`` does it).

    Examples
    --------
    >>> install_import_hooks()
    >>> "torchvision" in sys.modules or TORCHVISION_HOOK in sys.meta_path
    True
    """
    TORCHVISION_HOOK.install()
