"""Benchmark: the XShards pandas pipeline against pandas, dask, pyspark.pandas and Orca's row-by-row shuffle.

Claims measured, each as a ratio against its reference timed in the same run and process (the
cases are interleaved round by round, because the machine is shared and noisy):

1. The whole pipeline ``read_csv`` (20 files) -> ``transform_shard`` (two derived columns) ->
   ``partition_by`` (hash on an int key) -> ``unique`` (a string column) -> ``to_spark_df().count()``,
   un-cached and end to end, is at least as fast as single-process pandas (C engine; stretch
   1.5x) and dask.dataframe (threaded scheduler), and faster than pyspark.pandas. zoo_lite runs once
   per read backend (the default ``backend="pandas"`` and Orca's default ``backend="spark"``);
   the targets (issue 18) are for the default: >= 1.0x pandas and dask (stretch 1.5x).
2. ``partition_by`` moves >= 20x more rows per second than Orca's row-by-row shuffle (every row a
   Python ``(key, list)`` pair through ``RDD.partitionBy``, then frames rebuilt). Both start from
   cached shards; the row-by-row reference runs on a subset (``--orca-rows``), zoo_lite on all
   rows and, for context, on the same subset.
3. ``SparkXShards.from_spark_df`` (forced with ``len``) reaches >= 1.0x the rows/s of Spark's own
   ``DataFrame.toArrow()`` on the same cached DataFrame of 10 doubles.

Two floors bound what any design on PySpark's shuffle can reach on the machine, with info rows
against the references: the pipeline's floor (zoo_lite's read and derive, each frame pickled whole,
cut into byte slices, shuffled and read back once) and partition_by's floor (the cached input's own
pickled bytes cut into slices and moved by the same shuffle, with no pandas work).

Per-step figures (read, transform, partition_by, unique, count) are reported too: there each
system's input to a step is cached or persisted first and the step is forced, so zoo_lite's step
times include reading its cached input (unpickling it from the JVM) and writing its output cache.

The data (default 5M rows x 10 columns, ~560 MB of CSV in 20 files) is generated once, seeded, into
``benchmarks/_data/`` (gitignored) and reused while the parameters are the same.

Run from the repository root::

    .venv/bin/python benchmarks/bench_xshards.py                  # the spec size; ~25 min on 2 cores
    .venv/bin/python benchmarks/bench_xshards.py --quick          # smoke run on 200k rows, ~2 min
    .venv/bin/python benchmarks/bench_xshards.py --profile pandas # where zoo_lite's pipeline spends its time
    .venv/bin/python benchmarks/bench_xshards.py --scale          # scale curve on 1M, 5M, 20M rows
    .venv/bin/python benchmarks/bench_xshards.py --scale --scale-rows 200000 500000  # its smoke run, ~3 min
    .venv/bin/python benchmarks/bench_xshards.py --scale-replot   # the scale curve's picture again, from the saved cases

``--scale`` measures the scale curve instead (``_xshards_scale.py``): the whole pipeline at each
``--scale-rows`` size (250k rows per CSV file, so partitions keep their size) for zoo_lite with each
read backend, pandas and dask (``--scale-systems``), each case in a fresh child process whose whole
process tree (driver, Spark JVM, Python workers) is sampled for peak RSS. It prints a table per size
and the memory target (zoo_lite's largest process <= 1/3 of pandas' at the largest size), saves
the cases in ``benchmarks/xshards_scale.json`` and draws from them the curves of the documentation,
``docs/images/xshards_scale.png`` (``--plot``); ``--scale-replot`` draws them again from the saved
cases without measuring.

It prints markdown (seconds, ratios, PASS/MISS per target, and how busy the machine was with other
work); keep the latest in ``benchmarks/RESULTS.md``. It stops the Spark context it started, and
Spark's JVM and Python workers end with it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

import numpy as np
import pandas as pd

from _timing import Timing, timed

os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")  # pyspark.pandas warns without it
sys.modules.setdefault("bench_xshards", sys.modules[__name__])  # run as a script, _xshards_scale imports this module, not a copy

if TYPE_CHECKING:
    from _xshards_scale import ScaleOptions
    from pyspark import RDD
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

    from zoo_lite.data import SparkXShards

KEY = "key"
LOCATION = "location"
DATA_FORMAT_VERSION = 1
CITIES = (
    "Amsterdam", "Athens", "Bangkok", "Barcelona", "Beijing", "Berlin", "Bogota", "Boston", "Brussels", "Budapest",
    "Cairo", "Chicago", "Copenhagen", "Delhi", "Dubai", "Dublin", "Hamburg", "Helsinki", "Istanbul", "Jakarta",
    "Lagos", "Lima", "Lisbon", "London", "Los Angeles", "Madrid", "Manila", "Melbourne", "Mexico City", "Milan",
    "Montreal", "Moscow", "Mumbai", "Munich", "Nairobi", "New York", "Osaka", "Oslo", "Paris", "Prague",
    "Rome", "San Francisco", "Santiago", "Sao Paulo", "Seoul", "Shanghai", "Singapore", "Stockholm", "Sydney", "Tokyo",
)
NUM_KEYS = 300
STEPS = ("read", "transform", "partition_by", "unique", "count")
SECTIONS = ("pipeline", "steps", "partition", "from_spark_df")
ZOO_PANDAS = "zoo_lite (backend=pandas, the default)"
ZOO_SPARK = "zoo_lite (backend=spark, Orca's default)"
ZOO_PANDAS_CACHED = "zoo_lite (backend=pandas), cache() after partition_by"
ZOO_SPARK_EAGER = "zoo_lite (backend=spark), OrcaContext._eager_mode = True (Orca's default)"
PANDAS = "pandas (C engine)"
PANDAS_ARROW = "pandas (engine=pyarrow)"
DASK = "dask.dataframe (threads)"
PYSPARK_PANDAS = "pyspark.pandas"
PIPELINE_FLOOR = "zoo_lite's read and derive, then PySpark's shuffle of the pickled frames, read once (a floor)"
ZOO_PARTITION_FULL = "zoo_lite partition_by, all rows"
ZOO_PARTITION = "zoo_lite partition_by, subset"
ORCA_PARTITION = "Orca row-by-row partition_by, subset"
SHUFFLE_FLOOR = "PySpark's shuffle of the same pickled bytes, no pandas work (a floor), all rows"
FROM_SPARK_DF = "SparkXShards.from_spark_df + len"
TO_ARROW = "DataFrame.toArrow()"


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchConfig:
    """What one run measures; the defaults are the spec's."""

    rows: int = 5_000_000
    files: int = 20
    repeat: int = 3
    data_dir: Path = Path(__file__).resolve().parent / "_data"
    num_partitions: int = 4
    orca_rows: int = 500_000
    spark_df_rows: int = 5_000_000
    spark_df_partitions: int = 4
    cores: int = 2
    memory: str = "6g"
    seed: int = 7
    sections: tuple[str, ...] = SECTIONS
    profile: Optional[str] = None

    def __post_init__(self) -> None:
        for name in ("rows", "files", "repeat", "num_partitions", "orca_rows", "spark_df_rows", "spark_df_partitions", "cores"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')}={getattr(self, name)} must be a positive integer")
        if self.rows < self.files:
            raise ValueError(f"--rows={self.rows} must be at least --files={self.files}")
        unknown = set(self.sections) - set(SECTIONS)
        if unknown:
            raise ValueError(f"--only {sorted(unknown)}: choose from {list(SECTIONS)}")


QUICK = {"rows": 200_000, "repeat": 1, "orca_rows": 50_000, "spark_df_rows": 200_000}


def parse_args(argv: Optional[Sequence[str]] = None) -> BenchConfig:
    """The run's configuration: the spec's defaults, ``--quick``'s smaller ones, then explicit options."""
    return parse_command_line(argv)[0]


def parse_command_line(argv: Optional[Sequence[str]] = None) -> tuple[BenchConfig, Optional["ScaleOptions"]]:
    """The run's configuration and, with ``--scale`` (or a child's ``--scale-case``), the scale curve's options."""
    from _xshards_scale import add_scale_arguments, scale_options

    defaults = BenchConfig()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, help=f"rows of CSV in total (default {defaults.rows:_})")
    parser.add_argument("--files", type=int, help=f"number of CSV files (default {defaults.files})")
    parser.add_argument("--repeat", type=int, help=f"timed rounds per case after one warm-up; best and median are reported (default {defaults.repeat})")
    parser.add_argument("--data-dir", type=Path, help="where the CSV files are generated and reused (default benchmarks/_data)")
    parser.add_argument("--partitions", dest="num_partitions", type=int, help=f"partition_by target partitions (default {defaults.num_partitions})")
    parser.add_argument("--orca-rows", type=int, help=f"rows of the subset the row-by-row reference runs on (default {defaults.orca_rows:_})")
    parser.add_argument("--spark-df-rows", type=int, help=f"rows of the doubles DataFrame for from_spark_df (default {defaults.spark_df_rows:_})")
    parser.add_argument("--memory", help=f"init_orca_context memory, the local driver JVM's heap (default {defaults.memory})")
    parser.add_argument("--only", dest="sections", nargs="+", choices=SECTIONS, help="run only these sections (default all)")
    parser.add_argument("--profile", choices=("pandas", "spark"), help="instead of the benchmark: run zoo_lite's pipeline with this read backend once under py-spy and list its Spark stages")
    parser.add_argument("--quick", action="store_true", help="smoke run: " + ", ".join(f"{k}={v:_}" for k, v in QUICK.items()))
    add_scale_arguments(parser)
    args = vars(parser.parse_args(argv))
    chosen = dict(QUICK) if args.pop("quick") else {}
    try:
        scale = scale_options(args)  # takes the scale arguments out of args
        chosen.update({key: value for key, value in args.items() if value is not None})
        if "sections" in chosen:
            chosen["sections"] = tuple(chosen["sections"])
        return replace(defaults, **chosen), scale
    except ValueError as error:
        parser.error(str(error))
        raise  # parser.error exits; this line is for type checkers


# ---------------------------------------------------------------------------------------------
# Data: seeded CSV files, generated once per parameter set
# ---------------------------------------------------------------------------------------------

def data_folder(config: BenchConfig) -> Path:
    return config.data_dir / f"rows{config.rows}_files{config.files}_seed{config.seed}_v{DATA_FORMAT_VERSION}"


def _file_table(file_index: int, first_row: int, rows: int, seed: int) -> "Any":
    """One file's rows: an int key (300 values), a city (50 values), floats and ints."""
    import pyarrow as pa

    rng = np.random.default_rng([seed, file_index])
    cities = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(CITIES), rows).astype(np.int32)), pa.array(CITIES))
    return pa.table({
        "id": np.arange(first_row, first_row + rows, dtype=np.int64),
        KEY: rng.integers(0, NUM_KEYS, rows),
        LOCATION: cities.cast(pa.string()),
        "qty": rng.integers(1, 100, rows),
        "price": np.round(rng.uniform(0.5, 500.0, rows), 2),
        "f1": rng.standard_normal(rows),
        "f2": rng.standard_normal(rows),
        "f3": rng.uniform(0.0, 1000.0, rows),
        "f4": rng.exponential(3.0, rows),
        "score": rng.integers(0, 1_000_000, rows),
    })


def ensure_data(config: BenchConfig) -> list[str]:
    """The CSV files for ``config``, generated unless a complete set with the same parameters exists."""
    import pyarrow.csv as pacsv

    folder = data_folder(config)
    marker = folder / "_params.json"  # zoo_lite, Spark and the globs below all skip "_" files
    params = {"rows": config.rows, "files": config.files, "seed": config.seed, "version": DATA_FORMAT_VERSION}
    names = [folder / f"part-{i:05d}.csv" for i in range(config.files)]
    if marker.exists() and json.loads(marker.read_text()) == params and all(name.exists() for name in names):
        return [str(name) for name in names]
    folder.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    bounds = np.linspace(0, config.rows, config.files + 1).astype(int)
    for i, name in enumerate(names):
        table = _file_table(i, int(bounds[i]), int(bounds[i + 1] - bounds[i]), config.seed)
        pacsv.write_csv(table, str(name), pacsv.WriteOptions(quoting_style="none"))
    marker.write_text(json.dumps(params))
    return [str(name) for name in names]


def warm_page_cache(files: Sequence[str]) -> int:
    """Read every file once so that no system pays for a cold disk; returns the bytes read."""
    total = 0
    for name in files:
        with open(name, "rb") as handle:
            while chunk := handle.read(1 << 24):
                total += len(chunk)
    return total


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------

def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class CpuWatch:
    """Samples once a second the CPU used by this process tree and by everything else on the
    machine, so the report says how busy the machine was with other work during the run."""

    def __init__(self, interval_s: float = 1.0) -> None:
        import threading

        self.interval_s = interval_s
        self.ours_s = self.others_s = self.steal_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-watch", daemon=True)
        self._started = time.perf_counter()
        self._wall_s = 0.0

    @staticmethod
    def _tree_cpu_s() -> float:
        import psutil

        total = 0.0
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system + times.children_user + times.children_system
        return total

    @staticmethod
    def _machine_cpu_s() -> tuple[float, float]:
        import psutil

        times = psutil.cpu_times()
        busy = times.user + times.nice + times.system + times.irq + times.softirq
        return busy, times.steal

    def _sample(self) -> None:
        ours, (busy, steal) = self._tree_cpu_s(), self._machine_cpu_s()
        while not self._stop.wait(self.interval_s):
            ours_now, (busy_now, steal_now) = self._tree_cpu_s(), self._machine_cpu_s()
            mine = max(0.0, ours_now - ours)
            self.ours_s += mine
            self.others_s += max(0.0, (busy_now - busy) - mine)
            self.steal_s += max(0.0, steal_now - steal)
            ours, busy, steal = ours_now, busy_now, steal_now

    def start(self) -> "CpuWatch":
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._wall_s = time.perf_counter() - self._started

    def summary(self) -> str:
        cores = os.cpu_count() or 1
        wall = max(self._wall_s, 1e-9)
        return (f"CPU during the run: this benchmark {self.ours_s:.0f} CPU-s, other processes on the machine "
                f"{self.others_s:.0f} CPU-s ({self.others_s / wall:.2f} of {cores} cores on average), "
                f"hypervisor steal {self.steal_s:.0f} s, over {wall / 60:.1f} min")


# ---------------------------------------------------------------------------------------------
# The pipeline, once per system
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PipelineResult:
    """What every system must agree on: distinct locations and rows after partitioning."""

    locations: int
    rows: int


def derive(df: Any) -> Any:
    """The transform step: two derived columns (works on pandas, dask and pyspark.pandas frames)."""
    return df.assign(total=df["price"] * df["qty"], spread=(df["f1"] - df["f2"]) * 0.5)


def hash_split(df: pd.DataFrame, column: str, num_partitions: int) -> list[pd.DataFrame]:
    """pandas' equivalent of partition_by: hash the key, group rows by hash modulo N."""
    targets = pd.util.hash_pandas_object(df[column], index=False).to_numpy() % np.uint64(num_partitions)
    return [group for _, group in df.groupby(targets, sort=True)]


def unique_over(frames: Sequence[pd.DataFrame], column: str) -> np.ndarray:
    return pd.unique(np.concatenate([frame[column].unique() for frame in frames]))


def pandas_read(files: Sequence[str], engine: Optional[str] = None) -> pd.DataFrame:
    kwargs = {} if engine is None else {"engine": engine}
    return pd.concat([pd.read_csv(name, **kwargs) for name in files], ignore_index=True)


def pandas_pipeline(files: Sequence[str], num_partitions: int, engine: Optional[str] = None) -> PipelineResult:
    groups = hash_split(derive(pandas_read(files, engine)), KEY, num_partitions)
    return PipelineResult(len(unique_over(groups, LOCATION)), sum(len(group) for group in groups))


def count_rows(df: pd.DataFrame) -> int:
    return len(df)


def dask_pipeline(files: Sequence[str], num_partitions: int) -> PipelineResult:
    """dask.dataframe with the default threaded scheduler; both results in one ``compute`` so the
    shuffle is shared (the strongest natural dask form)."""
    import dask
    import dask.dataframe as dd

    shuffled = derive(dd.read_csv(list(files))).shuffle(KEY, npartitions=num_partitions)
    rows_per_partition = shuffled.map_partitions(count_rows, meta=(None, "int64"))  # opaque: no column pruning
    locations, rows = dask.compute(shuffled[LOCATION].unique(), rows_per_partition.sum(), scheduler="threads")
    return PipelineResult(len(locations), int(rows))


def pyspark_pandas_repartition(frame: Any, num_partitions: int) -> Any:
    """Hash-partition a pyspark.pandas frame by the key (Spark's own repartition by column)."""
    return frame.spark.apply(lambda sdf: sdf.repartition(num_partitions, KEY), index_col="__index_level_0__")


def pyspark_pandas_pipeline(files: Sequence[str], num_partitions: int) -> PipelineResult:
    import pyspark.pandas as ps

    by_key = pyspark_pandas_repartition(derive(ps.read_csv(list(files))), num_partitions)
    locations = by_key[LOCATION].unique().to_numpy()
    return PipelineResult(len(locations), by_key.to_spark().count())


def zoo_pipeline(path: "str | list[str]", backend: str, num_partitions: int, cache: bool = False,
                 eager: bool = False) -> PipelineResult:
    """zoo_lite as its README shows it: every step lazy, nothing cached. With ``cache``, the
    partitioned shards are cached, so the two actions after partition_by share one shuffle read.
    With ``eager``, Orca's eager mode: every step is computed and cached when it is made, and its
    input's cache dropped."""
    from zoo_lite import OrcaContext
    from zoo_lite.data.pandas import read_csv

    OrcaContext._eager_mode = eager
    try:
        shards = read_csv(path, backend=backend).transform_shard(derive)
        by_key = shards.partition_by(KEY, num_partitions=num_partitions)
    finally:
        OrcaContext._eager_mode = False
    if cache:
        by_key.cache()
    try:
        locations = by_key[LOCATION].unique()
        return PipelineResult(len(locations), by_key.to_spark_df().count())
    finally:
        if cache or eager:
            by_key.uncache()


def pipeline_floor(path: "str | list[str]", num_partitions: int) -> PipelineResult:
    """The pipeline's Spark data path with the rest of its pandas work left out: zoo_lite's read and
    derive, each frame pickled whole, cut into equal byte slices (one per target), moved by PySpark's
    shuffle and read back once (zoo_lite reads it twice: for unique and for to_spark_df). No pipeline
    that reads with pandas and shuffles through PySpark can be faster on this machine."""
    import pickle

    from zoo_lite.data.pandas import read_csv

    def cut(frame: pd.DataFrame) -> list[tuple[int, tuple[int, bytes]]]:
        slices = byte_slices(pickle.dumps(frame, protocol=5), num_partitions)
        return [(target, (len(frame) if target == 0 else 0, piece)) for target, piece in enumerate(slices)]

    moved = read_csv(path).transform_shard(derive).rdd.flatMap(cut).partitionBy(num_partitions, _same_target)
    return PipelineResult(0, moved.map(lambda pair: pair[1][0]).sum())


Measured = tuple[dict[str, float], PipelineResult]


def whole(step: str, func: Callable[[], Any]) -> Callable[[], Measured]:
    """A case timed as one step; ``func`` returns a PipelineResult or a row count."""

    def run() -> Measured:
        seconds, result = timed(func)
        return {step: seconds}, result if isinstance(result, PipelineResult) else PipelineResult(0, int(result))

    return run


def pipeline_cases(files: Sequence[str], zoo_path: "str | list[str]", num_partitions: int) -> dict[str, Callable[[], Measured]]:
    """The whole pipeline per system, un-cached, end to end."""
    parts = num_partitions
    return {
        ZOO_PANDAS: whole("whole", lambda: zoo_pipeline(zoo_path, "pandas", parts)),
        ZOO_SPARK: whole("whole", lambda: zoo_pipeline(zoo_path, "spark", parts)),
        ZOO_PANDAS_CACHED: whole("whole", lambda: zoo_pipeline(zoo_path, "pandas", parts, cache=True)),
        ZOO_SPARK_EAGER: whole("whole", lambda: zoo_pipeline(zoo_path, "spark", parts, eager=True)),
        PANDAS: whole("whole", lambda: pandas_pipeline(files, parts)),
        PANDAS_ARROW: whole("whole", lambda: pandas_pipeline(files, parts, engine="pyarrow")),
        DASK: whole("whole", lambda: dask_pipeline(files, parts)),
        PYSPARK_PANDAS: whole("whole", lambda: pyspark_pandas_pipeline(files, parts)),
        PIPELINE_FLOOR: whole("whole", lambda: pipeline_floor(zoo_path, parts)),
    }


# ---------------------------------------------------------------------------------------------
# The same pipeline step by step: each step's input is materialised (cached / persisted) first
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepFuncs:
    """One system's steps; ``read``, ``transform`` and ``partition_by`` return materialised data."""

    read: Callable[[], Any]
    transform: Callable[[Any], Any]
    partition_by: Callable[[Any], Any]
    unique: Callable[[Any], Any]
    count: Callable[[Any], int]
    release: Callable[[Any], None] = lambda value: None


def time_steps(funcs: StepFuncs) -> Measured:
    seconds: dict[str, float] = {}
    seconds["read"], frame = timed(funcs.read)
    seconds["transform"], derived = timed(lambda: funcs.transform(frame))
    seconds["partition_by"], parts = timed(lambda: funcs.partition_by(derived))
    seconds["unique"], locations = timed(lambda: funcs.unique(parts))
    seconds["count"], rows = timed(lambda: funcs.count(parts))
    for value in (frame, derived, parts):
        funcs.release(value)
    return seconds, PipelineResult(len(locations), int(rows))


def materialized(shards: "SparkXShards") -> "SparkXShards":
    """Cache the shards and compute every one of them (``len`` builds each shard)."""
    shards.cache()
    len(shards)
    return shards


def zoo_steps(path: "str | list[str]", backend: str, num_partitions: int) -> StepFuncs:
    from zoo_lite.data.pandas import read_csv

    return StepFuncs(
        read=lambda: materialized(read_csv(path, backend=backend)),
        transform=lambda shards: materialized(shards.transform_shard(derive)),
        partition_by=lambda shards: materialized(shards.partition_by(KEY, num_partitions=num_partitions)),
        unique=lambda shards: shards[LOCATION].unique(),
        count=lambda shards: shards.to_spark_df().count(),
        release=lambda shards: shards.uncache(),
    )


def pandas_steps(files: Sequence[str], num_partitions: int, engine: Optional[str] = None) -> StepFuncs:
    return StepFuncs(
        read=lambda: pandas_read(files, engine),
        transform=derive,
        partition_by=lambda df: hash_split(df, KEY, num_partitions),
        unique=lambda groups: unique_over(groups, LOCATION),
        count=lambda groups: sum(len(group) for group in groups),
    )


def dask_steps(files: Sequence[str], num_partitions: int) -> StepFuncs:
    import dask
    import dask.dataframe as dd

    def persisted(frame: Any) -> Any:
        return dask.persist(frame, scheduler="threads")[0]

    return StepFuncs(
        read=lambda: persisted(dd.read_csv(list(files))),
        transform=lambda ddf: persisted(derive(ddf)),
        partition_by=lambda ddf: persisted(ddf.shuffle(KEY, npartitions=num_partitions)),
        unique=lambda ddf: ddf[LOCATION].unique().compute(scheduler="threads"),
        count=lambda ddf: ddf.map_partitions(count_rows, meta=(None, "int64")).sum().compute(scheduler="threads"),
    )


def pyspark_pandas_steps(files: Sequence[str], num_partitions: int) -> StepFuncs:
    import pyspark.pandas as ps

    def cached(frame: Any) -> Any:
        frame = frame.spark.cache()
        len(frame)
        return frame

    return StepFuncs(
        read=lambda: cached(ps.read_csv(list(files))),
        transform=lambda psdf: cached(derive(psdf)),
        partition_by=lambda psdf: cached(pyspark_pandas_repartition(psdf, num_partitions)),
        unique=lambda psdf: psdf[LOCATION].unique().to_numpy(),
        count=lambda psdf: psdf.to_spark().count(),
        release=lambda psdf: psdf.spark.unpersist(),
    )


def step_cases(files: Sequence[str], zoo_path: "str | list[str]", num_partitions: int) -> dict[str, Callable[[], Measured]]:
    parts = num_partitions
    return {
        ZOO_PANDAS: lambda: time_steps(zoo_steps(zoo_path, "pandas", parts)),
        ZOO_SPARK: lambda: time_steps(zoo_steps(zoo_path, "spark", parts)),
        PANDAS: lambda: time_steps(pandas_steps(files, parts)),
        PANDAS_ARROW: lambda: time_steps(pandas_steps(files, parts, engine="pyarrow")),
        DASK: lambda: time_steps(dask_steps(files, parts)),
        PYSPARK_PANDAS: lambda: time_steps(pyspark_pandas_steps(files, parts)),
    }


# ---------------------------------------------------------------------------------------------
# partition_by against Orca's row-by-row shuffle, on the same cached input
# ---------------------------------------------------------------------------------------------

def orca_row_by_row_partition_by(shards: "SparkXShards", column: str, num_partitions: int) -> "SparkXShards":
    """Orca's ``SparkXShards.partition_by`` algorithm (bigdl.orca.data.shard): each row becomes a
    Python ``(key, row.values.tolist())`` pair via ``DataFrame.apply(axis=1)``, the pairs go through
    ``RDD.partitionBy`` (pickled in Python, hashed with ``portable_hash``), and each target
    partition rebuilds one DataFrame from the row lists and casts it back to the schema."""
    from zoo_lite.data import SparkXShards

    schema = shards.get_schema()
    columns, dtypes = schema["columns"], schema["dtypes"]

    def to_pairs(df: pd.DataFrame) -> list[Any]:
        return df.apply(lambda row: (row[column], row.values.tolist()), axis=1).values.tolist()

    def merge(pairs: Iterator[Any]) -> list[pd.DataFrame]:
        rows = [values for _, values in pairs]
        return [pd.DataFrame(data=rows, columns=columns).astype(dtypes)] if rows else []

    return SparkXShards(shards.rdd.flatMap(to_pairs).partitionBy(num_partitions).mapPartitions(merge))


def subset_files(files: Sequence[str], config: BenchConfig) -> list[str]:
    """The first files holding about ``orca_rows`` rows (the row-by-row reference is slow)."""
    rows_per_file = config.rows / config.files
    return list(files[:max(1, min(len(files), round(config.orca_rows / rows_per_file)))])


def pickled_partitions(shards: "SparkXShards") -> "RDD":
    """Each partition of the cached ``shards`` as one blob of its pickled frames, cached: the bytes
    a partition_by of ``shards`` reads from the cache and moves through the shuffle."""
    import pickle

    blobs = shards.rdd.mapPartitions(lambda frames: [pickle.dumps(list(frames), protocol=5)]).cache()
    blobs.count()
    return blobs


def byte_shuffle(blobs: "RDD", num_partitions: int) -> int:
    """partition_by's data movement with none of its pandas work: every blob is cut into equal
    contiguous slices, one per target, moved by the same PySpark shuffle, and the bytes counted.
    No partition_by built on PySpark's shuffle can be faster on this machine."""

    def cut(blob: bytes) -> list[tuple[int, bytes]]:
        return list(enumerate(byte_slices(blob, num_partitions)))

    return blobs.flatMap(cut).partitionBy(num_partitions, _same_target).map(lambda pair: len(pair[1])).sum()


def byte_slices(blob: bytes, count: int) -> list[bytes]:
    """``blob`` cut into ``count`` contiguous slices of equal size (the last may be shorter)."""
    step, view = -(-len(blob) // count), memoryview(blob)
    return [bytes(view[index * step:(index + 1) * step]) for index in range(count)]


def _same_target(target: int) -> int:
    return target


def partition_cases(full: "SparkXShards", subset: "SparkXShards", full_blobs: "RDD", num_partitions: int) -> dict[str, Callable[[], Measured]]:
    def zoo(shards: "SparkXShards") -> Callable[[], int]:
        return lambda: len(shards.partition_by(KEY, num_partitions=num_partitions))

    return {
        ZOO_PARTITION_FULL: whole("partition_by", zoo(full)),
        ZOO_PARTITION: whole("partition_by", zoo(subset)),
        ORCA_PARTITION: whole("partition_by", lambda: len(orca_row_by_row_partition_by(subset, KEY, num_partitions))),
        SHUFFLE_FLOOR: whole("partition_by", lambda: byte_shuffle(full_blobs, num_partitions)),
    }


# ---------------------------------------------------------------------------------------------
# from_spark_df against toArrow, on one cached DataFrame of doubles
# ---------------------------------------------------------------------------------------------

def doubles_frame(spark: "SparkSession", rows: int, partitions: int) -> "SparkDataFrame":
    from pyspark.sql import functions as F

    df = spark.range(0, rows, numPartitions=partitions).select(*[F.rand(seed=i).alias(f"x{i}") for i in range(10)])
    df = df.cache()
    df.count()
    return df


def conversion_cases(df: "SparkDataFrame") -> dict[str, Callable[[], Measured]]:
    from zoo_lite.data import SparkXShards

    return {
        FROM_SPARK_DF: whole("convert", lambda: len(SparkXShards.from_spark_df(df))),
        TO_ARROW: whole("convert", lambda: df.toArrow().num_rows),
    }


# ---------------------------------------------------------------------------------------------
# Running: warm-up, then interleaved rounds
# ---------------------------------------------------------------------------------------------

Results = dict[str, dict[str, Timing]]  # case -> step -> timings


def run_round_robin(cases: dict[str, Callable[[], Measured]], repeat: int, expected: dict[str, PipelineResult]) -> Results:
    """Time every case ``repeat`` times, interleaved, the case order rotating each round, so that a
    change in the machine's speed is spread over all cases. Every result is checked against
    ``expected[case]`` (rows always, distinct locations where the case reports them)."""
    results: Results = {name: {} for name in cases}
    names = list(cases)
    for round_index in range(repeat):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, result = cases[name]()
            check_result(name, result, expected[name])
            for step, value in seconds.items():
                results[name].setdefault(step, Timing()).seconds.append(value)
            log(f"round {round_index + 1}/{repeat} {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()))
    return results


def warm_up(cases: dict[str, Callable[[], Measured]]) -> None:
    """Run each case once, untimed: JVM JIT, Python worker start-up, imports."""
    for name, case in cases.items():
        seconds, _ = case()
        log(f"warm-up {name}: {sum(seconds.values()):.2f} s")


def check_result(name: str, result: PipelineResult, expected: PipelineResult) -> None:
    if result.rows != expected.rows or (result.locations and result.locations != expected.locations):
        raise AssertionError(f"{name} computed {result}, expected {expected}")


def run_pipeline_section(config: BenchConfig, files: list[str], folder: str, steps: bool) -> Results:
    build = step_cases if steps else pipeline_cases
    warm_up(build(files[:1], files[:1], config.num_partitions))
    cases = build(files, folder, config.num_partitions)
    return run_round_robin(cases, config.repeat, dict.fromkeys(cases, PipelineResult(len(CITIES), config.rows)))


def run_partition_section(config: BenchConfig, files: list[str]) -> tuple[Results, int]:
    """zoo_lite's partition_by on all rows and on the subset, Orca's on the subset; every input is
    read with the pandas backend and cached first, so each case times the shuffle alone."""
    from zoo_lite.data import XShards
    from zoo_lite.data.pandas import read_csv

    tiny = XShards.partition(pd.read_csv(files[0], nrows=5_000), num_shards=config.cores)
    tiny_blobs = pickled_partitions(tiny)
    warm_up(partition_cases(tiny, tiny, tiny_blobs, config.num_partitions))
    tiny_blobs.unpersist()
    full = materialized(read_csv(files, backend="pandas"))
    subset = materialized(read_csv(subset_files(files, config), backend="pandas"))
    full_blobs = pickled_partitions(full)
    try:
        subset_rows = len(subset)
        cases = partition_cases(full, subset, full_blobs, config.num_partitions)
        expected = {name: PipelineResult(0, config.rows if name == ZOO_PARTITION_FULL else subset_rows) for name in cases}
        expected[SHUFFLE_FLOOR] = PipelineResult(0, full_blobs.map(len).sum())
        results = run_round_robin(cases, config.repeat, expected)
    finally:
        full.uncache()
        subset.uncache()
        full_blobs.unpersist()
    return results, subset_rows


def run_conversion_section(config: BenchConfig) -> Results:
    from zoo_lite import OrcaContext

    df = doubles_frame(OrcaContext.get_spark_session(), config.spark_df_rows, config.spark_df_partitions)
    try:
        cases = conversion_cases(df)
        warm_up(cases)
        return run_round_robin(cases, config.repeat, dict.fromkeys(cases, PipelineResult(0, config.spark_df_rows)))
    finally:
        df.unpersist()


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A claim as a ratio where higher means zoo_lite is better, and the bar it must clear."""

    claim: str
    best: float
    median: float
    threshold: float
    strict: bool = False
    info: bool = False  # shown for context; not one of the spec's targets

    @property
    def result(self) -> str:
        return ("info: " if self.info else "") + ("PASS" if self.passed else "MISS")

    @property
    def passed(self) -> bool:
        return self.best > self.threshold if self.strict else self.best >= self.threshold

    @property
    def bar(self) -> str:
        return f"{'>' if self.strict else '>='} {self.threshold:g}x"


def ratio(reference: Timing, candidate: Timing) -> tuple[float, float]:
    """(best, median) of reference time / candidate time: > 1 means the candidate is faster."""
    return reference.best / candidate.best, reference.median / candidate.median


def seconds_cell(timing: Optional[Timing]) -> str:
    if timing is None:
        return "-"
    return f"{timing.best:.2f}" if len(timing.seconds) == 1 else f"{timing.best:.2f} ({timing.median:.2f})"


def pipeline_table(pipeline: Results) -> list[str]:
    lines = ["| system | whole pipeline, s: best (median) | zoo_lite[pandas] speed-up | zoo_lite[spark] speed-up |", "|---|---:|---:|---:|"]
    for name, steps in pipeline.items():
        cells = [f"{ratio(steps['whole'], pipeline[zoo]['whole'])[0]:.2f}x" for zoo in (ZOO_PANDAS, ZOO_SPARK)]
        lines.append(f"| {name} | {seconds_cell(steps['whole'])} | {cells[0]} | {cells[1]} |")
    return lines


def steps_table(steps: Results) -> list[str]:
    lines = ["| system | " + " | ".join(STEPS) + " |", "|---|" + "---:|" * len(STEPS)]
    for name, timings in steps.items():
        lines.append(f"| {name} | " + " | ".join(seconds_cell(timings.get(step)) for step in STEPS) + " |")
    lines += ["", "Speed-up of zoo_lite per step (reference best / zoo_lite best; > 1 means zoo_lite is faster):", ""]
    lines += ["| zoo_lite vs reference | " + " | ".join(STEPS) + " |", "|---|" + "---:|" * len(STEPS)]
    for zoo in (ZOO_PANDAS, ZOO_SPARK):
        for reference in (PANDAS, PANDAS_ARROW, DASK, PYSPARK_PANDAS):
            cells = [f"{ratio(steps[reference][step], steps[zoo][step])[0]:.2f}x" for step in STEPS]
            lines.append(f"| {zoo.split(' ', 1)[1]} vs {reference} | " + " | ".join(cells) + " |")
    return lines


def partition_table(partition: Results, subset_rows: int, full_rows: int) -> list[str]:
    lines = ["| implementation | input rows | s: best (median) | rows/s (best) |", "|---|---:|---:|---:|"]
    for name, timings in partition.items():
        rows = full_rows if name in (ZOO_PARTITION_FULL, SHUFFLE_FLOOR) else subset_rows
        timing = timings["partition_by"]
        lines.append(f"| {name} | {rows:,} | {seconds_cell(timing)} | {rows / timing.best:,.0f} |")
    return lines


def conversion_table(conversion: Results, rows: int) -> list[str]:
    lines = ["| conversion of the cached 10-double DataFrame | rows | s: best (median) | M rows/s (best) |", "|---|---:|---:|---:|"]
    for name, timings in conversion.items():
        timing = timings["convert"]
        lines.append(f"| {name} | {rows:,} | {seconds_cell(timing)} | {rows / timing.best / 1e6:.2f} |")
    return lines


def targets(pipeline: Optional[Results], partition: Optional[Results], conversion: Optional[Results],
            full_rows: int, subset_rows: int) -> list[Target]:
    found: list[Target] = []
    if pipeline is not None:
        for zoo in (ZOO_PANDAS, ZOO_SPARK):
            label = zoo.split(" ", 1)[1]
            for reference, bar, strict, info in ((PANDAS, 1.0, False, zoo != ZOO_PANDAS), (PANDAS, 1.5, False, True),
                                                 (DASK, 1.0, False, zoo != ZOO_PANDAS), (PYSPARK_PANDAS, 1.0, True, True)):
                best, median = ratio(pipeline[reference]["whole"], pipeline[zoo]["whole"])
                found.append(Target(f"whole pipeline, zoo_lite {label} vs {reference}", best, median, bar, strict, info))
        for reference in (PANDAS, DASK):
            best, median = ratio(pipeline[reference]["whole"], pipeline[PIPELINE_FLOOR]["whole"])
            found.append(Target(f"the most a pipeline on PySpark's shuffle can reach here: the floor vs {reference}",
                                best, median, 1.0, info=True))
    if partition is not None:
        orca, full = partition[ORCA_PARTITION]["partition_by"], partition[ZOO_PARTITION_FULL]["partition_by"]
        scale = full_rows / subset_rows  # time per row: Orca on the subset, zoo_lite on all rows
        found.append(Target(f"partition_by rows/s vs Orca row-by-row rows/s (zoo_lite on {full_rows:,} rows, Orca on {subset_rows:,})",
                            orca.best * scale / full.best, orca.median * scale / full.median, 20.0))
        best, median = ratio(orca, partition[ZOO_PARTITION]["partition_by"])
        found.append(Target(f"(same, both on the same {subset_rows:,} rows; fixed Spark job costs weigh more)", best, median, 20.0, info=True))
        floor = partition[SHUFFLE_FLOOR]["partition_by"]
        found.append(Target("the most any partition_by on PySpark's shuffle can reach here: Orca's rows/s vs the byte shuffle "
                            "of the same pickled rows with no pandas work", orca.best * scale / floor.best,
                            orca.median * scale / floor.median, 20.0, info=True))
    if conversion is not None:
        best, median = ratio(conversion[TO_ARROW]["convert"], conversion[FROM_SPARK_DF]["convert"])
        found.append(Target("from_spark_df throughput / toArrow() throughput", best, median, 1.0))
    return found


def targets_table(found: Sequence[Target]) -> list[str]:
    lines = ["| target | ratio: best (median) | bar | result |", "|---|---:|---|---|"]
    for target in found:
        lines.append(f"| {target.claim} | {target.best:.2f}x ({target.median:.2f}x) | {target.bar} | {target.result} |")
    return lines


def zoo_lite_revision() -> str:
    """The commit the measured zoo_lite comes from, and whether its files differ from it."""
    import subprocess

    import zoo_lite

    package = Path(zoo_lite.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown commit"
    changed = git("status", "--porcelain", "--", str(package))
    return f"{package} at commit {commit}" + (" with uncommitted changes" if changed else "")


def machine_facts(revision_at_start: str) -> list[str]:
    import dask
    import pyarrow
    import pyspark

    memory_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.processor())
    return [
        f"- machine: {os.cpu_count()} cores ({cpu}), {memory_kb / 2**20:.0f} GiB RAM, {platform.system()} {platform.release()}",
        f"- zoo_lite: {revision_at_start}" + ("" if zoo_lite_revision() == revision_at_start else " (CHANGED during the run: re-run)"),
        f"- Python {platform.python_version()}, pandas {pd.__version__}, pyarrow {pyarrow.__version__}, "
        f"pyspark {pyspark.__version__}, dask {dask.__version__}, numpy {np.__version__}",
    ]


def render_report(config: BenchConfig, command: str, data_bytes: int, load: tuple[tuple[float, ...], tuple[float, ...]],
                  watch: CpuWatch, revision: str, sections: dict[str, Any]) -> str:
    pipeline, steps, conversion = sections.get("pipeline"), sections.get("steps"), sections.get("from_spark_df")
    partition, subset_rows = sections.get("partition", (None, 0))
    lines = [
        f"## bench_xshards: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        "",
        f"Command: `{command}`",
        "",
        *machine_facts(revision),
        f"- data: {config.rows:,} rows x 10 columns in {config.files} CSV files, {data_bytes / 1e6:.0f} MB; "
        f"partition_by into {config.num_partitions}; zoo_lite on `init_orca_context(cluster_mode=\"local\", cores={config.cores}, memory=\"{config.memory}\")`",
        f"- {config.repeat} timed round(s) per case after one warm-up, cases interleaved; ratios use the best time, median in brackets",
        f"- load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load[0])}; after: {', '.join(f'{x:.1f}' for x in load[1])}",
        f"- {watch.summary()}",
        "",
    ]
    found = targets(pipeline, partition, conversion, config.rows, subset_rows)
    if found:
        lines += ["### Targets", "", *targets_table(found), ""]
    if pipeline is not None:
        lines += ["### Whole pipeline, un-cached, end to end", "", *pipeline_table(pipeline), ""]
    if steps is not None:
        lines += ["### Per step (input of each step cached / persisted, step forced), seconds: best (median)", "", *steps_table(steps), ""]
    if partition is not None:
        lines += ["### partition_by against Orca's row-by-row shuffle (input read with backend=pandas and cached first)", "", *partition_table(partition, subset_rows, config.rows), ""]
    if conversion is not None:
        lines += ["### Spark DataFrame -> pandas", "", *conversion_table(conversion, config.spark_df_rows), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Profile: where zoo_lite's pipeline spends its time (run with --profile BACKEND)
# ---------------------------------------------------------------------------------------------

def spark_stage_lines(first_job: int) -> list[str]:
    """Wall and task time of every stage run by the jobs from ``first_job`` on (needs the Spark UI)."""
    import urllib.request
    from datetime import datetime

    from zoo_lite import OrcaContext

    sc = OrcaContext.get_spark_context()
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def fetch(what: str) -> Any:
        with urllib.request.urlopen(f"{base}/{what}") as response:
            return json.load(response)

    def stamp(text: str) -> float:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%Z").timestamp()

    stages = {stage["stageId"]: stage for stage in fetch("stages")}
    lines = ["| job | stage | tasks | wall s | task time s | shuffle write MB | shuffle read MB | stage name |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for job in sorted((job for job in fetch("jobs") if job["jobId"] >= first_job), key=lambda job: job["jobId"]):
        for stage_id in sorted(job["stageIds"]):
            stage = stages.get(stage_id)
            if stage is None or stage["status"] != "COMPLETE":
                continue
            wall = stamp(stage["completionTime"]) - stamp(stage["submissionTime"])
            lines.append(f"| {job['jobId']} | {stage_id} | {stage['numTasks']} | {wall:.2f} | {stage['executorRunTime'] / 1000:.2f} | "
                         f"{stage['shuffleWriteBytes'] / 1e6:.0f} | {stage['shuffleReadBytes'] / 1e6:.0f} | {stage['name'][:60]} |")
    return lines


def last_job_id() -> int:
    from zoo_lite import OrcaContext

    tracker = OrcaContext.get_spark_context().statusTracker()
    return max([*tracker.getJobIdsForGroup(None), -1])


def folded_summary(path: Path, top: int = 25) -> list[str]:
    """The functions with the most py-spy samples (self and inclusive) from a raw folded-stack file."""
    import collections
    import re

    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        total += count
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";") if not frame.startswith("process ")]
        for frame in set(frames):
            inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
    lines = [f"{total} samples in this process tree (all Python processes: driver, Spark's Python workers).", "",
             "| self % | function (self time) | | inclusive % | function (inclusive) |", "|---:|---|---|---:|---|"]
    interesting = [(frame, count) for frame, count in inclusive.most_common() if "zoo_lite" in frame or "pandas/" in frame
                   or "pyarrow" in frame or "serializers.py" in frame or "daemon.py" in frame]
    for (own_frame, own_count), (frame, count) in zip(own.most_common(top), interesting[:top]):
        lines.append(f"| {100 * own_count / total:.1f} | `{own_frame}` | | {100 * count / total:.1f} | `{frame}` |")
    return lines


def profile_zoo(config: BenchConfig, files: list[str], folder: str, backend: str) -> str:
    """Run zoo_lite's pipeline once (after a warm-up on one file) under py-spy, which samples this
    process and every Spark Python worker, and list the Spark stages it ran."""
    import signal
    import subprocess
    import tempfile

    zoo_pipeline(files[:1], backend, config.num_partitions)
    out = Path(tempfile.mkdtemp(prefix="bench_xshards_profile_")) / f"pyspy_{backend}.txt"
    py_spy = Path(sys.executable).parent / "py-spy"
    command = [str(py_spy), "record", "--subprocesses", "--rate", "50", "--format", "raw", "--output", str(out), "--pid", str(os.getpid())]
    first_job = last_job_id() + 1
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches
    try:
        seconds, result = timed(lambda: zoo_pipeline(folder, backend, config.num_partitions))
    finally:
        recorder.send_signal(signal.SIGINT)
        _, errors = recorder.communicate(timeout=120)
    if not out.exists():
        raise RuntimeError(f"py-spy wrote no profile: {errors.decode(errors='replace')[-2000:]}")
    time.sleep(1.0)  # the UI's listener catches up
    return "\n".join([
        f"### Profile of zoo_lite (backend={backend}): {seconds:.2f} s for {result}", "",
        f"py-spy raw folded stacks: `{out}`", "",
        *folded_summary(out), "",
        "Spark stages of that run:", "",
        *spark_stage_lines(first_job), "",
    ])


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def run_sections(config: BenchConfig, files: list[str], folder: str) -> dict[str, Any]:
    sections: dict[str, Any] = {}
    if "pipeline" in config.sections:
        log("== whole pipeline, un-cached")
        sections["pipeline"] = run_pipeline_section(config, files, folder, steps=False)
    if "steps" in config.sections:
        log("== per step, cached")
        sections["steps"] = run_pipeline_section(config, files, folder, steps=True)
    if "partition" in config.sections:
        log("== partition_by vs row-by-row")
        sections["partition"] = run_partition_section(config, files)
    if "from_spark_df" in config.sections:
        log("== from_spark_df vs toArrow")
        sections["from_spark_df"] = run_conversion_section(config)
    return sections


def silence_advice() -> None:
    """pyspark.pandas advises about its default index and to_numpy on every call; the pipeline
    uses both on purpose, as a pandas user would."""
    from pyspark.pandas.utils import PandasAPIOnSparkAdviceWarning

    warnings.filterwarnings("ignore", category=PandasAPIOnSparkAdviceWarning)


def main(argv: Optional[Sequence[str]] = None) -> int:
    config, scale = parse_command_line(argv)
    command = " ".join([".venv/bin/python", "benchmarks/bench_xshards.py", *(sys.argv[1:] if argv is None else argv)])
    if scale is not None:  # before importing zoo_lite or pyspark: a pandas or dask case's driver must not hold them
        from _xshards_scale import run_scale

        return run_scale(config, scale, command)
    from zoo_lite import init_orca_context, stop_orca_context

    silence_advice()
    log(f"data in {data_folder(config)}")
    files = ensure_data(config)
    data_bytes = warm_page_cache(files)
    load_before, revision, watch = os.getloadavg(), zoo_lite_revision(), CpuWatch().start()
    init_orca_context(cluster_mode="local", cores=config.cores, memory=config.memory, spark_ui=config.profile is not None)
    try:
        if config.profile is not None:
            print(profile_zoo(config, files, str(data_folder(config)), config.profile))
            return 0
        sections = run_sections(config, files, str(data_folder(config)))
    finally:
        stop_orca_context()
        watch.stop()
    print(render_report(config, command, data_bytes, (load_before, os.getloadavg()), watch, revision, sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
