"""Finding the processes of one Ray on Spark cluster, by the pids its watchdogs report."""

from __future__ import annotations

import os
import time
from typing import Any, Iterable

import psutil

from zoo_lite import OrcaContext, stop_orca_context


def ray_processes(ray_context: Any) -> list[psutil.Process]:
    """Every watchdog of ``ray_context`` and every process below it (the node's Ray processes)."""
    found: list[psutil.Process] = []
    for node in [*ray_context.nodes, *([ray_context.driver_node] if ray_context.driver_node else [])]:
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


def run_on_every_node() -> dict[str, str]:
    """Run one task pinned to each alive node; return node id -> the node id the task saw."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def node_id() -> str:
        return ray.get_runtime_context().get_node_id()

    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"] and node["Resources"].get("CPU", 0) > 0]
    seen = ray.get([node_id.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote() for n in nodes], timeout=120)
    return dict(zip(nodes, seen))


def assert_nodes_match_executors(expected_nodes: int, cpus_per_node: int) -> None:
    import ray

    ray_context = OrcaContext.get_ray_context()
    assert ray_context is not None and len(ray_context.nodes) == expected_nodes
    alive_nodes = [node for node in ray.nodes() if node["Alive"]]
    # besides the executors' nodes, the head on the driver's host, with no CPUs (not in local mode)
    heads = [node for node in alive_nodes if node["Resources"].get("CPU", 0) == 0]
    assert [node["NodeName"] for node in heads] == ([ray_context.driver_node["node_name"]] if ray_context.driver_node else [])
    alive_nodes = [node for node in alive_nodes if node not in heads]
    assert len(alive_nodes) == expected_nodes
    assert all(node["Resources"]["CPU"] == cpus_per_node for node in alive_nodes)
    ran = run_on_every_node()
    assert len(ran) == expected_nodes and all(key == value for key, value in ran.items())


def stop_and_check_clean(ray_context) -> None:
    processes = ray_processes(ray_context)
    assert processes, "the Ray nodes' processes should be visible before the stop"
    stop_orca_context()
    left = wait_until_gone(processes, timeout_s=30)
    assert not left, f"Ray processes left after stop_orca_context(): {describe(left)}"
    assert not any(os.path.exists(node["temp_dir"]) for node in ray_context.nodes)
