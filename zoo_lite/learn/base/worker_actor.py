"""The Ray actor that hosts one training worker's runner (:mod:`zoo_lite.learn.base.worker_group`).

:class:`WorkerActor` is started for a group, or as a standby with the group's runner factory and
no place yet. :class:`PooledWorkerActor` is started by the warm pool
(:mod:`zoo_lite.learn.base.warm_pool`) knowing only its framework: it imports it in the background
and gets the runner factory when a group takes it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar

from zoo_lite.learn.base.ports import free_port
from zoo_lite.learn.base.warm_up import BackgroundWarmUp, run_warm_up

if TYPE_CHECKING:
    from zoo_lite.learn.base.worker_group import WorkerInfo
    from zoo_lite.ray_on_spark import RayContext

T = TypeVar("T")

__all__ = ["WorkerActor", "PooledWorkerActor", "ray_context_at", "cluster_answers", "end_actors"]


class WorkerActor:
    """Hosts one runner; every call is forwarded to it (runs inside a Ray actor).

    One call at a time, on the actor's main thread: OpenMP work started from another thread runs
    about 20 % slower (measured with torch on 2 cores), so the actor is not threaded.
    """

    def __init__(self, runner_factory: Optional[Callable[["WorkerInfo"], Any]], info: Optional["WorkerInfo"]) -> None:
        self.runner_factory = runner_factory
        self.runner = None
        self._heartbeat = threading.Event()   # set: the heartbeat of the runner's group stops
        if info is not None:
            self.take_place(info)
        elif runner_factory is not None:   # a standby: unpickling the factory imported the framework; now the rest
            run_warm_up(runner_factory)

    def take_place(self, info: "WorkerInfo", runner_factory: Optional[Callable[["WorkerInfo"], Any]] = None) -> None:
        """Become the worker of ``info`` (a standby or a pooled actor does so when a group takes
        it over; a pooled one is given the group's ``runner_factory`` then)."""
        if runner_factory is not None:
            self.runner_factory = runner_factory
        assert self.runner_factory is not None, "a worker needs its group's runner factory"
        self.runner = self.runner_factory(info)
        self._heartbeat = info.start_heartbeat()

    def address(self) -> tuple[str, int]:
        """This worker's host address and its rendezvous port, as its runner's ``listen`` gives
        it (see :mod:`zoo_lite.learn.base.ports`); a runner without one gets a free port."""
        import ray

        host = ray.util.get_node_ip_address()
        listen = getattr(self.runner, "listen", None)
        return host, (listen(host) if listen is not None else free_port(host))

    def call(self, call: Callable[[Any], T]) -> T:
        return call(self.runner)

    def close(self) -> None:
        """Let the runner release what it holds (a process group, files)."""
        if self.runner is not None:
            self.runner.close()


class PooledWorkerActor(WorkerActor):
    """An idle worker of the warm pool: it imports the runner class at ``runner_path`` (its
    framework) in the background, at idle priority, unless memory is tight here; a group takes
    it with :meth:`become_worker`. It holds no CPUs in Ray: the group that takes it reserves them
    (see :mod:`zoo_lite.learn.base.warm_pool`)."""

    def __init__(self, runner_path: str, min_available_mb: Optional[float] = None) -> None:
        super().__init__(None, None)
        self._warm = BackgroundWarmUp(runner_path, min_available_mb)

    def declined(self) -> Optional[str]:
        """Why this process did not warm up (too little memory on its host), or None; answers as
        soon as the memory was checked."""
        return self._warm.verdict()

    def warm(self) -> bool:
        """Whether its imports are over (they run in the background while it is idle)."""
        return self._warm.done()

    def park(self, boards: Any, key: str) -> None:
        """Wait, idle, at the gate ``key`` of the node's board actor ``boards`` until the pool
        opens it for a group or a question; the calls sent meanwhile wait behind this one (see
        :mod:`zoo_lite.learn.base.node_boards`). It has no time limit, being the idle state
        itself: whoever opens the gate bounds its own wait for the calls that follow. Returns at
        once if the board's process was lost (Ray starts it again; this worker then idles in Ray's
        loop until parked again)."""
        import ray

        try:
            ray.get(boards.parked.remote(key))
        except ray.exceptions.RayActorError:
            pass

    def become_worker(self, info: "WorkerInfo", runner_factory_bytes: bytes) -> None:
        """Become the worker of ``info``, with the group's runner factory pickled (by Ray's
        cloudpickle): it is unpickled only once the imports are done, since the two would import
        the framework's modules at once from two threads (``KeyError: 'torch._dynamo'``, seen)."""
        from ray import cloudpickle

        if self.runner is not None:
            raise RuntimeError("this pooled worker still holds the runner of an earlier group (its hand_back() failed)")
        self._warm.finish()   # still importing: at normal priority now, and waited for
        self.take_place(info, cloudpickle.loads(runner_factory_bytes))

    def hand_back(self) -> Optional[str]:
        """Close and drop the runner of the group that ended, to serve a later group of the same
        framework (the pool asks this of a worker handed back to it); why it cannot, or None."""
        import gc

        runner, self.runner, self.runner_factory = self.runner, None, None
        if runner is None:
            return None
        self._heartbeat.set()
        try:
            runner.close()
        except Exception as error:  # noqa: BLE001 - the pool ends a worker that could not close its runner
            self.runner = runner
            return f"closing its runner failed: {type(error).__name__}: {error}"
        del runner
        gc.collect()   # the model, optimizer and rows of the last group, before the next one's
        return None


def ray_context_at(ray_address: str) -> Optional["RayContext"]:
    """The active context's Ray on Spark, if it is the cluster at ``ray_address`` (None once that
    cluster was stopped or replaced)."""
    from zoo_lite.context import OrcaContext

    ray_context = OrcaContext.get_ray_context() if OrcaContext.is_active() else None
    return ray_context if ray_context is not None and ray_context.address == ray_address else None


def cluster_answers(ray_address: str) -> bool:
    """Whether calls into the Ray cluster at ``ray_address`` can be made: it is the active one, and
    its head (with the GCS) was not lost. A call to a lost GCS blocks for a minute, after which Ray
    ends the calling process, the driver included."""
    import ray

    ray_context = ray_context_at(ray_address)
    return ray.is_initialized() and ray_context is not None and not ray_context.head_lost()


def end_actors(actors: Sequence[Any], ray_address: str) -> None:
    """Kill ``actors`` of the cluster at ``ray_address`` if it still runs (a stopped, restarted or
    headless cluster took them along)."""
    import ray

    if actors and cluster_answers(ray_address):
        for actor in actors:
            ray.kill(actor, no_restart=True)
