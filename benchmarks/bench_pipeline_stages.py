"""Benchmark: where bench_xshards' zoo_lite pipeline spends its time, action by action, against
dask and pandas timed in the same rounds.

For information, with no target of its own. The pipeline's three actions are timed apart:
``shards["location"].unique()`` (which runs the shuffle's map stage: read, derive, hash and cut,
and then reads the shuffle once), ``to_spark_df()`` (the shards' one pass: the shuffle read again,
Arrow batches, the disk cache, the schema records) and ``count()`` (Spark decoding the cached
batches). Spark's own ``range(rows).count()`` is timed as the least any ``count`` of that many rows
costs. If the first action alone is not faster than dask, no ``to_spark_df`` can bring the whole
pipeline to dask's time.

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

import _xshards_pipeline as pipeline  # noqa: E402  (the pipeline's data, derive step and references)
from _harness import (  # noqa: E402
    Case, Timing, command_line, command_paragraph, run_interleaved, ship_to_workers, timed_case, warm_up)

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
    by_key = read_csv(folder).transform_shard(pipeline.derive).partition_by(pipeline.KEY, num_partitions=4)
    if cache:
        by_key.cache()
    locations = by_key[pipeline.LOCATION].unique()
    unique_done = time.perf_counter()
    frame = by_key.to_spark_df()
    frame_done = time.perf_counter()
    counted = frame.count()
    if cache:
        by_key.uncache()
    end = time.perf_counter()
    assert (len(locations), counted) == (len(pipeline.CITIES), rows), (len(locations), counted)
    return {UNIQUE: unique_done - start, TO_SPARK_DF: frame_done - unique_done, COUNT: end - frame_done, WHOLE: end - start}


def zoo_case(folder: str, rows: int, prefix: str, cache: bool) -> Case:
    """One variant of zoo_lite's pipeline as a case timed action by action, its measures named after ``prefix``."""
    return lambda: ({prefix + step: value for step, value in zoo_actions(folder, rows, cache).items()}, None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

    ship_to_workers(pipeline)
    config = pipeline.BenchConfig(rows=args.rows, files=20)
    files = pipeline.ensure_data(config)
    folder = str(pipeline.data_folder(config))
    init_orca_context(cluster_mode="local", cores=2, memory="6g")
    try:
        spark = OrcaContext.get_spark_session()
        cases = {prefix: zoo_case(folder, args.rows, prefix, cache) for prefix, cache in VARIANTS.items()}
        cases[pipeline.DASK] = timed_case(pipeline.DASK, lambda: pipeline.dask_pipeline(files, 4))
        cases[pipeline.PANDAS] = timed_case(pipeline.PANDAS, lambda: pipeline.pandas_pipeline(files, 4))
        cases[RANGE_COUNT] = timed_case(RANGE_COUNT, lambda: spark.range(args.rows, numPartitions=4).count())
        warm_up(cases)  # the JVM, the Python workers and the page cache
        results = run_interleaved(cases, args.repeat, rotate=False)
        timings = {measure: timing for measures in results.values() for measure, timing in measures.items()}
    finally:
        stop_orca_context()
    print(report(timings, argv))
    return 0


def report(timings: dict[str, Timing], argv: Optional[Sequence[str]]) -> str:
    lines = [command_paragraph(command_line("bench_pipeline_stages.py", argv), "seconds: best (median)"), "",
             "| step | s: best (median) | dask's best / this |", "|---|---:|---:|"]
    dask = timings[pipeline.DASK].best
    for name, timing in timings.items():
        lines.append(f"| {name} | {timing.cell(2)} | {dask / timing.best:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
