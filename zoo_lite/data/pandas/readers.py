"""read_csv, read_json and read_parquet into pandas XShards, with two backends.

- ``backend="pandas"`` (the default; Orca's was "spark"): pandas' own reader runs in the
  executors, on consecutive files grouped into partitions of about equal bytes, at most 128 MB
  each (a larger file is a partition alone), so a worker's memory follows the partition, not the
  data. Any pandas keyword argument works.
- ``backend="spark"``: Spark's readers parse the files on the executors (splitting large files);
  pandas keyword arguments are translated to Spark options, and the result is converted to
  pandas shards through Arrow. A keyword it cannot honour is an error naming it.

Both give the same frame for the same files (same rows, columns and dtypes); rows come in Spark's
scan order with the spark backend and in sorted file order with the pandas backend.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import math
import re
import warnings
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from zoo_lite.data import convert
from zoo_lite.data.filesystems import as_spark_path, check_spark_reads, is_object_store, storage_options_for, storage_errors
from zoo_lite.data.paths import PathLike, expand_paths, file_sizes, missing_on_executor, this_host
from zoo_lite.data.shard import SparkXShards
from zoo_lite.data.spark_jobs import spark_read_errors
from zoo_lite.errors import DataReadError, InvalidArgumentError, raising_transportably
from zoo_lite.keywords import suggest_keywords
from zoo_lite.user_code import ByValue

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["read_csv", "read_json", "read_parquet"]

_BACKENDS = ("spark", "pandas")
_CORRUPT = "_zoo_lite_corrupt_record"
_SOURCE = "_zoo_lite_source_file"  # the file of a flagged row, for error messages; null on good rows
_ON_BAD_LINES = ("error", "skip", "warn")
# pandas read_csv keyword arguments the spark backend translates; anything else is refused.
_SPARK_CSV_KWARGS = frozenset({
    "sep", "delimiter", "header", "names", "usecols", "dtype", "quotechar", "escapechar", "comment",
    "nrows", "index_col", "parse_dates", "encoding", "on_bad_lines", "squeeze",
})
_SPARK_JSON_KWARGS = frozenset({"orient", "lines", "dtype", "nrows", "convert_dates", "encoding",
                                "names", "usecols", "index_col", "squeeze", "multiLine"})
# Orca's read_json took names, usecols, index_col and squeeze (pandas' read_json takes none of them)
_ORCA_JSON_KWARGS = ("names", "usecols", "index_col", "squeeze")
# pandas' rule for columns read_json converts to dates by default (keep_default_dates).
_DATE_LIKE = re.compile(r"(_at|_time)$|^timestamp|^(modified|date|datetime)$", re.IGNORECASE)


def _resolve_backend(backend: Optional[str]) -> str:
    from zoo_lite.context import OrcaContext

    chosen = backend or OrcaContext.pandas_read_backend
    if chosen not in _BACKENDS:
        raise InvalidArgumentError(f"backend={chosen!r} is not supported; use one of {list(_BACKENDS)}")
    return chosen


def _session() -> "SparkSession":
    from zoo_lite.context import OrcaContext

    return OrcaContext.get_spark_session()


def _located_files(file_path: PathLike, backend: Optional[str], kwargs: Mapping[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """The backend, the files of ``file_path``, and the reader's keywords. The pandas backend lists
    and reads object stores through fsspec, with ``storage_options`` resolved once here (so that
    credentials set in the driver's environment reach the tasks); Spark's readers list them
    themselves, through Hadoop's S3A file system."""
    backend, kwargs = _resolve_backend(backend), dict(kwargs)
    paths = [file_path] if isinstance(file_path, str) else list(file_path) if isinstance(file_path, (list, tuple)) else []
    remote = [path for path in paths if isinstance(path, str) and is_object_store(path)]
    if backend == "spark":
        if "storage_options" in kwargs:
            raise InvalidArgumentError(
                f"storage_options={kwargs['storage_options']!r} is for backend='pandas'; Spark's reader takes S3 credentials "
                "from the conf spark.hadoop.fs.s3a.access.key / secret.key / endpoint (init_orca_context(conf={...}))")
        if remote:
            sc = _session().sparkContext
            for path in remote:
                check_spark_reads(sc, path, "file_path")
            return backend, [as_spark_path(path) for path in paths], kwargs
        return backend, expand_paths(file_path, "file_path"), kwargs
    options = storage_options_for(remote[0] if remote else "", kwargs.pop("storage_options", None))
    files = expand_paths(file_path, "file_path", options)
    if remote:
        kwargs["storage_options"] = options
    return backend, files, kwargs


def _for_file(kwargs: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The reader's keywords for one file: pandas refuses ``storage_options`` with a local path."""
    if "storage_options" in kwargs and not is_object_store(path):
        return {name: value for name, value in kwargs.items() if name != "storage_options"}
    return kwargs


def _refuse_unknown(kwargs: Mapping[str, Any], allowed: frozenset, reader: str) -> None:
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise InvalidArgumentError(
            f"{reader}(backend='spark') cannot honour the keyword argument(s) {unknown}; it translates "
            f"{sorted(allowed)}. Use backend='pandas' to pass any pandas keyword argument"
        )


# ---------------------------------------------------------------------------------------------
# pandas backend: pandas' own reader over files spread across the cores
# ---------------------------------------------------------------------------------------------

#: bytes of files one partition of the pandas backend reads at most (a larger file is one partition
#: alone), as Spark's ``spark.sql.files.maxPartitionBytes``: a worker holds one partition's frame,
#: so its memory follows this, not the size of the data
PARTITION_BYTES = 128 * 1024 * 1024


def file_groups(sizes: Sequence[int], min_groups: int, limit: int = PARTITION_BYTES) -> list[range]:
    """Consecutive files in groups of about equal bytes: as few groups as keep each within
    ``limit`` (a larger file alone), rounded up to a multiple of ``min_groups`` (the cores), so the
    last wave of tasks keeps every core busy; at most one group per file.

    Examples
    --------
    >>> [list(group) for group in file_groups([60, 60, 60, 200, 10], min_groups=2, limit=128)]
    [[0, 1], [2], [3], [4]]
    >>> [list(group) for group in file_groups([10] * 6, min_groups=2, limit=128)]  # 30 and 30, not 60 and 0
    [[0, 1, 2], [3, 4, 5]]
    """
    if not len(sizes):
        return []
    step = max(1, min_groups)
    wanted = step * math.ceil(math.ceil(max(1, sum(sizes)) / limit) / step)
    cumulative = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    while True:
        groups = _even_groups(sizes, min(wanted, len(sizes)))
        starts, stops = np.array([g.start for g in groups]), np.array([g.stop for g in groups])
        if np.all((stops - starts == 1) | (cumulative[stops] - cumulative[starts] <= limit)):
            return groups
        if wanted >= len(sizes):  # sizes too uneven to balance: cut where the limit is passed
            return [part for group in groups for part in _within_limit(group, sizes, limit)]
        # a group passed the limit where files fell unevenly: more groups, a multiple of the cores
        wanted += step * max(1, wanted // (8 * step))


def _within_limit(group: range, sizes: Sequence[int], limit: int) -> list[range]:
    """``group`` cut greedily where its files would pass ``limit`` bytes (a larger file alone)."""
    parts, start, total = [], group.start, 0
    for index in group:
        if index > start and total + sizes[index] > limit:
            parts.append(range(start, index))
            start, total = index, 0
        total += sizes[index]
    parts.append(range(start, group.stop))
    return parts


def _even_groups(sizes: Sequence[int], count: int) -> list[range]:
    """Consecutive files in ``count`` groups of about equal bytes (by file count when all are
    empty): each file joins the group where its middle byte falls."""
    total = float(sum(sizes))
    if total == 0:
        group_of = np.arange(len(sizes)) * count // len(sizes)
    else:
        middles = np.cumsum(sizes, dtype=np.float64) - np.asarray(sizes, dtype=np.float64) / 2
        group_of = np.minimum((middles * count / total).astype(int), count - 1)
    bounds = [0, *(np.flatnonzero(np.diff(group_of)) + 1).tolist(), len(sizes)]
    return [range(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]


def _read_files_with_pandas(files: list[str], reader: Callable[..., pd.DataFrame], kwargs: Mapping[str, Any], argument: str) -> SparkXShards:
    sc = _session().sparkContext
    sizes = file_sizes(files, kwargs.get("storage_options"))
    groups = [[files[index] for index in group] for group in file_groups(sizes, sc.defaultParallelism)]
    options = ByValue(dict(kwargs), "keyword arguments")   # converters and other functions of the user's own modules
    listed_on = this_host()

    @raising_transportably
    def read_partition(file_lists: Iterator[list[str]]) -> list[pd.DataFrame]:
        frames = []
        for path in (path for paths in file_lists for path in paths):
            try:
                with storage_errors(path, argument):
                    frames.append(reader(path, **_for_file(options.value, path)))
            except FileNotFoundError as error:
                raise DataReadError(missing_on_executor(argument, path, listed_on)) from error
            except (ValueError, OSError) as error:
                hint = "; pass on_bad_lines='skip' to drop malformed rows" if isinstance(error, pd.errors.ParserError) else ""
                raise DataReadError(f"{argument}: reading {path!r} failed: {type(error).__name__}: {str(error).strip()}{hint}") from error
        if not frames:
            return []
        return [pd.concat(frames, ignore_index=_all_default_index(frames)) if len(frames) > 1 else frames[0]]

    # one group per partition, in file order
    return SparkXShards(sc.parallelize(groups, len(groups)).mapPartitions(read_partition))


def _all_default_index(frames: Sequence[pd.DataFrame]) -> bool:
    return all(isinstance(frame.index, pd.RangeIndex) for frame in frames)


#: pandas ``read_csv`` keywords with which pyarrow's parser gives pandas' frame (after the checks in
#: :func:`read_csv_file`). Any other keyword keeps pandas' C parser: measured, pandas' pyarrow
#: engine differs from it on ``names`` (the implicit index), ``usecols`` and ``dtype`` by
#: position, ``dtype=str`` (leading zeros, missing values) and rows with fewer fields
PYARROW_CSV_KWARGS = frozenset({"sep", "delimiter", "header"})


def pyarrow_can_read(kwargs: Mapping[str, Any]) -> bool:
    """Whether pyarrow's CSV parser can read with these pandas keywords and give pandas' frame:
    only :data:`PYARROW_CSV_KWARGS`, with a one-character separator and ``header`` 0 or "infer".

    Examples
    --------
    >>> pyarrow_can_read({"sep": ";"}), pyarrow_can_read({"usecols": ["a"]}), pyarrow_can_read({"sep": " +"})
    (True, False, False)
    """
    if not set(kwargs) <= PYARROW_CSV_KWARGS:
        return False
    separator = kwargs.get("sep", kwargs.get("delimiter", ","))
    return isinstance(separator, str) and len(separator) == 1 and kwargs.get("header", "infer") in (0, "infer")


def read_csv_file(path: str, **kwargs: Any) -> pd.DataFrame:
    """One CSV file as pandas reads it. Where the keywords allow (:func:`pyarrow_can_read`),
    pyarrow's multi-threaded parser reads it (1.75x faster in the workers, benchmarks/RESULTS.md),
    and its frame is kept when it is pandas' frame: pandas' C parser reads the file instead when
    pyarrow cannot parse it (pandas then gives its own answer or error), found dates or times
    (pandas keeps them as text), repeated header names (pandas renames them), integers beyond
    int64 (pandas keeps them exact), or the file has no rows. Missing strings are NaN, as pandas
    gives them. Floats are correctly rounded (pandas' C parser can be off by one unit in the last
    place; Spark's reader is correctly rounded too).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text("k,name,day\\n1,x,2024-01-02\\n2,,2024-01-03\\n")
    >>> frame = read_csv_file(str(path))
    >>> frame.dtypes.astype(str).tolist(), frame["name"].tolist(), frame["day"].tolist()
    (['int64', 'object', 'object'], ['x', nan], ['2024-01-02', '2024-01-03'])
    """
    if pyarrow_can_read({name: value for name, value in kwargs.items() if name != "storage_options"}):
        try:
            frame = pd.read_csv(path, engine="pyarrow", **kwargs)
        except (ValueError, TypeError, pd.errors.ParserError):   # pyarrow's parse errors are ValueErrors
            frame = None
        # pandas renames repeated header names ("a", "a.1"); pyarrow keeps them repeated
        if frame is not None and len(frame) and frame.columns.is_unique and not _has_temporal_columns(frame) \
                and not _has_huge_numbers(frame):
            return _missing_strings_as_nan(frame)
    return pd.read_csv(path, **kwargs)


def _has_temporal_columns(frame: pd.DataFrame) -> bool:
    """Whether pyarrow typed a column as dates or times, which pandas' C parser leaves as text."""
    import datetime

    for position in range(frame.shape[1]):
        values = frame.iloc[:, position]
        if values.dtype.kind in "mM":
            return True
        if values.dtype == object:
            first = values.first_valid_index()
            if first is not None and isinstance(values.at[first], (datetime.date, datetime.time)):
                return True
    return False


def _has_huge_numbers(frame: pd.DataFrame) -> bool:
    """Whether a float column holds a magnitude of 2**63 or more: pyarrow reads an integer beyond
    int64 as a (rounded) double, where pandas keeps it exact (uint64 or text)."""
    floats = frame.select_dtypes("floating")
    return bool(floats.shape[1]) and bool((floats.abs() >= 2.0 ** 63).to_numpy().any())


def _missing_strings_as_nan(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with NaN for missing values in its object columns, as pandas' reader gives them
    (Spark and pyarrow give None); changed in place."""
    for column in frame.columns[frame.dtypes == object]:
        values = frame[column]
        if values.isna().any():
            frame[column] = values.where(values.notna(), np.nan)
    return frame


#: pandas ``read_json`` keywords with which pyarrow's JSON reader can give pandas' frame (after the
#: checks in :func:`read_json_file`): pyarrow reads JSON Lines only, its floats are correctly rounded
#: (pandas' ``precise_float=True``), and any other keyword changes pandas' parse or conversions
PYARROW_JSON_KWARGS = frozenset({"lines", "orient", "precise_float"})
# endings pandas decompresses by (compression="infer"); pyarrow would take the bytes as they are
_COMPRESSED_ENDINGS = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar")


def pyarrow_can_read_json(kwargs: Mapping[str, Any]) -> bool:
    """Whether pyarrow's JSON reader can read with these pandas ``read_json`` keywords: only
    ``lines=True``, with ``orient`` absent or "records" (the one layout of JSON Lines), and
    ``precise_float`` absent or True.

    Examples
    --------
    >>> pyarrow_can_read_json({"lines": True}), pyarrow_can_read_json({"lines": True, "orient": "records"})
    (True, True)
    >>> pyarrow_can_read_json({}), pyarrow_can_read_json({"lines": True, "dtype": False})
    (False, False)
    """
    return (set(kwargs) <= PYARROW_JSON_KWARGS and kwargs.get("lines") is True and kwargs.get("orient") in (None, "records")
            and kwargs.get("precise_float", True) is True)


def read_json_file(path: str, **kwargs: Any) -> pd.DataFrame:
    """One JSON file as ``pandas.read_json(path, **kwargs)`` reads it. A local, uncompressed JSON
    Lines file read with :func:`pyarrow_can_read_json` keywords, whose records are flat objects of
    numbers, booleans and text, is parsed by pyarrow (faster, see ``docs/guides/xshards.md``) when that gives
    pandas' frame; pandas reads it instead when a column holds nulls in text or booleans, nested
    values, numbers as text, floats that are all whole numbers (pandas makes them integers), or has
    a date-like name; when the column names would become numbers or dates; when the first record
    lacks a column; or when a line is not exactly one object or pyarrow fails (so errors are
    pandas' own). Floats are correctly rounded, as with pandas' ``precise_float=True`` and Spark's
    reader (pandas' default parser can be one unit off in the last place).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.json"
    >>> _ = path.write_text('{"k": 1, "name": "x", "ok": true}\\n{"k": 2, "name": "y", "ok": false}\\n')
    >>> read_json_file(str(path), lines=True).equals(pd.read_json(path, lines=True))
    True
    >>> _ = path.write_text('{"code": "01"}\\n{"code": "02"}\\n')  # pandas turns numeric text into numbers
    >>> read_json_file(str(path), lines=True)["code"].tolist()
    [1, 2]
    """
    if pyarrow_can_read_json(kwargs) and "://" not in path and not path.lower().endswith(_COMPRESSED_ENDINGS):
        frame = _json_lines_by_pyarrow(path)
        if frame is not None:
            return frame
    return pd.read_json(path, **kwargs)


def _json_lines_by_pyarrow(path: str) -> Optional[pd.DataFrame]:
    """The JSON Lines file at ``path`` parsed by pyarrow, if that is pandas' frame; else None."""
    import pyarrow as pa
    from pyarrow import json as pa_json

    if pd.get_option("future.infer_string"):  # pandas would give its str dtype, pyarrow object
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        first = _first_json_record(data)
        # cheap checks on the first record first, so a file pandas must read costs little extra
        if not first or not all(isinstance(value, (int, float, str)) for value in first.values()) \
                or _pandas_converts_json_columns(list(first)):
            return None
        table = pa_json.read_json(pa.BufferReader(data))
    except (OSError, ValueError, pa.ArrowException):  # pandas reads it, and gives its own answer or error
        return None
    # pandas orders columns by first appearance: the first record must hold them all, in pyarrow's order
    if table.column_names != list(first) or not _arrow_json_types_as_pandas(table) \
            or _json_record_lines(data) != table.num_rows:
        return None
    frame = table.to_pandas()
    return None if _has_numeric_text(frame) else frame


def _first_json_record(data: bytes) -> Optional[dict]:
    """The object on the first non-blank line of ``data``, or None if that line is not one."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end].strip()
        if line:
            try:
                record = json.loads(line.decode("utf-8"))  # str, not bytes: json.loads would skip a BOM pandas refuses
            except ValueError:
                return None
            return record if isinstance(record, dict) else None
        start = end + 1
    return None


def _pandas_converts_json_columns(names: list[str]) -> bool:
    """Whether pandas' ``read_json`` converts by name: column names that all parse as numbers or
    dates become them (``convert_axes``), and a date-like column is parsed as dates
    (``keep_default_dates``)."""
    if any(_DATE_LIKE.search(name) for name in names):
        return True
    labels = pd.Series(names, dtype=object)
    conversions = [lambda: labels.astype("float64")]
    conversions += [functools.partial(pd.to_datetime, labels, errors="raise", unit=unit) for unit in ("s", "ms", "us", "ns")]
    for conversion in conversions:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                conversion()
        except (ValueError, TypeError, OverflowError):
            continue
        return True
    return False


def _arrow_json_types_as_pandas(table: Any) -> bool:
    """Whether each column of pyarrow's ``table`` converts to pandas' dtype and values: integers
    (with nulls they become float NaN, as in pandas), floats unless all are whole numbers without
    nulls (pandas makes those integers), and booleans and text without nulls (pandas turns
    booleans with nulls into floats, and gives None for a null but NaN for a missing key). Not
    timestamps (pandas keeps text), nested values (pandas keeps dicts and lists) or all-null columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column, kind in zip(table.columns, table.schema.types):
        if kind == pa.float64():
            whole_numbers = column.null_count == 0 and pc.all(pc.equal(pc.floor(column), column)).as_py()
            if whole_numbers:
                return False
        elif not (kind == pa.int64() or (kind in (pa.bool_(), pa.string()) and column.null_count == 0)):
            return False
    return True


def _json_record_lines(data: bytes) -> Optional[int]:
    """The number of non-blank lines of ``data`` (as pandas splits them) if each starts with "{"
    and ends with "}", else None. pyarrow also reads objects split over lines, or several on one
    line, where pandas fails; in a file pyarrow parsed, a line break between "}" and "{" can only
    fall between records, so these lines are its records when they are as many."""
    body = data[:-1] if data.endswith(b"\n") else data
    if body[:1] == b"{" and body[-1:] == b"}" and body.count(b"\n") == body.count(b"}\n{"):
        return body.count(b"\n") + 1  # the usual layout, counted without splitting
    lines = [line for line in (line.strip() for line in data.split(b"\n")) if line]
    return len(lines) if all(line[:1] == b"{" and line[-1:] == b"}" for line in lines) else None


def _has_numeric_text(frame: pd.DataFrame) -> bool:
    """Whether a text column parses as numbers, as pandas' ``read_json`` then converts it."""
    for name in frame.columns[frame.dtypes == object]:
        try:
            frame[name].astype("float64")
        except (ValueError, TypeError):
            continue
        return True
    return False


def _read_text_with_pandas(files: list[str], reader: Callable[..., pd.DataFrame], kwargs: Mapping[str, Any], argument: str) -> SparkXShards:
    """The pandas backend of a text reader: ``nrows`` counts rows over all files, in file order;
    ``squeeze`` (gone from pandas 2) is applied to each shard after reading."""
    kwargs = dict(kwargs)
    squeeze = bool(kwargs.pop("squeeze", False))
    shards = _read_files_with_pandas(files, reader, kwargs, argument)
    nrows = kwargs.get("nrows")
    shards = _first_rows(shards, _nrows(nrows)) if nrows is not None else shards
    if not squeeze:
        return shards
    return SparkXShards(shards.rdd.map(functools.partial(_squeezed, squeeze=True), preservesPartitioning=True))


def _first_rows(shards: SparkXShards, nrows: int) -> SparkXShards:
    """The first ``nrows`` rows of shards that hold one frame per partition, in partition order."""
    lengths = shards._gather(len)
    budgets = np.clip(nrows - np.concatenate([[0], np.cumsum(lengths)[:-1]]), 0, lengths).astype(int).tolist()

    def head(index: int, frames: Iterator[pd.DataFrame]) -> list[pd.DataFrame]:
        return [frame.head(budgets[index]) for frame in frames]

    return SparkXShards(shards.rdd.mapPartitionsWithIndex(head, preservesPartitioning=True))


# ---------------------------------------------------------------------------------------------
# spark backend: shared post-processing into pandas' conventions
# ---------------------------------------------------------------------------------------------

def _pandas_conventions(df: pd.DataFrame, dtype: Any, parse_dates: Sequence[Hashable], index_col: Any) -> pd.DataFrame:
    """Make a frame from Spark look as pandas' reader makes it: NaN for missing strings, the
    requested dtypes and dates, and the index column."""
    df = _missing_strings_as_nan(df)
    if dtype is not None:
        missing = df.isna()
        try:
            df = df.astype(dtype)
        except (ValueError, TypeError, KeyError) as error:
            raise InvalidArgumentError(f"dtype={dtype!r} cannot be applied: {error}") from error
        for column, target in dtype.items():
            if _is_text_dtype(target):  # astype(str) writes 'nan'; pandas' reader keeps NaN
                df[column] = df[column].mask(missing[column], np.nan)
    for column in parse_dates:
        df[column] = pd.to_datetime(df[column])
    if index_col is not None and index_col is not False:
        keys = index_col if isinstance(index_col, list) else [index_col]
        names = [df.columns[key] if isinstance(key, int) else key for key in keys]
        df = df.set_index(names)
    return df


def _is_text_dtype(target: Any) -> bool:
    try:
        return np.dtype(target).kind in "OUS"
    except TypeError:
        return False


def _spark_shards(df: "SparkDataFrame", post: Callable[[pd.DataFrame], pd.DataFrame]) -> SparkXShards:
    shards = SparkXShards.from_spark_df(df)
    if shards.num_partitions() == 0:  # Spark plans limit(0) with no partition; keep the columns in one empty shard
        from pyspark.sql.pandas.types import to_arrow_schema

        empty = convert.record_batches_to_pandas([], to_arrow_schema(df.schema, prefers_large_types=False))
        shards = SparkXShards(df.sparkSession.sparkContext.parallelize([empty], 1))
    return SparkXShards(shards.rdd.map(raising_transportably(post), preservesPartitioning=True))


def _string_type_for_pandas(spark_type: "DataType") -> "DataType":
    """Spark infers dates and timestamps from text; pandas leaves them text unless parse_dates asks."""
    from pyspark.sql.types import DateType, IntegerType, LongType, StringType, TimestampNTZType, TimestampType

    if isinstance(spark_type, (DateType, TimestampType, TimestampNTZType)):
        return StringType()
    if isinstance(spark_type, IntegerType):
        return LongType()  # pandas reads integers as int64
    return spark_type


def _spark_type_of(pandas_dtype: Any) -> Optional["DataType"]:
    """The Spark type to read a column as so that ``astype(pandas_dtype)`` gives pandas' answer."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType

    kind = np.dtype(pandas_dtype).kind if not isinstance(pandas_dtype, str) or pandas_dtype not in ("category", "string") else "O"
    return {"O": StringType(), "U": StringType(), "S": StringType(), "i": LongType(), "u": LongType(),
            "f": DoubleType(), "b": BooleanType()}.get(kind)


def _dtype_by_name(dtype: Any, columns: Sequence[str]) -> dict[str, Any]:
    if dtype is None:
        return {}
    if not isinstance(dtype, Mapping):
        return {column: dtype for column in columns}
    by_name = {}
    for key, value in dtype.items():
        name = _dtype_key_name(key, columns)
        if name not in columns:
            raise InvalidArgumentError(f"dtype={dict(dtype)!r}: column {key!r} is not in the file's columns {list(columns)}")
        by_name[name] = value
    return by_name


def _dtype_key_name(key: Hashable, columns: Sequence[str]) -> Hashable:
    """The column a ``dtype`` key means: a name, or else a number is a position."""
    return columns[key] if isinstance(key, int) and key not in columns and 0 <= key < len(columns) else key


def _dtype_of_read(dtype: Any, columns: Sequence[str], read: Sequence[str], labels: Sequence[Hashable]) -> dict[str, Any]:
    """``dtype`` by column name, for the columns read (``read``, out of the file's ``columns``);
    a key for a column not read is an error, as in Orca (pandas ignores it). ``labels`` are the
    columns as the user sees them, for the message."""
    by_name = _dtype_by_name(dtype, columns)
    if not isinstance(dtype, Mapping):
        return {name: value for name, value in by_name.items() if name in read}
    for key in dtype:
        if _dtype_key_name(key, columns) not in read:
            what = f"key {key!r} (a column position)" if isinstance(key, int) and key not in columns else f"column {key!r}"
            raise InvalidArgumentError(
                f"dtype={dict(dtype)!r}: {what} is not among the columns read, {list(labels)}: column index to be set "
                "type is not in current dataframe; key dtype by a column read (check usecols=)")
    return by_name


def _read_schema(inferred: "StructType", dtype: Mapping[str, Any], parse_dates: Sequence[str]) -> "StructType":
    from pyspark.sql.types import StringType, StructField, StructType

    fields = []
    for field in inferred.fields:
        spark_type = _string_type_for_pandas(field.dataType)
        if field.name in dtype:
            spark_type = _spark_type_of(dtype[field.name]) or spark_type
        if field.name in parse_dates:
            spark_type = StringType()
        fields.append(StructField(field.name, spark_type, True))
    return StructType(fields)


def _select_usecols(columns: list[str], usecols: Any) -> list[str]:
    if usecols is None:
        return columns
    if callable(usecols):
        return [column for column in columns if usecols(column)]
    chosen = []
    for item in usecols:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < len(columns):
                raise InvalidArgumentError(f"usecols={list(usecols)!r}: position {item} is outside the {len(columns)} columns")
            chosen.append(columns[item])
        elif item in columns:
            chosen.append(item)
        else:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: column {item!r} is not in the file's columns {columns}")
    return [column for column in columns if column in chosen]  # pandas keeps file order


# ---------------------------------------------------------------------------------------------
# names, parse_dates and squeeze: pandas' rules, as pure functions shared by both backends
# ---------------------------------------------------------------------------------------------

_UNNAMED = "_zoo_lite_unnamed_{}"


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How a list of ``names`` maps onto a file's columns (pandas' rules).

    ``file_names`` names every file column (placeholders for columns the names do not cover),
    ``selected`` are the columns kept, in file order, ``index`` the placeholders that become
    pandas' implicit index, ``extra`` the names past the file's last column (all missing)."""

    file_names: tuple
    selected: tuple
    index: tuple = ()
    extra: tuple = ()


def _usecols_positions(names: list, width: int, usecols: Any) -> list[int]:
    items = list(dict.fromkeys(usecols))
    if all(isinstance(item, (int, np.integer)) and not isinstance(item, bool) for item in items):
        outside = [int(item) for item in items if not 0 <= item < width]
        if outside:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: position(s) {outside} are outside the {width} columns")
        return sorted(int(item) for item in items)
    if all(isinstance(item, str) for item in items):
        missing = [item for item in items if item not in names]
        if missing:
            raise InvalidArgumentError(f"usecols={list(usecols)!r}: column(s) {missing} are not in names={names!r}")
        return sorted(names.index(item) for item in items)
    raise InvalidArgumentError(f"usecols={list(usecols)!r} must be all column names, all positions, or a callable")


def _names_layout(names: Sequence[Hashable], width: int, usecols: Any, index_col: Any, implicit_index: bool = True) -> _Layout:
    """pandas' reading of ``names`` for a file of ``width`` columns.

    - as many names as columns: they replace the column names;
    - fewer names, no ``usecols``: the leading columns left over become the (unnamed) index,
      or are dropped from the end with ``index_col=False``;
    - more names: the columns past the file's end are all missing;
    - with a list ``usecols``: one name per file column, or one per selected column (names given
      in ``usecols`` are looked up in ``names``); a callable ``usecols`` filters the names.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"names={names!r} has duplicate names; pandas refuses them too")
    count = len(names)
    placeholders = [_UNNAMED.format(position) for position in range(width)]
    if usecols is None or callable(usecols):
        index: list = []
        if count >= width:
            file_names, extra = names[:width], names[width:]
        elif index_col is False or not implicit_index:
            if not implicit_index and index_col is not False:
                raise InvalidArgumentError(f"names={names!r} has {count} names but the data has {width} columns; "
                                           "pass one name per column, or usecols= with one name per selected column")
            file_names, extra = names + placeholders[count:], []
        else:
            if index_col is not None:
                raise InvalidArgumentError(
                    f"names={names!r} has {count} names for {width} columns, so the first {width - count} column(s) "
                    f"become the index; index_col={index_col!r} cannot be used with that: pass one name per column")
            index = placeholders[:width - count]
            file_names, extra = index + names, []
        kept = [name for name in names if usecols is None or usecols(name)]
        return _Layout(tuple(file_names), tuple(index + [n for n in file_names if n in kept]), tuple(index),
                       tuple(n for n in extra if n in kept))
    positions = _usecols_positions(names, width, usecols)
    if count == width:
        return _Layout(tuple(names), tuple(names[position] for position in positions))
    if count > width or len(positions) != count:
        raise InvalidArgumentError(
            f"Passed names did not match usecols: names={names!r} has {count} names for {width} columns and "
            f"usecols={list(usecols)!r} selects {len(positions)}; give one name per column or one per selected column")
    file_names = list(placeholders)
    for position, name in zip(positions, names):
        file_names[position] = name
    return _Layout(tuple(file_names), tuple(names))


@dataclasses.dataclass(frozen=True)
class _DateSpec:
    """A resolved ``parse_dates``: columns parsed in place, (new name, sources) combinations put
    first as pandas does, and whether the index is parsed (``parse_dates=True``)."""

    columns: tuple = ()
    combos: tuple = ()
    index: bool = False

    def sources(self) -> list:
        return [*self.columns, *(source for _, group in self.combos for source in group)]


def _date_spec(parse_dates: Any, labels: Sequence[Hashable]) -> _DateSpec:
    """Resolve ``parse_dates`` against the output columns ``labels``; a number that is not a label
    is a position, as in pandas."""
    if parse_dates is None or parse_dates is False:
        return _DateSpec()
    if parse_dates is True:
        return _DateSpec(index=True)
    labels = list(labels)

    def label(item: Any) -> Hashable:
        if isinstance(item, Hashable) and item in labels:
            return item
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool) and 0 <= item < len(labels):
            return labels[item]
        raise InvalidArgumentError(f"parse_dates={parse_dates!r}: column {item!r} is not among the columns {labels}")

    def group(items: Any) -> tuple:
        if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
            raise InvalidArgumentError(f"parse_dates={parse_dates!r}: {items!r} must be a list of columns to combine")
        return tuple(label(item) for item in items)

    if isinstance(parse_dates, Mapping):
        return _DateSpec(combos=tuple((name, group(items)) for name, items in parse_dates.items()))
    if isinstance(parse_dates, (list, tuple)):
        columns, combos = [], []
        for item in parse_dates:
            if isinstance(item, (list, tuple)):
                sources = group(item)
                combos.append(("_".join(str(source) for source in sources), sources))
            else:
                columns.append(label(item))
        return _DateSpec(tuple(columns), tuple(combos))
    raise InvalidArgumentError(
        f"parse_dates={parse_dates!r}: pass True (parse the index), a list of columns or positions, "
        "lists of columns to combine, or a dict of new name -> columns")


def _as_dates(values: Union[pd.Series, pd.Index], keep_text: bool = False) -> Union[pd.Series, pd.Index]:
    """pandas' parse_dates conversion: the text parsed as dates, or when it does not parse, the
    values unchanged (or as text with ``keep_text``, as pandas leaves an implicit index)."""
    import warnings

    if values.dtype.kind in "Mm":
        return values
    text = values if values.dtype == object else values.astype(str)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Could not infer format": pandas' own reading warns
            return pd.to_datetime(text)
    except (ValueError, TypeError, OverflowError):
        return text if keep_text else values


def _with_dates(df: pd.DataFrame, spec: _DateSpec) -> pd.DataFrame:
    if not spec.columns and not spec.combos:
        return df
    df = df.copy()
    for column in spec.columns:
        df[column] = _as_dates(df[column])
    if spec.combos:
        combined = {}
        for name, sources in spec.combos:
            text = df[list(sources)].astype(str).agg(" ".join, axis=1) if len(df) else df[sources[0]].astype(object)
            combined[name] = _as_dates(text)
        used = list(dict.fromkeys(source for _, sources in spec.combos for source in sources))
        df = pd.concat([pd.DataFrame(combined, index=df.index), df.drop(columns=used)], axis=1)
    return df


def _dated_index(df: pd.DataFrame) -> pd.DataFrame:
    """``parse_dates=True``: parse each level of the index as pandas does."""
    if isinstance(df.index, pd.RangeIndex):
        return df
    if isinstance(df.index, pd.MultiIndex):
        levels = [_as_dates(df.index.get_level_values(level)) for level in range(df.index.nlevels)]
        return df.set_axis(pd.MultiIndex.from_arrays(levels, names=df.index.names), axis=0)
    return df.set_axis(_as_dates(df.index), axis=0)


def _squeezed(frame: Any, squeeze: bool) -> Any:
    """pandas 1's ``squeeze=True``: a frame of one column becomes that column as a Series."""
    if squeeze and isinstance(frame, pd.DataFrame) and len(frame.columns) == 1:
        return frame.iloc[:, 0]
    return frame


def _set_index(df: pd.DataFrame, index_col: Any) -> pd.DataFrame:
    if index_col is None or index_col is False:
        return df
    keys = index_col if isinstance(index_col, list) else [index_col]
    names = [df.columns[key] if isinstance(key, (int, np.integer)) else key for key in keys]  # ints are positions
    return df.set_index(names)


# ---------------------------------------------------------------------------------------------
# CSV, spark backend
# ---------------------------------------------------------------------------------------------

def _csv_header(header: Any, names: Any) -> bool:
    if header == "infer":
        return names is None
    if header == 0:
        return True
    if header is None:
        return False
    raise InvalidArgumentError(f"header={header!r}: backend='spark' reads header='infer', 0 or None; use backend='pandas'")


def _single_char(value: Any, argument: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise InvalidArgumentError(f"{argument}={value!r} must be a single character")
    return value


def _csv_options(kwargs: Mapping[str, Any], header: bool) -> dict[str, str]:
    options = {"header": str(header).lower(), "sep": kwargs.get("sep", kwargs.get("delimiter", ",")),
               "quote": _single_char(kwargs.get("quotechar", '"'), "quotechar"),
               "encoding": kwargs.get("encoding") or "UTF-8", "enforceSchema": "false"}
    if kwargs.get("escapechar") is not None:
        options["escape"] = _single_char(kwargs["escapechar"], "escapechar")
    else:
        options["escape"] = options["quote"]  # pandas' doublequote=True: "" inside quotes is one quote
    if kwargs.get("comment") is not None:
        _single_char(kwargs["comment"], "comment")  # applied by _without_comments, not by a Spark option
    return options


def _without_comments(files: list[str], comment: str, quote: str) -> "SparkDataFrame":
    """The files' lines with pandas' comment rule applied: everything from the comment character
    (outside quotes) to the end of the line is dropped, and lines left blank are skipped. Spark's
    own ``comment`` option only skips lines that start with the character."""
    from pyspark.sql import functions as F

    c, q = re.escape(comment), re.escape(quote)
    before_comment = f"^((?:[^{q}{c}]|{q}[^{q}]*{q})*){c}.*$"
    lines = _session().read.text(files).select(F.regexp_replace("value", before_comment, "$1").alias("value"))
    return lines.where(F.trim("value") != "")


def _csv_source(reader: Any, files: list[str], kwargs: Mapping[str, Any], options: Mapping[str, str]) -> Callable[[Any], "SparkDataFrame"]:
    """A function reading CSV with ``reader`` from the files, or from their comment-free lines."""
    if kwargs.get("comment") is None:
        return lambda r: r.csv(files)
    lines = _without_comments(files, kwargs["comment"], options["quote"])
    jlines = getattr(lines._jdf, "as")(lines.sparkSession._jvm.org.apache.spark.sql.Encoders.STRING())
    return lambda r: r._df(r._jreader.csv(jlines))


def _escapechar(options: Mapping[str, str]) -> Optional[str]:
    return options["escape"] if options["escape"] != options["quote"] else None


def _count_fields(line: str, options: Mapping[str, str], escapechar: Optional[str] = None) -> int:
    reader = csv.reader(io.StringIO(line), delimiter=options["sep"], quotechar=options["quote"], escapechar=escapechar)
    return len(next(reader, []))


def _refill_row(df: pd.DataFrame, position: int, line: str, columns: Sequence[str], options: Mapping[str, str]) -> None:
    """Replace a row Spark split apart at an escaped separator (Spark's escape only works before
    quotes) by pandas' reading of the same line."""
    row = pd.read_csv(io.StringIO(line), header=None, names=list(columns), sep=options["sep"],
                      quotechar=options["quote"], escapechar=_escapechar(options), dtype=object)
    for column in df.columns.drop([_CORRUPT, _SOURCE]):
        text, dtype = row[column].iat[0], df[column].dtype
        value = np.nan if pd.isna(text) else text if dtype == object else (
            text.strip().lower() == "true" if dtype == bool else pd.to_numeric(text))
        df.iloc[position, df.columns.get_loc(column)] = value


def _screen_bad_lines(df: pd.DataFrame, columns: Sequence[str], options: Mapping[str, str], on_bad_lines: str) -> pd.DataFrame:
    """Apply pandas' on_bad_lines to rows Spark flagged: a row with more fields than the header is
    an error (or dropped with 'skip'/'warn'); a shorter row is kept with missing values, as pandas does."""
    width = len(columns)
    flagged = df[_CORRUPT].notna()
    keep, copied = np.ones(len(df), dtype=bool), False
    for position in np.flatnonzero(flagged.to_numpy()):
        line = df[_CORRUPT].iat[position]
        source = df[_SOURCE].iat[position]
        of_file = f" of {source!r}" if source else ""
        fields = _count_fields(line, options, _escapechar(options))
        if fields == width and _escapechar(options) and _count_fields(line, options) > width:
            df = df.copy() if not copied else df  # frames from Arrow are read-only
            copied = True
            _refill_row(df, position, line, columns, options)
        elif fields > width:
            if on_bad_lines == "error":
                raise DataReadError(
                    f"on_bad_lines='error': a row{of_file} has {fields} fields where the header has {width}: {_shown(line)}; "
                    "pass on_bad_lines='skip' to drop such rows (or check that the file is CSV text)"
                )
            keep[position] = False
        elif fields == width:
            raise DataReadError(
                f"a value in row {_shown(line)}{of_file} does not parse as its column's type; check dtype=, or read the column as str"
            )
    return df.loc[keep].drop(columns=[_CORRUPT, _SOURCE])


def _shown(line: str) -> str:
    """A flagged line for a message, cut short: a binary file read as text has long ones."""
    return repr(line) if len(line) <= 80 else repr(line[:80]) + "..."


def _read_csv_spark(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    _refuse_unknown(kwargs, _SPARK_CSV_KWARGS, "read_csv")
    names, header = kwargs.get("names"), _csv_header(kwargs.get("header", "infer"), kwargs.get("names"))
    usecols, index_col = kwargs.get("usecols"), kwargs.get("index_col")
    on_bad_lines = kwargs.get("on_bad_lines", "error")
    if on_bad_lines not in _ON_BAD_LINES:
        raise InvalidArgumentError(f"on_bad_lines={on_bad_lines!r}: backend='spark' takes one of {list(_ON_BAD_LINES)}")
    options = _csv_options(kwargs, header)
    reader = _session().read.options(**options)
    read = _csv_source(reader, files, kwargs, options)
    layout = None
    if isinstance(names, str):  # Orca: a DDL string is the schema
        inferred = _session().createDataFrame([], names).schema
    else:
        inferred = read(reader.option("inferSchema", "true")).schema
        if names is not None:
            layout = _names_layout(names, len(inferred.fields), usecols, index_col)
            inferred = StructType([StructField(str(n), f.dataType, True) for n, f in zip(layout.file_names, inferred.fields)])
    columns = [field.name for field in inferred.fields]
    selected = list(layout.selected) if layout else _select_usecols(columns, usecols)
    positional = not header and names is None
    implicit = list(layout.index) if layout else []
    # parse_dates refers to the output's labels: pandas labels a headerless file's columns 0, 1, ...
    labels = [int(c[len("_c"):]) if positional else c for c in selected if c not in implicit]
    labels += list(layout.extra) if layout else []
    dates = _date_spec(kwargs.get("parse_dates"), labels)
    as_text = [f"_c{label}" if positional else label for label in dates.sources()]
    dtype = _dtype_of_read(kwargs.get("dtype"), columns, selected, labels)
    schema = _read_schema(inferred, dtype, as_text)
    with_corrupt = StructType([*schema.fields, StructField(_CORRUPT, StringType(), True)])
    # with names=, the file's header row is replaced, not checked against the names
    reader = reader.option("enforceSchema", str(names is not None).lower())
    df = read(reader.schema(with_corrupt).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT))
    source = F.when(F.col(_CORRUPT).isNotNull(), F.input_file_name()).alias(_SOURCE)
    df = df.select(*map(convert.spark_column, [*selected, _CORRUPT]), source)
    if kwargs.get("nrows") is not None:
        df = df.limit(_nrows(kwargs["nrows"]))
    post = functools.partial(_csv_post, columns=columns, options=options, on_bad_lines=on_bad_lines, dtype=dtype or None,
                             dates=dates, index_col=index_col, positional=positional, implicit_index=tuple(implicit),
                             extra=tuple(layout.extra) if layout else (), squeeze=bool(kwargs.get("squeeze", False)))
    return _spark_shards(df, post)


def _csv_post(df: pd.DataFrame, columns: Sequence[str], options: Mapping[str, str], on_bad_lines: str, dtype: Any,
              dates: _DateSpec, index_col: Any, positional: bool = False, implicit_index: Sequence[str] = (),
              extra: Sequence[str] = (), squeeze: bool = False) -> Any:
    df = _screen_bad_lines(df, columns, options, on_bad_lines)
    if positional:  # pandas labels the columns of a headerless file 0, 1, ...; Spark calls them _c0, _c1, ...
        df.columns = [int(column[len("_c"):]) for column in df.columns]
        dtype = {int(name[len("_c"):]): value for name, value in dtype.items()} if dtype else dtype
    df = df.reset_index(drop=True)
    if extra:  # names past the file's last column: pandas fills them with NaN
        df = df.copy()
        for name in extra:
            df[name] = np.nan
    df = _with_dates(_pandas_conventions(df, dtype, [], None), dates)
    if implicit_index:  # fewer names than columns: pandas makes the leading columns an unnamed index
        if dates.index:
            df = df.assign(**{column: _as_dates(df[column], keep_text=True) for column in implicit_index})
        df = df.set_index(list(implicit_index))
        df.index.names = [None] * len(implicit_index)
    df = _set_index(df, index_col)
    return _squeezed(_dated_index(df) if dates.index and not implicit_index else df, squeeze)


def _nrows(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidArgumentError(f"nrows={value!r} must be a non-negative integer")
    return int(value)


# ---------------------------------------------------------------------------------------------
# JSON, spark backend
# ---------------------------------------------------------------------------------------------

def _first_record_keys(path: str, lines: bool) -> list[str]:
    import fsspec

    with fsspec.open(path, "rt") as handle:
        if lines:
            for line in handle:
                if line.strip():
                    return list(json.loads(line))
            return []
        records = json.load(handle)
        return list(records[0]) if isinstance(records, list) and records else []


def _json_layout(files: list[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Settle ``lines``: Spark's ``multiLine`` (Orca passed Spark options) is its opposite; when
    neither is given, a file of several lines that each hold one JSON object is JSON Lines (what
    Orca's Spark backend read by default, where pandas would fail), anything else is one document
    per file (pandas' default)."""
    kwargs = dict(kwargs)
    if "multiLine" in kwargs:
        multi_line = kwargs.pop("multiLine")
        if "lines" in kwargs and bool(kwargs["lines"]) == bool(multi_line):
            raise InvalidArgumentError(f"multiLine={multi_line!r} contradicts lines={kwargs['lines']!r}; pass only one of them")
        kwargs["lines"] = not multi_line
    if "lines" not in kwargs and kwargs.get("orient") is None and _looks_like_json_lines(files[0], kwargs.get("storage_options")):
        kwargs["lines"] = True
    return kwargs


def _looks_like_json_lines(path: str, storage_options: Optional[Mapping[str, Any]] = None) -> bool:
    import fsspec

    found = 0
    with fsspec.open(path, "rt", **(storage_options or {})) as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                if not isinstance(json.loads(line), dict):
                    return False
            except ValueError:
                return False
            found += 1
            if found == 2:
                return True
    return False


def _starts_an_array(path: str) -> bool:
    import fsspec

    with fsspec.open(path, "rt") as handle:
        return handle.read(4096).lstrip().startswith("[")


def _orca_json_extras(frame: pd.DataFrame, names: Any, usecols: Any, index_col: Any, squeeze: bool) -> Any:
    """Orca's read_json extras on one frame: ``usecols`` and ``names`` with read_csv's rules (one
    name per column, or one per selected column), then ``index_col``, then ``squeeze``."""
    if names is not None:
        if isinstance(names, str):
            raise InvalidArgumentError(f"names={names!r}: read_json takes a list of names, not a schema string")
        layout = _names_layout(names, len(frame.columns), usecols, index_col, implicit_index=False)
        frame = frame.set_axis(list(layout.file_names), axis=1)[list(layout.selected)]
    elif usecols is not None:
        frame = frame[_select_usecols(list(frame.columns), usecols)]
    return _squeezed(_set_index(frame, index_col), squeeze)


def _read_json_pandas(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    """pandas' read_json on each file (:func:`read_json_file`), with Orca's extras applied to each frame."""
    extras = {name: kwargs.pop(name, None) for name in _ORCA_JSON_KWARGS}
    shards = _read_text_with_pandas(files, read_json_file, kwargs, "read_json")
    if all(value is None for value in extras.values()):
        return shards
    post = functools.partial(_orca_json_extras, names=extras["names"], usecols=extras["usecols"],
                             index_col=extras["index_col"], squeeze=bool(extras["squeeze"]))
    return SparkXShards(shards.rdd.map(raising_transportably(post), preservesPartitioning=True))


def _read_json_spark(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    _refuse_unknown(kwargs, _SPARK_JSON_KWARGS, "read_json")
    kwargs = _json_layout(files, kwargs)
    lines, orient = bool(kwargs.get("lines", False)), kwargs.get("orient")
    if not lines and not (orient in (None, "records") and _starts_an_array(files[0])):
        # one JSON document per file in a layout Spark cannot read as rows (orient='columns',
        # 'index', 'split', 'values', 'table'): each file is parsed whole by pandas on an executor,
        # as Spark's multiLine reader would also parse it whole in one task
        return _read_json_pandas(files, kwargs)
    inferred = _session().read.json(files, multiLine=not lines).schema
    first_keys = _first_record_keys(files[0], lines)
    names = [field.name for field in inferred.fields]
    ordered = [key for key in first_keys if key in names] + [name for name in names if name not in first_keys]
    extras = {name: kwargs.get(name) for name in _ORCA_JSON_KWARGS}
    if extras["names"] is not None and not isinstance(extras["names"], str):  # errors now, not at the first action
        _names_layout(extras["names"], len(ordered), extras["usecols"], extras["index_col"], implicit_index=False)
    elif extras["usecols"] is not None:
        _select_usecols(ordered, extras["usecols"])
    dtype = _dtype_by_name(kwargs.get("dtype") if isinstance(kwargs.get("dtype"), (Mapping, type(None))) else None, names)
    convert_dates = kwargs.get("convert_dates", True)
    dates = list(convert_dates) if isinstance(convert_dates, (list, tuple)) else (
        [name for name in ordered if _DATE_LIKE.search(name)] if convert_dates else []
    )
    schema = _read_schema(inferred, dtype, dates)
    df = _session().read.schema(schema).json(files, multiLine=not lines, mode="FAILFAST").select(*map(convert.spark_column, ordered))
    if kwargs.get("nrows") is not None:
        df = df.limit(_nrows(kwargs["nrows"]))
    post = functools.partial(_json_post, dtype=dtype or None, dates=dates, names=extras["names"], usecols=extras["usecols"],
                             index_col=extras["index_col"], squeeze=bool(extras["squeeze"]))
    return _spark_shards(df, post)


def _json_post(df: pd.DataFrame, dtype: Any, dates: Sequence[str], names: Any, usecols: Any, index_col: Any, squeeze: bool) -> Any:
    df = _pandas_conventions(df, dtype=dtype, parse_dates=dates, index_col=None)
    return _orca_json_extras(df, names, usecols, index_col, squeeze)


# ---------------------------------------------------------------------------------------------
# Public readers
# ---------------------------------------------------------------------------------------------

@suggest_keywords(forwards_to=pd.read_csv, also=("squeeze",))
def read_csv(file_path: PathLike, backend: Optional[str] = None, **kwargs: Any) -> SparkXShards:
    """Read CSV files into pandas XShards.

    Parameters
    ----------
    file_path : str or list of str
        A file, a folder, a glob, or a list of them; local, ``file://``, ``hdfs://`` or ``s3://``.
    backend : {"spark", "pandas"}, optional
        Default ``OrcaContext.pandas_read_backend`` ("pandas").
    **kwargs
        pandas ``read_csv`` arguments. The spark backend translates ``sep``/``delimiter``,
        ``header`` ('infer', 0, None), ``names`` (list, or a DDL schema string), ``usecols``,
        ``dtype``, ``quotechar``, ``escapechar``, ``comment``, ``nrows``, ``index_col``,
        ``parse_dates``, ``encoding``, ``on_bad_lines`` and ``squeeze``; others are an error.
        ``names`` follows pandas' rules: fewer names than columns make the leading columns the
        index (or, with ``index_col=False``, drop the last ones); with ``usecols``, one name per
        column or per selected column. ``parse_dates`` takes every pandas form: True (the index),
        a list of names or positions, lists of columns to combine, or a dict of new name ->
        columns; text that does not parse stays text, as in pandas.
        ``squeeze=True`` (removed from pandas 2; kept for Orca code, on both backends) turns each
        shard that has a single column into a Series, as pandas 1 did.

    Returns
    -------
    SparkXShards
        One pandas DataFrame per partition (a Series with ``squeeze=True`` and one column).

    Raises
    ------
    DataReadError
        A path does not exist, a folder is empty, or (at the first action) a row has more fields
        than the header while ``on_bad_lines='error'``.
    UnknownKeywordError
        A keyword argument that neither this function nor ``pandas.read_csv`` takes (e.g.
        ``usecol``); the message names the closest ones (``usecols``).
    InvalidArgumentError
        ``backend`` is not "spark" or "pandas"; with the spark backend, a keyword argument it
        cannot translate, or a value it cannot honour (e.g. ``header=2``, a ``usecols`` or
        ``dtype`` column the files do not have).
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.pandas import read_csv
    >>> _ = init_orca_context(cores=2)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "part.csv").write_text("location,value\\nparis,1\\nlyon,2\\n")
    >>> shards = read_csv(str(folder))
    >>> shards.concat_to_pdf()["value"].sum()
    np.int64(3)
    >>> read_csv(str(folder), usecols=["value"], dtype={"value": float}).concat_to_pdf()["value"].tolist()
    [1.0, 2.0]
    >>> type(read_csv(str(folder), usecols=["value"], squeeze=True).collect()[0]).__name__
    'Series'
    >>> read_csv(str(folder), backend="pandas", skipfooter=1, engine="python").concat_to_pdf()["location"].tolist()
    ['paris']
    """
    backend, files, kwargs = _located_files(file_path, backend, kwargs)
    if backend == "pandas":
        return _read_text_with_pandas(files, read_csv_file, kwargs, "read_csv")
    with spark_read_errors():
        return _read_csv_spark(files, dict(kwargs))


@suggest_keywords(forwards_to=pd.read_json, also=(*_ORCA_JSON_KWARGS, "multiLine"))
def read_json(file_path: PathLike, backend: Optional[str] = None, **kwargs: Any) -> SparkXShards:
    """Read JSON files into pandas XShards.

    The spark backend reads JSON Lines and arrays of records with Spark, and documents of other
    layouts (``orient="columns"``, ``"index"``, ``"split"``, ``"values"``, ``"table"``) one
    file per task with pandas; it translates ``orient``, ``lines``, ``dtype``, ``nrows``,
    ``convert_dates`` and ``encoding``, and Spark's ``multiLine`` (the opposite of ``lines``).
    The pandas backend passes the pandas arguments to ``pandas.read_json``. Without ``lines`` or
    ``orient``, a file whose lines each hold one JSON object is read as JSON Lines, as Orca's
    spark backend did (pandas alone would refuse it).
    Both backends also take Orca's ``names`` and ``usecols`` (read_csv's rules: one name per
    column, or per selected column), then ``index_col`` and ``squeeze``; ``dtype`` and
    ``convert_dates`` name the file's columns.

    Parameters
    ----------
    file_path : str or list of str
        A file, a folder, a glob, or a list of them; local, ``file://``, ``hdfs://`` or ``s3://``.
    backend : {"spark", "pandas"}, optional
        Default ``OrcaContext.pandas_read_backend`` ("pandas").
    **kwargs
        pandas ``read_json`` arguments (see above for what the spark backend takes).

    Returns
    -------
    SparkXShards
        One pandas DataFrame per partition; columns in the order of the first record.

    Raises
    ------
    DataReadError
        A path does not exist or a folder is empty; at the first action, a file is not valid
        JSON of the layout asked for.
    UnknownKeywordError
        A keyword argument that neither this function nor ``pandas.read_json`` takes; the
        message names the closest ones.
    InvalidArgumentError
        ``backend`` is not "spark" or "pandas"; with the spark backend, a keyword argument it
        cannot translate, or a layout other than JSON Lines or an array of records.
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.pandas import read_json
    >>> _ = init_orca_context(cores=2)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.json"
    >>> _ = path.write_text('{"a": 1, "b": "x"}\\n{"a": 2, "b": "y"}\\n')
    >>> frame = read_json(str(path), lines=True).concat_to_pdf()
    >>> list(frame.columns), frame["a"].tolist()
    (['a', 'b'], [1, 2])
    >>> list(read_json(str(path), names=["n", "s"]).concat_to_pdf().columns)
    ['n', 's']
    """
    backend, files, kwargs = _located_files(file_path, backend, kwargs)
    if backend == "pandas":
        return _read_json_pandas(files, _json_layout(files, kwargs))
    with spark_read_errors():
        return _read_json_spark(files, dict(kwargs))


def _spark_schema(schema: Any) -> "StructType":
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        return schema
    if not isinstance(schema, str):
        raise InvalidArgumentError(f"schema={schema!r} must be a pyspark StructType or a DDL string such as 'id LONG, name STRING'")
    try:
        return _session().createDataFrame([], schema).schema
    except Exception as error:  # Spark's parse errors are not one class across versions
        raise InvalidArgumentError(f"schema={schema!r} is not a valid DDL schema string: {error}") from error


def read_parquet(file_path: PathLike, columns: Optional[Sequence[str]] = None, schema: Union["StructType", str, None] = None,
                 backend: Optional[str] = None, **kwargs: Any) -> SparkXShards:
    """Read Parquet files into pandas XShards; ``columns`` selects columns, ``schema`` sets the
    schema to read with (as in Orca).

    The spark backend passes ``kwargs`` as Spark reader options; the pandas backend passes them to
    ``pandas.read_parquet``.

    Parameters
    ----------
    file_path : str or list of str
        A file, a folder (e.g. a partitioned dataset), a glob, or a list of them; local,
        ``file://``, ``hdfs://`` or ``s3://``.
    columns : list of str, optional
        The columns to read, in this order; by default all.
    schema : pyspark.sql.types.StructType or str, optional
        Read with this schema (a StructType or a DDL string such as ``"id LONG, name STRING"``):
        only its columns, with its types; a column the files lack is all missing. The pandas
        backend gives pyarrow the same schema; Spark refuses type changes pyarrow would cast
        (e.g. string to long) with a read error at the first action.
    backend : {"spark", "pandas"}, optional
        Default ``OrcaContext.pandas_read_backend`` ("pandas").
    **kwargs
        Spark Parquet reader options (spark backend, e.g. ``mergeSchema=True``) or
        ``pandas.read_parquet`` arguments (pandas backend).

    Returns
    -------
    SparkXShards
        One pandas DataFrame per partition.

    Raises
    ------
    DataReadError
        A path does not exist or a folder is empty.
    InvalidArgumentError
        ``backend`` is not "spark" or "pandas", ``schema`` is neither a StructType nor a valid
        DDL string, or (spark backend) a column of ``columns`` is not in the files.
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.pandas import read_parquet
    >>> _ = init_orca_context(cores=2)
    >>> path = str(pathlib.Path(tempfile.mkdtemp()) / "t.parquet")
    >>> pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}).to_parquet(path)
    >>> read_parquet(path, columns=["b"]).concat_to_pdf()["b"].tolist()
    [0.5, 1.5]
    >>> read_parquet(path, schema="a LONG, c DOUBLE").concat_to_pdf().columns.tolist()
    ['a', 'c']
    """
    backend, files, kwargs = _located_files(file_path, backend, kwargs)
    spark_schema = _spark_schema(schema) if schema is not None else None
    if backend == "pandas":
        if spark_schema is not None:  # the same schema, as pyarrow's: read_parquet passes it to pyarrow
            from pyspark.sql.pandas.types import to_arrow_schema

            kwargs = dict(kwargs, schema=to_arrow_schema(spark_schema, prefers_large_types=False))
        return _read_files_with_pandas(files, pd.read_parquet, dict(kwargs, columns=columns), "read_parquet")
    reader = _session().read.options(**{k: str(v) for k, v in kwargs.items()})
    with spark_read_errors():
        df = (reader.schema(spark_schema) if spark_schema is not None else reader).parquet(*files)
    if columns is not None:
        missing = [column for column in columns if column not in df.columns]
        if missing:
            raise InvalidArgumentError(f"columns={list(columns)!r}: {missing} not in the files' columns {df.columns}")
        df = df.select(*map(convert.spark_column, columns))
    return SparkXShards.from_spark_df(df)
