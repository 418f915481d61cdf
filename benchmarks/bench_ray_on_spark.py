"""Benchmark: Ray on Spark start-up and the executor-side transfer of XShards into Ray.

Claims, each measured as a ratio against its reference in the same run:

1. Start-up on ``local-cluster[2,1,1024]``: zoo_lite's ``init_orca_context(init_ray_on_spark=True)``
   until a task has run on every Ray node takes <= 0.5x the time of Ray's own
   ``ray.util.spark.setup_ray_cluster`` on the same Spark, and <= 12 s. Every case runs in a fresh
   Python process, alternating, ``--repeat`` times. The Ray part is timed on a running Spark (the
   fair comparison); the whole from nothing (Spark included) is reported too.
2. Moving about 2 GB of ndarray shards from a SparkXShards into Ray actors: ``to_ray()`` (executor
   side) against collecting to the driver and ``ray.put``, >= 2x faster, with the driver's peak
   memory not growing with the data (sampled every 20 ms).

Run from the repository root::

    .venv/bin/python benchmarks/bench_ray_on_spark.py            # ~6 min on 2 cores
    .venv/bin/python benchmarks/bench_ray_on_spark.py --quick    # 1 start-up round, 400 MB

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from _harness import command_line, heading, log, run_python, targets_table

_STARTUP = textwrap.dedent("""
    import json, sys, time
    start = time.perf_counter()
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.context import ray_context_started_on_demand

    def task_on_every_node():
        @ray.remote(num_cpus=0)
        def node_id():
            return ray.get_runtime_context().get_node_id()
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        seen = ray.get([node_id.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote() for n in nodes])
        assert sorted(seen) == sorted(nodes) and len(nodes) == 2, (seen, nodes)

    system = sys.argv[1]
    if system == "zoo_lite, from nothing":
        init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True)
        task_on_every_node()
        ray_s, spark_s = None, None
    else:
        sc = init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g")
        sc.parallelize(range(2), 2).count()  # Python workers up, as a running application has them
        spark_s = time.perf_counter() - start
        ray_start = time.perf_counter()
        if system == "zoo_lite, on running Spark":
            ray_context_started_on_demand()
        else:
            from ray.util.spark import setup_ray_cluster
            setup_ray_cluster(max_worker_nodes=2, num_cpus_worker_node=1, num_gpus_worker_node=0,
                              include_dashboard=False, num_cpus_head_node=0)
            ray.init()
        task_on_every_node()
        ray_s = time.perf_counter() - ray_start
    total_s = time.perf_counter() - start
    print("RESULT " + json.dumps({"total_s": total_s, "ray_s": ray_s, "spark_s": spark_s}), flush=True)
    if system == "setup_ray_cluster":
        from ray.util.spark import shutdown_ray_cluster
        ray.shutdown(); shutdown_ray_cluster()
    stop_orca_context()
""")

STARTUP_SYSTEMS = ("zoo_lite, on running Spark", "setup_ray_cluster", "zoo_lite, from nothing")


def run_startup(system: str) -> dict[str, Any]:
    # as in an activated venv: setup_ray_cluster finds the `ray` script on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if system == "setup_ray_cluster":
        env["RAY_AUTH_MODE"] = "token"  # Ray 2.60 secures its clusters; the token is ~/.ray/auth_token
    return run_python(["-c", _STARTUP, system], system, prefix="RESULT ", env=env, timeout_s=600)


def startup_section(repeat: int) -> tuple[list[str], dict[str, dict[str, list[float]]]]:
    times: dict[str, dict[str, list[float]]] = {system: {"total_s": [], "ray_s": []} for system in STARTUP_SYSTEMS}
    for round_index in range(repeat):
        for system in STARTUP_SYSTEMS:
            measured = run_startup(system)
            log(f"start-up round {round_index + 1}/{repeat} {system}: {measured}")
            times[system]["total_s"].append(measured["total_s"])
            if measured["ray_s"] is not None:
                times[system]["ray_s"].append(measured["ray_s"])
    lines = ["| system | Ray start until a task ran on both nodes, s: best (median) | whole process, s: best (median) |", "|---|---:|---:|"]
    for system, measured in times.items():
        ray_cell = cell(measured["ray_s"]) if measured["ray_s"] else "-"
        lines.append(f"| {system} | {ray_cell} | {cell(measured['total_s'])} |")
    return lines, times


def cell(values: Sequence[float]) -> str:
    return f"{min(values):.2f} ({statistics.median(values):.2f})"


# -- transfer -----------------------------------------------------------------------------------

class PeakRss:
    """Samples this process's resident memory every 20 ms."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self.base = self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 2**20


@dataclass(frozen=True)
class Transfer:
    seconds: float
    driver_growth_mb: float


def make_shards(total_mb: int, num_partitions: int) -> Any:
    """About ``total_mb`` of float64 feature/label shards, generated on the executors."""
    from zoo_lite import OrcaContext
    from zoo_lite.data import SparkXShards

    rows_per_partition = total_mb * 2**20 // 8 // 65 // num_partitions

    def generate(index: int, _: Any) -> list[dict[str, np.ndarray]]:
        x = np.full((rows_per_partition, 64), float(index))
        return [{"x": x, "y": np.arange(rows_per_partition, dtype=np.float64)}]

    sc = OrcaContext.get_spark_context()
    return SparkXShards(sc.parallelize(range(num_partitions), num_partitions).mapPartitionsWithIndex(generate))


def consume_in_actors(actors: list[Any], per_actor: list[list[Any]]) -> float:
    """Each actor reads its partitions (zero-copy from its node's store) and sums them."""
    import ray

    return sum(ray.get([actor.total.remote(refs) for actor, refs in zip(actors, per_actor)]))


def zoo_transfer(shards: Any, actors: list[Any]) -> tuple[Transfer, float]:
    with PeakRss() as rss:
        start = time.perf_counter()
        in_ray = shards.to_ray()
        assigned = in_ray.assign_rows_to_actors(actors)
        total = consume_in_actors(actors, [[ref for ref, _, _ in slices] for slices in assigned])
        seconds = time.perf_counter() - start
    in_ray.release()
    return Transfer(seconds, rss.growth_mb), total


def driver_transfer(shards: Any, actors: list[Any]) -> tuple[Transfer, float]:
    import ray

    with PeakRss() as rss:
        start = time.perf_counter()
        refs = [ray.put([shard]) for shard in shards.collect()]
        total = consume_in_actors(actors, [refs[i::len(actors)] for i in range(len(actors))])
        seconds = time.perf_counter() - start
        del refs
    return Transfer(seconds, rss.growth_mb), total


def transfer_section(total_mb: int, repeat: int) -> tuple[list[str], dict[str, list[Transfer]]]:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

    store = f"{max(1, total_mb * 2 // 1024 + 1)}g"
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="2g", init_ray_on_spark=True,
                      object_store_memory=store, driver_memory="6g", conf={"spark.driver.maxResultSize": "0"})
    try:
        @ray.remote(num_cpus=0)
        class Consumer:
            def total(self, refs: list[Any]) -> float:
                return float(sum(shard["y"].sum() for partition in ray.get(refs) for shard in partition))

        node_ids = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n.get("NodeName") in {m["node_name"] for m in OrcaContext.get_ray_context().nodes}]
        actors = [Consumer.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote() for node in node_ids]
        shards = make_shards(total_mb, num_partitions=8)
        cases: dict[str, Callable[[], tuple[Transfer, float]]] = {
            "to_ray() from the executors": lambda: zoo_transfer(shards, actors),
            "collect to the driver + ray.put": lambda: driver_transfer(shards, actors),
        }
        results: dict[str, list[Transfer]] = {name: [] for name in cases}
        totals = set()
        for round_index in range(repeat):
            for name, case in cases.items():
                transfer, total = case()
                totals.add(round(total))
                results[name].append(transfer)
                log(f"transfer round {round_index + 1}/{repeat} {name}: {transfer}")
        assert len(totals) == 1, f"the cases disagree on the data: {totals}"
    finally:
        stop_orca_context()
    lines = [f"| {total_mb} MB of ndarray shards in 8 partitions into 2 actors | s: best (median) | driver RSS growth, MB: max |", "|---|---:|---:|"]
    for name, transfers in results.items():
        lines.append(f"| {name} | {cell([t.seconds for t in transfers])} | {max(t.driver_growth_mb for t in transfers):.0f} |")
    return lines, results


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds per case (default 3)")
    parser.add_argument("--transfer-mb", type=int, default=2048, help="data moved into the actors (default 2048)")
    parser.add_argument("--quick", action="store_true", help="1 round, 400 MB")
    args = parser.parse_args(argv)
    repeat, total_mb = (1, 400) if args.quick else (args.repeat, args.transfer_mb)
    command = command_line("bench_ray_on_spark.py", argv)

    startup_lines, startup = startup_section(repeat)
    transfer_lines, transfer = transfer_section(total_mb, repeat)

    zoo_ray = min(startup["zoo_lite, on running Spark"]["ray_s"])
    reference = min(startup["setup_ray_cluster"]["ray_s"])
    from_nothing = min(startup["zoo_lite, from nothing"]["total_s"])
    executor_side = min(t.seconds for t in transfer["to_ray() from the executors"])
    via_driver = min(t.seconds for t in transfer["collect to the driver + ray.put"])
    growth = max(t.driver_growth_mb for t in transfer["to_ray() from the executors"])
    targets = [
        ("Ray start-up, zoo_lite / setup_ray_cluster (on the same running Spark)", zoo_ray / reference, "<= 0.5x", zoo_ray / reference <= 0.5),
        ("Ray start-up of zoo_lite on a running Spark, s", zoo_ray, "<= 12 s", zoo_ray <= 12),
        ("init_orca_context(init_ray_on_spark=True) from nothing (Spark included), s", from_nothing, "<= 12 s", from_nothing <= 12),
        ("transfer speed-up, to_ray() vs collect + ray.put", via_driver / executor_side, ">= 2x", via_driver / executor_side >= 2),
        (f"driver RSS growth during to_ray() of {total_mb} MB, MB", growth, "flat (<< data)", growth < total_mb * 0.1),
    ]
    import platform

    import ray

    print("\n".join([
        *heading("bench_ray_on_spark", command),
        f"- machine: 2 cores, Python {platform.python_version()}, ray {ray.__version__}; `local-cluster[2,1,1024]` unless stated",
        f"- {repeat} round(s) per case, alternating; ratios use the best times", "",
        "### Targets", "", *targets_table(targets), "",
        "### Start-up", "", *startup_lines, "",
        "### Transfer into actors", "", *transfer_lines, "",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
