"""Benchmark: data-parallel training of an MLP with the PyTorch Estimator, against its references.

Data: ``--rows`` (200,000) rows of 64 float features (one ``array<float>`` column) and a class
label (10 classes), a cached Spark DataFrame on ``init_orca_context(cluster_mode="local", cores=2)``.
Model: MLP 64 -> 128 -> 128 -> 10, cross-entropy, SGD with momentum, global batch ``--batch``.

Cases, interleaved round by round in one process, on the same data and batches:

- (a) a plain PyTorch loop over in-memory tensors (shuffled index batches), with 2 threads and
  with 1 thread;
- (b) zoo_lite, 1 worker (2 threads);
- (c) zoo_lite, 2 workers with 1 thread each;
- (d) Ray Train ``TorchTrainer`` (v2) with 2 workers, 1 CPU each, DDP, the data fed the usual Ray
  way (``ray.data.from_pandas`` of the collected frame, ``iter_torch_batches`` of each shard).

Claims (issue 4), each a ratio measured in the same run:

- epoch time (b) / (a, 2 threads) <= 1.15;
- throughput (c) / (a, 1 thread) >= 1.6;
- first ``fit`` end to end (worker start and data loading included), (c) <= 0.5x (d) with the
  same epochs, both on an already running Ray;
- a second ``fit`` on the same data starts its first step <= 1 s after the call;
- DataFrame -> worker arrays (executor side into the 2 workers) >= 0.8x Spark's ``toArrow()``,
  both on a new DataFrame object over the same cached rows (each is analysed and planned once),
  ``LOAD_SAMPLES`` of each per round.

Run from the repository root::

    .venv/bin/python benchmarks/bench_torch_fit.py            # ~6 min on 2 cores
    .venv/bin/python benchmarks/bench_torch_fit.py --quick    # 1 round, 50,000 rows
    .venv/bin/python benchmarks/bench_torch_fit.py --replot   # the picture again, from the last run's numbers

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``. Every run saves its
measured seconds in ``benchmarks/training_throughput.json`` and draws from them the throughput
picture of the documentation, ``docs/images/training_throughput.png`` (rows per second of every
case, with its ratio to the plain loop on 1 thread); ``--quick`` writes both to a temporary folder
instead, so that a smoke run leaves the documentation's picture alone.
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
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
from _harness import Timing, command_line, heading, load_line, log, targets_table, timed, zoo_lite_commit
from _mlp_data import CLASSES, FEATURES, frame_arrays, make_dataframe
from _plots import IMAGES, Bar, Panel, draw_bars, load_numbers, run_facts, save_numbers
from torch import nn

#: loads and toArrow() calls per round (each about 0.5 s; their best is compared)
LOAD_SAMPLES = 3
NUMBERS = Path(__file__).resolve().parent / "training_throughput.json"
PICTURE = IMAGES / "training_throughput.png"
#: the epoch cases, in the report's order; a name + "_large" is the same case at the large batch
EPOCH_CASES = {
    "a2": "(a) plain PyTorch loop, 2 threads",
    "a1": "(a) plain PyTorch loop, 1 thread",
    "b": "(b) zoo_lite, 1 worker x 2 threads",
    "c": "(c) zoo_lite, 2 workers x 1 thread",
    "d": "(d) Ray Train TorchTrainer, 2 workers x 1 CPU",
}
#: the picture's order: the ratios' reference first
PICTURE_ORDER = ("a1", "a2", "b", "c", "d")
ZOO_LITE_CASES = ("b", "c")


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, CLASSES))


def make_optimizer(parameters: Any) -> torch.optim.Optimizer:
    return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)


# -- (a) the plain loop ------------------------------------------------------------------------------

def plain_epochs(x: torch.Tensor, y: torch.Tensor, batch: int, epochs: int, threads: int) -> list[float]:
    """Epoch times of a single-process loop: shuffled index batches, the same model and optimizer."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model, loss_fn = make_model(), nn.CrossEntropyLoss()
        optimizer = make_optimizer(model.parameters())
        generator = torch.Generator().manual_seed(0)
        times = []
        for _ in range(epochs):
            started = time.perf_counter()
            order = torch.randperm(len(x), generator=generator)
            for start in range(0, len(x), batch):
                index = order[start:start + batch]
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(x[index]), y[index])
                loss.backward()
                optimizer.step()
                loss.item()
            times.append(time.perf_counter() - started)
        return times
    finally:
        torch.set_num_threads(previous)


# -- (b), (c) zoo_lite ---------------------------------------------------------------------------------

@dataclass
class ZooRun:
    first_fit_s: float
    epoch_s: list[float]
    large_batch_epoch_s: list[float]
    second_fit_first_step_s: float
    load_s: list[float]


def zoo_run(frame: Any, workers_per_node: int, batch: int, large_batch: int, epochs: int) -> ZooRun:
    """First fit end to end, a load of a new frame object, then a second fit on the first frame
    and a third with the large batch."""
    from zoo_lite.data import Columns
    from zoo_lite.learn.pytorch import Estimator

    started = time.perf_counter()
    model = make_model()
    est = Estimator.from_torch(model=model, optimizer=make_optimizer(model.parameters()), loss=nn.CrossEntropyLoss(),
                               workers_per_node=workers_per_node, seed=0)
    try:
        est.fit(frame, epochs=epochs, batch_size=batch, feature_cols=["features"], label_cols=["label"])
        first_fit_s = time.perf_counter() - started
        # a new DataFrame object over the same cached rows is loaded again: the DataFrame -> workers path
        load_s = [timed(lambda: est._load("load-benchmark", frame.select("*"), Columns.of(["features"], ["label"]), batch))[0]
                  for _ in range(LOAD_SAMPLES)]
        called_at = time.time()
        history = est.fit(frame, epochs=epochs, batch_size=batch, feature_cols=["features"], label_cols=["label"])
        first_step_at = est._group.call_one(0, lambda runner: runner.first_step_at())
        large = est.fit(frame, epochs=epochs, batch_size=large_batch, feature_cols=["features"], label_cols=["label"])
        return ZooRun(first_fit_s, [h["epoch_time_s"] for h in history], [h["epoch_time_s"] for h in large],
                      first_step_at - called_at, load_s)
    finally:
        est.shutdown()


# -- (d) Ray Train ---------------------------------------------------------------------------------------

def _ray_train_loop(config: dict[str, Any]) -> None:
    import ray.train
    import ray.train.torch

    model = ray.train.torch.prepare_model(make_model())
    optimizer = make_optimizer(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    shard = ray.train.get_dataset_shard("train")
    epoch_times: list[float] = []
    for _ in range(config["epochs"]):
        started = time.perf_counter()
        for batch in shard.iter_torch_batches(batch_size=config["batch"] // config["workers"],
                                              dtypes={"features": torch.float32, "label": torch.int64}):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(batch["features"]), batch["label"])
            loss.backward()
            optimizer.step()
            loss.item()
        epoch_times.append(time.perf_counter() - started)
        ray.train.report({"epoch_s": epoch_times[-1]})
    if ray.train.get_context().get_world_rank() == 0:
        # Ray Train v2 keeps only metrics reported with a checkpoint: hand the times over in a file
        with open(config["times_file"], "w") as handle:
            json.dump(epoch_times, handle)


def ray_train_run(frame: Any, batch: int, epochs: int, storage: str) -> tuple[float, list[float]]:
    """Ray Train end to end from the cached frame: collect, Ray Dataset, trainer start, epochs."""
    import pandas as pd
    import ray.data
    import ray.train
    from ray.train.torch import TorchTrainer

    started = time.perf_counter()
    x, y = frame_arrays(frame)
    dataset = ray.data.from_pandas(pd.DataFrame({"features": list(x), "label": y}))
    times_file = os.path.join(storage, f"epoch-times-{time.time_ns()}.json")
    trainer = TorchTrainer(
        _ray_train_loop, train_loop_config={"epochs": epochs, "batch": batch, "workers": 2, "times_file": times_file},
        scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 1}),
        run_config=ray.train.RunConfig(storage_path=storage, name=f"bench-{time.time_ns()}"),
        datasets={"train": dataset},
    )
    trainer.fit()
    total_s = time.perf_counter() - started
    with open(times_file) as handle:
        return total_s, json.load(handle)


# -- the picture -----------------------------------------------------------------------------------------

def draw_throughput(numbers: dict[str, Any], path: Path) -> None:
    """Rows per second (best epoch) of every epoch case, a panel per global batch, each bar with
    its ratio to the plain loop on 1 thread at that batch (the scaling claim's reference).

    Parameters
    ----------
    numbers : dict
        What ``main`` saved: ``rows``, ``batch``, ``large_batch``, ``cores``, ``rounds``, ``seconds`` per
        case, and the run's facts (``run_facts``).
    path : Path
        The PNG to write.
    """
    rows, seconds = numbers["rows"], numbers["seconds"]
    panels = []
    for suffix, batch in (("", numbers["batch"]), ("_large", numbers["large_batch"])):
        reference = rows / min(seconds["a1" + suffix])
        bars = []
        for base in PICTURE_ORDER:
            if seconds.get(base + suffix):
                rate = rows / min(seconds[base + suffix])
                bars.append(Bar(EPOCH_CASES[base], rate, f"{rate:,.0f} rows/s, {rate / reference:.2f}x", base in ZOO_LITE_CASES))
        panels.append((Panel(f"global batch {batch:,}: rows/s and ratio to (a) 1 thread", "rows per second, best epoch", ""), bars))
    draw_bars(path, f"bench_torch_fit: training throughput of an MLP {FEATURES}-128-128-{CLASSES} on {rows:,} rows, "
                    f"{numbers['cores']} cores, best of {numbers['rounds']} round(s)\n{run_facts(numbers)}", panels)


# -- the report ------------------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1024, help="global batch size (default 1024)")
    parser.add_argument("--large-batch", type=int, default=8192, help="the large global batch of the scaling claim (default 8192)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per fit (default 3)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="1 round on 50,000 rows")
    parser.add_argument("--replot", action="store_true",
                        help=f"measure nothing: draw {PICTURE} again from the numbers the last run saved in {NUMBERS}")
    args = parser.parse_args(argv)
    if args.replot:
        draw_throughput(load_numbers(NUMBERS), PICTURE)
        log(f"drew {PICTURE} from {NUMBERS}")
        return 0
    rows, repeat = (50_000, 1) if args.quick else (args.rows, args.repeat)
    command = command_line("bench_torch_fit.py", argv)

    import pyspark
    import ray

    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.context import ray_context_started_on_demand

    load_before = os.getloadavg()
    init_orca_context(cluster_mode="local", cores=2, memory="4g")
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
        log(f"building {rows:,} rows")
        frame = make_dataframe(spark, rows)
        x, y = (torch.from_numpy(a) for a in frame_arrays(frame))
        ray_start_s, _ = timed(ray_context_started_on_demand)
        cases = {name: Timing() for name in ("a2", "a1", "b", "c", "d", "a2_large", "a1_large", "b_large", "c_large",
                                              "first_b", "first_c", "first_d", "second_b", "second_c", "load_c", "to_arrow", "to_arrow_same")}
        storage = tempfile.mkdtemp(prefix="bench-ray-train-")
        for round_index in range(repeat):
            log(f"round {round_index + 1}/{repeat}")
            cases["a2"].add(plain_epochs(x, y, args.batch, args.epochs, 2)[1:])
            cases["a1"].add(plain_epochs(x, y, args.batch, args.epochs, 1)[1:])
            cases["a2_large"].add(plain_epochs(x, y, args.large_batch, args.epochs, 2)[1:])
            cases["a1_large"].add(plain_epochs(x, y, args.large_batch, args.epochs, 1)[1:])
            # the load below reads a new DataFrame object (analysed and planned afresh), so the
            # reference does too; toArrow() again on the same object reuses its executed plan
            cases["to_arrow"].add([timed(lambda: frame.select("*").toArrow())[0] for _ in range(LOAD_SAMPLES)])
            cases["to_arrow_same"].add([timed(frame.toArrow)[0] for _ in range(LOAD_SAMPLES)])
            for name, workers in (("b", 1), ("c", 2)):
                run = zoo_run(frame, workers, args.batch, args.large_batch, args.epochs)
                cases[name].add(run.epoch_s)
                cases[f"{name}_large"].add(run.large_batch_epoch_s)
                cases[f"first_{name}"].add([run.first_fit_s])
                cases[f"second_{name}"].add([run.second_fit_first_step_s])
                if name == "c":
                    cases["load_c"].add(run.load_s)
            total_s, epoch_s = ray_train_run(frame, args.batch, args.epochs, storage)
            cases["first_d"].add([total_s])
            cases["d"].add(epoch_s[1:])
            log(" ".join(f"{k}={v.best:.2f}" for k, v in cases.items() if v.seconds))
    finally:
        stop_orca_context()
    load_after = os.getloadavg()

    numbers_path, picture_path = NUMBERS, PICTURE
    if args.quick:  # a smoke run leaves the documentation's picture and numbers alone
        folder = Path(tempfile.mkdtemp(prefix="bench-torch-fit-"))
        numbers_path, picture_path = folder / NUMBERS.name, folder / PICTURE.name
    save_numbers(numbers_path, {"command": command, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "cores": os.cpu_count(),
                                "rows": rows, "batch": args.batch, "large_batch": args.large_batch, "epochs": args.epochs,
                                "rounds": repeat, "load_average": {"before": load_before, "after": load_after},
                                "seconds": {name: timing.seconds for name, timing in cases.items()}})
    draw_throughput(load_numbers(numbers_path), picture_path)
    log(f"saved the numbers in {numbers_path} and drew {picture_path}")

    b_vs_a = cases["b"].best / cases["a2"].best
    c_vs_a1 = cases["a1_large"].best / cases["c_large"].best
    c_vs_a1_small = cases["a1"].best / cases["c"].best
    first_vs_d = cases["first_c"].best / cases["first_d"].best
    second_start = max(cases["second_b"].best, cases["second_c"].best)
    load_vs_arrow = cases["to_arrow"].best / cases["load_c"].best
    targets = [
        ("epoch time, (b) zoo_lite 1 worker / (a) plain loop, 2 threads", b_vs_a, "<= 1.15", b_vs_a <= 1.15),
        (f"throughput, (c) zoo_lite 2 workers x 1 thread / (a) plain loop, 1 thread; global batch {args.large_batch}",
         c_vs_a1, ">= 1.6", c_vs_a1 >= 1.6),
        (f"(same, global batch {args.batch}: one gradient exchange per {args.batch // 2} rows per worker)",
         c_vs_a1_small, "info", True),
        (f"(this machine's ceiling in this run: (a) 2 threads / (a) 1 thread, global batch {args.large_batch})",
         cases["a1_large"].best / cases["a2_large"].best, "info", True),
        ("first fit end to end, (c) zoo_lite 2 workers / (d) Ray Train 2 workers", first_vs_d, "<= 0.5", first_vs_d <= 0.5),
        ("second fit, call to end of first step, s (worst of b, c)", second_start, "<= 1 s", second_start <= 1.0),
        ("DataFrame -> worker arrays throughput / toArrow() throughput, both on a new DataFrame object", load_vs_arrow,
         ">= 0.8", load_vs_arrow >= 0.8),
    ]
    throughput = {name: rows / samples.best for name, samples in cases.items() if samples.seconds}
    commit = zoo_lite_commit()
    print("\n".join([
        *heading("bench_torch_fit", command),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"pyspark {pyspark.__version__}, ray {ray.__version__}; zoo_lite at commit {commit}",
        f"- data: {rows:,} rows x {FEATURES} float features (`array<float>`) + int label, a cached Spark DataFrame in 4 "
        f"partitions on `init_orca_context(cluster_mode=\"local\", cores=2)`; Ray started on demand in {ray_start_s:.1f} s",
        f"- model: MLP {FEATURES}-128-128-{CLASSES}, SGD(lr=0.05, momentum=0.9), cross-entropy; global batch {args.batch}; "
        f"{args.epochs} epochs per fit",
        f"- {repeat} round(s), cases interleaved; epoch times exclude each run's first epoch for (a) and (d); "
        "ratios use the best time, median in brackets",
        load_line(load_before, load_after),
        "", "### Targets", "", *targets_table(targets), "",
        "### Epochs", "", "| case | epoch time, s: best (median) | rows/s (best) |", "|---|---:|---:|",
        *[f"| {label}, batch {size} | {cases[name].cell()} | {throughput.get(name, 0):,.0f} |"
          for suffix, size in (("", args.batch), ("_large", args.large_batch)) for base, label in EPOCH_CASES.items()
          for name in [base + suffix] if name in cases], "",
        "### End to end", "", "| measure | s: best (median) |", "|---|---:|",
        f"| first fit, (b) zoo_lite 1 worker: workers start, DataFrame -> workers, {args.epochs} epochs | {cases['first_b'].cell(2)} |",
        f"| first fit, (c) zoo_lite 2 workers: workers start, DataFrame -> workers, {args.epochs} epochs | {cases['first_c'].cell(2)} |",
        f"| (d) Ray Train: collect, Ray Dataset, trainer start, {args.epochs} epochs | {cases['first_d'].cell(2)} |",
        f"| second fit, call to end of its first step, (b) | {cases['second_b'].cell(3)} |",
        f"| second fit, call to end of its first step, (c) | {cases['second_c'].cell(3)} |",
        f"| DataFrame -> arrays in the 2 workers (executor side, Ray object store) | {cases['load_c'].cell(3)} |",
        f"| `toArrow()` of the same frame to the driver, a new DataFrame object (`select(\"*\")`) as the load gets | {cases['to_arrow'].cell(3)} |",
        f"| `toArrow()` again on the same DataFrame object (plan reused; for information) | {cases['to_arrow_same'].cell(3)} |",
        "",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
