"""torchvision imported beside a CPU-only torch.

Every torchvision wheel on PyPI is a CUDA build: its C++ operators (``torchvision/_C.so``) link
``libtorch_cuda.so`` and ``libc10_cuda.so``, which a CPU torch (``torch==2.13.0+cpu``) does not
ship. torchvision is written to run without them (its datasets, transforms and models are
Python), but ``torchvision/_meta_registrations.py`` registers kernels for ``torchvision::nms`` and
``torchvision::qnms`` without checking that they exist, so ``import torchvision`` fails with
``RuntimeError: operator torchvision::nms does not exist``.

:func:`make_torchvision_importable` first loads torchvision's own operators, as torchvision does;
only when they do not load does it declare the schemas of those two operators (declaring them
beside the loaded library would abort the process). With the fix, datasets (MNIST,
ImageFolder, ...), transforms (v1 and v2), models and ``ops.roi_align`` (which has a Python
fallback) work. Still unavailable: ``torchvision.io`` decoding and encoding (``image.so`` has the
same CUDA links: load images with PIL, torchvision's default loader, or
:func:`zoo_lite.data.image.read_images`) and the operators with no Python fallback (``nms``,
``batched_nms``, ``roi_pool``, ``ps_roi_align``, ``ps_roi_pool``, ``deform_conv2d``), which raise
torchvision's own ``Couldn't load custom C++ ops`` error. A torchvision built for CPU (the
PyTorch CPU index) loads its operators, and the fix does nothing.

A hook that every interpreter start of an environment with zoo_lite installs (:mod:`zoo_lite_startup`,
through ``zoo_lite_startup.pth``) runs the fix just before the first ``import torchvision`` of a
process, so a user's plain ``import torchvision`` works in the driver, in Spark's Python workers and
in Ray workers, before or after ``import zoo_lite``, and through a library that imports it
(torchmetrics does).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Optional

__all__ = ["make_torchvision_importable", "import_torchvision", "MISSING_SCHEMAS"]

#: the operators torchvision registers kernels for without checking, as torchvision's _C declares them
MISSING_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
#: torchvision's operator library: ``_C`` up to 0.28, ``_C_stable`` from 0.29
_LIBRARY_NAMES = ("_C", "_C_stable")

# the torch.library.Library holding the declared schemas: torch drops them when it is collected
_declared: Optional[Any] = None
# the import hook and a direct call may both run the fix; it must declare the schemas once
_lock = threading.RLock()


def _torchvision_folder() -> Optional[str]:
    """The folder of the installed torchvision package, found without importing it; None when
    torchvision is not installed."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _load_own_operators(folder: str) -> bool:
    """Whether torchvision's C++ operator library loads, found as torchvision finds it."""
    import torch

    finder = importlib.machinery.FileFinder(
        folder, (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
    for name in _LIBRARY_NAMES:
        spec = finder.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        try:
            torch.ops.load_library(spec.origin)
            return True
        except (OSError, ImportError):   # a CUDA build beside a CPU torch: libtorch_cuda.so is missing
            continue
    return False


def _declare_missing_schemas() -> Any:
    """A ``torchvision`` operator library declaring :data:`MISSING_SCHEMAS` (no kernels: calling
    them raises torchvision's own error), to be kept alive as long as the process."""
    import torch

    library = torch.library.Library("torchvision", "DEF")
    for schema in MISSING_SCHEMAS:
        library.define(schema)
    return library


def make_torchvision_importable() -> bool:
    """Make ``import torchvision`` work beside a CPU-only torch (see the module docstring).

    Does something only when torchvision is installed, not yet imported and its C++ operators
    do not load; then it declares :data:`MISSING_SCHEMAS`. Calling it again does nothing.
    ``import zoo_lite`` already arranges for it to run before the first ``import torchvision``.

    Returns
    -------
    bool
        True when the schemas are declared by zoo_lite (in this call or an earlier one), False
        when nothing was needed: torchvision is not installed, was imported before, loads its
        own operators, or other code declared the schemas.

    Examples
    --------
    >>> make_torchvision_importable() in (True, False)
    True
    >>> import torchvision
    >>> torchvision.transforms.Normalize([0.5], [0.5])
    Normalize(mean=[0.5], std=[0.5])
    """
    global _declared
    with _lock:
        if _declared is not None or "torchvision" in sys.modules:
            return _declared is not None
        folder = _torchvision_folder()
        # finding torchvision runs the import hook, which may have applied the fix meanwhile
        if folder is None or _declared is not None or _load_own_operators(folder):
            return _declared is not None
        import torch

        if not hasattr(torch.ops.torchvision, "nms"):   # else other code declared them: leave them be
            _declared = _declare_missing_schemas()
        return _declared is not None


def import_torchvision() -> ModuleType:
    """``torchvision``, imported after :func:`make_torchvision_importable`; for zoo_lite code
    that needs it.

    Raises
    ------
    ModuleNotFoundError
        torchvision is not installed; the message names the ``vision`` extra that installs it.

    Examples
    --------
    >>> import_torchvision().__name__
    'torchvision'
    """
    make_torchvision_importable()
    try:
        import torchvision
    except ModuleNotFoundError as error:
        if error.name != "torchvision":
            raise
        raise ModuleNotFoundError(
            f"torchvision is not installed for {sys.executable}; install it there with pip install \"zoo_lite[vision]\" "
            "(on every host of the cluster: the driver and the Spark executors import it too)",
            name="torchvision",
        ) from error
    return torchvision
