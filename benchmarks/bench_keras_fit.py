"""Benchmark: data-parallel training of an MLP with the Keras 3 Estimator, against plain Keras.

Data: ``--rows`` (200,000) rows of 64 float features (one ``array<float>`` column) and a class
label (10 classes), a cached Spark DataFrame on ``init_orca_context(cluster_mode="local", cores=2)``:
the same data as ``bench_torch_fit.py``. Model: ``keras.Sequential`` MLP 64 -> 128 -> 128 -> 10,
``SparseCategoricalCrossentropy(from_logits=True)``, SGD with momentum, global batch ``--batch``
(8192, ``bench_torch_fit.py``'s ``--large-batch``).

Cases, interleaved round by round, on the same rows and batches:

- (a) plain single-process Keras ``model.fit`` on in-memory NumPy arrays, with 2 threads and with
  1 thread. TensorFlow sizes its thread pools once, before it runs anything, so each runs in a
  child process (this script with ``--reference-threads``);
- (b) zoo_lite ``Estimator.from_keras``, 1 worker (2 threads);
- (c) zoo_lite, 2 workers with 1 thread each.

Epoch times come from a callback that writes each epoch's wall time to a file: in (a) inside
``model.fit``, in (b) and (c) on rank 0 (where zoo_lite runs such callbacks). (a) drops its first
epoch (tracing); (b) and (c) time a fit after two others on the same Estimator, whose steps are
already traced and whose workers already hold the rows.

Claims (issue text), each a ratio measured in the same run:

- epoch time (b) / (a, 2 threads) <= 1.15;
- throughput (c) / (a, 1 thread) >= 1.6;
- for information: the first fit, ``from_keras`` to the return of ``fit(epochs=1)`` (workers start,
  DataFrame -> workers, one epoch) on an already running Ray, and a second ``fit(epochs=1)`` on the
  same DataFrame.

Run from the repository root::

    .venv/bin/python benchmarks/bench_keras_fit.py            # ~5 min on 2 cores
    .venv/bin/python benchmarks/bench_keras_fit.py --quick    # 1 round, 50,000 rows

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
from _harness import (Timing, command_line, epoch_timer, heading, load_line, log, read_epoch_times, run_python, targets_table,
                      timed, zoo_lite_commit)
from _mlp_data import CLASSES, FEATURES, KERAS_LEARNING_RATE, frame_arrays, make_dataframe, make_keras_mlp

# No TensorFlow or Keras import at module level: the (a) child must size TensorFlow's thread pools
# before anything starts its runtime.


def save_arrays(frame: Any, path: str) -> None:
    """The frame's rows as ``x`` (float32, rows x FEATURES) and ``y`` (int64) in an ``.npz`` file,
    which the (a) child processes read."""
    x, y = frame_arrays(frame)
    np.savez(path, x=x, y=y)


# -- (a) plain Keras, in a child process -----------------------------------------------------------------

def reference_child(threads: int, data_path: str, batch: int, epochs: int) -> None:
    """The child's work: size TensorFlow's pools, then ``model.fit`` on the arrays; prints the epoch
    times as JSON on the last line of stdout."""
    import tensorflow as tf

    # the settings the zoo_lite runner gives a worker of ``threads`` threads
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(min(2, threads))
    data = np.load(data_path)
    with tempfile.TemporaryDirectory() as folder:
        times_path = os.path.join(folder, "epochs.txt")
        make_keras_mlp().fit(data["x"], data["y"], batch_size=batch, epochs=epochs, shuffle=True, verbose=0,
                         callbacks=[epoch_timer(times_path)])
        print(json.dumps(read_epoch_times(times_path)), flush=True)


def plain_epochs(data_path: str, batch: int, epochs: int, threads: int) -> list[float]:
    """Epoch times of plain Keras ``model.fit`` in a child process with ``threads`` threads."""
    return run_python([os.path.abspath(__file__), "--reference-threads", str(threads), "--reference-data", data_path,
                       "--batch", str(batch), "--epochs", str(epochs)],
                      f"the plain Keras reference ({threads} threads)", env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


# -- (b), (c) zoo_lite -------------------------------------------------------------------------------------

@dataclass
class ZooRun:
    first_fit_s: float
    second_fit_s: float
    epoch_s: list[float]


def zoo_run(frame: Any, workers_per_node: int, batch: int, epochs: int, folder: str) -> ZooRun:
    """First fit (1 epoch) from ``from_keras`` on, a second 1-epoch fit on the same frame, then a
    fit of ``epochs`` epochs timed per epoch."""
    from zoo_lite.learn.tf2 import Estimator

    model = make_keras_mlp()
    fit_args = dict(batch_size=batch, feature_cols=["features"], label_cols=["label"], verbose=0)
    times_path = os.path.join(folder, f"epochs-{workers_per_node}-{time.time_ns()}.txt")
    started = time.perf_counter()
    est = Estimator.from_keras(model=model, workers_per_node=workers_per_node, seed=0)
    try:
        est.fit(frame, epochs=1, **fit_args)
        first_fit_s = time.perf_counter() - started
        second_fit_s, _ = timed(lambda: est.fit(frame, epochs=1, **fit_args))
        est.fit(frame, epochs=epochs, callbacks=[epoch_timer(times_path)], **fit_args)
        epoch_s = read_epoch_times(times_path)
        if len(epoch_s) != epochs:   # the timer must run once per epoch, on rank 0 only
            raise RuntimeError(f"expected {epochs} epoch times from rank 0, got {len(epoch_s)}: {epoch_s}")
        return ZooRun(first_fit_s, second_fit_s, epoch_s)
    finally:
        est.shutdown()


# -- the report --------------------------------------------------------------------------------------------

def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=8192, help="global batch size (default 8192)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs per timed fit (default 4)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="1 round on 50,000 rows")
    # the (a) child's mode
    parser.add_argument("--reference-threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reference-data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: (a) drops its first epoch")
    return args


def run_rounds(args: argparse.Namespace, rows: int, repeat: int) -> tuple[dict[str, Timing], float]:
    """Every case, ``repeat`` rounds interleaved, on one zoo_lite context; and Ray's start time."""
    from pyspark.sql import SparkSession

    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.context import ray_context_started_on_demand

    init_orca_context(cluster_mode="local", cores=2, memory="4g")
    try:
        spark = SparkSession.builder.getOrCreate()
        log(f"building {rows:,} rows")
        frame = make_dataframe(spark, rows)
        # the first fit is measured on a running Ray, as a user's second Estimator meets it
        ray_start_s, _ = timed(ray_context_started_on_demand)
        cases = {name: Timing() for name in ("a2", "a1", "b", "c", "first_b", "first_c", "second_b", "second_c")}
        with tempfile.TemporaryDirectory(prefix="bench-keras-") as folder:
            data_path = os.path.join(folder, "rows.npz")
            save_arrays(frame, data_path)
            for round_index in range(repeat):
                log(f"round {round_index + 1}/{repeat}")
                cases["a2"].add(plain_epochs(data_path, args.batch, args.epochs, 2)[1:])
                cases["a1"].add(plain_epochs(data_path, args.batch, args.epochs, 1)[1:])
                for name, workers in (("b", 1), ("c", 2)):
                    run = zoo_run(frame, workers, args.batch, args.epochs, folder)
                    cases[name].add(run.epoch_s)
                    cases[f"first_{name}"].add([run.first_fit_s])
                    cases[f"second_{name}"].add([run.second_fit_s])
                log(" ".join(f"{k}={v.best:.2f}" for k, v in cases.items() if v.seconds))
        return cases, ray_start_s
    finally:
        stop_orca_context()


def report(args: argparse.Namespace, argv: Optional[Sequence[str]], rows: int, repeat: int, cases: dict[str, Timing],
           ray_start_s: float, load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    import keras
    import pyspark
    import ray
    import tensorflow as tf

    b_vs_a2 = cases["b"].best / cases["a2"].best
    c_vs_a1 = cases["a1"].best / cases["c"].best
    targets = [
        ("epoch time, (b) zoo_lite 1 worker / (a) plain Keras, 2 threads", b_vs_a2, "<= 1.15", b_vs_a2 <= 1.15),
        ("throughput, (c) zoo_lite 2 workers x 1 thread / (a) plain Keras, 1 thread", c_vs_a1, ">= 1.6", c_vs_a1 >= 1.6),
        ("(throughput, (c) zoo_lite 2 workers x 1 thread / (a) plain Keras, 2 threads)",
         cases["a2"].best / cases["c"].best, "info", True),
        ("(this machine's ceiling in this run: (a) 2 threads / (a) 1 thread, throughput)",
         cases["a1"].best / cases["a2"].best, "info", True),
        ("first fit, (c) 2 workers: `from_keras` to the return of `fit(epochs=1)`, s", cases["first_c"].best, "info", True),
        ("second fit on the same DataFrame, (c) 2 workers: call to return of `fit(epochs=1)`, s",
         cases["second_c"].best, "info", True),
    ]
    throughput = {name: rows / samples.best for name, samples in cases.items() if samples.seconds}
    commit = zoo_lite_commit()
    return "\n".join([
        *heading("bench_keras_fit", command_line("bench_keras_fit.py", argv)),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, tensorflow {tf.__version__}, "
        f"keras {keras.__version__}, pyspark {pyspark.__version__}, ray {ray.__version__}; zoo_lite at commit {commit}",
        f"- data: {rows:,} rows x {FEATURES} float features (`array<float>`) + int label, a cached Spark DataFrame in 4 "
        f"partitions on `init_orca_context(cluster_mode=\"local\", cores=2)`; Ray started on demand in {ray_start_s:.1f} s",
        f"- model: Keras MLP {FEATURES}-128-128-{CLASSES}, SGD(learning_rate={KERAS_LEARNING_RATE}, momentum=0.9), sparse "
        f"cross-entropy from logits; global batch {args.batch}; {args.epochs} epochs per timed fit",
        f"- {repeat} round(s), cases interleaved; (a) in a child process per case and round, its first epoch dropped; "
        "(b), (c) every epoch of a third fit on the same Estimator; ratios use the best time, median in brackets",
        load_line(load_before, load_after),
        "", "### Targets", "", *targets_table(targets), "",
        "### Epochs", "", "| case | epoch time, s: best (median) | rows/s (best) |", "|---|---:|---:|",
        *[f"| {label}, batch {args.batch} | {cases[name].cell()} | {throughput.get(name, 0):,.0f} |" for name, label in (
            ("a2", "(a) plain Keras `model.fit`, 2 threads"), ("a1", "(a) plain Keras `model.fit`, 1 thread"),
            ("b", "(b) zoo_lite, 1 worker x 2 threads"), ("c", "(c) zoo_lite, 2 workers x 1 thread"))], "",
        "### End to end", "", "| measure | s: best (median) |", "|---|---:|",
        f"| first fit, (b) 1 worker: `from_keras`, workers start, DataFrame -> workers, 1 epoch | {cases['first_b'].cell(2)} |",
        f"| first fit, (c) 2 workers: `from_keras`, workers start, DataFrame -> workers, 1 epoch | {cases['first_c'].cell(2)} |",
        f"| second fit on the same DataFrame, (b), call to return, 1 epoch | {cases['second_b'].cell(2)} |",
        f"| second fit on the same DataFrame, (c), call to return, 1 epoch | {cases['second_c'].cell(2)} |",
        "",
    ])


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.reference_threads is not None:
        reference_child(args.reference_threads, args.reference_data, args.batch, args.epochs)
        return 0
    rows, repeat = (50_000, 1) if args.quick else (args.rows, args.repeat)
    load_before = os.getloadavg()
    cases, ray_start_s = run_rounds(args, rows, repeat)
    print(report(args, argv, rows, repeat, cases, ray_start_s, load_before, os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
