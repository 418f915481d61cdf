"""zoo_lite: scale pandas, NumPy, Keras and PyTorch code onto a Spark cluster.

The successor of Analytics Zoo / BigDL Orca: replace ``zoo.orca`` with ``zoo_lite`` in imports.
Orca's ``from zoo import init_nncontext`` becomes ``from zoo_lite import init_nncontext``.
Importing this package imports no Spark, Ray, torch or TensorFlow; it installs a hook that makes a
later ``import torchvision`` work beside a CPU-only torch (:mod:`zoo_lite.import_hooks`).
"""

from zoo_lite.context import OrcaContext, init_nncontext, init_orca_context, stop_orca_context
from zoo_lite.import_hooks import install_import_hooks

install_import_hooks()

__all__ = ["init_orca_context", "stop_orca_context", "OrcaContext", "init_nncontext"]
__version__ = "0.1.0"
