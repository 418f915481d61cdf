"""The spark backend of read_csv and read_json: Spark's readers parse the files on the executors
(splitting large files), the pandas keyword arguments translated to Spark options and schemas,
and the result converted to pandas shards through Arrow, made to look as pandas' reader makes it
(:mod:`~zoo_lite.data.pandas.pandas_rules`). A keyword it cannot honour is an error naming it.

CSV rows Spark flags as malformed get pandas' ``on_bad_lines`` treatment here; a JSON document of
a layout Spark cannot read as rows is read by :mod:`~zoo_lite.data.pandas.pandas_backend`.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from zoo_lite.data import convert
from zoo_lite.data.pandas.file_listing import spark_session
from zoo_lite.data.pandas.pandas_backend import read_json_pandas
from zoo_lite.data.pandas.pandas_rules import (DATE_LIKE, ORCA_JSON_KWARGS, DateSpec, as_dates, checked_nrows, date_spec, dated_index,
                                               json_layout, missing_strings_as_nan, names_layout, orca_json_extras, select_usecols,
                                               set_index, squeezed, with_dates)
from zoo_lite.data.shard import SparkXShards
from zoo_lite.errors import DataReadError, InvalidArgumentError, raising_transportably

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql.types import DataType, StructType

__all__ = ["read_csv_spark", "read_json_spark"]


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


def _refuse_unknown(kwargs: Mapping[str, Any], allowed: frozenset, reader: str) -> None:
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise InvalidArgumentError(
            f"{reader}(backend='spark') cannot honour the keyword argument(s) {unknown}; it translates "
            f"{sorted(allowed)}. Use backend='pandas' to pass any pandas keyword argument"
        )


def _pandas_conventions(df: pd.DataFrame, dtype: Any, parse_dates: Sequence[Hashable], index_col: Any) -> pd.DataFrame:
    """Make a frame from Spark look as pandas' reader makes it: NaN for missing strings, the
    requested dtypes and dates, and the index column."""
    df = missing_strings_as_nan(df)
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
    lines = spark_session().read.text(files).select(F.regexp_replace("value", before_comment, "$1").alias("value"))
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


def read_csv_spark(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    """read_csv's spark backend: ``kwargs`` translated to Spark's CSV reader, the frames made as pandas makes them."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    _refuse_unknown(kwargs, _SPARK_CSV_KWARGS, "read_csv")
    names, header = kwargs.get("names"), _csv_header(kwargs.get("header", "infer"), kwargs.get("names"))
    usecols, index_col = kwargs.get("usecols"), kwargs.get("index_col")
    on_bad_lines = kwargs.get("on_bad_lines", "error")
    if on_bad_lines not in _ON_BAD_LINES:
        raise InvalidArgumentError(f"on_bad_lines={on_bad_lines!r}: backend='spark' takes one of {list(_ON_BAD_LINES)}")
    options = _csv_options(kwargs, header)
    reader = spark_session().read.options(**options)
    read = _csv_source(reader, files, kwargs, options)
    layout = None
    if isinstance(names, str):  # Orca: a DDL string is the schema
        inferred = spark_session().createDataFrame([], names).schema
    else:
        inferred = read(reader.option("inferSchema", "true")).schema
        if names is not None:
            layout = names_layout(names, len(inferred.fields), usecols, index_col)
            inferred = StructType([StructField(str(n), f.dataType, True) for n, f in zip(layout.file_names, inferred.fields)])
    columns = [field.name for field in inferred.fields]
    selected = list(layout.selected) if layout else select_usecols(columns, usecols)
    positional = not header and names is None
    implicit = list(layout.index) if layout else []
    # parse_dates refers to the output's labels: pandas labels a headerless file's columns 0, 1, ...
    labels = [int(c[len("_c"):]) if positional else c for c in selected if c not in implicit]
    labels += list(layout.extra) if layout else []
    dates = date_spec(kwargs.get("parse_dates"), labels)
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
        df = df.limit(checked_nrows(kwargs["nrows"]))
    post = functools.partial(_csv_post, columns=columns, options=options, on_bad_lines=on_bad_lines, dtype=dtype or None,
                             dates=dates, index_col=index_col, positional=positional, implicit_index=tuple(implicit),
                             extra=tuple(layout.extra) if layout else (), squeeze=bool(kwargs.get("squeeze", False)))
    return _spark_shards(df, post)


def _csv_post(df: pd.DataFrame, columns: Sequence[str], options: Mapping[str, str], on_bad_lines: str, dtype: Any,
              dates: DateSpec, index_col: Any, positional: bool = False, implicit_index: Sequence[str] = (),
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
    df = with_dates(_pandas_conventions(df, dtype, [], None), dates)
    if implicit_index:  # fewer names than columns: pandas makes the leading columns an unnamed index
        if dates.index:
            df = df.assign(**{column: as_dates(df[column], keep_text=True) for column in implicit_index})
        df = df.set_index(list(implicit_index))
        df.index.names = [None] * len(implicit_index)
    df = set_index(df, index_col)
    return squeezed(dated_index(df) if dates.index and not implicit_index else df, squeeze)


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


def _starts_an_array(path: str) -> bool:
    import fsspec

    with fsspec.open(path, "rt") as handle:
        return handle.read(4096).lstrip().startswith("[")


def read_json_spark(files: list[str], kwargs: dict[str, Any]) -> SparkXShards:
    """read_json's spark backend: JSON Lines and arrays of records read by Spark, other layouts by pandas."""
    _refuse_unknown(kwargs, _SPARK_JSON_KWARGS, "read_json")
    kwargs = json_layout(files, kwargs)
    lines, orient = bool(kwargs.get("lines", False)), kwargs.get("orient")
    if not lines and not (orient in (None, "records") and _starts_an_array(files[0])):
        # one JSON document per file in a layout Spark cannot read as rows (orient='columns',
        # 'index', 'split', 'values', 'table'): each file is parsed whole by pandas on an executor,
        # as Spark's multiLine reader would also parse it whole in one task
        return read_json_pandas(files, kwargs)
    inferred = spark_session().read.json(files, multiLine=not lines).schema
    first_keys = _first_record_keys(files[0], lines)
    names = [field.name for field in inferred.fields]
    ordered = [key for key in first_keys if key in names] + [name for name in names if name not in first_keys]
    extras = {name: kwargs.get(name) for name in ORCA_JSON_KWARGS}
    if extras["names"] is not None and not isinstance(extras["names"], str):  # errors now, not at the first action
        names_layout(extras["names"], len(ordered), extras["usecols"], extras["index_col"], implicit_index=False)
    elif extras["usecols"] is not None:
        select_usecols(ordered, extras["usecols"])
    dtype = _dtype_by_name(kwargs.get("dtype") if isinstance(kwargs.get("dtype"), (Mapping, type(None))) else None, names)
    convert_dates = kwargs.get("convert_dates", True)
    dates = list(convert_dates) if isinstance(convert_dates, (list, tuple)) else (
        [name for name in ordered if DATE_LIKE.search(name)] if convert_dates else []
    )
    schema = _read_schema(inferred, dtype, dates)
    df = spark_session().read.schema(schema).json(files, multiLine=not lines, mode="FAILFAST").select(*map(convert.spark_column, ordered))
    if kwargs.get("nrows") is not None:
        df = df.limit(checked_nrows(kwargs["nrows"]))
    post = functools.partial(_json_post, dtype=dtype or None, dates=dates, names=extras["names"], usecols=extras["usecols"],
                             index_col=extras["index_col"], squeeze=bool(extras["squeeze"]))
    return _spark_shards(df, post)


def _json_post(df: pd.DataFrame, dtype: Any, dates: Sequence[str], names: Any, usecols: Any, index_col: Any, squeeze: bool) -> Any:
    df = _pandas_conventions(df, dtype=dtype, parse_dates=dates, index_col=None)
    return orca_json_extras(df, names, usecols, index_col, squeeze)
