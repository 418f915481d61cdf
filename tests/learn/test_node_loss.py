"""A fit survives a lost Ray node: the node's processes killed in local mode (Ray is restarted),
an executor JVM killed on local-cluster (that executor's node alone is replaced: the head, on the
driver's host, and the other node live on). The fit resumes on the nodes there are."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import psutil
import pytest
import torch
from torch import nn

from tests.at_once import selected_tests, started_at_once
from tests.learn import faults
from tests.learn.shards import shards_with_sizes
from tests.ray_on_spark.helpers import wait_until_gone
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.learn.pytorch import Estimator

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

EPOCHS = 3


def regression_shards():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    return shards_with_sizes({"x": x, "y": (x @ np.array([[1.0], [-1.0]], dtype=np.float32)).astype(np.float32)}, [24, 40])


def estimator() -> "Estimator":
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    return Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                loss=nn.MSELoss(), seed=2)


def weights(est) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in est.get_model().parameters()])


def kill_when_paused(marker: Path, kill: Callable[[], None]) -> threading.Thread:
    """Kill, from the driver, once a worker paused at its marker."""
    def watch() -> None:
        deadline = time.monotonic() + 300
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if marker.exists():
            kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def kill_node_processes(node: dict) -> None:
    """SIGKILL every process of a Ray node (below its watchdog): the node dies, its executor lives."""
    for process in psutil.Process(node["watchdog_pid"]).children(recursive=True):
        try:
            process.kill()
        except psutil.Error:
            pass


def fit_through_a_kill(tmp_path: Path, kill: Callable[[dict], None], node_index: int, restarts_ray: bool) -> tuple:
    expected = estimator()
    expected.fit(regression_shards(), epochs=EPOCHS, batch_size=16)
    expected_weights = weights(expected)
    expected.shutdown()

    old_context = OrcaContext.get_ray_context()
    victim = old_context.nodes[node_index]
    marker = tmp_path / "paused"
    watcher = kill_when_paused(marker, lambda: kill(victim))
    est = estimator()
    history = est.fit(regression_shards(), epochs=EPOCHS, batch_size=16,
                      callbacks=[faults.TorchPause(str(marker), rank=0, epochs_done=1, step=1)])
    watcher.join(timeout=10)
    assert marker.exists(), "no worker paused: the node was never killed"
    new_context = OrcaContext.get_ray_context()
    if restarts_ray:
        assert new_context is not old_context and new_context.address != old_context.address, "Ray was not restarted"
        old_processes = [psutil.Process(n["watchdog_pid"]) for n in old_context.nodes if psutil.pid_exists(n["watchdog_pid"])]
        assert not wait_until_gone(old_processes), "the lost cluster's watchdogs are still running"
    else:
        assert new_context is old_context, "Ray was restarted instead of replacing the lost node"
        assert victim["node_name"] not in {node["node_name"] for node in new_context.nodes}
    assert [h["epoch"] for h in history] == list(range(1, EPOCHS + 1))
    np.testing.assert_allclose(weights(est), expected_weights, rtol=0, atol=1e-5)
    est.shutdown()
    return victim, new_context


#: set in the fresh interpreter that runs a test of this module on its own (see run_in_a_fresh_process)
_IN_FRESH_PROCESS = "ZOO_LITE_TEST_IN_FRESH_PROCESS"


#: the tests that run in a fresh interpreter, started together at the first one's turn (their
#: clusters leave a third of the two cores idle, as tests/at_once.py says of the examples)
FRESH_PROCESS_TESTS = ("test_local_mode_restarts_a_killed_ray_node_and_the_fit_completes",
                       "test_local_cluster_restarts_ray_when_the_head_on_the_drivers_host_dies_and_the_fit_completes")
FRESH_PROCESS_TIMEOUT_S = 540


@pytest.fixture(scope="module")
def fresh_process_runs(request: pytest.FixtureRequest) -> Iterator[Callable[[str], None]]:
    """``fresh_process_runs(test name)``: wait for that test's run in a fresh interpreter; the
    module's selected ones start here, two at a time."""
    stop_orca_context()   # this process's own cluster (another fixture's) would compete with the children's
    selected = selected_tests(request)
    calls = {name: functools.partial(run_in_a_fresh_process, name) for name in FRESH_PROCESS_TESTS if name in selected}
    with started_at_once(calls, FRESH_PROCESS_TIMEOUT_S) as finished:
        yield finished


def run_in_a_fresh_process(test_id: str) -> None:
    """Run one test of this module in a new interpreter and fail with its output if it fails.

    After the whole suite's earlier modules, this driver process died silently right after the
    node kill in 3 of 3 local full runs (no Python or pytest output: the process was gone), while
    the same test passed on its own and after any one module tried. Whatever state of a long-lived
    driver that takes, a fresh process keeps the scenario itself under test (and shows its output
    if the driver dies) without taking the rest of the session down with it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{test_id}"],
                          capture_output=True, text=True, timeout=FRESH_PROCESS_TIMEOUT_S, cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, _IN_FRESH_PROCESS: "1"})
    assert done.returncode == 0, f"exit code {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"


def test_local_mode_restarts_a_killed_ray_node_and_the_fit_completes(tmp_path, request) -> None:
    if os.environ.get(_IN_FRESH_PROCESS) != "1":
        request.getfixturevalue("fresh_process_runs")(request.node.originalname)
        return
    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)
    try:
        _, new_context = fit_through_a_kill(tmp_path, kill_node_processes, node_index=0, restarts_ray=True)
        assert len(new_context.nodes) == 1
    finally:
        stop_orca_context()
    assert not wait_until_gone([psutil.Process(n["watchdog_pid"]) for n in new_context.nodes if psutil.pid_exists(n["watchdog_pid"])])


def test_local_cluster_restarts_ray_when_the_head_on_the_drivers_host_dies_and_the_fit_completes(tmp_path, request) -> None:
    """The head (GCS and a zero-CPU raylet, on the driver's host) is the one node whose loss
    takes every node along: Ray on Spark is started again, on the same executors, and the fit
    resumes. In a fresh interpreter, as the local-mode test, since the driver's Ray connection
    goes through the killed head."""
    if os.environ.get(_IN_FRESH_PROCESS) != "1":
        request.getfixturevalue("fresh_process_runs")(request.node.originalname)
        return
    stop_orca_context()
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True)
    try:
        old_context = OrcaContext.get_ray_context()
        head = old_context.driver_node
        executors = sorted(node["executor_pid"] for node in old_context.nodes)
        _, new_context = fit_through_a_kill(tmp_path, lambda node: kill_node_processes(head), 0, restarts_ray=True)
        assert new_context.driver_node["node_name"] != head["node_name"]
        assert sorted(node["executor_pid"] for node in new_context.nodes) == executors, "the executors were not reused"
    finally:
        stop_orca_context()
    assert not wait_until_gone([psutil.Process(n["watchdog_pid"]) for n in new_context.nodes if psutil.pid_exists(n["watchdog_pid"])])


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    """One local-cluster for the tests that lose an executor (each ends with its two nodes back);
    a 3 s heartbeat timeout, for the stopped JVM."""
    stop_orca_context()
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                      heartbeat_timeout_s=3)
    yield
    stop_orca_context()


def wait_for_two_nodes() -> list[dict]:
    """Spark starts a new executor for a lost one; its node follows as soon as it registers."""
    from zoo_lite.context import ray_context_started_on_demand

    deadline = time.monotonic() + 120
    while len(ray_context_started_on_demand(add_missing_nodes=True).nodes) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    return OrcaContext.get_ray_context().nodes


def test_local_cluster_replaces_only_the_node_of_a_killed_executor_and_the_fit_completes(tmp_path, local_cluster) -> None:
    ray_context = OrcaContext.get_ray_context()
    head_watchdog = psutil.Process(ray_context.driver_node["watchdog_pid"])
    survivor = ray_context.nodes[1]
    victim, new_context = fit_through_a_kill(tmp_path, lambda node: psutil.Process(node["executor_pid"]).kill(), 0,
                                             restarts_ray=False)
    assert head_watchdog.is_running() and psutil.Process(survivor["watchdog_pid"]).is_running()
    assert survivor in new_context.nodes, "the surviving executor's node was replaced too"
    assert len(wait_for_two_nodes()) == 2, "no node was started on the executor Spark gave back"
    assert not wait_until_gone([psutil.Process(victim["watchdog_pid"])] if psutil.pid_exists(victim["watchdog_pid"]) else [])


def stall_the_executor_jvm(node: dict, stalled: list[psutil.Process]) -> None:
    """SIGSTOP an executor JVM alone: its Ray node and the node's watchdog run on (the whole
    host falling silent, heartbeats and all, is the cut link of tests/cluster), but Spark can run
    nothing on the executor, and by itself would notice only after spark.network.timeout (120 s)."""
    executor = psutil.Process(node["executor_pid"])
    executor.send_signal(signal.SIGSTOP)
    stalled.append(executor)


def test_local_cluster_drops_an_executor_whose_jvm_stopped_and_the_fit_completes_without_waiting_for_it(
        tmp_path, caplog, local_cluster) -> None:
    stalled: list[psutil.Process] = []
    try:
        survivor = OrcaContext.get_ray_context().nodes[1]
        with caplog.at_level("WARNING", logger="zoo_lite"):
            victim, new_context = fit_through_a_kill(tmp_path, lambda node: stall_the_executor_jvm(node, stalled), 0,
                                                     restarts_ray=False)
        assert stalled, "nothing was stalled"
        assert survivor in new_context.nodes
        lost = [record.getMessage() for record in caplog.records if victim["node_name"] in record.getMessage()]
        assert any("its executor JVM was stopped for" in line and "heartbeat_timeout_s=3" in line for line in lost), lost
        assert any(f"executor(s) ['{victim['executor_id']}']" in record.getMessage() and "dropped" in record.getMessage()
                   for record in caplog.records), [record.getMessage() for record in caplog.records]
        assert not wait_until_gone([psutil.Process(victim["watchdog_pid"])] if psutil.pid_exists(victim["watchdog_pid"]) else []), \
            "the stopped executor's Ray node still runs"
    finally:
        for process in stalled:
            try:
                process.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass
    # Spark was told to drop the executor: its worker ends the JVM once it runs again
    assert not wait_until_gone([process for process in stalled if process.is_running()], timeout_s=60)
    assert len(wait_for_two_nodes()) == 2, "no node was started on the executor Spark gave back"
