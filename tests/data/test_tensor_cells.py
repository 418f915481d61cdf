"""Tensor cells on the input side (issue 16): a pandas column whose cells are N-d arrays, and a
Spark ``array<array<...>>`` column, are each one model input of shape ``(rows, *cell_shape)``.

Pure pandas where no cluster is needed; the shared ``local[2]`` context (``sc`` / ``spark``
fixtures of tests/conftest.py) for Spark DataFrames and XShards. Every result is compared with
``np.stack`` of the cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from zoo_lite.data import Columns, SparkXShards, XShards, convert
from zoo_lite.data.shard import model_arrays_from_spark_df
from zoo_lite.errors import InvalidArgumentError


def _cells(shape: tuple[int, ...], dtype: str, rows: int = 5, seed: int = 0) -> list[np.ndarray]:
    """``rows`` different cells of one shape and dtype."""
    values = np.random.default_rng(seed).integers(0, 100, (rows, *shape))
    return list(values.astype(dtype))


# -- pandas: array cells of any dimension become one (rows, *cell_shape) input ----------------------

@pytest.mark.parametrize("cells", [
    _cells((4, 3), "float64"),                 # one 2-D image per row
    _cells((2, 3, 4), "float32"),              # 3-D cells, float32 kept
    _cells((8, 8), "uint8"),                   # integer pixels kept as uint8
    _cells((3,), "int32"),                     # 1-D cells (Arrow's fast path) keep their dtype too
], ids=["2d-float64", "3d-float32", "2d-uint8", "1d-int32"])
def test_ndarray_cells_become_one_input_of_their_stacked_shape_and_dtype(cells) -> None:
    frame = pd.DataFrame({"a": np.arange(len(cells), dtype=np.float64), "img": cells, "t": np.arange(len(cells)) % 2})
    arrays = convert.pandas_to_model_arrays(frame, ["a", "img"], ["t"])
    expected = np.stack(cells)
    assert arrays["x"][1].shape == expected.shape == (len(cells), *cells[0].shape)
    assert arrays["x"][1].dtype == expected.dtype
    np.testing.assert_array_equal(arrays["x"][1], expected)
    np.testing.assert_array_equal(arrays["x"][0], frame["a"].to_numpy())
    np.testing.assert_array_equal(arrays["y"], frame["t"].to_numpy())


def test_list_of_lists_cells_become_a_three_dimensional_input() -> None:
    cells = [[[row, 1, 2], [3, 4, row]] for row in range(4)]
    arrays = convert.pandas_to_model_arrays(pd.DataFrame({"m": cells}), ["m"], None)
    expected = np.stack([np.asarray(cell) for cell in cells])
    assert arrays["x"][0].shape == (4, 2, 3) and arrays["x"][0].dtype == expected.dtype == np.int64
    np.testing.assert_array_equal(arrays["x"][0], expected)


def test_tensor_cells_as_labels_become_y_of_their_stacked_shape() -> None:
    masks = _cells((3, 3), "float32", rows=4, seed=1)
    frame = pd.DataFrame({"img": _cells((3, 3), "float64", rows=4), "mask": masks})
    arrays = convert.pandas_to_model_arrays(frame, ["img"], ["mask"])
    assert arrays["y"].shape == (4, 3, 3) and arrays["y"].dtype == np.float32
    np.testing.assert_array_equal(arrays["y"], np.stack(masks))


def test_a_tensor_column_that_is_feature_and_label_gives_the_same_array_to_both() -> None:
    cells = _cells((2, 2), "float64", rows=3)
    arrays = convert.pandas_to_model_arrays(pd.DataFrame({"img": cells}), ["img"], ["img"])
    np.testing.assert_array_equal(arrays["x"][0], np.stack(cells))
    np.testing.assert_array_equal(arrays["y"], np.stack(cells))


def test_an_empty_shard_with_an_object_column_gives_zero_rows() -> None:
    arrays = convert.pandas_to_model_arrays(pd.DataFrame({"img": pd.Series([], dtype=object), "t": np.zeros(0)}), ["img"], ["t"])
    assert arrays["x"][0].shape == (0,) and arrays["y"].shape == (0,)


# -- pandas: cells that cannot be one tensor are errors naming argument, column and rows ------------

def _ragged() -> list:
    cells: list = _cells((28, 28), "float32", rows=6)
    cells[5] = np.zeros((27, 28), np.float32)
    return cells


@pytest.mark.parametrize("column,message", [
    (_ragged(), r"column 'img' holds cells of different shapes: \(28, 28\) in row 0 and \(27, 28\) in row 5; every row of a "
                r"column must have the same shape"),
    ([[[1, 2], [3, 4]], [[1, 2]]], r"column 'img' holds cells of different shapes: \(2, 2\) in row 0 and \(1, 2\) in row 1"),
    ([[[1, 2], [3, 4]], [[1, 2], [3]]], r"column 'img' holds a nested list whose sublists differ in length in row 1"),
    ([np.zeros((2, 2)), None, np.zeros((2, 2))], r"column 'img' has a missing cell \(None\) in row 1; fill or drop"),
    ([None, np.zeros((2, 2))], r"column 'img' has a missing cell \(None\) in row 0"),
    ([np.zeros((2, 2)), np.nan], r"column 'img' has a missing cell \(nan\) in row 1"),
    ([np.zeros((2, 2)), np.array([[0.0, np.nan], [1.0, 2.0]])], r"column 'img' has NaN elements inside its cell in row 1"),
    ([[1.0, 2.0], [3.0, None]], r"column 'img' has None elements inside its cell in row 1"),
    ([np.zeros((2, 2)), 3.0], r"column 'img' holds cells of different shapes: \(2, 2\) in row 0 and \(\) \(a scalar\) in row 1"),
    ([3.0, np.zeros((2, 2))], r"column 'img' holds cells of different shapes: \(\) \(a scalar\) in row 0 and \(2, 2\) in row 1"),
    ([np.zeros((2, 2)), "cat"], r"column 'img' holds a str cell of dtype <U3 in row 1, which is not numeric"),
], ids=["ragged-2d", "ragged-lists", "ragged-inside-a-cell", "none", "none-first", "nan-cell", "nan-element",
        "none-element", "array-then-scalar", "scalar-then-array", "array-then-string"])
@pytest.mark.parametrize("argument", ["feature_cols", "label_cols"])
def test_cells_that_are_not_one_tensor_are_named_with_the_argument_the_column_and_the_row(column, message, argument) -> None:
    frame = pd.DataFrame({"a": np.zeros(len(column)), "img": pd.Series(column, dtype=object)})
    features, labels = (["img"], None) if argument == "feature_cols" else (["a"], ["img"])
    with pytest.raises(InvalidArgumentError, match=f"^{argument}: {message}"):
        convert.pandas_to_model_arrays(frame, features, labels)


def test_a_column_of_strings_keeps_its_not_numeric_error() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^feature_cols: column 's' has type string, which is not numeric"):
        convert.pandas_to_model_arrays(pd.DataFrame({"s": ["a", "b"]}), ["s"], None)


# -- Arrow / Spark: nested arrays ----------------------------------------------------------------

def test_ragged_nested_arrow_arrays_name_the_nesting_level_and_the_rows() -> None:
    import pyarrow as pa

    table = pa.table({"m": [[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0]]]})
    with pytest.raises(InvalidArgumentError, match=r"^feature_cols: column 'm' holds arrays of different lengths \(1 to 2\) at "
                                                   r"nesting level 2: length 2 in row 0 and length 1 in row 2"):
        convert.arrow_to_model_arrays(table, ["m"], None)


def test_spark_array_of_array_columns_become_three_dimensional_inputs(spark) -> None:
    rng = np.random.default_rng(2)
    images, masks = rng.random((6, 3, 4)), rng.random((6, 2, 2)).astype(np.float32)
    rows = [(images[i].tolist(), masks[i].tolist(), i) for i in range(6)]
    df = spark.createDataFrame(rows, "img array<array<double>>, mask array<array<float>>, t long").repartition(2)
    convert.check_spark_columns(df, ["img", "mask"], "feature_cols")
    parts = convert.spark_df_to_model_arrays_rdd(df, Columns.of(["img", "mask"], "t")).collect()
    assert len(parts) == 2
    arrays = convert.concat_model_arrays(parts)
    order = np.argsort(arrays["y"])  # repartition shuffles the rows; t is the row number
    assert arrays["x"][0].shape == (6, 3, 4) and arrays["x"][0].dtype == np.float64
    assert arrays["x"][1].shape == (6, 2, 2) and arrays["x"][1].dtype == np.float32
    np.testing.assert_array_equal(arrays["x"][0][order], np.stack(list(images)))
    np.testing.assert_array_equal(arrays["x"][1][order], np.stack(list(masks)))
    labelled = convert.concat_model_arrays(convert.spark_df_to_model_arrays_rdd(df, Columns.of("t", "img")).collect())
    np.testing.assert_array_equal(labelled["y"][np.argsort(labelled["x"][0])], np.stack(list(images)))


def test_a_ragged_spark_array_of_arrays_is_an_error_naming_the_level(spark) -> None:
    df = spark.createDataFrame([([[1.0, 2.0], [3.0, 4.0]],), ([[1.0, 2.0], [3.0]],)], "m array<array<double>>").coalesce(1)
    with pytest.raises(InvalidArgumentError, match=r"feature_cols: column 'm' holds arrays of different lengths \(1 to 2\) at "
                                                   r"nesting level 2: length 2 in row 0 and length 1 in row 1"):
        model_arrays_from_spark_df(df, Columns.of("m"), need_labels=False).collect()


# -- pandas XShards: the path fit / evaluate / predict take ----------------------------------------

def test_pandas_xshards_with_ndarray_cells_give_stacked_inputs_and_labels(sc) -> None:
    images, masks = _cells((5, 5), "float32", rows=9), _cells((5, 5), "uint8", rows=9, seed=3)
    frame = pd.DataFrame({"img": images, "mask": masks, "t": np.arange(9)})
    shards = XShards.partition(frame, num_shards=3)
    parts = shards.to_model_arrays(Columns.of("img", "mask")).collect()
    assert [part["x"][0].shape for part in parts] == [(3, 5, 5)] * 3
    arrays = convert.concat_model_arrays(parts)
    assert arrays["x"][0].dtype == np.float32 and arrays["y"].dtype == np.uint8
    np.testing.assert_array_equal(arrays["x"][0], np.stack(images))
    np.testing.assert_array_equal(arrays["y"], np.stack(masks))
    predicted = shards.to_model_arrays(Columns.of("img", "mask"), need_labels=False).collect()
    assert all("y" not in part for part in predicted)


def test_pandas_xshards_with_an_empty_shard_keep_every_row(sc) -> None:
    images = _cells((2, 3), "float64", rows=4)
    frame = pd.DataFrame({"img": images, "t": np.arange(4)})
    shards = SparkXShards(sc.parallelize([frame.iloc[:0], frame.iloc[:3], frame.iloc[3:]], 3))
    arrays = convert.concat_model_arrays(shards.to_model_arrays(Columns.of("img", "t")).collect())
    np.testing.assert_array_equal(arrays["x"][0], np.stack(images))
    np.testing.assert_array_equal(arrays["y"], np.arange(4))


def test_ragged_cells_in_pandas_xshards_fail_with_the_shapes(sc) -> None:
    frame = pd.DataFrame({"img": _ragged(), "t": np.arange(6)})
    shards = XShards.partition(frame, num_shards=2)
    with pytest.raises(InvalidArgumentError, match=r"feature_cols: column 'img' holds cells of different shapes: \(28, 28\) in "
                                                   r"row 0 and \(27, 28\) in row 2"):
        shards.to_model_arrays(Columns.of("img", "t")).collect()
