"""The worker group: one Ray actor per training worker, spread over the Ray-on-Spark nodes.

``num_nodes × workers_per_node`` actors, each pinned to its node and given that node's CPUs
divided by ``workers_per_node``. Each actor hosts one *runner* (the framework's per-worker
object, built by a factory the Estimator passes in) and forwards method calls to it, one at a
time on the actor's main thread; rank 0 publishes progress to the group's board (kept by a small
actor on its node, one for every group there) that the driver reads while a call runs. The group lives across ``fit`` / ``evaluate`` / ``predict``
until :meth:`WorkerGroup.shutdown`.

Each worker also sends the board a heartbeat every second from a thread of its own. A worker
whose heartbeats stop for ``heartbeat_timeout_s`` (its process stopped, or hung holding Python's
GIL) is treated as lost, as a dead one is: its peers may wait in a collective for it, and Ray
sees nothing wrong with a process that is alive but stopped. When the worker's whole host went
quiet, the node's own heartbeat reports it instead, as a lost node to replace.

A group can keep a *standby* beside it (``WorkerConfig(standby_workers=True)``): one idle,
started actor per worker on the same node, with the runner factory unpickled (so the framework
imported) and no runner built. When the group is lost, the next group takes those processes over
(:class:`Standby`) instead of starting new ones, which is most of a recovery's time. The node's
CPUs are held in Ray by one of the two sets at a time: a standby holds none while the workers
hold them, and a standby started beside workers that took over holds them instead.

Any group also starts a standby on its other nodes while one of its nodes is quiet (no node
heartbeat for 3 s), and ends it once that node is heard again: a host that falls silent is lost
only after ``heartbeat_timeout_s``, time enough to have the next group's processes ready. A group
that takes it over without keeping a standby of its own holds no CPUs in Ray, until it ends (at
the latest when the fit grows back onto the replaced node).

Waiting never hangs: start-up and connection are bounded by ``start_timeout_s``; long calls
(an epoch) are watched with :func:`ray.wait`, so the first worker that fails or dies ends the
wait at once with its traceback, and the group is killed (its peers may be blocked in a
collective). The Estimator then starts a fresh group on next use.
"""

from __future__ import annotations

import functools
import logging
import re
import os
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar

from zoo_lite.errors import InvalidArgumentError, WorkerError, WorkerTimeoutError, ZooLiteError, check_positive_int
from zoo_lite.learn.base.node_boards import GroupBoard, NodeBoards, start_board
from zoo_lite.learn.base.ports import is_port_taken
from zoo_lite.learn.base.warm_pool import CpuReservation, WarmPool, hand_back, pick_by_node, reserved_cpus_on, warm_pool_of
from zoo_lite.learn.base.warm_up import runner_path, used_process_serves
from zoo_lite.learn.base.worker_actor import PooledWorkerActor, WorkerActor, cluster_answers, end_actors, ray_context_at
from zoo_lite.ray_on_spark.watchdog import HEARTBEAT_INTERVAL_S
from zoo_lite.user_code import user_code_by_value
from zoo_lite.waiting import announced_wait

if TYPE_CHECKING:
    from zoo_lite.ray_on_spark.cluster import RayContext

T = TypeVar("T")

__all__ = ["WorkerGroup", "WorkerInfo", "GroupBoard", "Standby", "Workers", "start_worker_group", "started_again_if_port_taken", "workers_on_nodes", "planned_worker_count", "wait_for_free_cpus", "runner_call_name"]

_logger = logging.getLogger("zoo_lite.learn")

_NAMESPACE = "zoo_lite"
_POLL_INTERVAL_S = 0.5
_SHUTDOWN_TIMEOUT_S = 15.0
#: how long a failed call waits for news of a dead peer, which would be the root cause
_PEER_DEATH_GRACE_S = 3.0
#: how long a call that failed with a worker's clear error waits for the peers to end it too
#: (a data check fails on every worker at once); a peer still inside then is in a collective
_CLEAN_FAILURE_WAIT_S = 1.0
#: how long a new group waits for CPUs that were just released to show as free in Ray
_FREE_CPU_WAIT_S = 10.0
#: how often a worker sends its heartbeat, and how often the driver looks for silent workers
_BEAT_INTERVAL_S = 1.0
_SILENCE_CHECK_INTERVAL_S = 2.0
#: a host unheard for this long is going silent as a whole; its workers are left to the node's
#: heartbeat (a task cannot reach them to end them, and their CPUs never show as free)
_QUIET_HOST_S = 3.0
#: a silent worker whose host has missed a node heartbeat too is left to the node's heartbeat:
#: the two beats keep their own clocks, up to a beat apart, so the bar of ``_QUIET_HOST_S``
#: would race a worker's ``heartbeat_timeout_s`` of 3 s (a cut-off host reported as a silent process)
_HOST_MISSED_A_BEAT_S = 1.5 * HEARTBEAT_INTERVAL_S
#: terminal colour codes Ray puts in a task's traceback header; they garble logs and files
_ANSI_CODES = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class WorkerInfo:
    """What a runner knows about its place in the group."""

    rank: int
    world_size: int
    num_threads: int
    progress_board: Optional[GroupBoard] = None

    @property
    def publishes_progress(self) -> bool:
        """Whether this worker's progress is shown on the driver (rank 0's)."""
        return self.rank == 0 and self.progress_board is not None

    def publish_progress(self, progress: dict[str, Any]) -> None:
        """Hand a progress snapshot to the driver's progress display, without waiting (rank 0
        only; the others' are dropped)."""
        if self.publishes_progress:
            self.progress_board.publish(progress)

    def start_heartbeat(self) -> threading.Event:
        """Send the board a heartbeat every second, from a daemon thread, until the returned event
        is set (a worker handed back to the warm pool) or the process stops (or hangs holding the GIL)."""
        stopped = threading.Event()
        if self.progress_board is None:
            return stopped
        import ray

        board, rank, pid, host = self.progress_board, self.rank, os.getpid(), ray.util.get_node_ip_address()

        def beat_until_stopped() -> None:
            while not stopped.is_set():
                board.beat(rank, pid, host)
                stopped.wait(_BEAT_INTERVAL_S)

        threading.Thread(target=beat_until_stopped, name=f"zoo_lite-heartbeat-{rank}", daemon=True).start()
        return stopped


def _sigkill_ray_worker(pid: int) -> bool:
    """SIGKILL the Ray worker process ``pid`` of this host (runs as a task there); False where
    ``pid`` is gone or is no Ray worker any more."""
    import signal

    try:
        with open(f"/proc/{pid}/comm") as comm:
            if not comm.read().startswith("ray::"):
                return False
        os.kill(pid, signal.SIGKILL)   # a stopped process cannot answer Ray's own kill
        return True
    except (FileNotFoundError, ProcessLookupError):
        return False


def _end_silent_processes(processes: list[tuple[str, int]]) -> None:
    """End each silent worker (``(Ray node id, pid)``) with a zero-CPU task on its node, waiting
    a few seconds at most: ``ray.kill`` cannot end a process that is stopped."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    kill = ray.remote(num_cpus=0, max_retries=0)(_sigkill_ray_worker)
    ends = [kill.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(pid)
            for node_id, pid in processes]
    ray.wait(ends, num_returns=len(ends), timeout=_SHUTDOWN_TIMEOUT_S)


@dataclass(frozen=True)
class _CpuNode:
    node_id: str
    name: str      # zoo_lite's node name (``ray start --node-name``), as the Ray context's lease knows it
    cpus: float
    address: str   # the host's address, as the node's workers report it


def _cpu_nodes(ray_context: "RayContext") -> list[_CpuNode]:
    """The Ray context's nodes with CPUs that Ray sees alive, in a stable order (a lost node Ray
    has not marked dead yet is not among the context's nodes any more)."""
    from zoo_lite.ray_on_spark.cluster import alive_ray_nodes

    names = {node["node_name"] for node in ray_context.nodes}
    nodes = [node for node in alive_ray_nodes() if node["Resources"].get("CPU", 0) > 0 and node.get("NodeName") in names]
    nodes.sort(key=lambda node: (node["NodeManagerAddress"], node["NodeManagerPort"]))
    return [_CpuNode(node["NodeID"], node.get("NodeName", ""), float(node["Resources"]["CPU"]), node["NodeManagerAddress"])
            for node in nodes]


def wait_for_free_cpus(holders: str = "", timeout_s: float = _FREE_CPU_WAIT_S) -> None:
    """Wait until every CPU of the Ray-on-Spark nodes is free, as a new group needs (it takes each
    node's CPUs); after ``timeout_s`` say what holds them instead of letting the group wait for
    its whole start timeout. ``holders`` names holders the caller knows of."""
    from zoo_lite.context import ray_context_started_on_demand

    ray_context = ray_context_started_on_demand()
    deadline = time.monotonic() + timeout_s
    with announced_wait("every CPU of the Ray-on-Spark nodes to be free for a new worker group", timeout_s):
        while True:
            short = _nodes_short_of_cpus(_cpu_nodes(ray_context))
            if not short or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    if short:
        needed = sum(node.cpus for node, _ in short)
        free = sum(available for _, available in short)
        raise WorkerTimeoutError(
            f"a worker group needs every CPU of the Ray-on-Spark nodes, but node(s) {[node.name for node, _ in short]} had "
            f"only {free:g} of their {needed:g} CPUs free after {timeout_s:.0f} s: they are held by "
            f"{holders or _cpu_holders({node.node_id for node, _ in short})}; call shutdown() on an Estimator you no "
            "longer use, or end what holds them"
        )


def _nodes_short_of_cpus(nodes: list[_CpuNode]) -> list[tuple[_CpuNode, float]]:
    """Each node of ``nodes`` with fewer CPUs free than it has, and the CPUs it has free."""
    from ray._private.state import available_resources_per_node

    available = available_resources_per_node()
    free = [(node, float(available.get(node.node_id, {}).get("CPU", 0.0))) for node in nodes]
    return [(node, cpus) for node, cpus in free if cpus + 1e-6 < node.cpus]


def _cpu_holders(node_ids: set[str]) -> str:
    """Who holds CPUs on ``node_ids``, as far as Ray's actor and placement group tables tell:
    zoo_lite's own training workers of a group that did not end yet (a lost group's, still being
    ended), or others."""
    from ray._private.state import actors

    from zoo_lite.data.ray_xshards import PartitionOwner

    # zoo_lite's actors of 0 CPUs (a pooled worker's CPUs, once taken, are its group's reservation)
    cpu_free_helpers = {NodeBoards.__name__, PartitionOwner.__name__, PooledWorkerActor.__name__}
    holders = [actor for actor in actors(actor_state_name="ALIVE").values()
               if (actor.get("Address") or {}).get("NodeID") in node_ids and actor.get("ActorClassName") not in cpu_free_helpers]
    own = sum(1 for actor in holders if actor.get("ActorClassName") == WorkerActor.__name__)
    reserved = reserved_cpus_on(node_ids)
    outside = "Ray actors or tasks outside zoo_lite's Estimators (your own ray.remote code, or another driver)"
    if not own and not reserved:
        return outside
    workers = f"{own} training worker(s)" if own else ""
    reservations = f"{reserved:g} CPUs reserved for warm workers" if reserved else ""
    return (f"{' and '.join(part for part in (workers, reservations) if part)} of an earlier zoo_lite worker group that "
            "did not end yet (a lost group's workers, still being ended by Ray, or another Estimator's group in use by "
            "another thread)" + (f", and {outside}" if own < len(holders) else ""))


#: a rank's node, and how many workers share that node's CPUs
_Place = tuple[_CpuNode, int]


def _rank_places(nodes: list[_CpuNode], counts: list[int]) -> list[_Place]:
    """Each rank's place, ranks in node order: ``counts[i]`` workers on node ``i``."""
    return [(node, count) for node, count in zip(nodes, counts) for _ in range(count)]


def _worker_infos(places: list[_Place], progress_board: Any) -> list[WorkerInfo]:
    """Each rank's info: its node's CPUs divided by the workers there as threads, and the board
    (every rank sends it heartbeats; rank 0 publishes progress)."""
    return [WorkerInfo(rank, len(places), max(1, int(node.cpus // count)), progress_board)
            for rank, (node, count) in enumerate(places)]


def _start_actors(places: list[_Place], runner_factory: Callable[[WorkerInfo], Any], infos: Optional[list[WorkerInfo]],
                  holds_cpus: bool) -> list[Any]:
    """An actor per place, pinned to its node and holding its share of the node's CPUs when
    ``holds_cpus``: the workers of ``infos``, or standbys without them."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor_class = ray.remote(WorkerActor)
    with user_code_by_value():   # the runner factory carries the user's model and creators
        return [actor_class.options(num_cpus=node.cpus / count if holds_cpus else 0, namespace=_NAMESPACE,
                                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                                    ).remote(runner_factory, infos[rank] if infos is not None else None)
                for rank, (node, count) in enumerate(places)]


@dataclass
class Standby:
    """Idle, started workers kept beside a group for the next group to take over (see the module
    docstring): ``actors[i]`` runs on the node ``node_ids[i]`` and holds its share of that node's
    CPUs in Ray when ``holds_cpus``."""

    ray_address: str
    node_ids: list[str]
    actors: list[Any]
    holds_cpus: bool

    @staticmethod
    def start(ray_address: str, places: list[_Place], runner_factory: Callable[[WorkerInfo], Any],
              holds_cpus: bool) -> "Standby":
        """A standby of an actor per place (started without waiting for them)."""
        node_ids = [node.node_id for node, _ in places]
        return Standby(ray_address, node_ids, _start_actors(places, runner_factory, None, holds_cpus), holds_cpus)

    def actors_for(self, ray_address: str, rank_nodes: list[str]) -> Optional[list[Any]]:
        """Actors for a group whose rank ``r`` runs on node ``rank_nodes[r]``, taken out of the
        standby, if it has as many on each of those nodes (so each gets the same CPU share) and
        none of them died, in the cluster at ``ray_address``; else None, and nothing is taken.
        One still starting is taken: it is further on than a new one."""
        from ray._private.state import actors as actor_table

        wanted, have = Counter(rank_nodes), Counter(self.node_ids)
        if ray_address != self.ray_address or any(have[node] != count for node, count in wanted.items()):
            return None
        picked, left = pick_by_node(list(zip(self.node_ids, self.actors)), rank_nodes)
        taken = [actor for actor in picked if actor is not None]
        dead = actor_table(actor_state_name="DEAD")
        if any(actor._actor_id.hex() in dead for actor in taken):
            return None
        self.node_ids, self.actors = [node for node, _ in left], [actor for _, actor in left]
        return taken

    def end(self) -> None:
        """Kill the actors still in the standby (idempotent)."""
        actors, self.actors, self.node_ids = self.actors, [], []
        end_actors(actors, self.ray_address)


class WorkerGroup:
    """A started group of training workers; see the module docstring.

    Parameters
    ----------
    runner_factory : callable
        ``WorkerInfo -> runner``, picklable; runs inside each actor. The runner follows
        :class:`~zoo_lite.learn.base.runner.Runner` (the group itself calls only its ``connect``
        and ``close``).
    workers_per_node : int
        Workers on each Ray node (each gets the node's CPUs divided by this).
    start_timeout_s : float
        Bound on starting the actors and on their rendezvous.
    num_workers : int, optional
        Workers in all, spread over the nodes, instead of ``workers_per_node`` on each.
    standby : Standby, optional
        An earlier group's standby: the new group takes over its actors where it has as many on
        each node as the group needs, else it is ended and the group starts new actors.
    keep_standby : bool, default False
        Keep a standby beside the group (see the module docstring and :meth:`start_standby`).
    free_cpus : callable, optional
        Called before new actors are started, to make their CPUs free.
    heartbeat_timeout_s : float, default 30
        A worker that sends no heartbeat for this long is treated as lost (``WorkerError`` with
        ``lost=True``), as if its process had died; one whose host missed a node heartbeat too is
        left to the node's ``heartbeat_timeout_s`` of ``init_orca_context``.
    use_warm_pool : bool, default False
        Take the workers from the warm pool where it has them (``runner_factory`` must build a
        module-level runner class); :meth:`refill_pool` refills it (see
        :mod:`zoo_lite.learn.base.warm_pool`; off while ``OrcaContext.warm_workers`` is False).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> _ = init_orca_context(cores=2)
    >>> class Echo:
    ...     def __init__(self, info): self.info = info
    ...     def connect(self, addresses): self.peers = len(addresses)
    ...     def close(self): pass
    ...     def whoami(self, text): return f"{text} {self.info.rank}/{self.info.world_size}"
    >>> group = WorkerGroup(Echo, workers_per_node=2)
    >>> group.call(lambda runner: runner.whoami("worker"))
    ['worker 0/2', 'worker 1/2']
    >>> group.shutdown()
    """

    def __init__(self, runner_factory: Callable[[WorkerInfo], Any], workers_per_node: int = 1,
                 start_timeout_s: float = 180.0, num_workers: Optional[int] = None, *, standby: Optional["Standby"] = None,
                 keep_standby: bool = False, free_cpus: Callable[[], None] = lambda: None,
                 heartbeat_timeout_s: float = 30.0, use_warm_pool: bool = False) -> None:
        workers_per_node = check_positive_int(workers_per_node, "workers_per_node")
        self.heartbeat_timeout_s = heartbeat_timeout_s
        from zoo_lite.context import ray_context_started_on_demand

        self._ray_context = ray_context_started_on_demand()
        self.ray_address = self._ray_context.address
        # no look at the heartbeats before the first ones can be due: the board's process is
        # still starting, and the look would wait for it (0.45 s of a new group's start, measured)
        self._next_silence_check = time.monotonic() + _SILENCE_CHECK_INTERVAL_S
        nodes = _cpu_nodes(self._ray_context)
        if not nodes:
            raise WorkerTimeoutError("the Ray cluster has no node with CPUs to run training workers on")
        #: how many Ray nodes the group was spread over (fewer than the context's after a lost node)
        self.nodes_used = len(nodes)
        places = _rank_places(nodes, workers_on_nodes(len(nodes), workers_per_node, num_workers))
        #: the zoo_lite node name each rank runs on, and its Ray node id
        self.node_names = [node.name for node, _ in places]
        self._node_ids = [node.node_id for node, _ in places]
        #: idle workers kept for the next group (``keep_standby``), until taken or ended
        self.standby: Optional[Standby] = None
        self._keeps_standby = keep_standby
        #: where the group runs and what its actors build, for a standby (its own, or one beside a quiet host)
        self._places, self._runner_factory = places, runner_factory
        self._standby_for_quiet_hosts = False
        #: the failure of the last call, where every worker ended it with a clear error of its own:
        #: the group stays for the next call
        self._clean_failure: Optional[BaseException] = None
        self.progress_board = start_board(self.ray_address, places[0][0].node_id)
        infos = _worker_infos(places, self.progress_board)
        taken = standby.actors_for(self.ray_address, [node.node_id for node, _ in places]) if standby is not None else None
        if standby is not None:
            standby.end()   # what the new group does not take
        self.actors: list[Any] = taken or []
        #: whether the group took over a standby's processes rather than starting new ones
        self.from_standby = taken is not None
        #: the CPUs of the workers taken from the warm pool, held in Ray for the group's life
        self._reservation: Optional[CpuReservation] = None
        #: how many of the group's workers came from the warm pool
        self.from_pool = 0
        #: ``(node id, actor)`` of the workers that go back to the pool when the group ends cleanly:
        #: all, where each came from the pool and the framework lets a process serve again
        self._to_hand_back: list[tuple[str, Any]] = []
        pool = warm_pool_of(self.ray_address) if use_warm_pool and taken is None else None
        try:
            if taken is not None:
                self.holds_cpus = standby.holds_cpus
                self._wait([actor.take_place.remote(info) for actor, info in zip(taken, infos)], "start", start_timeout_s)
            else:
                free_cpus()
                self.holds_cpus = True
                self._start_or_take(pool, infos, start_timeout_s)
                self.start_standby()   # beside the workers, so ready about when they are
            addresses = self._wait([actor.address.remote() for actor in self.actors], "start", start_timeout_s)
            connect = functools.partial(_connect, addresses)
            serve_again = self._wait([actor.call.remote(connect) for actor in self.actors], "connect", start_timeout_s)
        except BaseException:
            self.kill()
            self.end_standby()
            raise
        #: the warm pool to refill for the next group once this one has worked (:meth:`refill_pool`)
        self._pool_to_refill = pool
        if pool is not None and self.from_pool == len(self.actors) and all(serve_again):
            self._to_hand_back = list(zip(self._node_ids, self.actors))
            # an Estimator dropped without shutdown() drops its group: its workers go back too
            weakref.finalize(self, hand_back, self.ray_address, runner_path(runner_factory), self._to_hand_back)

    def _start_or_take(self, pool: Optional[WarmPool], infos: list[WorkerInfo], timeout_s: float) -> None:
        """The group's actors: for each rank, one taken from the warm ``pool`` where it has one on
        the rank's node (their CPUs reserved), else a new one."""
        hosts = [node.address for node, _ in self._places]
        pooled = ([None] * len(infos) if pool is None else
                  pool.take(runner_path(self._runner_factory), self._node_ids, used_too=used_process_serves(self._runner_factory, hosts)))
        self.actors = [actor for actor in pooled if actor is not None]   # ended with the group should the rest fail
        self.from_pool = len(self.actors)
        if self.actors:
            self._reservation = CpuReservation([(node.node_id, node.cpus / count) for (node, count), actor
                                                in zip(self._places, pooled) if actor is not None], timeout_s, self.ray_address)
        cold = [rank for rank, actor in enumerate(pooled) if actor is None]
        started = iter(_start_actors([self._places[rank] for rank in cold], self._runner_factory,
                                     [infos[rank] for rank in cold], holds_cpus=True))
        self.actors = [actor if actor is not None else next(started) for actor in pooled]
        from ray import cloudpickle

        with user_code_by_value():   # the runner factory carries the user's model and creators
            factory_bytes = cloudpickle.dumps(self._runner_factory)
        taking = [actor.become_worker.remote(info, factory_bytes)
                  for actor, info, was_pooled in zip(self.actors, infos, pooled) if was_pooled is not None]
        self._wait(taking, "start", timeout_s)

    @property
    def num_workers(self) -> int:
        """Number of workers (actors) in the group."""
        return len(self.actors)

    def node_temp_dir(self, rank: int) -> Optional[str]:
        """The temp dir of the Ray node worker ``rank`` runs on (its node's watchdog deletes it
        when the node ends), or None where the context does not know it."""
        dirs = {node["node_name"]: node["temp_dir"] for node in self._ray_context.nodes}
        return dirs.get(self.node_names[rank])

    def is_alive_in_current_ray(self) -> bool:
        """False once the group ended, or the Ray cluster it started in was stopped or replaced."""
        return bool(self.actors) and self._in_current_ray()

    def _in_current_ray(self) -> bool:
        """Whether the group's nodes are all still nodes of the active Ray on Spark."""
        ray_context = self._current_ray()
        return (ray_context is not None and not ray_context.lost_nodes()
                and set(self.node_names) <= {node["node_name"] for node in ray_context.nodes})

    def _current_ray(self) -> Optional["RayContext"]:
        """The active Ray on Spark, if it is the cluster this group started in."""
        return ray_context_at(self.ray_address)

    def call(self, call: Callable[[Any], T], *, timeout_s: Optional[float] = None,
             on_poll: Optional[Callable[[], None]] = None) -> list[T]:
        """``call(runner)`` on every worker; results in rank order."""
        return self.call_each([call] * len(self.actors), timeout_s=timeout_s, on_poll=on_poll)

    def call_each(self, calls: Sequence[Callable[[Any], T]], *, timeout_s: Optional[float] = None,
                  on_poll: Optional[Callable[[], None]] = None) -> list[T]:
        """``calls[rank](runner)`` on every worker; results in rank order."""
        actors = self._live_actors()
        return self._run(lambda: [actor.call.remote(call) for actor, call in zip(actors, calls)],
                         runner_call_name(calls[0]), timeout_s, on_poll)

    def call_one(self, rank: int, call: Callable[[Any], T], *, timeout_s: Optional[float] = None) -> T:
        """``call(runner)`` on the worker of ``rank`` only."""
        actor = self._live_actors()[rank]
        return self._run(lambda: [actor.call.remote(call)], runner_call_name(call), timeout_s)[0]

    def _run(self, submit: Callable[[], list[Any]], what: str, timeout_s: Optional[float],
             on_poll: Optional[Callable[[], None]] = None) -> list[Any]:
        """The values of the calls ``submit()`` makes (with the user's code pickled by value), in
        rank order. Whatever ends the wait ends every worker too, unless every worker ended the
        call with a clear error of its own: a Ctrl-C inside ``.remote()`` can leave a call queued
        without its reference (one worker then waited for its peer's gradients, and the next fit
        for that worker); peers of a failed worker may be blocked for good."""
        self._clean_failure = None
        try:
            with user_code_by_value():
                futures = submit()
            return self._wait(futures, what, timeout_s, on_poll)
        except BaseException as error:
            if error is not self._clean_failure:
                self.kill()
            raise

    def _live_actors(self) -> list[Any]:
        if not self.actors:
            raise ZooLiteError("this worker group was shut down or has failed; the Estimator starts a new one on next use")
        return self.actors

    def progress(self) -> dict[str, Any]:
        """Rank 0's progress snapshot, or ``{}`` when it does not answer quickly."""
        import ray

        if self.progress_board is None:
            return {}
        try:
            return ray.get(self.progress_board.read(), timeout=5)
        except Exception:  # noqa: BLE001 - progress is best effort; failures surface from the call itself
            return {}

    def _wait(self, futures: list[Any], what: str, timeout_s: Optional[float],
              on_poll: Optional[Callable[[], None]] = None) -> list[Any]:
        """Every future's value, in rank order; a bounded wait says what it waits for once it is long
        (a training call, unbounded, shows its progress instead)."""
        if timeout_s is None:
            return self._wait_quietly(futures, what, timeout_s, on_poll)
        with announced_wait(f"{len(futures)} worker(s) to finish {what!r}", timeout_s):
            return self._wait_quietly(futures, what, timeout_s, on_poll)

    def _wait_quietly(self, futures: list[Any], what: str, timeout_s: Optional[float],
                      on_poll: Optional[Callable[[], None]]) -> list[Any]:
        import ray

        rank_of = {future: rank for rank, future in enumerate(futures)}
        results: dict[int, Any] = {}
        pending = list(futures)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=_POLL_INTERVAL_S)
            failures: list[WorkerError] = []
            for future in ready:
                try:
                    results[rank_of[future]] = _result_of(future, rank_of[future], what)
                except WorkerError as failure:
                    failures.append(failure)
                except ZooLiteError as error:   # the runner's own clear error, e.g. a bad data creator
                    if not failures and _every_call_ends_cleanly([other for other in ready if other is not future] + pending):
                        self._clean_failure = error
                    raise
            if failures:
                raise _root_failure(failures, pending, rank_of, what)
            self._raise_if_a_node_was_lost(what)
            self._watch_heartbeats(what)
            if on_poll is not None:
                on_poll()
            if pending and deadline is not None and time.monotonic() > deadline:
                late = sorted(rank_of[future] for future in pending)
                raise WorkerTimeoutError(f"workers {late} did not finish {what!r} within {timeout_s:.0f} s")
        return [results[rank] for rank in range(len(futures))]

    def _raise_if_a_node_was_lost(self, what: str) -> None:
        """A lost node ends the call at once: Ray itself may never report it (its calls block
        while the head node is gone), but the node's lease closes within a second, or falls
        silent for ``heartbeat_timeout_s`` when its host is cut off."""
        lost = self._ray_context.lost_node_reasons()
        if lost:
            ranks = [rank for rank, name in enumerate(self.node_names) if name in lost]
            causes = "; ".join(f"{name}: {reason}" for name, reason in sorted(lost.items()))
            raise WorkerError(ranks[0] if ranks else 0,
                              f"Ray node(s) lost during {what} ({causes}); workers {ranks} ran there; "
                              "their nodes are replaced on next use", lost=True)

    def _watch_heartbeats(self, what: str) -> None:
        """Every few seconds: the nodes and the workers that fell quiet (see the two calls)."""
        if self.progress_board is None or time.monotonic() < self._next_silence_check:
            return
        self._next_silence_check = time.monotonic() + _SILENCE_CHECK_INTERVAL_S
        group_nodes = set(self.node_names)
        self._standby_beside_quiet_hosts(set(self._ray_context.quiet_nodes(_QUIET_HOST_S)) & group_nodes)
        self._raise_if_a_worker_is_silent(what, set(self._ray_context.quiet_nodes(_HOST_MISSED_A_BEAT_S)) & group_nodes)

    def _standby_beside_quiet_hosts(self, quiet_hosts: set[str]) -> None:
        """While a node of the group is quiet (maybe lost in ``heartbeat_timeout_s``), keep idle
        workers started on the other nodes: should it be lost, the next group takes them over
        instead of starting cold (most of a recovery's time). Ended once every node is heard again;
        a group with a standby of its own (``standby_workers``) needs none."""
        if quiet_hosts and self.standby is None and self.actors:
            places = [place for place in self._places if place[0].name not in quiet_hosts]
            if places:
                _logger.info("Ray node(s) %s quiet for %.0f s; starting idle workers on the other nodes, for a quick "
                             "recovery should they be lost", sorted(quiet_hosts), _QUIET_HOST_S)
                self.standby = Standby.start(self.ray_address, places, self._runner_factory, holds_cpus=False)
                self._standby_for_quiet_hosts = True
        elif not quiet_hosts and self._standby_for_quiet_hosts:
            _logger.info("every Ray node of the group is heard again; the idle workers started meanwhile are ended")
            self.end_standby()

    def _raise_if_a_worker_is_silent(self, what: str, quiet_hosts: set[str]) -> None:
        """A worker that stopped sending heartbeats ends the call (a look at the board): Ray sees
        nothing wrong with a stopped process, and its peers would wait for it in a collective for
        ``collective_timeout_s``. A worker on one of ``quiet_hosts`` (its host missed a node
        heartbeat too) is the node heartbeat's to report (:meth:`_raise_if_a_node_was_lost`), as a
        lost node, or else its own once the host is heard again."""
        import ray

        try:
            silent = ray.get(self.progress_board.silent(self.heartbeat_timeout_s), timeout=5)
        except Exception:  # noqa: BLE001 - a board that does not answer is a lost node, which the leases report
            return
        silent = [worker for worker in silent if self.node_names[worker.rank] not in quiet_hosts]
        if silent:
            _end_silent_processes([(self._node_ids[worker.rank], worker.pid) for worker in silent])
            first = silent[0]
            raise WorkerError(first.rank,
                              f"its process (pid {first.pid} on {first.host}) sent no heartbeat for "
                              f"{first.silent_s:.0f} s during {what} (WorkerConfig(heartbeat_timeout_s="
                              f"{self.heartbeat_timeout_s:g})): its process is stopped, or hung holding Python's GIL; "
                              f"workers {[worker.rank for worker in silent]} are treated as lost and a fresh worker "
                              "group is started on next use", lost=True)

    def kill(self) -> None:
        """End every running actor at once (idempotent); a standby is left for the next group
        (:meth:`take_standby`) or :meth:`end_standby`."""
        actors, self.actors = self.actors, []
        self._to_hand_back.clear()
        board, self.progress_board = self.progress_board, None
        # the survivors of a lost node hold CPUs in the cluster, which lives on
        end_actors(actors, self.ray_address)
        if board is not None and cluster_answers(self.ray_address):
            board.drop()
        reservation, self._reservation = self._reservation, None
        if reservation is not None:
            reservation.release()

    def refill_pool(self) -> None:
        """Refill the warm pool for the next group, once (the Estimator calls it after each epoch
        and evaluation): not while this group starts, whose first call would share the CPUs with
        the new processes' start (about 0.7 s of CPU each for Ray's own start, measured). Not
        at all where this group's workers go back to the pool when it ends: a new group needs
        every CPU, so this one ends (and hands them back) before the next starts."""
        pool, self._pool_to_refill = self._pool_to_refill, None
        if pool is not None and self.actors and not self._to_hand_back:
            pool.fill(runner_path(self._runner_factory), self._node_ids)

    def start_standby(self) -> None:
        """Start a standby beside the group, if it keeps one and has none (it holds the CPUs the
        workers do not hold). A cold group starts its own with its workers; a group that took
        over a standby is given a new one later (the Estimator: after the next epoch), so that
        starting it does not slow the recovery down."""
        if self._keeps_standby and self.standby is None and self.actors:
            self.standby = Standby.start(self.ray_address, self._places, self._runner_factory,
                                         holds_cpus=not self.holds_cpus)

    def take_standby(self) -> Optional[Standby]:
        """The group's standby, for the next group to take over; the group keeps none."""
        standby, self.standby = self.standby, None
        self._standby_for_quiet_hosts = False
        return standby

    def end_standby(self) -> None:
        """Kill the group's standby, if it has one."""
        standby = self.take_standby()
        if standby is not None:
            standby.end()

    def shutdown(self) -> None:
        """Hand the workers back to the warm pool where they may serve again (they close their
        runners there), else let each runner release its resources (bounded) and end the actors;
        then end the standby."""
        import ray

        if self.actors and ray.is_initialized() and self._in_current_ray():
            pool = warm_pool_of(self.ray_address) if self._to_hand_back else None
            if pool is not None:
                hand_back(self.ray_address, runner_path(self._runner_factory), self._to_hand_back)
                pool.take_in_handed_back()   # they close their runners now, not when the next group starts
                self.actors = []
            else:
                try:
                    self._wait([actor.close.remote() for actor in self.actors], "close", _SHUTDOWN_TIMEOUT_S)
                except ZooLiteError:
                    pass  # the actors are killed below either way
        self.kill()
        self.end_standby()


@dataclass(frozen=True)
class Workers:
    """How many training workers an Estimator asks for: ``per_node`` on every Ray node (Orca's
    ``workers_per_node``), or ``total`` spread over the nodes (``num_workers``)."""

    per_node: int = 1
    total: Optional[int] = None
    #: where they run: "ray" (actors of Ray on Spark) or "spark" (the tasks of a Spark barrier stage)
    backend: str = "ray"

    @staticmethod
    def of(workers_per_node: Optional[int], num_workers: Optional[int], backend: str = "ray") -> "Workers":
        """The checked choice of ``from_torch``/``from_keras``; giving both is an error.

        Examples
        --------
        >>> Workers.of(None, None), Workers.of(2, None), Workers.of(None, 3, "spark")
        (Workers(per_node=1, total=None, backend='ray'), Workers(per_node=2, total=None, backend='ray'), Workers(per_node=1, total=3, backend='spark'))
        """
        if workers_per_node is not None and num_workers is not None:
            raise InvalidArgumentError(
                f"workers_per_node={workers_per_node!r} and num_workers={num_workers!r} were both given; give num_workers "
                "(the total, spread over the Ray nodes) or workers_per_node (Orca's: on every node), not both"
            )
        if num_workers is not None:
            return Workers(total=check_positive_int(num_workers, "num_workers"), backend=backend)
        return Workers(per_node=check_positive_int(1 if workers_per_node is None else workers_per_node, "workers_per_node"),
                       backend=backend)


def planned_worker_count(workers: Workers) -> int:
    """How many workers a new group of ``workers`` runs on the active Ray cluster (started on
    demand), without starting one: ``total``, or ``per_node`` on each node with CPUs.

    Examples
    --------
    >>> planned_worker_count(Workers(total=3))
    3
    """
    if workers.total is not None:
        return workers.total
    from zoo_lite.context import ray_context_started_on_demand

    return workers.per_node * len(_cpu_nodes(ray_context_started_on_demand()))


def workers_on_nodes(nodes: int, workers_per_node: int = 1, num_workers: Optional[int] = None) -> list[int]:
    """How many workers each of ``nodes`` Ray nodes runs: ``workers_per_node`` on every node, or
    ``num_workers`` in all, spread as evenly as the nodes allow (the first nodes get one more).

    Examples
    --------
    >>> workers_on_nodes(2, workers_per_node=2), workers_on_nodes(2, num_workers=3), workers_on_nodes(3, num_workers=2)
    ([2, 2], [2, 1], [1, 1, 0])
    """
    if num_workers is None:
        return [workers_per_node] * nodes
    base, extra = divmod(num_workers, max(nodes, 1))
    return [base + (1 if index < extra else 0) for index in range(nodes)]


def start_worker_group(runner_factory: Callable[[WorkerInfo], Any], workers_per_node: int = 1,
                       start_timeout_s: float = 180.0, num_workers: Optional[int] = None, **options: Any) -> "WorkerGroup":
    """A started :class:`WorkerGroup` (``options`` are its keyword-only ones), started once more
    if its rendezvous failed on a port taken in the meantime (see :func:`started_again_if_port_taken`).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> _ = init_orca_context(cores=2)
    >>> class Echo:
    ...     def __init__(self, info): self.rank = info.rank
    ...     def connect(self, addresses): pass
    ...     def close(self): pass
    >>> group = start_worker_group(Echo)
    >>> group.call(lambda runner: runner.rank)
    [0]
    >>> group.shutdown()
    """
    return started_again_if_port_taken(
        lambda: WorkerGroup(runner_factory, workers_per_node, start_timeout_s, num_workers, **options))


def started_again_if_port_taken(start: Callable[[], T]) -> T:
    """``start()`` (a worker group's start), called once more if it failed because a rendezvous
    port was taken: another process can bind a worker's port in the moment between the worker
    letting it go and its framework binding it (:mod:`zoo_lite.learn.base.ports`).

    Examples
    --------
    >>> calls = []
    >>> def start():
    ...     calls.append(1)
    ...     if len(calls) == 1:
    ...         raise WorkerError(0, "connect failed: UnknownError: Could not start gRPC server")
    ...     return "started"
    >>> started_again_if_port_taken(start), len(calls)
    ('started', 2)
    """
    try:
        return start()
    except WorkerError as error:
        if not is_port_taken(f"{error.message}\n{error.remote_traceback or ''}"):
            raise
        _logger.warning("a worker's rendezvous port was taken in the meantime (%s); starting the workers again",
                        error.message.splitlines()[0])
    return start()


def _connect(addresses: list[tuple[str, int]], runner: Any) -> bool:
    """Connect the runner; whether its process may serve a later group once it closed (a
    runner's ``process_serves_again``, which a framework may set in ``connect``)."""
    runner.connect(addresses)
    return bool(getattr(runner, "process_serves_again", False))


def runner_call_name(call: Callable[..., Any]) -> str:
    """What a runner call is named in errors and logs: its function's name, or for a lambda the
    runner method it calls.

    Examples
    --------
    >>> runner_call_name(lambda runner: runner.train_epoch(None)), runner_call_name(functools.partial(_connect, []))
    ('train_epoch', 'connect')
    """
    function = call.func if isinstance(call, functools.partial) else call
    called = [name for name in getattr(getattr(function, "__code__", None), "co_names", ()) if not name.startswith("_")]
    name = getattr(function, "__name__", "call")
    return called[0] if name == "<lambda>" and called else name.lstrip("_")


def _root_failure(failures: list[WorkerError], pending: list[Any], rank_of: dict[Any, int], what: str) -> WorkerError:
    """The failure to report: a lost worker rather than the errors its peers then hit in a
    collective (gloo's "connection reset by peer"), which may arrive first; peers still running
    get a moment to show whether one of them died."""
    import ray

    deadline = time.monotonic() + _PEER_DEATH_GRACE_S
    while not any(failure.lost for failure in failures) and pending and time.monotonic() < deadline:
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.1)
        for future in ready:
            try:
                _result_of(future, rank_of[future], what)
            except WorkerError as failure:
                failures.append(failure)
    lost = [failure for failure in failures if failure.lost]
    return lost[0] if lost else failures[0]


def _every_call_ends_cleanly(futures: list[Any]) -> bool:
    """Whether each of ``futures`` (the calls of a failed worker's peers) ends within
    ``_CLEAN_FAILURE_WAIT_S``, with a value or with a clear error of zoo_lite's own (the one a
    data check raises on every worker): then no worker is left inside the call, in a collective,
    and the group can take the next call instead of being replaced."""
    import ray

    deadline = time.monotonic() + _CLEAN_FAILURE_WAIT_S
    pending = list(futures)
    while pending and time.monotonic() < deadline:
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.1)
        for future in ready:
            try:
                ray.get(future)
            except ray.exceptions.RayTaskError as error:
                if not isinstance(error.cause, ZooLiteError):
                    return False
            except Exception:  # noqa: BLE001 - a dead worker, or anything else: the group is not sound
                return False
    return not pending


def _result_of(future: Any, rank: int, what: str) -> Any:
    """The value of a finished call, or the worker's failure as a ZooLiteError."""
    import ray

    try:
        return ray.get(future)
    except ray.exceptions.RayTaskError as error:
        cause = error.cause
        if isinstance(cause, ZooLiteError):
            raise cause from error   # the runner's own clear error, e.g. a bad data creator
        kind = type(cause).__name__ if cause is not None else "error"
        # the dual-class errors Ray builds for plain exceptions carry the traceback only in their text
        remote_traceback = _ANSI_CODES.sub("", getattr(error, "traceback_str", None) or str(error))
        raise WorkerError(rank, f"{what} failed: {kind}: {cause}", remote_traceback) from error
    except ray.exceptions.RayActorError as error:
        raise WorkerError(rank, f"the worker process died during {what} ({error.__class__.__name__}); "
                                "a fresh worker group is started on next use", lost=True) from error
