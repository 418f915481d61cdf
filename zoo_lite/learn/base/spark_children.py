"""Child processes of a Spark Python worker, for the Spark backend's workers that need a process of
their own (TensorFlow sets its collectives up once per process, and Spark reuses its Python
workers from task to task).

:func:`run_in_child` runs a task's work in a child process that dies with the Python worker
(``PR_SET_PDEATHSIG``). With warm workers on
(``OrcaContext.warm_workers``), the task also starts the *next* child as it begins: that child
imports the framework at idle priority while this task trains (see
:class:`~zoo_lite.learn.base.warm_up.BackgroundWarmUp`), then waits; the next stage's task on this
Python worker takes it instead of paying the import (TensorFlow's, about 5 s on 2 cores), and
raises it to normal priority if it is still importing. So each Python worker that ran such a task
keeps one idle child: one per executor slot. A child serves one task only. It declines where
memory is tight (:func:`~zoo_lite.learn.base.warm_up.memory_too_tight`), and ends with its Python
worker: when the executor ends (``stop_orca_context()``), or when Spark ends idle Python workers
(after a minute without Python tasks on the executor).
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Callable, Optional

from zoo_lite.learn.base.warm_up import WORKER_PROCESS_ENV, BackgroundWarmUp

__all__ = ["run_in_child", "child_main", "idle_child_pid"]

#: what a child's work imports besides its runner, imported ahead with it so that the work does
#: not wait for them: where pyspark comes from Spark's pyspark.zip (a host with no installed copy,
#: see zoo_lite_startup.PYSPARK_HOOK), its import compiles every module from source, about 1 s of a
#: Keras child's start (measured with py-spy)
_WORK_IMPORTS = ("pyspark.cloudpickle", "zoo_lite.learn.base.spark_group")


def _die_with_parent() -> None:
    """In the child, before it runs: SIGKILL it when its parent (the Python worker) dies, as
    Spark kills the workers of a cancelled task. (Linux sends it when the parent's starting
    *thread* ends: the children are started from the task's thread, the Python worker's main one.)"""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG


@dataclass
class _Child:
    """A child process and this process's end of its channel; ``warm_path`` is the runner class
    it imported ahead of its task, or None."""

    process: subprocess.Popen
    channel: Connection
    warm_path: Optional[str]

    @staticmethod
    def start(warm_path: Optional[str]) -> "_Child":
        mine, theirs = socket.socketpair()
        command = [sys.executable, "-c", "import sys; from zoo_lite.learn.base.spark_children import child_main; "
                                         "child_main(int(sys.argv[1]), sys.argv[2])", str(theirs.fileno()), warm_path or ""]
        process = subprocess.Popen(command, pass_fds=[theirs.fileno()], preexec_fn=_die_with_parent,
                                   env={**os.environ, WORKER_PROCESS_ENV: "1"})
        theirs.close()
        return _Child(process, Connection(mine.detach()), warm_path)

    def run(self, work: Callable[[], None]) -> None:
        """Hand ``work`` to the child and wait until it ends (no bound here: the work talks to the
        driver itself, which bounds it and cancels the task, and with it this process and the child)."""
        from pyspark import cloudpickle

        try:
            self.channel.send_bytes(pickle.dumps((sys.path, cloudpickle.dumps(work))))
        except OSError:
            pass   # the child ended already; the driver hears of it on its own link
        finally:
            self.channel.close()
            self.process.wait()

    def end(self) -> None:
        self.channel.close()
        self.process.kill()
        self.process.wait()


#: this Python worker's idle child, started after its last task with warm workers on
_idle: Optional[_Child] = None


def _take_idle(warm_path: Optional[str]) -> Optional[_Child]:
    """The idle child, if it is alive and imported ``warm_path`` (one that declined has ended);
    an idle child of another framework, or any with ``warm_path`` None, is ended."""
    global _idle
    child, _idle = _idle, None
    if child is None:
        return None
    if child.process.poll() is None and child.warm_path == warm_path:
        return child
    child.end()
    return None


def idle_child_pid() -> Optional[int]:
    """The pid of this Python worker's idle child, or None (for tests and benchmarks)."""
    return _idle.process.pid if _idle is not None and _idle.process.poll() is None else None


def run_in_child(work: Callable[[], None], warm_path: Optional[str]) -> None:
    """``work()`` in a child process of this one that dies with it: this Python worker's idle
    child if it has one for ``warm_path``, else a new one.
    With ``warm_path`` (warm workers on), the idle child for the next task is started now, to
    import while this one works. ``work`` is pickled by value where cloudpickle does so (the
    user's code)."""
    global _idle
    child = _take_idle(warm_path) or _Child.start(None)   # with warm workers off, an idle child is ended
    if warm_path:
        _idle = _Child.start(warm_path)
    child.run(work)


def child_main(fd: int, warm_path: str) -> None:
    """The child process: with ``warm_path``, import that runner in the background (unless memory
    is tight: then it ends at once); wait for its work, then run it with its parent's
    ``sys.path``, once the imports are done."""
    warm = BackgroundWarmUp(warm_path, also=_WORK_IMPORTS) if warm_path else None
    if warm is not None and warm.verdict() is not None:
        return
    channel = Connection(fd)
    try:
        path, work_bytes = pickle.loads(channel.recv_bytes())
    except EOFError:
        return   # the parent ended without a task for it
    if warm is not None:
        warm.finish()
    channel.close()
    sys.path[:] = path
    from pyspark import cloudpickle

    cloudpickle.loads(work_bytes)()
