"""zoo_lite's JVM helper (zoo_lite/data/jvm): the committed jar is built from the committed source,
it loads on the pinned Spark, and the DataFrames Spark decodes through it equal those decoded in
Python, for every kind of shard to_spark_df takes."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.data.convert import pandas_rdd_to_spark_df
from zoo_lite.data.jvm import JAR_PATH, SOURCE_PATH, arrow_frames
from zoo_lite.errors import InvalidArgumentError, ShardFunctionError

pytestmark = pytest.mark.timeout(300)


def test_the_jar_is_built_from_the_committed_source():
    """Fails when ArrowFrames.java changed without scripts/build_jvm.sh."""
    with zipfile.ZipFile(JAR_PATH) as jar:
        recorded = jar.read("io/zoolite/ArrowFrames.java.sha256").decode().strip()
        assert {"io/zoolite/ArrowFrames.class", "io/zoolite/ArrowFrames$TaggedBodies.class"} <= set(jar.namelist())
    assert recorded == hashlib.sha256(SOURCE_PATH.read_bytes()).hexdigest()


def test_the_helper_loads_on_the_pinned_spark(sc):
    assert arrow_frames(sc) is not None
    assert arrow_frames(sc) is arrow_frames(sc)   # loaded once per context


def spark_df(shards, decoder: str):
    return pandas_rdd_to_spark_df(shards.rdd, OrcaContext.get_spark_session(), decoder=decoder)


def both_decoders(shards) -> tuple[pd.DataFrame, pd.DataFrame]:
    by_jvm, by_python = (spark_df(shards, decoder) for decoder in ("jvm", "python"))
    assert by_jvm.schema == by_python.schema
    return by_jvm.toPandas(), by_python.toPandas()


def typed_frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(rows)
    return pd.DataFrame({
        "i": np.arange(rows, dtype=np.int64),
        "small": rng.integers(-100, 100, rows).astype(np.int16),
        "f": rng.standard_normal(rows),
        "f32": rng.standard_normal(rows).astype(np.float32),
        "s": [None if k % 7 == 0 else f"text-{k}-é" for k in range(rows)],
        "ok": rng.integers(0, 2, rows).astype(bool),
        "t": pd.date_range("2024-03-01", periods=rows, freq="37min"),   # pandas' nanoseconds: cast for Spark
    })


@pytest.mark.parametrize("layout", ["one_partition", "many_batches", "empty_partitions"])
def test_jvm_and_python_decoders_give_the_same_dataframe(sc, layout):
    frame = typed_frame(150_000 if layout == "many_batches" else 300)   # > 2 Arrow batches of 65,536 rows
    pieces = {
        "one_partition": [frame],
        "many_batches": [frame.iloc[:140_000], frame.iloc[140_000:]],
        "empty_partitions": [frame.iloc[:0], frame.iloc[:100], frame.iloc[:0], frame.iloc[100:]],
    }[layout]
    shards = XShards.partition(pieces[0], 1) if len(pieces) == 1 else _shards_of(sc, pieces)
    by_jvm, by_python = both_decoders(shards)
    pd.testing.assert_frame_equal(by_jvm, by_python)
    assert by_jvm["i"].tolist() == list(range(len(frame)))   # every row once, in shard order
    assert by_jvm["t"].tolist() == frame["t"].tolist()


def _shards_of(sc, pieces: list[pd.DataFrame]):
    from zoo_lite.data.shard import SparkXShards

    return SparkXShards(sc.parallelize(pieces, len(pieces)))


def test_partitions_of_other_types_are_cast_to_the_unified_schema(sc):
    ints = pd.DataFrame({"x": [1, 2], "s": ["a", "b"]})
    floats = pd.DataFrame({"x": [0.5, np.nan], "s": ["c", None]})
    by_jvm, by_python = both_decoders(_shards_of(sc, [ints, floats]))
    pd.testing.assert_frame_equal(by_jvm, by_python)
    assert by_jvm["x"].tolist()[:3] == [1.0, 2.0, 0.5] and np.isnan(by_jvm["x"].iloc[3])


def test_shards_of_other_types_in_one_partition_are_unified(sc):
    from zoo_lite.data.shard import SparkXShards

    ints = pd.DataFrame({"x": [1, 2], "s": ["a", "b"]})
    floats = pd.DataFrame({"x": [0.5, 4.0], "s": ["c", "d"]})
    by_jvm, by_python = both_decoders(SparkXShards(sc.parallelize([ints, floats], 1)))
    pd.testing.assert_frame_equal(by_jvm, by_python)
    assert by_jvm["x"].tolist() == [1.0, 2.0, 0.5, 4.0] and by_jvm["s"].tolist() == list("abcd")


def test_dict_shards_with_tensor_cells(sc):
    shards = XShards.partition({"x": np.arange(24, dtype=np.uint8).reshape(6, 2, 2), "y": np.arange(6.0)}, 2)
    by_jvm, by_python = both_decoders(shards)
    assert [np.asarray(cell.tolist()).tolist() for cell in by_jvm["x"]] == np.arange(24).reshape(6, 2, 2).tolist()
    assert by_jvm["y"].tolist() == by_python["y"].tolist() == list(np.arange(6.0))


def test_rows_are_decoded_in_the_jvm_with_sql_on_top(sc, spark):
    df = spark_df(XShards.partition(pd.DataFrame({"k": [1, 2, 1, 3], "v": [1.0, 2.0, 3.0, 4.0]}), 2), "jvm")
    df.createOrReplaceTempView("decoded_by_jvm")
    assert spark.sql("SELECT k, SUM(v) AS total FROM decoded_by_jvm GROUP BY k ORDER BY k").collect() == [
        (1, 4.0), (2, 2.0), (3, 4.0)]


def test_a_partition_that_cannot_be_unified_names_the_column(sc):
    shards = _shards_of(sc, [pd.DataFrame({"x": [1]}), pd.DataFrame({"x": ["text"]})])
    for decoder in ("jvm", "python"):
        with pytest.raises(InvalidArgumentError, match=r"column 'x'|'x'"):
            spark_df(shards, decoder)


def test_dict_shards_that_do_not_fit_the_given_schema_name_the_partition_and_the_keys(sc):
    """With schema= the DataFrame is made without a pass over the data, so the error comes from
    Spark's action, as Spark's PythonException carrying zoo_lite's message."""
    import pyarrow as pa
    from pyspark.errors import PythonException

    from zoo_lite.data.shard import SparkXShards

    schema = pa.schema([("a", pa.int64())])
    session = OrcaContext.get_spark_session()
    wrong_type = SparkXShards(sc.parallelize([{"a": np.array([1, 2])}, {"a": np.array(["u", "v"])}], 2))
    wrong_keys = SparkXShards(sc.parallelize([{"b": np.array([1, 2])}], 1))
    for decoder in ("jvm", "python"):
        with pytest.raises(PythonException, match=r"InvalidArgumentError: to_spark_df: partition 1 \(a: string\) does not fit "
                                                  r"the schema a: int64: .*; make each key's dtype and shape the same in every "
                                                  r"shard, or pass schema="):
            pandas_rdd_to_spark_df(wrong_type.rdd, session, schema=schema, decoder=decoder).collect()
        with pytest.raises(PythonException, match=r"partition 0 has keys \['b'\], but the DataFrame schema has \['a'\]"):
            pandas_rdd_to_spark_df(wrong_keys.rdd, session, schema=schema, decoder=decoder).collect()


def test_a_failing_shard_function_is_raised_as_itself(sc):
    shards = XShards.partition(pd.DataFrame({"x": [1, 2]}), 2).transform_shard(lambda frame: frame["missing"])
    with pytest.raises(ShardFunctionError, match=r"missing"):
        spark_df(shards, "jvm")


def test_unknown_decoder_is_refused(sc):
    with pytest.raises(InvalidArgumentError, match=r"decoder='arrow'.*'jvm' or 'python'"):
        spark_df(XShards.partition(pd.DataFrame({"x": [1]}), 1), "arrow")
