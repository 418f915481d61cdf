"""Driver side of Ray on Spark: start a Ray cluster made of the Spark executors, connect, stop.

``local`` mode gets a one-node Ray on this machine with ``cores`` CPUs; every other mode gets a
zero-CPU head node on the driver's host and one worker node per executor, started by a
barrier-mode Spark job (see :mod:`node_launch`). The head lives as long as the driver, already
the job's single point of failure, so a lost executor loses its own node only: the same job
starts a replacement on an executor without one (:meth:`RayContext.replace_lost_nodes`). Every
node runs under the same watchdog, so one clean-up path covers ``stop_orca_context()``, a driver
crash and a lost executor.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
import uuid
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from zoo_lite.errors import (
    ClusterStartError,
    ContextError,
    ContextStoppedError,
    InvalidArgumentError,
    RayNodeStartError,
    ZooLiteError,
    decode_remote_error,
)
from zoo_lite.executor_python import JOB_MODULES, check_executor_pythons_once, environment_error_of
from zoo_lite.ray_on_spark.lease import LeaseServer
from zoo_lite.ray_on_spark.node_launch import (
    SKIPPED,
    NodeInfo,
    NodePlan,
    barrier_task_starting_nodes,
    launch_node,
    start_node,
    this_process,
)
from zoo_lite.spark_settings import (RaySettings, cores_per_executor, drop_executors, memory_to_mb, registered_executor_hosts,
                                     registered_executors)
from zoo_lite.waiting import announced_wait, call_within

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RayContext", "start_ray_on_spark", "alive_ray_nodes", "serve_active_ray_context", "executors_expected"]

_LOCAL_HOST = "127.0.0.1"
#: what a Ray node's launch and the data moving into Ray need on the executors
RAY_NODE_MODULES = (*JOB_MODULES, "ray", "psutil")
_STOP_TIMEOUT_S = 30.0
_NAMESPACE = "zoo_lite"
#: how often a wait for Spark to register an executor says that it still waits
_WAIT_LOG_EVERY_S = 10.0
_logger = logging.getLogger(__name__)


@dataclass
class _ExecutorLaunch:
    """How the executors' nodes are launched: kept to launch replacements the same way."""

    plan: NodePlan
    executor_cores: int
    nodes_wanted: int
    #: the executors registered when a replacement launch last failed: not tried again on the same ones
    failed_on: Optional[list[str]] = None

#: how :meth:`RayContext.get` finds the active context's Ray, ``lookup(initialize)``; handed over
#: by ``zoo_lite.context``, which owns the context (it imports this module, never the reverse)
_active_ray_lookup: Optional[Callable[[bool], Optional["RayContext"]]] = None


def serve_active_ray_context(lookup: Callable[[bool], Optional["RayContext"]]) -> None:
    """Set how :meth:`RayContext.get` finds the active context's Ray (``zoo_lite.context`` calls
    this when it starts a context): ``lookup(initialize)`` returns the RayContext, started first
    when ``initialize`` is True, or None when Ray is not running; it raises when no context is
    active.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)  # serves the active context's Ray
    >>> RayContext.get() is OrcaContext.get_ray_context()
    True
    """
    global _active_ray_lookup
    _active_ray_lookup = lookup


@dataclass
class RayContext:
    """The running Ray cluster: its address, its nodes, and how to stop it.

    Returned by ``OrcaContext.get_ray_context()`` once ``init_orca_context(init_ray_on_spark=True)``
    has started Ray.

    Attributes
    ----------
    address : str
        The GCS address (``host:port``) of the head node.
    nodes : list of dict
        One entry per Ray node started for the executors: ``node_name``, ``host``, ``hostname``,
        ``temp_dir``, ``executor_pid``, ``executor_id`` (Spark's; empty where unknown),
        ``watchdog_pid`` and ``num_cpus``.
    driver_node : dict or None
        The head node, on the driver's host, with no CPUs (training never runs there); the
        driver joins Ray through it. None in local mode, where the one node is the head.
    settings : RaySettings
        The settings the cluster was started with, ``log_output`` and ``barrier_mode`` taken from
        ``OrcaContext`` at start; Spark tasks that connect to Ray read them from here.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, stop_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1, init_ray_on_spark=True)
    >>> ray_context = OrcaContext.get_ray_context()
    >>> len(ray_context.nodes), ray_context.nodes[0]["num_cpus"]
    (1, 1)
    >>> stop_orca_context()
    """

    address: str
    nodes: list[dict[str, Any]]
    auth_token: str = field(repr=False)
    _lease: LeaseServer = field(repr=False)
    driver_node: Optional[dict[str, Any]] = None
    _stopped: bool = field(default=False, repr=False)
    settings: RaySettings = field(default_factory=RaySettings, repr=False)
    #: how the executors' nodes were launched, to launch replacements the same way (None: local mode)
    _launch: Optional["_ExecutorLaunch"] = field(default=None, repr=False)

    @classmethod
    def get(cls, initialize: bool = True) -> "RayContext":
        """Orca's ``RayContext.get()``: the Ray of the active zoo_lite context.

        As in Orca, ``initialize=True`` starts Ray on Spark first if it is not running yet (with
        the options given to :func:`~zoo_lite.init_orca_context`), so it works after
        ``init_orca_context(init_ray_on_spark=False)`` too.

        Parameters
        ----------
        initialize : bool, default True
            Start Ray if it is not running. With False, a context without Ray is an error.

        Returns
        -------
        RayContext
            The same object as ``OrcaContext.get_ray_context()``.

        Raises
        ------
        ContextError
            No zoo_lite context is active (:class:`~zoo_lite.errors.ContextStoppedError`), or
            ``initialize=False`` and Ray is not running.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, stop_orca_context
        >>> from zoo_lite.ray_on_spark import RayContext
        >>> stop_orca_context()
        >>> _ = init_orca_context(cores=1)  # without Ray
        >>> RayContext.get(initialize=False)
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ContextError: RayContext.get(initialize=False): the active zoo_lite context has no Ray running; ...
        >>> ray_context = RayContext.get()  # starts Ray on Spark, as Orca did
        >>> ray_context.num_ray_nodes, ray_context.ray_node_cpu_cores
        (1, 1)
        >>> stop_orca_context()
        """
        if _active_ray_lookup is None:
            raise ContextStoppedError(
                "RayContext.get(): no zoo_lite context is active; call "
                "init_orca_context(..., init_ray_on_spark=True) first"
            )
        ray_context = _active_ray_lookup(bool(initialize))
        if ray_context is None:
            raise ContextError(
                "RayContext.get(initialize=False): the active zoo_lite context has no Ray running; use "
                "RayContext.get() (initialize=True) to start it, or init_orca_context(init_ray_on_spark=True)"
            )
        return ray_context

    @property
    def num_ray_nodes(self) -> int:
        """Number of Ray nodes started for the executors (Orca's name; 1 in local mode).

        Examples
        --------
        >>> from zoo_lite import init_orca_context
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> RayContext.get().num_ray_nodes  # local mode: one node
        1
        """
        return len(self.nodes)

    @property
    def ray_node_cpu_cores(self) -> int:
        """CPUs of each Ray node (Orca's name): ``ray_node_cpu_cores`` of ``init_orca_context``,
        else the cores of each executor (of the local session in local mode).

        Examples
        --------
        >>> from zoo_lite import init_orca_context
        >>> _ = init_orca_context(cores=2, init_ray_on_spark=True)
        >>> RayContext.get().ray_node_cpu_cores >= 1
        True
        """
        return int(self.nodes[0]["num_cpus"]) if self.nodes else 0

    def lost_nodes(self) -> list[str]:
        """Names of this cluster's nodes that are lost: their executor or their processes died
        (the driver's lease with each node's watchdog tells within a fraction of a second, without
        asking Ray, whose calls block while the head node is gone), or their host sent no
        heartbeat for ``heartbeat_timeout_s``. :meth:`lost_node_reasons` says which.

        Examples
        --------
        >>> from zoo_lite import init_orca_context, stop_orca_context, OrcaContext
        >>> _ = init_orca_context(cores=1, init_ray_on_spark=True)
        >>> ray_context = OrcaContext.get_ray_context()
        >>> ray_context.lost_nodes(), ray_context.lost_node_reasons()
        ([], {})
        >>> stop_orca_context()
        """
        return sorted(self.lost_node_reasons())

    def lost_node_reasons(self) -> dict[str, str]:
        """Each lost node (:meth:`lost_nodes`) and why it counts as lost: its connection to the
        driver closed, or its host was silent for ``heartbeat_timeout_s``."""
        return {} if self._stopped else self._lease.lost_node_reasons()

    def quiet_nodes(self, quiet_s: float) -> list[str]:
        """Names of this cluster's nodes whose host sent no heartbeat for ``quiet_s``: a host going
        silent, which counts as lost after ``heartbeat_timeout_s`` (and stays quiet then)."""
        return [] if self._stopped else self._lease.quiet_nodes(quiet_s)

    def head_lost(self) -> bool:
        """Whether the lost nodes take the whole cluster along: the head (with the GCS) is one of
        them, or this is local mode's single node."""
        lost = self.lost_node_reasons()
        return bool(lost) and (self.driver_node is None or self.driver_node["node_name"] in lost)

    def replace_lost_nodes(self, spark: "SparkSession") -> list[str]:
        """End what is left of the lost worker nodes, drop them from :attr:`nodes`, and start
        replacements on executors without a node (:meth:`add_missing_nodes`); the surviving
        nodes, their object stores and their actors stay. Returns the lost nodes' names.

        A lost head is not replaced here: it takes every node along (see :meth:`head_lost`)."""
        assert self._launch is not None and not self.head_lost(), "only a worker node of Ray on Spark is replaced"
        reasons = self.lost_node_reasons()
        silent = [node for node in self.nodes if node["node_name"] in self._lease.silent_nodes()]
        if silent:
            dropped = drop_executors(spark, {node["executor_id"] for node in silent},
                                     "; ".join(sorted({reasons[node["node_name"]] for node in silent})))
            _logger.warning("Spark executor(s) %s of the silent or stopped host(s) %s dropped: Spark recomputes what "
                            "they held and starts as many new executors", dropped, sorted({node["host"] for node in silent}))
        self.nodes = [node for node in self.nodes if node["node_name"] not in reasons]
        self._lease.stop_others(self._node_names(), _STOP_TIMEOUT_S)   # silent ones are not waited for
        _logger.warning("Ray node(s) lost (%s); %d node(s) left; replacements follow on executors without a node",
                        "; ".join(f"{name}: {reason}" for name, reason in sorted(reasons.items())), len(self.nodes))
        self.add_missing_nodes(spark, wait_s=0.0 if self.nodes else self.settings.ray_start_timeout_s, only_where_needed=True)
        return sorted(reasons)

    def add_missing_nodes(self, spark: "SparkSession", wait_s: float = 0.0, only_where_needed: bool = False) -> list[str]:
        """Start worker nodes on executors without one, up to the number started at first (the
        executors Spark gave back after a loss); returns the new nodes' names.

        With ``only_where_needed``, only when an executor runs on a host with no node at all: a
        Spark task there could not reach Ray (moving data into Ray needs a node on the task's
        host). Elsewhere the launch, a few seconds, is left for a moment that waits on nothing
        (the Estimators grow a fit back between epochs).

        With ``wait_s`` > 0, wait that long (logging what for) for Spark to register an executor
        when none is free. A launch that fails is logged and ends the nodes it started; the
        cluster keeps the nodes it has, and no launch is tried again until the executors Spark
        has registered change (each try can take the launch job's whole bound)."""
        launch = self._launch
        if launch is None or len(self.nodes) >= launch.nodes_wanted:
            return []
        executors = _executor_hosts(spark, len(self.nodes), wait_s)
        free = len(executors) - len(self.nodes)
        if free <= 0 or executors == launch.failed_on:
            return []
        if only_where_needed and self.nodes and set(executors) <= {node["host"] for node in self.nodes}:
            return []
        occupied = frozenset((node["host"], node["executor_pid"]) for node in self.nodes)
        try:
            outcomes = _run_launch_job(spark, launch.plan, self.address, len(self.nodes) + free, launch.executor_cores,
                                       occupied, launch.nodes_wanted - len(self.nodes))
            added = _nodes_or_error(outcomes)
            launch.failed_on = None
        except ZooLiteError as error:
            _logger.warning("starting replacement Ray node(s) failed; going on with the %d node(s) left, and trying again "
                            "once Spark's executors change: %s", len(self.nodes), error)
            added, launch.failed_on = [], executors
        self.nodes = self.nodes + [_node_dict(node, launch.plan.cpus_per_node) for node in added]
        leftovers = self._lease.stop_others(self._node_names(), _STOP_TIMEOUT_S)
        if leftovers:
            _logger.warning("ended Ray nodes %s of a failed launch", leftovers)
        return [node.node_name for node in added]

    def _node_names(self) -> set[str]:
        return {node["node_name"] for node in [*self.nodes, *([self.driver_node] if self.driver_node else [])]}

    def stop(self) -> None:
        """Disconnect the driver and end every Ray process of the cluster (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        import ray

        try:
            if ray.is_initialized():
                ray.shutdown()
        finally:
            unconfirmed = self._lease.stop_all(_STOP_TIMEOUT_S)
            if unconfirmed:
                warnings.warn(
                    f"Ray nodes {unconfirmed} did not confirm their stop within {_STOP_TIMEOUT_S:.0f} s; their "
                    "watchdogs end them on their own since the driver's lease is closed",
                    stacklevel=2,
                )


def alive_ray_nodes() -> list[dict[str, Any]]:
    """``ray.nodes()`` entries of the nodes that are alive (this process must be connected)."""
    import ray

    return [node for node in ray.nodes() if node["Alive"]]


def node_serving(nodes: list[dict[str, Any]], hostname: str, executor_pid: int) -> Optional[dict[str, Any]]:
    """Of ``nodes`` (``RayContext.nodes``), the one started for executor ``executor_pid`` on
    ``hostname``, else any node on ``hostname`` (local mode: the driver's node), else None."""
    on_host = [node for node in nodes if node["hostname"] == hostname]
    exact = [node for node in on_host if node["executor_pid"] == executor_pid]
    chosen = exact or on_host
    return chosen[0] if chosen else None


def auth_token() -> str:
    """The token of Ray's token authentication: ``RAY_AUTH_TOKEN``, else Ray's default token file
    (``~/.ray/auth_token``), else a new one saved there, as ``ray.init`` itself would."""
    token = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if token:
        return token
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    token = path.read_text().strip() if path.exists() else ""
    if token:
        return token
    token = secrets.token_hex(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(token)
    path.chmod(0o600)
    return token


def _object_store_bytes(settings: RaySettings) -> Optional[int]:
    if settings.object_store_memory is None:
        return None
    value = memory_to_mb(settings.object_store_memory, "object_store_memory") * 1024 * 1024
    if value < 78643200:
        raise InvalidArgumentError(
            f"object_store_memory={settings.object_store_memory!r} is below Ray's minimum of 75m; give at least '75m'"
        )
    return value


def _plan(settings: RaySettings, lease: LeaseServer, token: str, cpus_per_node: int) -> NodePlan:
    return NodePlan(
        lease_host=lease.host, lease_port=lease.port, lease_secret=lease.secret, auth_token=token,
        cpus_per_node=cpus_per_node, start_timeout_s=settings.ray_start_timeout_s, heartbeat_timeout_s=settings.heartbeat_timeout_s,
        object_store_bytes=_object_store_bytes(settings), include_dashboard=settings.include_webui,
        include_log_monitor=settings.log_output,
        env=dict(settings.env), system_config=dict(settings.system_config), extra_params=dict(settings.extra_params),
    )


#: the most a driver's disconnect waits to send Ray's last task events (see use_token_in_this_process)
_TASK_EVENTS_FLUSH_MS = "500"


def connect_to_node(address: str, token: str, temp_dir: str, log_output: bool) -> None:
    """Connect this process to Ray as a driver through the node whose temp dir is ``temp_dir``
    (Ray tells apart several nodes on one host by it); ``log_output`` shows the output of Ray's
    workers in this process (``RaySettings.log_output``)."""
    import ray

    use_token_in_this_process(token)
    ray.init(address=address, namespace=_NAMESPACE, logging_level=logging.WARNING, log_to_driver=log_output,
             _temp_dir=temp_dir)


def use_token_in_this_process(token: str) -> None:
    """Make this process authenticate to Ray with ``token``, and keep its disconnect short.

    Ray reads ``RAY_AUTH_MODE`` into its cached config when it is imported, so the cache is
    refreshed after the variables are set (what Ray's own ``ray.init`` does for a new cluster).
    A disconnect waits up to ``task_events_shutdown_flush_timeout_ms`` to send the last task
    events (the dashboard's task history); a live head takes them in milliseconds, a lost one
    made each restart after it wait Ray's default 5 s (measured: ``ray.shutdown()`` 4.8 s of
    the 6.5 s between the head's loss and the new launch)."""
    from ray._raylet import AuthenticationTokenLoader, Config

    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = token
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_task_events_shutdown_flush_timeout_ms", _TASK_EVENTS_FLUSH_MS)
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()



def _node_dict(node: NodeInfo, cpus: int) -> dict[str, Any]:
    return {"node_name": node.node_name, "host": node.host, "hostname": node.hostname, "temp_dir": node.temp_dir,
            "executor_pid": node.executor_pid, "executor_id": node.executor_id, "watchdog_pid": node.watchdog_pid,
            "num_cpus": cpus}


def _start_local(settings: RaySettings, cores: int) -> RayContext:
    """A one-node Ray on this machine, owned by the driver process."""
    cpus = settings.ray_node_cpu_cores or cores
    lease = LeaseServer.start(_LOCAL_HOST, settings.heartbeat_timeout_s)
    token = auth_token()
    plan = _plan(settings, lease, token, cpus)
    try:
        node = start_node(plan, 0, _LOCAL_HOST, None, owner=this_process())
        connect_to_node(node.gcs_address, token, node.temp_dir, settings.log_output)
    except BaseException:
        lease.stop_all(_STOP_TIMEOUT_S)
        raise
    return RayContext(node.gcs_address, [_node_dict(node, cpus)], token, lease, settings=settings)


def _check_barrier_possible(spark: "SparkSession", settings: RaySettings) -> None:
    conf = spark.sparkContext.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        raise ContextError(
            "init_ray_on_spark=True needs a fixed set of executors, but spark.dynamicAllocation.enabled=true; "
            "set conf={'spark.dynamicAllocation.enabled': 'false'} and num_nodes to the executors you want"
        )
    if not settings.barrier_mode:
        raise ContextError(
            "OrcaContext.barrier_mode=False: zoo_lite starts one Ray node per executor with a barrier-mode job "
            "only, which is what guarantees that placement; set OrcaContext.barrier_mode = True"
        )


def _run_launch_job(spark: "SparkSession", plan: NodePlan, head_address: str, num_tasks: int, executor_cores: int,
                    occupied: frozenset[tuple[str, int]], wanted: int) -> list[dict[str, Any]]:
    """Run the barrier job that starts up to ``wanted`` worker nodes on ``num_tasks`` executors
    (one task each; those in ``occupied`` keep their node) in a thread, so that its wait is
    bounded; cancel it on timeout."""
    sc = spark.sparkContext
    group = f"zoo_lite-ray-start-{uuid.uuid4().hex[:8]}"
    task = barrier_task_starting_nodes(plan, head_address, occupied, wanted)

    def launch() -> list[dict[str, Any]]:
        sc.setJobGroup(group, "zoo_lite: start Ray on the executors", interruptOnCancel=True)
        rdd = sc.parallelize(range(num_tasks), num_tasks).barrier().mapPartitions(task)
        if executor_cores > int(sc.getConf().get("spark.task.cpus", "1")):
            from pyspark.resource import ResourceProfileBuilder, TaskResourceRequests

            rdd = rdd.withResources(ResourceProfileBuilder().require(TaskResourceRequests().cpus(executor_cores)).build)
        return rdd.collect()

    # node start-ups are bounded by the same timeout; the margin covers scheduling the tasks
    outcome = call_within(launch, f"Ray to start on {num_tasks} executor(s) (the launch job)", plan.start_timeout_s * 2 + 30,
                          "zoo_lite-ray-start")
    if not outcome.finished:
        sc.cancelJobGroup(group)
        raise ClusterStartError(
            f"the Spark job starting {wanted} Ray node(s) did not finish within {plan.start_timeout_s * 2 + 30:.0f} s; "
            "the executors may lack free task slots (another job running?) or num_ray_nodes exceeds what "
            "can run at once; raise ray_start_timeout_s if the nodes are just slow"
        )
    if outcome.error is not None:
        environment = environment_error_of(outcome.error, sc)
        if environment is not None:
            raise environment from outcome.error
        raise ClusterStartError(
            "the Spark job starting Ray failed: a launching task or its executor was lost (Spark does not "
            "retry a failed barrier stage); the nodes it had started are ended; call init_orca_context again "
            f"once the executors are healthy. Spark said: {str(outcome.error)[:2000]}"
        ) from outcome.error
    return list(outcome.value or [])


def _executor_hosts(spark: "SparkSession", nodes: int, wait_s: float) -> list[str]:
    """The hosts of the registered executors (:func:`registered_executor_hosts`); waits up to
    ``wait_s``, saying so, for more executors than the ``nodes`` running, one of which could
    take a new node."""
    deadline = time.monotonic() + wait_s
    next_log = time.monotonic()
    while True:
        hosts = registered_executor_hosts(spark)
        if len(hosts) > nodes or time.monotonic() >= deadline:
            return hosts
        if time.monotonic() >= next_log:
            _logger.warning("waiting up to %.0f s more for Spark to register an executor to start a Ray node on "
                            "(%d executor(s) registered, %d Ray node(s) running)",
                            deadline - time.monotonic(), len(hosts), nodes)
            next_log = time.monotonic() + _WAIT_LOG_EVERY_S
        time.sleep(0.2)


def _nodes_or_error(outcomes: list[dict[str, Any]]) -> list[NodeInfo]:
    errors = [decode_remote_error(item["error"]) for item in outcomes if "error" in item]
    if errors:
        details = "\n\n".join(str(error) for error in errors)
        # Ray giving up on its own is worth another try; any other failure (a setting) is not
        kind = RayNodeStartError if all(isinstance(error, RayNodeStartError) for error in errors) else ClusterStartError
        raise kind(f"Ray failed to start on {len(errors)} executor(s):\n{details}") from errors[0]
    return sorted((NodeInfo(**item["node"]) for item in outcomes if SKIPPED not in item), key=lambda node: node.rank)


def executors_expected(conf: Mapping[str, str]) -> int:
    """How many executors a Spark conf asks for: ``spark.executor.instances``; else, as a
    standalone master grants them, ``spark.cores.max // spark.executor.cores``
    (``--total-executor-cores`` / ``--executor-cores``); else at least one.

    Examples
    --------
    >>> executors_expected({"spark.executor.instances": "3"}), executors_expected({})
    (3, 1)
    >>> executors_expected({"spark.cores.max": "8", "spark.executor.cores": "2"})
    4
    """
    if conf.get("spark.executor.instances"):
        return max(1, int(conf["spark.executor.instances"]))
    cores_max, executor_cores = conf.get("spark.cores.max"), conf.get("spark.executor.cores")
    if cores_max and executor_cores:
        return max(1, int(cores_max) // max(1, int(executor_cores)))
    return 1


def _executors_registered(spark: "SparkSession", timeout_s: float) -> int:
    """The executors registered once those the conf asks for (:func:`executors_expected`) have
    come up; a master whose executors never come is a clear error."""
    wanted = executors_expected(dict(spark.sparkContext.getConf().getAll()))
    deadline = time.monotonic() + timeout_s
    with announced_wait(f"the {wanted} Spark executor(s) the conf asks for to register, before Ray starts on them", timeout_s):
        while registered_executors(spark) < wanted and time.monotonic() < deadline:
            time.sleep(0.2)
    executors = registered_executors(spark)
    if executors == 0:
        raise ClusterStartError(
            f"Ray on Spark starts one Ray node per executor, but master={spark.sparkContext.master!r} registered no "
            f"executor within ray_start_timeout_s={timeout_s:.0f} s; check that the cluster has free cores and memory "
            "for the executors requested (spark-submit --num-executors/--executor-cores/--executor-memory)"
        )
    if executors < wanted:
        _logger.warning("only %d of the %d Spark executors the conf asks for registered within ray_start_timeout_s=%.0f s; "
                        "Ray on Spark starts on those %d", executors, wanted, timeout_s, executors)
    return executors


def _start_on_executors(spark: "SparkSession", settings: RaySettings) -> RayContext:
    _check_barrier_possible(spark, settings)
    executors = _executors_registered(spark, settings.ray_start_timeout_s)
    num_nodes = settings.num_ray_nodes or executors
    if num_nodes > executors:
        raise InvalidArgumentError(
            f"num_ray_nodes={num_nodes} is more than the {executors} Spark executor(s) running; Ray on Spark starts "
            "one node per executor: lower num_ray_nodes, or raise num_nodes (spark.executor.instances)"
        )
    # before any node starts: a Python without zoo_lite or Ray, or of another version, fails here at once
    check_executor_pythons_once(spark.sparkContext, RAY_NODE_MODULES, same_version=True, purpose="Ray on Spark")
    executor_cores = cores_per_executor(spark, executors)
    cpus = settings.ray_node_cpu_cores or executor_cores
    driver_host = spark.sparkContext.getConf().get("spark.driver.host", _LOCAL_HOST)
    lease = LeaseServer.start(driver_host, settings.heartbeat_timeout_s)
    token = auth_token()
    plan = _plan(settings, lease, token, cpus)
    try:
        # the head's GCS port is known about a second after its launch; the executors' nodes
        # start while the head finishes starting
        head = launch_node(replace(plan, cpus_per_node=0), -1, driver_host, None, owner=this_process())
        address = f"{driver_host}:{head.head_gcs_port()}"
        nodes = _nodes_or_error(_run_launch_job(spark, plan, address, num_nodes, executor_cores, frozenset(), num_nodes))
        head_node = head.running(address)
        leftovers = lease.stop_others({head_node.node_name, *(node.node_name for node in nodes)}, _STOP_TIMEOUT_S)
        if leftovers:
            _logger.warning("ended Ray nodes %s of a retried start-up attempt", leftovers)
        connect_to_node(address, token, head_node.temp_dir, settings.log_output)
    except BaseException:
        lease.stop_all(_STOP_TIMEOUT_S)
        raise
    return RayContext(address, [_node_dict(node, cpus) for node in nodes], token, lease,
                      driver_node=_node_dict(head_node, 0), settings=settings,
                      _launch=_ExecutorLaunch(plan, executor_cores, num_nodes))


def start_ray_on_spark(spark: "SparkSession", settings: RaySettings, cluster_mode: str, local_cores: int) -> RayContext:
    """Start Ray for the active Spark session: local Ray in ``local`` mode, else one node per executor."""
    import ray

    if ray.is_initialized():
        raise ContextError(
            "init_ray_on_spark=True, but this process is already connected to Ray (ray.init was called); "
            "call ray.shutdown() first, or use init_ray_on_spark=False and keep your own Ray"
        )
    if cluster_mode == "local":
        return started_retrying_once(lambda: _start_local(settings, local_cores))
    master = spark.sparkContext.master
    if runs_tasks_in_driver(master):
        # spark-submit --master local[N] (or an adopted local session): the tasks run in the
        # driver's JVM and there are no executors to start nodes in, so Ray runs as in local mode
        return started_retrying_once(lambda: _start_local(settings, spark.sparkContext.defaultParallelism))
    return started_retrying_once(lambda: _start_on_executors(spark, settings))


def started_retrying_once(start: Callable[[], RayContext]) -> RayContext:
    """``start()``, once more if ``ray start`` gave up on a node by itself (:class:`RayNodeStartError`).

    Ray waits a fixed 30 s for a new raylet to register with the GCS; on a loaded machine a node
    now and then misses that (``The current node timed out during startup``) and starts fine the
    next time. A failed attempt has ended every node it started before this retries. A second
    failure raises a :class:`RayNodeStartError` with both attempts' output.

    Examples
    --------
    >>> attempts = []
    >>> def flaky_start():
    ...     attempts.append(1)
    ...     if len(attempts) == 1:
    ...         raise RayNodeStartError("the current node timed out during startup")
    ...     return "started"
    >>> started_retrying_once(flaky_start), len(attempts)
    ('started', 2)
    """
    try:
        return start()
    except RayNodeStartError as first:
        _logger.warning("a Ray node failed to start; starting Ray once more. The failure:\n%s", first)
        try:
            return start()
        except RayNodeStartError as second:
            raise RayNodeStartError(f"Ray failed to start twice.\nThe first attempt:\n{first}\n\nThe second attempt:\n{second}") from second


def runs_tasks_in_driver(master: str) -> bool:
    """True for Spark masters that run tasks inside the driver JVM, with no executors.

    Examples
    --------
    >>> [runs_tasks_in_driver(m) for m in ("local", "local[2]", "local[*, 3]", "local-cluster[2,1,1024]", "yarn")]
    [True, True, True, False, False]
    """
    return master == "local" or master.startswith("local[")
