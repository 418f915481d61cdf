"""The small sums of a one-host Keras group through rank 0 (zoo_lite.learn.base.star_sum), between real
processes (spawned, as Ray starts its workers) over real TCP on loopback."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
from typing import Any

import numpy as np
import pytest

from zoo_lite.errors import WorkerTimeoutError
from zoo_lite.learn.base.host_exchange import host_sum_if_one_host
from zoo_lite.learn.base.ports import reserve_port
from zoo_lite.learn.base.star_sum import StarSum

pytestmark = pytest.mark.timeout(120)

WORKERS = 3


def arrays_of(rank: int) -> list[np.ndarray]:
    """What ``rank`` sums, call by call: sizes from 1 to a few million bytes, values that round."""
    rng = np.random.default_rng(rank)
    return [rng.normal(size=size) * 10.0 ** rng.integers(-8, 8) for size in (1, 7, 1000, 300_000, 3)]


def star_worker(rank: int, root: tuple[str, int], listener: Any, results: Any) -> None:
    star = StarSum(rank, WORKERS, root, listener, timeout_s=60)
    try:
        sums = [star.sum(values) for values in arrays_of(rank)]
        # the set-up of a shared-memory sum agrees through the star, as a Keras group's does
        host_sum = host_sum_if_one_host(5, np.float32, rank, WORKERS, 60.0, star.sum)
        shared = host_sum.sum(np.full(5, rank + 1, dtype=np.float32)).tolist() if host_sum is not None else None
        results.put((rank, sums, shared))
    finally:
        star.close()


def start(target: Any, *args: Any) -> tuple[list[mp.Process], Any]:
    """``target(rank, root, listener or None, *args)`` in one spawned process per rank; rank 0 gets
    the held socket of its port, as a runner's ``listen`` holds it."""
    context = mp.get_context("spawn")
    held = reserve_port("127.0.0.1")
    root = ("127.0.0.1", held.getsockname()[1])
    processes = [context.Process(target=target, args=(rank, root, held if rank == 0 else None, *args)) for rank in range(WORKERS)]
    for process in processes:
        process.start()
    held.close()
    return processes, root


def test_every_worker_gets_the_same_bits_the_sum_in_rank_order_and_a_shared_memory_sum_opens_through_it() -> None:
    results = mp.get_context("spawn").Queue()
    processes, _ = start(star_worker, results)
    got = dict((rank, (sums, shared)) for rank, sums, shared in (results.get(timeout=90) for _ in processes))
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    expected = [sum(arrays_of(rank)[call] for rank in range(WORKERS)) for call in range(len(arrays_of(0)))]
    for rank in range(WORKERS):
        sums, shared = got[rank]
        for mine, want in zip(sums, expected):
            assert mine.tobytes() == want.tobytes()   # rank order, float64: the same bits everywhere
        assert shared == [6.0] * 5


def dying_worker(rank: int, root: tuple[str, int], listener: Any, results: Any) -> None:
    star = StarSum(rank, WORKERS, root, listener, timeout_s=3600)
    star.sum(np.ones(4))
    if rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        star.sum(np.ones(4))
        results.put((rank, "summed without rank 2"))
    except WorkerTimeoutError as error:
        results.put((rank, str(error)))
    finally:
        star.close()


def test_a_dead_worker_ends_the_next_sum_at_once_on_every_other_worker() -> None:
    """The timeout is an hour: only the closed connection can end the others' wait (the test's own
    timeout is two minutes)."""
    results = mp.get_context("spawn").Queue()
    processes, _ = start(dying_worker, results)
    outcomes = dict(results.get(timeout=90) for _ in range(WORKERS - 1))
    for process in processes:
        process.join(timeout=30)
    assert processes[2].exitcode == -signal.SIGKILL
    assert sorted(outcomes) == [0, 1]
    for message in outcomes.values():
        assert "the small sums of 3 workers" in message and "a worker died or is stalled" in message, message


def stray_then_worker(rank: int, root: tuple[str, int], listener: Any, results: Any) -> None:
    if rank == 1:   # a port scanner's connection first (once rank 0 listens): it says nothing a worker says
        stray = None
        while stray is None:
            try:
                stray = socket.create_connection(root, timeout=30)
            except ConnectionRefusedError:
                continue
        stray.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 64)
        stray.close()
    star_worker(rank, root, listener, results)


def test_a_connection_that_is_not_a_worker_is_dropped_and_the_group_still_forms() -> None:
    results = mp.get_context("spawn").Queue()
    processes, _ = start(stray_then_worker, results)
    ranks = sorted(results.get(timeout=90)[0] for _ in processes)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    assert ranks == [0, 1, 2]


def test_a_worker_whose_rank_0_never_listens_gets_a_timeout_naming_rank_0s_address() -> None:
    held = reserve_port("127.0.0.1")   # bound, never listening: connections are refused
    root = ("127.0.0.1", held.getsockname()[1])
    try:
        with pytest.raises(WorkerTimeoutError, match=rf"rank 1 could not connect to rank 0 at 127\.0\.0\.1:{root[1]}"):
            StarSum(1, 2, root, None, timeout_s=0.5)
    finally:
        held.close()


def test_rank_0_without_its_socket_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="rank 0 needs the listener socket"):
        StarSum(0, 2, ("127.0.0.1", 1), None, timeout_s=1)
