"""Spark Connect sessions: how zoo_lite opens, recognises and refuses them.

A Spark Connect session (Spark 4's ``SparkSession.builder.remote("sc://host:port")``, or
``SPARK_REMOTE``) talks to a Spark cluster through a Connect server over gRPC. It has DataFrames,
SQL and ``mapInPandas`` / ``mapInArrow`` (barrier ones too), but no SparkContext, no RDDs and no JVM
in this process. :func:`zoo_lite.init_orca_context` opens one with
``cluster_mode="spark-connect"``; this module holds what that needs, and the one refusal every
operation that needs a classic SparkContext gives on Connect.

The client needs pyspark's Connect dependencies (``pip install 'zoo_lite[connect]'``). This module
imports none of them until a Connect session is asked for, so classic sessions never load gRPC.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Mapping, Optional

from zoo_lite.errors import ClusterStartError, ContextError, InvalidArgumentError, SparkConnectUnsupportedError
from zoo_lite.waiting import call_within

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CONNECT_MODE",
    "remote_of",
    "is_connect_session",
    "context_of",
    "active_connect_session",
    "open_connect_session",
    "close_connect_session",
    "add_file_once",
    "read_added_file",
    "remote_url_of",
    "classic_only",
]

#: the ``cluster_mode`` of a Spark Connect session
CONNECT_MODE = "spark-connect"
#: how long the first answer of a Connect server may take (a server that has just started
#: compiles its first plans); an unreachable one otherwise makes pyspark's client retry for minutes
_FIRST_ANSWER_TIMEOUT_S = 120.0
_TCP_PROBE_TIMEOUT_S = 10.0
_CONNECT_MODULE = "pyspark.sql.connect.session"
#: pyspark's mark of a process that is a Spark Connect client (pyspark.sql.utils.is_remote)
_CONNECT_MODE_MARK = "SPARK_CONNECT_MODE_ENABLED"
#: whether zoo_lite set the mark, and so removes it when its session ends
_connect_mode_marked_here = False
#: (session id, file name) of each file :func:`add_file_once` gave a session
_added_files: set[tuple[str, str]] = set()


def remote_of(remote: Optional[str]) -> str:
    """The Connect URL to use: ``remote``, else the ``SPARK_REMOTE`` environment variable.

    Raises
    ------
    InvalidArgumentError
        Neither is given, or the URL is not a Spark Connect URL (``sc://host:port``).

    Examples
    --------
    >>> remote_of("sc://127.0.0.1:15002")
    'sc://127.0.0.1:15002'
    >>> remote_of("http://127.0.0.1:15002")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: remote='http://127.0.0.1:15002' is not a Spark Connect URL; use 'sc://host:port' (optionally with ';token=...' and other parameters)
    """
    chosen = remote if remote is not None else os.environ.get("SPARK_REMOTE")
    if chosen is None:
        raise InvalidArgumentError(
            "remote=None: cluster_mode='spark-connect' needs the Connect server's URL, as remote='sc://host:port' "
            "or in the environment variable SPARK_REMOTE")
    source = "remote" if remote is not None else "SPARK_REMOTE"
    if not isinstance(chosen, str) or not chosen.startswith("sc://"):
        raise InvalidArgumentError(f"{source}={chosen!r} is not a Spark Connect URL; use 'sc://host:port' "
                                   "(optionally with ';token=...' and other parameters)")
    return chosen


def is_connect_session(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (judged by its class; imports nothing).

    Examples
    --------
    >>> is_connect_session(object())
    False
    """
    return type(spark).__module__ == _CONNECT_MODULE


def context_of(spark: "SparkSession") -> Any:
    """The SparkContext of a classic session, and a Spark Connect session itself, which has none:
    what ``init_orca_context`` returns, and what the executors' checks run their job on.

    Examples
    --------
    >>> from zoo_lite import OrcaContext, init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> context_of(OrcaContext.get_spark_session()) is sc
    True
    """
    return spark if is_connect_session(spark) else spark.sparkContext


def active_connect_session() -> Optional["SparkSession"]:
    """This process's active Spark Connect session, or None (never imports the Connect client).

    Examples
    --------
    >>> active_connect_session() is None or is_connect_session(active_connect_session())
    True
    """
    module = sys.modules.get(_CONNECT_MODULE)
    if module is None:
        return None
    session = module.SparkSession.getActiveSession()
    return session if session is not None and not session.is_stopped else None


def remote_url_of(spark: "SparkSession") -> str:
    """``sc://host:port`` of a Connect session (without its parameters, which may hold a token)."""
    return f"sc://{spark.client._builder.endpoint}"


def _shown(url: str) -> str:
    """``url`` for a message: its parameters may hold a token, so they show as ``;...``.

    Examples
    --------
    >>> _shown("sc://h:15002/;token=secret"), _shown("sc://h:15002")
    ('sc://h:15002/;...', 'sc://h:15002')
    """
    address, _, parameters = url.partition(";")
    return f"{address};..." if parameters else address


def _check_client_installed() -> None:
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as missing:
        raise ContextError(
            f"cluster_mode='spark-connect' needs pyspark's Spark Connect client, which is not installed ({missing}); "
            "install it with: pip install 'zoo_lite[connect]'") from None


def _endpoint_of(url: str) -> tuple[str, int]:
    from pyspark.errors import PySparkValueError
    from pyspark.sql.connect.client import DefaultChannelBuilder

    try:
        builder = DefaultChannelBuilder(url)
    except PySparkValueError as invalid:
        raise InvalidArgumentError(f"remote={_shown(url)!r} is not a valid Spark Connect URL: {invalid}") from None
    host, _, port = builder.endpoint.rpartition(":")
    return host.strip("[]"), int(port)


def _check_reachable(url: str, host: str, port: int) -> None:
    """Fail at once where nothing listens (pyspark's client would retry for minutes)."""
    try:
        with socket.create_connection((host, port), timeout=_TCP_PROBE_TIMEOUT_S):
            pass
    except OSError as unreachable:
        raise ClusterStartError(
            f"no Spark Connect server answers at {url} ({type(unreachable).__name__}: {unreachable}); start one "
            "(docs/cluster.md, 'Spark Connect') or check remote= / SPARK_REMOTE") from None


def _wait_for_first_answer(session: "SparkSession", url: str, timeout_s: float) -> None:
    """Ask the server its Spark version, bounded by ``timeout_s``."""
    outcome = call_within(lambda: session.version, f"the Spark Connect server at {url} to answer", timeout_s,
                          "zoo_lite-connect-probe")
    if outcome.finished and outcome.error is None:
        return
    if outcome.error is not None:
        error = outcome.error
        raise ClusterStartError(f"the Spark Connect server at {url} refused the session: "
                                f"{type(error).__name__}: {str(error)[:1000]}") from None
    raise ClusterStartError(f"the Spark Connect server at {url} did not answer within {timeout_s:.0f} s; is it a "
                            "Spark Connect server, and is it overloaded?")


def _apply_conf(session: "SparkSession", conf: Mapping[str, str], url: str) -> None:
    """Set each of ``conf`` on the session; a setting the server will not change is an error, not
    a silent no-op (pyspark's builder ignores those)."""
    for key, value in conf.items():
        try:
            session.conf.set(key, value)
        except Exception as refused:  # noqa: BLE001 - the server's reason, named below
            raise InvalidArgumentError(
                f"conf[{key!r}]={value!r} cannot be set from a Spark Connect client ({type(refused).__name__}: "
                f"{str(refused).splitlines()[0][:300]}); set it where the Connect server at {url} starts") from None


def open_connect_session(remote: str, conf: Mapping[str, str], app_name: str = "zoo_lite",
                         timeout_s: float = _FIRST_ANSWER_TIMEOUT_S) -> "SparkSession":
    """A new Spark Connect session at ``remote`` that has answered once, with ``conf`` set.

    Raises
    ------
    ContextError
        pyspark's Connect client is not installed.
    InvalidArgumentError
        ``remote`` is not a valid URL, or a setting of ``conf`` cannot be set from a client.
    ClusterStartError
        Nothing listens at ``remote``, or the server did not answer within ``timeout_s``.
    """
    _check_client_installed()
    host, port = _endpoint_of(remote)
    shown = _shown(remote)
    _check_reachable(shown, host, port)
    from pyspark.sql import SparkSession

    global _connect_mode_marked_here
    _connect_mode_marked_here = _connect_mode_marked_here or _CONNECT_MODE_MARK not in os.environ
    # pyspark's own builder, not the Connect module's: it marks the process as a Connect client, so
    # that pyspark.sql.functions, pandas_udf and the other shared APIs build Connect plans
    session = SparkSession.builder.remote(remote).appName(app_name).create()
    try:
        _wait_for_first_answer(session, shown, timeout_s)
        _apply_conf(session, conf, shown)
    except BaseException:
        close_connect_session(session)
        raise
    return session


def close_connect_session(session: "SparkSession") -> None:
    """Stop a session :func:`open_connect_session` opened (the server keeps running), and unmark
    the process as a Connect client where zoo_lite marked it, so that a classic session can start
    in it again."""
    global _connect_mode_marked_here
    session.stop()
    if _connect_mode_marked_here and active_connect_session() is None:
        os.environ.pop(_CONNECT_MODE_MARK, None)
        _connect_mode_marked_here = False


def add_file_once(spark: "SparkSession", name: str, payload: bytes) -> None:
    """Give the Connect session ``spark`` the file ``name`` holding ``payload`` (an artifact of
    the session, which its tasks read with :func:`read_added_file`); once per session and name.

    A broadcast needs the SparkContext, and bytes in a UDF's closure would travel in every query's
    plan (a 50 MB model: 1.3 s per query here, against 0.6 s once for the artifact).
    """
    key = (spark.session_id, name)
    if key in _added_files:
        return
    with tempfile.TemporaryDirectory(prefix="zoo_lite-artifact-") as folder:
        path = os.path.join(folder, name)
        with open(path, "wb") as out:
            out.write(payload)
        spark.addArtifacts(path, file=True)
    _added_files.add(key)


def read_added_file(name: str) -> bytes:
    """In a task of a Connect session: the bytes of the file :func:`add_file_once` gave it."""
    from pyspark import SparkFiles

    with open(SparkFiles.get(name), "rb") as added:
        return added.read()


def classic_only(what: str, spark: Optional["SparkSession"]) -> SparkConnectUnsupportedError:
    """The error for ``what``, which needs a classic SparkContext, where the context is (or would
    be) the Spark Connect session ``spark``.

    Examples
    --------
    >>> print(str(classic_only("XShards.partition", None))[:74])
    XShards.partition needs a classic SparkContext (RDDs and the JVM), which a
    """
    where = remote_url_of(spark) if is_connect_session(spark) else "remote= or SPARK_REMOTE"
    return SparkConnectUnsupportedError(
        f"{what} needs a classic SparkContext (RDDs and the JVM), which a Spark Connect session does not have, and "
        f"this zoo_lite context is a Spark Connect session ({where}). On Spark Connect, zoo_lite gives you the "
        "session (OrcaContext.get_spark_session()) and its DataFrames; for XShards, Estimators, model UDFs and Ray "
        "on Spark, start a classic session instead, e.g. init_orca_context(cluster_mode='standalone', "
        "master='spark://...') (docs/cluster.md, 'Spark Connect')")
