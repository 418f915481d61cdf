"""Model arrays: Arrow, pandas and dict shards into the per-input arrays the Estimators train on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from zoo_lite.data import convert
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError


def test_each_feature_column_is_one_input_and_array_columns_keep_their_shape() -> None:
    table = pa.table({
        "scalar": pa.array([1.0, 2.0, 3.0]),
        "vector": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], type=pa.list_(pa.float64())),
        "image": pa.array([[[1, 2], [3, 4]]] * 3, type=pa.list_(pa.list_(pa.int32()))),
        "label": pa.array([0, 1, 0], type=pa.int64()),
    })
    arrays = convert.arrow_to_model_arrays(table, ["scalar", "vector", "image"], ["label"])
    assert [x.shape for x in arrays["x"]] == [(3,), (3, 2), (3, 2, 2)]
    assert arrays["x"][1].tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert arrays["x"][2].dtype == np.int32
    assert arrays["y"].tolist() == [0, 1, 0]


def test_several_label_columns_become_one_two_dimensional_target() -> None:
    table = pa.table({"x": [1.0, 2.0], "a": [0.5, 1.5], "b": [[1.0, 2.0], [3.0, 4.0]]})
    assert convert.arrow_to_model_arrays(table, ["x"], ["a", "b"])["y"].tolist() == [[0.5, 1.0, 2.0], [1.5, 3.0, 4.0]]


def test_no_label_columns_means_no_target() -> None:
    assert "y" not in convert.arrow_to_model_arrays(pa.table({"x": [1.0]}), ["x"], None)


@pytest.mark.parametrize("table,cols,message", [
    (pa.table({"x": [1.0, None]}), ["x"], "column 'x' has 1 null value"),
    (pa.table({"x": ["a", "b"]}), ["x"], "column 'x' has type string, which is not numeric"),
    (pa.table({"x": [[1.0], [1.0, 2.0]]}), ["x"], "column 'x' holds arrays of different lengths \\(1 to 2\\)"),
    (pa.table({"x": [[1.0], [None]]}), ["x"], "column 'x' has null elements"),
])
def test_unusable_feature_columns_are_named_in_the_error(table, cols, message) -> None:
    with pytest.raises(InvalidArgumentError, match=f"feature_cols: {message}"):
        convert.arrow_to_model_arrays(table, cols, None)


def test_a_missing_column_names_the_argument_and_the_columns_there_are() -> None:
    with pytest.raises(ColumnNotFoundError, match=r"label_cols=\['nope'\]: column\(s\) \['nope'\] not found; the data has columns \['x'\]"):
        convert.arrow_to_model_arrays(pa.table({"x": [1.0]}), ["x"], ["nope"])


def test_pandas_shards_give_the_same_arrays_as_arrow() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0], "v": [np.array([1.0, 2.0]), np.array([3.0, 4.0])], "t": [1, 0]})
    from_pandas = convert.pandas_to_model_arrays(frame, ["a", "v"], ["t"])
    from_arrow = convert.arrow_to_model_arrays(pa.Table.from_pandas(frame), ["a", "v"], ["t"])
    for left, right in zip(from_pandas["x"], from_arrow["x"]):
        assert np.array_equal(left, right)
    assert np.array_equal(from_pandas["y"], from_arrow["y"])


def test_a_pandas_column_of_objects_is_a_clear_error() -> None:
    frame = pd.DataFrame({"a": [{"k": 1}, 2]})
    with pytest.raises(InvalidArgumentError, match="column 'a' \\(pandas dtype object\\) cannot be fed to a model"):
        convert.pandas_to_model_arrays(frame, ["a"], None)


def test_dict_shards_take_one_array_or_a_tuple_of_inputs() -> None:
    single = convert.dict_to_model_arrays({"x": np.zeros((4, 3)), "y": np.arange(4)})
    assert len(single["x"]) == 1 and single["y"].tolist() == [0, 1, 2, 3]
    multi = convert.dict_to_model_arrays({"x": (np.zeros((4, 3)), np.ones(4)), "y": np.arange(4)})
    assert [x.shape for x in multi["x"]] == [(4, 3), (4,)]


@pytest.mark.parametrize("shard,message", [
    ({"x": (np.zeros((4, 1)), np.zeros(3)), "y": np.zeros(4)}, r"different row counts \{'x\[0\]': 4, 'x\[1\]': 3, 'y': 4\}"),
    ({"x": np.zeros((4, 1)), "y": np.zeros(5)}, r"different row counts \{'x': 4, 'y': 5\}"),
    ({"x": np.array(["a", "b"])}, "shard entry 'x' is ndarray of dtype <U1"),
    ({"features": np.zeros(2)}, "with keys \\['features'\\]"),
    ([1, 2], "a shard is a list"),
])
def test_bad_dict_shards_are_clear_errors(shard, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        convert.dict_to_model_arrays(shard)


def test_concatenation_skips_empty_shards_and_keeps_every_row() -> None:
    empty = {"x": (np.zeros((0, 0)),), "y": np.zeros(0)}
    first = {"x": (np.arange(6).reshape(3, 2),), "y": np.arange(3)}
    second = {"x": (np.arange(6, 10).reshape(2, 2),), "y": np.arange(3, 5)}
    joined = convert.concat_model_arrays([empty, first, empty, second])
    assert joined["x"][0].tolist() == np.arange(10).reshape(5, 2).tolist()
    assert joined["y"].tolist() == [0, 1, 2, 3, 4]
    assert convert.model_arrays_rows(joined) == 5


def test_concatenation_refuses_to_drop_labels_or_mix_input_counts() -> None:
    labelled = {"x": (np.zeros((2, 1)),), "y": np.zeros(2)}
    with pytest.raises(InvalidArgumentError, match="1 of 2 shards have labels"):
        convert.concat_model_arrays([labelled, {"x": (np.zeros((2, 1)),)}])
    with pytest.raises(InvalidArgumentError, match="different numbers of model inputs \\[1, 2\\]"):
        convert.concat_model_arrays([labelled, {"x": (np.zeros((2, 1)), np.zeros(2)), "y": np.zeros(2)}])
