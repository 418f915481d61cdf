"""Fixes that run just before a package's first import, in every process of an environment that has zoo_lite.

The hooks live in the top-level module :mod:`zoo_lite_startup`, which the interpreter's start runs
(through ``zoo_lite_startup.pth``), so that ``import torchvision`` works beside a CPU-only torch in
any import order, before zoo_lite is imported too. ``import zoo_lite`` calls
:func:`install_import_hooks` again, which does nothing where the start did it.
"""

from __future__ import annotations

from zoo_lite_startup import TORCHVISION_HOOK, BeforeFirstImport, install_import_hooks

__all__ = ["BeforeFirstImport", "install_import_hooks", "TORCHVISION_HOOK"]
