"""Benchmark: the Spark backend (``backend="spark"``) against the Ray backend and PySpark's TorchDistributor.

Cluster: ``init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g")``,
i.e. ``local-cluster[2,1,1024]``: two executor JVMs of one core each, two task slots. A fresh
context (Spark started anew, no Ray) every round, so that each round's first fits are cold.
Data: ``--rows`` (200,000) rows of 64 float features (one ``array<float>`` column) and a class
label (10 classes), the cached Spark DataFrame of ``bench_torch_fit.py`` (``_mlp_data.py``).
Model: MLP 64 -> 128 -> 128 -> 10, cross-entropy, SGD(lr=0.05, momentum=0.9), global batch
``--batch`` (1024) split over 2 workers, ``--epochs`` (3) per fit; for Keras the same MLP of
``_mlp_data.make_keras_mlp`` with global batch ``--keras-batch`` (8192, ``bench_keras_fit.py``'s).

Cases, 2 workers of 1 core each, in every round in this order (the first two swap every round;
the Ray cases come last, because Ray on Spark, once started, stays up until the context ends):

- (s) zoo_lite ``Estimator.from_torch(..., backend="spark", num_workers=2)``: a first ``fit`` and
  a second one on the same Estimator and DataFrame;
- (t) PySpark ``TorchDistributor(num_processes=2, local_mode=False, use_gpu=False).run(train)``.
  Data the documented way (Spark's and Databricks' TorchDistributor guides): the train function
  loads the data itself and shards it with a ``DistributedSampler``; here the DataFrame is written
  once per round to Parquet (on this host's disk, which both executors see), and each of the 2
  processes reads the Parquet files into a ``TensorDataset`` and takes its share through
  ``DistributedSampler(shuffle=True, seed=0)`` (``set_epoch`` every epoch), fed to a
  ``DataLoader`` as whole batches (a ``BatchSampler`` over it, so that the reference is not slowed
  by per-row collation); DDP with gloo, the same model, optimizer, loss, global batch and epochs.
  TorchDistributor's ``_train_on_dataframe`` is not used: it is private;
- (ks) zoo_lite ``Estimator.from_keras(..., backend="spark", num_workers=2)``: two fits;
- (r) zoo_lite ``backend="ray"`` (the default), 2 workers: two fits, as (s);
- (kr) zoo_lite Keras, ``backend="ray"``: two fits, as (ks);
- (b) before all of them, the cost of one empty barrier job,
  ``sc.parallelize(range(2), 2).barrier().mapPartitions(...).collect()`` (after one warm-up job).

What "cold" (the first fit, end to end) includes:

- (s): ``from_torch`` to the return of the first ``fit``: the barrier stage's tasks start in the
  executors' Python workers (torch and zoo_lite imported there for the first time in that
  context), the DataFrame's rows are counted, cut and shuffled to the tasks, the workers build
  model and gloo group, ``--epochs`` epochs, the state back to the driver;
- (t): ``TorchDistributor(...)`` to the return of ``run``: its log server (with its own 1 s
  wait), the barrier job, ``torchrun`` and one fresh Python process per task (torch imported),
  the gloo group, reading the Parquet files, ``--epochs`` epochs, rank 0's result back. The
  Parquet write is not included (it is a one-off preparation, as caching the DataFrame is for
  zoo_lite); it is reported beside it;
- (r): ``from_torch`` to the return of the first ``fit`` with no Ray running: Ray on Spark is
  started from nothing by that ``fit`` (head, one node per executor), the Ray actors start, the
  rows go executor side into them, ``--epochs`` epochs.

"Warm" is the epoch time of the later epochs: each fit's epochs after its first, of both fits of
zoo_lite's cases, and of the one ``run`` of (t). For zoo_lite the PyTorch epoch time is the
runner's ``epoch_time_s`` and for Keras a callback's on rank 0; for (t) the train function times
its epochs on rank 0. The driver's wall time per epoch of zoo_lite's torch fits (the time between
the driver's per-epoch log lines) minus ``epoch_time_s`` is the per-epoch driver round trip: one
call to every worker over its socket (Spark backend) or as a Ray actor call, its reply, and the
model state pulled to the driver after every epoch.

Claims, each a ratio measured in the same run, best against best:

- first fit end to end, (s) <= 0.5x (t) and (s) <= 0.7x (r);
- epoch throughput (rows/s), (s) >= 1.0x (t) and (s) >= 0.9x (r);
- Keras epoch throughput, (ks) >= 0.9x (kr);
- for information, the design choice of the Spark backend (calls over a socket to one long-lived
  barrier stage per ``fit``, rather than one barrier job per epoch): the empty barrier job (b)
  against (s)'s per-epoch driver round trip.

Run from the repository root::

    .venv/bin/python benchmarks/bench_spark_backend.py            # ~8 min on 2 cores (3 rounds of ~2.5 min)
    .venv/bin/python benchmarks/bench_spark_backend.py --quick    # 1 round, 50,000 rows

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch
from _harness import (Timing, command_line, epoch_timer, heading, load_line, log, read_epoch_times, targets_table, timed,
                      zoo_lite_commit)
from _mlp_data import CLASSES, FEATURES, KERAS_LEARNING_RATE, make_dataframe, make_keras_mlp
from torch import nn

#: empty barrier jobs timed per round (after one warm-up job)
BARRIER_SAMPLES = 5
WORKERS = 2
CLUSTER = dict(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g")


# The model and the train function of (t) live in this module, which runs as __main__, so that
# cloudpickle ships them by value to TorchDistributor's processes (they cannot import benchmarks/).

def make_model() -> nn.Module:
    """bench_torch_fit.py's MLP, with the same initial weights on every call."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, CLASSES))


def make_optimizer(parameters: Any) -> torch.optim.Optimizer:
    return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)


# -- the per-epoch driver clock of zoo_lite's fits ----------------------------------------------------

class EpochLines(logging.Handler):
    """The driver's times of zoo_lite's per-epoch log lines (``epoch ...`` on ``zoo_lite.learn``,
    logged after each epoch's call has returned and its state has been pulled), passed on to
    stderr as zoo_lite would print them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.times: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("epoch "):
            self.times.append(time.perf_counter())
        print(f"{time.strftime('%H:%M:%S')} zoo_lite {message}", file=sys.stderr, flush=True)


@dataclass
class Fits:
    """What the cases of zoo_lite (and (t), where it applies) measured in one round."""

    first_fit_s: float = 0.0
    second_fit_s: float = 0.0
    epoch_s: list[float] = field(default_factory=list)         # later epochs, worker side
    driver_epoch_s: list[float] = field(default_factory=list)  # later epochs, between the driver's epoch lines
    round_trip_s: list[float] = field(default_factory=list)    # driver_epoch_s - the same epochs' epoch_time_s


def _later_epochs(history: list[dict[str, Any]], stamps: list[float], fits: Fits) -> None:
    """Record the epochs after the first of one fit: their ``epoch_time_s``, the driver's time
    between consecutive epoch lines, and the difference (the driver round trip)."""
    if len(stamps) != len(history):
        raise RuntimeError(f"expected {len(history)} epoch lines on the driver, saw {len(stamps)}")
    for index in range(1, len(history)):
        worker_s, driver_s = history[index]["epoch_time_s"], stamps[index] - stamps[index - 1]
        fits.epoch_s.append(worker_s)
        fits.driver_epoch_s.append(driver_s)
        fits.round_trip_s.append(driver_s - worker_s)


def zoo_torch(frame: Any, backend: str, batch: int, epochs: int, clock: EpochLines) -> Fits:
    """(s) or (r): ``from_torch`` and a first fit, timed end to end, then a second fit."""
    from zoo_lite.learn.pytorch import Estimator

    fit_args = dict(epochs=epochs, batch_size=batch, feature_cols=["features"], label_cols=["label"])
    fits = Fits()
    started = time.perf_counter()
    model = make_model()
    est = Estimator.from_torch(model=model, optimizer=make_optimizer(model.parameters()), loss=nn.CrossEntropyLoss(),
                               backend=backend, num_workers=WORKERS, seed=0)
    try:
        clock.times.clear()
        history = est.fit(frame, **fit_args)
        fits.first_fit_s = time.perf_counter() - started
        _later_epochs(history, list(clock.times), fits)
        clock.times.clear()
        fits.second_fit_s, history = timed(lambda: est.fit(frame, **fit_args))
        _later_epochs(history, list(clock.times), fits)
        if any(h["num_samples"] != history[0]["num_samples"] for h in history):
            raise RuntimeError(f"epochs of one fit saw different row counts: {[h['num_samples'] for h in history]}")
        return fits
    finally:
        est.shutdown()


# -- (t) TorchDistributor ---------------------------------------------------------------------------------

def td_train(parquet_path: str, batch: int, epochs: int) -> dict[str, Any]:
    """TorchDistributor's train function, run by ``torchrun`` in each of its processes: the data
    read from Parquet, a ``DistributedSampler`` share of it, DDP with gloo; rank 0's epoch times."""
    import time

    import pyarrow.parquet as pq
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

    entered_at = time.time()
    dist.init_process_group(backend="gloo")
    try:
        world = dist.get_world_size()
        table = pq.read_table(parquet_path)
        x = torch.from_numpy(table.column("features").combine_chunks().flatten().to_numpy()
                             .reshape(-1, FEATURES).astype(np.float32))
        y = torch.from_numpy(table.column("label").to_numpy().astype(np.int64))
        dataset = TensorDataset(x, y)
        sampler = DistributedSampler(dataset, shuffle=True, seed=0)
        loader = DataLoader(dataset, sampler=BatchSampler(sampler, batch // world, drop_last=False), batch_size=None)
        model = DistributedDataParallel(make_model())
        optimizer = make_optimizer(model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        ready_at = time.time()
        epoch_s = []
        for epoch in range(epochs):
            started = time.perf_counter()
            sampler.set_epoch(epoch)
            for features, label in loader:
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(features), label)
                loss.backward()
                optimizer.step()
                loss.item()
            epoch_s.append(time.perf_counter() - started)
        return {"entered_at": entered_at, "ready_at": ready_at, "epoch_s": epoch_s, "rows": len(dataset),
                "threads": torch.get_num_threads(), "world": world}
    finally:
        dist.destroy_process_group()


def td_run(parquet_path: str, batch: int, epochs: int) -> tuple[float, dict[str, Any]]:
    """(t) end to end: ``TorchDistributor(...)`` to the return of ``run``, and rank 0's result."""
    from pyspark.ml.torch.distributor import TorchDistributor

    called_at, started = time.time(), time.perf_counter()
    # TorchDistributor's log server copies the processes' output to stdout, where the report goes
    with contextlib.redirect_stdout(sys.stderr):
        result = TorchDistributor(num_processes=WORKERS, local_mode=False, use_gpu=False).run(
            td_train, parquet_path, batch, epochs)
    total_s = time.perf_counter() - started
    return total_s, {**result, "called_at": called_at}


# -- (ks), (kr) Keras ---------------------------------------------------------------------------------------

def zoo_keras(frame: Any, backend: str, batch: int, epochs: int, folder: str) -> Fits:
    """(ks) or (kr): ``from_keras`` and a first fit, timed end to end, then a second fit; the
    epochs after the first of each fit (the first traces the step, on a new stage for "spark")."""
    from zoo_lite.learn.tf2 import Estimator

    fit_args = dict(epochs=epochs, batch_size=batch, feature_cols=["features"], label_cols=["label"], verbose=0)
    fits = Fits()
    started = time.perf_counter()
    est = Estimator.from_keras(model=make_keras_mlp(), backend=backend, num_workers=WORKERS, seed=0)
    try:
        for number in (1, 2):
            path = os.path.join(folder, f"keras-{backend}-{number}-{time.time_ns()}.txt")
            fit_s, _ = timed(lambda: est.fit(frame, callbacks=[epoch_timer(path)], **fit_args))
            if number == 1:
                fits.first_fit_s = time.perf_counter() - started
            else:
                fits.second_fit_s = fit_s
            epoch_s = read_epoch_times(path)
            if len(epoch_s) != epochs:   # the timer must run once per epoch, on rank 0 only
                raise RuntimeError(f"expected {epochs} epoch times from rank 0, got {len(epoch_s)}: {epoch_s}")
            fits.epoch_s.extend(epoch_s[1:])
        return fits
    finally:
        est.shutdown()


# -- (b) the empty barrier job ---------------------------------------------------------------------------

def _barrier_partition(rows: Any) -> list[int]:
    from pyspark import BarrierTaskContext

    return [BarrierTaskContext.get().partitionId()]


def barrier_job_s(sc: Any, samples: int) -> list[float]:
    """Seconds of ``samples`` empty barrier jobs of 2 tasks, after one warm-up job."""
    job = lambda: sc.parallelize(range(WORKERS), WORKERS).barrier().mapPartitions(_barrier_partition).collect()  # noqa: E731
    if sorted(job()) != list(range(WORKERS)):
        raise RuntimeError("the empty barrier job did not run one task per partition")
    return [timed(job)[0] for _ in range(samples)]


# -- the rounds -------------------------------------------------------------------------------------------

CASES = ("first_s", "first_t", "first_r", "second_s", "second_r", "s", "t", "r", "s_driver", "r_driver",
         "trip_s", "trip_r", "barrier", "parquet", "t_launch", "t_ready", "ks", "kr", "first_ks", "first_kr",
         "second_ks", "second_kr")


def one_round(args: argparse.Namespace, rows: int, round_index: int, cases: dict[str, Timing], clock: EpochLines,
              folder: str, facts: dict[str, Any]) -> None:
    """Every case once, on a fresh context."""
    from pyspark.sql import SparkSession

    from zoo_lite import init_orca_context, stop_orca_context

    started = time.perf_counter()
    sc = init_orca_context(**CLUSTER)
    try:
        facts["master"] = sc.master
        spark = SparkSession.builder.getOrCreate()
        facts["spark_start_s"] = time.perf_counter() - started
        frame = make_dataframe(spark, rows)
        cases["barrier"].add(barrier_job_s(sc, BARRIER_SAMPLES))
        parquet_path = os.path.join(folder, "rows.parquet")
        write_s, _ = timed(lambda: frame.write.mode("overwrite").parquet(parquet_path))
        cases["parquet"].add([write_s])

        def spark_backend() -> None:
            log("(s) zoo_lite backend='spark'")
            record_torch_fits(cases, "s", zoo_torch(frame, "spark", args.batch, args.epochs, clock))

        def torch_distributor() -> None:
            log("(t) TorchDistributor")
            total_s, result = td_run(parquet_path, args.batch, args.epochs)
            if result["rows"] != rows or result["world"] != WORKERS:
                raise RuntimeError(f"TorchDistributor read {result['rows']} rows on {result['world']} processes; "
                                   f"expected {rows} on {WORKERS}")
            cases["first_t"].add([total_s])
            cases["t"].add(result["epoch_s"][1:])
            cases["t_launch"].add([result["entered_at"] - result["called_at"]])
            cases["t_ready"].add([result["ready_at"] - result["entered_at"]])
            facts["t_threads"] = result["threads"]

        for case in ((spark_backend, torch_distributor) if round_index % 2 == 0 else (torch_distributor, spark_backend)):
            case()
        log("(ks) zoo_lite Keras, backend='spark'")
        keras_fits = zoo_keras(frame, "spark", args.keras_batch, args.epochs, folder)
        cases["ks"].add(keras_fits.epoch_s)
        cases["first_ks"].add([keras_fits.first_fit_s])
        cases["second_ks"].add([keras_fits.second_fit_s])

        log("(r) zoo_lite backend='ray' (Ray on Spark starts now)")
        record_torch_fits(cases, "r", zoo_torch(frame, "ray", args.batch, args.epochs, clock))

        log("(kr) zoo_lite Keras, backend='ray'")
        keras_fits = zoo_keras(frame, "ray", args.keras_batch, args.epochs, folder)
        cases["kr"].add(keras_fits.epoch_s)
        cases["first_kr"].add([keras_fits.first_fit_s])
        cases["second_kr"].add([keras_fits.second_fit_s])
    finally:
        stop_orca_context()


# -- the report --------------------------------------------------------------------------------------------

def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1024, help="global batch size of the PyTorch cases (default 1024)")
    parser.add_argument("--keras-batch", type=int, default=8192, help="global batch size of the Keras cases (default 8192)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per fit (default 3)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, each on a fresh context (default 3)")
    parser.add_argument("--quick", action="store_true", help="1 round on 50,000 rows")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the warm figures are the epochs after each fit's first")
    return args


def report(args: argparse.Namespace, argv: Optional[Sequence[str]], rows: int, repeat: int, cases: dict[str, Timing],
           facts: dict[str, Any], load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    import keras
    import pyspark
    import ray
    import tensorflow as tf

    def ratio(a: str, b: str) -> float:
        return cases[a].best / cases[b].best

    first_vs_t, first_vs_r = ratio("first_s", "first_t"), ratio("first_s", "first_r")
    tput_vs_t, tput_vs_r, keras_vs_r = ratio("t", "s"), ratio("r", "s"), ratio("kr", "ks")
    barrier_vs_trip = ratio("barrier", "trip_s")
    targets = [
        ("first fit end to end, (s) Spark backend / (t) TorchDistributor", first_vs_t, "<= 0.5", first_vs_t <= 0.5),
        ("first fit end to end, (s) Spark backend / (r) Ray backend, Ray started from nothing", first_vs_r, "<= 0.7",
         first_vs_r <= 0.7),
        ("epoch throughput, (s) Spark backend / (t) TorchDistributor", tput_vs_t, ">= 1.0", tput_vs_t >= 1.0),
        ("epoch throughput, (s) Spark backend / (r) Ray backend", tput_vs_r, ">= 0.9", tput_vs_r >= 0.9),
        ("Keras epoch throughput, (ks) Spark backend / (kr) Ray backend", keras_vs_r, ">= 0.9", keras_vs_r >= 0.9),
        ("(driver-side epoch throughput, epoch_time_s + round trip: (s) / (r))", ratio("r_driver", "s_driver"), "info", True),
        ("(one empty barrier job / (s)'s per-epoch driver round trip)", barrier_vs_trip, "info", True),
    ]
    throughput = {name: rows / samples.best for name, samples in cases.items() if samples.seconds}
    commit = zoo_lite_commit()
    e = args.epochs
    return "\n".join([
        *heading("bench_spark_backend", command_line("bench_spark_backend.py", argv)),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"tensorflow {tf.__version__}, keras {keras.__version__}, pyspark {pyspark.__version__}, ray {ray.__version__}; "
        f"zoo_lite at commit {commit}",
        f"- cluster: `{facts.get('master')}` (`init_orca_context(cluster_mode=\"local-cluster\", num_nodes=2, cores=1, "
        f"memory=\"1g\")`), a fresh context every round (last Spark start {facts.get('spark_start_s', 0):.1f} s); "
        f"{WORKERS} workers of 1 core in every case; TorchDistributor's processes ran torch with "
        f"{facts.get('t_threads')} thread(s)",
        f"- data: {rows:,} rows x {FEATURES} float features (`array<float>`) + int label, a cached Spark DataFrame in 4 "
        f"partitions; (t) reads it from Parquet written once per round",
        f"- model: MLP {FEATURES}-128-128-{CLASSES}, SGD(lr=0.05, momentum=0.9), cross-entropy; global batch "
        f"{args.batch}; Keras: the same MLP, SGD(learning_rate={KERAS_LEARNING_RATE}, momentum=0.9), global batch "
        f"{args.keras_batch}; {e} epochs per fit",
        f"- {repeat} round(s), cases interleaved; warm epoch times are each fit's epochs after its first; ratios use "
        "the best time, median in brackets",
        load_line(load_before, load_after),
        "", "### Targets", "", *targets_table(targets, miss="FAIL"), "",
        "### Epochs (warm)", "", "| case | epoch time, s: best (median) | rows/s (best) |", "|---|---:|---:|",
        *[f"| {label} | {cases[name].cell()} | {throughput.get(name, 0):,.0f} |" for name, label in (
            ("s", f"(s) zoo_lite backend='spark', `epoch_time_s`, batch {args.batch}"),
            ("s_driver", "(s) the same epochs, driver's wall time per epoch"),
            ("t", f"(t) TorchDistributor, DDP gloo, rank 0's epoch, batch {args.batch}"),
            ("r", f"(r) zoo_lite backend='ray', `epoch_time_s`, batch {args.batch}"),
            ("r_driver", "(r) the same epochs, driver's wall time per epoch"),
            ("ks", f"(ks) zoo_lite Keras backend='spark', rank 0's epoch, batch {args.keras_batch}"),
            ("kr", f"(kr) zoo_lite Keras backend='ray', rank 0's epoch, batch {args.keras_batch}"))], "",
        "### End to end", "", "| measure | s: best (median) |", "|---|---:|",
        f"| (s) first fit: `from_torch`, barrier stage start, rows counted and shuffled to the tasks, {e} epochs "
        f"| {cases['first_s'].cell(2)} |",
        f"| (t) `TorchDistributor(...).run`: log server, barrier job, torchrun, Parquet read, {e} epochs "
        f"| {cases['first_t'].cell(2)} |",
        f"| (t) of which: `run` called to train function entered (log server, barrier job, torchrun, imports) "
        f"| {cases['t_launch'].cell(2)} |",
        f"| (t) of which: train function entered to first step (gloo group, Parquet read, DDP) "
        f"| {cases['t_ready'].cell(2)} |",
        f"| (t) preparation, not in its first fit: the DataFrame written to Parquet | {cases['parquet'].cell(2)} |",
        f"| (r) first fit: `from_torch`, Ray on Spark started from nothing, actors, rows into them, {e} epochs "
        f"| {cases['first_r'].cell(2)} |",
        f"| (s) second fit on the same Estimator and DataFrame (a new barrier stage), call to return "
        f"| {cases['second_s'].cell(2)} |",
        f"| (r) second fit on the same Estimator and DataFrame, call to return | {cases['second_r'].cell(2)} |",
        f"| (ks) first Keras fit: `from_keras` to return, {e} epochs | {cases['first_ks'].cell(2)} |",
        f"| (kr) first Keras fit: `from_keras` to return, {e} epochs (Ray already running) | {cases['first_kr'].cell(2)} |",
        f"| (ks) second Keras fit, call to return | {cases['second_ks'].cell(2)} |",
        f"| (kr) second Keras fit, call to return | {cases['second_kr'].cell(2)} |",
        "",
        "### Per-epoch driver round trip against one barrier job", "",
        "| measure | s: best (median) |", "|---|---:|",
        f"| (b) one empty barrier job of {WORKERS} tasks, `sc.parallelize(range(2), 2).barrier().mapPartitions(...).collect()` "
        f"| {cases['barrier'].cell(3)} |",
        f"| (s) per epoch: driver's wall time - `epoch_time_s` (calls over the tasks' sockets, state pulled) "
        f"| {cases['trip_s'].cell(3)} |",
        f"| (r) per epoch: driver's wall time - `epoch_time_s` (Ray actor calls, state pulled) | {cases['trip_r'].cell(3)} |",
        "",
    ])


def record_torch_fits(cases: dict[str, Timing], case: str, fits: Fits) -> None:
    """Add one round of zoo_lite's torch fits (``case`` "s" or "r") to the timings of that case."""
    cases[f"first_{case}"].add([fits.first_fit_s])
    cases[f"second_{case}"].add([fits.second_fit_s])
    cases[case].add(fits.epoch_s)
    cases[f"{case}_driver"].add(fits.driver_epoch_s)
    cases[f"trip_{case}"].add(fits.round_trip_s)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    rows, repeat = (50_000, 1) if args.quick else (args.rows, args.repeat)
    clock = EpochLines()
    learn_logger = logging.getLogger("zoo_lite.learn")
    learn_logger.addHandler(clock)   # zoo_lite then adds no handler of its own
    learn_logger.propagate = False
    cases = {name: Timing() for name in CASES}
    facts: dict[str, Any] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-spark-backend-") as folder:
        for round_index in range(repeat):
            log(f"round {round_index + 1}/{repeat}")
            one_round(args, rows, round_index, cases, clock, folder, facts)
            log(" ".join(f"{k}={v.best:.2f}" for k, v in cases.items() if v.seconds))
    print(report(args, argv, rows, repeat, cases, facts, load_before, os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
