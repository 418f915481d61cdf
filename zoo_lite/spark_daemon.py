"""pyspark's daemon of Python workers, without the traceback of a worker the JVM stopped on purpose.

When a job needs no more of a Python worker's output (``LIMIT 10`` satisfied, ``take``, a task
cancelled), Spark's JVM stops the worker: it asks the daemon to kill it (by pid, on the daemon's
stdin) and closes the worker's socket. Over a Unix domain socket (which zoo_lite turns on for its
speed, :mod:`zoo_lite.spark_settings`) the worker sees the closed socket first: pyspark's worker
ends its task, and the daemon's last flush of the worker's output fails with
``BrokenPipeError``. pyspark then ends the worker (``spark.python.daemon.killWorkerOnFlushFailure``,
on by default) and prints the traceback to the executor's stderr, which in local mode is the
user's console, under a query that succeeded.

Here such a worker ends the same way (exit code 1) without printing. Nothing is hidden that
anyone could act on: a worker's socket only breaks when the JVM closed its end, and the JVM then
knows why. An error of the user's code is written to the socket before the worker ends, and
raised on the driver as always; pyspark's worker already ignores a broken socket while writing it.

Spark runs it as ``python -m zoo_lite.spark_daemon`` (``spark.python.daemon.module``) where the
executors' Python is known to have zoo_lite: local, local-cluster, and the loopback standalone
cluster (:func:`zoo_lite.spark_settings.spark_master_and_conf`).
"""

from __future__ import annotations

import os
import socket

from pyspark import daemon

__all__ = ["worker_ending_quietly_when_the_jvm_left", "main"]

_pyspark_worker = daemon.worker


def worker_ending_quietly_when_the_jvm_left(sock: socket.socket, authenticated: bool) -> int:
    """pyspark's ``daemon.worker`` (one worker's life after the fork), ending the process
    quietly where its socket was closed by the JVM: exit code 1, as pyspark's own end after a
    failed flush, without its traceback. Any other error goes on to pyspark's handler."""
    try:
        return _pyspark_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        os._exit(1)   # a forked worker: no clean-up of the daemon's state may run here


def main() -> None:
    """Run pyspark's daemon with :func:`worker_ending_quietly_when_the_jvm_left` as its worker."""
    daemon.worker = worker_ending_quietly_when_the_jvm_left
    daemon.manager()


if __name__ == "__main__":
    main()
