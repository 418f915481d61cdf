"""Orca's reader calls, with ``zoo.orca`` replaced by ``zoo_lite``, on both backends.

Each case is checked against what pandas itself reads from the same file (or, where pandas has no
such argument, against Orca's documented meaning), with the backend chosen the Orca way:
``OrcaContext.pandas_read_backend``. Files are small and written per test, so the module is fast.
"""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from zoo_lite.data.pandas import read_csv, read_json, read_parquet
from zoo_lite.errors import DataReadError, InvalidArgumentError

pytestmark = pytest.mark.usefixtures("sc")

CSV = "ID,sale_price,location\n100529,435.5,lyon\n100530,220.0,paris\n100531,,nice\n"
NO_HEADER = "100529,435.5,lyon\n100530,220.0,paris\n100531,,nice\n"
DATES = "day,time,v,when\n2024-01-02,10:00:00,1,2024-05-01\n2024-02-03,11:30:00,2,2024-06-01\n"
JSON_LINES = '{"timestamp": "2014-07-01 00:00:00", "value": 10844}\n{"timestamp": "2014-07-01 00:30:00", "value": 8127}\n'


def write(folder: pathlib.Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def whole(shards: Any) -> Any:
    """All shards as one frame (or Series), keeping each shard's index."""
    parts = shards.collect()
    assert parts, "no shard at all"
    non_empty = [part for part in parts if len(part)] or parts[:1]
    return pd.concat(non_empty) if len(non_empty) > 1 else non_empty[0]


def pandas_read(reader: Any, path: str, **kwargs: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' FutureWarning / UserWarning on deprecated forms
        return reader(path, **kwargs)


# ---------------------------------------------------------------------------------------------
# 1. names shorter than the file's columns, with and without usecols, header=None / 0
# ---------------------------------------------------------------------------------------------

# (file, kwargs): pandas' rules for names that do not cover every column (each a Spark read: kept few)
NAMES_CASES = [
    (CSV, dict(names=["x", "y"], header=0)),  # the leading column becomes the unnamed index
    (NO_HEADER, dict(names=["x"])),  # two leading columns: a MultiIndex
    (CSV, dict(names=["x", "y"])),  # header='infer' with names: the header row is data
    (NO_HEADER, dict(names=["x", "y"], index_col=False)),  # no index: the last column is dropped
    (NO_HEADER, dict(names=["x", "y"], usecols=[2, 0])),  # one name per selected column
    (CSV, dict(names=["x", "y"], usecols=["y", "x"], header=0)),
    (CSV, dict(names=["x", "y"], usecols=lambda name: name == "y", header=0)),
    (NO_HEADER, dict(names=["w", "x", "y", "z"])),  # more names than columns: NaN column
]


def case_id(kwargs: dict) -> str:
    """The keywords as a test id that is the same in every process (a function's repr holds its address)."""
    return repr({name: f"<function {value.__name__}>" if callable(value) else value for name, value in kwargs.items()})


@pytest.mark.parametrize("text, kwargs", NAMES_CASES, ids=[case_id(kwargs) for _, kwargs in NAMES_CASES])
def test_read_csv_names_as_pandas(tmp_path, backend, text, kwargs):
    path = write(tmp_path, "f.csv", text)
    expected = pandas_read(pd.read_csv, path, **kwargs)
    pd.testing.assert_frame_equal(whole(read_csv(path, **kwargs)), expected)


def test_orca_mix_of_header_names_usecols_dtype(tmp_path, backend):
    # Orca's test_mix, on a folder of files
    write(tmp_path, "a.csv", CSV)
    folder = str(tmp_path)
    df = whole(read_csv(folder, header=0, names=["user", "item"], usecols=[0, 1]))
    assert list(df.columns) == ["user", "item"]
    df2 = whole(read_csv(folder, header=0, names=["user", "item"], usecols=[0, 1], dtype={0: np.float32, 1: np.float32}))
    assert df2.user.dtype == "float32" and df2.item.dtype == "float32"
    assert df2.index.tolist() == [0, 1, 2]  # no implicit index when usecols has one name per column
    df4 = whole(read_csv(folder, header=0, names=["user", "item", "rating"], usecols=["user", "item"], dtype={0: np.float32}))
    assert df4.user.dtype == "float32" and list(df4.columns) == ["user", "item"]


def test_names_not_matching_usecols_is_an_error_as_in_pandas(tmp_path, backend):
    path = write(tmp_path, "f.csv", CSV)
    kwargs = dict(header=0, names=["ID", "location"], usecols=["ID"])
    with pytest.raises(ValueError, match="did not match"):
        pd.read_csv(path, **kwargs)
    error = InvalidArgumentError if backend == "spark" else DataReadError
    with pytest.raises(error, match=r"(?i)names.*did not match"):
        whole(read_csv(path, **kwargs))


def test_duplicate_names_are_an_error_naming_them(tmp_path):
    path = write(tmp_path, "f.csv", CSV)
    with pytest.raises(InvalidArgumentError, match=r"names=\['a', 'a'\] has duplicate names"):
        read_csv(path, names=["a", "a"], backend="spark")


# ---------------------------------------------------------------------------------------------
# 3. squeeze (gone from pandas 2): a one-column result becomes a Series, as in pandas 1 and Orca
# ---------------------------------------------------------------------------------------------

def test_squeeze_single_column_gives_a_series(tmp_path, backend):
    path = write(tmp_path, "single_column.csv", "value\n3\n1\n2\n")
    series = whole(read_csv(path, squeeze=True))
    assert isinstance(series, pd.Series)
    pd.testing.assert_series_equal(series, pd.read_csv(path)["value"])


def test_squeeze_after_usecols_and_index_col(tmp_path, backend):
    path = write(tmp_path, "f.csv", CSV)
    series = whole(read_csv(path, usecols=["ID", "location"], index_col="ID", squeeze=True))
    pd.testing.assert_series_equal(series, pd.read_csv(path, usecols=["ID", "location"], index_col="ID")["location"])


# ---------------------------------------------------------------------------------------------
# 5. every parse_dates form pandas takes
# ---------------------------------------------------------------------------------------------

DATE_CASES = [
    dict(parse_dates=True),  # no index: nothing to parse
    dict(parse_dates=True, index_col=[0, 2]),  # each index level; 'v' does not parse and stays int
    dict(parse_dates=True, names=["a", "b"], header=0),  # the implicit index
    dict(parse_dates=[0, "when"]),  # positions and names
    dict(parse_dates=[1], usecols=["v", "when"]),  # positions count the selected columns
    dict(parse_dates=["v"]),  # text that is no date is kept as text
    dict(parse_dates=[[0, 1]], index_col=0),  # combined columns (deprecated in pandas 2.2)
    dict(parse_dates={"dt": ["day", "time"], "w": ["when"]}),
    dict(parse_dates=[0], header=None),
]


@pytest.mark.parametrize("kwargs", DATE_CASES, ids=lambda kwargs: repr(kwargs))
def test_parse_dates_forms_as_pandas(tmp_path, backend, kwargs):
    path = write(tmp_path, "d.csv", DATES)
    expected = pandas_read(pd.read_csv, path, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        actual = whole(read_csv(path, **kwargs))
    pd.testing.assert_frame_equal(actual, expected)


@pytest.mark.parametrize("parse_dates, message", [
    ("day", r"parse_dates='day': pass True"),
    (["nope"], r"parse_dates=\['nope'\]: column 'nope' is not among the columns"),
    ({"dt": "day"}, r"'day' must be a list of columns to combine"),
])
def test_parse_dates_forms_pandas_refuses_are_clear_errors(tmp_path, parse_dates, message):
    path = write(tmp_path, "d.csv", DATES)
    with pytest.raises((TypeError, ValueError)):
        pandas_read(pd.read_csv, path, parse_dates=parse_dates)
    with pytest.raises(InvalidArgumentError, match=message):
        read_csv(path, parse_dates=parse_dates, backend="spark")


# ---------------------------------------------------------------------------------------------
# 2. read_json as Orca's spark backend took it: no lines=True needed, names, usecols, dtype
# ---------------------------------------------------------------------------------------------

def test_orca_read_json_of_json_lines_without_lines_argument(tmp_path, backend):
    # Orca's test_read_json: read_json(path) of JSON Lines files, then names / usecols / dtype
    folder = tmp_path / "json"
    folder.mkdir()
    write(folder, "a.json", JSON_LINES)
    expected = pd.read_json(str(folder / "a.json"), lines=True)
    pd.testing.assert_frame_equal(whole(read_json(str(folder))), expected)
    df2 = whole(read_json(str(folder), names=["time", "value"]))
    pd.testing.assert_frame_equal(df2, expected.set_axis(["time", "value"], axis=1))
    df4 = whole(read_json(str(folder), dtype={"value": "float"}))
    assert df4.value.dtype == "float64"
    series = whole(read_json(str(folder), usecols=[0, 1], index_col=0, squeeze=True))
    pd.testing.assert_series_equal(series, expected.set_index("timestamp")["value"])


@pytest.mark.parametrize("orient", ["records", "columns", "index", "split", "values", "table"])
def test_read_json_documents_of_every_orient_as_pandas(tmp_path, backend, orient):
    frame = pd.DataFrame({"k": [1, 2, 3], "v": ["a", None, "c"], "w": [0.5, 1.5, None]}, index=["x", "y", "z"])
    path = str(tmp_path / f"{orient}.json")
    frame.to_json(path, orient=orient)
    expected = pd.read_json(path, orient=orient)
    pd.testing.assert_frame_equal(whole(read_json(path, orient=orient)), expected)


def test_read_json_array_of_records_without_orient(tmp_path, backend):
    path = write(tmp_path, "r.json", '[{"k": 1, "v": "a"},\n {"k": 2, "v": "b"}]')
    pd.testing.assert_frame_equal(whole(read_json(path)), pd.read_json(path))


def test_read_json_spark_multiline_option_as_orca_passed_it(tmp_path, backend):
    path = write(tmp_path, "r.json", '[{"k": 1, "v": "a"},\n {"k": 2, "v": "b"}]')
    pd.testing.assert_frame_equal(whole(read_json(path, multiLine=True)), pd.read_json(path))
    lines = write(tmp_path, "l.json", JSON_LINES)
    pd.testing.assert_frame_equal(whole(read_json(lines, multiLine=False)), pd.read_json(lines, lines=True))


def test_read_json_names_of_the_wrong_length_are_an_error(tmp_path):
    path = write(tmp_path, "l.json", JSON_LINES)
    with pytest.raises(InvalidArgumentError, match=r"names=\['t'\] has 1 names but the data has 2 columns"):
        read_json(path, names=["t"], backend="spark")


def test_read_json_contradicting_multiline_and_lines(tmp_path):
    path = write(tmp_path, "l.json", JSON_LINES)
    with pytest.raises(InvalidArgumentError, match=r"multiLine=True contradicts lines=True"):
        read_json(path, multiLine=True, lines=True, backend="spark")


# ---------------------------------------------------------------------------------------------
# 4. read_parquet(schema=...): read with this Spark schema, as Orca did
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def parquet_file(tmp_path) -> str:
    path = str(tmp_path / "t.parquet")
    frame = pd.DataFrame({"ID": ["1", "2"], "sale_price": pd.array([10, 20], dtype="int32"), "location": ["a", "b"]})
    frame.to_parquet(path, index=False)
    return path


def test_read_parquet_schema_struct_type(parquet_file, backend):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    # Orca's test_read_parquet: a StructType schema with columns=
    schema = StructType([StructField("ID", StringType(), True), StructField("sale_price", LongType(), True),
                         StructField("location", StringType(), True)])
    df = whole(read_parquet(parquet_file, columns=["ID", "sale_price"], schema=schema))
    assert list(df.columns) == ["ID", "sale_price"]
    assert str(df["sale_price"].dtype) == "int64"  # int32 in the file, read as the schema says


def test_read_parquet_schema_ddl_string_drops_and_adds_columns(parquet_file, backend):
    df = whole(read_parquet(parquet_file, schema="ID STRING, extra DOUBLE"))
    assert list(df.columns) == ["ID", "extra"]
    assert df["ID"].tolist() == ["1", "2"] and df["extra"].isna().all() and df["extra"].dtype == "float64"


@pytest.mark.parametrize("schema, message", [
    (42, r"schema=42 must be a pyspark StructType or a DDL string"),
    ("ID STRNG", r"schema='ID STRNG' is not a valid DDL schema string"),
])
def test_read_parquet_bad_schema_is_an_error_naming_it(parquet_file, backend, schema, message):
    with pytest.raises(InvalidArgumentError, match=message):
        read_parquet(parquet_file, schema=schema)
