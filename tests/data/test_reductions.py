"""Column reductions of XShards against pandas on the same rows: NaN handling, empty and one-row
partitions, Series and DataFrame shards, and errors naming what to do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from zoo_lite.data import SparkXShards
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError

pytestmark = pytest.mark.usefixtures("sc")

FRAME = pd.DataFrame({
    "price": [3.5, np.nan, 9.0, 1.0, 2.5, np.nan, 7.0],
    "count": [1, 2, 3, 4, 5, 6, 7],
    "city": ["b", "a", None, "a", "c", "b", "a"],
    "flag": [True, False, True, True, False, False, True],
})
# row slices per partition: an empty partition and a one-row partition among them
CUTS = [(0, 3), (3, 3), (3, 4), (4, 7)]


@pytest.fixture
def shards(sc) -> SparkXShards:
    parts = [FRAME.iloc[start:end] for start, end in CUTS]
    return SparkXShards(sc.parallelize(parts, len(parts)))


def same(got, expected) -> None:
    if isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False, check_dtype=False)
    elif pd.isna(expected):
        assert pd.isna(got), got
    else:
        assert got == pytest.approx(expected) if isinstance(expected, float) else got == expected


@pytest.mark.parametrize("column", ["price", "count", "city", "flag"])
@pytest.mark.parametrize("operation", ["max", "min", "count", "nunique"])
@pytest.mark.parametrize("skip", [True, False])
def test_series_reductions_equal_pandas(shards, column, operation, skip):
    options = {} if operation == "count" else {"dropna" if operation == "nunique" else "skipna": skip}
    if operation in ("max", "min") and column == "city":
        # pandas itself cannot order None and str, even with skipna: the error says what to do
        pytest.raises(TypeError, getattr(FRAME[column], operation), **options)
        with pytest.raises(InvalidArgumentError, match=rf"{operation}\(\) cannot reduce the column\(s\) \['city'\] .*drop or fill"):
            getattr(shards[column], operation)(**options)
        return
    same(getattr(shards[column], operation)(**options), getattr(FRAME[column], operation)(**options))


@pytest.mark.parametrize("column", ["price", "count", "flag"])
@pytest.mark.parametrize("operation", ["sum", "mean"])
@pytest.mark.parametrize("skip", [True, False])
def test_numeric_series_sum_and_mean_equal_pandas(shards, column, operation, skip):
    same(getattr(shards[column], operation)(skipna=skip), getattr(FRAME[column], operation)(skipna=skip))


def test_frame_reductions_give_a_series_by_column(shards):
    numbers = FRAME[["price", "count"]]
    numeric_shards = shards.select(["price", "count"])
    for operation in ("max", "min", "sum", "mean", "count", "nunique"):
        same(getattr(numeric_shards, operation)(), getattr(numbers, operation)())
    same(shards.mean(), FRAME.mean(numeric_only=True))  # the numeric columns only
    same(shards.count(), FRAME.count())


def test_min_values_beside_max_values(shards):
    assert shards.min_values("price") == 1.0 and shards.max_values("price") == 9.0
    with pytest.raises(ColumnNotFoundError, match="col_name"):
        shards.min_values("missing")


def test_no_rows_gives_what_pandas_gives(sc):
    empty = SparkXShards(sc.parallelize([FRAME.iloc[:0], FRAME.iloc[:0]], 2))
    assert np.isnan(empty["price"].max()) and np.isnan(empty["price"].mean())
    assert empty["price"].sum() == 0 and empty["price"].count() == 0 and empty["price"].nunique() == 0


def test_a_missing_value_wins_only_without_skipna(sc):
    # the NaN is alone in its partition: a per-partition NaN must not be dropped when skipna=False
    shards = SparkXShards(sc.parallelize([pd.Series([1.0, 5.0]), pd.Series([np.nan])], 2))
    assert shards.max() == 5.0 and np.isnan(shards.max(skipna=False))
    assert shards.mean() == 3.0 and np.isnan(shards.mean(skipna=False))


def test_errors_say_what_to_select(sc, shards):
    arrays = SparkXShards(sc.parallelize([np.arange(3)], 1))
    with pytest.raises(InvalidArgumentError, match=r"max\(\) needs pandas Series or DataFrame shards, but a shard is a ndarray; select"):
        arrays.max()
    with pytest.raises(InvalidArgumentError, match=r"mean\(\) needs numbers, but the column 'city' holds object values"):
        shards["city"].mean()
