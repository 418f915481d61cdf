"""zoo_lite's JVM helper: ``ArrowFrames`` (``ArrowFrames.java`` beside this file, built into
``zoo_lite-jvm.jar`` by ``scripts/build_jvm.sh``) decodes Arrow record batches computed by Python
workers into a Spark DataFrame inside the JVM.

The jar is added to a running SparkContext at first use (the driver's class loader and the
executors' ``addJar``), so it needs no setting at start-up and works under ``spark-submit`` too.
Where it cannot be loaded (a Spark whose internals differ), :func:`arrow_frames` answers None and
the callers keep their pure-Python path.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["JAR_PATH", "SOURCE_PATH", "arrow_frames"]

JAR_PATH = Path(__file__).with_name("zoo_lite-jvm.jar")
SOURCE_PATH = Path(__file__).with_name("ArrowFrames.java")
_LOG = logging.getLogger(__name__)
# Spark application id -> the helper class (or None where it could not be loaded)
_loaded: dict[str, Any] = {}


def arrow_frames(sc: "SparkContext") -> Optional[Any]:
    """The ``io.zoolite.ArrowFrames`` JVM class for ``sc``, loading the jar once per context; None
    if it cannot be loaded or does not link against this Spark.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=1)
    >>> arrow_frames(sc) is not None
    True
    """
    key = str(sc._jsc.sc().applicationId())
    if key not in _loaded:
        _loaded[key] = _load(sc)
    return _loaded[key]


def _load(sc: "SparkContext") -> Optional[Any]:
    jvm = sc._jvm
    try:
        helper = _lookup(jvm)
        if helper is None:
            jvm.org.apache.spark.sql.api.python.PythonSQLUtils.addJarToCurrentClassLoader(str(JAR_PATH))
            helper = _lookup(jvm)
        if helper is None:
            return None
        helper.checkLinks()  # raises here, not in a job, where Spark's internals differ
        sc._jsc.sc().addJar(str(JAR_PATH))  # the executors' class loaders
        return helper
    except Exception as error:  # noqa: BLE001 - any failure means: keep the Python path
        _LOG.info("zoo_lite's JVM helper %s could not be loaded (%s); to_spark_df decodes in Python", JAR_PATH, error)
        return None


def _lookup(jvm: Any) -> Optional[Any]:
    from py4j.java_gateway import JavaClass

    candidate = jvm.io.zoolite.ArrowFrames
    return candidate if isinstance(candidate, JavaClass) else None
