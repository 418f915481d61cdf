"""Ship the user's own modules by value to Spark executors and Ray workers.

A model class, loss, callback, data creator or per-shard function defined in the user's project
(``mymodel.py`` next to the script) is pickled by reference: the executor or worker imports
``mymodel`` again, and fails with ``No module named 'mymodel'`` because the project is only on the
driver. Pickling those modules by value (cloudpickle's ``register_pickle_by_value``) sends their
code along, so a job moves from a laptop to a cluster without ``--py-files``.

Installed distributions are still pickled by reference, wherever they are installed: under the
interpreter's prefixes, or in a folder on ``PYTHONPATH`` (``pip install --target DIR``), which
holds the distribution's ``.dist-info``. Their code is part of the software every host has, and
their module state (locks, handles) cannot be pickled anyway. An editable install (``pip install
-e``) is the user's project, and goes by value; zoo_lite itself never does.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import sys
import sysconfig
import threading
import types
from typing import Any, Callable, Iterator

from zoo_lite.errors import InvalidArgumentError

__all__ = ["user_modules", "user_code_by_value", "ByValue", "by_value"]

_INSTALLED_ROOTS = tuple(
    os.path.realpath(path) + os.sep
    for path in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    if path
)


#: module name -> whether it is user code; a module's file does not move, so each is judged once
_verdicts: dict[str, bool] = {}
#: the last look through ``sys.modules``: its ``_modules_key`` and the user modules it found
_last_scan: tuple[Any, list[types.ModuleType]] = (None, [])


def _is_editable(distribution: importlib.metadata.Distribution) -> bool:
    direct_url = distribution.read_text("direct_url.json") or ""
    return '"editable": true' in direct_url.replace("'", '"').lower()


def _top_level_names(distribution: importlib.metadata.Distribution) -> set[str]:
    """The import names a distribution installs (``top_level.txt``, else its file list)."""
    listed = distribution.read_text("top_level.txt")
    if listed is not None:
        return {line.strip() for line in listed.splitlines() if line.strip()}
    names = set()
    for file in distribution.files or []:
        first = file.parts[0] if file.parts else ""
        if first.endswith(".py"):
            names.add(first[:-3])
        elif first and not first.endswith((".dist-info", ".egg-info", ".data")) and "/" not in first and not first.startswith(".."):
            names.add(first)
    return names


@functools.lru_cache(maxsize=4)
def _installed_roots_by_name(search_path: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Import name -> the folders in which a (non-editable) installed distribution provides it,
    for the distributions found on ``search_path`` (``sys.path`` as it was)."""
    found: dict[str, set[str]] = {}
    for distribution in importlib.metadata.distributions(path=list(search_path)):
        if _is_editable(distribution):
            continue
        root = os.path.realpath(str(distribution.locate_file("")))
        for name in _top_level_names(distribution):
            found.setdefault(name, set()).add(root)
    return {name: frozenset(roots) for name, roots in found.items()}


def _import_root(name: str, real_path: str) -> str:
    """The folder on ``sys.path`` that module ``name`` (at ``real_path``) was imported from."""
    levels = name.count(".") + (2 if os.path.basename(real_path) == "__init__.py" else 1)
    root = real_path
    for _ in range(levels):
        root = os.path.dirname(root)
    return root


def _is_installed_distribution(name: str, real_path: str) -> bool:
    """Whether an installed distribution in the folder the module came from provides it (``pip
    install --target DIR`` with DIR on ``PYTHONPATH`` puts the ``.dist-info`` there)."""
    roots = _installed_roots_by_name(tuple(sys.path)).get(name.split(".")[0], frozenset())
    return _import_root(name, real_path) in roots


def _is_user_module(name: str, module: types.ModuleType) -> bool:
    if name == "__main__" or name.split(".")[0] == "zoo_lite":
        return False   # cloudpickle already sends __main__ by value; zoo_lite is installed everywhere
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not os.path.isabs(path) or not path.endswith(".py"):
        return False   # built-in, synthetic, namespace or compiled modules cannot go by value
    real = os.path.realpath(path)
    if real.startswith(_INSTALLED_ROOTS) or "site-packages" in real or "dist-packages" in real:
        return False
    return not _is_installed_distribution(name, real)


def user_modules() -> list[types.ModuleType]:
    """Imported modules that belong to the user's project rather than to an installed package.

    Examples
    --------
    >>> import json
    >>> json in user_modules()
    False
    """
    global _last_scan
    key = _modules_key()
    scanned_key, found = _last_scan
    if key == scanned_key:
        return list(found)
    found = []
    for name, module in list(sys.modules.items()):
        verdict = _verdicts.get(name)
        if verdict is None:
            verdict = _verdicts[name] = isinstance(module, types.ModuleType) and _is_user_module(name, module)
        if verdict:
            found.append(module)
    _last_scan = (key, found)
    return list(found)


def _modules_key() -> tuple[int, str, int]:
    """What changes when ``sys.modules`` does: an import adds a name at the end (a dict keeps its
    insertion order), a removal shortens it. A scan with TensorFlow and PyTorch loaded takes about
    8 ms, and a fit asks a few times per epoch."""
    modules = sys.modules
    last = next(reversed(modules), "")
    return len(modules), last, id(modules.get(last))


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
    picklers: list[types.ModuleType] = []
    from pyspark import cloudpickle as spark_cloudpickle
    picklers.append(spark_cloudpickle)
    if "ray" in sys.modules:
        from ray import cloudpickle as ray_cloudpickle
        picklers.append(ray_cloudpickle)
    held = _hold_by_value(picklers, user_modules())
    try:
        yield
    finally:
        _release_by_value(held)


#: guards ``_holds``: blocks on several threads (a fit and the rows loading beside it) overlap
_holds_lock = threading.Lock()
#: (pickler, module name) -> how many open blocks hold a registration that a block made
_holds: dict[tuple[types.ModuleType, str], int] = {}


def _hold_by_value(picklers: list[types.ModuleType],
                   modules: list[types.ModuleType]) -> list[tuple[types.ModuleType, types.ModuleType]]:
    """Register the modules by value, counting the blocks that need each registration, so that
    the first block to end does not unregister what another thread is still pickling with."""
    held = []
    with _holds_lock:
        for pickler in picklers:
            already = set(pickler.list_registry_pickle_by_value())
            for module in modules:
                key = (pickler, module.__name__)
                if key in _holds:
                    _holds[key] += 1
                elif module.__name__ not in already and sys.modules.get(module.__name__) is module:
                    pickler.register_pickle_by_value(module)
                    _holds[key] = 1
                else:
                    continue   # registered by the user: theirs to keep
                held.append((pickler, module))
    return held


def _release_by_value(held: list[tuple[types.ModuleType, types.ModuleType]]) -> None:
    with _holds_lock:
        for pickler, module in held:
            key = (pickler, module.__name__)
            _holds[key] -= 1
            if _holds[key] == 0:
                del _holds[key]
                if module.__name__ in pickler.list_registry_pickle_by_value():
                    pickler.unregister_pickle_by_value(module)


class ByValue:
    """A function (or any object) that travels with the user's modules by value, whenever it is
    pickled; calling it calls the function.

    Spark pickles the functions of a job when the job runs, later than the call that took them,
    and pickles them by reference: an executor without the user's module fails with
    ``ModuleNotFoundError``. Held this way, the user's code goes with the function. It is pickled
    when Spark pickles the job (so that broadcast variables in its closure are sent with the
    job), and once more when it is made, only to refuse at once what cannot be pickled.

    Examples
    --------
    >>> import pickle
    >>> double = ByValue(lambda value: 2 * value, "func")
    >>> pickle.loads(pickle.dumps(double))(21), double.name
    (42, '<lambda>')
    """

    def __init__(self, value: Any, argument: str) -> None:
        self.value = value
        # a function's own names, for messages (never repr: a partial's holds all its arguments)
        self.__name__ = getattr(value, "__name__", None) or type(value).__name__
        self.__qualname__ = getattr(value, "__qualname__", None) or self.__name__
        _check_picklable(value, argument)

    @property
    def name(self) -> str:
        """The function's qualified name."""
        return self.__qualname__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value(*args, **kwargs)

    def __reduce__(self) -> tuple[Callable[..., "ByValue"], tuple[str, str, bytes]]:
        return _loaded_by_value, (self.__name__, self.__qualname__, _dumps_by_value(self.value))


def _dumps_by_value(value: Any) -> bytes:
    from pyspark import cloudpickle

    with user_code_by_value():
        return cloudpickle.dumps(value)


def _loaded_by_value(name: str, qualified_name: str, payload: bytes) -> ByValue:
    import pickle

    loaded = ByValue.__new__(ByValue)
    loaded.value = pickle.loads(payload)
    loaded.__name__, loaded.__qualname__ = name, qualified_name
    return loaded


def _check_picklable(value: Any, argument: str) -> None:
    """Pickle ``value`` as a job would, to raise here what cannot be; the broadcast variables that
    pickling notes for the next job are put back as they were (this is no job)."""
    from pyspark import SparkContext

    registry = getattr(SparkContext._active_spark_context, "_pickled_broadcast_vars", None)
    noted = list(registry) if registry is not None else []
    try:
        _dumps_by_value(value)
    except Exception as error:  # noqa: BLE001 - whatever cannot be pickled, the message says what
        raise InvalidArgumentError(
            f"{argument}={value!r} cannot be sent to the executors: pickling it failed with "
            f"{type(error).__name__}: {error}; make it a module-level function, or one whose closure "
            "holds no open file, lock, connection or SparkContext"
        ) from error
    finally:
        if registry is not None:
            registry.clear()
            for broadcast in noted:
                registry.add(broadcast)


def by_value(value: Callable[..., Any], argument: str) -> Callable[..., Any]:
    """``value`` as a :class:`ByValue`, unless it already is one.

    Examples
    --------
    >>> shipped = by_value(len, "func")
    >>> by_value(shipped, "func") is shipped
    True
    """
    return value if isinstance(value, ByValue) else ByValue(value, argument)
