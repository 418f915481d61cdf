"""Ship the user's own modules by value to Spark executors and Ray workers.

A model class, loss, callback or data creator defined in the user's project (``mymodel.py`` next to
the script) is pickled by reference: the executor or worker imports ``mymodel`` again, and fails
with ``No module named 'mymodel'`` because the project is only on the driver. Pickling those
modules by value (cloudpickle's ``register_pickle_by_value``) sends their code along, so a job
moves from a laptop to a cluster without ``--py-files``. Installed packages (anything under the
interpreter's prefixes) and zoo_lite itself are still pickled by reference.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import types
from typing import Iterator

__all__ = ["user_modules", "user_code_by_value"]

_INSTALLED_ROOTS = tuple(
    os.path.realpath(path) + os.sep
    for path in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    if path
)


#: module name -> whether it is user code; a module's file does not move, so each is judged once
_verdicts: dict[str, bool] = {}


def _is_user_module(name: str, module: types.ModuleType) -> bool:
    if name == "__main__" or name.split(".")[0] == "zoo_lite":
        return False   # cloudpickle already sends __main__ by value; zoo_lite is installed everywhere
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not os.path.isabs(path) or not path.endswith(".py"):
        return False   # built-in, synthetic, namespace or compiled modules cannot go by value
    real = os.path.realpath(path)
    return not real.startswith(_INSTALLED_ROOTS) and "site-packages" not in real and "dist-packages" not in real


def user_modules() -> list[types.ModuleType]:
    """Imported modules that belong to the user's project rather than to an installed package.

    Examples
    --------
    >>> import json
    >>> json in user_modules()
    False
    """
    found = []
    for name, module in list(sys.modules.items()):
        verdict = _verdicts.get(name)
        if verdict is None:
            verdict = _verdicts[name] = isinstance(module, types.ModuleType) and _is_user_module(name, module)
        if verdict:
            found.append(module)
    return found


@contextlib.contextmanager
def user_code_by_value() -> Iterator[None]:
    """Within the block, Ray's and PySpark's cloudpickle send the user's modules by value.

    Examples
    --------
    >>> import pickle
    >>> from pyspark import cloudpickle
    >>> with user_code_by_value():
    ...     payload = cloudpickle.dumps(len)
    >>> pickle.loads(payload) is len
    True
    """
    picklers = []
    from pyspark import cloudpickle as spark_cloudpickle
    picklers.append(spark_cloudpickle)
    if "ray" in sys.modules:
        from ray import cloudpickle as ray_cloudpickle
        picklers.append(ray_cloudpickle)
    modules, registered = user_modules(), []
    for pickler in picklers:
        already = set(pickler.list_registry_pickle_by_value())
        for module in modules:
            if module.__name__ not in already and sys.modules.get(module.__name__) is module:
                pickler.register_pickle_by_value(module)
                registered.append((pickler, module))
    try:
        yield
    finally:
        for pickler, module in registered:
            pickler.unregister_pickle_by_value(module)
