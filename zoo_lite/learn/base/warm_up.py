"""Getting a worker process ready before it is needed: its framework imported, nothing configured.

Two kinds of process are kept warm: idle Ray actors on each node
(:mod:`zoo_lite.learn.base.warm_pool`) and, on the Spark backend, a pre-started child process
beside each Python worker that ran a Keras task (:mod:`zoo_lite.learn.base.spark_children`).
Both use what this module gives:

- **What is imported** is named by the runner class, ``"module:QualName"``
  (:func:`runner_path`): importing the module imports the framework and zoo_lite's runner code,
  and the class's static ``warm_up()``, where it has one, imports what the runner's first use
  would (torch's compiler front end, which building the first optimizer imports).
- **Memory.** A warm process holds its framework's memory while it waits (about 0.4 GiB for
  PyTorch, 0.75 GiB for TensorFlow, measured). One is started only where the host, or the
  container's memory limit, leaves at least :data:`MIN_AVAILABLE_MB` available
  (:func:`memory_too_tight`); elsewhere it declines, and the pool stays empty there.
- **Priority.** A Ray pool is refilled while a fit runs. Its imports run in a thread of
  ``SCHED_IDLE`` priority (:class:`BackgroundWarmUp`), which takes only CPU time nothing else
  wants, so the refill does not slow the fit down. A group that takes a process still importing
  raises the thread back to normal priority (where the system allows it) and waits for it.
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import sys
import threading
from typing import Any, Callable, Optional, Sequence

__all__ = ["MIN_AVAILABLE_MB", "WORKER_PROCESS_ENV", "runs_in_a_worker", "runner_path", "used_process_serves", "run_warm_up", "warm_up_runner", "available_memory_mb", "memory_too_tight",
           "BackgroundWarmUp"]

#: a warm process is started only where at least this much memory is available (MiB): the
#: largest framework's idle process (0.75 GiB) with room to spare for the work itself
MIN_AVAILABLE_MB = 3072

#: set (to "1") in the environment of the child processes zoo_lite starts for Spark tasks, which
#: neither Ray nor Spark knows as workers
WORKER_PROCESS_ENV = "ZOO_LITE_WORKER_PROCESS"


def runs_in_a_worker() -> bool:
    """Whether this process is one of the cluster's workers rather than the user's driver: a Ray
    worker process, a Python worker running a Spark task, or a child process zoo_lite started for
    one. Only what is already imported is asked.

    Examples
    --------
    >>> runs_in_a_worker()    # the driver
    False
    """
    if os.environ.get(WORKER_PROCESS_ENV) == "1":
        return True
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE:
        return True
    pyspark = sys.modules.get("pyspark")
    return pyspark is not None and pyspark.TaskContext.get() is not None


def _runner_class(runner_factory: Callable[..., Any]) -> Any:
    return runner_factory.func if isinstance(runner_factory, functools.partial) else runner_factory


def runner_path(runner_factory: Callable[..., Any]) -> str:
    """The ``"module:QualName"`` of the runner class a factory builds (a class, or a
    ``functools.partial`` of one), as a warm process imports it.

    Examples
    --------
    >>> from zoo_lite.learn.base.framework import WorkerConfig
    >>> runner_path(functools.partial(WorkerConfig, 60))
    'zoo_lite.learn.base.framework:WorkerConfig'
    """
    target = _runner_class(runner_factory)
    return f"{target.__module__}:{target.__qualname__}"


def used_process_serves(runner_factory: Callable[..., Any], hosts: Sequence[str]) -> bool:
    """Whether a process that served an earlier group (handed back to the pool) may run the
    runner ``runner_factory`` builds for a group on ``hosts`` (one address per rank): the runner
    class's ``used_process_serves(spec, hosts)``, given the spec the factory holds (the last
    argument of a ``functools.partial``). Torch: always; Keras: unless the group needs
    TensorFlow's collective, which a process sets up only before its runtime starts.

    Examples
    --------
    >>> from zoo_lite.learn.base.framework import WorkerConfig
    >>> used_process_serves(WorkerConfig, ["10.0.0.1"])
    False
    """
    serves = getattr(_runner_class(runner_factory), "used_process_serves", None)
    if serves is None:
        return False
    spec = runner_factory.args[-1] if isinstance(runner_factory, functools.partial) and runner_factory.args else None
    return bool(serves(spec, list(hosts)))


def run_warm_up(runner_factory: Callable[..., Any]) -> None:
    """The static ``warm_up()`` of the runner class a factory builds, if it has one: the imports
    that building a runner makes on first use."""
    warm_up = getattr(_runner_class(runner_factory), "warm_up", None)
    if callable(warm_up):
        warm_up()


def warm_up_runner(path: str) -> None:
    """Import the runner class at ``path`` (and with it its framework), then run its static
    ``warm_up()`` if it has one.

    Examples
    --------
    >>> warm_up_runner("zoo_lite.learn.base.framework:WorkerConfig")
    """
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for name in qualname.split("."):
        target = getattr(target, name)
    run_warm_up(target)


def _cgroup_room_mb() -> Optional[float]:
    """What this process's cgroup may still take before its memory limit (MiB), or None where
    it has no limit (cgroup v2, then v1)."""
    try:
        with open("/proc/self/cgroup") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":   # cgroup v2
            files = (f"/sys/fs/cgroup{path}/memory.max", f"/sys/fs/cgroup{path}/memory.current")
        elif "memory" in controllers.split(","):
            files = ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")
        else:
            continue
        try:
            limit, used = (open(name).read().strip() for name in files)
        except OSError:
            continue
        if limit.isdigit() and used.isdigit() and int(limit) < 1 << 60:
            return (int(limit) - int(used)) / 2**20
    return None


def available_memory_mb() -> float:
    """The memory a new process here could use (MiB): the host's available memory, or less where
    this process's container (cgroup) has a limit closer to its use.

    Examples
    --------
    >>> available_memory_mb() > 0
    True
    """
    import psutil

    host = psutil.virtual_memory().available / 2**20
    room = _cgroup_room_mb()
    return host if room is None else min(host, room)


def memory_too_tight(min_available_mb: Optional[float] = None) -> Optional[str]:
    """Why no warm process should be kept here (less than ``min_available_mb``, default
    :data:`MIN_AVAILABLE_MB`, of memory available), or None.

    Examples
    --------
    >>> memory_too_tight(min_available_mb=0) is None
    True
    >>> memory_too_tight(min_available_mb=1e12)  # doctest: +ELLIPSIS
    'only ... MiB of memory is available on ..., less than the 1000000000000 MiB a warm worker needs'
    """
    if min_available_mb is None:
        min_available_mb = MIN_AVAILABLE_MB
    available = available_memory_mb()
    if available >= min_available_mb:
        return None
    import socket

    return (f"only {available:.0f} MiB of memory is available on {socket.gethostname()}, less than the "
            f"{min_available_mb:.0f} MiB a warm worker needs")


def _set_policy(thread_id: int, policy: int) -> bool:
    """Give one thread of this process a scheduling policy; False where the system refuses
    (an unprivileged process may lower a thread's priority, but not always raise it again)."""
    try:
        os.sched_setscheduler(thread_id, policy, os.sched_param(0))
        return True
    except (OSError, AttributeError):
        return False


class BackgroundWarmUp:
    """:func:`warm_up_runner` in a thread of idle priority: it first checks the memory (see
    :func:`memory_too_tight`, with ``min_available_mb``), then imports, unless the memory is too
    tight; then it imports the modules named in ``also``.

    Threads the imports start (a library's helper threads) inherit the idle priority; they are
    given normal priority again once the imports are done, where the system allows it.

    Examples
    --------
    >>> "tabnanny" in sys.modules
    False
    >>> warm = BackgroundWarmUp("zoo_lite.learn.base.framework:WorkerConfig", min_available_mb=0, also=["tabnanny"])
    >>> warm.verdict() is None    # the memory check passed: it imports
    True
    >>> warm.finish()
    >>> "tabnanny" in sys.modules
    True
    """

    def __init__(self, path: str, min_available_mb: Optional[float] = None, also: Sequence[str] = ()) -> None:
        self.path = path
        self._also = tuple(also)   # modules the process's work imports besides the runner's
        self._min_available_mb = min_available_mb
        self._checked = threading.Event()
        self._declined: Optional[str] = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="zoo_lite-warm-up", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        idle = _set_policy(threading.get_native_id(), getattr(os, "SCHED_IDLE", -1))
        try:
            self._declined = memory_too_tight(self._min_available_mb)
        finally:
            self._checked.set()
        if self._declined is not None:
            return
        before = set(_thread_ids())
        try:
            warm_up_runner(self.path)
            for module in self._also:
                importlib.import_module(module)
            # the imports' objects live as long as the process: out of the collector's full passes,
            # the collection of a worker handed back (and training's own) need not walk them
            # (torch's: 0.13 to 0.39 s per pass, then microseconds)
            gc.freeze()
        except BaseException as error:  # noqa: BLE001 - the runner's own build reports it again, in its place
            self._error = error
        if idle:
            for thread_id in set(_thread_ids()) - before:
                _set_policy(thread_id, os.SCHED_OTHER)

    def verdict(self) -> Optional[str]:
        """Why this process declined to warm up (too little memory), or None; waits only for the
        memory check, which comes first."""
        self._checked.wait()
        return self._declined

    def finish(self) -> None:
        """Raise the import thread to normal priority (where allowed) and wait for it: the
        process is wanted now."""
        if self._thread.is_alive() and self._thread.native_id:
            _set_policy(self._thread.native_id, os.SCHED_OTHER)
        self._thread.join()

    def done(self) -> bool:
        """Whether the imports are over (or were declined)."""
        return not self._thread.is_alive()


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return []
