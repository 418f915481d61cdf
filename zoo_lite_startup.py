"""zoo_lite's import hooks, installed at every interpreter start of an environment that has zoo_lite.

``zoo_lite_startup.pth``, which installing zoo_lite puts into ``site-packages`` (for editable
installs too, see ``setup.py``), runs :func:`install_import_hooks` when Python starts: one
:class:`BeforeFirstImport` finder goes first in ``sys.meta_path``. Before the first
``import torchvision`` of the process, however it comes (a user's script, torchmetrics, a Spark or
Ray worker), it runs
:func:`~zoo_lite.learn.pytorch.torchvision_import.make_torchvision_importable`, so that
torchvision imports beside a CPU-only torch in any import order. Until then it costs one string
comparison per module imported for the first time and imports nothing.

This module is outside the ``zoo_lite`` package so that the start of every interpreter does not
import ``zoo_lite`` (about 80 ms): it imports only ``sys``. ``import zoo_lite`` installs the same
hooks (:mod:`zoo_lite.import_hooks`), for an environment whose ``.pth`` files are not read
(``python -S``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False   # typing itself costs ~3 ms at every interpreter start
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Sequence

__all__ = ["BeforeFirstImport", "install_import_hooks", "prefer_installed_pyspark", "TORCHVISION_HOOK", "PYSPARK_HOOK"]


class BeforeFirstImport:
    """A ``sys.meta_path`` finder that runs ``fix`` just before the first import of the
    top-level package ``name`` (or the first ``importlib.util.find_spec`` of it), then leaves
    ``sys.meta_path`` for good; it finds nothing itself, so the usual finders import the package.

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
    >>> ran, hook in sys.meta_path, hook.install() in sys.meta_path
    (['fixed'], False, False)
    """

    def __init__(self, name: str, fix: Callable[[], Any]) -> None:
        self.name = name
        self.fix = fix
        self.fired = False

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> None:
        if fullname == self.name and not self.fired:
            self.fired = True
            self.remove()   # first, so that the fix may look for the package itself
            self.fix()
        return None

    def install(self) -> "BeforeFirstImport":
        """Put the hook first in ``sys.meta_path`` (once), unless ``name`` is imported already or
        the hook has run."""
        if not self.fired and self.name not in sys.modules and self not in sys.meta_path:
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


def _same_file_in(zip_path: str, folder: str, member: str) -> bool:
    """Whether ``member`` of the zip at ``zip_path`` equals the file ``member`` under ``folder``."""
    import os
    import zipfile

    try:
        with zipfile.ZipFile(zip_path) as archive, open(os.path.join(folder, member), "rb") as installed:
            return archive.read(member) == installed.read()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def prefer_installed_pyspark(path: list) -> list:
    """``path`` without Spark's ``pyspark.zip`` and py4j zip where the same versions are installed
    in a folder of ``path`` (their ``version.py`` files equal).

    Spark puts both zips first on its Python workers' path. A zip holds no compiled files, so every
    process importing pyspark from it compiles each module from source: 1.8 to 2.1 s for a Python
    worker's imports, against 0.3 to 0.5 s from the installed copy (measured). Where the zips hold
    other versions than those installed, or none is installed (a bare host), ``path`` is kept.

    Examples
    --------
    >>> import os, importlib.util
    >>> installed = os.path.dirname(os.path.dirname(importlib.util.find_spec("pyspark").origin))
    >>> spark_zip = os.path.join(installed, "pyspark", "python", "lib", "pyspark.zip")   # pip's pyspark ships Spark's zip
    >>> prefer_installed_pyspark([spark_zip, installed]) == [installed]
    True
    >>> prefer_installed_pyspark(["/nowhere/pyspark.zip", installed]) == ["/nowhere/pyspark.zip", installed]
    True
    """
    import os

    def zipped_package(entry: Any) -> Optional[str]:
        name = os.path.basename(entry) if isinstance(entry, str) else ""
        if name == "pyspark.zip":
            return "pyspark"
        return "py4j" if name.startswith("py4j-") and name.endswith(".zip") else None

    def installed_alike(zip_path: str, package: str) -> bool:
        member = f"{package}/version.py"
        return any(_same_file_in(zip_path, folder, member) for folder in path
                   if isinstance(folder, str) and not folder.endswith(".zip") and os.path.isfile(os.path.join(folder, member)))

    def kept(entry: Any) -> bool:
        package = zipped_package(entry)
        return package is None or not installed_alike(entry, package)

    return [entry for entry in path if kept(entry)]


def _prefer_installed_pyspark() -> None:
    sys.path[:] = prefer_installed_pyspark(sys.path)


#: imports pyspark from its installed copy rather than Spark's zip (see :func:`prefer_installed_pyspark`)
PYSPARK_HOOK = BeforeFirstImport("pyspark", _prefer_installed_pyspark)


def install_import_hooks() -> None:
    """Install zoo_lite's import hooks in this process (the interpreter's start and
    ``import zoo_lite`` do it).

    Examples
    --------
    >>> install_import_hooks()
    >>> "torchvision" in sys.modules or TORCHVISION_HOOK in sys.meta_path
    True
    """
    TORCHVISION_HOOK.install()
    PYSPARK_HOOK.install()
