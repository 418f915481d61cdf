"""The pipeline ``bench_xshards.py`` measures, as each system runs it, and the data it runs on.

The pipeline: read 10-column CSV files, derive two columns, hash-partition by an int key, take the
distinct values of a string column, count the rows. Here are the seeded CSV files (generated once per
parameter set into ``benchmarks/_data/``), one function per system running the whole pipeline
(zoo_lite with either read backend, pandas, dask, pyspark.pandas, and the floor that PySpark's
shuffle sets), and the result every system must agree on.

``bench_xshards.py`` times these against each other, ``_xshards_scale.py`` (its ``--scale``)
runs each in a child process as the rows grow, and ``bench_pipeline_stages.py``,
``bench_small_ops.py``, ``bench_shuffle_settings.py`` and ``bench_to_spark_df.py`` reuse the data
and zoo_lite's pipeline. Spark's Python workers cannot import this folder: a script that runs these
functions on Spark ships this module by value (``_harness.ship_to_workers``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

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
SECTIONS = ("pipeline", "steps", "partition", "from_spark_df")
# the systems, as the reports name them
ZOO_PANDAS = "zoo_lite (backend=pandas, the default)"
ZOO_SPARK = "zoo_lite (backend=spark, Orca's default)"
PANDAS = "pandas (C engine)"
PANDAS_ARROW = "pandas (engine=pyarrow)"
DASK = "dask.dataframe (threads)"
PYSPARK_PANDAS = "pyspark.pandas"
LIBRARIES = ("pandas", "pyarrow", "pyspark", "dask", "numpy")  # whose versions the reports give


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchConfig:
    """What one run of ``bench_xshards.py`` measures (its command-line options); the defaults are the spec's."""

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

    moved = read_csv(path).transform_shard(derive).rdd.flatMap(cut).partitionBy(num_partitions, same_target)
    return PipelineResult(0, moved.map(lambda pair: pair[1][0]).sum())


def byte_slices(blob: bytes, count: int) -> list[bytes]:
    """``blob`` cut into ``count`` contiguous slices of equal size (the last may be shorter)."""
    step, view = -(-len(blob) // count), memoryview(blob)
    return [bytes(view[index * step:(index + 1) * step]) for index in range(count)]


def same_target(target: int) -> int:
    """The partitioner of a shuffle whose keys are already the target partitions."""
    return target


def check_result(name: str, result: PipelineResult, expected: PipelineResult) -> None:
    """Raise AssertionError unless ``result`` has ``expected``'s rows and, where it reports them,
    its distinct locations."""
    if result.rows != expected.rows or (result.locations and result.locations != expected.locations):
        raise AssertionError(f"{name} computed {result}, expected {expected}")

