"""The Spark backend's worker group: the training workers as the tasks of one Spark barrier
stage, with no Ray at all (``backend="spark"``).

Each barrier task builds the same runner a Ray actor of :mod:`zoo_lite.learn.base.worker_group`
builds, and the group offers the same calls (``call``, ``call_each``, ``call_one``), so the
Estimator's training (steps, state, callbacks, recovery) is the one it runs on Ray:

- the tasks start together (a barrier stage) and meet through the driver: each connects to a TCP
  server on the driver, binds its rendezvous port and sends its address, and the driver hands
  every task the addresses of all, by rank (= partition index), once it has them
  (``BarrierTaskContext.allGather`` would do the same, but it waits in steps of a whole second:
  1.0 s of a 1.8 s second fit, measured). The runners then connect their exchange as on Ray
  (shared memory on one host, the network across hosts);
- each task runs the calls the driver sends over that connection, one
  at a time, replying with the result; rank 0 also sends progress snapshots, and every task a
  heartbeat each second from a thread of its own (a task that stops, or hangs holding Python's
  GIL, is lost after ``heartbeat_timeout_s``, as a Ray worker is);
- rows (XShards, Spark DataFrames) are bound when the stage starts: the input's partitions are
  cut into the ranges :func:`~zoo_lite.data.partition_ops.assign_row_ranges` gives each worker
  (the Ray backend's arithmetic, so the batches and the trained weights are the same) and shuffled
  to the task of that worker, which reads them itself; nothing goes through the driver or into
  files of zoo_lite's. Framework inputs (creators, DataLoaders, tf.data) are sent to the running
  tasks as on Ray.

The stage holds its task slots until the group ends, so the Estimator ends it after each call
(``fit``, ``evaluate``); the driver keeps the state after every epoch. A task that fails or is
lost ends the group: the job is cancelled, and a fit that may go on runs the stage again from the
driver's state (see :meth:`GroupEstimator._recover`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import secrets
import socket
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Sequence, TypeVar

from zoo_lite.errors import InvalidArgumentError, WorkerError, WorkerTimeoutError, ZooLiteError
from zoo_lite.executor_python import environment_error_of
from zoo_lite.learn.base.ports import free_port
from zoo_lite.learn.base.spark_children import run_in_child
from zoo_lite.learn.base.warm_up import runner_path
from zoo_lite.learn.base.worker_group import WorkerInfo, runner_call_name
from zoo_lite.user_code import user_code_by_value
from zoo_lite.waiting import announced_wait

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import SparkSession

__all__ = ["SparkTaskGroup", "RowsFeed", "task_slots", "check_task_slots", "check_no_dynamic_allocation", "executor_count",
           "workers_on_executors"]

T = TypeVar("T")
_logger = logging.getLogger("zoo_lite.learn")

#: how often a task sends its heartbeat, and how often the driver's wait looks at its connections
_BEAT_INTERVAL_S = 1.0
_POLL_INTERVAL_S = 0.5
_STATUS_POLL_S = 0.05   # Spark's listener bus records a job's end within milliseconds
#: how long a task tries to reach the driver's server, and how long the group waits for its stage to end
_CONNECT_TIMEOUT_S = 60.0
_END_TIMEOUT_S = 30.0
#: how long a failed call waits for news of a lost peer, which would be the root cause
_PEER_LOSS_GRACE_S = 3.0
#: what the driver sends a task to end it (after the runner is closed)
_CLOSE = None


@dataclass(frozen=True)
class RowsFeed:
    """Rows bound to the stage under ``key``: an RDD of model-array shards and each worker's
    ranges of it, ``(partition, start, stop)``; ``template`` is a shard of one row, for the arrays'
    shapes on a worker without rows (as the Ray backend's ``one_row``); ``by_worker`` is the
    ranges cut and shuffled to their workers' partitions, one RDD for the feed's life, so that a
    later stage reads the shuffle's output again instead of running it again."""

    key: str
    rdd: "RDD"
    partition_rows: list[int]
    assignment: list[list[tuple[int, int, int]]]
    template: Any
    by_worker: "RDD"

    @staticmethod
    def of(key: str, shards_rdd: "RDD", num_workers: int) -> "RowsFeed":
        """Count the rows of every partition of ``shards_rdd`` (one job; the RDD is cached for
        the stage's shuffle) and give each of ``num_workers`` workers its ranges."""
        from zoo_lite.data import partition_ops
        from zoo_lite.data.spark_jobs import run_job

        cached = shards_rdd.persist()
        counted = run_job(cached.context, cached.mapPartitions(_rows_and_template).collect)
        partition_rows = [rows for rows, _ in counted]
        template = next((shard for rows, shard in counted if rows), None)
        assignment = partition_ops.assign_row_ranges(partition_rows, [None] * len(partition_rows), [None] * num_workers)
        by_worker = cached.mapPartitionsWithIndex(_cut_for_workers(key, assignment)).partitionBy(num_workers, _worker_of)
        return RowsFeed(key, cached, partition_rows, assignment, template, by_worker)

    @property
    def total_rows(self) -> int:
        return sum(self.partition_rows)

    def release(self) -> None:
        """Drop the cached partitions (the stage's tasks hold their rows); the shuffle's output
        goes with ``by_worker`` once the feed is dropped."""
        try:
            self.rdd.unpersist(blocking=False)
        except Exception:  # noqa: BLE001 - a stopped context already dropped them
            pass


def _rows_and_template(shards: Iterator[Any]) -> list[tuple[int, Any]]:
    from zoo_lite.data import partition_ops

    held = list(shards)
    rows = partition_ops.partition_weight(held)
    return [(rows, partition_ops.slice_partition(held, 0, 1)[0] if rows else None)]


def task_slots(sc: "SparkContext") -> int:
    """How many tasks the cluster runs at once now: a barrier stage needs one slot per task.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> task_slots(init_orca_context(cores=2)) >= 1
    True
    """
    jsc = sc._jsc.sc()
    return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))


def executor_count(spark: "SparkSession") -> int:
    """The executors Spark has registered; local mode's driver, which runs the tasks there, counts as one.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=2)
    >>> executor_count(OrcaContext.get_spark_session())
    1
    """
    from zoo_lite.spark_settings import registered_executors

    return max(1, registered_executors(spark))


def workers_on_executors(spark: "SparkSession", per_executor: int, total: Optional[int]) -> int:
    """How many barrier tasks a group runs: ``total``, else ``per_executor`` on every executor
    (Orca's ``workers_per_node``, a Spark executor taking a Ray node's place).

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=2)
    >>> spark = OrcaContext.get_spark_session()
    >>> workers_on_executors(spark, 1, None), workers_on_executors(spark, 1, 2)
    (1, 2)
    """
    return total if total is not None else per_executor * executor_count(spark)


def check_no_dynamic_allocation(enabled: str, master: str) -> None:
    """Refuse at once what Spark refuses when the stage is submitted: barrier stages with dynamic
    allocation (``spark.dynamicAllocation.enabled``, which Spark ignores in local mode).

    Examples
    --------
    >>> check_no_dynamic_allocation("true", "local[2]")
    >>> check_no_dynamic_allocation("true", "spark://10.0.0.1:7077")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: backend='spark' trains in a Spark barrier stage, which Spark does not run with spark.dynamicAllocation.enabled=true; set it to false for this application, or use backend='ray'
    """
    local = master == "local" or master.startswith("local[")
    if enabled.strip().lower() == "true" and not local:
        raise InvalidArgumentError(
            "backend='spark' trains in a Spark barrier stage, which Spark does not run with "
            "spark.dynamicAllocation.enabled=true; set it to false for this application, or use backend='ray'"
        )


def check_task_slots(sc: "SparkContext", num_workers: int) -> None:
    """Refuse at once a group with more workers than task slots (Spark would retry the barrier
    stage for minutes before giving up).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> check_task_slots(init_orca_context(cores=2), 64)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: backend='spark' runs one Spark barrier task per worker, all at once: 64 workers need 64 task slots, and the cluster has 2 now (cores of the executors / spark.task.cpus); ask for fewer workers (num_workers= or workers_per_node=), or give Spark more executors or cores
    """
    check_no_dynamic_allocation(sc.getConf().get("spark.dynamicAllocation.enabled", "false"), sc.master)
    slots = task_slots(sc)
    if num_workers > slots:
        raise InvalidArgumentError(
            f"backend='spark' runs one Spark barrier task per worker, all at once: {num_workers} workers need "
            f"{num_workers} task slots, and the cluster has {slots} now (cores of the executors / spark.task.cpus); "
            "ask for fewer workers (num_workers= or workers_per_node=), or give Spark more executors or cores"
        )


# -- the tasks ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TaskSpec:
    """What every task of the stage gets: where the driver listens, the group's secret, what
    builds the runner, the ranges of the rows it is handed, and whether the runner needs a
    process of its own (TensorFlow sets its collective runtime up once per process, and Spark
    reuses its Python workers from task to task)."""

    driver: tuple[str, int]
    secret: str
    runner_factory: Callable[[WorkerInfo], Any]
    world_size: int
    cores_per_executor: int
    rows: Mapping[str, tuple[list[int], list[list[tuple[int, int, int]]], Any]] = field(default_factory=dict)
    fresh_process: bool = False
    #: the runner class a fresh process's successor imports ahead of the next task (warm workers on), or None
    warm_runner: Optional[str] = None


@dataclass(frozen=True)
class _Place:
    """A task's place in the group, read from its barrier context."""

    rank: int
    host: str
    num_threads: int


class _DriverLink:
    """A task's connection to the driver: replies, progress and heartbeats share it, one message
    at a time."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        from pyspark import cloudpickle

        payload = cloudpickle.dumps(message)
        with self._lock:
            self.connection.send_bytes(payload)

    def receive(self) -> Any:
        from pyspark import cloudpickle

        return cloudpickle.loads(self.connection.recv_bytes())

    def gather(self, text: str) -> list[str]:
        """Every task's ``text``, by rank: this task's goes to the driver, which answers once it
        has all (the driver relays; ``BarrierTaskContext.allGather`` waits for whole seconds)."""
        self.send(("address", text))
        while True:
            message = self.receive()
            if isinstance(message, tuple) and message[:1] == ("addresses",):
                return list(message[1])

    def beat_forever(self) -> None:
        """Send a heartbeat every second until the connection closes (a daemon thread)."""
        while True:
            time.sleep(_BEAT_INTERVAL_S)
            try:
                self.send(("beat",))
            except (OSError, ValueError):
                return


@dataclass(frozen=True)
class TaskWorkerInfo(WorkerInfo):
    """A runner's place in a Spark-backend group: progress goes to the driver over the task's link."""

    link: Optional[_DriverLink] = None

    @property
    def publishes_progress(self) -> bool:
        return self.rank == 0 and self.link is not None

    def publish_progress(self, progress: dict[str, Any]) -> None:
        if self.publishes_progress:
            self.link.send(("progress", progress))

    def start_heartbeat(self) -> None:
        """The link's own thread sends the heartbeats."""


def _connect_to_driver(spec: _TaskSpec, rank: int) -> _DriverLink:
    deadline = time.monotonic() + _CONNECT_TIMEOUT_S
    while True:
        try:
            sock = socket.create_connection(spec.driver, timeout=10)
            break
        except OSError as error:
            if time.monotonic() > deadline:
                raise ConnectionError(f"a Spark-backend task could not reach the driver at {spec.driver}: {error}") from error
            time.sleep(0.2)
    sock.settimeout(None)
    link = _DriverLink(Connection(sock.detach()))
    link.send(("hello", spec.secret, rank, os.getpid()))
    threading.Thread(target=link.beat_forever, name="zoo_lite-task-heartbeat", daemon=True).start()
    return link


def _held_shards(slices: Iterator[tuple[str, int, int, int, list[Any]]], spec: _TaskSpec, rank: int) -> dict[str, list[Any]]:
    """This task's shards of every row feed, in its assignment's order."""
    by_range = {(key, partition, start): shards for key, partition, start, _, shards in slices}
    held: dict[str, list[Any]] = {}
    for key, (_, assignment, template) in spec.rows.items():
        mine = [shard for partition, start, _ in assignment[rank] for shard in by_range[(key, partition, start)]]
        held[key] = mine if mine else [template]
    return held


def _place_of(context: Any, cores_per_executor: int) -> _Place:
    """The task's rank, its executor's host, and the cores of that executor shared by the group's tasks there."""
    rank = context.partitionId()
    addresses = [info.address for info in context.getTaskInfos()]
    threads = max(1, cores_per_executor // max(1, addresses.count(addresses[rank])))
    return _Place(rank, addresses[rank].rsplit(":", 1)[0], threads)


def _start_runner(spec: _TaskSpec, link: _DriverLink, place: _Place, held: dict[str, list[Any]]) -> Any:
    """Build this task's runner, connect it to its peers (their addresses exchanged through the
    driver) and load its rows."""
    runner = spec.runner_factory(TaskWorkerInfo(place.rank, spec.world_size, place.num_threads, None, link))
    try:
        listen = getattr(runner, "listen", None)
        port = listen(place.host) if listen is not None else free_port(place.host)
        addresses = [json.loads(text) for text in link.gather(json.dumps([place.host, port]))]
        runner.connect([(str(host), int(number)) for host, number in addresses])
        for key, shards in held.items():
            partition_rows, assignment, _ = spec.rows[key]
            runner.load_shards(key, shards, partition_rows, assignment[place.rank])
    except BaseException:
        runner.close()
        raise
    return runner


def _serve(spec: _TaskSpec, place: _Place, held: dict[str, list[Any]]) -> None:
    """One worker: start the runner, then run the driver's calls until it says to end (or is gone)."""
    link = _connect_to_driver(spec, place.rank)
    runner = None
    try:
        try:
            runner = _start_runner(spec, link, place, held)
            link.send(("ok", None))
        except BaseException as error:  # noqa: BLE001 - told to the driver, which ends the group
            link.send(_failure(error))
        while True:
            try:
                call = link.receive()
            except (EOFError, OSError):
                break   # the driver ended the group
            if call is _CLOSE:
                break
            try:
                link.send(("ok", call(runner)))
            except BaseException as error:  # noqa: BLE001 - the driver decides what a failure ends
                link.send(_failure(error))
    finally:
        if runner is not None:
            runner.close()   # a reused Python worker must not keep a process group or shared memory
        with contextlib.suppress(OSError):
            link.send(("ok", None))
        link.connection.close()


def _run_task(spec_bytes: bytes, slices: Iterator[Any]) -> list[Any]:
    """A barrier task: the worker of its partition, in this Python worker or in a fresh child."""
    from pyspark import BarrierTaskContext, cloudpickle

    context = BarrierTaskContext.get()
    spec: _TaskSpec = cloudpickle.loads(spec_bytes)
    place = _place_of(context, spec.cores_per_executor)
    held = _held_shards(slices, spec, place.rank)
    if spec.fresh_process:
        run_in_child(functools.partial(_serve_spec_bytes, spec_bytes, place, held), spec.warm_runner)
    else:
        _serve(spec, place, held)
    return []


def _serve_spec_bytes(spec_bytes: bytes, place: _Place, held: dict[str, list[Any]]) -> None:
    """:func:`_serve` in a child process, its spec unpickled there (with the parent's ``sys.path``)."""
    from pyspark import cloudpickle

    _serve(cloudpickle.loads(spec_bytes), place, held)


def _failure(error: BaseException) -> tuple[str, Any, str]:
    """An error message for the driver: the error itself when it pickles, with its traceback."""
    import pickle

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        pickle.loads(pickle.dumps(error))
        return ("error", error, text)
    except Exception:  # noqa: BLE001 - an error that does not pickle travels as its text
        return ("error", f"{type(error).__name__}: {error}", text)


# -- the driver -----------------------------------------------------------------------------------------


def _stage_input(sc: "SparkContext", feeds: Sequence[RowsFeed], num_workers: int) -> "RDD":
    """One partition per worker, holding its ranges of every feed's rows."""
    if not feeds:
        return sc.parallelize([], num_workers)
    # every feed's RDD has the same partitioner, so their union keeps one partition per worker
    united = feeds[0].by_worker if len(feeds) == 1 else sc.union([feed.by_worker for feed in feeds])
    return united.values()


def _worker_of(worker: int) -> int:
    return worker


def _cut_for_workers(key: str, assignment: list[list[tuple[int, int, int]]]) -> Callable[[int, Iterator[Any]], Iterator[Any]]:
    def cut(partition: int, shards: Iterator[Any]) -> Iterator[Any]:
        from zoo_lite.data import partition_ops

        held = list(shards)
        for worker, ranges in enumerate(assignment):
            for index, start, stop in ranges:
                if index == partition:
                    yield worker, (key, partition, start, stop, partition_ops.slice_partition(held, start, stop))
    return cut


def _driver_host(sc: "SparkContext") -> str:
    """The address the executors reach the driver at (Spark's own)."""
    return sc.getConf().get("spark.driver.host") or socket.gethostbyname(socket.gethostname())


class SparkTaskGroup:
    """Training workers as the tasks of one Spark barrier stage (see the module docstring).

    Parameters
    ----------
    runner_factory : callable
        ``runner_factory(info)`` builds a worker's runner, inside its task.
    num_workers : int
        Tasks of the stage; the cluster must have as many task slots free.
    feeds : list of RowsFeed
        Rows each task reads from its partition, by feed key.
    start_timeout_s : float
        Bound on starting the stage, connecting the workers and loading their rows.
    heartbeat_timeout_s : float
        A task that sends nothing for this long is treated as lost.
    fresh_process : bool
        Run each runner in a child process of its task (a framework whose collective runtime is
        set up once per process; Spark reuses its Python workers).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> class Echo:
    ...     def __init__(self, info): self.info = info
    ...     def connect(self, addresses): self.peers = len(addresses)
    ...     def close(self): pass
    >>> _ = init_orca_context(cores=2)
    >>> group = SparkTaskGroup(Echo, num_workers=2)
    >>> group.call(lambda runner: f"{runner.info.rank}/{runner.peers}")
    ['0/2', '1/2']
    >>> group.shutdown()
    """

    #: a Spark-backend group keeps no standby and runs on no Ray node
    from_standby = False
    standby = None
    nodes_used = 0

    def __init__(self, runner_factory: Callable[[WorkerInfo], Any], num_workers: int, feeds: Sequence[RowsFeed] = (),
                 start_timeout_s: float = 180.0, heartbeat_timeout_s: float = 30.0, fresh_process: bool = False) -> None:
        from pyspark import cloudpickle

        from zoo_lite.context import OrcaContext
        from zoo_lite.spark_settings import cores_per_executor

        spark = OrcaContext.get_spark_session()
        sc = spark.sparkContext
        check_task_slots(sc, num_workers)
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.feed_keys = frozenset(feed.key for feed in feeds)
        self._sc = sc
        self._job_group = f"zoo_lite-spark-backend-{uuid.uuid4().hex[:12]}"
        self._job_error: Optional[BaseException] = None
        self._progress: dict[str, Any] = {}
        self._last_heard: list[float] = []
        self.links: list[_DriverLink] = []
        self._addresses: dict[int, str] = {}
        secret = secrets.token_hex(16)
        self._server = socket.create_server((_driver_host(sc), 0), backlog=num_workers)
        spec = _TaskSpec(self._server.getsockname()[:2], secret, runner_factory, num_workers,
                         cores_per_executor(spark, executor_count(spark)),
                         {feed.key: (feed.partition_rows, feed.assignment, feed.template) for feed in feeds}, fresh_process,
                         runner_path(runner_factory) if fresh_process and OrcaContext.warm_workers else None)
        with user_code_by_value():
            spec_bytes = cloudpickle.dumps(spec)
        stage = _stage_input(sc, feeds, num_workers).barrier().mapPartitions(functools.partial(_run_task, spec_bytes))
        self._job = threading.Thread(target=self._run_stage, args=(stage,), name="zoo_lite-spark-backend-stage", daemon=True)
        try:
            self._job.start()
            self._accept(num_workers, secret, start_timeout_s)
            self._wait(list(range(num_workers)), "start", start_timeout_s)
        except BaseException:
            self.kill()
            raise

    def _run_stage(self, stage: "RDD") -> None:
        self._sc.setJobGroup(self._job_group, "zoo_lite training (backend='spark')", interruptOnCancel=True)
        try:
            stage.collect()
        except BaseException as error:  # noqa: BLE001 - the driver's wait reports it
            self._job_error = error

    def _accept(self, num_workers: int, secret: str, timeout_s: float) -> None:
        """Every task's connection, by rank (bounded by ``timeout_s``; a failed stage ends it)."""
        links: dict[int, _DriverLink] = {}
        self._server.settimeout(_POLL_INTERVAL_S)
        deadline = time.monotonic() + timeout_s
        with announced_wait(f"{num_workers} Spark barrier task(s) of backend='spark' to start", timeout_s):
            while len(links) < num_workers:
                self._raise_if_stage_ended("start")
                if time.monotonic() > deadline:
                    raise WorkerTimeoutError(
                        f"{num_workers - len(links)} of {num_workers} Spark barrier task(s) did not start within "
                        f"{timeout_s:.0f} s (start_timeout_s); are other jobs holding the task slots?")
                try:
                    sock, _ = self._server.accept()
                except socket.timeout:
                    continue
                sock.settimeout(None)
                link = _DriverLink(Connection(sock.detach()))
                if not link.connection.poll(10):
                    link.connection.close()
                    continue
                hello = link.receive()
                if hello[:2] != ("hello", secret):
                    link.connection.close()   # a task of an earlier group, or a stranger
                    continue
                links[hello[2]] = link
        self.links = [links[rank] for rank in range(num_workers)]
        self._last_heard = [time.monotonic()] * num_workers

    @property
    def num_workers(self) -> int:
        return len(self.links)

    @property
    def actors(self) -> list[_DriverLink]:
        """The live workers' links (empty once the group ended): the Estimator's test of a live group."""
        return self.links

    def node_temp_dir(self, rank: int) -> Optional[str]:
        """None: a task's callbacks stage their files in the executor's temp dir."""
        return None

    def is_alive_in_current_ray(self) -> bool:
        """Whether the group still runs (it does not depend on Ray)."""
        return bool(self.links) and self._job.is_alive()

    def call(self, call: Callable[[Any], T], *, timeout_s: Optional[float] = None,
             on_poll: Optional[Callable[[], None]] = None) -> list[T]:
        """``call(runner)`` on every worker; results in rank order."""
        return self.call_each([call] * len(self.links), timeout_s=timeout_s, on_poll=on_poll)

    def call_each(self, calls: Sequence[Callable[[Any], T]], *, timeout_s: Optional[float] = None,
                  on_poll: Optional[Callable[[], None]] = None) -> list[T]:
        """``calls[rank](runner)`` on every worker; results in rank order."""
        return self._send_and_wait(list(enumerate(calls)), runner_call_name(calls[0]), timeout_s, on_poll)

    def call_one(self, rank: int, call: Callable[[Any], T], *, timeout_s: Optional[float] = None) -> T:
        """``call(runner)`` on the worker of ``rank`` only."""
        return self._send_and_wait([(rank, call)], runner_call_name(call), timeout_s, None)[0]

    def _send_and_wait(self, calls: list[tuple[int, Callable[[Any], Any]]], what: str, timeout_s: Optional[float],
                       on_poll: Optional[Callable[[], None]]) -> list[Any]:
        from pyspark import cloudpickle

        if not self.links:
            raise ZooLiteError("this worker group was shut down or has failed; the Estimator starts a new one on next use")
        try:
            with user_code_by_value():
                payloads = [(rank, cloudpickle.dumps(call)) for rank, call in calls]
            for rank, payload in payloads:
                self._send(rank, payload, what)
            return self._wait([rank for rank, _ in calls], what, timeout_s, on_poll)
        except BaseException:
            self.kill()   # peers of a failed worker may be blocked in a collective for good
            raise

    def _send(self, rank: int, payload: bytes, what: str) -> None:
        try:
            self.links[rank].connection.send_bytes(payload)
        except OSError as error:
            raise self._lost(rank, what, f"its connection broke ({error})") from error

    def _wait(self, ranks: list[int], what: str, timeout_s: Optional[float],
              on_poll: Optional[Callable[[], None]] = None) -> list[Any]:
        """Each rank's reply, in order; the first failure ends the wait (a lost worker is
        preferred as the cause over the errors its peers then hit)."""
        results: dict[int, Any] = {}
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        rank_of = {id(self.links[rank].connection): rank for rank in ranks}
        while len(results) < len(ranks):
            pending = [self.links[rank].connection for rank in ranks if rank not in results]
            for connection in wait(pending, timeout=_POLL_INTERVAL_S):
                rank = rank_of[id(connection)]
                reply = self._reply(rank, what)
                if reply is not None:
                    if reply[0] == "error":
                        raise self._root_failure(rank, reply, what, [r for r in ranks if r not in results and r != rank])
                    results[rank] = reply[1]
            self._raise_if_silent(ranks, results, what)
            self._raise_if_stage_ended(what)
            if deadline is not None and time.monotonic() > deadline:
                late = sorted(rank for rank in ranks if rank not in results)
                raise WorkerTimeoutError(f"workers {late} did not finish {what!r} within {timeout_s:.0f} s")
            if on_poll is not None:
                on_poll()
        return [results[rank] for rank in ranks]

    def _reply(self, rank: int, what: str) -> Optional[tuple[Any, ...]]:
        """The next message from ``rank``: a reply (``("ok", result)`` or ``("error", ...)``), or
        None for a heartbeat or a progress snapshot (noted)."""
        try:
            message = self.links[rank].receive()
        except (EOFError, OSError) as error:
            raise self._lost(rank, what, "its task ended or its executor was lost (the connection to it closed)") from error
        self._last_heard[rank] = time.monotonic()
        if message[0] == "progress":
            self._progress = message[1]
        elif message[0] == "address":
            self._relay_address(rank, message[1], what)
        return None if message[0] in ("beat", "progress", "address") else message

    def _relay_address(self, rank: int, text: str, what: str) -> None:
        """Note a task's rendezvous address; once every task's is in, send each task all of them."""
        from pyspark import cloudpickle

        self._addresses[rank] = text
        if len(self._addresses) == len(self.links):
            payload = cloudpickle.dumps(("addresses", [self._addresses[r] for r in range(len(self.links))]))
            for peer in range(len(self.links)):
                self._send(peer, payload, what)

    def _root_failure(self, rank: int, reply: tuple[Any, ...], what: str, peers: list[int]) -> ZooLiteError:
        """The failure to report: a peer lost meanwhile rather than the error a collective then
        raised; else the worker's own error."""
        deadline = time.monotonic() + _PEER_LOSS_GRACE_S
        while peers and time.monotonic() < deadline:
            for connection in wait([self.links[peer].connection for peer in peers], timeout=0.1):
                peer = next(p for p in peers if self.links[p].connection is connection)
                try:
                    if self._reply(peer, what) is not None:
                        peers.remove(peer)
                except WorkerError as lost:
                    return lost
        _, error, text = reply
        if isinstance(error, ZooLiteError):
            return error   # the runner's own clear error, e.g. a bad data creator
        kind, message = (type(error).__name__, str(error)) if isinstance(error, BaseException) else ("error", str(error))
        return WorkerError(rank, f"{what} failed: {kind}: {message}", text)

    def _lost(self, rank: int, what: str, why: str) -> WorkerError:
        return WorkerError(rank, f"the Spark task of worker {rank} was lost during {what}: {why}; the barrier stage is "
                                 "run again on next use", lost=True)

    def _raise_if_silent(self, ranks: list[int], done: dict[int, Any], what: str) -> None:
        now = time.monotonic()
        for rank in ranks:
            if rank not in done and now - self._last_heard[rank] > self.heartbeat_timeout_s:
                raise self._lost(rank, what, f"it sent no heartbeat for {now - self._last_heard[rank]:.0f} s "
                                             f"(WorkerConfig(heartbeat_timeout_s={self.heartbeat_timeout_s:g})): its "
                                             "process is stopped, or hung holding Python's GIL")

    def _raise_if_stage_ended(self, what: str) -> None:
        if self._job.is_alive() or not self._job.ident:
            return
        cause = self._job_error
        text = str(cause) if cause is not None else ""
        environment = environment_error_of(cause, self._sc) if cause is not None else None
        if environment is not None:   # the executors' Python lacks the environment: no retry helps
            raise environment from None
        if "Traceback (most recent call last)" in text:   # Python code of a task raised (e.g. a module it cannot import)
            raise WorkerError(0, f"a task of the Spark barrier stage of backend='spark' failed during {what}: "
                                 f"{text.strip().splitlines()[-1][:500]}", text[-8000:])
        detail = f"{type(cause).__name__}: {text[:2000]}" if cause is not None else "it ended early"
        raise WorkerError(0, f"the Spark barrier stage of backend='spark' failed during {what} ({detail})", lost=True)

    def progress(self) -> dict[str, Any]:
        """Rank 0's latest progress snapshot."""
        return dict(self._progress)

    def refill_pool(self) -> None:
        """A Spark-backend group's next processes are its tasks' (:mod:`zoo_lite.learn.base.spark_children`)."""

    def start_standby(self) -> None:
        """A Spark-backend group keeps no standby."""

    def take_standby(self) -> None:
        return None

    def end_standby(self) -> None:
        """Nothing to end."""

    def kill(self) -> None:
        """End the stage at once (idempotent): close the links, cancel the job, wait for it."""
        links, self.links = self.links, []
        for link in links:
            link.connection.close()
        self._server.close()
        if self._job.is_alive():
            self._sc.cancelJobGroup(self._job_group)
            self._job.join(_END_TIMEOUT_S)
        self._wait_until_spark_reports_the_stage_ended()

    def _wait_until_spark_reports_the_stage_ended(self) -> None:
        """Wait (bounded) until Spark's status store shows no running job of this stage.

        A failed ``collect`` returns before Spark's listener bus has recorded the job's end, so a
        caller that checks the cluster (or asks for its task slots) right after a failed fit could
        still see the stage as running.
        """
        tracker = self._sc.statusTracker()
        deadline = time.monotonic() + _END_TIMEOUT_S
        while True:
            running = [job for job in tracker.getJobIdsForGroup(self._job_group)
                       if (info := tracker.getJobInfo(job)) is not None and info.status == "RUNNING"]
            if not running:
                return
            if time.monotonic() > deadline:
                _logger.warning("Spark still reports job(s) %s of group %s of backend='spark' as running %.0f s after "
                                "they were cancelled; their task slots may stay busy until Spark ends them",
                                running, self._job_group, _END_TIMEOUT_S)
                return
            time.sleep(_STATUS_POLL_S)

    def shutdown(self) -> None:
        """Let each runner release its resources (bounded), then end the stage."""
        if self.links:
            try:
                self._send_and_wait([(rank, _CLOSE) for rank in range(len(self.links))], "close", _END_TIMEOUT_S, None)
            except ZooLiteError:
                pass   # the stage is ended below either way
        if self._job.is_alive():
            self._job.join(_END_TIMEOUT_S)
        self.kill()
