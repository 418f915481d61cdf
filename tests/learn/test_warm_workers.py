"""Warm workers on Ray (zoo_lite.learn.base.warm_pool): a new Estimator's workers come from the pool,
already imported, and train to the weights of cold workers; torch workers, and Keras ones that
shared a host (no TensorFlow collective), go back to the pool when their group ends (holding
nothing of it); Keras workers that set up TensorFlow's collective never serve twice and the pool
is refilled; their CPUs are held in Ray while they work; the pool can be turned off and stays
empty where memory is tight. Real Spark (local-cluster, two executors on one host) and real Ray."""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time

import numpy as np
import pytest
import ray
import torch

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.errors import WorkerTimeoutError
from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.base.warm_pool import WarmPool, warm_pool_of
from zoo_lite.learn.base.warm_up import runner_path
from zoo_lite.learn.base.worker_group import wait_for_free_cpus
from zoo_lite.learn.pytorch import Estimator as TorchEstimators
from zoo_lite.learn.pytorch.runner import TorchRunner
from zoo_lite.learn.tf2 import Estimator as KerasEstimators, KerasEstimator
from zoo_lite.learn.tf2.runner import KerasRunner
from tests.learn import keras_models, models

TORCH_PATH, KERAS_PATH = runner_path(TorchRunner), runner_path(KerasRunner)


@pytest.fixture(scope="module")
def cluster(ray_local_cluster):
    return ray_local_cluster


def _pool() -> WarmPool:
    """The active cluster's pool (a new one after the pool was turned off and on again)."""
    return warm_pool_of(OrcaContext.get_ray_context().address)


@pytest.fixture
def warm_workers_restored():
    yield
    OrcaContext.warm_workers = True


def _rows() -> XShards:
    x, y = models.regression_dataset(64).tensors
    return XShards.partition({"x": x.numpy(), "y": y.numpy()}, num_shards=2)


def _linear(config: dict) -> torch.nn.Module:
    return torch.nn.Linear(2, 1)


def _torch_estimator():
    return TorchEstimators.from_torch(model=_linear, optimizer=models.sgd_creator, loss=torch.nn.MSELoss(), seed=3)


def _keras_estimator():
    return KerasEstimators.from_keras(model_creator=keras_models.linear_model, seed=3)


def _keras_estimator_on_tensorflows_collective():
    """Gradients and sums through TensorFlow's ring all-reduce, as across hosts."""
    return KerasEstimators.from_keras(model_creator=keras_models.linear_model, seed=3,
                                      worker_config=WorkerConfig(shared_memory_exchange=False))


def _fit(est) -> None:
    quiet = {"verbose": 0} if isinstance(est, KerasEstimator) else {}
    est.fit(_rows(), epochs=2, batch_size=16, **quiet)


def _fitted_on_warm_workers(make):
    """An Estimator of ``make`` fitted on two workers from the pool: the module's earlier tests
    decide what the pool holds, so a first one may have to fill it."""
    est = make()
    _fit(est)
    if est._group.from_pool != 2:
        est.shutdown()
        est = make()
        _fit(est)
    assert est._group.from_pool == 2
    return est


def _idle_entries(path: str) -> list:
    """The pool's idle entries of ``path`` (actor and node), the workers handed back taken in first."""
    _pool().idle_count(path)   # takes in the workers handed back
    return list(_pool()._idle.get(path, []))


def _pooled_pids(path: str) -> set[int]:
    """The pids of the pool's idle actors of ``path`` (Ray's actor table), workers handed back included."""
    from ray._private.state import actors

    idle = {entry.actor._actor_id.hex() for entry in _idle_entries(path)}
    return {int(entry["Pid"]) for entry in actors(actor_state_name="ALIVE").values() if entry["ActorID"] in idle}


def _all_parked(path: str, timeout_s: float = 30.0) -> bool:
    """Whether every idle actor of ``path`` waits at its node's gate (zoo_lite.learn.base.node_boards)
    within ``timeout_s``: a park() call reaches the board a few ms after it was sent."""
    from zoo_lite.learn.base.node_boards import boards_on
    from zoo_lite.learn.base.warm_pool import _gate_key

    address = OrcaContext.get_ray_context().address
    entries = _idle_entries(path)
    nodes = {entry.node_id for entry in entries}
    idle = {_gate_key(entry.actor) for entry in entries}
    deadline = time.monotonic() + timeout_s
    while True:
        parked = {key for node in nodes for key in ray.get(boards_on(address, node).parked_keys.remote(), timeout=10)}
        if idle <= parked or time.monotonic() > deadline:
            return idle <= parked
        time.sleep(0.05)


def _ask_idle(path: str, call):
    """Each idle actor's answer to ``call(runner)``: its gate is opened for the question, and it parks again."""
    with _pool().gates_opened(path) as actors:
        return ray.get([actor.call.remote(call) for actor in actors], timeout=60)


def _weights(est) -> list[np.ndarray]:
    model = est.get_model()
    if isinstance(model, torch.nn.Module):
        return [value.detach().numpy().copy() for value in model.state_dict().values()]
    return [value.copy() for value in model.get_weights()]


def _check_worker_imports(est, path: str) -> None:
    """A torch worker fed NumPy imports no pandas; a Keras worker's TensorFlow came without Keras'
    scikit-learn and matplotlib hooks (zoo_lite.learn.tf2.tensorflow_import)."""
    skipped = {"pandas"} if path == TORCH_PATH else {"sklearn", "matplotlib"}
    for imported in est._group.call(lambda runner: {name.split(".")[0] for name in sys.modules}):
        assert not imported & skipped, f"a worker imported {sorted(imported & skipped)}"


@pytest.mark.parametrize("path, make, serves_again", [
    (TORCH_PATH, _torch_estimator, True),
    (KERAS_PATH, _keras_estimator, True),
    (KERAS_PATH, _keras_estimator_on_tensorflows_collective, False),
], ids=["torch", "keras", "keras over tensorflow's collective"])
def test_a_new_estimator_takes_warm_workers_that_train_as_cold_ones_and_serve_again_unless_they_set_up_tensorflows_collective(
        cluster, path, make, serves_again, warm_workers_restored) -> None:
    OrcaContext.warm_workers = False
    cold = make()
    _fit(cold)
    assert cold._group.from_pool == 0
    _check_worker_imports(cold, path)
    expected = _weights(cold)
    cold.shutdown()

    OrcaContext.warm_workers = True
    first = make()
    _fit(first)   # fills the pool once its workers are connected: one idle worker per node
    assert _pool().idle_count(path) == 2
    assert _pool().wait_until_warm(path, timeout_s=120)
    assert _all_parked(path), "an idle pooled worker waits at its node's gate, not in Ray's 10 ms loop"
    idle = _pooled_pids(path)
    first_pids = set(first._group.call(lambda runner: os.getpid()))

    second = make()
    _fit(second)
    assert second._group.from_pool == 2
    second_pids = set(second._group.call(lambda runner: os.getpid()))
    assert second_pids == idle, "the new group should run in the pool's processes"
    assert not second_pids & first_pids
    _check_worker_imports(second, path)
    for got, want in zip(_weights(second), expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert first._group is None   # it gave its CPUs back to the new group
    assert _gone(first_pids), "the processes a group started itself end with it"
    exchange = second._group.call(lambda runner: runner.exchange_kind())
    assert exchange == (["collective"] * 2 if make is _keras_estimator_on_tensorflows_collective else ["shared_memory"] * 2)
    if not serves_again:
        assert _pool().wait_until_warm(path, timeout_s=120)   # refilled after the first epoch; alive once warm
        refilled = _pooled_pids(path)
        assert len(refilled) == 2 and not refilled & (first_pids | second_pids), "the pool holds only processes never used"
        second.shutdown()
        assert _gone(second_pids), "a process that set up TensorFlow's collective never serves a second group"
    else:
        assert _pool().idle_count(path) == 0, "a group whose workers come back refills nothing"
        second.shutdown()
        assert _pooled_pids(path) == second_pids, "the workers go back to the pool when their group ends"
        assert _all_parked(path), "a worker handed back parks at its gate once it closed its runner"
        third = make()
        _fit(third)
        assert third._group.from_pool == 2
        assert set(third._group.call(lambda runner: os.getpid())) == second_pids
        for got, want in zip(_weights(third), expected):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        third.shutdown()
    first.shutdown()


def test_a_group_on_tensorflows_collective_leaves_used_keras_processes_to_the_next_group_that_shares_a_host(cluster) -> None:
    """TensorFlow sets its collective up only before its runtime starts: a process that served a
    Keras group cannot, so such a group takes only processes that never served."""
    est = _fitted_on_warm_workers(_keras_estimator)
    used = set(est._group.call(lambda runner: os.getpid()))
    est.shutdown()
    assert _pooled_pids(KERAS_PATH) >= used
    left = _ask_idle(KERAS_PATH, _what_the_last_keras_group_left)
    assert left == [(None, False, [])] * len(left)

    on_collective = _keras_estimator_on_tensorflows_collective()
    _fit(on_collective)
    assert not set(on_collective._group.call(lambda runner: os.getpid())) & used
    assert on_collective._group.call(lambda runner: runner.exchange_kind()) == ["collective"] * 2
    on_collective.shutdown()
    assert _pooled_pids(KERAS_PATH) >= used, "the used processes stay in the pool"

    again = _keras_estimator()
    _fit(again)
    assert set(again._group.call(lambda runner: os.getpid())) == used
    again.shutdown()


def _heartbeats_still_running() -> list[str]:
    """In a pooled worker: the heartbeat threads still running (each stops within a beat once
    handed back)."""
    beats = [thread for thread in threading.enumerate() if thread.name.startswith("zoo_lite-heartbeat")]
    for thread in beats:
        thread.join(timeout=5)
    return [thread.name for thread in beats if thread.is_alive()]


def _what_the_last_keras_group_left(runner) -> tuple:
    """In a pooled Keras worker: its runner, whether TensorFlow was told of a cluster, and the heartbeats."""
    return runner, "TF_CONFIG" in os.environ, _heartbeats_still_running()


def _what_the_last_group_left(runner) -> tuple:
    """In a pooled torch worker: its runner, whether torch's process group is still set up, and the heartbeats."""
    return runner, torch.distributed.is_initialized(), _heartbeats_still_running()


def test_a_dropped_torch_estimator_hands_its_workers_back_holding_nothing_of_its_group(cluster) -> None:
    est = _fitted_on_warm_workers(_torch_estimator)
    pids = set(est._group.call(lambda runner: os.getpid()))
    assert est._group.call(lambda runner: torch.distributed.is_initialized()) == [True, True]
    del est
    gc.collect()
    assert _pooled_pids(TORCH_PATH) == pids, "the dropped group's workers should be back in the pool"
    left = _ask_idle(TORCH_PATH, _what_the_last_group_left)
    assert left == [(None, False, [])] * 2
    wait_for_free_cpus(timeout_s=10)   # the group's CPU reservation went with it


def test_the_cpus_of_pooled_workers_are_held_in_ray_while_they_work(cluster) -> None:
    est = _fitted_on_warm_workers(_torch_estimator)
    assert ray.available_resources().get("CPU", 0.0) == 0.0
    with pytest.raises(WorkerTimeoutError, match=r"held by 2 CPUs reserved for warm workers of an earlier zoo_lite worker group"):
        wait_for_free_cpus(timeout_s=1)
    est.shutdown()
    wait_for_free_cpus(timeout_s=10)   # the reservation went with the group


def test_groups_share_their_nodes_board_actor_and_each_reads_only_its_own_board(cluster) -> None:
    first = _torch_estimator()
    _fit(first)
    first_board = first._group.progress_board
    assert ray.get(first_board.read(), timeout=10), "rank 0 published its progress"
    second = _torch_estimator()
    _fit(second)   # takes the CPUs: the first group ends and its board is dropped
    second_board = second._group.progress_board
    assert second_board.boards._actor_id == first_board.boards._actor_id, "one board actor per node, not per group"
    assert second_board.group != first_board.group
    assert ray.get(first_board.read(), timeout=10) == {}
    assert ray.get(second_board.read(), timeout=10) and ray.get(second_board.silent(30.0), timeout=10) == []
    second.shutdown()
    first.shutdown()


def test_turned_off_the_next_group_starts_its_own_workers_and_the_idle_ones_end(cluster, warm_workers_restored) -> None:
    est = _torch_estimator()
    _fit(est)
    est.shutdown()
    assert _pool().idle_count(TORCH_PATH) == 2
    idle = _pooled_pids(TORCH_PATH)

    OrcaContext.warm_workers = False
    est = _torch_estimator()
    _fit(est)
    assert est._group.from_pool == 0
    assert not set(est._group.call(lambda runner: os.getpid())) & idle
    est.shutdown()
    assert _gone(idle), "the idle workers should end once the pool is turned off"


def _gone(pids: set[int], timeout_s: float = 30.0) -> bool:
    import psutil

    deadline = time.monotonic() + timeout_s
    while any(psutil.pid_exists(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(psutil.pid_exists(pid) for pid in pids)


def test_where_memory_is_tight_the_pool_stays_empty_and_says_why(cluster, caplog) -> None:
    tight = WarmPool(cluster.address, min_available_mb=1e12)
    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"] and node["Resources"].get("CPU")]
    with caplog.at_level(logging.INFO, logger="zoo_lite.learn"):
        tight.fill(TORCH_PATH, nodes)
        deadline = time.monotonic() + 60
        while tight.idle_count(TORCH_PATH) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert tight.idle_count(TORCH_PATH) == 0
    assert any("no warm workers on Ray node" in line and "less than the 1000000000000 MiB a warm worker needs" in line
               for line in caplog.messages), caplog.messages
    tight.fill(TORCH_PATH, nodes)   # those nodes get none for a while
    assert tight.idle_count(TORCH_PATH) == 0
    tight.end()
