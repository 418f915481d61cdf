"""Benchmark: ``to_spark_df`` decoded by Spark through zoo_lite's JVM helper against the Python
(``mapInArrow``) decoder it replaced, on the pipeline's own shards.

The input is ``bench_xshards.py``'s data (2M rows, 20 CSV files): ``read_csv`` (default backend)
-> ``transform_shard(derive)`` -> ``partition_by`` into 4, its shuffle written once before timing.
Each round times ``to_spark_df()`` (the shards' one pass, cached on disk, and the schema records)
and then ``count()`` and ``collect``-free ``selectExpr("sum(total)")`` on the DataFrame, for each
decoder, cases interleaved.

Claim (a design choice): the JVM decoder makes ``to_spark_df`` + ``count`` faster than the Python
decoder (the report's last line, Python's time over the JVM's, above 1.0x).

Run from the repository root::

    .venv/bin/python benchmarks/bench_to_spark_df.py [--rows 2000000] [--repeat 5]

It prints a markdown table; the figures are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _xshards_pipeline as pipeline  # noqa: E402  (the pipeline's data and derive step)
from _harness import Case, Timing, command_line, command_paragraph, run_interleaved, ship_to_workers, timed, warm_up  # noqa: E402

DECODERS = ("jvm", "python")
STEPS = ("to_spark_df", "count", "sum")


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the pipeline's CSV data (default 2,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per decoder after one warm-up (default 5)")
    return parser.parse_args(argv)


def one_round(by_key: "object", decoder: str) -> dict[str, float]:
    """Seconds of to_spark_df, count and a sum with ``decoder``."""
    from zoo_lite import OrcaContext
    from zoo_lite.data.convert import pandas_rdd_to_spark_df

    session = OrcaContext.get_spark_session()
    seconds: dict[str, float] = {}
    seconds["to_spark_df"], df = timed(lambda: pandas_rdd_to_spark_df(by_key.rdd, session, decoder=decoder))
    seconds["count"], rows = timed(df.count)
    seconds["sum"], _ = timed(lambda: df.selectExpr("sum(total)").collect())
    assert rows == by_key.rdd.map(len).sum(), "a decoder lost or repeated rows"
    return seconds


def decoder_case(by_key: "object", decoder: str) -> Case:
    """One round of ``decoder`` as a case: its steps' seconds, no result (``one_round`` checks the rows)."""
    return lambda: (one_round(by_key, decoder), None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.data.pandas import read_csv

    ship_to_workers(pipeline)
    config = pipeline.BenchConfig(rows=args.rows, files=20)
    pipeline.ensure_data(config)
    init_orca_context(cluster_mode="local", cores=2, memory="6g")
    try:
        by_key = read_csv(str(pipeline.data_folder(config))).transform_shard(pipeline.derive).partition_by(pipeline.KEY, num_partitions=4)
        by_key.rdd.map(len).sum()  # the shuffle's map side, written once for every round
        cases = {decoder: decoder_case(by_key, decoder) for decoder in DECODERS}
        warm_up(cases)
        results = run_interleaved(cases, args.repeat)  # the decoders alternate
        timings = {(decoder, step): results[decoder][step] for decoder in DECODERS for step in STEPS}
    finally:
        stop_orca_context()
    print(report(timings, args))
    return 0


def report(timings: dict[tuple[str, str], Timing], args: argparse.Namespace) -> str:
    whole: Callable[[str], float] = lambda decoder: sum(timings[decoder, step].best for step in ("to_spark_df", "count"))
    note = f"{args.rows:,} rows after partition_by into 4; best of {args.repeat} interleaved rounds, median in brackets"
    lines = [command_paragraph(command_line("bench_to_spark_df.py", None), note), "",
             "| decoder | to_spark_df s | count s | sum(total) s |", "|---|---:|---:|---:|"]
    for decoder in DECODERS:
        lines.append(f"| {decoder} | " + " | ".join(timings[decoder, step].cell(2) for step in STEPS) + " |")
    lines += ["", f"to_spark_df + count, Python decoder / JVM decoder: {whole('python') / whole('jvm'):.2f}x"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
