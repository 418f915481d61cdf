"""Benchmark: how a shuffled pandas piece should travel, pickled or as Arrow IPC.

``partition_by`` cuts every shard into pieces that go through Spark's shuffle as bytes, are read
back on the other side and joined into one frame. This times, on the benchmark's own data (one
CSV file of ``bench_xshards.py``'s, 100k rows: ints, floats and a city-name string column), the
way there and back for each format, best of ``--repeat`` rounds:

- pickle (protocol 5, what Spark's CloudPickleSerializer writes for a pandas frame);
- Arrow IPC: ``RecordBatch.from_pandas`` + stream writer, then stream reader + ``to_pandas``;
- Arrow IPC read without ``to_pandas`` (what a consumer that stays in Arrow would pay).

Claim (a design choice): pickle, the format zoo_lite's shuffle keeps, is the quickest there and
back; the ``vs pickle`` column is each format's time over pickle's (above 1.00x keeps pickle).

Run from the repository root::

    .venv/bin/python benchmarks/bench_piece_format.py

It prints a markdown table; the figures are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import pandas as pd
import pyarrow as pa
from _harness import command_line, heading

DEFAULT_FILE = Path(__file__).parent / "_data" / "rows2000000_files20_seed7_v1" / "part-00000.csv"


def best_seconds(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def to_ipc(frame: pd.DataFrame) -> pa.Buffer:
    batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


def from_ipc(buffer: pa.Buffer) -> pa.Table:
    return pa.ipc.open_stream(buffer).read_all()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a CSV file (default: bench_xshards' first 2M-row file)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    if not args.file.exists():
        parser.error(f"{args.file} does not exist: run benchmarks/bench_xshards.py --rows 2000000 once to generate it")
    frame = pd.read_csv(args.file)
    pickled, ipc = pickle.dumps(frame, protocol=5), to_ipc(frame)
    rows = [
        ("pickle (protocol 5)", best_seconds(lambda: pickle.dumps(frame, protocol=5), args.repeat),
         best_seconds(lambda: pickle.loads(pickled), args.repeat), len(pickled)),
        ("Arrow IPC, back to pandas", best_seconds(lambda: to_ipc(frame), args.repeat),
         best_seconds(lambda: from_ipc(ipc).to_pandas(), args.repeat), ipc.size),
        ("Arrow IPC, staying in Arrow", best_seconds(lambda: to_ipc(frame), args.repeat),
         best_seconds(lambda: from_ipc(ipc), args.repeat), ipc.size),
    ]
    reference = rows[0][1] + rows[0][2]
    print("\n".join(heading("bench_piece_format", command_line("bench_piece_format.py", argv),
                             f"{len(frame):,} rows x {frame.shape[1]} columns, pandas {pd.__version__}, "
                             f"pyarrow {pa.__version__}; best of {args.repeat}")))
    print("| format | write ms | read ms | write + read ms | vs pickle | MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, write, read, size in rows:
        print(f"| {name} | {write * 1e3:.1f} | {read * 1e3:.1f} | {(write + read) * 1e3:.1f} | "
              f"{(write + read) / reference:.2f}x | {size / 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
