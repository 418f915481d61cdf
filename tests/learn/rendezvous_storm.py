"""Many torch rendezvous at once, each as zoo_lite's workers make it, while another process
takes free ports all the time: run by ``test_rendezvous_ports.py`` inside a network namespace of
its own whose ephemeral port range is narrowed, so that a port picked and let go is soon taken.
Prints one line per pair: ``ok <sum>`` or ``failed <error>``.

With ``FIRST LAST``, the rank 0 of every other pair (the odd ones) serves its store on a port of
that range, as ``WorkerConfig(rendezvous_ports=(FIRST, LAST))`` makes it, while the even pairs bind
any port; the thief takes ports of the range too. One storm thus checks both ways at once, under
the same pressure on the ephemeral ports (every pair's gloo listeners and connections use them).

Usage: ``python -m tests.learn.rendezvous_storm PAIRS [FIRST LAST]``.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import random
import socket
import sys
import time
import traceback
from typing import Any, Optional

HOST = "127.0.0.1"
TIMEOUT_S = 60.0
#: how many ports the thief holds at a time, each for about THIEF_HOLD_S
THIEF_PORTS, THIEF_HOLD_S = 40, 1.0


def thief(stop: Any, ports: Optional[tuple[int, int]]) -> None:
    """Another process on the host: binds free ports (port 0, and every other time one of
    ``ports`` if given) and holds each a while, all the time."""
    held: collections.deque = collections.deque()
    turn = 0
    while not stop.is_set():
        turn += 1
        try:
            grabbed = socket.socket()
            grabbed.bind((HOST, random.randint(*ports) if ports and turn % 2 else 0))
            grabbed.listen()
            held.append(grabbed)
        except OSError:   # none free this moment
            pass
        if len(held) >= THIEF_PORTS:
            held.popleft().close()
        time.sleep(THIEF_HOLD_S / THIEF_PORTS)


def rank0(results: Any, index: int, port_box: Any, ports: Optional[tuple[int, int]]) -> None:
    """Serve the store (bound here: any port, or one of ``ports``), publish its port, join, sum."""
    try:
        import torch
        import torch.distributed as dist

        from zoo_lite.learn.base.ports import bind_first_free
        from zoo_lite.learn.pytorch.exchange import join_process_group, rendezvous_store

        store = bind_first_free(HOST, ports, lambda port: rendezvous_store(HOST, port, 2, TIMEOUT_S, serve=True))
        if ports is not None and not ports[0] <= store.port <= ports[1]:
            raise AssertionError(f"the store's port {store.port} is outside {ports}")
        port_box.put(int(store.port))
        join_process_group(store, 0, 2, TIMEOUT_S, HOST)
        total = torch.tensor([float(index)])
        dist.all_reduce(total)
        dist.destroy_process_group()
        results.put((index, f"ok {total.item():g}"))
    except Exception:  # noqa: BLE001 - reported to the test, which fails on it
        results.put((index, "failed " + traceback.format_exc(limit=3).replace("\n", " | ")))


def rank1(results: Any, index: int, port_box: Any, ports: Optional[tuple[int, int]]) -> None:
    """Reach rank 0's store at the port it published, join, sum."""
    try:
        import torch
        import torch.distributed as dist

        from zoo_lite.learn.pytorch.exchange import join_process_group, rendezvous_store

        port = port_box.get(timeout=TIMEOUT_S)
        join_process_group(rendezvous_store(HOST, port, world_size=2, timeout_s=TIMEOUT_S), 1, 2, TIMEOUT_S, HOST)
        total = torch.tensor([1.0])
        dist.all_reduce(total)
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        results.put((index, "failed (rank 1) " + traceback.format_exc(limit=3).replace("\n", " | ")))


def pair_ports(index: int, ports: Optional[tuple[int, int]]) -> Optional[tuple[int, int]]:
    """The range pair ``index`` serves its store in: ``ports`` for the odd pairs, any port (None)
    for the even ones."""
    return ports if index % 2 else None


def main(pairs: int, ports: Optional[tuple[int, int]]) -> None:
    context = mp.get_context("spawn")   # as Ray starts its workers: a fresh interpreter each
    stop = context.Event()
    stealing = context.Process(target=thief, args=(stop, ports))
    stealing.start()
    results = context.Queue()
    boxes = [context.Queue() for _ in range(pairs)]
    processes = [context.Process(target=target, args=(results, index, boxes[index], pair_ports(index, ports)))
                 for index in range(pairs) for target in (rank0, rank1)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=3 * TIMEOUT_S)
        if process.is_alive():
            process.kill()
    stop.set()
    stealing.join(timeout=10)
    reported: dict[int, str] = {}
    while not results.empty():
        index, line = results.get()
        if index not in reported or line.startswith("failed"):   # a pair's failure outweighs its success
            reported[index] = line
    for index in range(pairs):
        print(reported.get(index, "failed (no report)"), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else None)
