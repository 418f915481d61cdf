"""Benchmark: how Python workers talk to their JVM, for small XShards operations: loopback TCP
(Spark's default) against a Unix domain socket (``spark.python.unix.domain.socket.enabled``,
zoo_lite's default in local, local-cluster and standalone modes).

Small operations are where a job's fixed costs show: each op below runs on a cached XShards of
1,000 rows in 4 partitions, so its time is almost all Spark's per-job and per-task cost. The
bench_xshards pipeline (2M rows) runs too, to show what the setting does to a data-heavy job.

Claim (a default setting): small operations are faster over the Unix domain socket (``speed-up``,
TCP's time over the socket's, above 1.0x), and the data-heavy pipeline is no slower.

Each setting gets ``--passes`` fresh local contexts (``cores=2``), the settings taking turns; in
each context every op is timed ``--repeat`` times after one warm-up, ops interleaved. The results
of both settings are checked to be equal. Run from the repository root::

    .venv/bin/python benchmarks/bench_small_ops.py [--passes 2] [--repeat 10] [--rows 2000000]

It prints a markdown table; the figures are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import _xshards_pipeline as pipeline  # noqa: E402  (the pipeline's data and derive step)
from _harness import Timing, command_line, command_paragraph, log, rotated, ship_to_workers, timed  # noqa: E402
from zoo_lite.spark_settings import UNIX_SOCKET_ENABLED  # noqa: E402

TCP = "loopback TCP (Spark's default)"
UNIX = "Unix domain socket (zoo_lite's default)"
SETTINGS = {TCP: {UNIX_SOCKET_ENABLED: "false"}, UNIX: {}}
SMALL_ROWS = 1_000
PIPELINE = "bench_xshards pipeline"
PIPELINE_RUNS = 3  # timed runs of the big job per context: a few are enough


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=2, help="contexts per setting, the settings taking turns (default 2)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs of each small op per context after one warm-up (default 10)")
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the pipeline's CSV data; 0 leaves the pipeline out (default 2,000,000)")
    return parser.parse_args(argv)


def small_frame() -> pd.DataFrame:
    keys = np.arange(SMALL_ROWS)
    return pd.DataFrame({"k": keys % 7, "v": keys * 0.5, "s": np.where(keys % 3 == 0, "a", "b")})


def small_ops(sc: Any) -> dict[str, Callable[[], Any]]:
    """Each op returns a value that must not depend on the setting."""
    from zoo_lite.data import XShards

    shards = XShards.partition(small_frame(), num_shards=4).cache()
    return {
        "PySpark: 4 tasks of no work": lambda: sc.parallelize(range(4), 4).map(lambda x: x * 2).collect(),
        "len(shards)": lambda: len(shards),
        "shards['s'].unique()": lambda: sorted(shards["s"].unique().tolist()),
        "shards['v'].max()": lambda: shards["v"].max(),
        "len(shards.partition_by('k'))": lambda: len(shards.partition_by("k")),
        "shards.to_spark_df().count()": lambda: shards.to_spark_df().count(),
    }


def one_context(conf: dict[str, str], folder: Optional[str], repeat: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Seconds per op over ``repeat`` runs in a fresh context with ``conf``, and each op's result."""
    from zoo_lite import init_orca_context, stop_orca_context

    sc = init_orca_context(cluster_mode="local", cores=2, memory="6g", conf=conf)
    try:
        ops = small_ops(sc)
        if folder is not None:
            ops[PIPELINE] = lambda: pipeline.zoo_pipeline(folder, "pandas", 4)
        measured: dict[str, list[float]] = {name: [] for name in ops}
        results: dict[str, Any] = {}
        for run_index in range(repeat + 1):
            for name, op in ops.items():
                if name == PIPELINE and run_index > PIPELINE_RUNS:
                    continue
                seconds, results[name] = timed(op)
                if run_index:  # run 0 warms up the JVM and the Python workers
                    measured[name].append(seconds)
        return measured, results
    finally:
        stop_orca_context()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    ship_to_workers(pipeline)
    folder = None
    if args.rows:
        config = pipeline.BenchConfig(rows=args.rows, files=20)
        pipeline.ensure_data(config)
        folder = str(pipeline.data_folder(config))
    timings: dict[tuple[str, str], Timing] = {}
    expected: dict[str, Any] = {}
    for pass_index in range(args.passes):
        for setting in rotated(list(SETTINGS), pass_index):
            measured, results = one_context(SETTINGS[setting], folder, args.repeat)
            for op, result in results.items():
                assert expected.setdefault(op, result) == result, f"{op} gave {result!r} with {setting}, {expected[op]!r} before"
            log(f"pass {pass_index + 1} {setting}: " + ", ".join(f"{op} {min(v) * 1000:.0f} ms" for op, v in measured.items()))
            for op, values in measured.items():
                timings.setdefault((setting, op), Timing()).add(values)
    print(report(timings, args, argv))
    return 0


def report(timings: dict[tuple[str, str], Timing], args: argparse.Namespace, argv: Optional[Sequence[str]]) -> str:
    ops = list(dict.fromkeys(op for _, op in timings))
    note = (f"small ops on a cached XShards of {SMALL_ROWS:,} rows in 4 partitions; {args.passes} local contexts (cores=2) "
            f"per setting, taking turns, x {args.repeat} runs per op; the pipeline {PIPELINE_RUNS} runs per context on "
            f"{args.rows:,} rows; ms: best (median)")
    lines = [command_paragraph(command_line("bench_small_ops.py", argv), note), "",
             f"| operation | {TCP} | {UNIX} | speed-up: best (median) |", "|---|---:|---:|---:|"]
    for op in ops:
        tcp, unix = timings[TCP, op], timings[UNIX, op]
        cells = [f"{tcp.best * 1000:.0f} ({tcp.median * 1000:.0f})", f"{unix.best * 1000:.0f} ({unix.median * 1000:.0f})",
                 f"{tcp.best / unix.best:.2f}x ({tcp.median / unix.median:.2f}x)"]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
