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

This module holds the public readers and their arguments; the work is done by its siblings:
:mod:`~zoo_lite.data.pandas.file_listing` (backend, files, partitions),
:mod:`~zoo_lite.data.pandas.pandas_backend` with :mod:`~zoo_lite.data.pandas.pyarrow_fast_path`
(one file at a time), :mod:`~zoo_lite.data.pandas.spark_backend`, and
:mod:`~zoo_lite.data.pandas.pandas_rules` (pandas' conventions both backends follow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import pandas as pd

from zoo_lite.data import convert
from zoo_lite.data.pandas.file_listing import located_files, spark_session
from zoo_lite.data.pandas.pandas_backend import read_files_with_pandas, read_json_pandas, read_text_with_pandas
from zoo_lite.data.pandas.pandas_rules import ORCA_JSON_KWARGS, json_layout
from zoo_lite.data.pandas.pyarrow_fast_path import read_csv_file
from zoo_lite.data.pandas.spark_backend import read_csv_spark, read_json_spark
from zoo_lite.data.paths import PathLike
from zoo_lite.data.shard import SparkXShards
from zoo_lite.data.spark_jobs import spark_read_errors
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.keywords import suggest_keywords

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["read_csv", "read_json", "read_parquet"]


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
    backend, files, kwargs = located_files(file_path, backend, kwargs)
    if backend == "pandas":
        return read_text_with_pandas(files, read_csv_file, kwargs, "read_csv")
    with spark_read_errors():
        return read_csv_spark(files, dict(kwargs))


@suggest_keywords(forwards_to=pd.read_json, also=(*ORCA_JSON_KWARGS, "multiLine"))
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
    backend, files, kwargs = located_files(file_path, backend, kwargs)
    if backend == "pandas":
        return read_json_pandas(files, json_layout(files, kwargs))
    with spark_read_errors():
        return read_json_spark(files, dict(kwargs))


def _spark_schema(schema: Any) -> "StructType":
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        return schema
    if not isinstance(schema, str):
        raise InvalidArgumentError(f"schema={schema!r} must be a pyspark StructType or a DDL string such as 'id LONG, name STRING'")
    try:
        return spark_session().createDataFrame([], schema).schema
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
    backend, files, kwargs = located_files(file_path, backend, kwargs)
    spark_schema = _spark_schema(schema) if schema is not None else None
    if backend == "pandas":
        if spark_schema is not None:  # the same schema, as pyarrow's: read_parquet passes it to pyarrow
            from pyspark.sql.pandas.types import to_arrow_schema

            kwargs = dict(kwargs, schema=to_arrow_schema(spark_schema, prefers_large_types=False))
        return read_files_with_pandas(files, pd.read_parquet, dict(kwargs, columns=columns), "read_parquet")
    reader = spark_session().read.options(**{k: str(v) for k, v in kwargs.items()})
    with spark_read_errors():
        df = (reader.schema(spark_schema) if spark_schema is not None else reader).parquet(*files)
    if columns is not None:
        missing = [column for column in columns if column not in df.columns]
        if missing:
            raise InvalidArgumentError(f"columns={list(columns)!r}: {missing} not in the files' columns {df.columns}")
        df = df.select(*map(convert.spark_column, columns))
    return SparkXShards.from_spark_df(df)
