"""The pure per-shard functions behind SparkXShards, checked against plain pandas / NumPy.

No Spark here: everything runs in this process on pandas frames and NumPy arrays (one test checks
in a fresh interpreter that importing partition_ops does not import pyspark).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from zoo_lite.data import partition_ops as ops
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, ShardMismatchError

DESCRIBE_ROWS = ["count", "mean", "std", "min", "max"]


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in a canonical order (every column, NaN last) with a fresh index."""
    return frame.sort_values(list(frame.columns), kind="mergesort", na_position="last").reset_index(drop=True)


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 40
    keys = rng.integers(0, 6, n).astype(float)
    keys[[3, 17, 30]] = np.nan
    return pd.DataFrame({
        "k": keys,
        "city": rng.choice(["ams", "ber", "cph"], n),
        "v": rng.normal(size=n),
        "n": rng.integers(-5, 5, n),
    })


# ---------------------------------------------------------------------------------------------
# Row trees
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    np.arange(3),
    np.zeros((4, 2)),
    pd.DataFrame({"a": [1, 2]}),
    pd.Series([1.0]),
    {"x": np.zeros((2, 3)), "y": np.arange(2)},
    [np.arange(2), (np.arange(2), {"z": np.ones(2)})],
    (pd.DataFrame({"a": []}),),
])
def test_is_row_tree_accepts_arrays_frames_and_nests_of_them(value):
    assert ops.is_row_tree(value)


@pytest.mark.parametrize("value", [
    np.array(3.0),              # 0-d: no rows
    {},
    [],
    (),
    [1, 2, 3],
    {"x": np.arange(2), "y": 5},
    "abc",
    7,
    None,
])
def test_is_row_tree_rejects_everything_else(value):
    assert not ops.is_row_tree(value)


def test_tree_leaves_paths_follow_the_nesting():
    x, a, b = np.zeros(2), np.ones(2), np.arange(2)
    leaves = ops.tree_leaves({"x": x, "y": [a, (b,)]})
    assert [path for path, _ in leaves] == ["['x']", "['y'][0]", "['y'][1][0]"]
    assert leaves[0][1] is x and leaves[1][1] is a and leaves[2][1] is b
    assert ops.tree_leaves(x) == [("", x)]


def test_num_rows_and_shard_length():
    assert ops.num_rows({"x": np.zeros((5, 3)), "y": np.zeros(5)}) == 5
    assert ops.num_rows(pd.DataFrame({"a": range(7)})) == 7
    assert ops.num_rows([1, 2]) is None
    assert ops.num_rows(np.zeros((0, 4))) == 0
    assert ops.shard_length(pd.DataFrame({"a": range(7)})) == 7
    assert ops.shard_length([np.zeros(4), np.zeros(4)]) == 4   # rows, not the list's length
    assert ops.shard_length(["a", "b", "c"]) == 3               # len of a plain object
    assert ops.shard_length(12) == 1                            # no len at all


def test_slice_rows_is_iloc_for_pandas_and_slicing_for_arrays_keeping_container_types():
    frame = pd.DataFrame({"a": range(6)}, index=list("uvwxyz"))
    tree = {"f": frame, "t": (np.arange(6), np.arange(12).reshape(6, 2))}
    part = ops.slice_rows(tree, 2, 5)
    pd.testing.assert_frame_equal(part["f"], frame.iloc[2:5])
    assert isinstance(part["t"], tuple)
    np.testing.assert_array_equal(part["t"][0], np.arange(6)[2:5])
    np.testing.assert_array_equal(part["t"][1], np.arange(12).reshape(6, 2)[2:5])


def test_concat_shards_gives_default_indexed_frames_a_fresh_range_index(frame):
    pieces = [frame.iloc[:10], frame.iloc[25:], frame.iloc[10:25]]
    (joined,) = ops.concat_shards(pieces)
    pd.testing.assert_frame_equal(joined, pd.concat(pieces, ignore_index=True))
    assert isinstance(joined.index, pd.RangeIndex)


def test_concat_shards_keeps_a_meaningful_index_and_appends_non_tree_shards():
    labelled = pd.DataFrame({"a": [1, 2, 3]}, index=pd.Index(["x", "y", "z"], name="id"))
    joined, other = ops.concat_shards([labelled.iloc[:1], "note", labelled.iloc[1:]])
    pd.testing.assert_frame_equal(joined, labelled)
    assert other == "note"
    assert ops.concat_shards([]) == []
    assert ops.concat_shards([1, 2]) == [1, 2]


def test_concat_shards_of_nested_arrays_is_np_concatenate_per_leaf():
    a = {"x": np.arange(6).reshape(3, 2), "y": [np.arange(3)]}
    b = {"x": np.arange(6, 10).reshape(2, 2), "y": [np.arange(3, 5)]}
    (joined,) = ops.concat_shards([a, b])
    np.testing.assert_array_equal(joined["x"], np.concatenate([a["x"], b["x"]]))
    np.testing.assert_array_equal(joined["y"][0], np.arange(5))
    assert isinstance(joined["y"], list)


# ---------------------------------------------------------------------------------------------
# split_into_shards / even_pieces
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,num_shards", [(10, 3), (7, 7), (100, 1), (23, 4), (5, 2)])
def test_split_into_shards_matches_np_array_split_sizes_and_keeps_row_order(rows, num_shards):
    x = np.arange(rows * 2).reshape(rows, 2)
    y = np.arange(rows) * 10
    shards = ops.split_into_shards({"x": x, "y": [y]}, num_shards)
    assert len(shards) == num_shards
    sizes = [len(shard["y"][0]) for shard in shards]
    assert sorted(sizes) == sorted(len(part) for part in np.array_split(y, num_shards))
    np.testing.assert_array_equal(np.concatenate([shard["x"] for shard in shards]), x)
    np.testing.assert_array_equal(np.concatenate([shard["y"][0] for shard in shards]), y)
    assert all(len(shard["x"]) == len(shard["y"][0]) for shard in shards)


def test_split_into_shards_of_a_frame_reassembles_to_the_frame(frame):
    shards = ops.split_into_shards(frame, 3)
    assert all(isinstance(shard, pd.DataFrame) for shard in shards)
    pd.testing.assert_frame_equal(pd.concat(shards), frame)


def test_split_into_shards_rejects_fewer_rows_than_shards():
    with pytest.raises(InvalidArgumentError, match=r"num_shards=4 .*3 rows"):
        ops.split_into_shards(np.arange(3), 4)


def test_split_into_shards_rejects_ragged_leaves_naming_them():
    with pytest.raises(ShardMismatchError, match=r"different numbers of rows .*\['x'\]\": 4.*\['y'\]\": 3"):
        ops.split_into_shards({"x": np.zeros(4), "y": np.zeros(3)}, 2)


@pytest.mark.parametrize("data,type_name", [([1, 2, 3], "list"), (5, "int"), ({}, "dict"), ("text", "str")])
def test_split_into_shards_rejects_non_array_data(data, type_name):
    with pytest.raises(InvalidArgumentError, match=rf"data of type {type_name} cannot be partitioned"):
        ops.split_into_shards(data, 1)


def test_even_pieces_cuts_rows_evenly_and_rotates_targets_by_partition_index():
    shard = {"x": np.arange(10)}
    pieces = ops.even_pieces(shard, 4, partition_index=1)
    assert [target for target, _ in pieces] == [1, 2, 3, 0]
    np.testing.assert_array_equal(np.concatenate([piece["x"] for _, piece in pieces]), np.arange(10))
    sizes = [len(piece["x"]) for _, piece in pieces]
    assert max(sizes) - min(sizes) <= 1


def test_even_pieces_of_a_one_row_shard_spreads_over_partitions_by_index():
    targets = []
    for index in range(3):
        pieces = ops.even_pieces(np.array([index]), 3, partition_index=index)
        (non_empty,) = [target for target, piece in pieces if len(piece)]
        targets.append(non_empty)
    assert sorted(targets) == [0, 1, 2]


def test_even_pieces_moves_non_tree_shards_whole():
    assert ops.even_pieces("blob", 3, partition_index=4) == [(1, "blob")]


# ---------------------------------------------------------------------------------------------
# Hash partitioning
# ---------------------------------------------------------------------------------------------

def test_hash_pieces_lose_nothing_and_put_each_key_in_exactly_one_piece(frame):
    pieces = ops.hash_pieces(frame, ["k"], 4)
    assert [target for target, _ in pieces] == [0, 1, 2, 3]
    assert all(list(piece.columns) == list(frame.columns) for _, piece in pieces)
    pd.testing.assert_frame_equal(sorted_frame(pd.concat([p for _, p in pieces])), sorted_frame(frame))
    for key in frame["k"].unique():
        holders = [t for t, p in pieces if (p["k"].isna() if pd.isna(key) else p["k"] == key).any()]
        assert len(holders) == 1, key
    for target, piece in pieces:   # every row is in its own key's target (pieces carry no row labels)
        assert (ops.key_hash(piece, ["k"]) % np.uint64(4) == target).all()


@pytest.mark.parametrize("num_partitions", [1, 255, 256, 257, 70_000])
def test_hash_pieces_keep_row_order_and_targets_at_every_target_width(num_partitions):
    """Targets are sorted as 8-, 16- or 32-bit integers by partition count: each row still goes to
    its key's target, once, and rows keep their order inside a piece."""
    frame = pd.DataFrame({"k": np.arange(5000) % 997, "v": np.arange(5000)})
    pieces = ops.hash_pieces(frame, ["k"], num_partitions)
    assert [target for target, _ in pieces] == list(range(num_partitions))
    assert sum(len(piece) for _, piece in pieces) == len(frame)
    expected_targets = ops.key_hash(frame, ["k"]) % np.uint64(num_partitions)
    for target, piece in pieces:
        assert (expected_targets[piece["v"].to_numpy()] == target).all()
        assert piece["v"].is_monotonic_increasing


def test_hash_pieces_send_no_default_index_and_keep_any_other():
    """A default integer index is replaced when the pieces are joined, so the pieces carry only
    RangeIndex slices (pickled as three numbers, not 8 bytes a row); a named or label index
    travels with its rows."""
    import pickle

    frame = pd.DataFrame({"k": np.arange(10_000) % 7, "v": np.arange(10_000.0)}, index=np.arange(10_000) * 3)
    pieces = ops.hash_pieces(frame, ["k"], 3)
    assert all(isinstance(piece.index, pd.RangeIndex) for _, piece in pieces)
    assert sum(len(pickle.dumps(p)) for _, p in pieces) < len(pickle.dumps(frame)) - 8 * len(frame) + 4096
    joined = ops.concat_shards([piece for _, piece in pieces])[0]
    assert isinstance(joined.index, pd.RangeIndex) and sorted(joined["v"]) == list(frame["v"])
    labelled = frame.set_axis(pd.Index([f"r{i}" for i in range(len(frame))], name="row"))
    for _, piece in ops.hash_pieces(labelled, ["k"], 3):
        assert piece.index.name == "row" and (labelled.loc[piece.index, "v"] == piece["v"]).all()


def test_hash_pieces_of_an_empty_frame_gives_empty_pieces_with_the_columns(frame):
    pieces = ops.hash_pieces(frame.iloc[:0], ["k", "city"], 3)
    assert len(pieces) == 3
    assert all(piece.empty and list(piece.columns) == list(frame.columns) for _, piece in pieces)


def test_hash_pieces_missing_column_names_argument_and_column(frame):
    with pytest.raises(ColumnNotFoundError, match=r"cols=\['k', 'nope'\].*\['nope'\] not found"):
        ops.hash_pieces(frame, ["k", "nope"], 2)


def test_hash_pieces_needs_pandas():
    with pytest.raises(InvalidArgumentError, match="partition_by needs pandas DataFrame shards.*ndarray"):
        ops.hash_pieces(np.arange(3), ["k"], 2)


def test_hash_pieces_with_no_key_columns_is_refused_instead_of_dropping_every_row(frame):
    # Today every row silently disappears: key_hash of zero columns is an empty array.
    with pytest.raises(InvalidArgumentError, match=r"cols=\[\]"):
        ops.hash_pieces(frame, [], 2)


def _hash_one(values, dtype=None) -> int:
    return int(ops.key_hash(pd.DataFrame({"k": pd.Series(values, dtype=dtype)}), ["k"])[0])


def test_key_hash_equal_numbers_hash_equal_across_dtypes():
    one = _hash_one([1], "int64")
    assert _hash_one([1.0], "float64") == one
    assert _hash_one([1], "Int64") == one
    assert _hash_one([1], "int8") == one
    assert _hash_one([1.0], "float32") == one
    assert _hash_one([-0.0]) == _hash_one([0])
    assert _hash_one([2]) != one


def test_key_hash_all_nan_payloads_hash_equal():
    other_nan = np.frombuffer(np.array([0x7FF8000000000001], dtype=np.uint64).tobytes(), dtype=np.float64)[0]
    assert np.isnan(other_nan)
    reference = _hash_one([np.nan])
    assert _hash_one([other_nan]) == reference
    assert _hash_one([-np.nan]) == reference
    assert _hash_one([pd.NA], "Int64") == reference


def test_key_hash_missing_string_key_hashes_like_missing_in_an_all_missing_float_column():
    # A string column that is all-missing in one shard is float64 NaN there (read_csv does this),
    # while other shards hold it as object NaN or None; pandas groups all of them as one missing key.
    object_nan = int(ops.key_hash(pd.DataFrame({"k": pd.Series(["a", np.nan], dtype=object)}), ["k"])[1])
    object_none = int(ops.key_hash(pd.DataFrame({"k": pd.Series(["a", None], dtype=object)}), ["k"])[1])
    float_nan = _hash_one([np.nan], "float64")
    assert object_nan == object_none
    assert object_nan == float_nan


def test_key_hash_strings_and_datetimes_ignore_storage_dtype():
    assert _hash_one(["x"], object) == _hash_one(["x"], "string") == _hash_one(["x"], "category")
    stamp = pd.Timestamp("2021-03-04 05:06:07")
    assert _hash_one([stamp], "datetime64[ns]") == _hash_one([stamp], "datetime64[s]")


def test_key_hash_multi_column_depends_on_every_column_and_its_position():
    frame = pd.DataFrame({"a": [1, 1, 2], "b": ["x", "y", "x"]})
    hashes = ops.key_hash(frame, ["a", "b"])
    assert len(set(hashes.tolist())) == 3
    swapped = pd.DataFrame({"a": [1], "b": [2]})
    assert ops.key_hash(swapped, ["a", "b"])[0] != ops.key_hash(swapped, ["b", "a"])[0]


def test_key_hash_is_the_same_in_a_fresh_interpreter_and_partition_ops_imports_no_spark():
    frame = pd.DataFrame({"s": ["ams", "ber", None], "n": [1.5, np.nan, 3.0]})
    here = ops.key_hash(frame, ["s", "n"]).tolist()
    script = (
        "import json, sys, numpy as np, pandas as pd\n"
        "from zoo_lite.data import partition_ops as ops\n"
        "frame = pd.DataFrame({'s': ['ams', 'ber', None], 'n': [1.5, np.nan, 3.0]})\n"
        "print(json.dumps({'hash': ops.key_hash(frame, ['s', 'n']).tolist(),"
        " 'spark': sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))}))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True)
    there = json.loads(done.stdout.strip().splitlines()[-1])
    assert there["hash"] == here
    assert there["spark"] == []


# ---------------------------------------------------------------------------------------------
# pandas helpers
# ---------------------------------------------------------------------------------------------

def test_require_pandas_and_check_columns_messages(frame):
    assert ops.require_pandas(frame, "op") is frame
    with pytest.raises(InvalidArgumentError, match="select needs pandas DataFrame shards, but a shard is a dict"):
        ops.require_pandas({"x": 1}, "select")
    with pytest.raises(ColumnNotFoundError, match=r"col_names=\['v', 'w'\]: column\(s\) \['w'\] not found.*'city'"):
        ops.check_columns(frame, ["v", "w"], "col_names")
    ops.check_columns(frame, ["v", "k"], "col_names")


def test_unique_values_and_combine_unique_match_pd_unique_over_the_concatenation():
    parts = [pd.Series(["b", "a", None]), pd.Series([], dtype=object), pd.Series(["c", "a", np.nan, "b"])]
    got = ops.combine_unique([ops.unique_values(part) for part in parts])
    expected = pd.unique(pd.concat(parts, ignore_index=True))
    assert len(expected) == 5   # pd.unique keeps None and NaN apart in an object array
    assert [repr(value) for value in got] == [repr(value) for value in expected] == ["'b'", "'a'", "None", "'c'", "nan"]
    numbers = [pd.Series([3, 1, 3]), pd.Series([2.0, np.nan, 1.0])]
    np.testing.assert_array_equal(
        ops.combine_unique([ops.unique_values(part) for part in numbers]),
        pd.unique(pd.concat(numbers, ignore_index=True)),
    )
    assert len(ops.combine_unique([])) == 0


def test_unique_values_needs_series_shards(frame):
    with pytest.raises(InvalidArgumentError, match=r"unique\(\) needs Series shards, but a shard is a DataFrame"):
        ops.unique_values(frame)


def test_schema_of_each_shard_kind(frame):
    assert ops.schema_of(frame) == {
        "type": "pandas",
        "columns": ["k", "city", "v", "n"],
        "dtypes": {"k": "float64", "city": "object", "v": "float64", "n": "int64"},
    }
    assert ops.schema_of(frame["v"]) == {"type": "series", "name": "v", "dtype": "float64"}
    assert ops.schema_of({"x": np.zeros((4, 3, 2), dtype=np.float32), "y": np.zeros(4, dtype=np.int64)}) == {
        "type": "ndarray",
        "leaves": {"['x']": {"dtype": "float32", "shape": (None, 3, 2)}, "['y']": {"dtype": "int64", "shape": (None,)}},
    }
    assert ops.schema_of(np.zeros((2, 5)))["leaves"] == {"data": {"dtype": "float64", "shape": (None, 5)}}
    assert ops.schema_of("text") == {"type": "str"}


@pytest.mark.parametrize("cut", [[0, 40], [0, 1, 40], [0, 0, 13, 13, 39, 40], [0, 20, 20, 40]])
def test_combined_moments_equal_pandas_describe(frame, cut):
    frame = frame.assign(v=frame["v"].where(frame.index % 7 != 0))   # NaNs in v too
    frame.loc[13:20, "v"] = np.nan                                     # a shard may be all-NaN in v
    parts = [frame.iloc[a:b] for a, b in zip(cut[:-1], cut[1:])]
    got = ops.combine_moments([ops.moments(part, None) for part in parts])
    expected = frame.describe().loc[DESCRIBE_ROWS]
    pd.testing.assert_frame_equal(got, expected, rtol=1e-9, atol=1e-12, check_dtype=False)


def test_moments_with_cols_and_missing_col(frame):
    got = ops.combine_moments([ops.moments(frame, ["v"])])
    pd.testing.assert_frame_equal(got, frame[["v"]].describe().loc[DESCRIBE_ROWS], rtol=1e-9, check_dtype=False)
    with pytest.raises(ColumnNotFoundError, match=r"cols=\['zz'\]"):
        ops.moments(frame, ["zz"])


def test_null_counts_match_isnull_sum(frame):
    frame = frame.assign(city=frame["city"].where(frame.index % 5 != 0))
    pd.testing.assert_series_equal(ops.null_counts(frame), frame.isnull().sum())
    with pytest.raises(InvalidArgumentError, match="get_null_sum needs pandas"):
        ops.null_counts(frame["k"])


def test_zip_shard_lists_pairs_and_mismatches():
    left, right = [np.arange(3), np.arange(2)], [np.ones(3), np.ones(2)]
    assert [(a.tolist(), b.tolist()) for a, b in ops.zip_shard_lists(0, left, right)] == [([0, 1, 2], [1, 1, 1]), ([0, 1], [1, 1])]
    with pytest.raises(ShardMismatchError, match=r"partition 5 holds 2 shard\(s\) on the left and 1 on the right"):
        ops.zip_shard_lists(5, left, right[:1])
    with pytest.raises(ShardMismatchError, match=r"partition 2 has 3 row\(s\) on the left and 2 on the right"):
        ops.zip_shard_lists(2, left[:1], [np.ones(2)])
    ((text, array),) = ops.zip_shard_lists(0, ["a"], [np.ones(9)])   # no rows to compare for a str
    assert text == "a" and array.shape == (9,)


def test_split_tuple_shard():
    assert ops.split_tuple_shard([1, 2], 2) == (1, 2)
    with pytest.raises(ShardMismatchError, match=r"different lengths \(2 and 3\)"):
        ops.split_tuple_shard((1, 2, 3), 2)
    with pytest.raises(InvalidArgumentError, match="split.. needs list or tuple shards, but a shard is a ndarray"):
        ops.split_tuple_shard(np.arange(2), 2)


def test_sample_shard_is_a_reproducible_subset_with_pandas_row_count(frame):
    first = ops.sample_shard(frame, 0.3, False, 11, 0)
    again = ops.sample_shard(frame, 0.3, False, 11, 0)
    pd.testing.assert_frame_equal(first, again)
    assert len(first) == len(frame.sample(frac=0.3, random_state=0))
    assert first.index.is_unique and set(first.index) <= set(frame.index)
    pd.testing.assert_frame_equal(first, frame.loc[first.index])
    other_partition = ops.sample_shard(frame, 0.3, False, 11, 1)
    other_seed = ops.sample_shard(frame, 0.3, False, 12, 0)
    assert list(other_partition.index) != list(first.index)
    assert list(other_seed.index) != list(first.index)
    assert len(ops.sample_shard(frame, 2.0, True, 1, 0)) == 2 * len(frame)


@pytest.mark.parametrize("agg", ["sum", {"v": "mean", "n": "max"}, {"v": ["min", "max"]}])
def test_group_aggregate_matches_pandas_groupby_keeping_nan_keys(frame, agg):
    got = ops.group_aggregate(frame.drop(columns="city"), ["k"], agg, join=False)
    expected = frame.drop(columns="city").groupby(["k"], dropna=False).agg(agg)
    if isinstance(expected.columns, pd.MultiIndex):
        expected.columns = [f"{a}_{b}" for a, b in expected.columns]
    expected = expected.reset_index()
    pd.testing.assert_frame_equal(sorted_frame(got), sorted_frame(expected))
    assert got["k"].isna().sum() == 1


def test_group_aggregate_join_puts_aggregates_on_every_row(frame):
    got = ops.group_aggregate(frame, ["k", "city"], {"v": "sum"}, join=True)
    sums = frame.groupby(["k", "city"], dropna=False)["v"].transform("sum")
    expected = frame.assign(v_agg=sums)
    pd.testing.assert_frame_equal(sorted_frame(got), sorted_frame(expected))
    with pytest.raises(ColumnNotFoundError, match=r"columns=\['nope'\]"):
        ops.group_aggregate(frame, ["nope"], "sum", join=False)


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
def test_merge_shards_matches_pd_merge(how):
    left = [pd.DataFrame({"k": [1, 2, 2], "a": [1.0, 2.0, 3.0]}), pd.DataFrame({"k": [5], "a": [4.0]})]
    right = [pd.DataFrame({"k": [2, 3, 5, 5], "b": ["x", "y", "z", "w"]})]
    (got,) = ops.merge_shards(0, left, right, how, ["k"])
    expected = pd.concat(left, ignore_index=True).merge(right[0], how=how, on=["k"])
    pd.testing.assert_frame_equal(sorted_frame(got), sorted_frame(expected))


def test_merge_shards_with_a_side_that_has_no_shard():
    left = [pd.DataFrame({"k": [1], "a": [1.0]})]
    assert ops.merge_shards(0, left, [], "inner", ["k"]) == []
    (kept,) = ops.merge_shards(0, left, [], "left", ["k"])
    pd.testing.assert_frame_equal(kept, left[0])
    assert ops.merge_shards(0, [], left, "left", ["k"]) == []
    with pytest.raises(ColumnNotFoundError, match=r"on=\['zz'\]"):
        ops.merge_shards(0, left, left, "inner", ["zz"])


def test_deduplicate_is_drop_duplicates(frame):
    doubled = pd.concat([frame, frame.iloc[::3]], ignore_index=True)
    pd.testing.assert_frame_equal(ops.deduplicate(doubled), doubled.drop_duplicates())
    assert len(ops.deduplicate(doubled)) == len(frame)
    with pytest.raises(InvalidArgumentError, match="deduplicates needs pandas"):
        ops.deduplicate(np.arange(3))


# -- spreading partitions over workers ------------------------------------------------------------

from zoo_lite.data.partition_ops import assign_row_ranges, partition_nbytes, partition_weight, slice_partition  # noqa: E402


def _rows_per_worker(ranges):
    return [sum(stop - start for _, start, stop in worker) for worker in ranges]


def _covered(ranges, partition_rows):
    seen = {i: [] for i in range(len(partition_rows))}
    for worker in ranges:
        for index, start, stop in worker:
            seen[index].append((start, stop))
    return {i: sorted(spans) for i, spans in seen.items()}


@pytest.mark.parametrize("partition_rows, workers", [
    ([3, 5], 2), ([10], 3), ([0, 4, 0, 4], 2), ([1, 1, 1], 5), ([7, 0, 0], 3), ([100, 1, 1, 1, 50], 4), ([0, 0], 2),
])
def test_assign_row_ranges_gives_every_row_once_and_balances(partition_rows, workers) -> None:
    nodes = [f"n{i % 2}" for i in range(len(partition_rows))]
    ranges = assign_row_ranges(partition_rows, nodes, [f"n{w % 2}" for w in range(workers)])
    counts = _rows_per_worker(ranges)
    assert sum(counts) == sum(partition_rows) and max(counts) - min(counts) <= 1
    for index, spans in _covered(ranges, partition_rows).items():
        position = 0
        for start, stop in spans:  # contiguous, no overlap, no gap
            assert start == position and stop > start
            position = stop
        assert position == partition_rows[index]


def test_assign_row_ranges_keeps_whole_partitions_on_their_node() -> None:
    ranges = assign_row_ranges([4, 4, 4, 4], ["a", "b", "a", "b"], ["a", "b"])
    assert ranges == [[(0, 0, 4), (2, 0, 4)], [(1, 0, 4), (3, 0, 4)]]


def test_slice_partition_reads_shards_as_one_row_sequence() -> None:
    shards = [pd.DataFrame({"a": [0, 1, 2]}), pd.DataFrame({"a": [3, 4]}), {"x": np.array([5, 6, 7])}]
    assert partition_weight(shards) == 8
    sliced = slice_partition(shards, 2, 6)
    assert [list(s["a"]) if isinstance(s, pd.DataFrame) else list(s["x"]) for s in sliced] == [[2], [3, 4], [5]]
    assert slice_partition(shards, 0, 8)[0] is shards[0]  # whole shards are not copied
    assert slice_partition(["opaque", "objects"], 1, 2) == ["objects"]


def test_partition_nbytes_counts_array_and_frame_memory() -> None:
    assert partition_nbytes([{"x": np.zeros((10, 4)), "y": np.zeros(10)}]) == 400
    assert partition_nbytes([pd.DataFrame({"a": np.zeros(10), "b": np.zeros(10, dtype=np.int32)})]) == 120
    assert partition_nbytes(["not rows"]) == 0
