"""Benchmark: Spark's shuffle settings for XShards' shuffles of pickled byte arrays: Spark's
defaults (Java serialization, the bypass-merge writer for up to 200 partitions, which zoo_lite
keeps) against the Kryo serializer, the serialized sort shuffle (``bypassMergeThreshold=0``) and
both.

Two measures per setting, each in a fresh local context (``cores=2``, ``memory="6g"``):

- *byte shuffle*: 180 MB of random doubles, pickled byte arrays (2 map tasks x 4 pieces), moved by
  PySpark's ``partitionBy`` and read back: what every XShards shuffle does with its pickled pieces;
- *pipeline*: bench_xshards' whole zoo_lite pipeline (read_csv, derive, partition_by, unique,
  to_spark_df().count()) on its 2M-row data.

Claim (a setting kept): no other setting is faster than Spark's defaults, which zoo_lite keeps, by
more than the machine's noise; the ``speed-up`` columns are each setting's against the defaults.

The settings take turns (``--passes`` contexts each, in rotation), a few timed rounds per context
after one warm-up. Run from the repository root::

    .venv/bin/python benchmarks/bench_shuffle_settings.py [--rows 2000000] [--passes 2] [--repeat 3]

It prints a markdown table; the figures are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xshards_pipeline as pipeline  # noqa: E402  (the pipeline's data and derive step)
from _harness import (  # noqa: E402
    Timing, command_line, command_paragraph, log, rotated, run_interleaved, ship_to_workers, timed_case, warm_up)

JAVA = "org.apache.spark.serializer.JavaSerializer"
KRYO = "org.apache.spark.serializer.KryoSerializer"
SETTINGS = {
    "Spark's defaults (Java, bypass-merge writer)": {"spark.serializer": JAVA, "spark.shuffle.sort.bypassMergeThreshold": "200"},
    "Kryo only": {"spark.serializer": KRYO, "spark.shuffle.sort.bypassMergeThreshold": "200"},
    "serialized sort only (bypassMergeThreshold=0)": {"spark.serializer": JAVA, "spark.shuffle.sort.bypassMergeThreshold": "0"},
    "both (Kryo, bypassMergeThreshold=0)": {"spark.serializer": KRYO, "spark.shuffle.sort.bypassMergeThreshold": "0"},
}
MEASURES = ("byte shuffle", "pipeline")
PIECE_BYTES = 22 * 2**20 + 2**19  # 4 pieces x 2 map tasks = 180 MB


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the pipeline's CSV data (default 2,000,000)")
    parser.add_argument("--passes", type=int, default=2, help="contexts per setting, the settings taking turns (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per context after one warm-up (default 3)")
    return parser.parse_args(argv)


def random_pieces(map_index: int, _: object) -> list[tuple[int, bytes]]:
    import numpy as np

    blob = np.random.default_rng(map_index).standard_normal(PIECE_BYTES // 8).tobytes()
    return [(target, blob) for target in range(4)]


def byte_shuffle(sc: "object") -> int:
    moved = sc.parallelize(range(2), 2).mapPartitionsWithIndex(random_pieces).partitionBy(4, pipeline.same_target)
    return moved.map(lambda pair: len(pair[1])).sum()


def check_result(measure: str, result: Any) -> None:
    """The byte shuffle moved every byte once; the pipeline found every location."""
    if measure == "byte shuffle":
        assert result == 8 * PIECE_BYTES, "the shuffle lost or repeated bytes"
    else:
        assert result.locations == len(pipeline.CITIES), result


def one_context(conf: dict[str, str], folder: str, repeat: int) -> dict[str, list[float]]:
    """Seconds per measure over ``repeat`` rounds in a fresh context with ``conf``."""
    from zoo_lite import init_orca_context, stop_orca_context

    sc = init_orca_context(cluster_mode="local", cores=2, memory="6g", conf=conf)
    try:
        cases = {"byte shuffle": timed_case("byte shuffle", lambda: byte_shuffle(sc)),
                 "pipeline": timed_case("pipeline", lambda: pipeline.zoo_pipeline(folder, "pandas", 4))}
        warm_up(cases)  # the JVM and the Python workers
        results = run_interleaved(cases, repeat, rotate=False, check=check_result)
        return {measure: results[measure][measure].seconds for measure in MEASURES}
    finally:
        stop_orca_context()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    ship_to_workers(pipeline)
    config = pipeline.BenchConfig(rows=args.rows, files=20)
    pipeline.ensure_data(config)
    folder = str(pipeline.data_folder(config))
    timings = {(name, measure): Timing() for name in SETTINGS for measure in MEASURES}
    for pass_index in range(args.passes):
        for name in rotated(list(SETTINGS), pass_index):
            measured = one_context(SETTINGS[name], folder, args.repeat)
            log(f"pass {pass_index + 1} {name}: " + ", ".join(f"{m} {min(v):.2f} s" for m, v in measured.items()))
            for measure, values in measured.items():
                timings[name, measure].add(values)
    print(report(timings, args, argv))
    return 0


def report(timings: dict[tuple[str, str], Timing], args: argparse.Namespace, argv: Optional[Sequence[str]]) -> str:
    spark = next(iter(SETTINGS))
    note = (f"byte shuffle: 180 MB of pickled random doubles, 2 map tasks into 4; pipeline: bench_xshards' zoo_lite pipeline "
            f"on {args.rows:,} rows; {args.passes} contexts per setting x {args.repeat} rounds; best, median in brackets")
    lines = [command_paragraph(command_line("bench_shuffle_settings.py", argv), note), "",
             "| setting | byte shuffle s | speed-up | pipeline s | speed-up |", "|---|---:|---:|---:|---:|"]
    for name in SETTINGS:
        cells = []
        for measure in MEASURES:
            timing = timings[name, measure]
            cells += [timing.cell(2), f"{timings[spark, measure].best / timing.best:.2f}x"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
