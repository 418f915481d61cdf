"""The one place that owns the lifetime of the SparkSession and of Ray on Spark for zoo_lite.

``init_orca_context`` starts (or adopts) Spark for one of the supported cluster modes, optionally
starts Ray on it, and returns the SparkContext, as Orca did; ``stop_orca_context`` stops everything
zoo_lite started (Ray first, then Spark, then a loopback standalone cluster), and is registered
with ``atexit``.
"""

from __future__ import annotations

import atexit
import os
import re
import time
import threading
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeoutError
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from zoo_lite.errors import ClusterStartError, ContextError, ContextStoppedError, InvalidArgumentError
from zoo_lite.keywords import suggest_keywords
from zoo_lite.spark_settings import (
    RAY_KWARGS,
    SHIPPING_MODES,
    SPARK_KWARGS,
    RaySettings,
    SparkSettings,
    memory_to_mb,
    registered_executors,
    spark_master_and_conf,
    tensorflow_log_level,
)
from zoo_lite.spark_connect import (
    CONNECT_MODE,
    active_connect_session,
    classic_only,
    close_connect_session,
    context_of,
    is_connect_session,
    open_connect_session,
    remote_of,
    remote_url_of,
)
from zoo_lite.waiting import announced_wait

if TYPE_CHECKING:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from zoo_lite.ray_on_spark import RayContext
    from zoo_lite.standalone import LoopbackStandaloneCluster

__all__ = ["init_orca_context", "stop_orca_context", "init_nncontext", "OrcaContext"]

_LOG4J_CONFIG = Path(__file__).parent / "conf" / "log4j2.properties"
_PANDAS_READ_BACKENDS = ("spark", "pandas")
_EXECUTOR_WAIT_S = 120.0


@dataclass
class _ActiveContext:
    spark: "SparkSession"
    settings: SparkSettings
    ray_settings: RaySettings
    owns_spark: bool
    standalone: Optional["LoopbackStandaloneCluster"] = None
    ray: Optional["RayContext"] = None
    #: folders libraries may leave empty in this host's temp dir, absent when the context started
    tidy_if_empty: list[str] = field(default_factory=list)

    def stop(self) -> None:
        """Stop Ray, then Spark if zoo_lite started it, then the loopback standalone cluster; then
        remove the folders of ``tidy_if_empty`` that the run left empty."""
        try:
            if self.ray is not None:
                self.ray.stop()
        finally:
            try:
                if self.owns_spark and is_connect_session(self.spark):
                    close_connect_session(self.spark)
                elif self.owns_spark:
                    self.spark.stop()
            finally:
                try:
                    if self.standalone is not None:
                        self.standalone.stop()
                finally:
                    _remove_empty_folders(self.tidy_if_empty)


def _absent_library_folders() -> list[str]:
    """The folders libraries make in the temp dir (PyTorch's inductor cache, when zoo_lite's code
    builds an optimizer here or in local mode's workers) that are not there yet."""
    from zoo_lite.ray_on_spark.node_launch import library_temp_dirs

    return [folder for folder in library_temp_dirs() if not os.path.exists(folder)]


def _remove_empty_folders(folders: list[str]) -> None:
    from zoo_lite.ray_on_spark.watchdog import remove_empty_folders

    remove_empty_folders(folders)


_lock = threading.RLock()
_active: Optional[_ActiveContext] = None
_atexit_registered = False


def _split_kwargs(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Orca's Spark options and Ray options (``suggest_keywords`` has refused any other name)."""
    spark_kwargs = {k: v for k, v in kwargs.items() if k in SPARK_KWARGS}
    ray_kwargs = {k: v for k, v in kwargs.items() if k in RAY_KWARGS}
    return spark_kwargs, ray_kwargs


def _with_quiet_jvm_logging(conf: dict[str, str]) -> dict[str, str]:
    """Point the driver JVM at zoo_lite's log4j2 config, so that start-up noise is quiet too."""
    option = f"-Dlog4j2.configurationFile=file:{_LOG4J_CONFIG}"
    existing = conf.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" not in existing:
        conf["spark.driver.extraJavaOptions"] = f"{existing} {option}".strip()
    return conf


def _quiet_tensorflow_in_driver(settings: SparkSettings) -> None:
    """Hide TensorFlow's C++ INFO and WARNING lines in this process, unless the user set
    ``TF_CPP_MIN_LOG_LEVEL`` or ``spark_log_level`` asks for INFO lines.

    Done before Spark starts, because local mode's Python workers inherit this environment from
    the JVM. TensorFlow reads the variable once, when it is imported: a TensorFlow imported before
    ``init_orca_context`` keeps its start-up lines."""
    level = tensorflow_log_level(settings)
    if level is not None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", level)


def _build_session(master: Optional[str], conf: Mapping[str, str]) -> "SparkSession":
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: SparkConf loads its --conf and --name first
        SparkContext._ensure_initialized()
    else:
        _forget_an_earlier_contexts_conf(conf)
    launches_the_jvm = SparkContext._jvm is None
    spark_conf = SparkConf()
    for key, value in conf.items():
        spark_conf.set(key, value)
    if master is not None:
        spark_conf.setMaster(master)
    spark_conf.setIfMissing("spark.app.name", "zoo_lite")
    if launches_the_jvm:
        _conf_left_in_the_jvm.update(spark_conf.getAll())
    # pyspark takes the workers' interpreter from PYSPARK_PYTHON when the context starts
    python = conf.get("spark.pyspark.python")
    saved = os.environ.get("PYSPARK_PYTHON")
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    try:
        return SparkSession.builder.config(conf=spark_conf).getOrCreate()
    finally:
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved


#: The conf of the context that launched this process's JVM. pyspark launched it through
#: spark-submit, which made each setting a JVM system property; every later ``SparkConf`` loads
#: those as defaults, so a second context would silently inherit the first one's settings.
_conf_left_in_the_jvm: dict[str, str] = {}


def _forget_an_earlier_contexts_conf(conf: Mapping[str, str]) -> None:
    """Clear the JVM system properties that the first context's conf left, where this context's
    ``conf`` does not set them itself: each context gets its own settings, not a mix with the
    first one's (e.g. a quiet Python daemon that a bare executor Python cannot import).

    Examples
    --------
    >>> _forget_an_earlier_contexts_conf({})   # nothing was left yet, or no JVM runs
    """
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is None:
        return
    for key, value in list(_conf_left_in_the_jvm.items()):
        if jvm.System.getProperty(key) != value:
            del _conf_left_in_the_jvm[key]
        elif key not in conf:
            jvm.System.clearProperty(key)
            del _conf_left_in_the_jvm[key]


def _check_spark_submit() -> None:
    # spark-submit starts the JVM first and hands its gateway to Python through these variables
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        raise ContextError(
            "cluster_mode='spark-submit' takes the master from spark-submit, but this process was not "
            "launched by spark-submit; run it with spark-submit, or pick another cluster_mode such as 'local'"
        )



def _wait_for_executors(spark: "SparkSession", expected: int, timeout_s: float) -> None:
    """Block until the executors zoo_lite itself launched have registered, so that the first job
    (and Ray on Spark's barrier job) sees all of them."""
    deadline = time.monotonic() + timeout_s
    with announced_wait(f"{expected} Spark executor(s) to register", timeout_s):
        while registered_executors(spark) < expected:
            if time.monotonic() > deadline:
                spark.stop()
                raise ClusterStartError(
                    f"only {registered_executors(spark)} of num_nodes={expected} executors registered within "
                    f"{timeout_s:.0f} s; check that this machine has the memory and cores requested"
                )
            time.sleep(0.1)


#: bound on packing ``penv_archive`` (a 4 GB environment packs in minutes; the packer's own
#: wait for another process packing the same environment is bounded as long)
_PACK_TIMEOUT_S = 1800.0


def _pack_while_spark_starts(settings: SparkSettings) -> Optional["Future[str]"]:
    """The archive of the environment ``penv_archive`` names (``"auto"``, or a folder), packed in
    a thread while a standalone cluster starts; None where nothing is to be packed. Local mode
    ships nothing, so it never waits for a pack."""
    from zoo_lite.env_packing import penv_archive_needs_packing, resolve_penv_archive

    if (settings.cluster_mode not in SHIPPING_MODES or settings.penv_archive is None
            or not penv_archive_needs_packing(settings.penv_archive)):
        return None
    packer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zoo_lite-pack")
    try:
        return packer.submit(resolve_penv_archive, settings.penv_archive)
    finally:
        packer.shutdown(wait=False)


def _with_packed_archive(settings: SparkSettings, packing: Optional["Future[str]"]) -> SparkSettings:
    """``settings`` whose ``penv_archive`` is the archive ``packing`` made."""
    if packing is None:
        return settings
    with announced_wait(f"the environment penv_archive={settings.penv_archive!r} to be packed", _PACK_TIMEOUT_S):
        try:
            archive = packing.result(timeout=_PACK_TIMEOUT_S)
        except FuturesTimeoutError:
            raise ClusterStartError(
                f"packing penv_archive={settings.penv_archive!r} did not finish within {_PACK_TIMEOUT_S:.0f} s; pack it "
                "once with zoo_lite.env_packing.pack_environment() and pass the archive's path") from None
    return replace(settings, penv_archive=archive)


def _start_spark(settings: SparkSettings) -> _ActiveContext:
    if settings.cluster_mode == CONNECT_MODE:
        session = open_connect_session(remote_of(settings.remote), settings.conf)
        return _ActiveContext(session, settings, RaySettings(), owns_spark=True)
    standalone = None
    if settings.cluster_mode == "spark-submit":
        _check_spark_submit()
    packing = _pack_while_spark_starts(settings)
    if settings.cluster_mode == "standalone" and settings.master is None:
        from zoo_lite.standalone import LoopbackStandaloneCluster

        standalone = LoopbackStandaloneCluster.start(
            num_workers=settings.num_nodes, cores=int(settings.effective_cores), memory_mb=memory_to_mb(settings.memory)
        )
    try:
        settings = _with_packed_archive(settings, packing)
        master, conf = spark_master_and_conf(settings, standalone.master_url if standalone else None)
        spark = _build_session(master, _with_quiet_jvm_logging(conf))
        spark.sparkContext.setLogLevel(str(settings.spark_log_level).upper())
        if settings.cluster_mode == "local-cluster" or standalone is not None:
            _wait_for_executors(spark, settings.num_nodes, _EXECUTOR_WAIT_S)
    except BaseException:
        if standalone is not None:
            standalone.stop()
        raise
    return _ActiveContext(spark, settings, RaySettings(), owns_spark=True, standalone=standalone)


def _adopt_running_spark(settings: SparkSettings) -> Optional[_ActiveContext]:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    connect_session = active_connect_session()
    if connect_session is not None:
        warnings.warn(
            f"a Spark Connect session ({remote_url_of(connect_session)}) is already active; zoo_lite uses it as it is "
            "and ignores cluster_mode, remote and conf; stop_orca_context() will leave it open",
            stacklevel=3,
        )
        return _ActiveContext(connect_session, SparkSettings(cluster_mode=CONNECT_MODE), RaySettings(), owns_spark=False)
    running = SparkContext._active_spark_context
    if running is None:
        return None
    warnings.warn(
        f"a SparkContext (master={running.master!r}) is already running; zoo_lite uses it as it is and "
        "ignores cluster_mode, cores, memory and conf; stop_orca_context() will leave it running",
        stacklevel=3,
    )
    return _ActiveContext(SparkSession(running), settings, RaySettings(), owns_spark=False)


@suggest_keywords(also=SPARK_KWARGS + RAY_KWARGS, hint="Spark settings go in conf={...}.")
def init_orca_context(
    cluster_mode: Optional[str] = "local",
    cores: Union[int, str, None] = None,
    memory: str = "2g",
    num_nodes: int = 1,
    init_ray_on_spark: bool = False,
    conf: Optional[Mapping[str, str]] = None,
    **kwargs: Any,
) -> "SparkContext":
    """Start Spark for ``cluster_mode`` and return its SparkContext.

    Parameters
    ----------
    cluster_mode : str, default "local"
        ``"local"`` (``local[cores]``), ``"local-cluster"`` (``num_nodes`` executor JVMs on this
        machine), ``"standalone"`` (``master="spark://..."``, or a loopback cluster started and
        stopped by zoo_lite), ``"spark-submit"`` (master and conf from spark-submit),
        ``"yarn-client"``, ``"k8s-client"`` or ``"spark-connect"`` (a Spark Connect session at
        ``remote="sc://host:port"`` or ``SPARK_REMOTE``; the server's own start decides cores,
        memory and nodes). None means ``"local"``; with ``SPARK_REMOTE`` set, ``"local"`` means
        ``"spark-connect"`` (with a warning), as it does for pyspark.
    cores : int or "*", optional
        Cores per executor; in local mode, the number of local cores (default all, ``"*"``).
        Defaults: all cores locally, ``cpu_count // num_nodes`` for local-cluster, 2 elsewhere.
    memory : str, default "2g"
        Memory per executor; the driver's in local mode.
    num_nodes : int, default 1
        Number of executors (standalone workers for a loopback standalone cluster).
    init_ray_on_spark : bool, default False
        Also start Ray on the Spark executors.
    conf : dict, optional
        Extra Spark settings; they win over every default zoo_lite sets.
    **kwargs
        Orca's Spark options (``master``, ``spark_log_level`` (default "WARN"), ``spark_ui``
        (default False), ``python_location``, ``driver_cores``, ``driver_memory``,
        ``extra_executor_memory_for_ray``, ``extra_python_lib``, ``penv_archive``, ``jars``,
        ``container_image``, ``redirect_spark_log``), zoo_lite's ``remote`` (the Connect URL of
        ``cluster_mode="spark-connect"``) and Ray options (``object_store_memory``,
        ``env``, ``extra_params``, ``num_ray_nodes``, ``ray_node_cpu_cores``, ``include_webui``,
        ``system_config``), and zoo_lite's own ``ray_start_timeout_s`` (default 120) and
        ``heartbeat_timeout_s`` (default 30: a Ray node whose host sends no heartbeat for that
        long counts as lost). Any other name is an error. Below ``spark_log_level="INFO"``, zoo_lite
        also sets ``TF_CPP_MIN_LOG_LEVEL=2`` (TensorFlow's C++ INFO and WARNING lines hidden) in
        this process and Spark's Python workers, unless the environment already has a value.
        ``penv_archive`` ships the driver's environment to the executors (standalone,
        ``local-cluster``, ``yarn-client``, ``k8s-client``; unused in local mode): an archive
        (conda-pack, venv-pack) or its URI, the folder of a venv or conda environment, or
        ``"auto"`` for the running one; zoo_lite packs folders and ``"auto"`` once per state of the
        environment (:mod:`zoo_lite.env_packing`).

    Returns
    -------
    pyspark.SparkContext or pyspark.sql.SparkSession
        The context; a second call while one is active warns and returns the active one.
        A SparkContext started outside zoo_lite is adopted as it is (with a warning), and
        :func:`stop_orca_context` leaves it running. A Spark Connect session has no
        SparkContext: with ``cluster_mode="spark-connect"`` (or an active Connect session, which
        is adopted the same way) the session itself is returned.

    Raises
    ------
    UnknownKeywordError
        A keyword argument it does not take; the message names the closest ones it takes. A
        TypeError, and an InvalidArgumentError.
    InvalidArgumentError
        An invalid value: an unsupported ``cluster_mode``,
        ``cores``, ``memory`` or ``num_nodes`` that is not a positive amount, ``cores="*"``
        outside local mode, a ``master`` URL of the wrong kind, or more ``num_ray_nodes`` than
        there can be Ray nodes.
    ContextError
        ``cluster_mode`` cannot start from this process: ``"spark-submit"`` outside
        spark-submit, ``"yarn-client"`` without ``HADOOP_CONF_DIR``, a cluster deploy mode
        (``"yarn-cluster"``, ``"k8s-cluster"``), which needs spark-submit, a classic mode other
        than ``"local"`` while ``SPARK_REMOTE`` is set, or ``"spark-connect"`` without pyspark's
        Connect client (``pip install 'zoo_lite[connect]'``).
    SparkConnectUnsupportedError
        ``init_ray_on_spark=True`` on a Spark Connect session.
    ClusterStartError
        The executors (or Ray's nodes) did not start; the message holds the tail of their output.
        Or no Spark Connect server answered at ``remote``.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, stop_orca_context
    >>> sc = init_orca_context(cluster_mode="local", cores=2)
    >>> sc.parallelize(range(10)).sum()
    45
    >>> init_orca_context(cores=1) is sc  # a second call warns and returns the active context
    True
    >>> stop_orca_context()
    """
    global _active, _atexit_registered
    spark_kwargs, ray_kwargs = _split_kwargs(kwargs)
    with _lock:
        if _active is not None:
            warnings.warn(
                "init_orca_context() was called while a zoo_lite context is active; returning the "
                "active context unchanged (call stop_orca_context() first to start a different one)",
                stacklevel=2,
            )
            return context_of(_active.spark)
        settings = SparkSettings(
            cluster_mode=_mode_given_spark_remote(cluster_mode or "local"), cores=cores, memory=memory,
            num_nodes=num_nodes, conf=_conf_dict(conf), **spark_kwargs,
        )
        ray_settings = RaySettings(**ray_kwargs)
        if init_ray_on_spark and (settings.cluster_mode == CONNECT_MODE or active_connect_session() is not None):
            raise classic_only("init_ray_on_spark=True (Ray on Spark)", None)
        _check_ray_nodes_fit(settings, ray_settings, init_ray_on_spark)
        _quiet_tensorflow_in_driver(settings)
        absent_folders = _absent_library_folders()
        context = _adopt_running_spark(settings) or _start_spark(settings)
        context.ray_settings = ray_settings
        context.tidy_if_empty = absent_folders
        if init_ray_on_spark:
            try:
                context.ray = _start_ray(context)
            except BaseException:
                context.stop()
                raise
        _active = context
        _serve_ray_context_get()
        if not _atexit_registered:
            atexit.register(stop_orca_context)
            _atexit_registered = True
        return context_of(context.spark)


def _mode_given_spark_remote(cluster_mode: str) -> str:
    """``cluster_mode``, or ``"spark-connect"`` where ``SPARK_REMOTE`` is set and it is ``"local"``:
    pyspark itself opens a Connect session whenever ``SPARK_REMOTE`` is set."""
    spark_remote = os.environ.get("SPARK_REMOTE")
    if not spark_remote or cluster_mode == CONNECT_MODE:
        return cluster_mode
    if cluster_mode == "local":
        warnings.warn(f"SPARK_REMOTE={spark_remote!r} is set: zoo_lite opens a Spark Connect session there "
                      "(cluster_mode='spark-connect'), as pyspark does; unset SPARK_REMOTE for a local session",
                      stacklevel=3)
        return CONNECT_MODE
    raise ContextError(f"SPARK_REMOTE={spark_remote!r} is set, so pyspark would open a Spark Connect session, and "
                       f"cluster_mode={cluster_mode!r} needs a classic one; unset SPARK_REMOTE, or use "
                       "cluster_mode='spark-connect'")


def _conf_dict(conf: Any) -> Any:
    """``conf`` as a dict; None (Orca's default) is none. Any other type is left for
    :class:`SparkSettings` to refuse with its message."""
    if conf is None:
        return {}
    return dict(conf) if isinstance(conf, Mapping) else conf


def _serve_ray_context_get() -> None:
    """Tell Ray on Spark how ``RayContext.get()`` finds the active context's Ray: this module
    imports ``ray_on_spark``, never the reverse, so the lookup is handed over (at the first
    context, since importing zoo_lite imports no Ray on Spark)."""
    from zoo_lite.ray_on_spark.cluster import serve_active_ray_context

    serve_active_ray_context(_ray_context_for_get)


def _ray_context_for_get(initialize: bool) -> Optional["RayContext"]:
    if initialize:
        return ray_context_started_on_demand()
    return _require_active().ray


def _mode_of_master(master: Optional[str]) -> dict[str, Any]:
    """The ``init_orca_context`` arguments that give a session with Spark master ``master``.

    Examples
    --------
    >>> _mode_of_master("local[3]"), _mode_of_master("spark://10.0.0.1:7077")
    ({'cluster_mode': 'local', 'cores': 3}, {'cluster_mode': 'standalone', 'master': 'spark://10.0.0.1:7077'})
    """
    if master is None:
        return {"cluster_mode": "local"}
    local = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master)
    if local:
        cores = local.group(1) or "1"
        return {"cluster_mode": "local", "cores": cores if cores == "*" else int(cores)}
    local_cluster = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]", master)
    if local_cluster:
        nodes, cores, memory_mb = (int(group) for group in local_cluster.groups())
        return {"cluster_mode": "local-cluster", "num_nodes": nodes, "cores": cores, "memory": f"{memory_mb}m"}
    if master.startswith("spark://"):
        return {"cluster_mode": "standalone", "master": master}
    if master == "yarn":
        return {"cluster_mode": "yarn-client"}
    if master.startswith("k8s://"):
        return {"cluster_mode": "k8s-client", "master": master}
    raise InvalidArgumentError(
        f"init_nncontext: spark.master={master!r} in conf is not a master zoo_lite can start; use 'local[N]', "
        "'local-cluster[N,C,M]', 'spark://host:port', 'yarn' or 'k8s://...', or call init_orca_context(cluster_mode=...)"
    )


@suggest_keywords
def init_nncontext(conf: Union["SparkConf", str, Mapping[str, str], None] = None, spark_log_level: str = "WARN",
                   redirect_spark_log: bool = True) -> "SparkContext":
    """Orca's ``init_nncontext`` (``from zoo import init_nncontext``): the active SparkContext,
    or a new one started from ``conf``.

    Orca code calls it to get the context that ``init_orca_context`` started; that is what it
    returns then, unchanged. With no context active it starts one through
    :func:`init_orca_context`, whose cluster mode follows ``spark.master`` in ``conf``
    (``local[N]`` by default, all cores; under spark-submit, ``cluster_mode="spark-submit"``).

    Parameters
    ----------
    conf : pyspark.SparkConf, str or dict, optional
        The Spark settings of a new context (``spark.master`` among them picks the cluster mode),
        or, as a string, its application name. Ignored, with a warning, when a context is active.
    spark_log_level : str, default "WARN"
        Spark's log level for a new context.
    redirect_spark_log : bool, default True
        Orca's option; accepted for compatibility.

    Returns
    -------
    pyspark.SparkContext
        The active context (:meth:`OrcaContext.get_spark_context`).

    Raises
    ------
    InvalidArgumentError
        ``conf`` is of another type, or names a ``spark.master`` zoo_lite cannot start.

    Examples
    --------
    >>> from zoo_lite import init_nncontext, init_orca_context, stop_orca_context
    >>> stop_orca_context()  # start from no context
    >>> sc = init_nncontext("my app")  # none active: starts local[*] under that name
    >>> sc.appName
    'my app'
    >>> init_nncontext() is sc  # Orca code asking for the context
    True
    >>> stop_orca_context()
    """
    with _lock:
        if _active is not None:
            if conf is not None:
                warnings.warn(f"init_nncontext(conf={conf!r}) while a zoo_lite context is active: conf is ignored and "
                              "the active context returned (call stop_orca_context() first to start another)", stacklevel=2)
            return _active.spark.sparkContext
        settings = _conf_of_nncontext(conf)
        mode = {"cluster_mode": "spark-submit"} if "PYSPARK_GATEWAY_PORT" in os.environ else \
            _mode_of_master(settings.pop("spark.master", None))
        return init_orca_context(**mode, conf=settings, spark_log_level=spark_log_level, redirect_spark_log=redirect_spark_log)


def _conf_of_nncontext(conf: Any) -> dict[str, str]:
    if conf is None:
        return {}
    if isinstance(conf, str):  # Orca: a string is the application name
        return {"spark.app.name": conf}
    if isinstance(conf, Mapping):
        return {str(key): str(value) for key, value in conf.items()}
    if hasattr(conf, "getAll"):  # a SparkConf
        return {str(key): str(value) for key, value in conf.getAll()}
    raise InvalidArgumentError(
        f"init_nncontext(conf={conf!r}): conf must be a pyspark.SparkConf, a dict of Spark settings or an "
        "application name (str), or None"
    )


def stop_orca_context() -> None:
    """Stop what :func:`init_orca_context` started: Ray (every node's processes), Spark (if zoo_lite
    started it) and a loopback standalone cluster. Calling it again, or with no active context,
    does nothing.

    It is registered with ``atexit`` by the first :func:`init_orca_context`, so a script that
    does not call it still stops everything when the interpreter exits. Collections built on a
    stopped context raise :class:`ContextStoppedError` when used.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, stop_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> stop_orca_context()
    >>> OrcaContext.is_active()
    False
    >>> OrcaContext.get_spark_context()
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ContextStoppedError: no zoo_lite context is active (...); call init_orca_context() first
    >>> stop_orca_context()  # idempotent
    """
    global _active
    with _lock:
        context, _active = _active, None
        if context is not None:
            context.stop()


def _check_ray_nodes_fit(settings: SparkSettings, ray_settings: RaySettings, init_ray_on_spark: bool) -> None:
    """Refuse more Ray nodes than there can be before starting anything: more than one in local
    mode, or more than the executors where zoo_lite launches them; elsewhere Ray on Spark checks
    after Spark is up."""
    if settings.cluster_mode == "local" and (ray_settings.num_ray_nodes or 1) > 1:
        raise InvalidArgumentError(
            f"num_ray_nodes={ray_settings.num_ray_nodes} with cluster_mode='local': local mode runs one Ray node; "
            "use cluster_mode='local-cluster' with num_nodes for several"
        )
    launched_here = settings.cluster_mode == "local-cluster" or (settings.cluster_mode == "standalone" and settings.master is None)
    if init_ray_on_spark and launched_here and (ray_settings.num_ray_nodes or 0) > settings.num_nodes:
        raise InvalidArgumentError(
            f"num_ray_nodes={ray_settings.num_ray_nodes} is more than the {settings.num_nodes} Spark executor(s) of "
            f"num_nodes={settings.num_nodes}; Ray on Spark starts one node per executor: lower num_ray_nodes or raise num_nodes"
        )


def _start_ray(context: _ActiveContext) -> "RayContext":
    from zoo_lite.ray_on_spark import start_ray_on_spark

    # OrcaContext's switches as they are now travel with the settings: Ray on Spark and the
    # executors read them from there, never from this process's globals
    context.ray_settings = replace(context.ray_settings, log_output=OrcaContext.log_output,
                                   barrier_mode=OrcaContext.barrier_mode)
    cores = context.settings.effective_cores
    local_cores = (os.cpu_count() or 1) if cores == "*" else int(cores)
    return start_ray_on_spark(context.spark, context.ray_settings, context.settings.cluster_mode, local_cores)


def ray_context_started_on_demand(add_missing_nodes: bool = False) -> "RayContext":
    """The active context's Ray, started now with the context's Ray options if it has none yet
    (the Estimators call this, so that ``init_ray_on_spark=True`` is optional); a Ray that lost
    its head (or local mode's one node) is started again.

    A lost executor's node is dropped; a replacement is started at once only on an executor whose
    host has no node left (Spark tasks there need one to reach Ray), or when no node is left.
    With ``add_missing_nodes``, nodes are started on every executor Spark gave back (the
    Estimators ask for that between epochs, where the launch delays nothing else)."""
    with _lock:
        context = _require_active()
        if context.ray is not None and context.ray.lost_nodes():
            _repair_ray(context)
        if context.ray is not None:
            context.ray.add_missing_nodes(context.spark, only_where_needed=not add_missing_nodes)
        if context.ray is None:
            context.ray = _start_ray(context)
        return context.ray


def _repair_ray(context: _ActiveContext) -> None:
    """Replace the lost worker nodes of the context's Ray; where the head was lost, end what is
    left so that the caller starts a new cluster (Ray ends a driver left without its head)."""
    assert context.ray is not None
    if not context.ray.head_lost():
        context.ray.replace_lost_nodes(context.spark)
        return
    import logging

    logging.getLogger("zoo_lite").warning(
        "Ray's head node was lost (%s); restarting Ray on Spark",
        "; ".join(f"{name}: {reason}" for name, reason in sorted(context.ray.lost_node_reasons().items())))
    ray, context.ray = context.ray, None
    ray.stop()


def _require_active() -> _ActiveContext:
    if _active is None:
        raise ContextStoppedError(
            "no zoo_lite context is active (it was never started, or stop_orca_context() was called); "
            "call init_orca_context() first"
        )
    return _active


def require_classic_session(what: str) -> "SparkSession":
    """The active classic SparkSession; raises ContextStoppedError when no context is active, and
    SparkConnectUnsupportedError naming ``what`` when the context is a Spark Connect session.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> _ = init_orca_context(cores=2)
    >>> require_classic_session("XShards").range(3).count()
    3
    """
    spark = _require_active().spark
    if is_connect_session(spark):
        raise classic_only(what, spark)
    return spark


class _OrcaContextMeta(type):
    """Class-level settings of :class:`OrcaContext`, validated on assignment (Orca's names)."""

    _pandas_read_backend = "pandas"   # Orca's was "spark"; pandas' reader is 2.5x faster here (docs/guides/xshards.md)
    _log_output = False
    _barrier_mode = True
    _shard_size_value: Optional[int] = None
    _serialize_data_creator = False
    _eager_mode_value = False
    _warm_workers = True

    @property
    def pandas_read_backend(cls) -> str:
        """Default ``backend`` of the pandas readers: ``"pandas"`` (the default) or ``"spark"``.

        Orca's default was ``"spark"``; zoo_lite's is ``"pandas"``, measured faster on every
        benchmark (``benchmarks/RESULTS.md``, bench_xshards).

        Raises
        ------
        InvalidArgumentError
            On assignment of any other value.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext.pandas_read_backend
        'pandas'
        >>> OrcaContext.pandas_read_backend = "spark"  # read_csv etc. now use Spark's readers
        >>> OrcaContext.pandas_read_backend = "dask"
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: OrcaContext.pandas_read_backend='dask' is not supported; use one of ['spark', 'pandas']
        >>> OrcaContext.pandas_read_backend = "pandas"
        """
        return cls._pandas_read_backend

    @pandas_read_backend.setter
    def pandas_read_backend(cls, value: str) -> None:
        if value not in _PANDAS_READ_BACKENDS:
            raise InvalidArgumentError(
                f"OrcaContext.pandas_read_backend={value!r} is not supported; use one of {list(_PANDAS_READ_BACKENDS)}"
            )
        cls._pandas_read_backend = value

    @property
    def log_output(cls) -> bool:
        """Show the output of remote processes on the driver.

        Read when Ray on Spark starts: set it before :func:`init_orca_context` (or before the
        first Estimator starts Ray). Any value is stored as a bool.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext.log_output
        False
        >>> OrcaContext.log_output = True  # Ray workers' prints now appear on the driver
        >>> OrcaContext.log_output = False
        """
        return cls._log_output

    @log_output.setter
    def log_output(cls, value: bool) -> None:
        cls._log_output = bool(value)

    @property
    def barrier_mode(cls) -> bool:
        """Start Ray on Spark with a barrier-mode job (needs a fixed set of executors).

        Read when Ray on Spark starts, like :attr:`log_output`. Set it to False where barrier
        jobs cannot run, e.g. under dynamic allocation. Any value is stored as a bool.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext.barrier_mode
        True
        >>> OrcaContext.barrier_mode = False
        >>> OrcaContext.barrier_mode = True
        """
        return cls._barrier_mode

    @barrier_mode.setter
    def barrier_mode(cls, value: bool) -> None:
        cls._barrier_mode = bool(value)

    @property
    def warm_workers(cls) -> bool:
        """Keep idle worker processes with the framework imported, for the next Estimator (on by default).

        A new Estimator's workers then start in about a second instead of paying the framework's
        import (TensorFlow's is about 5 s per worker): on Ray, each node keeps as many idle
        actors per framework as that framework's last group ran there (at most 4); on the Spark
        backend, each Python worker that ran a Keras task keeps one child process ready. They
        hold memory while they wait (about 0.4 GiB each for PyTorch, 0.75 GiB for TensorFlow),
        none where less than 3 GiB is available, and no CPU time that anything else wants. Set it
        to False to turn them off: the next Estimator ends the idle ones, and
        :func:`stop_orca_context` ends them in any case. See ``docs/cluster.md``.

        Raises
        ------
        InvalidArgumentError
            On assignment of anything but a bool.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext.warm_workers
        True
        >>> OrcaContext.warm_workers = False   # every Estimator starts its own worker processes
        >>> OrcaContext.warm_workers = "no"
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: OrcaContext.warm_workers='no' must be True or False
        >>> OrcaContext.warm_workers = True
        """
        return cls._warm_workers

    @warm_workers.setter
    def warm_workers(cls, value: bool) -> None:
        cls._warm_workers = _checked_bool_setting("warm_workers", value)

    @property
    def _shard_size(cls) -> Optional[int]:  # type: ignore[override]
        """Rows per shard the readers aim for; None keeps one shard per partition."""
        return cls._shard_size_value

    @_shard_size.setter
    def _shard_size(cls, value: Optional[int]) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidArgumentError(f"OrcaContext._shard_size={value!r} must be a positive integer or None")
        cls._shard_size_value = value

    @property
    def serialize_data_creator(cls) -> bool:
        """Run data creator functions one at a time on each node (Orca's file-lock option).

        Any value is stored as a bool.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext.serialize_data_creator
        False
        >>> OrcaContext.serialize_data_creator = True
        >>> OrcaContext.serialize_data_creator = False
        """
        return cls._serialize_data_creator

    @serialize_data_creator.setter
    def serialize_data_creator(cls, value: bool) -> None:
        cls._serialize_data_creator = bool(value)

    @property
    def _eager_mode(cls) -> bool:
        """Orca's eager mode: compute and cache every SparkXShards when it is made.

        Off by default: zoo_lite's collections are lazy, as Spark's RDDs are, and
        ``benchmarks/bench_xshards.py`` measures what eager caching costs. When it is on, each
        new SparkXShards is cached and computed at once (so errors surface at the call that made
        it), and making a new collection from one with ``transform_shard``, ``map_partitions``,
        ``repartition``, ``partition_by``, ``split`` or ``zip`` drops the parent's cache unless
        the user called :meth:`~zoo_lite.data.SparkXShards.cache` on it, as Orca did.

        Raises
        ------
        InvalidArgumentError
            On assignment of anything but a bool.

        Examples
        --------
        >>> from zoo_lite import OrcaContext
        >>> OrcaContext._eager_mode
        False
        >>> OrcaContext._eager_mode = "yes"
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: OrcaContext._eager_mode='yes' must be True or False
        """
        return cls._eager_mode_value

    @_eager_mode.setter
    def _eager_mode(cls, value: bool) -> None:
        cls._eager_mode_value = _checked_bool_setting("_eager_mode", value)


def _checked_bool_setting(name: str, value: Any) -> bool:
    """``value`` of the setting ``OrcaContext.<name>``, refused unless it is a bool."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"OrcaContext.{name}={value!r} must be True or False")
    return value


class OrcaContext(metaclass=_OrcaContextMeta):
    """Getters for the active context, and Orca's global settings.

    The settings are class attributes, validated on assignment: :attr:`pandas_read_backend`,
    :attr:`log_output`, :attr:`barrier_mode`, :attr:`serialize_data_creator`,
    :attr:`warm_workers` and ``_shard_size``. The getters raise :class:`ContextStoppedError` when no context is active.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> sc = init_orca_context(cores=2)
    >>> OrcaContext.get_spark_context() is sc
    True
    >>> OrcaContext.pandas_read_backend = "spark"    # Orca's default reader backend
    >>> OrcaContext.pandas_read_backend = "pandas"   # zoo_lite's default
    """

    @staticmethod
    def get_spark_context() -> "SparkContext":
        """The active SparkContext; raises ContextStoppedError when there is none.

        Returns
        -------
        pyspark.SparkContext
            The one :func:`init_orca_context` returned.

        Raises
        ------
        ContextStoppedError
            No context is active (never started, or :func:`stop_orca_context` was called).

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> sc = init_orca_context(cores=2)
        >>> OrcaContext.get_spark_context() is sc
        True
        >>> OrcaContext.get_spark_context().parallelize(range(4), 2).sum()
        6
        """
        return require_classic_session("OrcaContext.get_spark_context()").sparkContext

    @staticmethod
    def get_spark_session() -> "SparkSession":
        """The active SparkSession; raises ContextStoppedError when there is none.

        Returns
        -------
        pyspark.sql.SparkSession
            The session of the active SparkContext.

        Raises
        ------
        ContextStoppedError
            No context is active.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> sc = init_orca_context(cores=2)
        >>> spark = OrcaContext.get_spark_session()
        >>> spark.sparkContext is sc, spark.range(5).count()
        (True, 5)
        """
        return _require_active().spark

    @staticmethod
    def get_sql_context() -> "SparkSession":
        """Orca's name for the SQL entry point; the SparkSession serves that role in Spark 4.

        Returns
        -------
        pyspark.sql.SparkSession
            The same object as :meth:`get_spark_session`.

        Raises
        ------
        ContextStoppedError
            No context is active.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> _ = init_orca_context(cores=2)
        >>> OrcaContext.get_sql_context() is OrcaContext.get_spark_session()
        True
        >>> OrcaContext.get_sql_context().sql("SELECT 1 + 1 AS two").first().two
        2
        """
        return _require_active().spark

    @staticmethod
    def get_ray_context() -> Optional["RayContext"]:
        """The :class:`~zoo_lite.ray_on_spark.RayContext` of the active context; None when Ray was
        not started (``init_ray_on_spark=False`` and no Estimator has needed it yet).

        Returns
        -------
        RayContext or None
            The running Ray cluster: its ``address`` and its ``nodes``, one per executor.

        Raises
        ------
        ContextStoppedError
            No context is active.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> ray_context = OrcaContext.get_ray_context()
        >>> len(ray_context.nodes)  # local mode: one Ray node
        1
        """
        return _require_active().ray

    @staticmethod
    def get_session_kind() -> str:
        """The kind of Spark session of the active context: ``"classic"`` (a SparkContext in this
        process) or ``"connect"`` (a Spark Connect session, ``cluster_mode="spark-connect"``).

        On ``"connect"``, :meth:`get_spark_session` gives the session, and what needs a
        SparkContext raises :class:`~zoo_lite.errors.SparkConnectUnsupportedError` at once.

        Returns
        -------
        str
            ``"classic"`` or ``"connect"``.

        Raises
        ------
        ContextStoppedError
            No context is active.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> _ = init_orca_context(cores=2)
        >>> OrcaContext.get_session_kind()
        'classic'
        """
        return "connect" if is_connect_session(_require_active().spark) else "classic"

    @staticmethod
    def is_active() -> bool:
        """Whether a zoo_lite context is active.

        Returns
        -------
        bool
            True between :func:`init_orca_context` and :func:`stop_orca_context`.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> _ = init_orca_context(cores=2)
        >>> OrcaContext.is_active()
        True
        """
        return _active is not None
