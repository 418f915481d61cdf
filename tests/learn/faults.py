"""Fault injection for the recovery tests: callbacks that SIGKILL (or SIGSTOP) their own worker
process at a chosen point, once (a marker file records the kill, so the resumed fit runs on) or
every time."""

from __future__ import annotations

import os
import signal
from typing import Any, Optional

from zoo_lite.learn.pytorch import Callback


def kill_this_process_once(marker: Optional[str], sig: int = signal.SIGKILL) -> None:
    """Send this process ``sig``; with ``marker``, only if the marker file does not exist yet
    (the marker then holds the pid)."""
    if marker is not None:
        if os.path.exists(marker):
            return
        with open(marker, "w") as file:
            file.write(str(os.getpid()))
    os.kill(os.getpid(), sig)


class TorchKiller(Callback):
    """Kills the worker of ``rank`` after step ``step`` of the epoch that follows ``epochs_done``
    epochs (with ``sig``: SIGSTOP stops it instead, as a hung process); first removes the folder
    ``remove`` if given (a data source that is then gone)."""

    def __init__(self, rank: int, epochs_done: int, step: int = 1, marker: Optional[str] = None,
                 remove: Optional[str] = None, sig: int = signal.SIGKILL) -> None:
        self.rank, self.epochs_done, self.step, self.marker, self.remove = rank, epochs_done, step, marker, remove
        self.sig = sig

    def after_train_iter(self, runner: Any) -> None:
        if runner.rank == self.rank and runner.epoch == self.epochs_done and runner.batch_idx == self.step:
            if self.remove is not None:
                import shutil

                shutil.rmtree(self.remove, ignore_errors=True)
            kill_this_process_once(self.marker, self.sig)


class TorchPause(Callback):
    """At step ``step`` of the epoch after ``epochs_done`` epochs, rank ``rank`` writes ``marker``
    (once) and waits there, so that a test can kill its node or executor at a known point: for
    ``wait_s``, or until the file ``until`` exists."""

    def __init__(self, marker: str, rank: int = 0, epochs_done: int = 1, step: int = 1, wait_s: float = 120.0,
                 until: Optional[str] = None) -> None:
        self.marker, self.rank, self.epochs_done, self.step, self.wait_s = marker, rank, epochs_done, step, wait_s
        self.until = until

    def after_train_iter(self, runner: Any) -> None:
        import time

        if (runner.rank == self.rank and runner.epoch == self.epochs_done and runner.batch_idx == self.step
                and not os.path.exists(self.marker)):
            with open(self.marker, "w") as file:
                file.write(str(os.getpid()))
            deadline = time.monotonic() + self.wait_s   # the test kills this node meanwhile, or lets it go on
            while time.monotonic() < deadline and not (self.until and os.path.exists(self.until)):
                time.sleep(0.1)


class PortTakenRunner:
    """A runner whose rank 0 fails its first ``fail_times`` rendezvous as a bind on a taken port
    fails (``OSError`` EADDRINUSE); the file ``attempts`` gets one line per rendezvous of rank 0."""

    def __init__(self, attempts: str, fail_times: int, info: Any) -> None:
        self.attempts, self.fail_times, self.rank = attempts, fail_times, info.rank

    def connect(self, addresses: list[tuple[str, int]]) -> None:
        if self.rank != 0:
            return
        with open(self.attempts, "a") as file:
            file.write(f"{addresses[0][1]}\n")
        with open(self.attempts) as file:
            if len(file.readlines()) <= self.fail_times:
                import errno

                raise OSError(errno.EADDRINUSE, "Address already in use")

    def close(self) -> None:
        pass


class SlowStartRunner:
    """A runner that takes ``start_s`` seconds to build (a slow import, a large model)."""

    def __init__(self, start_s: float, info: Any) -> None:
        import time

        time.sleep(start_s)
        self.rank = info.rank

    def connect(self, addresses: list[tuple[str, int]]) -> None:
        pass

    def close(self) -> None:
        pass
