"""Running Spark jobs for the data collections: one place that turns an executor's failure back into
the zoo_lite error raised there, and a stopped context into a clear error.

Both :mod:`zoo_lite.data.shard` and :mod:`zoo_lite.data.ray_xshards` run their jobs through
:func:`run_job`; this module imports neither, so they do not import each other for it.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Callable, Iterator, Optional, TypeVar

from zoo_lite.data.paths import missing_on_executor, missing_on_some_executor, this_host
from zoo_lite.errors import ContextStoppedError, DataReadError, decode_remote_error
from zoo_lite.executor_python import environment_error_of, failed_task_host

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["run_job", "ensure_alive", "spark_read_errors"]

T = TypeVar("T")

# markers of Spark's own reader failures in a job's error text
_SPARK_READ_ERRORS = ("FAILED_READ_FILE", "MALFORMED_RECORD_IN_PARSING", "FileNotFoundException")
# the file Spark's reader did not find, and the executor that looked for it
_MISSING_FILE = re.compile(r"(?:reading file|FileNotFoundException: File) (?:file:)?/*(/\S+?)\.? (?:File )?does not exist")


def ensure_alive(sc: "SparkContext") -> None:
    """Raise ContextStoppedError if ``sc`` has been stopped.

    Parameters
    ----------
    sc : pyspark.SparkContext
        The context a collection's RDD belongs to.

    Raises
    ------
    ContextStoppedError
        ``sc`` was stopped (``stop_orca_context()``): the collection cannot run any more.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, stop_orca_context
    >>> sc = init_orca_context(cores=1)
    >>> ensure_alive(sc)
    >>> stop_orca_context()
    >>> ensure_alive(sc)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ContextStoppedError: this XShards belongs to a SparkContext that has been stopped...
    """
    if sc._jsc is None:
        raise ContextStoppedError(
            "this XShards belongs to a SparkContext that has been stopped (stop_orca_context()); "
            "call init_orca_context() and build the XShards again"
        )


def run_job(sc: "SparkContext", action: Callable[[], T]) -> T:
    """Run a Spark action and return its result; an error raised on an executor is re-raised here
    as the error it was there.

    Parameters
    ----------
    sc : pyspark.SparkContext
        The context the action's RDD belongs to.
    action : callable
        A function of no arguments that runs the job, e.g. ``rdd.collect``.

    Returns
    -------
    object
        What ``action`` returns.

    Raises
    ------
    ContextStoppedError
        ``sc`` is stopped, before or while the job runs.
    ExecutorEnvironmentError
        The executors' Python does not start, or lacks a module the job's function needs (the
        environment did not travel to their hosts): see :mod:`zoo_lite.executor_python`.
    DataReadError
        Spark's own reader failed on an input file (malformed, or gone since it was listed).
    ZooLiteError
        The zoo_lite error a partition function raised on an executor (e.g.
        ``ShardFunctionError``), with its class and attributes.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=1)
    >>> run_job(sc, sc.parallelize(range(4), 2).sum)
    6
    """
    ensure_alive(sc)
    try:
        return action()
    except Exception as error:
        remote = decode_remote_error(str(error))
        if remote is None:
            ensure_alive(sc)
            environment = environment_error_of(error, sc)
            if environment is not None:
                raise environment from None
            _raise_read_error_if_any(error)
            raise
        if remote.__cause__ is None:
            remote.__suppress_context__ = True
        raise remote


@contextlib.contextmanager
def spark_read_errors(argument: str = "file_path") -> Iterator[None]:
    """Within the block, Spark's own reader failures raise :class:`DataReadError` (a reader
    infers its schema with a job of its own, when it is called).

    Examples
    --------
    >>> with spark_read_errors():
    ...     raise RuntimeError("[FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file file:/nowhere/a.csv. File does not exist.")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.DataReadError: Spark could not read an input file: [FAILED_READ_FILE.FILE_NOT_EXIST] ...
    """
    try:
        yield
    except Exception as error:
        _raise_read_error_if_any(error, argument)
        raise


def _missing_on_executor(text: str, argument: str) -> Optional[str]:
    """The message for a file an executor did not find that the driver's host has."""
    missing, lost_on = _MISSING_FILE.search(text), failed_task_host(text)
    if missing is None:
        return None
    path = missing.group(1)
    if not os.path.exists(path):
        return None
    if lost_on is None:   # Spark names the executor's address only when a job's stage failed
        return missing_on_some_executor(argument, path, this_host())
    return missing_on_executor(argument, path, this_host(), lost_on)


def _raise_read_error_if_any(error: Exception, argument: str = "file_path") -> None:
    """Spark's own reader failures (a malformed file, a file gone since listing, a file only the
    driver's host has) as DataReadError."""
    text = str(error)
    if any(marker in text for marker in _SPARK_READ_ERRORS):
        elsewhere = _missing_on_executor(text, argument)
        if elsewhere is not None:
            raise DataReadError(elsewhere) from error
        summary = next((line.strip() for line in text.splitlines() if any(m in line for m in _SPARK_READ_ERRORS)), text[:500])
        raise DataReadError(f"Spark could not read an input file: {summary}") from error
