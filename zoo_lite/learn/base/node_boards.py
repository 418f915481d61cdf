"""The board actor of a Ray node: the progress and heartbeats of the groups whose rank 0 runs
there, and the gates where the node's idle warm workers wait.

One small actor per node (:class:`NodeBoards`), started on first use and kept for the cluster's
life: a training worker runs its calls on its main thread, one at a time, so it cannot also
answer questions. Rank 0 publishes its progress here and every worker sends a heartbeat here,
for the driver to read while a call runs (:class:`GroupBoard`).

Its gates keep the warm pool cheap while idle: a Ray worker whose main thread waits for its next
call wakes every 10 ms to check for signals (about 1.4 % of a core per process, measured with Ray
2.60), while one blocked inside a call, here waiting for a reply of this actor's event loop, costs
about 0.25 %. So an idle pooled worker waits at its node's gate (:meth:`NodeBoards.parked`) until
the pool opens it for a group (:meth:`NodeBoards.open_gate`).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

__all__ = ["Silence", "NodeBoards", "GroupBoard", "boards_on", "start_board"]

_NAMESPACE = "zoo_lite"


@dataclass(frozen=True)
class Silence:
    """A worker whose heartbeats stopped: where it runs, and for how long it has been silent."""

    rank: int
    pid: int
    host: str
    silent_s: float


class _ProgressBoard:
    """One group's latest progress snapshot (rank 0's) and every worker's last heartbeat, timed by
    the clock of the process that holds it, so the hosts' clocks need not agree."""

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}
        self.beats: dict[int, tuple[float, int, str]] = {}

    def silent(self, timeout_s: float) -> list[Silence]:
        """The workers that sent a heartbeat once and none for ``timeout_s`` since (a worker that
        never sent one is still starting, which ``start_timeout_s`` bounds)."""
        now = time.monotonic()
        return [Silence(rank, pid, host, now - last) for rank, (last, pid, host) in sorted(self.beats.items())
                if now - last > timeout_s]


class NodeBoards:
    """Every group's :class:`_ProgressBoard` on one node, and the node's warm-worker gates (runs
    as a Ray actor with an event loop: its plain methods are short and run on the loop). One per
    node rather than one per group: each is a Ray worker process, about 0.7 s of CPU to start."""

    def __init__(self) -> None:
        self.boards: dict[str, _ProgressBoard] = {}
        self.gates: dict[str, asyncio.Event] = {}

    def _board(self, group: str) -> _ProgressBoard:
        return self.boards.setdefault(group, _ProgressBoard())

    def publish(self, group: str, progress: dict[str, Any]) -> None:
        self._board(group).latest = progress

    def read(self, group: str) -> dict[str, Any]:
        board = self.boards.get(group)
        return board.latest if board is not None else {}

    def beat(self, group: str, rank: int, pid: int, host: str) -> None:
        self._board(group).beats[rank] = (time.monotonic(), pid, host)

    def silent(self, group: str, timeout_s: float) -> list[Silence]:
        board = self.boards.get(group)
        return board.silent(timeout_s) if board is not None else []

    def drop(self, group: str) -> None:
        self.boards.pop(group, None)

    async def parked(self, key: str) -> None:
        """Return once the gate ``key`` is opened (at once if it already was), and close it again."""
        await self.gates.setdefault(key, asyncio.Event()).wait()
        self.gates.pop(key, None)

    def open_gate(self, key: str) -> None:
        """Let the worker parked at ``key`` go, or the next one to park there."""
        self.gates.setdefault(key, asyncio.Event()).set()

    def parked_keys(self) -> list[str]:
        """The keys of the closed gates: the workers parked here, or about to be."""
        return sorted(key for key, gate in self.gates.items() if not gate.is_set())


@dataclass(frozen=True)
class GroupBoard:
    """A group's board: its node's :class:`NodeBoards` actor and the group's key there. The
    calls that return something give Ray object refs."""

    boards: Any
    group: str

    def publish(self, progress: dict[str, Any]) -> None:
        self.boards.publish.remote(self.group, progress)

    def beat(self, rank: int, pid: int, host: str) -> None:
        self.boards.beat.remote(self.group, rank, pid, host)

    def read(self) -> Any:
        return self.boards.read.remote(self.group)

    def silent(self, timeout_s: float) -> Any:
        return self.boards.silent.remote(self.group, timeout_s)

    def drop(self) -> None:
        self.boards.drop.remote(self.group)


#: each Ray cluster's :class:`NodeBoards` actors, by node id (only the latest cluster's are kept)
_boards_by_node: dict[str, dict[str, Any]] = {}
_boards_lock = threading.Lock()


def boards_on(ray_address: str, node_id: str) -> Any:
    """The :class:`NodeBoards` actor of the node ``node_id`` in the cluster at ``ray_address``,
    started on first use. Pinned to that node: a zero-CPU actor placed freely could land on a
    node just lost that Ray has not marked dead yet, and every worker's first heartbeat would wait
    for Ray to place it again (about 10 s measured after a lost executor). Ray starts it again if
    its process dies (its boards start empty, and the workers parked at its gates go back to
    Ray's own idle loop).

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.context import ray_context_started_on_demand
    >>> _ = init_orca_context(cores=2)
    >>> import ray
    >>> address = ray_context_started_on_demand().address
    >>> boards = boards_on(address, ray.get_runtime_context().get_node_id())
    >>> boards.open_gate.remote("a worker")
    ... # doctest: +ELLIPSIS
    ObjectRef(...)
    >>> ray.get(boards.parked.remote("a worker"), timeout=60) is None   # opened before: at once
    True
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with _boards_lock:
        for address in [address for address in _boards_by_node if address != ray_address]:
            del _boards_by_node[address]   # an earlier cluster's: they ended with it
        on_nodes = _boards_by_node.setdefault(ray_address, {})
        if node_id not in on_nodes:
            on_nodes[node_id] = ray.remote(num_cpus=0, max_restarts=-1)(NodeBoards).options(
                namespace=_NAMESPACE, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote()
        return on_nodes[node_id]


def start_board(ray_address: str, node_id: str) -> GroupBoard:
    """A new group's progress and heartbeat board, on rank 0's node (see :func:`boards_on`)."""
    return GroupBoard(boards_on(ray_address, node_id), uuid.uuid4().hex)
