"""Executor side of Ray on Spark: the barrier task that starts one Ray node per executor.

The head, with no CPUs, runs on the driver's host (its GCS binds a port of its own choosing);
each barrier task starts one worker node joining it, and one ``allGather`` proves that no two
tasks share an executor. Losing an executor so loses its own node only, and the same job, run
again, starts a replacement on an executor that has none. Each node runs
under a watchdog (:mod:`zoo_lite.ray_on_spark.watchdog`), which starts ``ray start --block``;
the task waits until the node reports that it runs. No port is picked by binding and closing:
every process binds its own. Nothing here imports Ray: a task costs a fork and a file poll.
"""

from __future__ import annotations

import contextlib
import getpass
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar

from zoo_lite.errors import ClusterStartError, RayNodeStartError
from zoo_lite.ray_on_spark.watchdog import RAY_LOGS_MARKER, WatchdogSpec
from zoo_lite.spark_settings import QUIET_TF_CPP_MIN_LOG_LEVEL
from zoo_lite.waiting import announced_wait

__all__ = ["NodePlan", "NodeInfo", "LaunchedNode", "ray_start_command", "executor_process", "this_process",
           "node_name_for", "node_log_path", "rotate_node_logs", "barrier_task_starting_nodes", "launch_node", "start_node",
           "read_gcs_port", "start_without_client_server", "check_fixed_ports_free", "library_temp_dirs", "LIBRARY_TEMP_DIRS", "executors_to_fill", "remove_orphaned_temp_dirs", "spark_executor_id", "SKIPPED"]

T = TypeVar("T")

READY_MARKER = "Ray runtime started."
_LOG_TAIL_LINES = 40
_POLL_S = 0.05
#: how long a watchdog told to end gets to end the node and keep its logs (its kill deadline is 15 s)
_WATCHDOG_END_S = 20
#: where each node's temp dir is made (short: Ray's socket paths must fit 107 bytes), and its prefix
_TEMP_ROOT = "/tmp"
_TEMP_PREFIX = "zl-ray-"
#: the folder of the nodes' logs, in the temp dir, and how many logs of ended nodes it keeps
LOG_DIR_NAME = "zoo_lite_ray_logs"
KEPT_NODE_LOGS = 5
#: how often a launch makes the log folder again that an ending node removed as empty meanwhile
_LOG_DIR_TRIES = 10
#: folders in the temp dir that libraries imported by Ray's workers create and may leave empty
#: (``{user}``: the user's name as the library spells it): PyTorch 2.13 makes its inductor
#: cache folder in every process that builds an optimizer, whether it compiles anything or not
LIBRARY_TEMP_DIRS = ("torchinductor_{user}",)


@dataclass(frozen=True)
class NodePlan:
    """What the driver tells every launching task (plain values only: it is pickled to executors)."""

    lease_host: str
    lease_port: int
    lease_secret: str
    auth_token: str
    cpus_per_node: int
    start_timeout_s: float
    heartbeat_timeout_s: float = 30.0
    object_store_bytes: Optional[int] = None
    include_dashboard: bool = False
    include_log_monitor: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    system_config: Mapping[str, Any] = field(default_factory=dict)
    extra_params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeInfo:
    """One started node, as the launching task reports it."""

    rank: int
    host: str
    hostname: str
    node_name: str
    temp_dir: str
    gcs_address: str
    executor_pid: int
    watchdog_pid: int
    log_path: str
    executor_id: str = ""   # Spark's id of the executor, where its JVM tells (not for the driver's nodes)


def executor_process() -> tuple[int, float]:
    """PID and start time of the JVM this Python worker serves (the nearest ``java`` ancestor)."""
    import psutil

    process: Optional[psutil.Process] = psutil.Process()
    while process is not None:
        if process.name() == "java" or os.path.basename(process.exe() if process.pid else "") == "java":
            return process.pid, process.create_time()
        process = process.parent()
    raise ClusterStartError("cannot find the Spark executor JVM among this Python worker's ancestors")


def spark_executor_id(executor_pid: int) -> str:
    """Spark's id of the executor whose JVM is ``executor_pid`` (on this host): the
    ``--executor-id`` of its command line (standalone, YARN), else its ``SPARK_EXECUTOR_ID``
    (Kubernetes); empty where neither tells.

    Examples
    --------
    >>> spark_executor_id(os.getpid())   # not an executor
    ''
    """
    import psutil

    try:
        process = psutil.Process(executor_pid)
        arguments = process.cmdline()
        if "--executor-id" in arguments[:-1]:
            return arguments[arguments.index("--executor-id") + 1]
        return process.environ().get("SPARK_EXECUTOR_ID", "")
    except psutil.Error:
        return ""


def this_process() -> tuple[int, float]:
    """PID and start time of the calling process, as the owner of a node started on the driver."""
    import psutil

    me = psutil.Process()
    return me.pid, me.create_time()


def node_name_for(host: str, executor_pid: int, temp_dir: str) -> str:
    """A Ray node name unique to this start (a retried launch on the same executor gets another)."""
    return f"zoo-lite-{host}-{executor_pid}-{os.path.basename(temp_dir).rsplit('-', 1)[-1]}"


def node_log_path(log_dir: str, node_name: str, temp_dir: str) -> str:
    """The log of the node ``node_name``: ``<node name>-<its temp dir's name>.log`` in ``log_dir``.

    Examples
    --------
    >>> node_log_path("/logs", "zoo-lite-h-7-ab", "/tmp/zl-ray-ab")
    '/logs/zoo-lite-h-7-ab-zl-ray-ab.log'
    """
    return os.path.join(log_dir, f"{node_name}-{os.path.basename(temp_dir)}.log")


def _temp_dir_of_log(file_name: str) -> Optional[str]:
    """The name of the temp dir in a node log's file name (None: not a node log)."""
    if not file_name.endswith(".log"):
        return None
    at = file_name.rfind(f"-{_TEMP_PREFIX}")
    return file_name[at + 1:-len(".log")] if at >= 0 else None


def rotate_node_logs(log_dir: str, keep: int = KEPT_NODE_LOGS, temp_root: str = _TEMP_ROOT) -> list[str]:
    """Delete the logs of ended nodes in ``log_dir``, all but the newest ``keep`` logs; returns
    the deleted paths.

    A node's log (:func:`node_log_path`) names its temp dir in ``temp_root``. The node's watchdog
    deletes that dir only after every process of the node ended (and deletes the log too after a
    clean stop; the logs of failed or killed nodes stay, for diagnosis), so a log whose temp dir
    still exists may belong to a running node: it is never deleted, however old. Files that are
    not node logs are left alone. Never raises: a log another launch deleted first is skipped.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as logs:
    ...     rotate_node_logs(logs)
    []
    """
    logs = []
    try:
        with os.scandir(log_dir) as entries:
            for entry in entries:
                temp_name = _temp_dir_of_log(entry.name)
                try:
                    if temp_name is not None and entry.is_file(follow_symlinks=False):
                        logs.append((entry.stat(follow_symlinks=False).st_mtime, entry.path, temp_name))
                except OSError:
                    continue   # deleted meanwhile
    except OSError:
        return []
    logs.sort(reverse=True)
    deleted = []
    for _, path, temp_name in logs[max(keep, 0):]:
        if os.path.exists(os.path.join(temp_root, temp_name)):
            continue   # the node may still run
        try:
            os.unlink(path)
            deleted.append(path)
        except OSError:
            pass
    return deleted


def _user_name() -> str:
    """The user's name as PyTorch spells it in its cache folder's name."""
    try:
        name = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        name = f"uid_{os.getuid()}"
    return re.sub(r'[\\/:*?"<>|]', "_", name)


def library_temp_dirs(temp_root: Optional[str] = None) -> list[str]:
    """The folders of :data:`LIBRARY_TEMP_DIRS` in ``temp_root`` (default: the temp dir).

    A Ray node's watchdog removes those that were not there when the node was launched and are
    empty at its stop; :func:`~zoo_lite.stop_orca_context` does the same in the driver's temp dir.

    Examples
    --------
    >>> import getpass
    >>> library_temp_dirs("/tmp") == [f"/tmp/torchinductor_{getpass.getuser()}"]
    True
    """
    root = temp_root or tempfile.gettempdir()
    return [os.path.join(root, name.format(user=_user_name())) for name in LIBRARY_TEMP_DIRS]


def _new_node_log(log_dir: str, log_path: str) -> None:
    """Create the empty log ``log_path`` in ``log_dir``, and ``log_dir`` if need be; a node that
    ends meanwhile removes the folder if it is empty, so it is made again (a few times)."""
    for _ in range(_LOG_DIR_TRIES):
        os.makedirs(log_dir, exist_ok=True)
        try:
            open(log_path, "wb").close()
            return
        except FileNotFoundError:
            continue
    raise ClusterStartError(f"cannot create the Ray node log {log_path}: its folder keeps disappearing")


def _option(name: str, value: Any) -> str:
    if isinstance(value, bool):
        value = str(value).lower()
    elif isinstance(value, (dict, list)):
        value = json.dumps(value)
    return f"--{name.replace('_', '-')}={value}"


#: Ray's ports that its own processes bind when given 0 (each publishes the port it got in a file
#: of its session dir); zoo_lite never picks a port for Ray, so two nodes cannot race for one
_SELF_BOUND_PORTS = ("dashboard_agent_listen_port", "metrics_export_port", "runtime_env_agent_port")


def ray_start_command(plan: NodePlan, host: str, node_name: str, temp_dir: str, head_address: Optional[str],
                      python: str = sys.executable) -> list[str]:
    """The ``ray start --block`` command line of one node; the head when ``head_address`` is None.

    No port is picked here: the head's GCS and the agents bind port 0 themselves (the GCS' port
    is read from its port file, :func:`head_gcs_port`), the raylet's ports are Ray's random ones,
    and the dashboard (on when ``include_webui=True``) tries 8265 and the ports above it. The
    user's ``extra_params`` come last, so a port given there wins.

    Examples
    --------
    >>> plan = NodePlan("127.0.0.1", 1, "s", "t", cpus_per_node=2, start_timeout_s=60)
    >>> command = ray_start_command(plan, "127.0.0.1", "n0", "/tmp/x", head_address=None)
    >>> "--head" in command and "--port=0" in command and "--num-cpus=2" in command
    True
    """
    command = [python, "-c", "from ray.scripts.scripts import main; main()", "start", "--block", "--log-color=false",
               _option("node_ip_address", host), _option("node_name", node_name), _option("num_cpus", plan.cpus_per_node),
               _option("num_gpus", 0), _option("temp_dir", temp_dir), "--disable-usage-stats",
               # each Python process Ray starts costs about a second of CPU; no autoscaler is needed,
               # and the log monitor only serves RaySettings.log_output
               _option("include_log_monitor", plan.include_log_monitor),
               *(_option(port, 0) for port in _SELF_BOUND_PORTS)]
    if head_address is None:
        command += ["--head", _option("port", 0), "--no-monitor", _option("include_dashboard", plan.include_dashboard)]
        if plan.include_dashboard:
            command.append(_option("dashboard_host", host))
        if plan.system_config:
            command.append(_option("system_config", dict(plan.system_config)))
    else:
        command.append(_option("address", head_address))
    if plan.object_store_bytes is not None:
        command.append(_option("object_store_memory", plan.object_store_bytes))
    command += [_option(name, value) for name, value in plan.extra_params.items()]
    return command


def start_without_client_server(ray_params: Any, head: bool) -> None:
    """Ray's ``RAY_START_HOOK``, run by ``ray start`` before the node starts: no Ray Client server.

    ``ray start`` gives the head a Ray Client server on the fixed port 10001 and takes no 0 for
    it, so two heads on a host would collide; zoo_lite's drivers never use Ray Client, and the
    server costs a Python process. A ``ray_client_server_port`` in ``extra_params`` keeps it
    (:func:`ray_environment` then does not set the hook).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> params = SimpleNamespace(ray_client_server_port=10001)
    >>> start_without_client_server(params, head=True)
    >>> params.ray_client_server_port is None
    True
    """
    ray_params.ray_client_server_port = None


def ray_environment(plan: NodePlan) -> dict[str, str]:
    """Environment of the Ray processes: token authentication on with the cluster's token, and
    TensorFlow's C++ INFO and WARNING lines hidden unless the workers' output is shown
    (``log_output``); the user's ``env`` wins over both.

    Examples
    --------
    >>> plan = NodePlan("h", 1, "s", "token", 1, 1.0, env={"TF_CPP_MIN_LOG_LEVEL": "1"})
    >>> ray_environment(plan)["TF_CPP_MIN_LOG_LEVEL"]
    '1'
    """
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": plan.auth_token, "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0",
           # "0" rather than nothing with log_output: the executor may pass on a quiet level of its own
           "TF_CPP_MIN_LOG_LEVEL": "0" if plan.include_log_monitor else QUIET_TF_CPP_MIN_LOG_LEVEL}
    if "ray_client_server_port" not in plan.extra_params:
        env["RAY_START_HOOK"] = f"{__name__}.{start_without_client_server.__name__}"
    return {**env, **{str(k): str(v) for k, v in plan.env.items()}}


def _log_tail(path: str) -> str:
    """The last lines of ``ray start``'s output, then the tails of Ray's process logs that the
    watchdog kept for a node that failed (they tell why; ``ray start`` often only says it timed out)."""
    try:
        with open(path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        return "(no output)"
    ray_start, marker, process_logs = text.partition(RAY_LOGS_MARKER)
    tail = "\n".join(ray_start.splitlines()[-_LOG_TAIL_LINES:])
    return f"{tail}\n{marker}:\n{process_logs.strip()}" if marker else tail


@dataclass
class LaunchedNode:
    """A node whose watchdog runs ``ray start``, from its launch until it runs (:func:`launch_node`)."""

    rank: int
    host: str
    node_name: str
    temp_dir: str
    log_path: str
    executor_pid: int
    watchdog: subprocess.Popen
    deadline: float   # time.monotonic() by which the node must run (ray_start_timeout_s)
    timeout_s: float
    fixed_gcs_port: Optional[int] = None   # the head's ``port`` of extra_params, else the GCS picks one

    def _wait_for(self, found: Callable[[], Optional[T]], what: str) -> T:
        """Poll ``found()`` until it returns a value; a watchdog that ended or the deadline is an error."""
        with announced_wait(f"Ray node {self.node_name} to {what}", self.timeout_s):
            while True:
                value = found()
                if value is not None:
                    return value
                if self.watchdog.poll() is not None:
                    raise RayNodeStartError(f"Ray node {self.node_name} failed to start; last lines of `ray start`:\n"
                                            f"{_log_tail(self.log_path)}")
                if time.monotonic() > self.deadline:
                    self.watchdog.terminate()  # its clean-up ends whatever already started and keeps Ray's logs
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.watchdog.wait(_WATCHDOG_END_S)
                    raise ClusterStartError(
                        f"Ray node {self.node_name} did not {what} within {self.timeout_s:.0f} s (ray_start_timeout_s); "
                        f"last lines of `ray start`:\n{_log_tail(self.log_path)}"
                    )
                time.sleep(_POLL_S)

    def head_gcs_port(self) -> int:
        """The port the head's GCS bound (it starts with ``--port=0``), once it has published it:
        about a second after the launch, long before the whole node runs, so the other nodes can
        start meanwhile."""
        if self.fixed_gcs_port is not None:
            return self.fixed_gcs_port
        return self._wait_for(lambda: read_gcs_port(self.temp_dir), "bind its GCS port")

    def running(self, gcs_address: str) -> NodeInfo:
        """Wait until ``ray start`` says the node runs; the node's :class:`NodeInfo`."""
        self._wait_for(lambda: True if _log_has(self.log_path, READY_MARKER) else None, "start")
        return NodeInfo(self.rank, self.host, socket.gethostname(), self.node_name, self.temp_dir, gcs_address,
                        self.executor_pid, self.watchdog.pid, self.log_path)


def _log_has(path: str, marker: str) -> bool:
    try:
        with open(path, errors="replace") as handle:
            return marker in handle.read()
    except OSError:
        return False


def read_gcs_port(temp_dir: str) -> Optional[int]:
    """The port in the GCS' port file of the node with temp dir ``temp_dir``, or None while the
    GCS has not written it.

    Examples
    --------
    >>> import os, tempfile
    >>> temp_dir = tempfile.mkdtemp()
    >>> read_gcs_port(temp_dir) is None
    True
    >>> os.makedirs(os.path.join(temp_dir, "session_1"))
    >>> with open(os.path.join(temp_dir, "session_1", "gcs_server_port_abc"), "w") as port_file:
    ...     _ = port_file.write("41234")
    >>> read_gcs_port(temp_dir)
    41234
    """
    for path in glob.glob(os.path.join(temp_dir, "session_*", "gcs_server_port_*")):
        try:
            with open(path) as handle:
                return int(handle.read().strip())
        except (OSError, ValueError):
            continue   # being written
    return None


_started_watchdogs: list[subprocess.Popen] = []  # kept so that ended watchdogs are reaped
#: the file in a node's temp dir that names its watchdog (pid and start time)
_WATCHDOG_FILE = "watchdog.pid"


def remove_orphaned_temp_dirs(temp_root: str = _TEMP_ROOT) -> list[str]:
    """Delete the temp dirs (sockets and session files) of nodes whose watchdog is gone; returns
    their paths. A watchdog deletes its node's dir when the node ends, but not when it is killed
    along with every other process of its host; the next launch on that host deletes it instead.
    A dir whose watchdog file is missing (a launch in progress) is left alone.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     remove_orphaned_temp_dirs(root)
    []
    """
    import psutil

    removed = []
    for temp_dir in glob.glob(os.path.join(temp_root, f"{_TEMP_PREFIX}*")):
        try:
            with open(os.path.join(temp_dir, _WATCHDOG_FILE)) as handle:
                pid, started = handle.read().split()
            alive = abs(psutil.Process(int(pid)).create_time() - float(started)) < 1.0
        except (OSError, ValueError):
            continue   # no watchdog file yet, or being written
        except psutil.Error:
            alive = False
        if not alive:
            shutil.rmtree(temp_dir, ignore_errors=True)
            removed.append(temp_dir)
    return removed


#: ``ray start`` options that fix one port of every node, and those that only the head binds
_NODE_PORT_OPTIONS = ("node_manager_port", "object_manager_port", "metrics_export_port", "runtime_env_agent_port",
                      "dashboard_agent_grpc_port", "dashboard_agent_listen_port")
_HEAD_PORT_OPTIONS = ("port", "dashboard_port", "ray_client_server_port")


def check_fixed_ports_free(extra_params: Mapping[str, Any], host: str, head: bool) -> None:
    """Refuse a port fixed in ``extra_params`` that a process already listens on at ``host``.

    A raylet that cannot bind its port does not exit: it hangs until ``ray_start_timeout_s``
    ends it, with nothing in its output that says why. Probing first tells at once. (The probe
    allows reuse, as Ray's servers do, so a port that only lingers after a closed connection
    passes.)

    Examples
    --------
    >>> import socket
    >>> with socket.socket() as busy:
    ...     busy.bind(("127.0.0.1", 0)); busy.listen(1)
    ...     taken = busy.getsockname()[1]
    ...     check_fixed_ports_free({"node_manager_port": taken}, "127.0.0.1", head=False)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ClusterStartError: extra_params={'node_manager_port': ...} ...
    """
    names = _NODE_PORT_OPTIONS + (_HEAD_PORT_OPTIONS if head else ())
    for name in names:
        port = extra_params.get(name)
        if port in (None, 0, "0"):
            continue
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, int(port)))
            except OSError as error:
                raise ClusterStartError(
                    f"extra_params={{{name!r}: {port!r}}} fixes a port that is not free on {host} "
                    f"({error.strerror}): another process listens there. Give a free port, or leave "
                    f"{name!r} out so that Ray picks one"
                ) from None


def launch_node(plan: NodePlan, rank: int, host: str, head_address: Optional[str],
                owner: Optional[tuple[int, float]] = None) -> LaunchedNode:
    """Start one Ray node's watchdog, which starts ``ray start``; the head when ``head_address``
    is None. Returns at once; :meth:`LaunchedNode.running` waits for the node.

    The node lives as long as ``owner`` (pid, start time), by default this task's executor JVM,
    and as long as the driver's lease."""
    check_fixed_ports_free(plan.extra_params, host, head=head_address is None)
    for launched in list(_started_watchdogs):
        if launched.poll() is not None:
            _started_watchdogs.remove(launched)
    executor_pid, executor_started = owner or executor_process()
    temp_dir = tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=_TEMP_ROOT)
    node_name = node_name_for(host, executor_pid, temp_dir)
    log_dir = os.path.join(tempfile.gettempdir(), LOG_DIR_NAME)
    log_path = node_log_path(log_dir, node_name, temp_dir)
    workers_temp_root = plan.env.get("TMPDIR") or tempfile.gettempdir()   # where Ray's workers' libraries write
    spec = WatchdogSpec(
        command=ray_start_command(plan, host, node_name, temp_dir, head_address),
        env=ray_environment(plan), log_path=log_path, temp_dir=temp_dir, node_name=node_name,
        lease_host=plan.lease_host, lease_port=plan.lease_port, lease_secret=plan.lease_secret,
        executor_pid=executor_pid, executor_create_time=executor_started,
        driver_silence_timeout_s=plan.heartbeat_timeout_s,
        remove_if_empty=[log_dir, *(folder for folder in library_temp_dirs(workers_temp_root) if not os.path.exists(folder))],
    )
    spec_path = os.path.join(temp_dir, "watchdog.json")
    spec.dump(spec_path)
    _new_node_log(log_dir, log_path)
    rotate_node_logs(log_dir)   # the folder would grow by the log of every failed node for good
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "zoo_lite.ray_on_spark.watchdog", spec_path],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    _started_watchdogs.append(watchdog)
    _name_watchdog(temp_dir, watchdog.pid)
    remove_orphaned_temp_dirs()
    fixed_port = plan.extra_params.get("port")
    return LaunchedNode(rank, host, node_name, temp_dir, log_path, executor_pid, watchdog,
                        time.monotonic() + plan.start_timeout_s, plan.start_timeout_s,
                        int(fixed_port) if fixed_port is not None else None)


def _name_watchdog(temp_dir: str, pid: int) -> None:
    """Write the watchdog's pid and start time into the node's temp dir (atomically: a concurrent
    :func:`remove_orphaned_temp_dirs` reads either nothing or the whole file)."""
    import psutil

    try:
        started = psutil.Process(pid).create_time()
    except psutil.Error:
        return   # ended at once: it removed the dir itself
    staged = os.path.join(temp_dir, f".{_WATCHDOG_FILE}")
    try:
        with open(staged, "w") as handle:
            handle.write(f"{pid} {started}")
        os.replace(staged, os.path.join(temp_dir, _WATCHDOG_FILE))
    except OSError:
        pass   # the watchdog already ended and removed the dir


def start_node(plan: NodePlan, rank: int, host: str, head_address: Optional[str],
               owner: Optional[tuple[int, float]] = None) -> NodeInfo:
    """Start one Ray node under a watchdog (:func:`launch_node`) and return once it runs."""
    node = launch_node(plan, rank, host, head_address, owner)
    return node.running(head_address or f"{host}:{node.head_gcs_port()}")


def _check_one_task_per_executor(announced: list[dict[str, Any]]) -> None:
    executors = [f"{item['host']}:{item['executor_pid']}" for item in announced]
    shared = sorted({executor for executor in executors if executors.count(executor) > 1})
    if shared:
        raise ClusterStartError(
            f"two Ray nodes were placed on the same Spark executor ({shared}); give each executor one task "
            "slot for Ray (zoo_lite asks for spark.executor.cores CPUs per launching task), or lower num_ray_nodes"
        )


def _started_or_error(start: Callable[[], Optional[NodeInfo]]) -> dict[str, Any]:
    """A task reports a failure as a value: a raised error would make Spark retry the barrier stage."""
    from zoo_lite.errors import encode_remote_error

    try:
        node = start()
        return {SKIPPED: True} if node is None else {"node": asdict(node)}
    except Exception as error:  # noqa: BLE001 - every failure goes back to the driver
        return {"error": encode_remote_error(error)}


#: what a task reports when its executor needs no new node (it has one, or enough were started)
SKIPPED = "skipped"


def executors_to_fill(announced: list[dict[str, Any]], occupied: set[tuple[str, int]], wanted: int) -> list[int]:
    """The ranks whose executor gets a new node: the first ``wanted`` of those whose executor
    (``host``, ``executor_pid``) has none in ``occupied``.

    Examples
    --------
    >>> tasks = [{"host": "a", "executor_pid": 1}, {"host": "b", "executor_pid": 2}, {"host": "c", "executor_pid": 3}]
    >>> executors_to_fill(tasks, occupied={("b", 2)}, wanted=2), executors_to_fill(tasks, set(), wanted=1)
    ([0, 2], [0])
    """
    free = [rank for rank, item in enumerate(announced) if (item["host"], item["executor_pid"]) not in occupied]
    return free[:max(wanted, 0)]


def barrier_task_starting_nodes(plan: NodePlan, head_address: str, occupied: frozenset[tuple[str, int]],
                                wanted: int) -> Callable[[Iterator[Any]], Iterator[dict[str, Any]]]:
    """The ``mapPartitions`` function of a barrier job that starts worker nodes joining the head
    at ``head_address`` (on the driver's host): one ``allGather`` proves that no two tasks share
    an executor and tells every task which executors get a node, the first ``wanted`` of those
    not in ``occupied`` (``(host, executor_pid)`` of the nodes running). The first start passes
    no occupied executor; a replacement after a lost executor passes those that kept theirs."""

    def run(_: Iterator[Any]) -> Iterator[dict[str, Any]]:
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        rank = context.partitionId()
        host = context.getTaskInfos()[rank].address.rsplit(":", 1)[0]
        executor = executor_process()
        announced = [json.loads(message) for message in context.allGather(
            json.dumps({"host": host, "executor_pid": executor[0]}))]

        def check_and_start() -> Optional[NodeInfo]:
            _check_one_task_per_executor(announced)
            if rank not in executors_to_fill(announced, set(occupied), wanted):
                return None
            node = start_node(plan, rank, host, head_address, owner=executor)
            return replace(node, executor_id=spark_executor_id(executor[0]))

        yield _started_or_error(check_and_start)

    return run
