"""What the arguments of ``init_orca_context`` mean for Spark: a validated config and a pure
translation into a master URL and a Spark conf. No Spark is started here, so every rule can be
tested without a cluster; :func:`registered_executors` only reads a running session (both the
context and Ray on Spark need it, and neither imports the other for it)."""

from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Union

from zoo_lite.env_packing import check_penv_archive, local_path
from zoo_lite.errors import ContextError, InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CLUSTER_MODES",
    "SparkSettings",
    "RaySettings",
    "SPARK_KWARGS",
    "RAY_KWARGS",
    "memory_to_mb",
    "spark_master_and_conf",
    "tensorflow_log_level",
    "registered_executors",
    "cores_per_executor",
    "registered_executor_hosts",
    "drop_executors",
]

CLUSTER_MODES = ("local", "local-cluster", "standalone", "spark-submit", "yarn-client", "k8s-client", "spark-connect")
_CLUSTER_SUBMIT_MODES = ("yarn-cluster", "k8s-cluster")
_LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF", "TRACE")
# the spark_log_level values that ask for start-up chatter (TensorFlow's C++ INFO lines) too
_VERBOSE_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO")
#: TF_CPP_MIN_LOG_LEVEL where neither the user nor spark_log_level says otherwise: 2 hides
#: TensorFlow's C++ INFO and WARNING lines, and keeps its errors
QUIET_TF_CPP_MIN_LOG_LEVEL = "2"
_MEMORY_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_MB_PER_UNIT = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}

# Orca's Spark keyword arguments of init_orca_context, plus zoo_lite's own (spark_ui).
SPARK_KWARGS = (
    "master",
    "spark_log_level",
    "spark_ui",
    "redirect_spark_log",
    "python_location",
    "driver_cores",
    "driver_memory",
    "extra_executor_memory_for_ray",
    "extra_python_lib",
    "penv_archive",
    "jars",
    "container_image",
    "remote",
)
#: settings of the cluster itself, which a Spark Connect client cannot choose: the server's own
#: start decides them (their defaults here mean "not given")
_SERVER_SIDE_SETTINGS = ("master", "cores", "num_nodes", "python_location", "driver_cores", "driver_memory",
                         "extra_executor_memory_for_ray", "extra_python_lib", "penv_archive", "jars", "container_image")
#: the shortest heartbeat_timeout_s: heartbeats go every second, and a loaded host may miss a few
_MIN_HEARTBEAT_TIMEOUT_S = 3.0
#: per Spark application, ``host:port`` of the block managers of executors :func:`drop_executors`
#: dropped that Spark still lists
_DROPPED_BLOCK_MANAGERS: dict[str, set[str]] = {}
# Orca's Ray keyword arguments (and zoo_lite's own); Ray on Spark consumes them.
RAY_KWARGS = (
    "object_store_memory",
    "env",
    "extra_params",
    "num_ray_nodes",
    "ray_node_cpu_cores",
    "include_webui",
    "system_config",
    "ray_start_timeout_s",
    "heartbeat_timeout_s",
)


def memory_to_mb(memory: str, argument: str = "memory") -> int:
    """Parse a JVM-style memory string ("512m", "2g", "1024") into whole megabytes.

    Examples
    --------
    >>> memory_to_mb("2g")
    2048
    """
    match = _MEMORY_RE.match(str(memory))
    if match is None:
        raise InvalidArgumentError(
            f"{argument}={memory!r} is not a memory size; use a number with a unit, such as '512m' or '2g'"
        )
    number, unit = int(match.group(1)), match.group(2).lower()
    megabytes = int(number * _MB_PER_UNIT[unit])
    if megabytes < 1:
        raise InvalidArgumentError(f"{argument}={memory!r} is less than one megabyte; use at least '1m'")
    return megabytes


def _check_positive_int(value: object, argument: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{argument}={value!r} must be a positive integer")


@dataclass(frozen=True)
class SparkSettings:
    """The Spark side of ``init_orca_context``, validated on construction.

    Examples
    --------
    >>> SparkSettings(cluster_mode="local", cores=2).cluster_mode
    'local'
    """

    cluster_mode: str = "local"
    cores: Union[int, str, None] = None
    memory: str = "2g"
    num_nodes: int = 1
    conf: Mapping[str, str] = field(default_factory=dict)
    master: Optional[str] = None
    spark_log_level: str = "WARN"
    spark_ui: bool = False
    redirect_spark_log: bool = True
    python_location: Optional[str] = None
    driver_cores: Optional[int] = None
    driver_memory: Optional[str] = None
    extra_executor_memory_for_ray: Optional[str] = None
    extra_python_lib: Optional[str] = None
    penv_archive: Optional[str] = None
    jars: Optional[str] = None
    container_image: Optional[str] = None
    remote: Optional[str] = None

    def __post_init__(self) -> None:
        if self.cluster_mode in _CLUSTER_SUBMIT_MODES:
            raise ContextError(
                f"cluster_mode={self.cluster_mode!r} runs the driver inside the cluster, so it cannot "
                "be started from this process; launch your script with spark-submit "
                "(--deploy-mode cluster) and call init_orca_context(cluster_mode='spark-submit')"
            )
        if self.cluster_mode not in CLUSTER_MODES:
            raise InvalidArgumentError(
                f"cluster_mode={self.cluster_mode!r} is not supported; use one of {list(CLUSTER_MODES)}"
            )
        if self.cores is not None and self.cores != "*":
            _check_positive_int(self.cores, "cores")
        if self.cores == "*" and self.cluster_mode != "local":
            raise InvalidArgumentError(
                f"cores='*' only means 'all cores' in cluster_mode='local'; "
                f"give a number of cores per executor for cluster_mode={self.cluster_mode!r}"
            )
        _check_positive_int(self.num_nodes, "num_nodes")
        memory_to_mb(self.memory, "memory")
        if self.driver_memory is not None:
            memory_to_mb(self.driver_memory, "driver_memory")
        if self.extra_executor_memory_for_ray is not None:
            memory_to_mb(self.extra_executor_memory_for_ray, "extra_executor_memory_for_ray")
        if self.driver_cores is not None:
            _check_positive_int(self.driver_cores, "driver_cores")
        if str(self.spark_log_level).upper() not in _LOG_LEVELS:
            raise InvalidArgumentError(
                f"spark_log_level={self.spark_log_level!r} is not a log4j level; use one of {list(_LOG_LEVELS)}"
            )
        if not isinstance(self.conf, Mapping):
            raise InvalidArgumentError(f"conf={self.conf!r} must be a dict of Spark settings")
        self._check_mode_requirements()

    def _check_mode_requirements(self) -> None:
        self._check_connect_settings()
        if self.cluster_mode == "standalone" and self.master is not None:
            if not str(self.master).startswith("spark://"):
                raise InvalidArgumentError(
                    f"master={self.master!r} is not a standalone master URL; use 'spark://host:port', "
                    "or leave master out to start a loopback standalone cluster"
                )
        if self.cluster_mode == "k8s-client":
            if not self.master or not str(self.master).startswith("k8s://"):
                raise InvalidArgumentError(
                    f"master={self.master!r}: cluster_mode='k8s-client' needs master='k8s://https://<api-server>:<port>'"
                )
            if not self.container_image and "spark.kubernetes.container.image" not in self.conf:
                raise InvalidArgumentError(
                    "container_image=None: cluster_mode='k8s-client' needs container_image='<image with "
                    "this Python environment>' (or conf['spark.kubernetes.container.image'])"
                )
        if self.penv_archive is not None:
            check_penv_archive(self.penv_archive)
        if self.cluster_mode == "yarn-client":
            if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
                raise ContextError(
                    "cluster_mode='yarn-client' needs the environment variable HADOOP_CONF_DIR (or "
                    "YARN_CONF_DIR) pointing at your cluster's Hadoop configuration folder"
                )

    def _check_connect_settings(self) -> None:
        if self.cluster_mode != "spark-connect":
            if self.remote is not None:
                raise InvalidArgumentError(
                    f"remote={self.remote!r} names a Spark Connect server, which cluster_mode={self.cluster_mode!r} "
                    "does not use; pass cluster_mode='spark-connect' with it")
            return
        for name in _SERVER_SIDE_SETTINGS:
            value = getattr(self, name)
            if value != getattr(type(self), name):
                raise InvalidArgumentError(
                    f"{name}={value!r} cannot be chosen by a Spark Connect client: the Connect server's own start "
                    f"decides the cluster; leave {name} out with cluster_mode='spark-connect', or set it where the "
                    "server starts")

    @property
    def default_cores(self) -> Union[int, str]:
        """Cores per executor (or all local cores) when ``cores`` is None."""
        if self.cluster_mode == "local":
            return "*"
        if self.cluster_mode == "local-cluster":
            return max(1, (os.cpu_count() or 2) // self.num_nodes)
        return 2

    @property
    def effective_cores(self) -> Union[int, str]:
        """``cores`` with its default applied."""
        return self.default_cores if self.cores is None else self.cores

    @property
    def verbose_logs(self) -> bool:
        """Whether ``spark_log_level`` asks for INFO lines or more (then nothing is hidden)."""
        return str(self.spark_log_level).upper() in _VERBOSE_LOG_LEVELS


def tensorflow_log_level(settings: SparkSettings) -> Optional[str]:
    """``TF_CPP_MIN_LOG_LEVEL`` for the driver and Spark's Python workers.

    The user's own value (in this process's environment) wins; otherwise ``"2"`` hides
    TensorFlow's C++ INFO and WARNING lines, unless ``spark_log_level`` asks for INFO or more.

    Parameters
    ----------
    settings : SparkSettings
        The validated settings of ``init_orca_context``.

    Returns
    -------
    str or None
        The value to set, or None to leave TensorFlow's own default (show everything).

    Examples
    --------
    >>> import os
    >>> saved = os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    >>> tensorflow_log_level(SparkSettings()), tensorflow_log_level(SparkSettings(spark_log_level="INFO"))
    ('2', None)
    >>> os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the user's own value wins
    >>> tensorflow_log_level(SparkSettings())
    '0'
    >>> _ = os.environ.pop("TF_CPP_MIN_LOG_LEVEL") if saved is None else os.environ.update(TF_CPP_MIN_LOG_LEVEL=saved)
    """
    user_level = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    if user_level:
        return user_level
    return None if settings.verbose_logs else QUIET_TF_CPP_MIN_LOG_LEVEL


#: what each dict-valued Ray option looks like, for the error of a wrong type
_DICT_EXAMPLES = {
    "env": "{'OMP_NUM_THREADS': '1'}",
    "extra_params": "{'min-worker-port': 20000}",
    "system_config": "{'object_timeout_milliseconds': 200}",
}


@dataclass(frozen=True)
class RaySettings:
    """Orca's Ray options of ``init_orca_context``, validated here and consumed by Ray on Spark.

    ``log_output`` and ``barrier_mode`` are not keyword arguments: the context copies them from
    ``OrcaContext`` when it starts Ray, so that Ray on Spark and the executors never read the
    driver's globals. ``env``, ``extra_params`` and ``system_config`` given as None (Orca's
    default) mean none, and are stored as empty dicts.

    Examples
    --------
    >>> RaySettings(env=None, extra_params=None, system_config=None).env
    {}
    >>> RaySettings(env=["OMP_NUM_THREADS=1"])
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: env=['OMP_NUM_THREADS=1'] must be a dict (or None for none); e.g. env={'OMP_NUM_THREADS': '1'}
    """

    object_store_memory: Optional[str] = None
    env: Mapping[str, str] = field(default_factory=dict)
    extra_params: Mapping[str, object] = field(default_factory=dict)
    num_ray_nodes: Optional[int] = None
    ray_node_cpu_cores: Optional[int] = None
    include_webui: bool = False
    system_config: Mapping[str, object] = field(default_factory=dict)
    ray_start_timeout_s: float = 120.0
    heartbeat_timeout_s: float = 30.0
    log_output: bool = False
    barrier_mode: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.ray_start_timeout_s, bool) or not isinstance(self.ray_start_timeout_s, (int, float)) \
                or not self.ray_start_timeout_s > 0:
            raise InvalidArgumentError(
                f"ray_start_timeout_s={self.ray_start_timeout_s!r} must be a positive number of seconds"
            )
        if isinstance(self.heartbeat_timeout_s, bool) or not isinstance(self.heartbeat_timeout_s, (int, float)) \
                or not self.heartbeat_timeout_s >= _MIN_HEARTBEAT_TIMEOUT_S:
            raise InvalidArgumentError(
                f"heartbeat_timeout_s={self.heartbeat_timeout_s!r} must be a number of seconds of at least "
                f"{_MIN_HEARTBEAT_TIMEOUT_S:g} (heartbeats go every second; a host silent that long counts as lost)"
            )
        if self.object_store_memory is not None:
            memory_to_mb(self.object_store_memory, "object_store_memory")
        for name in ("num_ray_nodes", "ray_node_cpu_cores"):
            value = getattr(self, name)
            if value is not None:
                _check_positive_int(value, name)
        for name in ("env", "extra_params", "system_config"):
            value = getattr(self, name)
            if value is None:  # Orca's default for each of them: "not given"
                object.__setattr__(self, name, {})
            elif not isinstance(value, Mapping):
                raise InvalidArgumentError(
                    f"{name}={value!r} must be a dict (or None for none); e.g. {name}={_DICT_EXAMPLES[name]}"
                )
        for name in ("log_output", "barrier_mode"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(f"{name}={getattr(self, name)!r} must be True or False (OrcaContext.{name})")


def registered_executors(spark: "SparkSession") -> int:
    """How many executors have registered with the driver of ``spark`` so far (the driver itself
    not counted, nor an executor :func:`drop_executors` dropped).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A running session.

    Returns
    -------
    int
        Registered executors; 0 in local mode, where tasks run in the driver.

    Raises
    ------
    AttributeError
        ``spark`` has been stopped.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> registered_executors(OrcaContext.get_spark_session())
    0
    """
    return len(_live_block_managers(spark)) - 1   # minus the driver's


def cores_per_executor(spark: "SparkSession", executors: int) -> int:
    """The cores of each executor: ``spark.executor.cores``, else the cluster's default
    parallelism shared by ``executors`` (local mode: the driver's cores, ``executors`` = 1).

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=2)
    >>> cores_per_executor(OrcaContext.get_spark_session(), 1)
    2
    """
    configured = spark.sparkContext.getConf().get("spark.executor.cores")
    if configured:
        return int(configured)
    return max(1, spark.sparkContext.defaultParallelism // max(1, executors))


def registered_executor_hosts(spark: "SparkSession") -> list[str]:
    """The host of each executor registered with the driver of ``spark`` (one entry per
    executor, the driver not counted; empty in local mode). An executor dropped with
    :func:`drop_executors` is not counted, even before its process ends.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> registered_executor_hosts(OrcaContext.get_spark_session())
    []
    """
    driver = {host_port for executor_id, host_port in _executors_in_status_store(spark) if executor_id == "driver"}
    return sorted(host_port.rsplit(":", 1)[0] for host_port in _live_block_managers(spark) if host_port not in driver)


def _live_block_managers(spark: "SparkSession") -> list[str]:
    """``host:port`` of every block manager registered with the driver (its own included), but
    those of executors :func:`drop_executors` dropped."""
    block_managers = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().keys().toList()
    host_ports = [str(block_managers.apply(index)) for index in range(block_managers.size())]
    dropped = _dropped_block_managers(spark)
    dropped &= set(host_ports)   # gone from the list now: a later executor may reuse the port
    return [host_port for host_port in host_ports if host_port not in dropped]


def _dropped_block_managers(spark: "SparkSession") -> set[str]:
    """The application's set of block managers dropped but still listed (see :func:`drop_executors`)."""
    return _DROPPED_BLOCK_MANAGERS.setdefault(spark.sparkContext.applicationId, set())


def _executors_in_status_store(spark: "SparkSession") -> list[tuple[str, str]]:
    """``(executor id, host:port)`` of the active executors (and the driver) in Spark's status
    store, which is updated by events and may still list an executor that was just lost."""
    entries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    return [(str(entry.id()), str(entry.hostPort())) for entry in (entries.apply(index) for index in range(entries.size()))]


def drop_executors(spark: "SparkSession", executor_ids: set[str], why: str) -> list[str]:
    """Have Spark treat the executors ``executor_ids`` as lost now, and ask for as many new ones;
    returns the ids it knew.

    For executors on a host that fell silent: Spark would otherwise keep scheduling tasks there,
    and fetching cached blocks and shuffle output from them, until its own heartbeat timeout
    (``spark.network.timeout``, 120 s by default). Dropping them is what Spark does itself at
    that timeout: the cluster manager is asked to kill and replace each one, and the scheduler
    recomputes what they held, at once.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> drop_executors(OrcaContext.get_spark_session(), {"7"}, "its host fell silent")  # no such executor
    []
    """
    sc = spark.sparkContext
    known = {executor_id: host_port for executor_id, host_port in _executors_in_status_store(spark)
             if executor_id in executor_ids}
    # Spark forgets their block managers a moment later, on its scheduler's event thread; a
    # count of executors taken meanwhile (for a launch job's barrier stage) must not see them
    _dropped_block_managers(spark).update(known.values())
    for executor_id in known:
        sc._jsc.sc().killAndReplaceExecutor(executor_id)
        reason = sc._jvm.org.apache.spark.scheduler.ExecutorProcessLost(why, sc._jvm.scala.Option.empty(), False)
        sc._jsc.sc().taskScheduler().executorLost(executor_id, reason)
    return list(known)


def _base_conf(settings: SparkSettings) -> dict[str, str]:
    """Settings every mode gets unless the user's ``conf`` says otherwise."""
    python = settings.python_location or os.environ.get("PYSPARK_PYTHON") or sys.executable
    conf = {
        "spark.ui.enabled": str(settings.spark_ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": str(settings.spark_log_level).upper(),
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
    }
    tf_level = tensorflow_log_level(settings)
    if tf_level is not None:  # executors do not inherit the driver's environment
        conf["spark.executorEnv.TF_CPP_MIN_LOG_LEVEL"] = tf_level
    if settings.driver_cores is not None:
        conf["spark.driver.cores"] = str(settings.driver_cores)
    if settings.driver_memory is not None:
        conf["spark.driver.memory"] = settings.driver_memory
    if settings.extra_executor_memory_for_ray is not None:
        conf["spark.executor.memoryOverhead"] = settings.extra_executor_memory_for_ray
    if settings.jars:
        conf["spark.jars"] = settings.jars
    if settings.extra_python_lib:
        conf["spark.submit.pyFiles"] = settings.extra_python_lib
    return conf


UNIX_SOCKET_ENABLED = "spark.python.unix.domain.socket.enabled"
#: Modes whose executors run on machines zoo_lite knows the layout of (this one, or a standalone
#: cluster's, whose temporary directory is short): there a socket file path fits the OS's limit.
_UNIX_SOCKET_MODES = ("local", "local-cluster", "standalone")


def _python_worker_socket_conf(mode: str) -> dict[str, str]:
    """Python workers talk to their JVM over a Unix domain socket (Spark >= 4.1) where that works.

    Measured (``benchmarks/bench_small_ops.py``): over loopback TCP a Python task waits tens of
    milliseconds longer, so ``len``, ``unique`` or ``max`` of small shards take 0.13 s instead of
    0.07 s (medians); data-heavy jobs are unchanged. Left off for YARN and Kubernetes, where the
    socket file would go in a container's temporary directory, whose path can exceed the OS's
    limit of 107 bytes, and where Python has no AF_UNIX (Windows).
    """
    if mode not in _UNIX_SOCKET_MODES or not hasattr(socket, "AF_UNIX"):
        return {}
    return {UNIX_SOCKET_ENABLED: "true"}


PYTHON_DAEMON_MODULE = "spark.python.daemon.module"
#: the daemon of Python workers that ends a worker the JVM stopped without a traceback
QUIET_DAEMON = "zoo_lite.spark_daemon"


def _python_daemon_conf(settings: SparkSettings) -> dict[str, str]:
    """pyspark's daemon of Python workers, quiet about a worker the JVM stopped on purpose (the
    ``BrokenPipeError`` traceback a ``LIMIT`` over a Python UDF printed, see
    :mod:`zoo_lite.spark_daemon`).

    Only where the executors run this very Python, which has zoo_lite: in local mode, where
    their stderr is the user's console, local-cluster and the loopback standalone cluster, with
    no other interpreter asked for. On other clusters the daemon would start before the tasks add
    ``extra_python_lib`` to the path, so a zoo_lite shipped only that way would fail every Python
    task; their executors' stderr goes to the executors' logs, not to the console.

    Examples
    --------
    >>> _python_daemon_conf(SparkSettings(cluster_mode="local"))
    {'spark.python.daemon.module': 'zoo_lite.spark_daemon'}
    >>> _python_daemon_conf(SparkSettings(cluster_mode="standalone", master="spark://10.0.0.1:7077"))
    {}
    """
    here = settings.cluster_mode in ("local", "local-cluster") or (
        settings.cluster_mode == "standalone" and settings.master is None)
    python = (settings.conf.get("spark.pyspark.python") or settings.python_location or os.environ.get("PYSPARK_PYTHON")
              or sys.executable)
    if not here or settings.penv_archive or os.path.realpath(python) != os.path.realpath(sys.executable):
        return {}
    return {PYTHON_DAEMON_MODULE: QUIET_DAEMON}


def _executor_conf(settings: SparkSettings, cores: int) -> dict[str, str]:
    return {
        "spark.executor.cores": str(cores),
        "spark.executor.memory": settings.memory,
        "spark.executor.instances": str(settings.num_nodes),
        "spark.cores.max": str(cores * settings.num_nodes),
    }


def spark_master_and_conf(settings: SparkSettings, standalone_master: Optional[str] = None) -> tuple[Optional[str], dict[str, str]]:
    """Translate validated settings into ``(master, conf)``.

    ``master`` is None in ``spark-submit`` mode, where spark-submit already chose it. The user's
    ``conf`` wins over every default computed here.

    Examples
    --------
    >>> master, conf = spark_master_and_conf(SparkSettings(cluster_mode="local", cores=2))
    >>> master
    'local[2]'
    """
    conf = _base_conf(settings)
    mode, cores = settings.cluster_mode, settings.effective_cores
    conf.update(_python_worker_socket_conf(mode))
    conf.update(_python_daemon_conf(settings))
    master: Optional[str]
    if mode == "local":
        master = f"local[{cores}]"
        conf["spark.driver.memory"] = settings.driver_memory or settings.memory
    elif mode == "local-cluster":
        memory_mb = memory_to_mb(settings.memory)
        master = f"local-cluster[{settings.num_nodes},{cores},{memory_mb}]"
        conf.update(_executor_conf(settings, int(cores)))
        conf["spark.executor.memory"] = f"{memory_mb}m"
    elif mode == "standalone":
        master = settings.master or standalone_master
        if master is None:
            raise ContextError("cluster_mode='standalone' without master needs a started loopback cluster")
        conf.update(_executor_conf(settings, int(cores)))
    elif mode == "yarn-client":
        master = settings.master or "yarn"
        conf.update(_executor_conf(settings, int(cores)))
        conf["spark.submit.deployMode"] = "client"
    elif mode == "k8s-client":
        master = settings.master
        conf.update(_executor_conf(settings, int(cores)))
        conf["spark.submit.deployMode"] = "client"
        if settings.container_image:
            conf["spark.kubernetes.container.image"] = settings.container_image
        if settings.python_location is None:
            conf.pop("spark.pyspark.python")  # the image's own python, not this machine's path
    else:  # spark-submit: spark-submit has chosen master and resources already
        master = None
        if settings.python_location is None:  # spark-submit's --conf decides the interpreters
            conf.pop("spark.pyspark.python")
            conf.pop("spark.pyspark.driver.python")
    if mode in SHIPPING_MODES:
        conf.update(shipped_environment_conf(settings))
    shipped_files = conf.get("spark.files")
    conf.update({str(k): str(v) for k, v in settings.conf.items()})
    if shipped_files and conf["spark.files"] != shipped_files:   # the user's files travel too
        conf["spark.files"] = f"{shipped_files},{conf['spark.files']}"
    return master, conf


#: the modes whose executors take ``penv_archive``: in local mode the tasks run this machine's
#: Python, and under spark-submit its ``--archives`` decides before zoo_lite runs
SHIPPING_MODES = ("local-cluster", "standalone", "yarn-client", "k8s-client")
#: where each executor unpacks ``penv_archive``, in its working directory, where it is shipped as an archive
SHIPPED_ENV_FOLDER = "python_env"
#: the modes whose executors a Spark worker starts in its work folder: there ``penv_archive`` is
#: unpacked once per host (:mod:`zoo_lite.host_unpack`); YARN keeps its own cache of localized
#: archives, and a Kubernetes pod is new each time
HOST_UNPACK_MODES = ("local-cluster", "standalone")


def shipped_environment_conf(settings: SparkSettings) -> dict[str, str]:
    """``penv_archive`` as Spark ships it. A local archive on standalone and ``local-cluster``: as a
    file with a launcher, which Spark runs as the executors' Python and which unpacks the archive
    once per host (:func:`zoo_lite.host_unpack.host_unpacked_conf` writes it into the cache
    folder). Elsewhere, for an archive's URI (which zoo_lite cannot link under a name Spark leaves
    packed), or when ``python_location`` names an interpreter of the archive: unpacked as
    ``./python_env`` in each executor's working directory (``spark.archives``), whose Python the
    executors run.

    Examples
    --------
    >>> shipped_environment_conf(SparkSettings(cluster_mode="k8s-client", master="k8s://https://h:6443",
    ...                                        container_image="spark:4", penv_archive="s3a://bucket/env.tar.gz"))
    {'spark.archives': 's3a://bucket/env.tar.gz#python_env', 'spark.pyspark.python': './python_env/bin/python'}
    >>> shipped_environment_conf(SparkSettings(cluster_mode="standalone", master="spark://h:7077"))
    {}
    """
    if not settings.penv_archive:
        return {}
    local_archive = local_path(settings.penv_archive)
    if settings.cluster_mode in HOST_UNPACK_MODES and settings.python_location is None and local_archive is not None:
        from zoo_lite.env_packing import default_cache_dir
        from zoo_lite.host_unpack import LAUNCHERS_FOLDER, host_unpacked_conf

        return host_unpacked_conf(local_archive, default_cache_dir() / LAUNCHERS_FOLDER)
    return {"spark.archives": f"{settings.penv_archive}#{SHIPPED_ENV_FOLDER}",
            "spark.pyspark.python": settings.python_location or f"./{SHIPPED_ENV_FOLDER}/bin/python"}
