"""Warm workers on Ray: idle actors on each node with a framework imported, for the next group.

Most of a new Estimator's start is its workers' imports (TensorFlow about 4.5 s per process,
PyTorch about 2 s, on 2 cores). So, per Ray cluster, framework (runner class) and node, zoo_lite
keeps as many idle :class:`~zoo_lite.learn.base.worker_actor.PooledWorkerActor` as that
framework's last group ran on the node (at most :data:`MAX_WARM_PER_NODE`). A new group takes them
instead of starting actors (:meth:`WarmPool.take`), and the pool is refilled once the group has
trained an epoch or evaluated (:meth:`WarmPool.fill`, from ``WorkerGroup.refill_pool``), in the
background: the new processes import at idle priority (:mod:`zoo_lite.learn.base.warm_up`). A
group whose workers go back to the pool when it ends (:func:`hand_back`) refills nothing.

- A process goes back to the pool only where its framework allows it (each runner's
  ``process_serves_again``, known once it connected): a torch worker taken from the pool comes
  back once its group ends (the Estimator's ``shutdown()``, or the Estimator dropped), its runner
  closed (process group, shared memory, heartbeat) and dropped; each runner sets its seed and
  threads again when built. A Keras worker comes back when its group shared one host (no
  TensorFlow collective); one that set up TensorFlow's collective never does, and a Keras group
  that needs that collective takes only processes that never served (:meth:`WarmPool.take`'s
  ``used_too``). A cold-started worker never comes back: it holds its CPUs in Ray for its life.
- Where a node has too little memory (:data:`~zoo_lite.learn.base.warm_up.MIN_AVAILABLE_MB`),
  its pooled actors decline and are ended; the node gets none for :data:`TIGHT_RETRY_S`.
- An idle actor waits at its node's gate (:mod:`zoo_lite.learn.base.node_boards`) once started
  or handed back, which costs a quarter of the CPU of waiting in Ray's own loop; :meth:`WarmPool.take`
  opens the gates of the actors it takes, and their calls follow.
- Pooled actors hold no CPUs in Ray. A group that takes them reserves their share of the node's
  CPUs in a placement group (:class:`CpuReservation`), so Ray's books show the CPUs in use as
  they do for a group that started its own actors.
- They are actors of the driver's job, so they end with Ray (``stop_orca_context()``).
  ``OrcaContext.warm_workers = False`` turns the pool off: the next group starts its own actors
  and ends the idle ones.

Why not Ray's own mechanisms (measured with Ray 2.60, see ``docs/cluster.md``): a
``worker_process_setup_hook`` is set per job, when the driver connects, so every worker process
of the job would import TensorFlow (the data hand-off's owner actors, the progress boards, the
kill tasks), and it is too early to know the framework; Ray's prestarted and idle workers hold
processes with only Ray imported, which an actor takes for its life, and Ray ends idle workers
beyond the node's CPUs after a second. Ray does start and end every pooled process itself.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence, TypeVar

from zoo_lite.errors import WorkerTimeoutError
from zoo_lite.learn.base.node_boards import boards_on
from zoo_lite.learn.base.worker_actor import PooledWorkerActor, cluster_answers, end_actors

__all__ = ["MAX_WARM_PER_NODE", "TIGHT_RETRY_S", "RESERVATION_NAME", "HAND_BACK_TIMEOUT_S", "WarmPool", "CpuReservation",
           "warm_pool_of", "hand_back", "pick_by_node", "reserved_cpus_on"]

T = TypeVar("T")
_logger = logging.getLogger("zoo_lite.learn")

_NAMESPACE = "zoo_lite"
#: the most idle actors kept per framework and node (each holds its framework's memory)
MAX_WARM_PER_NODE = 4
#: a node whose pooled actors declined for lack of memory gets no new ones for this long
TIGHT_RETRY_S = 60.0
#: the name of the placement groups that hold the CPUs of pooled workers in use
RESERVATION_NAME = "zoo_lite-worker-cpus"
#: how long a group's start waits for handed-back workers to close their runners (a few ms each)
HAND_BACK_TIMEOUT_S = 10.0

#: ``(ray address, runner path, node id, actor)`` of workers handed back by ended groups, not yet
#: taken in by their pool: appended without a lock, since a group dropped by the garbage
#: collector hands its workers back from wherever the collection ran
_handed_back: deque = deque()


def hand_back(ray_address: str, path: str, actors_on_nodes: Sequence[tuple[str, Any]]) -> None:
    """Give the pooled actors of an ended group (``(node id, actor)`` pairs) back to the warm pool
    of the cluster at ``ray_address``, for the next group of ``path``. Cheap and lock-free (a
    garbage-collected group calls it from a finalizer); the pool asks each actor to close its
    runner when it next looks at its idle actors."""
    for node, actor in actors_on_nodes:
        _handed_back.append((ray_address, path, node, actor))


def pick_by_node(available: Sequence[tuple[str, T]], rank_nodes: Sequence[str]) -> tuple[list[Optional[T]], list[tuple[str, T]]]:
    """For each rank, one of ``available`` (``(node, item)`` pairs) on the rank's node, first come
    first served, or None where its node has none left; and what is left.

    Examples
    --------
    >>> pick_by_node([("a", 1), ("b", 2), ("a", 3)], ["a", "a", "a", "b"])
    ([1, 3, None, 2], [])
    >>> pick_by_node([("a", 1), ("b", 2)], ["b"])
    ([2], [('a', 1)])
    """
    left = list(available)
    picked: list[Optional[T]] = []
    for node in rank_nodes:
        index = next((i for i, (item_node, _) in enumerate(left) if item_node == node), None)
        picked.append(None if index is None else left.pop(index)[1])
    return picked, left


@dataclass
class _Pooled:
    """An idle actor of the pool, on ``node_id``; ``declined`` will hold why it did not warm up, or None."""

    actor: Any
    node_id: str
    declined: Any
    #: handed back by an ended group (``declined`` is then its answer to ``hand_back()``)
    used: bool = False


def _actor_alive(actor: Any) -> bool:
    from ray._private.state import actors

    try:
        return actors(actor_id=actor._actor_id.hex()).get("State") != "DEAD"
    except Exception:  # noqa: BLE001 - an actor Ray no longer knows is gone
        return False


class WarmPool:
    """The idle actors of one Ray cluster, per framework (runner class path) and node (see the
    module docstring).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.context import ray_context_started_on_demand
    >>> _ = init_orca_context(cores=2)
    >>> import ray
    >>> pool = WarmPool(ray_context_started_on_demand().address)
    >>> node = ray.get_runtime_context().get_node_id()   # local mode: the one node
    >>> pool.fill("zoo_lite.learn.base.framework:WorkerConfig", [node])
    >>> pool.idle_count("zoo_lite.learn.base.framework:WorkerConfig")
    1
    >>> [actor is not None for actor in pool.take("zoo_lite.learn.base.framework:WorkerConfig", [node, node])]
    [True, False]
    >>> pool.end()
    """

    def __init__(self, ray_address: str, min_available_mb: Optional[float] = None) -> None:
        self.ray_address = ray_address
        self._min_available_mb = min_available_mb
        self._idle: dict[str, list[_Pooled]] = {}
        self._tight_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def idle_count(self, path: str) -> int:
        """The idle actors of ``path`` the pool holds (ready or still importing)."""
        with self._lock:
            return len(self._usable(path))

    def wait_until_warm(self, path: str, timeout_s: float) -> bool:
        """Wait until every idle actor of ``path`` finished its imports (for benchmarks and tests:
        a group takes them at any stage); False if some had not after ``timeout_s``."""
        with self.gates_opened(path) as actors:
            return self._all_warm(actors, time.monotonic() + timeout_s)

    @contextmanager
    def gates_opened(self, path: str) -> Iterator[list[Any]]:
        """The idle actors of ``path``, their gates opened so that calls to them run (a call waits
        behind ``park()`` otherwise), and parked again on exit; the pool is held meanwhile (for
        benchmarks and tests that ask idle actors something)."""
        with self._lock:
            entries = list(self._usable(path))
            for entry in entries:
                self._open_gate(entry)
            try:
                yield [entry.actor for entry in entries]
            finally:
                for entry in entries:
                    self._park(entry)

    @staticmethod
    def _all_warm(actors: list[Any], deadline: float) -> bool:
        """Whether each of ``actors`` finished its imports by ``deadline`` (asked every 0.2 s)."""
        import ray

        while actors:
            checks = [actor.warm.remote() for actor in actors]
            done, _ = ray.wait(checks, num_returns=len(checks), timeout=max(0.0, deadline - time.monotonic()))
            if len(done) == len(checks) and all(ray.get(done)):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def take(self, path: str, rank_nodes: Sequence[str], used_too: bool = True) -> list[Optional[Any]]:
        """For each rank, an idle actor of ``path`` on its node ``rank_nodes[rank]`` (ready, or
        still importing: :meth:`PooledWorkerActor.take_place` waits for it), or None where the
        pool has none left there; only actors that never served a group unless ``used_too``
        (see :func:`~zoo_lite.learn.base.warm_up.used_process_serves`). Taken actors leave the pool."""
        with self._lock:
            pooled = self._usable(path)
            kept_back = [entry for entry in pooled if entry.used and not used_too]
            candidates = [entry for entry in pooled if not (entry.used and not used_too)]
            picked, left = pick_by_node([(entry.node_id, entry) for entry in candidates], rank_nodes)
            self._idle[path] = [entry for _, entry in left] + kept_back
            for entry in picked:
                if entry is not None:
                    self._open_gate(entry)
        return [entry.actor if entry is not None else None for entry in picked]

    def fill(self, path: str, rank_nodes: Sequence[str]) -> None:
        """Start idle actors of ``path`` so that each node of ``rank_nodes`` has as many as it
        appears there (at most :data:`MAX_WARM_PER_NODE`), without waiting for them; a node
        with more has the extra ones ended."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        wanted = {node: min(count, MAX_WARM_PER_NODE) for node, count in Counter(rank_nodes).items()}
        with self._lock:
            kept, extra = [], []
            for entry in self._usable(path):
                have = sum(1 for other in kept if other.node_id == entry.node_id)
                (kept if have < wanted.get(entry.node_id, MAX_WARM_PER_NODE) else extra).append(entry)
            actor_class = ray.remote(PooledWorkerActor)
            now = time.monotonic()
            for node, count in wanted.items():
                if now < self._tight_until.get(node, 0.0):
                    continue
                for _ in range(count - sum(1 for entry in kept if entry.node_id == node)):
                    actor = actor_class.options(num_cpus=0, namespace=_NAMESPACE, scheduling_strategy=NodeAffinitySchedulingStrategy(
                        node, soft=False)).remote(path, self._min_available_mb)
                    kept.append(_Pooled(actor, node, actor.declined.remote()))
                    self._park(kept[-1])
            self._idle[path] = kept
        end_actors([entry.actor for entry in extra], self.ray_address)

    def _usable(self, path: str) -> list[_Pooled]:
        """The idle actors of ``path`` that are alive and did not decline; the others are ended
        and dropped (a declined one's node is left without for :data:`TIGHT_RETRY_S`). Call with
        the lock held."""
        import ray

        self._take_in_handed_back()
        pooled = self._idle.get(path, [])
        if not pooled:
            return []
        used = [entry.declined for entry in pooled if entry.used]
        if used:   # their runners' close() runs before the next call they take: wait for its answer
            ray.wait(used, num_returns=len(used), timeout=HAND_BACK_TIMEOUT_S)
        answered, _ = ray.wait([entry.declined for entry in pooled], num_returns=len(pooled), timeout=0)
        answered_ids = {ref.hex() for ref in answered}
        usable, ended = [], []
        for entry in pooled:
            reason = _answer(entry.declined) if entry.declined.hex() in answered_ids else None
            if reason is not None and entry.used:
                _logger.info("a worker handed back on Ray node %s is ended: %s", entry.node_id[:12], reason)
                ended.append(entry.actor)
            elif reason is not None:
                _logger.info("no warm workers on Ray node %s for %.0f s: %s", entry.node_id[:12], TIGHT_RETRY_S, reason)
                self._tight_until[entry.node_id] = time.monotonic() + TIGHT_RETRY_S
                ended.append(entry.actor)
            elif _actor_alive(entry.actor):
                usable.append(entry)
        end_actors(ended, self.ray_address)
        self._idle[path] = usable
        return usable

    def take_in_handed_back(self) -> None:
        """Take in the workers handed back to this pool's cluster now (each closes its runner
        while the caller goes on), rather than when the next group starts."""
        with self._lock:
            self._take_in_handed_back()

    def _take_in_handed_back(self) -> None:
        """Move the workers handed back to this pool's cluster in front of its idle actors (they
        are warm), each asked to close its runner and park; a node's actors beyond
        :data:`MAX_WARM_PER_NODE` are ended. Call with the lock held."""
        ended = []
        for path, node, actor in _drain_handed_back(self.ray_address):
            idle = self._idle.setdefault(path, [])
            idle.insert(0, _Pooled(actor, node, actor.hand_back.remote(), used=True))
            self._park(idle[0])
            on_node = [entry for entry in idle if entry.node_id == node]
            for extra in on_node[MAX_WARM_PER_NODE:]:
                idle.remove(extra)
                ended.append(extra.actor)
        end_actors(ended, self.ray_address)

    def _park(self, entry: _Pooled) -> None:
        """Have the idle actor of ``entry`` wait at its node's gate once its queued calls are done
        (see :mod:`zoo_lite.learn.base.node_boards`: a quarter of the CPU of waiting in Ray's loop)."""
        entry.actor.park.remote(boards_on(self.ray_address, entry.node_id), _gate_key(entry.actor))

    def _open_gate(self, entry: _Pooled) -> None:
        """Let the idle actor of ``entry`` leave its gate, to take the calls queued behind it."""
        boards_on(self.ray_address, entry.node_id).open_gate.remote(_gate_key(entry.actor))

    def end(self) -> None:
        """End every idle actor of the pool, and the workers handed back to it (idempotent)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        handed_back = [actor for _, _, actor in _drain_handed_back(self.ray_address)]
        end_actors([entry.actor for entries in idle.values() for entry in entries] + handed_back, self.ray_address)


def _drain_handed_back(ray_address: str) -> list[tuple[str, str, Any]]:
    """``(path, node id, actor)`` of the workers handed back to the cluster at ``ray_address``,
    taken off the queue; those of other clusters are dropped (a stopped cluster took its actors
    along)."""
    drained = []
    while True:
        try:
            address, path, node, actor = _handed_back.popleft()
        except IndexError:
            return drained
        if address == ray_address:
            drained.append((path, node, actor))


def _gate_key(actor: Any) -> str:
    """The key of ``actor``'s gate at its node's board: its Ray actor id."""
    return actor._actor_id.hex()


def _answer(declined: Any) -> Optional[str]:
    """What a pooled actor answered to ``declined()``; a dead actor's answer is its death."""
    import ray

    try:
        return ray.get(declined, timeout=1)
    except Exception as error:  # noqa: BLE001 - a dead actor is dropped by the liveness check
        return None if isinstance(error, ray.exceptions.RayActorError) else f"{type(error).__name__}: {error}"


_pools: dict[str, WarmPool] = {}
_pools_lock = threading.Lock()


def warm_pool_of(ray_address: str) -> Optional[WarmPool]:
    """The warm pool of the Ray cluster at ``ray_address``, or None while
    ``OrcaContext.warm_workers`` is off (the pools' idle actors are then ended). A pool of an
    earlier cluster is forgotten: its actors ended with it."""
    from zoo_lite.context import OrcaContext

    with _pools_lock:
        if not OrcaContext.warm_workers:
            for pool in list(_pools.values()):
                pool.end()
            _pools.clear()
            end_actors([actor for _, _, actor in _drain_handed_back(ray_address)], ray_address)
            return None
        for address in [address for address in _pools if address != ray_address]:
            del _pools[address]
        pool = _pools.get(ray_address)
        if pool is None:
            pool = _pools[ray_address] = WarmPool(ray_address)
        return pool


class CpuReservation:
    """The CPUs of pooled workers a group took, held in Ray by a placement group of one bundle per
    worker, each on its worker's node.

    Parameters
    ----------
    shares : sequence of (node id, CPUs)
        Each taken worker's node and its share of that node's CPUs.
    timeout_s : float
        How long to wait for Ray to place the bundles (the CPUs must be free).
    ray_address : str
        The cluster's address: the reservation is given back only while that cluster answers
        (a stopped or headless one took it along).

    Examples
    --------
    >>> import ray
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.context import ray_context_started_on_demand
    >>> _ = init_orca_context(cores=2)
    >>> _ = ray_context_started_on_demand()
    >>> node = ray.get_runtime_context().get_node_id()
    >>> reservation = CpuReservation([(node, 1.0)], timeout_s=30, ray_address=ray_context_started_on_demand().address)
    >>> reserved_cpus_on({node})
    1.0
    >>> reservation.release()
    >>> reserved_cpus_on({node})
    0.0
    """

    def __init__(self, shares: Sequence[tuple[str, float]], timeout_s: float, ray_address: str) -> None:
        import ray
        from ray.util.placement_group import NODE_ID_LABEL_KEY, placement_group

        self._group = placement_group([{"CPU": cpus} for _, cpus in shares], strategy="PACK", name=RESERVATION_NAME,
                                      bundle_label_selector=[{NODE_ID_LABEL_KEY: node} for node, _ in shares])
        # released with the group, also when an Estimator is dropped without shutdown(), as
        # its actors are (Ray ends an actor whose handles are all gone)
        self._release = weakref.finalize(self, _remove_reservation, self._group, ray_address)
        ready, _ = ray.wait([self._group.ready()], timeout=timeout_s)
        if not ready:
            self.release()
            raise WorkerTimeoutError(
                f"Ray could not reserve the CPUs of {len(shares)} warm worker(s) ({sum(cpus for _, cpus in shares):g} CPUs) "
                f"within {timeout_s:.0f} s: something else holds them; call shutdown() on an Estimator you no longer use, "
                "or set OrcaContext.warm_workers = False")

    def release(self) -> None:
        """Give the CPUs back (idempotent)."""
        self._release()


def _remove_reservation(group: Any, ray_address: str) -> None:
    from ray.util.placement_group import remove_placement_group

    if cluster_answers(ray_address):
        try:
            remove_placement_group(group)
        except Exception:  # noqa: BLE001 - a cluster that stopped took the reservation along
            pass


def reserved_cpus_on(node_ids: set[str]) -> float:
    """The CPUs zoo_lite's reservations hold on ``node_ids`` (for the message of a group that
    finds them taken)."""
    from ray.util.placement_group import placement_group_table

    total = 0.0
    for group in placement_group_table().values():
        if group.get("name") == RESERVATION_NAME and group.get("state") == "CREATED":
            for index, node in group.get("bundles_to_node_id", {}).items():
                if node in node_ids:
                    total += float(group["bundles"][index].get("CPU", 0.0))
    return total
