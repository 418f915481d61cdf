"""Model arrays: Arrow, pandas and dict shards into the per-input arrays the Estimators train on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from zoo_lite.data import Columns, XShards, convert
from zoo_lite.data.shard import model_arrays_from_spark_df, model_arrays_of
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


# -- Columns: feature_cols / label_cols normalised once ---------------------------------------------

@pytest.mark.parametrize("feature_cols,label_cols,expected", [
    ("a", None, Columns(("a",), None)),
    (["a", "b"], "t", Columns(("a", "b"), ("t",))),
    (("a",), ["t", "u"], Columns(("a",), ("t", "u"))),
    (None, None, Columns()),
])
def test_columns_are_normalised_to_tuples(feature_cols, label_cols, expected) -> None:
    assert Columns.of(feature_cols, label_cols) == expected


@pytest.mark.parametrize("feature_cols,label_cols,message", [
    ([], None, r"feature_cols=\[\] must be a column name or a non-empty list of column names; pass e.g. feature_cols='a'"),
    ("a", 3, r"label_cols=3 must be a column name or a non-empty list of column names; pass e.g. label_cols='a'"),
    ({"a"}, None, r"feature_cols=\{'a'\} must be a column name"),
])
def test_bad_columns_name_the_argument_and_the_value(feature_cols, label_cols, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        Columns.of(feature_cols, label_cols)


def test_columns_built_directly_must_be_tuples() -> None:
    with pytest.raises(InvalidArgumentError, match=r"Columns\(features=\['a'\]\): give None or a non-empty tuple"):
        Columns(["a"])


# -- dict shards with feature_cols: the named entries, never silently ignored ------------------------

def _people() -> dict:
    return {"age": np.array([30.0, 40.0, 50.0]), "height": np.array([[1.7], [1.8], [1.9]]),
            "label": np.array([0, 1, 0]), "weight": np.array([60.0, 70.0, 80.0])}


def test_a_dict_shard_with_feature_cols_gives_those_entries_in_order_and_label_cols_as_y() -> None:
    arrays = convert.shard_to_model_arrays(_people(), Columns.of(["height", "age"], "label"))
    assert [x.tolist() for x in arrays["x"]] == [[[1.7], [1.8], [1.9]], [30.0, 40.0, 50.0]]
    assert arrays["y"].tolist() == [0, 1, 0]


def test_several_label_entries_of_a_dict_shard_become_one_two_dimensional_target() -> None:
    arrays = convert.shard_to_model_arrays(_people(), Columns.of("age", ["label", "weight"]))
    assert arrays["y"].tolist() == [[0, 60.0], [1, 70.0], [0, 80.0]]


def test_predicting_from_a_dict_shard_leaves_the_labels_out() -> None:
    arrays = convert.shard_to_model_arrays(_people(), Columns.of("age", "label"), need_labels=False)
    assert "y" not in arrays and len(arrays["x"]) == 1


@pytest.mark.parametrize("columns,message", [
    (Columns.of(["age", "size"], "label"),
     r"feature_cols=\['age', 'size'\]: key\(s\) \['size'\] not in a dict shard, whose keys are \['age', 'height', 'label', 'weight'\]"),
    (Columns.of("age", "target"), r"label_cols=\['target'\]: key\(s\) \['target'\] not in a dict shard"),
])
def test_a_key_missing_from_a_dict_shard_names_the_key_the_argument_and_the_keys_there_are(columns, message) -> None:
    with pytest.raises(ColumnNotFoundError, match=message):
        convert.shard_to_model_arrays(_people(), columns)


def test_dict_entries_of_different_row_counts_are_named() -> None:
    shard = {**_people(), "age": np.array([1.0, 2.0])}
    with pytest.raises(InvalidArgumentError, match=r"different row counts \{'age': 2, 'label': 3\}"):
        convert.shard_to_model_arrays(shard, Columns.of("age", "label"))


def test_feature_cols_on_a_shard_that_is_neither_pandas_nor_a_dict_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match=r"feature_cols=\['a'\] names columns of pandas shards or keys of dict shards, but a shard is a list"):
        convert.shard_to_model_arrays([1, 2], Columns.of("a"), need_labels=False)


def test_a_dict_shard_without_feature_cols_keeps_the_x_y_form() -> None:
    arrays = convert.shard_to_model_arrays({"x": (np.zeros((2, 3)), np.ones(2)), "y": np.arange(2), "other": 1}, Columns())
    assert [x.shape for x in arrays["x"]] == [(2, 3), (2,)] and arrays["y"].tolist() == [0, 1]


@pytest.mark.parametrize("shard,columns,message", [
    ({"x": np.zeros(2)}, Columns(), r"a shard has no 'y' entry; training and evaluation need \{'x': \.\.\., 'y': \.\.\.\} shards"),
    (_people(), Columns.of("age"), r"feature_cols=\['age'\] was given without label_cols"),
    (pd.DataFrame({"a": [1.0]}), Columns.of("a"), r"feature_cols=\['a'\] was given without label_cols"),
    (pd.DataFrame({"a": [1.0]}), Columns(), "the XShards holds pandas DataFrames: pass feature_cols"),
])
def test_training_shards_without_labels_or_features_are_clear_errors(shard, columns, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        convert.shard_to_model_arrays(shard, columns)


# -- on Spark: XShards and DataFrames to model arrays, checked on the driver where possible --------

def test_xshards_of_dicts_select_their_feature_keys(sc) -> None:
    shards = XShards.partition(_people(), num_shards=2)
    arrays = shards.to_model_arrays(Columns.of(["weight", "age"], "label")).collect()
    assert [a["x"][0].tolist() for a in arrays] == [[60.0], [70.0, 80.0]]
    assert np.concatenate([a["y"] for a in arrays]).tolist() == [0, 1, 0]
    with pytest.raises(ColumnNotFoundError, match=r"key\(s\) \['size'\] not in a dict shard"):
        shards.to_model_arrays(Columns.of("size", "label")).collect()


@pytest.mark.parametrize("columns,need_labels,message", [
    (Columns(), True, r"training is a Spark DataFrame: pass feature_cols=\[\.\.\.\] naming the model's input columns"),
    (Columns.of("a"), True, r"training is a Spark DataFrame: pass label_cols=\[\.\.\.\] naming the label column\(s\)"),
    (Columns.of("nope"), False, r"feature_cols=\['nope'\]: column\(s\) \['nope'\] not found; the DataFrame has columns \['a', 's', 't'\]"),
    (Columns.of("s"), False, r"feature_cols: column 's' has type string, which is not numeric"),
    (Columns.of("a", "s"), True, r"label_cols: column 's' has type string, which is not numeric"),
])
def test_spark_dataframe_columns_are_checked_on_the_driver(spark, columns, need_labels, message) -> None:
    df = spark.createDataFrame([(1.0, "x", 0)], "a double, s string, t long")
    with pytest.raises(InvalidArgumentError, match=message):
        model_arrays_of(df, columns, need_labels=need_labels, argument="training")


def test_spark_dataframe_vectors_and_arrays_become_one_input_each(spark) -> None:
    from pyspark.ml.linalg import Vectors

    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]), [3.0], 0), (Vectors.dense([4.0, 5.0]), [6.0], 1)], ["v", "a", "t"])
    arrays = convert.concat_model_arrays(model_arrays_from_spark_df(df, Columns.of(["v", "a"], "t")).collect())
    assert [x.tolist() for x in arrays["x"]] == [[[1.0, 2.0], [4.0, 5.0]], [[3.0], [6.0]]]
    assert arrays["y"].tolist() == [0, 1]


def test_spark_dataframe_columns_named_with_dots_and_backticks_are_taken_as_named(spark) -> None:
    """A dot would mean a struct field to Spark and a backtick ended the quoting before."""
    df = spark.createDataFrame([(1.0, 2.0, 0), (3.0, 4.0, 1)], ["a.b", "c`d", "t"])
    arrays = convert.concat_model_arrays(model_arrays_from_spark_df(df, Columns.of(["a.b", "c`d"], "t")).collect())
    assert [x.tolist() for x in arrays["x"]] == [[1.0, 3.0], [2.0, 4.0]]
    assert arrays["y"].tolist() == [0, 1]


@pytest.mark.parametrize("data,columns,message", [
    ("frame", Columns.of("a", "t"), r"data is a str; expected an XShards or a Spark DataFrame here"),
    (None, Columns.of("a"), r"data: feature_cols was given without label_cols; pass label_cols=\[\.\.\.\] too"),
])
def test_model_arrays_of_refuses_other_inputs_and_feature_cols_without_labels(sc, data, columns, message) -> None:
    data = XShards.partition(pd.DataFrame({"a": [1.0]}), num_shards=1) if data is None else data
    with pytest.raises(InvalidArgumentError, match=message):
        model_arrays_of(data, columns)
