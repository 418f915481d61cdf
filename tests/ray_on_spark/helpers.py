"""Finding the processes of one Ray on Spark cluster, by the pids its watchdogs report."""

from __future__ import annotations

import time
from typing import Any, Iterable

import psutil


def ray_processes(ray_context: Any) -> list[psutil.Process]:
    """Every watchdog of ``ray_context`` and every process below it (the node's Ray processes)."""
    found: list[psutil.Process] = []
    for node in ray_context.nodes:
        try:
            watchdog = psutil.Process(node["watchdog_pid"])
            found += [watchdog, *watchdog.children(recursive=True)]
        except psutil.Error:
            continue
    return found


def alive(processes: Iterable[psutil.Process]) -> list[psutil.Process]:
    """The processes still running (same pid and start time, not a zombie)."""
    running = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
        except psutil.Error:
            continue
    return running


def wait_until_gone(processes: list[psutil.Process], timeout_s: float = 30.0) -> list[psutil.Process]:
    """Wait up to ``timeout_s`` for ``processes`` to end; return those still alive."""
    deadline = time.monotonic() + timeout_s
    while alive(processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    return alive(processes)


def describe(processes: Iterable[psutil.Process]) -> list[tuple[int, str]]:
    described = []
    for process in processes:
        try:
            described.append((process.pid, " ".join(process.cmdline())[:120]))
        except psutil.Error:
            described.append((process.pid, "?"))
    return described
