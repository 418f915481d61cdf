"""The rows of a fit or an evaluation go into Ray in one Spark task per task slot, in bounded pieces,
each row once, whatever the input's partitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.data.convert import Columns
from zoo_lite.learn.base import data_inputs
from zoo_lite.learn.base.data_inputs import RowsInRayAhead, rows_in_ray

pytestmark = pytest.mark.timeout(600)

COLUMNS = Columns.of(["features"], ["label"])


def _frame(rows: int, partitions: int):
    ids = np.arange(rows)
    frame = pd.DataFrame({"features": list(np.stack([ids, -ids], axis=1).astype("float32")), "label": ids})
    return OrcaContext.get_spark_session().createDataFrame(frame).repartition(partitions)


def _labels_in_ray(in_ray) -> np.ndarray:
    """Every label held in Ray, in the order of its partitions."""
    return np.concatenate([shard["y"] for shard in in_ray.to_spark_xshards().collect()])


def _tasks_run(spark_context, job_group: str) -> list[int]:
    """Per job of ``job_group``: how many tasks ran (a stage skipped for a cached input runs none)."""
    tracker = spark_context.statusTracker()
    return [sum(tracker.getStageInfo(stage).numCompletedTasks for stage in tracker.getJobInfo(job).stageIds)
            for job in tracker.getJobIdsForGroup(job_group)]


def test_a_dataframe_of_many_partitions_is_read_by_one_task_per_slot_with_every_row_once(ray_local_cluster) -> None:
    sc = OrcaContext.get_spark_context()
    frame = _frame(400, 40).cache()
    frame.count()
    sc.setJobGroup("feed-of-40", "the rows of a 40-partition frame into Ray")
    try:
        in_ray = rows_in_ray(frame, COLUMNS)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    try:
        assert sc.defaultParallelism == 2
        assert _tasks_run(sc, "feed-of-40") == [2]
        assert in_ray.num_partitions() == 2
        np.testing.assert_array_equal(np.sort(_labels_in_ray(in_ray)), np.arange(400))
    finally:
        in_ray.release()
        frame.unpersist()


def test_an_xshards_of_many_partitions_goes_into_ray_as_one_partition_per_slot(ray_local_cluster) -> None:
    ids = np.arange(90)
    shards = XShards.partition({"x": ids.reshape(-1, 1).astype("float32"), "y": ids}, num_shards=9)
    in_ray = RowsInRayAhead(shards, Columns.of()).result()
    try:
        assert in_ray.num_partitions() == 2
        np.testing.assert_array_equal(np.sort(_labels_in_ray(in_ray)), ids)
    finally:
        in_ray.release()


def test_fewer_partitions_than_slots_are_kept_as_they_are(ray_local_cluster) -> None:
    in_ray = rows_in_ray(_frame(10, 1), COLUMNS)
    try:
        assert in_ray.partition_rows() == [10]
    finally:
        in_ray.release()


def test_a_task_puts_its_rows_in_pieces_of_the_feeds_size(ray_local_cluster, monkeypatch) -> None:
    # each Arrow record batch of 100 rows x 2 float32 features is well over 100 bytes: a piece each
    OrcaContext.get_spark_session().conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    monkeypatch.setattr(data_inputs, "FEED_PIECE_BYTES", 100)
    try:
        in_ray = rows_in_ray(_frame(1000, 2), COLUMNS)
    finally:
        OrcaContext.get_spark_session().conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    try:
        assert in_ray.num_partitions() > 2 and max(in_ray.partition_rows()) <= 100
        np.testing.assert_array_equal(np.sort(_labels_in_ray(in_ray)), np.arange(1000))
    finally:
        in_ray.release()
