"""Benchmark: inference with a model as a Spark SQL function (``est.spark_udf``), against its references.

Data: ``--rows`` (200,000) rows of 64 float features (one ``array<float>`` column), the cached
Spark DataFrame of the training benchmarks (``_mlp_data``, 4 partitions; its features column
``localCheckpoint``'d, so that no query plans the generator's expressions again) on
``init_orca_context(cluster_mode="local", cores=2)``; no Ray (predict and the UDF run in Spark tasks).
Model: bench_torch_fit's MLP 64 -> ``--hidden`` (128) -> ``--hidden`` -> 10 with random weights
(no training: throughput does not depend on the weights), made a zoo_lite PyTorch Estimator with
``Estimator.from_torch(model=..., loss=...)``; ``--batch`` (1024) rows per model call everywhere.

Cases, interleaved round by round in one process, after one untimed warm-up round:

- (a) ``est.spark_udf(batch_size=B, input_shapes=[(64,)])`` in ``df.select(udf("features"))``;
- (b) ``est.predict(df, feature_cols=["features"], batch_size=B)``;
- (c) PySpark's ``pyspark.ml.functions.predict_batch_udf`` with a ``make_predict_fn`` that loads the
  same model from ``torch.save``'d bytes in a broadcast (1 torch thread per task, as zoo_lite sets);
- (d) a single-process loop on the driver over the same rows as NumPy arrays (collected once,
  before timing), the same model in batches of B under ``torch.no_grad()``, with 1 torch thread
  and with all threads;
- (e) for reference, the floor of (a)-(c): a ``mapInArrow`` that reads the features and gives 10
  zeros per row, with no model.

Every Spark case ends in the same action, ``agg(sum(array_max(prediction)))``, which computes
every prediction on the executors and brings one number back; (d) computes the same sum, and the
four sums are checked to agree. One extra untimed UDF query with a model that logs its process id
on each unpickling counts the model loads per Python worker.

Claims (issue 16), each a ratio measured in the same run:

- throughput (a) / (c) >= 1.0;
- throughput (a) / (d, 1 thread) >= 1.5;
- (a) / (b), (a) / (e) for information.

Run from the repository root::

    .venv/bin/python benchmarks/bench_inference.py            # ~3 min on 2 cores
    .venv/bin/python benchmarks/bench_inference.py --quick    # 1 round, 50,000 rows

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import sys
import tempfile
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from _harness import (command_line, heading, load_line, log, run_interleaved, targets_table, timed, timed_case, warm_up,
                      zoo_lite_commit)
from _mlp_data import CLASSES, FEATURES, frame_arrays, make_dataframe
from torch import nn

CASES = {
    "udf": "(a) zoo_lite `est.spark_udf` in `select`",
    "predict": "(b) zoo_lite `est.predict` (DataFrame)",
    "pyspark": "(c) PySpark `predict_batch_udf` (torch model from broadcast bytes)",
    "single_1": "(d) single process on the driver, 1 torch thread",
    "single_all": "(d) single process on the driver, all torch threads",
    "floor": "(e) for reference: `mapInArrow` reading the features and giving 10 zeros per row, no model",
}


def make_model(hidden: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


class CountsLoads(nn.Sequential):
    """The benchmark MLP, writing ``load <pid>`` to ``log`` on each unpickling (each model load) and
    ``run <pid>`` on its first call in each process."""

    def __init__(self, log_path: str, hidden: int) -> None:
        super().__init__(*make_model(hidden))
        self.log_path = log_path

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.ran_here = False
        self._note("load")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not getattr(self, "ran_here", True):
            self.ran_here = True
            self._note("run")
        return super().forward(x)

    def _note(self, what: str) -> None:
        with open(self.log_path, "a") as handle:
            handle.write(f"{what} {os.getpid()}\n")


# -- the cases -------------------------------------------------------------------------------------

def spark_action(df: Any, column: str) -> float:
    """Every prediction of ``column`` computed on the executors; one number back (the same for every case)."""
    from pyspark.sql import functions as F

    return float(df.agg(F.sum(F.array_max(column)).alias("s")).collect()[0]["s"])


def make_torch_predict_fn(payload: Any) -> Callable[[], Callable[[np.ndarray], np.ndarray]]:
    """``make_predict_fn`` for ``predict_batch_udf``: the model from the broadcast ``payload`` of
    ``torch.save``'d bytes, loaded once per Python worker (PySpark caches it), 1 torch thread."""

    def make() -> Callable[[np.ndarray], np.ndarray]:
        torch.set_num_threads(1)   # a task has 1 CPU; zoo_lite sizes torch to it as well
        model = torch.load(io.BytesIO(payload.value), weights_only=False)
        model.eval()

        def predict(inputs: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return model(torch.from_numpy(inputs.astype(np.float32, copy=False))).numpy()

        return predict

    return make


def no_model(batches: Any) -> Any:
    """The Spark <-> Python traffic of the UDF without a model: 10 zeros per row back."""
    import pyarrow as pa

    for batch in batches:
        offsets = pa.array(np.arange(batch.num_rows + 1, dtype=np.int32) * CLASSES)
        zeros = pa.array(np.zeros(batch.num_rows * CLASSES, dtype=np.float32))
        yield pa.RecordBatch.from_arrays([pa.ListArray.from_arrays(offsets, zeros)], names=["prediction"])


def single_process(model: nn.Module, x: np.ndarray, batch: int, threads: int) -> float:
    """The same sum as :func:`spark_action`, from a plain loop over in-memory arrays."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(x), batch):
                total += float(model(torch.from_numpy(x[start:start + batch])).numpy().max(axis=1).sum(dtype=np.float64))
        return total
    finally:
        torch.set_num_threads(previous)


def count_loads(frame: Any, hidden: int, batch: int) -> tuple[int, list[int], list[int], float]:
    """One UDF query over the whole frame with a model that logs its loads: (loads, pids that
    loaded it, pids that ran it, the query's seconds)."""
    from zoo_lite.learn.pytorch import Estimator

    log_path = os.path.join(tempfile.mkdtemp(prefix="bench-inference-"), "loads.txt")
    est = Estimator.from_torch(model=CountsLoads(log_path, hidden), loss=nn.CrossEntropyLoss())
    udf = est.spark_udf(batch_size=batch, input_shapes=[(FEATURES,)])
    open(log_path, "w").close()   # anything the driver logged while making the UDF is not a worker's load
    seconds, _ = timed(lambda: spark_action(frame.select(udf("features").alias("prediction")), "prediction"))
    with open(log_path) as handle:
        lines = [line.split() for line in handle if line.strip()]
    loads = [int(pid) for what, pid in lines if what == "load"]
    ran = sorted({int(pid) for what, pid in lines if what == "run"})
    return len(loads), sorted(loads), ran, seconds


# -- the report ------------------------------------------------------------------------------------

def targets_and_throughput(targets: list, labels: dict[str, str], cases: dict[str, Any], rows: int) -> list[str]:
    """The report's tables: the targets, then each case's rows per second (best and median)."""
    return ["", "### Targets", "", *targets_table(targets), "",
            "### Throughput", "", "| case | rows/s: best | rows/s: median | s: best (median) |", "|---|---:|---:|---:|",
            *[f"| {label} | {rows / cases[name].best:,.0f} | {rows / cases[name].median:,.0f} | {cases[name].cell()} |"
              for name, label in labels.items()], ""]


def inference_arguments(doc: Optional[str], argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """The command line of the inference benchmarks (this one and bench_connect)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1024, help="rows per model call (default 1024)")
    parser.add_argument("--hidden", type=int, default=128, help="width of the MLP's hidden layers (default 128, as bench_torch_fit)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="1 round on 50,000 rows")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = inference_arguments(__doc__, argv)
    rows, repeat = (50_000, 1) if args.quick else (args.rows, args.repeat)
    command = command_line("bench_inference.py", argv)

    import pyspark
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql import SparkSession
    from pyspark.sql.types import ArrayType, FloatType

    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.learn.pytorch import Estimator

    load_before = os.getloadavg()
    sc = init_orca_context(cluster_mode="local", cores=2, memory="4g")
    try:
        spark = SparkSession.builder.getOrCreate()
        log(f"building {rows:,} rows")
        cached = make_dataframe(spark, rows)
        x, _ = frame_arrays(cached)
        # the features only (what (b) passes through is what the others read), with the lineage cut: the
        # generator's plan has thousands of expressions, and planning it again would add ~0.3 s to every query
        frame = cached.select("features").localCheckpoint()

        est = Estimator.from_torch(model=make_model(args.hidden), loss=nn.CrossEntropyLoss())
        model = est.get_model().eval()
        udf = est.spark_udf(batch_size=args.batch, input_shapes=[(FEATURES,)])
        buffer = io.BytesIO()
        torch.save(model, buffer)
        pyspark_udf = predict_batch_udf(make_torch_predict_fn(sc.broadcast(buffer.getvalue())),
                                        return_type=ArrayType(FloatType()), batch_size=args.batch,
                                        input_tensor_shapes=[[FEATURES]])
        runs: dict[str, Callable[[], float]] = {
            "udf": lambda: spark_action(frame.select(udf("features").alias("prediction")), "prediction"),
            "predict": lambda: spark_action(est.predict(frame, feature_cols=["features"], batch_size=args.batch), "prediction"),
            "pyspark": lambda: spark_action(frame.select(pyspark_udf("features").alias("prediction")), "prediction"),
            "single_1": lambda: single_process(model, x, args.batch, 1),
            "single_all": lambda: single_process(model, x, args.batch, os.cpu_count() or 1),
            "floor": lambda: spark_action(frame.mapInArrow(no_model, "prediction array<float>"), "prediction"),
        }
        timed_runs = {name: timed_case("s", run) for name, run in runs.items()}
        sums = warm_up(timed_runs)
        results = run_interleaved(timed_runs, repeat, rotate=False, check=sums.__setitem__)
        cases = {name: measures["s"] for name, measures in results.items()}
        log("counting model loads")
        loads, load_pids, run_pids, first_udf_s = count_loads(frame, args.hidden, args.batch)
        import ray

        ray_started = ray.is_initialized()
    finally:
        stop_orca_context()
    load_after = os.getloadavg()

    reference = sums["single_1"]
    agree = all(abs(value - reference) <= 1e-4 * abs(reference) for name, value in sums.items() if name != "floor")
    rate = {name: rows / cases[name].best for name in cases}
    vs_pyspark, vs_single, vs_predict = (rate["udf"] / rate[name] for name in ("pyspark", "single_1", "predict"))
    targets = [
        ("throughput, (a) `spark_udf` / (c) PySpark `predict_batch_udf`", vs_pyspark, ">= 1.0", vs_pyspark >= 1.0),
        ("throughput, (a) `spark_udf` / (d) single process, 1 thread", vs_single, ">= 1.5", vs_single >= 1.5),
        ("throughput, (a) `spark_udf` / (b) `est.predict`", vs_predict, "info", True),
        ("(the Spark <-> Python floor: (a) / (e) no model)", rate["udf"] / rate["floor"], "info", True),
        ("(this machine's ceiling in this run: (d) all threads / (d) 1 thread)", rate["single_all"] / rate["single_1"], "info", True),
    ]
    commit = zoo_lite_commit()
    one_each = loads == len(run_pids) and set(load_pids) == set(run_pids)
    print("\n".join([
        *heading("bench_inference", command),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"pyspark {pyspark.__version__}; zoo_lite at commit {commit}",
        f"- data: {rows:,} rows x {FEATURES} float features (`array<float>`), the cached `_mlp_data` frame's features column `localCheckpoint`'d (4 partitions) on "
        f"`init_orca_context(cluster_mode=\"local\", cores=2)`; Ray started: {'yes' if ray_started else 'no'}",
        f"- model: MLP {FEATURES}-{args.hidden}-{args.hidden}-{CLASSES}, random weights (no training; throughput does not "
        f"depend on them), from `Estimator.from_torch(model=..., loss=...)`; {args.batch} rows per model call in every case",
        "- every Spark case: `agg(sum(array_max(prediction)))` (every prediction computed on the executors, one number back); "
        "(c) loads the model from `torch.save`'d bytes in a broadcast, 1 torch thread per task; (d) runs on arrays collected "
        "before timing, under `torch.no_grad()`",
        f"- {repeat} round(s) after an untimed warm-up round, cases interleaved; ratios use the best time",
        f"- the sums of the row maxima of the predictions agree across the cases (relative 1e-4): {'yes' if agree else 'NO'} "
        f"({', '.join(f'{name} {value:.3f}' for name, value in sums.items() if name != 'floor')})",
        f"- model loads: {loads} for {len(run_pids)} Python worker(s) (pids that ran the model: "
        f"{', '.join(map(str, run_pids))}; loaded in: {', '.join(map(str, load_pids))}) — "
        f"{'one load per Python worker' if one_each else 'NOT one load per Python worker'}; a new UDF's first query, "
        f"{first_udf_s:.2f} s",
        load_line(load_before, load_after),
        *targets_and_throughput(targets, CASES, cases, rows),
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
