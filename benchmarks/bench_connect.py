"""Benchmark: zoo_lite on a Spark Connect session, against PySpark's own tools on the same session.

A Spark Connect server from the pinned pyspark's distribution (``tests/connect_server.py``:
``start-connect-server.sh`` on loopback, ``--master local[2]``) serves this process, which is a
Connect client: ``init_orca_context(cluster_mode="spark-connect", remote=...)``.

Data and model as bench_inference's: ``--rows`` (200,000) rows of 64 float features (one
``array<float>`` column, sent from the client as Arrow, 4 partitions, ``localCheckpoint``'d on the
server), an MLP 64 -> 128 -> 128 -> 10 with random weights, ``--batch`` (1024) rows per model call.

Cases, interleaved round by round after one untimed warm-up round:

- (a) ``est.spark_udf(...)`` in ``df.select(udf("features"))`` (the model reaches the executors as a
  file artifact of the session, once);
- (b) ``est.predict(df, feature_cols=["features"])``;
- (c) PySpark's ``predict_batch_udf``, whose ``make_predict_fn`` loads the same model from
  ``torch.save``'d bytes in its closure (a Connect session has no broadcast; 1 torch thread per task);
- (e) for reference, a ``mapInArrow`` that reads the features and gives 10 zeros per row, no model.

Every case ends in ``agg(sum(array_max(prediction)))``; the sums are checked to agree.

Claim (issue 45), a ratio measured in the same run: throughput (a) / (c) >= 1.0.
The XShards and training figures of issue 45 wait for XShards and ``fit`` on Connect.

Run from the repository root::

    .venv/bin/python benchmarks/bench_connect.py            # ~3 min on 2 cores
    .venv/bin/python benchmarks/bench_connect.py --quick    # 1 round, 50,000 rows

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import io
import os
import platform
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from _harness import command_line, heading, load_line, log, run_interleaved, timed_case, warm_up, zoo_lite_commit
from _mlp_data import CLASSES, FEATURES
import bench_inference
from bench_inference import inference_arguments, targets_and_throughput, make_model, make_torch_predict_fn, no_model, spark_action
from pyspark import cloudpickle
from torch import nn

# the server's Python workers cannot import this folder's modules: its functions travel by value
cloudpickle.register_pickle_by_value(bench_inference)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the tests' Connect server

CASES = {
    "udf": "(a) zoo_lite `est.spark_udf` in `select`",
    "predict": "(b) zoo_lite `est.predict` (DataFrame)",
    "pyspark": "(c) PySpark `predict_batch_udf` (torch model from bytes in its closure)",
    "floor": "(e) for reference: `mapInArrow` reading the features and giving 10 zeros per row, no model",
}


def features_frame(spark: Any, rows: int) -> Any:
    """``rows`` rows of uniform features in [-1, 1) as ``features: array<float>`` in 4 partitions,
    ``localCheckpoint``'d on the server. Sent from the client as Arrow: ``_mlp_data``'s generator
    plan is too deep for a Connect plan (protobuf's nesting limit)."""
    import pyarrow as pa

    values = np.random.default_rng(7).uniform(-1, 1, size=rows * FEATURES).astype(np.float32)
    column = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32) * FEATURES), pa.array(values))
    return spark.createDataFrame(pa.table({"features": column})).repartition(4).localCheckpoint()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = inference_arguments(__doc__, argv)
    rows, repeat = (50_000, 1) if args.quick else (args.rows, args.repeat)
    command = command_line("bench_connect.py", argv)

    import pyspark
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType

    from tests.connect_server import ConnectServer
    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.learn.pytorch import Estimator

    load_before = os.getloadavg()
    log("starting a Spark Connect server (local[2])")
    server = ConnectServer.start("local[2]")
    try:
        spark = init_orca_context(cluster_mode="spark-connect", remote=server.url)
        log(f"building {rows:,} rows")
        frame = features_frame(spark, rows)
        est = Estimator.from_torch(model=make_model(args.hidden), loss=nn.CrossEntropyLoss())
        udf = est.spark_udf(batch_size=args.batch, input_shapes=[(FEATURES,)])
        buffer = io.BytesIO()
        torch.save(est.get_model().eval(), buffer)
        closure_bytes = SimpleNamespace(value=buffer.getvalue())   # what a broadcast's .value would give
        pyspark_udf = predict_batch_udf(make_torch_predict_fn(closure_bytes), return_type=ArrayType(FloatType()),
                                        batch_size=args.batch, input_tensor_shapes=[[FEATURES]])
        runs: dict[str, Callable[[], float]] = {
            "udf": lambda: spark_action(frame.select(udf("features").alias("prediction")), "prediction"),
            "predict": lambda: spark_action(est.predict(frame, feature_cols=["features"], batch_size=args.batch),
                                            "prediction"),
            "pyspark": lambda: spark_action(frame.select(pyspark_udf("features").alias("prediction")), "prediction"),
            "floor": lambda: spark_action(frame.mapInArrow(no_model, "prediction array<float>"), "prediction"),
        }
        timed_runs = {name: timed_case("s", run) for name, run in runs.items()}
        sums = warm_up(timed_runs)
        results = run_interleaved(timed_runs, repeat, rotate=False, check=sums.__setitem__)
        cases = {name: measures["s"] for name, measures in results.items()}
    finally:
        stop_orca_context()
        server.stop()
    load_after = os.getloadavg()

    reference = sums["pyspark"]
    agree = all(abs(value - reference) <= 1e-4 * abs(reference) for name, value in sums.items() if name != "floor")
    rate = {name: rows / cases[name].best for name in cases}
    vs_pyspark = rate["udf"] / rate["pyspark"]
    targets = [
        ("throughput on Connect, (a) `spark_udf` / (c) PySpark `predict_batch_udf`", vs_pyspark, ">= 1.0", vs_pyspark >= 1.0),
        ("throughput on Connect, (a) `spark_udf` / (b) `est.predict`", rate["udf"] / rate["predict"], "info", True),
        ("(the Spark <-> Python floor: (a) / (e) no model)", rate["udf"] / rate["floor"], "info", True),
    ]
    print("\n".join([
        *heading("bench_connect", command),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"pyspark {pyspark.__version__}; zoo_lite at commit {zoo_lite_commit()}",
        "- session: Spark Connect (`init_orca_context(cluster_mode=\"spark-connect\")`) to a server on loopback, "
        "`--master local[2]`, on this machine; the client is this process",
        f"- data: {rows:,} rows x {FEATURES} uniform float features (`array<float>`), sent as Arrow, "
        f"`localCheckpoint`'d on the server (4 partitions); model MLP {FEATURES}-{args.hidden}-{args.hidden}-{CLASSES}, "
        f"random weights; {args.batch} rows per model call in every case",
        f"- {repeat} round(s) after an untimed warm-up round, cases interleaved; ratios use the best time",
        f"- the sums of the row maxima of the predictions agree across the cases (relative 1e-4): {'yes' if agree else 'NO'} "
        f"({', '.join(f'{name} {value:.3f}' for name, value in sums.items() if name != 'floor')})",
        load_line(load_before, load_after),
        *targets_and_throughput(targets, CASES, cases, rows),
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
