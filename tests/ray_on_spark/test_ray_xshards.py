"""SparkXShards -> RayXShards -> SparkXShards on real Spark and real Ray, and the failures."""

from __future__ import annotations

import gc
import os
import re
import signal
import time

import numpy as np
import pandas as pd
import pytest

from tests.ray_on_spark.helpers import assert_nodes_match_executors, describe, wait_until_gone
from zoo_lite import OrcaContext
from zoo_lite.data import SparkXShards, XShards
from zoo_lite.data.ray_xshards import PartitionLostError, RayXShards
from zoo_lite.errors import ZooLiteError

pytestmark = pytest.mark.timeout(600)


def test_local_cluster_has_one_node_per_executor(ray_local_cluster) -> None:
    assert_nodes_match_executors(expected_nodes=2, cpus_per_node=1)
    assert len({node["executor_pid"] for node in ray_local_cluster.nodes}) == 2


@pytest.fixture
def actor_class():
    import ray

    @ray.remote(num_cpus=0)
    class Worker:
        def node(self) -> str:
            return ray.get_runtime_context().get_node_id()

    return Worker


def frames(sizes: list[int]) -> SparkXShards:
    """One pandas shard per partition, with these row counts (0 gives an empty partition)."""
    sc = OrcaContext.get_spark_context()
    starts = np.cumsum([0, *sizes])
    data = [[] if size == 0 else [pd.DataFrame({"id": np.arange(starts[i], starts[i] + size), "v": np.arange(size) * 0.5})]
            for i, size in enumerate(sizes)]
    return SparkXShards(sc.parallelize(data, len(data)).flatMap(lambda shards: shards))


def test_round_trip_keeps_content_and_order(ray_local_cluster) -> None:
    shards = frames([3, 0, 5, 4])
    in_ray = shards.to_ray()
    assert in_ray.num_partitions() == 4 and len(in_ray) == 12
    assert in_ray.partition_rows() == [3, 0, 5, 4]
    back = in_ray.to_spark_xshards()
    expected = pd.concat(shards.collect(), ignore_index=True)
    assert back.num_partitions() == 4
    pd.testing.assert_frame_equal(pd.concat(back.collect(), ignore_index=True), expected)
    # the partitions sit on the executors' own nodes, both of them
    assert len(set(in_ray.partition_nodes())) == 2
    in_ray.release()


def test_partitions_put_in_pieces_keep_their_rows_in_order_and_an_empty_partition(ray_local_cluster) -> None:
    from zoo_lite.data.ray_xshards.transfer import spark_to_ray

    sc = OrcaContext.get_spark_context()
    # partition 0 holds three shards, partition 1 none, partition 2 one
    shards = SparkXShards(sc.parallelize([[np.arange(0, 2), np.arange(2, 5), np.arange(5, 6)], [], [np.arange(6, 10)]], 3)
                          .flatMap(lambda partition: partition))
    in_ray = spark_to_ray(shards.rdd, SparkXShards._new_collection, piece_bytes=1)   # every shard ends a piece
    assert in_ray.partition_rows() == [2, 3, 1, 0, 4]
    np.testing.assert_array_equal(np.concatenate(in_ray.to_spark_xshards().collect()), np.arange(10))
    in_ray.release()


def test_round_trip_of_ndarray_dicts_and_a_single_partition(ray_local_cluster) -> None:
    data = {"x": np.arange(20).reshape(10, 2), "y": np.arange(10)}
    in_ray = XShards.partition(data, num_shards=1).to_ray()
    assert in_ray.num_partitions() == 1 and len(in_ray) == 10
    (back,) = in_ray.to_spark_xshards().collect()
    np.testing.assert_array_equal(back["x"], data["x"])
    np.testing.assert_array_equal(back["y"], data["y"])


def test_more_actors_than_partitions_splits_rows_evenly(ray_local_cluster, actor_class) -> None:
    in_ray = frames([7, 0]).to_ray()
    actors = [actor_class.remote() for _ in range(3)]
    assigned = in_ray.assign_rows_to_actors(actors)
    assert [sum(stop - start for _, start, stop in slices) for slices in assigned] == [3, 2, 2]
    result = in_ray.transform_rows_with_actors(actors, lambda actor, shards: pd.concat(shards, ignore_index=True))
    assert isinstance(result, RayXShards) and result.partition_rows() == [3, 2, 2]
    # actor i's result holds exactly its assigned row ranges, in order (which actor gets which rows
    # depends on where the actors were placed: local ones get the first rows)
    for frame, slices in zip(result.collect(), assigned):
        expected = np.concatenate([np.arange(7)[start:stop] for _, start, stop in slices])
        np.testing.assert_array_equal(frame["id"].to_numpy(), expected)
    ids = np.concatenate([frame["id"].to_numpy() for frame in result.collect()])
    np.testing.assert_array_equal(np.sort(ids), np.arange(7))
    back = result.to_spark_xshards().collect()
    assert [len(frame) for frame in back] == [3, 2, 2]


def test_assignment_balances_rows_and_prefers_local_partitions(ray_local_cluster, actor_class) -> None:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    in_ray = frames([10, 2, 2, 10]).to_ray()
    nodes = sorted(set(in_ray.partition_nodes()))
    actors = [actor_class.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote() for node in nodes]
    assigned = in_ray.assign_rows_to_actors(actors)
    rows = [sum(stop - start for _, start, stop in slices) for slices in assigned]
    assert rows == [12, 12]
    refs = in_ray.object_refs()
    for actor_node, slices in zip(nodes, assigned):
        whole = [ref for ref, start, stop in slices if start == 0 and stop == in_ray.partition_rows()[refs.index(ref)]]
        assert any(in_ray.partition_nodes()[refs.index(ref)] == actor_node for ref in whole)
    assert ray.get([actor.node.remote() for actor in actors]) == nodes


def test_release_makes_the_owners_forget_the_objects_and_the_owners_are_reused(ray_local_cluster) -> None:
    import ray

    in_ray = frames([2, 2]).to_ray()
    owners, tag = list(in_ray._owners), in_ray._tag
    assert sum(len(ray.get(owner.registered.remote(tag))) for owner in owners) == 2
    again = frames([1, 1]).to_ray()
    assert again._owners == owners, "a second to_ray() reuses the node owners instead of starting actors"
    in_ray.release()
    in_ray.release()  # idempotent
    deadline = time.monotonic() + 30  # forget() is sent without waiting
    while time.monotonic() < deadline and any(ray.get(owner.registered.remote(tag)) for owner in owners):
        time.sleep(0.1)
    assert not any(ray.get(owner.registered.remote(tag)) for owner in owners)
    assert [shard["id"].tolist() for shard in again.collect()] == [[0], [1]]
    with pytest.raises(ZooLiteError, match="this RayXShards was released"):
        in_ray.collect()
    again.release()


def owned_objects(owners, tag: str) -> int:
    """How many objects the owner actors hold for ``tag``."""
    import ray

    return sum(len(by_index) for by_index in ray.get([owner.registered.remote(tag) for owner in owners]))


def wait_until_forgotten(owners, tag: str, timeout_s: float = 30.0) -> int:
    """Objects still held for ``tag`` once the owners forgot it or ``timeout_s`` passed
    (forget() is sent without waiting)."""
    deadline = time.monotonic() + timeout_s
    while owned_objects(owners, tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    return owned_objects(owners, tag)


def test_chained_to_ray_to_spark_xshards_collect_keeps_the_ray_objects_alive(ray_local_cluster) -> None:
    """Issue 14: the temporary RayXShards was collected (and its objects freed) before the lazy
    SparkXShards read them, which failed with a KeyError in PartitionOwner.boxed."""
    data = {"x": np.arange(12).reshape(6, 2), "y": np.arange(6)}
    back = XShards.partition(data, num_shards=2).to_ray().to_spark_xshards().collect()
    np.testing.assert_array_equal(np.concatenate([shard["y"] for shard in back]), data["y"])
    np.testing.assert_array_equal(np.concatenate([shard["x"] for shard in back]), data["x"])


def test_collections_derived_from_to_spark_xshards_keep_the_ray_objects_until_they_are_gone(ray_local_cluster) -> None:
    in_ray = frames([3, 4]).to_ray()
    owners, tag = list(in_ray._owners), in_ray._tag
    doubled = in_ray.to_spark_xshards().transform_shard(lambda frame: frame * 2)
    del in_ray
    gc.collect()
    assert owned_objects(owners, tag) == 2, "the derived SparkXShards must keep the RayXShards alive"
    evened = doubled.repartition(3)
    del doubled
    gc.collect()
    assert sorted(concat_ids(evened.collect())) == [2 * i for i in range(7)]
    # a chain after to_spark_xshards, with nothing but the last collection referenced
    chained = frames([2, 2]).to_ray().to_spark_xshards().transform_shard(lambda frame: frame + 1)[["id"]]
    gc.collect()
    assert concat_ids(chained.collect()) == [1, 2, 3, 4]
    # a collection zipped with a derived one keeps the other side alive too
    zipped = frames([1, 1]).zip(frames([1, 1]).to_ray().to_spark_xshards().transform_shard(lambda frame: frame))
    gc.collect()
    assert [(left["id"].tolist(), right["id"].tolist()) for left, right in zipped.collect()] == [([0], [0]), ([1], [1])]
    # once the last derived collection is gone, the owners forget the objects
    assert owned_objects(owners, tag) == 2
    del evened
    gc.collect()
    assert wait_until_forgotten(owners, tag) == 0


def concat_ids(frames_: list[pd.DataFrame]) -> list[int]:
    return [int(i) for frame in frames_ for i in frame["id"]]


def test_release_while_a_derived_collection_lives_is_deferred_until_it_is_gone(ray_local_cluster) -> None:
    in_ray = frames([2, 3]).to_ray()
    owners, tag = list(in_ray._owners), in_ray._tag
    back = in_ray.to_spark_xshards()
    derived = back.transform_shard(lambda frame: frame)
    in_ray.release()
    with pytest.raises(ZooLiteError, match="this RayXShards was released"):
        in_ray.collect()
    with pytest.raises(ZooLiteError, match="this RayXShards was released"):
        in_ray.to_spark_xshards()
    del in_ray
    gc.collect()
    assert concat_ids(back.collect()) == [0, 1, 2, 3, 4]
    del back
    gc.collect()
    assert concat_ids(derived.collect()) == [0, 1, 2, 3, 4]
    assert owned_objects(owners, tag) == 2
    del derived
    gc.collect()
    assert wait_until_forgotten(owners, tag) == 0


def test_reading_objects_the_owners_forgot_raises_a_clear_error(ray_local_cluster) -> None:
    """A SparkXShards built directly from the RDD of a derived one does not keep the RayXShards
    alive: reading it after the RayXShards is gone names what happened, not a KeyError."""
    import ray

    from zoo_lite.data.ray_xshards import PartitionReleasedError

    in_ray = frames([2, 2]).to_ray()
    owners, tag = list(in_ray._owners), in_ray._tag
    bare = SparkXShards(in_ray.to_spark_xshards().rdd)  # the derived collection itself is dropped at once
    del in_ray
    gc.collect()
    assert wait_until_forgotten(owners, tag) == 0
    with pytest.raises(PartitionReleasedError, match=r"partition [01] of a RayXShards \(tag [0-9a-f]{8}\) is no longer held"):
        bare.collect()
    with pytest.raises(PartitionReleasedError, match=r"released .*keep the SparkXShards"):
        ray.get(owners[0].boxed.remote(tag, 0))


def test_a_killed_executor_ends_its_ray_node_and_its_partitions_are_reported_lost(ray_local_cluster) -> None:
    """Last in this module: it takes one of the fixture's executors down."""
    import psutil
    import ray

    ray_context = ray_local_cluster
    in_ray = frames([4, 4, 4, 4]).to_ray()
    victim = ray_context.nodes[1]  # not the head: its loss would end the whole cluster
    watchdog = psutil.Process(victim["watchdog_pid"])
    node_processes = [watchdog, *watchdog.children(recursive=True)]
    lost_node = next(n["NodeID"] for n in ray.nodes() if n.get("NodeName") == victim["node_name"])
    expected_lost = [i for i, node in enumerate(in_ray.partition_nodes()) if node == lost_node]
    assert expected_lost
    os.kill(victim["executor_pid"], signal.SIGKILL)
    left = wait_until_gone(node_processes, timeout_s=30)
    assert not left, f"Ray processes outlived their SIGKILLed executor: {describe(left)}"
    with pytest.raises(PartitionLostError, match=re.escape(f"partitions {expected_lost} of this RayXShards are lost")):
        in_ray.collect()
