"""The executors' Python: what it can import, and a clear error when it cannot run zoo_lite's jobs.

An executor runs the interpreter that ``spark.pyspark.python`` names, on its own host. On a bare
host (Java, Spark and a system Python) the user's environment must travel with the job
(``spark.archives``, ``penv_archive=``). When it did not, a job fails as the executor unpickles its
function, and Spark shows ``ModuleNotFoundError`` (or ``Cannot run program``) deep in a Java stack
trace, with the host and the fix nowhere. Here:

- :func:`environment_error_of` reads such a failure and gives an
  :class:`~zoo_lite.errors.ExecutorEnvironmentError` that names the host, the executors' Python,
  what they lack and the fix. :func:`~zoo_lite.data.spark_jobs.run_job` raises it for every
  XShards job and the Spark backend's fits, at no cost to a job that works;
- :func:`check_executor_pythons` runs one small job first where a failure would come late or
  unclear: before Ray on Spark starts (Ray also needs the driver's Python version on every node),
  and when a model UDF is made (the user's own query runs it).
  Its function is a closure that uses the standard library only, which cloudpickle sends by value,
  so any Python unpickles it.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import sys
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, Union

from zoo_lite.errors import ExecutorEnvironmentError
from zoo_lite.waiting import call_within

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = ["ExecutorPython", "check_executor_pythons", "check_executor_pythons_once", "probe_executor_pythons", "environment_error_of",
           "python_not_started", "module_missing_in_unpickling", "failed_task_host", "SHIP_THE_ENVIRONMENT",
           "JOB_MODULES", "PROBE_TIMEOUT_S"]

_log = logging.getLogger("zoo_lite.executor_python")

#: how long the check waits for the executors to run its tasks; past it the work goes on unchecked
PROBE_TIMEOUT_S = 120.0
#: after a failed job the executors are up: a short wait, then the message says what the failure showed
_PROBE_AFTER_FAILURE_TIMEOUT_S = 30.0
#: a Connect session's probe answers in rows (its tasks run mapInPandas, not an RDD's mapPartitions)
_CONNECT_PROBE_SCHEMA = "host string, executable string, version string, missing string"
#: what every zoo_lite job needs on the executors (zoo_lite's core)
JOB_MODULES = ("zoo_lite", "numpy", "pandas", "pyarrow")

#: the fix, said in every :class:`~zoo_lite.errors.ExecutorEnvironmentError` about a missing environment
SHIP_THE_ENVIRONMENT = (
    "ship this environment with the job: init_orca_context(..., penv_archive='auto') packs and ships it "
    "(standalone, YARN, local-cluster; or penv_archive='env.tar.gz', an archive packed by conda-pack or venv-pack), "
    "or pass conf={'spark.archives': 'env.tar.gz#env', 'spark.pyspark.python': './env/bin/python'}, or give "
    "spark-submit --archives env.tar.gz#env --conf spark.pyspark.python=./env/bin/python; or install the same "
    "packages on every host (docs/cluster.md, 'Shipping your environment')"
)

# Spark's text of a lost task: "Lost task 0.3 in stage 2.0 (TID 7) (10.0.0.2 executor 1): ..."
_LOST_TASK_HOST = re.compile(r"Lost task [^(]*\(TID \d+\) \(([^ ()]+) executor")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"')
_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")
# frames of the worker unpickling the job's function: a missing module there is the executor's environment
_UNPICKLING = ("read_command", "cloudpickle", "serializers.py", "read_udfs", "read_single_udf")


@dataclass(frozen=True)
class ExecutorPython:
    """What one executor's Python is, as a task of :func:`probe_executor_pythons` saw it.

    Attributes
    ----------
    host : str
        The executor's host name.
    executable : str
        The Python that ran the task (``sys.executable``).
    version : str
        Its version, e.g. ``"3.11.7"``.
    missing : tuple of (str, str)
        The modules asked for that it cannot find, each with why.
    """

    host: str
    executable: str
    version: str
    missing: tuple[tuple[str, str], ...]


def _python_report(modules: tuple[str, ...]) -> Callable[[Iterator[Any]], Iterator[tuple]]:
    """The probe's task: a closure of the standard library only (sent by value, so that a Python
    without zoo_lite unpickles it)."""

    def report(_: Iterator[Any]) -> Iterator[tuple]:
        import importlib.util as found
        import platform as interpreter
        import socket
        import sys

        missing = []
        for name in modules:
            try:
                if found.find_spec(name) is None:
                    missing.append((name, f"No module named '{name}'"))
            except (ImportError, ValueError) as error:   # a parent package that does not import
                missing.append((name, f"{type(error).__name__}: {error}"))
        yield socket.gethostname(), sys.executable, interpreter.python_version(), tuple(missing)

    return report


def probe_executor_pythons(spark: Union["SparkContext", "SparkSession"], modules: Sequence[str],
                           timeout_s: float = PROBE_TIMEOUT_S) -> list[ExecutorPython]:
    """What the executors' Python is and which of ``modules`` it lacks, from one task per task slot.

    Parameters
    ----------
    spark : pyspark.SparkContext or Spark Connect SparkSession
        The context whose executors to ask (a Connect session asks its server's).
    modules : sequence of str
        Top-level modules to look for (found, not imported: the check stays cheap).
    timeout_s : float
        Bound on the wait for the tasks.

    Returns
    -------
    list of ExecutorPython
        One entry per distinct answer.

    Raises
    ------
    ExecutorEnvironmentError
        The executors' Python does not start at all (:func:`environment_error_in`).
    TimeoutError
        No answer within ``timeout_s`` (the executors are busy or not there); the job is cancelled.

    Examples
    --------
    >>> import sys
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> [python] = probe_executor_pythons(sc, ["numpy", "no_such_module"])
    >>> python.version == platform.python_version(), python.missing
    (True, (('no_such_module', "No module named 'no_such_module'"),))
    """
    from zoo_lite.spark_connect import is_connect_session

    name = f"zoo_lite-python-check-{uuid.uuid4().hex[:8]}"
    if is_connect_session(spark):
        run, cancel = _connect_probe(spark, tuple(modules), name)
    else:
        run, cancel = _classic_probe(spark, tuple(modules), name)
    outcome = call_within(run, "the executors to report their Python", timeout_s, "zoo_lite-python-check")
    if not outcome.finished:
        cancel()
        raise TimeoutError(f"no executor ran the Python check within {timeout_s:.0f} s")
    if outcome.error is not None:
        not_started = python_not_started(str(outcome.error))
        if not_started is not None:
            raise not_started from None
        raise outcome.error
    return sorted({ExecutorPython(*answer) for answer in outcome.value or []}, key=lambda python: python.host)


def _classic_probe(sc: "SparkContext", modules: tuple[str, ...], group: str) -> tuple[Callable[[], list], Callable[[], None]]:
    """The probe's job on a SparkContext (one task per task slot, in the job group ``group``), and its cancel."""
    tasks = max(1, sc.defaultParallelism)

    def run() -> list:
        sc.setJobGroup(group, "zoo_lite: check the executors' Python", interruptOnCancel=True)
        return sc.parallelize(range(tasks), tasks).mapPartitions(_python_report(modules)).collect()

    return run, lambda: sc.cancelJobGroup(group)


def _connect_probe(spark: "SparkSession", modules: tuple[str, ...], tag: str) -> tuple[Callable[[], list], Callable[[], None]]:
    """The probe's job on a Spark Connect session (a ``range`` in the server's default number of
    partitions, one answer per task, tagged ``tag``), and its cancel."""
    report = _python_report(modules)

    def as_frames(_: Iterator[Any]) -> Iterator[Any]:
        import json

        import pandas as pd

        for host, executable, version, missing in report(iter(())):
            yield pd.DataFrame({"host": [host], "executable": [executable], "version": [version],
                                "missing": [json.dumps(missing)]})

    def run() -> list:
        import json

        spark.addTag(tag)   # a tag marks the operations this thread starts
        try:
            rows = spark.range(0, 1 << 20).mapInPandas(as_frames, _CONNECT_PROBE_SCHEMA).collect()
        finally:
            spark.removeTag(tag)
        return [(row.host, row.executable, row.version, tuple(tuple(pair) for pair in json.loads(row.missing)))
                for row in rows]

    return run, lambda: spark.interruptTag(tag)


def check_executor_pythons(sc: Union["SparkContext", "SparkSession"], modules: Sequence[str], same_version: bool,
                           purpose: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`~zoo_lite.errors.ExecutorEnvironmentError` at once when the executors' Python
    lacks one of ``modules``, or, with ``same_version``, is another version than the driver's.

    A check that gets no answer in ``timeout_s``, or fails for another reason, is logged and
    skipped: the work itself then says what is wrong.

    Parameters
    ----------
    sc : pyspark.SparkContext or Spark Connect SparkSession
        The context whose executors to check (a Connect session checks its server's).
    modules : sequence of str
        What the work needs on the executors, e.g. ``["zoo_lite", "numpy", "ray"]``.
    same_version : bool
        Whether the work needs the driver's Python version (Ray does, to the patch level).
    purpose : str
        The work, for the message: ``"Ray on Spark"``.
    timeout_s : float
        Bound on the check's wait.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> check_executor_pythons(sc, ["zoo_lite", "numpy"], same_version=True, purpose="this example")
    >>> check_executor_pythons(sc, ["no_such_module"], same_version=False, purpose="this example")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ExecutorEnvironmentError: this example needs no_such_module on the executors, but on host ... cannot find 'no_such_module'; ship ...
    """
    try:
        pythons = probe_executor_pythons(sc, modules, timeout_s)
    except ExecutorEnvironmentError:
        raise
    except Exception as error:  # noqa: BLE001 - the check only adds clarity; the work reports its own failure
        _log.warning("could not check the executors' Python before %s (%s); going on", purpose, error)
        return
    lacking = [python for python in pythons if python.missing]
    if lacking:
        raise ExecutorEnvironmentError(f"{purpose} needs {', '.join(modules)} on the executors, but {_where_missing(lacking)}; "
                                       f"{SHIP_THE_ENVIRONMENT}")
    driver_version = platform.python_version()
    other = [python for python in pythons if python.version != driver_version]
    if same_version and other:
        where = "; ".join(f"host {python.host}: {python.executable} is Python {python.version}" for python in other)
        raise ExecutorEnvironmentError(
            f"{purpose} needs the driver's Python version on the executors, to the patch level, but the driver runs "
            f"Python {driver_version} and {where}; run the driver with the executors' Python, or ship an environment "
            "whose Python is the driver's (conda-pack packs the interpreter too; a venv-pack archive uses the "
            "hosts' own)")


def check_executor_pythons_once(sc: Union["SparkContext", "SparkSession"], modules: Sequence[str], same_version: bool,
                                purpose: str) -> None:
    """:func:`check_executor_pythons`, unless the executors' Python is this very interpreter (a
    local master with the driver's Python: nothing can differ), or the same check passed on this
    context (or Spark Connect session) before.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> check_executor_pythons_once(sc, ["no_such_module"], same_version=False, purpose="a local master")
    """
    from zoo_lite.spark_connect import is_connect_session

    if is_connect_session(sc):
        context_id = sc.session_id
    elif _executors_run_this_python(sc):
        return
    else:
        context_id = sc.applicationId   # an id() could come back for a later context
    key = (context_id, tuple(modules), same_version)
    if key in _passed_checks:
        return
    check_executor_pythons(sc, modules, same_version, purpose)
    _passed_checks.add(key)


#: the checks of :func:`check_executor_pythons_once` that passed, by context
_passed_checks: set[tuple[str, tuple[str, ...], bool]] = set()


def _executors_run_this_python(sc: "SparkContext") -> bool:
    master = sc.master
    local = master == "local" or master.startswith("local[")
    return local and os.path.realpath(sc.pythonExec) == os.path.realpath(sys.executable)


def failed_task_host(text: str) -> Optional[str]:
    """The host of the task that failed, from Spark's error text (it names it when a stage fails).

    Examples
    --------
    >>> failed_task_host("Lost task 0.3 in stage 2.0 (TID 7) (10.0.0.2 executor 1): boom")
    '10.0.0.2'
    >>> failed_task_host("boom") is None
    True
    """
    match = _LOST_TASK_HOST.search(text)
    return match.group(1) if match else None


def python_not_started(text: str) -> Optional[ExecutorEnvironmentError]:
    """The error for a job whose executors' Python Spark could not start at all (``Cannot run
    program``), from Spark's error text; None for another failure.

    Examples
    --------
    >>> print(python_not_started('... Cannot run program "/nowhere/bin/python": error=2 ...'))  # doctest: +ELLIPSIS
    the executors cannot run this job: on an executor's host, Spark could not start their Python '/nowhere/bin/python' ...
    >>> python_not_started("ValueError: bad row") is None
    True
    """
    cannot_run = _CANNOT_RUN.search(text)
    if cannot_run is None:
        return None
    host = failed_task_host(text)
    where = f"host {host}" if host else "an executor's host"
    return ExecutorEnvironmentError(
        f"the executors cannot run this job: on {where}, Spark could not start their Python {cannot_run.group(1)!r} "
        "(spark.pyspark.python), which must exist on every host; "
        f"to fix it, {SHIP_THE_ENVIRONMENT}")


def module_missing_in_unpickling(text: str) -> Optional[str]:
    """The module that an executor's Python lacked while it unpickled a job's function (before
    any of the job's own code ran: the executor's environment), from Spark's error text.

    Examples
    --------
    >>> module_missing_in_unpickling("... in read_command ... ModuleNotFoundError: No module named 'zoo_lite'")
    'zoo_lite'
    >>> module_missing_in_unpickling("... in my_function ... ModuleNotFoundError: No module named 'zoo_lite'") is None
    True
    """
    missing = _NO_MODULE.search(text)
    if missing is None or not any(frame in text[:missing.start()] for frame in _UNPICKLING):
        return None
    return missing.group(1)


def environment_error_of(error: BaseException, sc: "SparkContext") -> Optional[ExecutorEnvironmentError]:
    """The :class:`~zoo_lite.errors.ExecutorEnvironmentError` that a failed job shows, or None.

    Two failures are the executors' environment: Spark could not start their Python
    (:func:`python_not_started`), or it lacked a module while it unpickled the job's function
    (:func:`module_missing_in_unpickling`). For the second, one small job asks the executors what
    else of zoo_lite's core they lack, and on which hosts, for the message.

    Parameters
    ----------
    error : BaseException
        What the failed job raised.
    sc : pyspark.SparkContext
        Its context.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> environment_error_of(ValueError("bad row"), sc) is None
    True
    """
    text = str(error)
    not_started = python_not_started(text)
    if not_started is not None:
        return not_started
    module = module_missing_in_unpickling(text)
    if module is None:
        return None
    try:
        asked = tuple(dict.fromkeys((*JOB_MODULES, module)))
        lacking = [python for python in probe_executor_pythons(sc, asked, _PROBE_AFTER_FAILURE_TIMEOUT_S) if python.missing]
    except Exception:  # noqa: BLE001 - the message then says what the failure itself showed
        lacking = []
    if not lacking:
        lacking = [ExecutorPython(failed_task_host(text) or "an executor's host", sc.pythonExec, "?", ((module, ""),))]
    return ExecutorEnvironmentError(f"the executors cannot run this job: {_where_missing(lacking)}; {SHIP_THE_ENVIRONMENT}")


def _where_missing(lacking: Sequence[ExecutorPython]) -> str:
    return "; ".join(f"on host {python.host}, {python.executable}"
                     + (f" (Python {python.version})" if python.version != "?" else "")
                     + " cannot find " + ", ".join(repr(name) for name, _ in python.missing) for python in lacking)
