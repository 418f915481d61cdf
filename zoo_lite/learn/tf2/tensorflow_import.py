"""TensorFlow imported without its C++ start-up lines.

TensorFlow 2.21 prints two lines through absl while its libraries load, before it reads
``TF_CPP_MIN_LOG_LEVEL`` (``WARNING: All log messages before absl::InitializeLog() is called are
written to STDERR`` and ``oneDNN custom operations are on ...``), in every process that imports
it: the driver, each Spark Python worker that runs a Keras model, each Ray worker. No setting
hides them (and ``cpu_feature_guard``'s lines show whenever the variable is not set yet), so the
import that zoo_lite triggers runs with the process's stderr (file descriptor 2, where the C++
code writes) held in a file; those start-up lines are dropped and everything else is written
back. ``TF_CPP_MIN_LOG_LEVEL=0`` (asked for by ``spark_log_level="INFO"`` or set by the
user) lets them through.

In a worker process (:func:`~zoo_lite.learn.base.warm_up.runs_in_a_worker`), the import also skips
what Keras imports, when installed, only for its scikit-learn wrappers and its image plotting
(:data:`SKIPPED_IN_WORKERS`), which a training or scoring worker never calls: about 1 s of a 3.2 s
import on this project's machine (2.2 s without). Keras checks for them once, at its import, so in
a worker ``keras.wrappers.SKLearnClassifier`` and ``keras.visualization`` say they need those
packages; importing the packages themselves still works there.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from types import ModuleType
from typing import Iterator, Sequence

from zoo_lite.learn.base.warm_up import runs_in_a_worker

__all__ = ["import_tensorflow", "START_UP_LINES", "SKIPPED_IN_WORKERS"]

#: optional imports of Keras that a worker process skips (see the module docstring)
SKIPPED_IN_WORKERS = ("sklearn", "matplotlib")

#: what TensorFlow's start-up lines contain (cpu_feature_guard's come as two lines)
START_UP_LINES = ("absl::InitializeLog() is called are written to STDERR", "oneDNN custom operations are on",
                  "cpu_feature_guard.cc", "To enable the following instructions:")


def _wants_tensorflow_logs() -> bool:
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0"


@contextlib.contextmanager
def _optional_imports_failing(names: Sequence[str]) -> Iterator[None]:
    """Inside, importing any of the top-level packages ``names`` not imported yet fails with
    ImportError, as if they were not installed (a library's optional import is skipped); after,
    they import normally.

    Examples
    --------
    >>> with _optional_imports_failing(["json_not_yet"]):
    ...     try:
    ...         import json_not_yet
    ...     except ImportError:
    ...         print("skipped")
    skipped
    >>> "json_not_yet" in sys.modules
    False
    """
    blocked = [name for name in names if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "not importable"
    try:
        yield
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _imported_quietly() -> ModuleType:
    """``import tensorflow`` with file descriptor 2 held in a file, its start-up lines dropped."""
    with tempfile.TemporaryFile() as held:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            import tensorflow
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        printed = held.read().decode(errors="replace")
    kept = [line for line in printed.splitlines() if not any(mark in line for mark in START_UP_LINES)]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")
    return tensorflow


def import_tensorflow() -> ModuleType:
    """``tensorflow``, imported with its start-up lines dropped and, in a worker, without Keras'
    optional scikit-learn and matplotlib hooks (see the module docstring); a TensorFlow already
    imported is returned as it is.

    Examples
    --------
    >>> import_tensorflow().__name__
    'tensorflow'
    """
    if "tensorflow" in sys.modules:
        import tensorflow

        return tensorflow
    with _optional_imports_failing(SKIPPED_IN_WORKERS if runs_in_a_worker() else ()):
        if _wants_tensorflow_logs():
            import tensorflow

            return tensorflow
        return _imported_quietly()
