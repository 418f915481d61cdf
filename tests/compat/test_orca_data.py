"""Orca's data calls whose behaviour its users and tests rely on, with ``zoo.orca`` replaced by
``zoo_lite``: the readers' error wording, dotted column names, list shards as rows, ``_for_each``
and ``compute``. Real local Spark (the shared ``sc`` fixture); files are written per test."""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
import pytest

import zoo_lite.data.pandas
from zoo_lite.data import SparkXShards
from zoo_lite.errors import DataReadError, InvalidArgumentError, ZooLiteError

pytestmark = pytest.mark.usefixtures("sc")

MORTGAGE = "ID,sale_price,location\n100529,150000,110\n100458,475000,110\n101388,260000,120\n"


def csv_folder(tmp_path: pathlib.Path, text: str = MORTGAGE) -> str:
    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "part1.csv").write_text(text)
    return str(folder)


def test_a_missing_path_says_what_spark_and_pandas_say(tmp_path, backend) -> None:
    missing = str(tmp_path / "abc")
    for reader in (zoo_lite.data.pandas.read_csv, zoo_lite.data.pandas.read_json, zoo_lite.data.pandas.read_parquet):
        with pytest.raises(DataReadError) as caught:
            reader(missing)
        assert "Path does not exist" in str(caught.value) and "No such file or directory" in str(caught.value)
        assert repr(missing) in str(caught.value)


def test_dotted_and_spaced_header_names_read_as_pandas_reads_them(tmp_path, backend) -> None:
    path = tmp_path / "dots.csv"
    path.write_text("a.b,c d,e`f\n1,2.5,x\n3,4.5,y\n")
    frame = pd.concat(zoo_lite.data.pandas.read_csv(str(path)).collect(), ignore_index=True)
    pd.testing.assert_frame_equal(frame, pd.read_csv(path))
    selected = pd.concat(zoo_lite.data.pandas.read_csv(str(path), usecols=["a.b"]).collect(), ignore_index=True)
    pd.testing.assert_frame_equal(selected, pd.read_csv(path, usecols=["a.b"]))


def test_a_binary_file_read_as_csv_is_a_read_error_naming_the_file(tmp_path) -> None:
    """The spark backend on a non-text file (Orca's test reads a MATLAB file): a DataReadError
    naming the file, not Spark's unresolved-column error about its header's garbage."""
    folder = tmp_path / "binary"
    folder.mkdir()
    rng = np.random.default_rng(0)
    (folder / "a.mat").write_bytes(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, v. 1.0\n" + rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises((DataReadError, InvalidArgumentError)) as caught:
        zoo_lite.data.pandas.read_csv(str(folder), backend="spark").collect()
    assert "a.mat" in str(caught.value)


def test_names_that_do_not_match_usecols_use_orca_s_words(tmp_path) -> None:
    with pytest.raises(InvalidArgumentError, match="Passed names did not match usecols: names=\\['ID', 'location'\\]"):
        zoo_lite.data.pandas.read_csv(csv_folder(tmp_path), header=0, names=["ID", "location"], usecols=["ID"], backend="spark")


def test_a_dtype_position_for_a_column_not_read_uses_orca_s_words_and_no_internal_name(tmp_path) -> None:
    folder = csv_folder(tmp_path)
    with pytest.raises(InvalidArgumentError) as caught:
        zoo_lite.data.pandas.read_csv(folder, header=0, names=["user", "item"], usecols=[0, 1],
                                      dtype={1: np.float32, 2: np.int32}, backend="spark").collect()
    message = str(caught.value)
    assert "column index to be set type is not in current dataframe" in message and "key 2" in message
    assert "_zoo_lite" not in message
    read = pd.concat(zoo_lite.data.pandas.read_csv(folder, header=0, names=["user", "item"],
                                      usecols=[0, 1], dtype={0: np.float32, 1: np.int32}, backend="spark").collect())
    assert (read.dtypes == [np.float32, np.int32]).all()


def test_for_each_hands_back_results_or_the_errors_raised(sc, tmp_path) -> None:
    shards = zoo_lite.data.pandas.read_csv(csv_folder(tmp_path))

    def get_item(data, key):
        return data[key]

    assert isinstance(shards._for_each(get_item, "location").first(), pd.Series)
    error = shards._for_each(get_item, "abc").first()
    assert isinstance(error, KeyError) and "abc" in str(error)


def test_list_shards_are_rows_for_len_and_repartition(sc) -> None:
    lists = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]
    shards = SparkXShards(sc.parallelize(lists, 2))
    assert len(shards) == 16
    one = shards.repartition(1)
    [[joined]] = one.rdd.glom().collect()   # one partition holding one list shard
    assert sorted(joined) == list(range(1, 17))
    many = shards.repartition(6)
    partitions = many.rdd.glom().collect()
    assert all(len(partition) <= 1 for partition in partitions)
    assert sorted(value for shard in many.collect() for value in shard) == list(range(1, 17))
    # a list of ndarrays keeps its meaning: one leaf per model input, rows along the arrays
    arrays = SparkXShards(sc.parallelize([[np.arange(4), np.arange(4) * 2]], 1))
    assert len(arrays) == 4 and [len(shard[0]) for shard in arrays.repartition(2).collect()] == [2, 2]


def test_compute_runs_pending_work_now_and_returns_the_shards(sc, tmp_path) -> None:
    shards = zoo_lite.data.pandas.read_csv(csv_folder(tmp_path))
    assert shards.compute() is shards
    failing = shards.transform_shard(lambda df: df["missing"])
    with pytest.raises(ZooLiteError, match="missing"):
        failing.compute()


def test_selection_and_zip_errors_start_with_orca_s_words(sc, tmp_path) -> None:
    shards = zoo_lite.data.pandas.read_csv(csv_folder(tmp_path))
    with pytest.raises(ZooLiteError, match="Invalid key for this XShards: key='abc'"):
        len(shards["abc"])
    as_dicts = shards.transform_shard(lambda df: {"ID": df["ID"].to_numpy()})
    with pytest.raises(ZooLiteError, match=r"Invalid key for this XShards: key='abc' .*its keys are \['ID'\]"):
        len(as_dicts["abc"])
    with pytest.raises(ZooLiteError, match="No selection operation available for this XShards: its shards are int"):
        len(shards.transform_shard(lambda df: 4)["abc"])
    with pytest.raises(InvalidArgumentError, match="other should be a SparkXShards"):
        shards.zip([1, 2, 3])
    with pytest.raises(ZooLiteError, match="The two SparkXShards should have the same number of partitions"):
        shards.zip(shards.repartition(shards.num_partitions() + 1))
    single = SparkXShards(sc.parallelize([{"x": 1}, {"x": 2}], 1))
    with pytest.raises(ZooLiteError, match="The two SparkXShards should have the same number of elements in each partition"):
        shards.repartition(1).zip(single).collect()
