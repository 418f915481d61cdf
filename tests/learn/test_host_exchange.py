"""The shared-memory host sum between real worker processes (spawned, as Ray starts its workers)."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
from typing import Any, Callable

import numpy as np
import pytest

from zoo_lite.errors import WorkerTimeoutError
from zoo_lite.learn.base.host_exchange import open_host_sum, shared_memory_directory

pytestmark = pytest.mark.timeout(120)

CALLS, SIZE = 30, 1 << 18


def agreement(barrier: Any, flags: Any, rank: int) -> Callable[[bool], bool]:
    """A real all-agree collective over the test's processes: flags, a barrier, then read."""
    def all_agree(ok: bool) -> bool:
        flags[rank] = int(ok)
        barrier.wait(timeout=30)
        result = all(flags[:])
        barrier.wait(timeout=30)   # nobody overwrites a flag before everyone has read
        return result
    return all_agree


def summing_worker(directory: str, rank: int, size: int, barrier: Any, flags: Any, results: Any, jitter: bool) -> None:
    host = open_host_sum(directory, "test", rank, size, SIZE, np.float32, 20.0, agreement(barrier, flags, rank))
    if host is None:
        results.put((rank, "no host sum"))
        return
    rng, sums = np.random.default_rng(rank), []
    for call in range(CALLS):
        if jitter:
            time.sleep(random.Random(rank * 1000 + call).random() * 0.004)   # workers arrive in every order
        sums.append(host.sum(rng.normal(size=SIZE).astype(np.float32)))
    host.close()
    results.put((rank, np.stack(sums)))


def run_workers(directory: str, size: int, jitter: bool) -> dict[int, Any]:
    context = mp.get_context("spawn")
    barrier, flags, results = context.Barrier(size), context.Array("i", size), context.Queue()
    workers = [context.Process(target=summing_worker, args=(directory, rank, size, barrier, flags, results, jitter))
               for rank in range(size)]
    for worker in workers:
        worker.start()
    collected = dict(results.get(timeout=90) for _ in workers)
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    return collected


def expected_sums(size: int) -> np.ndarray:
    """What every worker must get: the slots summed in rank order."""
    generators = [np.random.default_rng(rank) for rank in range(size)]
    buffers = [np.stack([rng.normal(size=SIZE).astype(np.float32) for _ in range(CALLS)]) for rng in generators]
    # rank-order float32 sums, as the workers add them
    total = buffers[0].copy()
    for other in buffers[1:]:
        total += other
    return total


# more workers than the machine's 2 cores get preempted mid-sum: a slot reused too early shows up
@pytest.mark.parametrize("size, jitter", [(2, True), (3, False), (5, False)], ids=["2 jittered", "3", "5 oversubscribed"])
def test_every_worker_gets_the_same_bits_of_the_sum_on_every_call(tmp_path, size, jitter) -> None:
    results = run_workers(str(tmp_path), size, jitter)
    expected = expected_sums(size)
    for rank in range(size):
        assert np.array_equal(results[rank], expected), f"rank {rank} got a different sum"
    assert os.listdir(tmp_path) == [], "the slot file and pipes are unlinked once every worker has opened them"


def test_a_single_worker_gets_its_own_buffer(tmp_path) -> None:
    results = run_workers(str(tmp_path), 1, False)
    assert np.array_equal(results[0], expected_sums(1))


def test_every_worker_falls_back_when_one_cannot_open_the_files(tmp_path) -> None:
    # a leftover file with rank 1's pipe name: rank 1 fails to create it, so nobody uses shared memory
    (tmp_path / "zoo_lite-test.1.fifo").write_text("in the way")
    results = run_workers(str(tmp_path), 2, False)
    assert results == {0: "no host sum", 1: "no host sum"}
    assert sorted(os.listdir(tmp_path)) == ["zoo_lite-test.1.fifo"], "rank 0 removed what it created"


def lonely_worker(directory: str, barrier: Any, flags: Any, results: Any) -> None:
    host = open_host_sum(directory, "lonely", 0, 2, 4, np.float32, 0.5, agreement(barrier, flags, 0))
    started = time.monotonic()
    try:
        host.sum(np.ones(4, dtype=np.float32))
    except WorkerTimeoutError as error:
        results.put((str(error), time.monotonic() - started))
    host.close()


def silent_worker(directory: str, barrier: Any, flags: Any) -> None:
    host = open_host_sum(directory, "lonely", 1, 2, 4, np.float32, 0.5, agreement(barrier, flags, 1))
    time.sleep(3)   # never calls sum
    host.close()


def test_a_peer_that_never_arrives_is_a_timeout_error_not_a_hang(tmp_path) -> None:
    context = mp.get_context("spawn")
    barrier, flags, results = context.Barrier(2), context.Array("i", 2), context.Queue()
    workers = [context.Process(target=lonely_worker, args=(str(tmp_path), barrier, flags, results)),
               context.Process(target=silent_worker, args=(str(tmp_path), barrier, flags))]
    for worker in workers:
        worker.start()
    message, waited_s = results.get(timeout=30)
    for worker in workers:
        worker.join(timeout=30)
    assert "local workers [1] did not reach step 1 within 0 s" in message and "collective_timeout_s" in message
    assert 0.4 < waited_s < 2.5


def test_a_missing_or_full_directory_is_not_used(tmp_path) -> None:
    assert shared_memory_directory(1024, str(tmp_path / "missing")) is None
    assert shared_memory_directory(1 << 62, str(tmp_path)) is None
    assert shared_memory_directory(1024, str(tmp_path)) == str(tmp_path)


def test_a_buffer_of_the_wrong_shape_is_refused(tmp_path) -> None:
    host = open_host_sum(str(tmp_path), "shape", 0, 1, 3, np.float32, 1.0, lambda ok: ok)
    with pytest.raises(ValueError, match="HostSum of 3 x float32 got a buffer of \\(4,\\) x float64"):
        host.sum(np.zeros(4))
    host.close()
