"""Benchmark: where bench_xshards' zoo_lite pipeline spends its time, action by action, against
dask and pandas timed in the same rounds.

The pipeline's three actions are timed apart: ``shards["location"].unique()`` (which runs the
shuffle's map stage: read, derive, hash and cut, and then reads the shuffle once), ``to_spark_df()``
(the shards' one pass: the shuffle read again, Arrow batches, the disk cache, the schema records)
and ``count()`` (Spark decoding the cached batches). Spark's own ``range(rows).count()`` is timed
as the least any ``count`` of that many rows costs. If the first action alone is not faster than
dask, no ``to_spark_df`` can bring the whole pipeline to dask's time.

The same actions run once more with the partitioned shards cached (``cache()``, so the shuffle is
read once and the second action reads the cache): what reading the shuffle once instead of
twice is worth.

Run from the repository root (after bench_xshards made its data)::

    .venv/bin/python benchmarks/bench_pipeline_stages.py [--rows 2000000] [--repeat 5]

It prints a markdown table of seconds (best and median over the rounds after one warm-up).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_xshards as bench  # noqa: E402  (the pipeline's data, derive step and references)
from _timing import Timing, command_line, log, timed  # noqa: E402

UNIQUE = "map stage + unique()"
TO_SPARK_DF = "to_spark_df()"
COUNT = "count()"
WHOLE = "whole pipeline"
VARIANTS = {"zoo_lite: ": False, "zoo_lite, cache() after partition_by: ": True}
RANGE_COUNT = "Spark: range(rows).count(), the least a count costs"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the CSV data (default 2,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds after one warm-up (default 5)")
    return parser.parse_args(argv)


def zoo_actions(folder: str, rows: int, cache: bool) -> dict[str, float]:
    """Seconds of each action of the pipeline as bench_xshards runs it (``cache``: with the
    partitioned shards cached, and uncached after the count)."""
    from zoo_lite.data.pandas import read_csv

    start = time.perf_counter()
    by_key = read_csv(folder).transform_shard(bench.derive).partition_by(bench.KEY, num_partitions=4)
    if cache:
        by_key.cache()
    locations = by_key[bench.LOCATION].unique()
    unique_done = time.perf_counter()
    frame = by_key.to_spark_df()
    frame_done = time.perf_counter()
    counted = frame.count()
    if cache:
        by_key.uncache()
    end = time.perf_counter()
    assert (len(locations), counted) == (len(bench.CITIES), rows), (len(locations), counted)
    return {UNIQUE: unique_done - start, TO_SPARK_DF: frame_done - unique_done, COUNT: end - frame_done, WHOLE: end - start}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from pyspark import cloudpickle

    from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

    cloudpickle.register_pickle_by_value(bench)  # the workers cannot import the benchmarks folder
    config = bench.BenchConfig(rows=args.rows, files=20)
    files = bench.ensure_data(config)
    folder = str(bench.data_folder(config))
    init_orca_context(cluster_mode="local", cores=2, memory="6g")
    try:
        spark = OrcaContext.get_spark_session()
        timings: dict[str, Timing] = {}
        for round_index in range(args.repeat + 1):
            measured = {prefix + step: value for prefix, cache in VARIANTS.items()
                        for step, value in zoo_actions(folder, args.rows, cache).items()}
            measured[bench.DASK] = timed(lambda: bench.dask_pipeline(files, 4))[0]
            measured[bench.PANDAS] = timed(lambda: bench.pandas_pipeline(files, 4))[0]
            measured[RANGE_COUNT] = timed(lambda: spark.range(args.rows, numPartitions=4).count())[0]
            log(f"round {round_index}: " + ", ".join(f"{name} {value:.2f} s" for name, value in measured.items()))
            if round_index:  # round 0 warms up the JVM, the Python workers and the page cache
                for name, value in measured.items():
                    timings.setdefault(name, Timing()).add([value])
    finally:
        stop_orca_context()
    print(report(timings, argv))
    return 0


def report(timings: dict[str, Timing], argv: Optional[Sequence[str]]) -> str:
    lines = [f"Command: `{command_line('bench_pipeline_stages.py', argv)}` (seconds: best (median))", "",
             "| step | s: best (median) | dask's best / this |", "|---|---:|---:|"]
    dask = timings[bench.DASK].best
    for name, timing in timings.items():
        lines.append(f"| {name} | {timing.cell(2)} | {dask / timing.best:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
