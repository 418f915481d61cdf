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
"""

from __future__ import annotations

import os
import sys
import tempfile
from types import ModuleType

__all__ = ["import_tensorflow", "START_UP_LINES"]

#: what TensorFlow's start-up lines contain (cpu_feature_guard's come as two lines)
START_UP_LINES = ("absl::InitializeLog() is called are written to STDERR", "oneDNN custom operations are on",
                  "cpu_feature_guard.cc", "To enable the following instructions:")


def _wants_tensorflow_logs() -> bool:
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0"


def import_tensorflow() -> ModuleType:
    """``tensorflow``, imported with its start-up lines dropped (see the module docstring); a
    TensorFlow already imported is returned as it is.

    Examples
    --------
    >>> import_tensorflow().__name__
    'tensorflow'
    """
    if "tensorflow" in sys.modules or _wants_tensorflow_logs():
        import tensorflow

        return tensorflow
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
