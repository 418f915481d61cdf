"""read_csv / read_json / read_parquet on real Spark, with both backends, against pandas' own readers.

Every expected frame here is what pandas itself reads from the same files. Frames are compared
after concatenating the shards and sorting the rows by all columns, because the spark backend gives
rows in Spark's scan order and the pandas backend in file order.
"""

from __future__ import annotations

import contextlib
import pathlib
import re
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from zoo_lite import OrcaContext
from zoo_lite.data.pandas import read_csv, read_json, read_parquet
from zoo_lite.data.pandas.file_listing import file_groups
from zoo_lite.data.pandas.pyarrow_fast_path import pyarrow_can_read, pyarrow_can_read_json, read_json_file
from zoo_lite.data.shard import SparkXShards
from zoo_lite.errors import DataReadError, InvalidArgumentError

pytestmark = pytest.mark.usefixtures("sc")

BACKENDS = ["spark", "pandas"]


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def write(path: pathlib.Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def shard_frames(shards: SparkXShards) -> list[pd.DataFrame]:
    """The shards, checked to be exactly one pandas DataFrame per partition."""
    assert isinstance(shards, SparkXShards)
    frames = shards.collect()
    assert len(frames) == shards.num_partitions()
    assert all(isinstance(frame, pd.DataFrame) for frame in frames), [type(f) for f in frames]
    return frames


def whole(shards: SparkXShards, ignore_index: bool = True) -> pd.DataFrame:
    frames = shard_frames(shards)
    assert frames, "no partition at all: not even an empty frame with the columns"
    non_empty = [frame for frame in frames if len(frame)] or frames[:1]
    return pd.concat(non_empty, ignore_index=ignore_index)


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), kind="mergesort").reset_index(drop=True)


def assert_same_rows(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Same rows (in any order), same columns in the same order, same dtypes."""
    assert list(actual.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(canonical(actual), canonical(expected), check_exact=True)


def pandas_concat(reader: Callable[..., pd.DataFrame], files: list[str], **kwargs: Any) -> pd.DataFrame:
    return pd.concat([reader(f, **kwargs) for f in files], ignore_index=True)


@pytest.fixture
def restore_backend():
    before = OrcaContext.pandas_read_backend
    yield
    OrcaContext.pandas_read_backend = before


# ---------------------------------------------------------------------------------------------
# test data
# ---------------------------------------------------------------------------------------------

MIXED_HEADER = "id,price,name,flag,day,stamp\n"
MIXED_FILES = {
    "part-0.csv": MIXED_HEADER
    + "1,1.5,apple,True,2024-01-02,2024-01-02 10:11:12\n"
    + "2,,banana,False,2024-02-03,2024-02-03 00:00:01\n"
    + "3,3.25,,True,2024-03-04,2024-03-04 23:59:59\n",
    "part-1.csv": MIXED_HEADER
    + "4,4.0,cherry,False,2024-04-05,2024-04-05 12:00:00\n"
    + "5,5.5,date,True,2024-05-06,2024-05-06 06:30:00\n",
    "part-2.csv": MIXED_HEADER
    + "6,,,False,2024-06-07,2024-06-07 07:07:07\n"
    + "7,7.75,fig,True,2024-07-08,2024-07-08 08:08:08\n",
}


@pytest.fixture
def mixed_csv(tmp_path) -> pathlib.Path:
    """Three CSV files with ints, floats and strings with missing values, bools, ISO dates and times."""
    folder = tmp_path / "mixed"
    for name, text in MIXED_FILES.items():
        write(folder / name, text)
    return folder


def mixed_files(folder: pathlib.Path) -> list[str]:
    return [str(folder / name) for name in sorted(MIXED_FILES)]


SIMPLE_CSV = "a,b,c\n1,x,0.5\n2,y,1.5\n3,z,2.5\n4,,3.5\n5,w,\n"


@pytest.fixture
def simple_csv(tmp_path) -> str:
    return write(tmp_path / "simple.csv", SIMPLE_CSV)


# ---------------------------------------------------------------------------------------------
# CSV: both backends give pandas' frame
# ---------------------------------------------------------------------------------------------

def test_read_csv_mixed_types_both_backends_equal_pandas(mixed_csv):
    expected = pandas_concat(pd.read_csv, mixed_files(mixed_csv))
    assert expected.dtypes.to_dict() == {
        "id": "int64", "price": "float64", "name": object, "flag": bool, "day": object, "stamp": object,
    }
    by_spark = whole(read_csv(str(mixed_csv), backend="spark"))
    by_pandas = whole(read_csv(str(mixed_csv), backend="pandas"))
    assert_same_rows(by_spark, expected)
    assert_same_rows(by_pandas, expected)
    assert_same_rows(by_spark, by_pandas)
    assert by_spark["name"].isna().sum() == 2 and by_spark["price"].isna().sum() == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_csv_ints_with_missing_values_become_float_as_in_pandas(tmp_path, backend):
    path = write(tmp_path / "ints.csv", "k,v\n1,10\n2,\n3,30\n")
    expected = pd.read_csv(path)
    assert expected["v"].dtype == "float64"
    assert_same_rows(whole(read_csv(path, backend=backend)), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_csv_bools_with_missing_values_as_in_pandas(tmp_path, backend):
    path = write(tmp_path / "bools.csv", "k,flag\n1,True\n2,\n3,False\n")
    expected = pd.read_csv(path)
    actual = whole(read_csv(path, backend=backend))
    assert list(actual.columns) == ["k", "flag"]
    assert actual["flag"].dtype == expected["flag"].dtype
    assert actual.sort_values("k")["flag"].tolist()[::2] == [True, False]
    assert actual.sort_values("k")["flag"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_csv_large_ints_stay_exact(tmp_path, backend):
    path = write(tmp_path / "big.csv", "n\n9007199254740993\n-3\n")
    expected = pd.read_csv(path)
    assert_same_rows(whole(read_csv(path, backend=backend)), expected)


# ---------------------------------------------------------------------------------------------
# paths: file, folder, glob, list, file:// URL
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["file", "folder", "glob", "list", "file_url", "folder_url", "list_mixed"])
def test_read_csv_path_forms(mixed_csv, backend, form):
    files = mixed_files(mixed_csv)
    path: Any = {
        "file": files[1],
        "folder": str(mixed_csv),
        "glob": str(mixed_csv / "part-*.csv"),
        "list": [files[2], files[0]],
        "file_url": "file://" + files[1],
        "folder_url": "file://" + str(mixed_csv),
        "list_mixed": [files[0], str(mixed_csv / "part-[12].csv")],
    }[form]
    chosen = {
        "file": [files[1]], "folder": files, "glob": files, "list": [files[2], files[0]],
        "file_url": [files[1]], "folder_url": files, "list_mixed": files,
    }[form]
    assert_same_rows(whole(read_csv(path, backend=backend)), pandas_concat(pd.read_csv, chosen))


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_csv_folder_ignores_success_and_hidden_files(mixed_csv, backend):
    write(mixed_csv / "_SUCCESS", "")
    write(mixed_csv / ".part-0.csv.crc", "\x00\x01not,a,csv\n")
    write(mixed_csv / "_metadata", "garbage,\n")
    actual = whole(read_csv(str(mixed_csv), backend=backend))
    assert_same_rows(actual, pandas_concat(pd.read_csv, mixed_files(mixed_csv)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_five_files_lose_and_duplicate_no_row(tmp_path, backend):
    sizes = [3, 1, 7, 2, 5]
    start = 0
    for number, size in enumerate(sizes):
        rows = "".join(f"{start + i},{(start + i) * 0.5}\n" for i in range(size))
        write(tmp_path / "five" / f"f{number}.csv", "key,half\n" + rows)
        start += size
    shards = read_csv(str(tmp_path / "five"), backend=backend)
    assert len(shards) == sum(sizes)
    frame = whole(shards)
    assert sorted(frame["key"].tolist()) == list(range(sum(sizes)))
    assert (frame["half"] == frame["key"] * 0.5).all()


# ---------------------------------------------------------------------------------------------
# backend selection
# ---------------------------------------------------------------------------------------------

def test_default_backend_is_pandas_and_takes_a_pandas_only_kwarg(simple_csv, restore_backend):
    assert OrcaContext.pandas_read_backend == "pandas"
    assert_same_rows(whole(read_csv(simple_csv, skiprows=[1])), pd.read_csv(simple_csv, skiprows=[1]))
    assert_same_rows(whole(read_csv(simple_csv, backend=None, skiprows=[1])), pd.read_csv(simple_csv, skiprows=[1]))


def test_pandas_backend_packs_consecutive_files_into_bounded_partitions():
    """Pure: groups of at most the limit (a larger file alone), in file order, never fewer
    groups than cores when there are that many files, none when there is no file."""
    limit = 100
    assert [list(g) for g in file_groups([40, 40, 40, 40], min_groups=1, limit=limit)] == [[0, 1], [2, 3]]
    assert [list(g) for g in file_groups([30, 250, 30], min_groups=1, limit=limit)] == [[0], [1], [2]]
    assert [list(g) for g in file_groups([100, 1, 99], min_groups=1, limit=limit)] == [[0], [1, 2]]
    assert [list(g) for g in file_groups([1] * 5, min_groups=2, limit=limit)] == [[0, 1], [2, 3, 4]]
    assert [list(g) for g in file_groups([1], min_groups=8, limit=limit)] == [[0]]
    assert file_groups([], min_groups=2, limit=limit) == []
    sizes = list(np.random.default_rng(0).integers(1, 300, 200))
    groups = file_groups(sizes, min_groups=2, limit=limit)
    assert [i for g in groups for i in g] == list(range(200))   # every file once, in order
    assert all(len(g) == 1 or sum(sizes[i] for i in g) <= limit for g in groups)


def test_pandas_backend_balances_the_bytes_across_the_cores():
    """Pure: equal files split evenly (the greedy packing gave 12 and 8 of 20 files to 2 cores, so
    one core idled for a fifth of the read), and the number of groups is a multiple of the cores."""
    assert [len(g) for g in file_groups([11] * 20, min_groups=2, limit=128)] == [10, 10]
    assert [len(g) for g in file_groups([28] * 80, min_groups=2, limit=128)] == [4] * 20
    groups = file_groups([10] * 30, min_groups=4, limit=100)   # 300 bytes: 3 groups needed, 4 made
    assert [len(g) for g in groups] == [8, 7, 8, 7] or [len(g) for g in groups] == [7, 8, 7, 8]
    assert [len(g) for g in file_groups([0] * 6, min_groups=2, limit=128)] == [3, 3]   # empty files: by count


def test_pyarrow_parses_only_with_the_keywords_that_give_pandas_frame():
    """Pure: which keywords keep pyarrow's parser, and which force pandas' C parser."""
    for fast in ({}, {"sep": ";"}, {"delimiter": "|"}, {"header": 0}, {"header": "infer", "sep": ","}):
        assert pyarrow_can_read(fast), fast
    for slow in ({"names": ["a"]}, {"usecols": [0]}, {"dtype": str}, {"header": None}, {"sep": r"\s+"},
                 {"engine": "c"}, {"skiprows": 1}, {"nrows": 2}, {"parse_dates": ["d"]}, {"na_values": ["-"]}):
        assert not pyarrow_can_read(slow), slow


def test_default_read_gives_correctly_rounded_floats_as_spark_and_the_c_parser_with_other_keywords(tmp_path):
    """pyarrow's floats are correctly rounded (pandas' float_precision="round_trip", and Spark's);
    with a keyword that needs pandas' C parser, pandas' default parse. Random doubles written with
    17 significant digits tell the two apart."""
    values = np.random.default_rng(3).normal(size=2000) * 10.0 ** np.random.default_rng(4).integers(-15, 15, 2000)
    path = write(tmp_path / "floats.csv", "k,x\n" + "".join(f"{i},{v:.17g}\n" for i, v in enumerate(values)))
    exact = pd.read_csv(path, float_precision="round_trip")
    default = pd.read_csv(path)
    assert (exact["x"] != default["x"]).any()   # the data does tell the parsers apart
    by_pandas = whole(read_csv(path, backend="pandas")).sort_values("k", ignore_index=True)
    assert by_pandas["x"].tolist() == exact["x"].tolist()
    by_spark = whole(read_csv(path, backend="spark")).sort_values("k", ignore_index=True)
    assert by_spark["x"].tolist() == exact["x"].tolist()
    with_usecols = whole(read_csv(path, backend="pandas", usecols=["k", "x"])).sort_values("k", ignore_index=True)
    assert with_usecols["x"].tolist() == default["x"].tolist()


@pytest.mark.parametrize("text", [
    "a,a,b\n1,2,x\n3,4,y\n",                        # repeated names: pandas renames them a, a.1
    "a,b\n9223372036854775808,1\n2,3\n",              # beyond int64: pandas keeps uint64, pyarrow would round
    "a,b,c\n 1, x ,inf\n2,\"\",-inf\n3,,nan\n",        # spaces, quoted empty, infinities
    "a,b\r\n1,2\r\n\r\n3,4\r\n",                       # CRLF and a blank line
    "d,t\n2024-01-02,10:11:12\n2024-01-03,00:00:01\n",  # dates and times stay text
], ids=["repeated_names", "beyond_int64", "spaces_and_infinities", "crlf_blank_line", "dates_and_times"])
def test_default_pandas_backend_gives_pandas_frame_where_pyarrow_alone_would_not(tmp_path, text):
    path = write(tmp_path / "edge.csv", text)
    expected = pd.read_csv(path)
    got = whole(read_csv(path, backend="pandas"))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_pandas_backend_reads_each_small_file_group_as_one_shard_in_file_order(tmp_path, restore_backend):
    for index in range(5):
        (tmp_path / f"part{index}.csv").write_text(f"k,v\n{index},{index * 10}\n")
    shards = read_csv(str(tmp_path), backend="pandas")
    assert shards.num_partitions() == 2   # small files: one group per core
    assert pd.concat(shards.collect())["k"].tolist() == [0, 1, 2, 3, 4]


def test_orca_context_setting_chooses_the_pandas_backend(simple_csv, restore_backend):
    OrcaContext.pandas_read_backend = "pandas"
    actual = whole(read_csv(simple_csv, skiprows=[1]))  # only pandas' reader takes skiprows
    assert_same_rows(actual, pd.read_csv(simple_csv, skiprows=[1]))
    OrcaContext.pandas_read_backend = "spark"
    with pytest.raises(InvalidArgumentError, match=r"skiprows"):
        read_csv(simple_csv, skiprows=[1])


def test_explicit_backend_wins_over_the_setting(simple_csv, restore_backend):
    OrcaContext.pandas_read_backend = "pandas"
    with pytest.raises(InvalidArgumentError, match=r"read_csv\(backend='spark'\).*'skiprows'"):
        read_csv(simple_csv, backend="spark", skiprows=[1])


def test_invalid_backend_setting_is_refused(restore_backend):
    with pytest.raises(InvalidArgumentError, match=r"pandas_read_backend='ray'"):
        OrcaContext.pandas_read_backend = "ray"
    assert OrcaContext.pandas_read_backend == "pandas"


@pytest.mark.parametrize("reader", [read_csv, read_json, read_parquet])
def test_invalid_backend_name_is_an_error_naming_it(simple_csv, reader):
    with pytest.raises(InvalidArgumentError, match=r"backend='dask'.*not supported"):
        reader(simple_csv, backend="dask")


@pytest.mark.parametrize("kwargs", [{"skiprows": 2}, {"na_values": ["x"]}])
def test_spark_backend_refuses_kwargs_it_cannot_honour(simple_csv, kwargs):
    (name,) = kwargs
    with pytest.raises(InvalidArgumentError, match=rf"read_csv\(backend='spark'\) cannot honour .*'{name}'.*backend='pandas'"):
        read_csv(simple_csv, backend="spark", **kwargs)
    # the pandas backend passes it straight to pandas
    assert_same_rows(whole(read_csv(simple_csv, backend="pandas", **kwargs)), pd.read_csv(simple_csv, **kwargs))


# ---------------------------------------------------------------------------------------------
# pandas kwargs translated by the spark backend, each against pandas on the same file
# ---------------------------------------------------------------------------------------------

def check_csv_kwargs(path: str, **kwargs: Any) -> pd.DataFrame:
    """Both backends read ``path`` with ``kwargs`` as pandas does; returns pandas' frame."""
    expected = pd.read_csv(path, **kwargs)
    for backend in BACKENDS:
        actual = whole(read_csv(path, backend=backend, **kwargs))
        try:
            assert_same_rows(actual, expected)
        except AssertionError as error:
            raise AssertionError(f"backend={backend!r}, kwargs={kwargs!r}:\n{actual}\n!=\n{expected}\n{error}") from error
    return expected


@pytest.mark.parametrize("header", ["infer", 0])
def test_header_of_the_file(simple_csv, header):
    expected = check_csv_kwargs(simple_csv, header=header)
    assert list(expected.columns) == ["a", "b", "c"]


def test_header_none_gives_positional_column_labels(tmp_path):
    path = write(tmp_path / "noheader.csv", "1,x,0.5\n2,y,1.5\n3,,2.5\n")
    expected = check_csv_kwargs(path, header=None)
    assert list(expected.columns) == [0, 1, 2]


def test_header_none_on_a_file_with_a_header_reads_it_as_data(simple_csv):
    expected = check_csv_kwargs(simple_csv, header=None)
    assert expected[0].tolist()[0] == "a"


def test_names_on_a_file_without_header(tmp_path):
    path = write(tmp_path / "noheader.csv", "1,x,0.5\n2,y,1.5\n3,,2.5\n")
    check_csv_kwargs(path, names=["n", "s", "f"])
    check_csv_kwargs(path, names=["n", "s", "f"], header=None)


def test_names_replace_the_header_with_header_0(simple_csv):
    expected = check_csv_kwargs(simple_csv, names=["n", "s", "f"], header=0)
    assert list(expected.columns) == ["n", "s", "f"] and len(expected) == 5


def test_fewer_names_than_columns_give_pandas_implicit_index(simple_csv):
    expected = pd.read_csv(simple_csv, names=["n", "s"], header=0)
    assert expected.index.tolist() == [1, 2, 3, 4, 5]
    for backend in BACKENDS:
        pd.testing.assert_frame_equal(whole(read_csv(simple_csv, backend=backend, names=["n", "s"], header=0), ignore_index=False), expected)


def test_names_not_matching_usecols_are_an_error_naming_them(simple_csv):
    with pytest.raises(InvalidArgumentError, match=re.escape("names=['n', 's']") + ".*2 names for 3 columns.*selects 1"):
        read_csv(simple_csv, backend="spark", names=["n", "s"], header=0, usecols=[0])


@pytest.mark.parametrize("kwargs", [{"parse_dates": True, "index_col": "day"}, {"parse_dates": {"when": ["day", "stamp"]}}])
def test_parse_dates_true_and_dict_agree_with_pandas(mixed_csv, kwargs):
    path = mixed_files(mixed_csv)[0]
    with pytest.warns(FutureWarning) if isinstance(kwargs["parse_dates"], dict) else contextlib.nullcontext():
        expected = pd.read_csv(path, **kwargs)
    for backend in BACKENDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            pd.testing.assert_frame_equal(whole(read_csv(path, backend=backend, **kwargs), ignore_index=False), expected)


def test_squeeze_gives_the_same_series_on_both_backends(simple_csv):
    expected = pd.read_csv(simple_csv, usecols=["c"])["c"]
    for backend in BACKENDS:
        parts = read_csv(simple_csv, backend=backend, usecols=["c"], squeeze=True).collect()
        pd.testing.assert_series_equal(pd.concat([p for p in parts if len(p)]), expected)


def test_names_as_ddl_schema_string(tmp_path):
    path = write(tmp_path / "noheader.csv", "1,x,0.5\n2,y,1.5\n3,,2.5\n")
    actual = whole(read_csv(path, backend="spark", names="n INT, s STRING, f DOUBLE"))
    expected = pd.read_csv(path, names=["n", "s", "f"])
    assert expected.dtypes.tolist() == ["int64", object, "float64"]
    assert_same_rows(actual, expected)


def test_names_as_ddl_schema_string_reads_declared_types(tmp_path):
    path = write(tmp_path / "noheader.csv", "1,007,0.5\n2,010,1.5\n")
    actual = whole(read_csv(path, backend="spark", names="n DOUBLE, code STRING, f DOUBLE"))
    assert_same_rows(actual, pd.read_csv(path, names=["n", "code", "f"], dtype={"n": "float64", "code": str}))
    assert actual["code"].tolist() == ["007", "010"]


def test_names_as_ddl_schema_string_with_header_0(simple_csv):
    actual = whole(read_csv(simple_csv, backend="spark", names="n LONG, s STRING, f DOUBLE", header=0))
    assert_same_rows(actual, pd.read_csv(simple_csv, names=["n", "s", "f"], header=0))


@pytest.mark.parametrize("usecols", [["c", "a"], ["b"], [2, 0], [1]], ids=["names", "one_name", "positions", "one_position"])
def test_usecols_by_name_and_position(simple_csv, usecols):
    expected = check_csv_kwargs(simple_csv, usecols=usecols)
    assert len(expected.columns) == len(usecols)


def test_usecols_callable(simple_csv):
    expected = check_csv_kwargs(simple_csv, usecols=lambda column: column in ("a", "c"))
    assert list(expected.columns) == ["a", "c"]


def test_usecols_with_an_unknown_column_names_it(simple_csv):
    with pytest.raises(InvalidArgumentError, match=r"usecols=\['a', 'nope'\].*'nope'"):
        read_csv(simple_csv, backend="spark", usecols=["a", "nope"])


def test_usecols_position_out_of_range_names_it(simple_csv):
    with pytest.raises(InvalidArgumentError, match=r"usecols=\[0, 7\].*position 7"):
        read_csv(simple_csv, backend="spark", usecols=[0, 7])


def test_dtype_by_name(simple_csv):
    expected = check_csv_kwargs(simple_csv, dtype={"a": "float64", "c": "float32"})
    assert expected.dtypes.to_dict() == {"a": "float64", "b": object, "c": "float32"}


def test_dtype_by_position(simple_csv):
    expected = check_csv_kwargs(simple_csv, dtype={0: "float64"})
    assert expected["a"].dtype == "float64"


def test_dtype_str_keeps_leading_zeros(tmp_path):
    path = write(tmp_path / "zips.csv", "zip,city\n01234,a\n00501,b\n90210,c\n")
    expected = check_csv_kwargs(path, dtype={"zip": str})
    assert expected["zip"].tolist() == ["01234", "00501", "90210"]


def test_dtype_str_keeps_missing_values_missing(tmp_path):
    path = write(tmp_path / "zips.csv", "zip,city\n01234,a\n,b\n90210,c\n")
    expected = check_csv_kwargs(path, dtype={"zip": str})
    assert expected["zip"].isna().tolist() == [False, True, False]


def test_dtype_for_an_unknown_column_names_it(simple_csv):
    with pytest.raises(InvalidArgumentError, match=r"dtype=\{'nope': 'float64'\}.*'nope'"):
        read_csv(simple_csv, backend="spark", dtype={"nope": "float64"})


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_sep(tmp_path, sep):
    path = write(tmp_path / "sep.csv", SIMPLE_CSV.replace(",", sep))
    expected = check_csv_kwargs(path, sep=sep)
    assert list(expected.columns) == ["a", "b", "c"]


def test_delimiter_alias(tmp_path):
    path = write(tmp_path / "sep.csv", SIMPLE_CSV.replace(",", ";"))
    check_csv_kwargs(path, delimiter=";")


def test_quoted_fields_with_separators_and_doubled_quotes(tmp_path):
    path = write(tmp_path / "q.csv", 'k,text\n1,"a, b"\n2,"say ""hi"""\n3,plain\n')
    expected = check_csv_kwargs(path)
    assert expected["text"].tolist() == ["a, b", 'say "hi"', "plain"]


def test_quotechar(tmp_path):
    path = write(tmp_path / "q.csv", "k,text\n1,'a, b'\n2,'x'\n3,plain\n")
    expected = check_csv_kwargs(path, quotechar="'")
    assert expected["text"].tolist() == ["a, b", "x", "plain"]


def test_escapechar_before_quotes(tmp_path):
    path = write(tmp_path / "e.csv", 'k,text\n1,"say \\"hi\\""\n2,"a, b"\n3,plain\n')
    expected = check_csv_kwargs(path, escapechar="\\")
    assert expected["text"].tolist() == ['say "hi"', "a, b", "plain"]


def test_escapechar_before_the_separator_in_an_unquoted_field(tmp_path):
    # what pandas' own to_csv(quoting=csv.QUOTE_NONE, escapechar="\\") writes
    path = write(tmp_path / "e.csv", "k,text\n1,a\\,b\n2,plain\n")
    expected = check_csv_kwargs(path, escapechar="\\")
    assert expected["text"].tolist() == ["a,b", "plain"]


def test_quotechar_of_two_characters_is_an_error_naming_it(simple_csv):
    with pytest.raises(InvalidArgumentError, match=r"quotechar='\"\"'.*single character"):
        read_csv(simple_csv, backend="spark", quotechar='""')


def test_comment_lines(tmp_path):
    path = write(tmp_path / "c.csv", "# exported by a tool\na,b\n1,x\n# a note\n2,y\n3,z\n")
    expected = check_csv_kwargs(path, comment="#")
    assert expected["a"].tolist() == [1, 2, 3]


def test_comment_after_values_ends_the_row_as_in_pandas(tmp_path):
    path = write(tmp_path / "c.csv", "a,b\n1,x#trailing note\n2,y\n")
    expected = check_csv_kwargs(path, comment="#")
    assert expected["b"].tolist() == ["x", "y"]


@pytest.mark.parametrize("nrows", [0, 3, 50])
def test_nrows_on_a_single_file_equals_pandas(simple_csv, nrows):
    expected = pd.read_csv(simple_csv, nrows=nrows)
    for backend in BACKENDS:
        actual = whole(read_csv(simple_csv, backend=backend, nrows=nrows))
        assert len(actual) == len(expected) == min(nrows, 5)
        # the first nrows rows of the file, in file order
        pd.testing.assert_frame_equal(actual.reset_index(drop=True), expected, check_dtype=nrows > 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nrows_over_several_files_counts_rows_across_files(mixed_csv, backend):
    shards = read_csv(str(mixed_csv), backend=backend, nrows=4)
    assert len(shards) == 4
    actual = whole(shards)
    everything = pandas_concat(pd.read_csv, mixed_files(mixed_csv))
    assert set(actual["id"]).issubset(set(everything["id"]))
    assert actual["id"].is_unique


@pytest.mark.parametrize("nrows", [-1, "3"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_nrows_is_an_error_naming_it(simple_csv, backend, nrows):
    with pytest.raises(InvalidArgumentError, match=re.escape(f"nrows={nrows!r}")):
        whole(read_csv(simple_csv, backend=backend, nrows=nrows))


@pytest.mark.parametrize("index_col", ["b", 0, ["a", "b"]], ids=["name", "position", "list"])
def test_index_col(simple_csv, index_col):
    expected = pd.read_csv(simple_csv, index_col=index_col)
    for backend in BACKENDS:
        actual = whole(read_csv(simple_csv, backend=backend, index_col=index_col), ignore_index=False)
        pd.testing.assert_frame_equal(actual, expected)


def test_parse_dates(mixed_csv):
    expected = check_csv_kwargs(mixed_files(mixed_csv)[0], parse_dates=["day", "stamp"])
    assert expected["day"].dtype.kind == "M" and expected["stamp"].dtype.kind == "M"
    assert expected["stamp"].iloc[0] == pd.Timestamp("2024-01-02 10:11:12")


def test_parse_dates_over_a_folder(mixed_csv):
    expected = pandas_concat(pd.read_csv, mixed_files(mixed_csv), parse_dates=["day"])
    for backend in BACKENDS:
        assert_same_rows(whole(read_csv(str(mixed_csv), backend=backend, parse_dates=["day"])), expected)


def test_several_kwargs_together(tmp_path):
    path = write(tmp_path / "all.csv", "# header follows\nid;zip;when;score\n1;01234;2024-01-02;0.5\n# skipped\n2;00777;2024-02-03;\n3;12345;2024-03-04;2.5\n")
    expected = check_csv_kwargs(path, sep=";", comment="#", usecols=["zip", "when", "score"],
                                dtype={"zip": str}, parse_dates=["when"], nrows=2)
    assert expected["zip"].tolist() == ["01234", "00777"]


# ---------------------------------------------------------------------------------------------
# malformed CSV: ragged rows
# ---------------------------------------------------------------------------------------------

RAGGED_LONG = "a,b\n1,x\n2,y,extra\n3,z\n"
RAGGED_SHORT = "a,b,c\n1,x,0.5\n2,y\n3,z,2.5\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_row_with_more_fields_is_a_read_error_at_the_first_action(tmp_path, backend):
    path = write(tmp_path / "ragged.csv", RAGGED_LONG)
    with pytest.raises(Exception) as by_pandas:
        pd.read_csv(path)
    assert isinstance(by_pandas.value, pd.errors.ParserError)
    shards = read_csv(path, backend=backend)  # lazy: no error yet
    with pytest.raises(DataReadError, match=r"(?s)on_bad_lines.*'skip'") as raised:
        shards.collect()
    message = str(raised.value)
    assert "3" in message and ("2,y,extra" in message or path in message)
    with pytest.raises(DataReadError, match=r"on_bad_lines"):
        len(read_csv(path, backend=backend, on_bad_lines="error"))  # 'error' is the default


@pytest.mark.parametrize("backend", BACKENDS)
def test_row_with_more_fields_is_dropped_with_skip_as_in_pandas(tmp_path, backend):
    path = write(tmp_path / "ragged.csv", RAGGED_LONG)
    expected = pd.read_csv(path, on_bad_lines="skip")
    assert expected["a"].tolist() == [1, 3]
    assert_same_rows(whole(read_csv(path, backend=backend, on_bad_lines="skip")), expected)


def test_on_bad_lines_skip_in_a_folder_with_good_files(tmp_path):
    write(tmp_path / "d" / "0.csv", RAGGED_LONG)
    write(tmp_path / "d" / "1.csv", "a,b\n10,u\n11,v\n")
    files = [str(tmp_path / "d" / n) for n in ("0.csv", "1.csv")]
    expected = pandas_concat(pd.read_csv, files, on_bad_lines="skip")
    for backend in BACKENDS:
        shards = read_csv(str(tmp_path / "d"), backend=backend, on_bad_lines="skip")
        assert len(shards) == 4
        assert_same_rows(whole(shards), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_row_with_fewer_fields_is_filled_with_nan_as_in_pandas(tmp_path, backend):
    path = write(tmp_path / "short.csv", RAGGED_SHORT)
    expected = pd.read_csv(path)
    assert expected["c"].isna().tolist() == [False, True, False]
    assert_same_rows(whole(read_csv(path, backend=backend)), expected)


def test_invalid_on_bad_lines_is_an_error_naming_it(simple_csv):
    with pytest.raises(InvalidArgumentError, match=r"on_bad_lines='ignore'"):
        read_csv(simple_csv, backend="spark", on_bad_lines="ignore")


# ---------------------------------------------------------------------------------------------
# missing inputs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reader", [read_csv, read_json, read_parquet])
@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_path_is_a_read_error_naming_file_path(tmp_path, reader, backend):
    missing = str(tmp_path / "nowhere" / "data.csv")
    with pytest.raises(DataReadError, match="Path does not exist: " + re.escape(f"file_path={missing!r}")):
        reader(missing, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_entry_in_a_list_is_a_read_error_naming_it(simple_csv, tmp_path, backend):
    missing = str(tmp_path / "gone.csv")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={missing!r}")):
        read_csv([simple_csv, missing], backend=backend)


@pytest.mark.parametrize("reader", [read_csv, read_json, read_parquet])
@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_folder_is_a_read_error(tmp_path, reader, backend):
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty / "_SUCCESS", "")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={str(empty)!r}") + ".*empty folder"):
        reader(str(empty), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_glob_matching_nothing_is_a_read_error(mixed_csv, backend):
    pattern = str(mixed_csv / "*.json")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={pattern!r}") + ".*matches no file"):
        read_csv(pattern, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_string_path_is_an_invalid_argument(backend):
    with pytest.raises(InvalidArgumentError, match=r"file_path=42"):
        read_csv(42, backend=backend)


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------

JSON_FILES = {
    "a.json": '{"z": 1, "price": 1.5, "name": "apple", "ok": true, "day": "2024-01-02", "n": null}\n'
    '{"z": 2, "price": null, "name": null, "ok": false, "day": "2024-02-03", "n": 3}\n',
    "b.json": '{"z": 3, "price": 3.25, "name": "fig", "ok": true, "day": "2024-03-04", "n": 4}\n',
    "c.json": '{"z": 4, "price": 4.0, "name": "kiwi", "ok": false, "day": "2024-04-05", "n": 5}\n'
    '{"z": 5, "price": 5.5, "name": "lime", "ok": true, "day": "2024-05-06", "n": null}\n'
    '{"z": 6, "price": null, "name": "", "ok": false, "day": "2024-06-07", "n": 7}\n',
}


@pytest.fixture
def json_lines(tmp_path) -> pathlib.Path:
    folder = tmp_path / "jsonl"
    for name, text in JSON_FILES.items():
        write(folder / name, text)
    return folder


def json_files(folder: pathlib.Path) -> list[str]:
    return [str(folder / name) for name in sorted(JSON_FILES)]


def test_read_json_lines_both_backends_equal_pandas(json_lines):
    expected = pandas_concat(pd.read_json, json_files(json_lines), lines=True)
    assert list(expected.columns) == ["z", "price", "name", "ok", "day", "n"]  # file order, not sorted
    assert expected.dtypes.to_dict() == {
        "z": "int64", "price": "float64", "name": object, "ok": bool, "day": object, "n": "float64",
    }
    by_spark = whole(read_json(str(json_lines), backend="spark", lines=True))
    by_pandas = whole(read_json(str(json_lines), backend="pandas", lines=True))
    assert_same_rows(by_spark, expected)
    assert_same_rows(by_pandas, expected)
    assert_same_rows(by_spark, by_pandas)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["file", "glob", "list", "file_url"])
def test_read_json_path_forms(json_lines, backend, form):
    files = json_files(json_lines)
    path: Any = {"file": files[2], "glob": str(json_lines / "[ab].json"), "list": [files[1], files[2]],
                 "file_url": "file://" + files[0]}[form]
    chosen = {"file": [files[2]], "glob": files[:2], "list": [files[1], files[2]], "file_url": [files[0]]}[form]
    assert_same_rows(whole(read_json(path, backend=backend, lines=True)), pandas_concat(pd.read_json, chosen, lines=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_records_array_equals_pandas(tmp_path, backend):
    path = write(tmp_path / "records.json", '[{"k": 2, "v": "b", "w": 0.5}, {"k": 1, "v": null, "w": 1.5}, {"k": 3, "v": "c", "w": null}]')
    expected = pd.read_json(path, orient="records")
    assert_same_rows(whole(read_json(path, backend=backend, orient="records")), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_converts_date_like_columns_as_pandas_does(tmp_path, backend):
    path = write(tmp_path / "dates.json", '{"id": 1, "created_at": "2024-01-02 10:00:00", "label": "2024-01-02"}\n'
                 '{"id": 2, "created_at": "2024-03-04 05:06:07", "label": "2024-03-04"}\n')
    expected = pd.read_json(path, lines=True)
    assert expected["created_at"].dtype.kind == "M" and expected["label"].dtype == object
    assert_same_rows(whole(read_json(path, backend=backend, lines=True)), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_dtype(json_lines, backend):
    expected = pandas_concat(pd.read_json, json_files(json_lines), lines=True, dtype={"z": "float64"})
    assert expected["z"].dtype == "float64"
    assert_same_rows(whole(read_json(str(json_lines), backend=backend, lines=True, dtype={"z": "float64"})), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_nrows_on_a_single_file(json_lines, backend):
    path = json_files(json_lines)[2]
    expected = pd.read_json(path, lines=True, nrows=2)
    actual = whole(read_json(path, backend=backend, lines=True, nrows=2))
    pd.testing.assert_frame_equal(actual.reset_index(drop=True), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_five_files_keep_every_row(tmp_path, backend):
    sizes = [2, 4, 1, 3, 5]
    start = 0
    for number, size in enumerate(sizes):
        write(tmp_path / "j" / f"{number}.json", "".join(f'{{"key": {start + i}}}\n' for i in range(size)))
        start += size
    shards = read_json(str(tmp_path / "j"), backend=backend, lines=True)
    assert len(shards) == sum(sizes)
    assert sorted(whole(shards)["key"].tolist()) == list(range(sum(sizes)))


def test_read_json_lines_without_lines_argument_as_orca_on_both_backends(json_lines):
    # pandas needs lines=True for these files; Orca's spark backend read them without it
    expected = pandas_concat(pd.read_json, json_files(json_lines), lines=True)
    for backend in BACKENDS:
        assert_same_rows(whole(read_json(str(json_lines), backend=backend)), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_layout_pandas_cannot_read_is_a_read_error(json_lines, backend):
    with pytest.raises(ValueError):
        pd.read_json(json_files(json_lines)[0], orient="split")
    # every file is unreadable, and they are read in parallel tasks: the error names whichever failed first
    with pytest.raises(DataReadError, match=r"read_json: reading '[^']*/[abc]\.json' failed: ValueError"):
        read_json(str(json_lines), backend=backend, orient="split").collect()


def test_pyarrow_reads_json_only_with_the_keywords_that_give_pandas_frame():
    """Pure: JSON Lines with no keyword that changes pandas' parse keeps pyarrow's reader."""
    for fast in ({"lines": True}, {"lines": True, "orient": "records"}, {"lines": True, "precise_float": True}):
        assert pyarrow_can_read_json(fast), fast
    for slow in ({}, {"lines": False}, {"orient": "records"}, {"lines": True, "orient": "split"},
                 {"lines": True, "precise_float": False}, {"lines": True, "dtype": False},
                 {"lines": True, "convert_dates": False}, {"lines": True, "nrows": 2}, {"lines": True, "chunksize": 2}):
        assert not pyarrow_can_read_json(slow), slow


JSON_EDGE_CASES = {
    "ints_text_bools": '{"k": 1, "name": "x", "ok": true}\n{"k": 2, "name": "y", "ok": false}\n',
    "floats_and_a_null": '{"k": 1.5, "s": "a"}\n{"k": null, "s": "b"}\n',
    "whole_floats": '{"k": 1.0}\n{"k": 2}\n',                        # pandas makes them integers
    "int_with_null": '{"k": 1, "s": "a"}\n{"k": null, "s": "b"}\n',     # pandas: float NaN
    "missing_key_later": '{"k": 1, "s": "a"}\n{"s": "b"}\n',
    "missing_key_first": '{"s": "a"}\n{"k": 1, "s": "b"}\n',          # pandas orders columns by first sight
    "keys_in_other_order": '{"a": 1, "b": 2}\n{"b": 3, "a": 4}\n',
    "null_text": '{"k": 1, "s": null}\n{"k": 2, "s": "b"}\n',
    "null_bool": '{"k": true}\n{"k": null}\n',
    "numeric_text": '{"k": 1, "s": "12"}\n{"k": 2, "s": "1e5"}\n',     # pandas converts it to numbers
    "date_like_name": '{"created_at": 1, "k": 2}\n',
    "date_text": '{"t": "2020-01-01T00:00:00", "k": 1}\n',
    "numeric_names": '{"1": 1, "2": 2}\n',
    "nested": '{"k": {"a": 1}, "s": "x"}\n{"k": [1, 2], "s": "y"}\n',
    "beyond_int64": '{"k": 18446744073709551615}\n',
    "blank_and_crlf_lines": '{"k": 1}\r\n\r\n  {"k": 2}  \n',
    "no_final_newline": '{"k": 1}\n{"k": 2}',
    "unicode_and_empty_text": '{"k": 1, "s": "\u00e9"}\n{"k": 2, "s": ""}\n',
    "two_objects_on_a_line": '{"k": 1} {"k": 2}\n',                    # pandas refuses it
    "object_over_two_lines": '{"k":\n 1}\n',                           # pandas refuses it
    "no_rows": "",
}


@pytest.mark.parametrize("text", list(JSON_EDGE_CASES.values()), ids=list(JSON_EDGE_CASES))
def test_json_lines_file_is_pandas_frame_or_pandas_error(tmp_path, text):
    """Pure: every JSON Lines layout gives pandas' frame (floats as with precise_float=True), or
    pandas' own error, whichever parser reads it."""
    path = write(tmp_path / "edge.json", text)
    try:
        expected = pd.read_json(path, lines=True, precise_float=True)
    except ValueError as error:
        with pytest.raises(type(error)):
            read_json_file(path, lines=True)
        return
    pd.testing.assert_frame_equal(read_json_file(path, lines=True), expected, check_exact=True)


def test_default_json_read_gives_correctly_rounded_floats_as_spark_and_pandas_default_with_other_keywords(tmp_path):
    """pyarrow's JSON floats are correctly rounded, as Spark's and pandas' precise_float=True; with
    a keyword only pandas takes, pandas' default parse. Random 17-digit doubles tell them apart."""
    rng = np.random.default_rng(5)
    values = rng.normal(size=2000) * 10.0 ** rng.integers(-15, 15, 2000)
    path = write(tmp_path / "floats.json", "".join(f'{{"k": {i}, "x": {v:.17g}}}\n' for i, v in enumerate(values)))
    exact = pd.read_json(path, lines=True, precise_float=True)
    default = pd.read_json(path, lines=True)
    assert (exact["x"] != default["x"]).any()   # the data does tell the parsers apart
    for backend in BACKENDS:
        got = whole(read_json(path, backend=backend, lines=True)).sort_values("k", ignore_index=True)
        assert got["x"].tolist() == exact["x"].tolist(), backend
    with_dtype = whole(read_json(path, backend="pandas", lines=True, dtype={"k": "int64"}))
    assert with_dtype["x"].tolist() == default["x"].tolist()


@pytest.mark.parametrize("orient", ["columns", "split"])
def test_read_json_documents_agree_with_pandas(tmp_path, orient):
    frames = [pd.DataFrame({"k": [1, 2], "v": ["a", None]}), pd.DataFrame({"k": [3], "v": ["c"]})]
    for number, frame in enumerate(frames):
        frame.to_json(tmp_path / f"{number}.json", orient=orient)
    files = [str(tmp_path / f"{number}.json") for number in range(2)]
    expected = pandas_concat(pd.read_json, files, orient=orient)
    for backend in BACKENDS:
        assert_same_rows(whole(read_json(str(tmp_path), backend=backend, orient=orient)), expected)


def test_read_json_names_and_usecols_agree(json_lines):
    expected = pandas_concat(pd.read_json, json_files(json_lines), lines=True)[["z", "name"]].set_axis(["key", "label"], axis=1)
    for backend in BACKENDS:
        actual = whole(read_json(str(json_lines), backend=backend, lines=True, usecols=[0, 2], names=["key", "label"]))
        assert_same_rows(actual, expected)


def test_read_json_spark_refuses_kwargs_it_cannot_honour(json_lines):
    with pytest.raises(InvalidArgumentError, match=r"read_json\(backend='spark'\) cannot honour .*'precise_float'"):
        read_json(str(json_lines), backend="spark", lines=True, precise_float=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_json_malformed_line_is_a_read_error(tmp_path, backend):
    path = write(tmp_path / "bad.json", '{"k": 1}\n{"k": 2\n{"k": 3}\n')
    shards = read_json(path, backend=backend, lines=True)
    with pytest.raises(DataReadError, match=r"bad\.json"):
        shards.collect()


# ---------------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def parquet_folder(tmp_path) -> pathlib.Path:
    folder = tmp_path / "pq"
    folder.mkdir()
    frames = [
        pd.DataFrame({"id": [1, 2, 3], "price": [1.5, None, 3.25], "name": ["a", None, "c"], "ok": [True, False, True]}),
        pd.DataFrame({"id": [4, 5], "price": [4.0, 5.5], "name": ["d", "e"], "ok": [False, False]}),
        pd.DataFrame({"id": [6], "price": [None], "name": [None], "ok": [True]}),
    ]
    schema = pa.schema([("id", pa.int64()), ("price", pa.float64()), ("name", pa.string()), ("ok", pa.bool_())])
    for number, frame in enumerate(frames):
        frame.to_parquet(folder / f"part-{number}.parquet", index=False, schema=schema)
    write(folder / "_SUCCESS", "")
    return folder


def parquet_files(folder: pathlib.Path) -> list[str]:
    return sorted(str(p) for p in folder.glob("part-*.parquet"))


def test_read_parquet_both_backends_equal_pandas(parquet_folder):
    expected = pandas_concat(pd.read_parquet, parquet_files(parquet_folder))
    assert expected.dtypes.to_dict() == {"id": "int64", "price": "float64", "name": object, "ok": bool}
    by_spark = whole(read_parquet(str(parquet_folder), backend="spark"))
    by_pandas = whole(read_parquet(str(parquet_folder), backend="pandas"))
    assert_same_rows(by_spark, expected)
    assert_same_rows(by_pandas, expected)
    assert_same_rows(by_spark, by_pandas)
    assert by_spark["name"].isna().sum() == 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["file", "glob", "list", "folder_url"])
def test_read_parquet_path_forms(parquet_folder, backend, form):
    files = parquet_files(parquet_folder)
    path: Any = {"file": files[1], "glob": str(parquet_folder / "part-[01].parquet"), "list": [files[2], files[0]],
                 "folder_url": "file://" + str(parquet_folder)}[form]
    chosen = {"file": [files[1]], "glob": files[:2], "list": [files[2], files[0]], "folder_url": files}[form]
    assert_same_rows(whole(read_parquet(path, backend=backend)), pandas_concat(pd.read_parquet, chosen))


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_parquet_columns(parquet_folder, backend):
    expected = pandas_concat(pd.read_parquet, parquet_files(parquet_folder), columns=["name", "id"])
    actual = whole(read_parquet(str(parquet_folder), columns=["name", "id"], backend=backend))
    assert list(actual.columns) == ["name", "id"]
    assert_same_rows(actual, expected)


def test_read_parquet_unknown_column_names_it(parquet_folder):
    with pytest.raises(InvalidArgumentError, match=r"columns=\['id', 'nope'\].*'nope'"):
        read_parquet(str(parquet_folder), columns=["id", "nope"], backend="spark")


def test_read_parquet_schema_agrees_on_both_backends(parquet_folder):
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    schema = StructType([StructField("id", LongType()), StructField("price", DoubleType()), StructField("extra", LongType())])
    expected = pandas_concat(pd.read_parquet, parquet_files(parquet_folder), columns=["id", "price"]).assign(extra=float("nan"))
    for backend in BACKENDS:
        actual = whole(read_parquet(str(parquet_folder), schema=schema, backend=backend))
        assert list(actual.columns) == ["id", "price", "extra"]
        assert actual["extra"].isna().all()
        assert_same_rows(actual.drop(columns="extra"), expected.drop(columns="extra"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_parquet_row_count(parquet_folder, backend):
    shards = read_parquet(str(parquet_folder), backend=backend)
    assert len(shards) == 6
    assert sorted(whole(shards)["id"].tolist()) == [1, 2, 3, 4, 5, 6]
