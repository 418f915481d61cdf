"""SparkXShards on real Spark, every method compared with plain pandas / NumPy on the same data.

Most tests use the shared ``local[2]`` context (``sc`` / ``spark`` fixtures). Layouts that break
naive code are used throughout: partitions with no shard at all (``sc.parallelize(frames, n)``
with more partitions than frames), shards with zero rows, a single partition, and more partitions
than rows. The last tests (marked ``cluster``) run on ``local-cluster[2,1,1024]``, two executor
JVMs, and so must stay at the end of the module: the module-scoped ``local_cluster`` fixture
replaces the shared context until the module ends.

Functions shipped to executors are defined inside the tests (cloudpickle sends them by value), so
that no executor ever has to import this test module.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext, stop_orca_context
from zoo_lite.data import SparkXShards, XShards
from zoo_lite.errors import (
    ColumnNotFoundError,
    ContextStoppedError,
    DataReadError,
    InvalidArgumentError,
    ShardFunctionError,
    ShardMismatchError,
)

DESCRIBE_ROWS = ["count", "mean", "std", "min", "max"]


# ---------------------------------------------------------------------------------------------
# Data and layouts
# ---------------------------------------------------------------------------------------------

def make_frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "k": rng.integers(0, 7, n),
        "city": rng.choice(["ams", "ber", "cph", "dub"], n).astype(object),
        "v": rng.normal(size=n),
        "flag": rng.random(n) < 0.5,
    })


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in a canonical order (by every column, NaN last) with a fresh index."""
    return frame.sort_values(list(frame.columns), kind="mergesort", na_position="last").reset_index(drop=True)


def assert_same_rows(actual: pd.DataFrame, expected: pd.DataFrame, **kwargs) -> None:
    """Same multiset of rows (and columns, dtypes), whatever the row order."""
    pd.testing.assert_frame_equal(sorted_frame(actual), sorted_frame(expected), **kwargs)


def concat(frames) -> pd.DataFrame:
    return pd.concat(list(frames), ignore_index=True)


def shards_of(sc, items, num_partitions: int) -> SparkXShards:
    return SparkXShards(sc.parallelize(list(items), num_partitions))


def rows_per_partition(shards: SparkXShards) -> list[int]:
    return [sum(len(shard) for shard in part) for part in shards.rdd.glom().collect()]


def build_layout(sc, name: str, frame: pd.DataFrame) -> tuple[SparkXShards, pd.DataFrame]:
    """Shards of ``frame`` in one of the awkward layouts, and the frame they hold."""
    if name == "single_partition":
        items, count = [frame], 1
    elif name == "empty_partitions":
        # 3 shards (one with zero rows) over 7 partitions: 4 partitions hold no shard at all
        items, count = [frame.iloc[:25], frame.iloc[25:25], frame.iloc[25:]], 7
    elif name == "more_partitions_than_rows":
        items, count = [frame.iloc[i:i + 1] for i in range(5)], 9
    else:
        raise AssertionError(name)
    shards = shards_of(sc, items, count)
    assert shards.num_partitions() == count
    return shards, concat(items)


LAYOUTS = ["single_partition", "empty_partitions", "more_partitions_than_rows"]


@pytest.fixture
def frame() -> pd.DataFrame:
    return make_frame()


@pytest.fixture
def awkward(sc, frame) -> tuple[SparkXShards, pd.DataFrame]:
    """The layout most tests use: empty partitions and a zero-row shard."""
    return build_layout(sc, "empty_partitions", frame)


def assert_keys_colocated(parts: list[pd.DataFrame], cols: list[str]) -> None:
    """Every key value (missing values counting as one key, 1 == 1.0) sits in exactly one shard."""
    owners: dict[tuple, set[int]] = {}
    for index, part in enumerate(parts):
        keys = part[cols].astype(object).where(part[cols].notna(), "<missing>")
        for key in set(keys.itertuples(index=False, name=None)):
            owners.setdefault(key, set()).add(index)
    spread = {key: sorted(where) for key, where in owners.items() if len(where) > 1}
    assert not spread, f"keys found in more than one shard: {spread}"


# ---------------------------------------------------------------------------------------------
# XShards.partition
# ---------------------------------------------------------------------------------------------

def test_partition_ndarray_matches_np_array_split(sc):
    data = np.arange(30).reshape(10, 3)
    shards = XShards.partition(data, num_shards=3)
    assert shards.num_partitions() == 3
    got = shards.collect()
    assert sorted(len(s) for s in got) == sorted(len(p) for p in np.array_split(data, 3))
    np.testing.assert_array_equal(np.concatenate(got), data)


def test_partition_dict_of_ndarrays(sc):
    data = {"x": np.arange(24).reshape(12, 2), "y": np.arange(12) * 10}
    got = XShards.partition(data, num_shards=4).collect()
    assert len(got) == 4 and all(set(s) == {"x", "y"} and len(s["x"]) == len(s["y"]) == 3 for s in got)
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in got]), data["x"])
    np.testing.assert_array_equal(np.concatenate([s["y"] for s in got]), data["y"])


def test_partition_nested_list_tuple_dict_keeps_the_structure(sc):
    x, y, z = np.random.default_rng(1).random((9, 2)), np.arange(9), np.arange(18).reshape(9, 2)
    got = XShards.partition([x, (y, {"z": z})], num_shards=2).collect()
    assert len(got) == 2
    for shard in got:
        assert isinstance(shard, list) and isinstance(shard[1], tuple) and isinstance(shard[1][1], dict)
    np.testing.assert_array_equal(np.concatenate([s[0] for s in got]), x)
    np.testing.assert_array_equal(np.concatenate([s[1][0] for s in got]), y)
    np.testing.assert_array_equal(np.concatenate([s[1][1]["z"] for s in got]), z)


def test_partition_dataframe_and_rows_equal_to_shards(sc, frame):
    shards = XShards.partition(frame, num_shards=60)       # as many shards as rows
    got = shards.collect()
    assert shards.num_partitions() == 60 and all(len(s) == 1 for s in got)
    pd.testing.assert_frame_equal(pd.concat(got), frame)
    pd.testing.assert_frame_equal(shards.concat_to_pdf(), frame)


def test_partition_default_num_shards_is_default_parallelism(sc):
    shards = XShards.partition(np.arange(50))
    assert shards.num_partitions() == sc.defaultParallelism
    assert len(shards) == 50


def test_partition_fewer_rows_than_shards_names_num_shards(sc):
    with pytest.raises(InvalidArgumentError, match=r"num_shards=6 is more than the 5 rows"):
        XShards.partition(np.arange(5), num_shards=6)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_partition_num_shards_must_be_a_positive_integer(sc, bad):
    with pytest.raises(InvalidArgumentError, match=rf"num_shards={bad!r} must be a positive integer"):
        XShards.partition(np.arange(5), num_shards=bad)


def test_partition_ragged_leaves(sc):
    with pytest.raises(ShardMismatchError, match=r"different numbers of rows.*\['y'\]\": 7"):
        XShards.partition({"x": np.zeros((8, 2)), "y": np.zeros(7)}, num_shards=2)


@pytest.mark.parametrize("data,type_name", [([1, 2, 3], "list"), ("abc", "str"), (None, "NoneType")])
def test_partition_non_array_data(sc, data, type_name):
    with pytest.raises(InvalidArgumentError, match=rf"data of type {type_name} cannot be partitioned"):
        XShards.partition(data, num_shards=1)


def test_usage_contract_snippet_runs_unchanged(sc):
    train_images = np.random.random((20, 3, 224, 224))
    train_label_images = np.zeros(20)
    train_shards = XShards.partition([train_images, train_label_images])

    def transform_to_dict(train_data):
        return {"x": train_data[0], "y": train_data[1]}

    train_shards = train_shards.transform_shard(transform_to_dict)

    assert len(train_shards) == 20
    got = train_shards.collect()
    assert all(isinstance(s, dict) and set(s) == {"x", "y"} for s in got)
    assert all(s["x"].shape == (len(s["y"]), 3, 224, 224) and len(s["y"]) > 0 for s in got)
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in got]), train_images)
    np.testing.assert_array_equal(np.concatenate([s["y"] for s in got]), train_label_images)


def test_sparkxshards_needs_an_rdd(sc):
    with pytest.raises(InvalidArgumentError, match=r"rdd='not an rdd' must be a pyspark RDD"):
        SparkXShards("not an rdd")


# ---------------------------------------------------------------------------------------------
# transform_shard
# ---------------------------------------------------------------------------------------------

def test_transform_shard_with_args_matches_numpy(sc):
    data = np.arange(12).reshape(6, 2)
    shards = XShards.partition(data, num_shards=3)
    tripled = shards.transform_shard(np.multiply, 3).collect()
    np.testing.assert_array_equal(np.concatenate(tripled), data * 3)

    def affine(x, scale, shift):
        return x * scale + shift

    np.testing.assert_array_equal(np.concatenate(shards.transform_shard(affine, 2, -1).collect()), data * 2 - 1)
    assert shards.collect()[0].tolist() == [[0, 1], [2, 3]]     # the source is unchanged


def test_transform_shard_on_pandas_with_empty_partitions(awkward):
    shards, expected = awkward

    def negative(df, column_name):
        df[column_name] = df[column_name] * (-1)
        return df

    result = shards.transform_shard(negative, "v")
    assert result.num_partitions() == shards.num_partitions()
    pd.testing.assert_frame_equal(result.concat_to_pdf(), expected.assign(v=-expected["v"]))


def test_transform_shard_error_is_shard_function_error_with_partition_and_cause(sc):
    # two shards in four partitions: the failing shard sits in partition 3
    shards = shards_of(sc, [np.arange(3), np.arange(3, 6)], 4)

    def explode_on_big(x):
        if x.max() > 4:
            raise ValueError(f"boom at {x.max()}")
        return x

    with pytest.raises(ShardFunctionError, match=r"function '.*explode_on_big' failed on partition 3: ValueError: boom at 5") as caught:
        shards.transform_shard(explode_on_big).collect()
    error = caught.value
    assert error.partition_index == 3
    assert isinstance(error.original, ValueError) and str(error.original) == "boom at 5"
    assert error.__cause__ is error.original
    assert "explode_on_big" in error.function_name


def test_transform_shard_error_with_an_exception_that_cannot_be_pickled_is_still_shard_function_error(sc):
    class ReaderError(Exception):       # local class: not picklable by reference, custom __init__
        def __init__(self, code, text):
            super().__init__(f"{code}: {text}")

    def parse(x):
        raise ReaderError(42, "bad record")

    shards = XShards.partition(np.arange(4), num_shards=2)
    with pytest.raises(ShardFunctionError, match=r"parse' failed on partition \d: ReaderError: 42: bad record") as caught:
        shards.transform_shard(parse).collect()
    assert caught.value.partition_index in (0, 1)
    assert caught.value.__cause__ is caught.value.original


def test_transform_shard_needs_a_callable(sc):
    shards = XShards.partition(np.arange(4), num_shards=2)
    with pytest.raises(InvalidArgumentError, match=r"func=3 is not callable"):
        shards.transform_shard(3)
    with pytest.raises(InvalidArgumentError, match=r"func='f' is not callable"):
        shards.map_partitions("f")


def test_map_partitions_passes_the_partition_index_and_keeps_the_partitioning(sc):
    shards = shards_of(sc, [np.arange(2), np.arange(2, 4)], 3)   # partition 0 is empty
    tagged = shards.map_partitions(lambda shard, index: (index, shard.tolist()), with_index=True)
    assert tagged.collect() == [(1, [0, 1]), (2, [2, 3])]
    assert tagged.num_partitions() == 3
    assert shards.map_partitions(np.negative).collect()[1].tolist() == [-2, -3]


def test_map_partitions_reraises_a_zoo_lite_error_as_it_was_raised(sc):
    def need_columns(shard):
        raise ColumnNotFoundError("feature_cols=['a']: column(s) ['a'] not found")

    with pytest.raises(ColumnNotFoundError, match=r"feature_cols=\['a'\]"):
        XShards.partition(np.arange(4), num_shards=2).map_partitions(need_columns).collect()


# ---------------------------------------------------------------------------------------------
# Actions: collect, first, take, len, num_partitions; cache
# ---------------------------------------------------------------------------------------------

def test_collect_first_take_in_partition_order_skipping_empty_partitions(sc, frame):
    items = [frame.iloc[:10], frame.iloc[10:10], frame.iloc[10:30], frame.iloc[30:]]
    shards = shards_of(sc, items, 9)
    got = shards.collect()
    assert len(got) == 4
    for a, b in zip(got, items):
        pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(shards.first(), items[0])
    taken = shards.take(3)
    assert len(taken) == 3
    pd.testing.assert_frame_equal(taken[2], items[2])
    assert len(shards.take(100)) == 4


def test_first_of_no_shards_and_take_of_non_positive(sc):
    empty = SparkXShards(sc.parallelize([], 3))
    assert empty.collect() == [] and len(empty) == 0 and empty.num_partitions() == 3
    with pytest.raises(InvalidArgumentError, match=r"first\(\) of an XShards with no shards"):
        empty.first()
    with pytest.raises(InvalidArgumentError, match=r"n=0 must be a positive integer"):
        XShards.partition(np.arange(4), 2).take(0)


@pytest.mark.parametrize("name", LAYOUTS)
def test_len_counts_rows_of_pandas_shards(sc, frame, name):
    shards, expected = build_layout(sc, name, frame)
    assert len(shards) == len(expected)


def test_len_counts_rows_of_ndarray_and_dict_shards(sc):
    assert len(XShards.partition(np.zeros((17, 4)), 3)) == 17
    assert len(XShards.partition({"x": np.zeros((11, 2)), "y": np.zeros(11)}, 4)) == 11
    dict_shards = shards_of(sc, [{"x": np.zeros((5, 3)), "y": np.zeros(5)}, {"x": np.zeros((0, 3)), "y": np.zeros(0)}], 6)
    assert len(dict_shards) == 5
    assert len(shards_of(sc, ["abcd", 7], 3)) == 5      # other objects: their len, else 1


def test_cache_keeps_results_and_uncache_drops_them(sc, frame):
    calls = sc.accumulator(0)

    def counted(df):
        calls.add(1)
        return df

    base, expected = build_layout(sc, "empty_partitions", frame)
    shards = base.transform_shard(counted)
    assert not shards.is_cached()
    assert shards.cache() is shards
    assert shards.is_cached() and shards.rdd.is_cached
    assert len(shards) == len(expected)
    assert calls.value == 3
    pd.testing.assert_frame_equal(shards.concat_to_pdf(), expected)
    assert len(shards) == len(expected)
    assert calls.value == 3             # served from the cache, the function ran once per shard
    shards.uncache()
    assert not shards.is_cached() and not shards.rdd.is_cached
    assert len(shards) == len(expected)
    assert calls.value == 6


# ---------------------------------------------------------------------------------------------
# repartition
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,target", [("single_partition", 4), ("empty_partitions", 4), ("empty_partitions", 1), ("more_partitions_than_rows", 4)])
def test_repartition_keeps_rows_and_balances_them(sc, frame, name, target):
    shards, expected = build_layout(sc, name, frame)
    source_shards = len(shards.collect())
    moved = shards.repartition(target)
    assert moved.num_partitions() == target
    assert len(moved) == len(expected)
    assert_same_rows(moved.concat_to_pdf(), expected)
    counts = rows_per_partition(moved)
    assert sum(counts) == len(expected)
    # every source shard is cut into `target` near-equal pieces, so partitions differ by at most
    # one row per source shard
    assert max(counts) - min(counts) <= source_shards


def test_repartition_of_evenly_partitioned_arrays_is_even(sc):
    moved = XShards.partition(np.arange(100), 4).repartition(5)
    counts = rows_per_partition(moved)
    assert len(counts) == 5 and sum(counts) == 100 and max(counts) - min(counts) <= 4
    assert sorted(np.concatenate(moved.collect()).tolist()) == list(range(100))


def test_repartition_of_dict_shards_keeps_rows_together(sc):
    data = {"x": np.arange(40).reshape(20, 2), "y": np.arange(20)}
    moved = XShards.partition(data, 3).repartition(7)
    got = moved.collect()
    assert moved.num_partitions() == 7 and len(moved) == 20
    x = np.concatenate([s["x"] for s in got])
    y = np.concatenate([s["y"] for s in got])
    assert sorted(y.tolist()) == list(range(20))
    np.testing.assert_array_equal(x, np.stack([2 * y, 2 * y + 1], axis=1))   # rows stay aligned


def test_repartition_moves_other_objects_whole(sc):
    moved = shards_of(sc, ["a", "b", "c", "d"], 2).repartition(3)
    assert moved.num_partitions() == 3
    assert sorted(moved.collect()) == ["a", "b", "c", "d"]


def test_repartition_to_more_partitions_than_rows(sc):
    moved = XShards.partition(np.arange(3), 3).repartition(8)
    assert moved.num_partitions() == 8
    assert sorted(np.concatenate(moved.collect()).tolist()) == [0, 1, 2]
    assert sum(rows_per_partition(moved)) == 3


def test_repartition_needs_positive_count(sc):
    with pytest.raises(InvalidArgumentError, match=r"num_partitions=0 must be a positive integer"):
        XShards.partition(np.arange(4), 2).repartition(0)


# ---------------------------------------------------------------------------------------------
# partition_by
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", LAYOUTS)
def test_partition_by_colocates_keys_and_keeps_every_row(sc, frame, name):
    shards, expected = build_layout(sc, name, frame)
    moved = shards.partition_by("city", num_partitions=3)
    assert moved.num_partitions() == 3
    parts = moved.collect()
    assert_keys_colocated(parts, ["city"])
    assert_same_rows(concat(parts), expected)


def test_partition_by_multi_column_keys(awkward):
    shards, expected = awkward
    parts = shards.partition_by(["k", "city"], num_partitions=5).collect()
    assert_keys_colocated(parts, ["k", "city"])
    assert_same_rows(concat(parts), expected)


def test_partition_by_colocates_int_keys_with_float_keys_and_keeps_nan_keys(sc):
    as_int = pd.DataFrame({"k": [1, 2, 3, 1, 4], "v": [0.0, 1.0, 2.0, 3.0, 4.0]})
    as_float = pd.DataFrame({"k": [1.0, np.nan, 3.0, 2.0, np.nan, 4.0], "v": [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]})
    also_float = pd.DataFrame({"k": [np.nan, 2.0], "v": [11.0, 12.0]})
    shards = shards_of(sc, [as_int, as_float, also_float], 5)
    parts = shards.partition_by("k", num_partitions=4).collect()
    assert_keys_colocated(parts, ["k"])
    joined = concat(parts)
    assert joined["k"].isna().sum() == 3
    assert_same_rows(joined, concat([as_int, as_float, also_float]))


def test_partition_by_colocates_missing_string_keys_of_an_all_missing_shard(sc):
    # read_csv gives float64 NaN for a string column that is empty in one file, object elsewhere
    with_cities = pd.DataFrame({"city": ["ams", np.nan, "ber", None], "v": [1.0, 2.0, 3.0, 4.0]})
    all_missing = pd.DataFrame({"city": [np.nan, np.nan], "v": [5.0, 6.0]})
    assert all_missing["city"].dtype == np.float64
    parts = shards_of(sc, [with_cities, all_missing], 2).partition_by("city", num_partitions=5).collect()
    holders = [i for i, part in enumerate(parts) if part["city"].isna().any()]
    assert len(holders) == 1, f"missing keys are split over shards {holders}"
    assert sum(part["city"].isna().sum() for part in parts) == 4


def test_partition_by_default_num_partitions_is_the_current_count(awkward):
    shards, expected = awkward
    moved = shards.partition_by("k")
    assert moved.num_partitions() == shards.num_partitions() == 7
    assert_keys_colocated(moved.collect(), ["k"])
    assert len(moved) == len(expected)


def test_partition_by_missing_column_fails_at_the_action_naming_it(awkward):
    shards, _ = awkward
    moved = shards.partition_by(["k", "nope"], num_partitions=2)      # lazy, as in Spark
    with pytest.raises(ColumnNotFoundError, match=r"cols=\['k', 'nope'\]: column\(s\) \['nope'\] not found"):
        moved.collect()


def test_partition_by_no_columns_is_refused_rather_than_losing_rows(awkward):
    shards, _ = awkward
    # today no error: every row is silently dropped (key_hash of zero columns is empty)
    with pytest.raises(InvalidArgumentError, match=r"cols=\[\]"):
        shards.partition_by([], num_partitions=2).collect()


def test_partition_by_needs_pandas_shards(sc):
    with pytest.raises(InvalidArgumentError, match=r"partition_by needs pandas DataFrame shards, but a shard is a ndarray"):
        XShards.partition(np.arange(6), 2).partition_by("k", 2).collect()


# ---------------------------------------------------------------------------------------------
# Column access, unique, split, zip, schema
# ---------------------------------------------------------------------------------------------

def test_getitem_gives_series_shards(awkward):
    shards, expected = awkward
    column = shards["v"]
    got = column.collect()
    assert all(isinstance(s, pd.Series) and s.name == "v" for s in got)
    pd.testing.assert_series_equal(pd.concat(got, ignore_index=True), expected["v"])
    assert len(column) == len(expected)


def test_getitem_missing_column(awkward):
    shards, _ = awkward
    with pytest.raises(ColumnNotFoundError, match=r"Invalid key for this XShards: key='zz' is not a column; the shards have columns"):
        shards["zz"].collect()


def test_unique_matches_pd_unique(awkward):
    shards, expected = awkward
    assert shards["city"].unique().tolist() == pd.unique(expected["city"]).tolist()
    np.testing.assert_array_equal(shards["k"].unique(), pd.unique(expected["k"]))


def test_unique_keeps_nan_once_like_pd_unique(sc):
    parts = [pd.DataFrame({"x": [1.0, np.nan, 2.0]}), pd.DataFrame({"x": [np.nan, 3.0, 1.0]})]
    got = shards_of(sc, parts, 4)["x"].unique()
    np.testing.assert_array_equal(got, pd.unique(concat(parts)["x"]))


def test_unique_on_dataframe_shards_is_an_error(awkward):
    shards, _ = awkward
    with pytest.raises(InvalidArgumentError, match=r"unique\(\) needs Series shards, but a shard is a DataFrame"):
        shards.unique()


def test_split_list_shards(sc):
    x, y = np.arange(20).reshape(10, 2), np.arange(10) * 3
    shards = XShards.partition([x, y], num_shards=3)
    left, right = shards.split()
    assert left.num_partitions() == right.num_partitions() == 3
    np.testing.assert_array_equal(np.concatenate(left.collect()), x)
    np.testing.assert_array_equal(np.concatenate(right.collect()), y)


def test_split_errors(sc, awkward):
    shards, _ = awkward
    with pytest.raises(InvalidArgumentError, match=r"split\(\) needs list or tuple shards, but a shard is a DataFrame"):
        shards.split()
    uneven = shards_of(sc, [(np.arange(2), np.arange(2)), (np.arange(2), np.arange(2), np.arange(2))], 2)
    first, _ = uneven.split()
    with pytest.raises(ShardMismatchError, match=r"different lengths \(2 and 3\)"):
        first.collect()


def test_zip_pairs_shards_including_empty_partitions(sc, frame):
    shards, _ = build_layout(sc, "empty_partitions", frame)
    doubled = shards.transform_shard(lambda df: df[["v"]] * 2)
    pairs = shards.zip(doubled).collect()
    assert len(pairs) == 3
    for left, right in pairs:
        np.testing.assert_array_equal(right["v"].to_numpy(), left["v"].to_numpy() * 2)


def test_zip_with_different_partition_counts_fails_immediately(sc):
    a = XShards.partition(np.arange(10), 3)
    with pytest.raises(ShardMismatchError, match=r"this XShards has 3 partitions and other has 2"):
        a.zip(XShards.partition(np.arange(10), 2))
    with pytest.raises(InvalidArgumentError, match=r"other=\[1, 2\] must be a SparkXShards"):
        a.zip([1, 2])


def test_zip_with_different_row_counts_fails_at_the_action(sc):
    a = XShards.partition(np.arange(10), 3)          # rows [0..2], [3..5], [6..9]
    b = a.transform_shard(lambda x: x[:-1] if x[0] == 3 else x)
    zipped = a.zip(b)
    with pytest.raises(ShardMismatchError, match=r"partition 1 has 3 row\(s\) on the left and 2 on the right"):
        zipped.collect()


def test_get_schema(sc, awkward):
    shards, _ = awkward
    assert shards.get_schema() == {
        "type": "pandas",
        "columns": ["k", "city", "v", "flag"],
        "dtypes": {"k": "int64", "city": "object", "v": "float64", "flag": "bool"},
    }
    arrays = XShards.partition({"x": np.zeros((6, 3), dtype=np.float32), "y": np.zeros(6, dtype=np.int64)}, 2)
    assert arrays.get_schema()["leaves"] == {
        "['x']": {"dtype": "float32", "shape": (None, 3)},
        "['y']": {"dtype": "int64", "shape": (None,)},
    }


# ---------------------------------------------------------------------------------------------
# Spark DataFrame and pickle round trips
# ---------------------------------------------------------------------------------------------

def typed_frame(n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    values = rng.normal(size=n)
    values[::7] = np.nan
    names = rng.choice(["a", "b", "long text é"], n).astype(object)
    names[2::5] = None
    return pd.DataFrame({"i": np.arange(n, dtype=np.int64) * 1_000_000_007, "f": values, "s": names, "b": rng.random(n) < 0.3})


@pytest.mark.parametrize("name", LAYOUTS)
def test_to_spark_df_and_from_spark_df_round_trip(spark, name):
    frame = typed_frame()
    shards, expected = build_layout(spark.sparkContext, name, frame)
    df = shards.to_spark_df()
    assert df.dtypes == [("i", "bigint"), ("f", "double"), ("s", "string"), ("b", "boolean")]
    assert df.count() == len(expected)
    back = SparkXShards.from_spark_df(df)
    got = back.collect()
    assert all(list(s.dtypes) == list(frame.dtypes) for s in got)   # empty shards keep dtypes too
    pd.testing.assert_frame_equal(concat(got), expected)
    assert len(back) == len(expected)


def test_from_spark_df_gives_one_shard_per_partition_including_empty_ones(spark):
    df = spark.range(5, numPartitions=8).selectExpr("id", "id * 0.5 AS half", "CAST(id AS STRING) AS name")
    shards = SparkXShards.from_spark_df(df)
    got = shards.collect()
    assert len(got) == 8 and sum(len(s) for s in got) == 5
    assert all(list(s.columns) == ["id", "half", "name"] for s in got)
    pd.testing.assert_frame_equal(concat(got), df.toPandas())


def test_to_spark_df_with_incompatible_dtypes_names_the_column(sc):
    shards = shards_of(sc, [pd.DataFrame({"a": [1, 2], "z": [0.5, 1.5]}), pd.DataFrame({"a": ["x", "y"], "z": [2.5, 3.5]})], 2)
    with pytest.raises(InvalidArgumentError, match=r"column 'a'.*partition 1"):
        shards.to_spark_df().collect()


def test_to_spark_df_when_the_first_shard_has_an_all_missing_string_column(sc):
    # the first shard alone would give column "s" Arrow type null (Spark "void"); the data is strings
    frames = [pd.DataFrame({"n": [1], "s": [None]}), pd.DataFrame({"n": [2, 3], "s": ["x", None]})]
    df = shards_of(sc, frames, 3).to_spark_df()
    assert df.dtypes == [("n", "bigint"), ("s", "string")]
    got = SparkXShards.from_spark_df(df).concat_to_pdf()
    pd.testing.assert_frame_equal(got, concat(frames))


def test_to_spark_df_of_datetime_columns_chained_as_a_user_writes_it(sc):
    """pandas' nanosecond timestamps reach Spark as its microseconds, with and without schema=
    (both failed at the first action with 'Cannot call the method "getLong"' before)."""
    import pyarrow as pa

    frame = pd.DataFrame({"k": np.arange(40) % 3, "when": pd.date_range("2024-05-01", periods=40, freq="90min")})
    rows = XShards.partition(frame, 2).partition_by("k", num_partitions=3).to_spark_df().orderBy("when").collect()
    assert [row.when for row in rows] == [stamp.to_pydatetime() for stamp in frame["when"]]
    schema = pa.schema([("k", pa.int64()), ("when", pa.timestamp("ns"))])
    given = XShards.partition(frame, 2).to_spark_df(schema=schema).orderBy("when").collect()
    assert [row.when for row in given] == [row.when for row in rows]


def test_to_spark_df_computes_the_shards_once_and_releases_its_cache_with_the_dataframe(sc, tmp_path):
    """One pass: the shards' function runs once per shard over to_spark_df, count and collect (the
    DataFrame reads the cached Arrow payloads), int and float partitions still unify to double,
    and the cache goes when the DataFrame object does."""
    import gc

    calls = tmp_path / "calls"
    calls.mkdir()

    def counted(df):
        import uuid

        (calls / uuid.uuid4().hex).touch()
        return df.assign(twice=df["v"] * 2)

    persistent = sc._jsc.sc().getPersistentRDDs()
    before = persistent.size()
    frames = [pd.DataFrame({"v": [1, 2]}), pd.DataFrame({"v": [3.5]}), pd.DataFrame({"v": np.array([], dtype=np.int64)})]
    df = shards_of(sc, frames, 3).transform_shard(counted).to_spark_df()
    assert df.dtypes == [("v", "double"), ("twice", "double")]
    assert df.count() == 3 and sorted(row.v for row in df.collect()) == [1.0, 2.0, 3.5]
    assert len(list(calls.iterdir())) == 3
    assert sc._jsc.sc().getPersistentRDDs().size() == before + 1
    del df
    gc.collect()
    assert sc._jsc.sc().getPersistentRDDs().size() == before


def test_to_spark_df_needs_pandas_or_dict_shards(sc):
    with pytest.raises(InvalidArgumentError, match=r"to_spark_df needs pandas DataFrame shards or dicts of arrays, but a shard is a ndarray"):
        XShards.partition(np.arange(4), 2).to_spark_df()
    with pytest.raises(InvalidArgumentError, match=r"entries must be arrays with one row per first-axis entry, of equal length"):
        XShards.partition({"x": np.zeros((4, 2)), "y": np.zeros(4)}, 2).transform_shard(lambda d: {**d, "y": d["y"][:1]}).to_spark_df()


def test_to_spark_df_of_dict_shards_keeps_tensor_shapes_and_widens_unsigned_ints(sc):
    x = np.arange(5 * 2 * 3, dtype=np.uint8).reshape(5, 2, 3)
    y = np.arange(5, dtype=np.int64)
    df = XShards.partition({"x": x, "y": y}, 2).to_spark_df()
    assert df.schema.simpleString() == "struct<x:array<array<smallint>>,y:bigint>"
    rows = df.collect()
    np.testing.assert_array_equal(np.array([row.x for row in rows]), x)
    assert [row.y for row in rows] == y.tolist()


def test_save_pickle_load_pickle_round_trip_with_empty_partitions(sc, tmp_path, frame):
    shards, expected = build_layout(sc, "empty_partitions", frame)
    path = str(tmp_path / "frames")
    assert shards.save_pickle(path) is shards
    loaded = XShards.load_pickle(path)
    got = loaded.collect()
    # every shard comes back, the zero-row one too (their order follows the file listing)
    assert sorted(len(s) for s in got) == [0, 25, 35]
    assert all(list(s.dtypes) == list(frame.dtypes) for s in got)
    assert_same_rows(concat(got), expected)


def test_save_pickle_load_pickle_round_trip_of_dict_shards(sc, tmp_path):
    data = {"x": np.arange(30).reshape(15, 2), "y": np.arange(15)}
    path = str(tmp_path / "arrays")
    XShards.partition(data, 4).save_pickle(path, batchSize=1)
    loaded = XShards.load_pickle(path, minPartitions=2).collect()
    assert len(loaded) == 4
    order = np.argsort(np.concatenate([s["y"] for s in loaded]))
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in loaded])[order], data["x"])


def test_save_pickle_onto_an_existing_path_is_an_error(sc, tmp_path):
    path = tmp_path / "taken"
    path.mkdir()
    with pytest.raises(InvalidArgumentError, match=rf"path='{path}' already exists"):
        XShards.partition(np.arange(4), 2).save_pickle(str(path))


def test_load_pickle_of_a_missing_path(sc, tmp_path):
    with pytest.raises(DataReadError, match=r"Path does not exist: path='.*nowhere'"):
        XShards.load_pickle(str(tmp_path / "nowhere"))


# ---------------------------------------------------------------------------------------------
# pandas helpers
# ---------------------------------------------------------------------------------------------

def test_select(awkward):
    shards, expected = awkward
    pd.testing.assert_frame_equal(shards.select(["v", "k"]).concat_to_pdf(), expected[["v", "k"]])
    pd.testing.assert_frame_equal(shards.select("city").concat_to_pdf(), expected[["city"]])
    with pytest.raises(ColumnNotFoundError, match=r"cols=\['v', 'zz'\]"):
        shards.select(["v", "zz"]).collect()


def test_sort_values_sorts_each_shard(awkward):
    shards, _ = awkward
    ascending = False
    before = shards.collect()
    after = shards.sort_values(["k", "v"], ascending=ascending).collect()
    assert len(after) == len(before)
    for original, result in zip(before, after):
        pd.testing.assert_frame_equal(result, original.sort_values(["k", "v"], ascending=ascending))
    with pytest.raises(ColumnNotFoundError, match=r"col_names=\['zz'\]"):
        shards.sort_values("zz").collect()


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_merge_matches_pd_merge(sc, how):
    left_frame = pd.DataFrame({"k": [0, 1, 2, 2, 3, 5, 8, 8, 9], "city": list("abcdefghi"), "a": np.arange(9.0)})
    right_frame = pd.DataFrame({"k": [2, 3, 3, 4, 8, 10], "city": list("uvwxyz"), "b": np.arange(6) * 10})
    left = shards_of(sc, [left_frame.iloc[:4], left_frame.iloc[4:4], left_frame.iloc[4:]], 5)
    right = shards_of(sc, [right_frame.iloc[:2], right_frame.iloc[2:]], 3)
    got = left.merge(right, how=how, on="k").concat_to_pdf()
    assert_same_rows(got, pd.merge(left_frame, right_frame, how=how, on="k"))


def test_merge_argument_errors(awkward):
    shards, _ = awkward
    with pytest.raises(InvalidArgumentError, match=r"merge needs on="):
        shards.merge(shards)
    with pytest.raises(InvalidArgumentError, match=r"how='cross' is not a merge type"):
        shards.merge(shards, how="cross", on="k")


@pytest.mark.parametrize("agg", [{"v": "sum"}, {"v": ["min", "max"], "k": "count"}])
def test_group_by_matches_pandas(awkward, agg):
    shards, expected = awkward
    got = shards.group_by("city", agg).concat_to_pdf()
    reference = expected.groupby(["city"], dropna=False).agg(agg)
    if isinstance(reference.columns, pd.MultiIndex):
        reference.columns = [f"{a}_{b}" for a, b in reference.columns]
    assert_same_rows(got, reference.reset_index(), check_exact=False, rtol=1e-9)


def test_group_by_with_nan_keys_and_join(sc):
    frame = make_frame(50, seed=5)
    frame["k"] = frame["k"].astype(float)
    frame.loc[frame.index % 6 == 0, "k"] = np.nan
    shards = shards_of(sc, [frame.iloc[:20], frame.iloc[20:]], 4)
    got = shards.group_by(["k", "city"], {"v": "mean"}, join=True).concat_to_pdf()
    expected = frame.assign(v_agg=frame.groupby(["k", "city"], dropna=False)["v"].transform("mean"))
    assert_same_rows(got, expected, check_exact=False, rtol=1e-9)


def test_sample_fraction_subset_and_reproducibility(sc):
    frame = make_frame(200, seed=9).reset_index().rename(columns={"index": "row"})
    shards = shards_of(sc, [frame.iloc[:50], frame.iloc[50:100], frame.iloc[100:100], frame.iloc[100:]], 6)
    first = shards.sample(0.25, random_state=17).concat_to_pdf()
    again = shards.sample(0.25, random_state=17).concat_to_pdf()
    other = shards.sample(0.25, random_state=18).concat_to_pdf()
    assert abs(len(first) - 50) <= 4                   # round(frac * rows) per shard
    assert first["row"].is_unique
    pd.testing.assert_frame_equal(sorted_frame(first), sorted_frame(frame[frame["row"].isin(first["row"])]))
    pd.testing.assert_frame_equal(first, again)
    assert set(first["row"]) != set(other["row"])
    with pytest.raises(InvalidArgumentError, match=r"frac=1.5 must be in \[0, 1\]"):
        shards.sample(1.5)


@pytest.mark.parametrize("name", LAYOUTS)
def test_describe_matches_pandas(sc, name):
    frame = make_frame(60, seed=2)
    frame.loc[frame.index % 4 == 1, "v"] = np.nan
    shards, expected = build_layout(sc, name, frame)
    got = shards.describe()
    pd.testing.assert_frame_equal(got, expected.describe().loc[DESCRIBE_ROWS], check_exact=False, rtol=1e-9, atol=1e-12, check_dtype=False)
    one = shards.describe(cols=["v"])
    pd.testing.assert_frame_equal(one, expected[["v"]].describe().loc[DESCRIBE_ROWS], check_exact=False, rtol=1e-9, atol=1e-12, check_dtype=False)


@pytest.mark.parametrize("n", [6, 100])
def test_head_across_shards(sc, frame, n):
    items = [frame.iloc[:3], frame.iloc[3:3], frame.iloc[3:7], frame.iloc[7:12]]
    shards = shards_of(sc, items, 8)
    got = shards.head(n)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), concat(items).head(n))


def test_head_errors(sc):
    with pytest.raises(InvalidArgumentError, match=r"n=0 must be a positive integer"):
        XShards.partition(pd.DataFrame({"a": range(4)}), 2).head(0)
    with pytest.raises(InvalidArgumentError, match=r"head needs pandas DataFrame shards, but a shard is a ndarray"):
        XShards.partition(np.arange(4), 2).head(2)


def test_drop_missing_value(sc):
    frame = typed_frame(40)
    shards = shards_of(sc, [frame.iloc[:10], frame.iloc[10:10], frame.iloc[10:]], 5)
    pd.testing.assert_frame_equal(shards.drop_missing_value().concat_to_pdf(), frame.dropna().reset_index(drop=True))


def test_assemble_feature_label_cols(sc, frame):
    shards = shards_of(sc, [frame.iloc[:20], frame.iloc[20:]], 4)
    got = shards.assembleFeatureLabelCols(["v", "k"], ["flag"]).collect()
    assert all(set(s) == {"x", "y"} and s["x"].shape[1] == 2 and s["y"].shape[1] == 1 for s in got)
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in got]), frame[["v", "k"]].to_numpy())
    np.testing.assert_array_equal(np.concatenate([s["y"] for s in got]), frame[["flag"]].to_numpy())
    with pytest.raises(ColumnNotFoundError, match=r"label_cols=\['nope'\]"):
        shards.assembleFeatureLabelCols(["v"], ["nope"]).collect()


def test_assemble_feature_label_cols_with_a_zero_row_shard(awkward):
    shards, expected = awkward           # includes a shard with zero rows
    got = shards.assembleFeatureLabelCols(["v", "k"], ["flag"]).collect()
    assert [s["x"].shape for s in got] == [(25, 2), (0, 2), (35, 2)]
    assert [s["y"].shape for s in got] == [(25, 1), (0, 1), (35, 1)]
    np.testing.assert_array_equal(np.concatenate([s["x"] for s in got]), expected[["v", "k"]].to_numpy())


def test_deduplicates_across_shards(sc):
    frame = make_frame(30, seed=4)
    frame.loc[frame.index % 5 == 0, "v"] = np.nan
    doubled = pd.concat([frame, frame.iloc[::2], frame.iloc[::3]], ignore_index=True)
    shards = shards_of(sc, [doubled.iloc[:25], doubled.iloc[25:25], doubled.iloc[25:]], 6)
    got = shards.deduplicates().concat_to_pdf()
    assert len(got) == len(frame)
    assert_same_rows(got, doubled.drop_duplicates())


def test_max_values(awkward):
    shards, expected = awkward
    assert shards.max_values("v") == expected["v"].max()
    assert shards.max_values("city") == expected["city"].max()
    with pytest.raises(ColumnNotFoundError, match=r"col_name=\['zz'\]"):
        shards.max_values("zz")


def test_get_null_sum(sc):
    frame = typed_frame(40)
    shards = shards_of(sc, [frame.iloc[:10], frame.iloc[10:10], frame.iloc[10:]], 5)
    pd.testing.assert_series_equal(shards.get_null_sum(), frame.isnull().sum())


def test_concat_to_pdf(awkward, sc):
    shards, expected = awkward
    pd.testing.assert_frame_equal(shards.concat_to_pdf(), expected)
    with pytest.raises(InvalidArgumentError, match=r"concat_to_pdf needs pandas DataFrame shards, but a shard is a ndarray"):
        XShards.partition(np.arange(4), 2).concat_to_pdf()


# ---------------------------------------------------------------------------------------------
# What a lazy collection reads from is kept alive by every collection derived from it (issue 14:
# a RayXShards was collected before the SparkXShards from its to_spark_xshards() read it)
# ---------------------------------------------------------------------------------------------

class Source:
    """Stands for what a collection reads lazily (a RayXShards' lease): any object will do."""


def keeps(shards: SparkXShards, *sources: Source) -> bool:
    return all(any(kept is source for kept in shards._keep_alive) for source in sources)


def test_every_method_returning_a_collection_keeps_alive_what_its_inputs_keep(sc, awkward):
    from zoo_lite.data.shard import keeping_alive

    base, source = awkward[0], Source()
    assert keeping_alive(base, [source]) is base and keeps(base, source)
    derived = {
        "transform_shard": base.transform_shard(lambda frame: frame),
        "repartition": base.repartition(3),
        "partition_by": base.partition_by("k", num_partitions=2),
        "getitem": base["v"],
        "select": base.select(["k"]),
        "sort_values": base.sort_values("k"),
        "drop_missing_value": base.drop_missing_value(),
        "sample": base.sample(0.5, random_state=0),
        "assembleFeatureLabelCols": base.assembleFeatureLabelCols(["v"], ["k"]),
        "group_by": base.group_by("k", {"v": "sum"}),
        "deduplicates": base.deduplicates(),
        "chained": base.transform_shard(lambda frame: frame).repartition(2)["v"],
    }
    assert [name for name, shards in derived.items() if not keeps(shards, source)] == []
    assert len(base._keep_alive) == 1 and len(derived["chained"]._keep_alive) == 1, "each source once"
    # both inputs of zip and merge
    other = Source()
    right = keeping_alive(shards_of(sc, [make_frame(10, seed=1)], 1), [other])
    assert keeps(base.merge(right, on="k"), source, other)
    assert keeps(right.merge(base, on="k"), source, other)
    left = keeping_alive(shards_of(sc, [np.arange(3), np.arange(2)], 2), [other])
    paired = shards_of(sc, [np.arange(3), np.arange(2)], 2).transform_shard(lambda array: array)
    assert keeps(paired.zip(left), other) and keeps(left.zip(paired), other)
    # a list of collections (split), and collections that return themselves
    tuples = keeping_alive(shards_of(sc, [(np.arange(2), np.arange(2))], 1), [source])
    assert all(keeps(part, source) for part in tuples.split())
    assert keeps(tuples.cache().uncache(), source)
    # a collection without sources, or built from another's RDD, keeps nothing
    assert shards_of(sc, [np.arange(2)], 1).repartition(2)._keep_alive == ()
    assert SparkXShards(base.rdd)._keep_alive == ()


def test_a_source_lives_until_the_last_collection_derived_from_it_is_gone(sc):
    import gc
    import weakref

    from zoo_lite.data.shard import keeping_alive

    source = Source()
    gone = weakref.ref(source)
    last = keeping_alive(shards_of(sc, [np.arange(4)], 1), [source]).transform_shard(np.negative).repartition(2)
    del source
    gc.collect()
    assert gone() is not None
    assert sorted(np.concatenate(last.collect()).tolist()) == [-3, -2, -1, 0]
    del last
    gc.collect()
    assert gone() is None


def test_methods_of_a_subclass_pass_it_on_as_well(sc):
    from zoo_lite.data.shard import keeping_alive

    class Doubling(SparkXShards):
        def doubled(self) -> SparkXShards:
            return SparkXShards(self.rdd.map(lambda array: array * 2))

    source = Source()
    doubling = keeping_alive(Doubling(sc.parallelize([np.arange(2)], 1)), [source])
    assert keeps(doubling.doubled(), source) and keeps(doubling.repartition(2), source)
    assert doubling.doubled().collect()[0].tolist() == [0, 2]


# ---------------------------------------------------------------------------------------------
# A stopped context (this test stops the shared context; the next `sc` user starts it again)
# ---------------------------------------------------------------------------------------------

def test_using_shards_after_stop_orca_context_raises_context_stopped(sc):
    shards = XShards.partition(np.arange(6), 2)
    frames = shards_of(sc, [pd.DataFrame({"a": [1, 2]})], 2)
    stop_orca_context()
    assert not OrcaContext.is_active()
    for action in (shards.collect, lambda: len(shards), shards.num_partitions, lambda: shards.transform_shard(np.negative),
                   lambda: shards.repartition(3), frames.concat_to_pdf, lambda: frames.partition_by("a", 2), frames.describe):
        with pytest.raises(ContextStoppedError, match=r"stopped \(stop_orca_context\(\)\).*init_orca_context"):
            action()
    with pytest.raises(ContextStoppedError, match=r"no zoo_lite context is active"):
        XShards.partition(np.arange(6), 2)


def test_the_sc_fixture_restarts_after_a_stop(sc):
    assert OrcaContext.is_active()
    assert len(XShards.partition(np.arange(6), 2)) == 6


# ---------------------------------------------------------------------------------------------
# Two executor JVMs (local-cluster[2,1,1024]); keep these last in the module
# ---------------------------------------------------------------------------------------------

def wait_for_executors(sc, count: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sc._jsc.sc().getExecutorMemoryStatus().size() < count + 1:     # + the driver
        assert time.monotonic() < deadline, "executors did not register"
        time.sleep(0.2)


def worker_daemons(shards: SparkXShards) -> set[int]:
    """Parent pids of the Python workers that computed the shards: one pyspark daemon per executor."""
    import os

    return set(shards.transform_shard(lambda shard: os.getppid()).collect())


@pytest.fixture(scope="module")
def two_executors(local_cluster):
    wait_for_executors(local_cluster, 2)
    return local_cluster


@pytest.mark.cluster
def test_cluster_partition_by_colocates_across_executors(two_executors):
    sc = two_executors
    assert sc.master.startswith("local-cluster[2")
    frame = make_frame(400, seed=11)
    frame["k"] = frame["k"].astype(float)
    frame.loc[frame.index % 9 == 0, "k"] = np.nan
    items = [frame.iloc[i:i + 50] for i in range(0, 400, 50)]
    items[4] = items[4].dropna().astype({"k": "int64"})      # int keys in one shard, float in others
    shards = shards_of(sc, items, 10)
    moved = shards.partition_by(["city", "k"], num_partitions=6)
    assert len(worker_daemons(moved)) == 2                    # the work ran in both executors
    parts = moved.collect()
    assert len(parts) == 6
    assert_keys_colocated(parts, ["city", "k"])
    assert_same_rows(concat(parts).astype({"k": "float64"}), concat(items).astype({"k": "float64"}))


@pytest.mark.cluster
def test_cluster_repartition_keeps_rows(two_executors):
    sc = two_executors
    frame = make_frame(300, seed=12)
    shards = shards_of(sc, [frame.iloc[:100], frame.iloc[100:100], frame.iloc[100:]], 5)
    moved = shards.repartition(4)
    assert moved.num_partitions() == 4
    counts = rows_per_partition(moved)
    assert sum(counts) == 300 and max(counts) - min(counts) <= 3
    assert_same_rows(moved.concat_to_pdf(), frame)


@pytest.mark.cluster
def test_cluster_spark_df_round_trip(two_executors):
    sc = two_executors
    spark = OrcaContext.get_spark_session()
    frame = typed_frame(200)
    shards = shards_of(sc, [frame.iloc[i:i + 40] for i in range(0, 200, 40)] + [frame.iloc[:0]], 8)
    df = shards.to_spark_df()
    assert df.sparkSession is spark
    assert df.count() == 200
    back = SparkXShards.from_spark_df(df.repartition(3))
    assert back.num_partitions() == 3
    got = back.concat_to_pdf()
    assert list(got.dtypes) == list(frame.dtypes)
    assert_same_rows(got, frame)
