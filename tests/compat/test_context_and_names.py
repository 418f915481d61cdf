"""Orca's context arguments, missing names and backend names, called as an Orca user writes them
(``zoo.orca`` -> ``zoo_lite``; ``from zoo import init_nncontext`` -> ``from zoo_lite import
init_nncontext``; ``from zoo.ray import RayContext`` -> ``from zoo_lite.ray_on_spark import
RayContext``). Real Spark and Ray: one local context for the module, Ray started on demand in it
as Orca's ``RayContext.get()`` did, and no Ray process left at the end."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.errors import ContextError, ContextStoppedError, InvalidArgumentError

pytestmark = pytest.mark.timeout(300)


# -- before the module's context: what needs no context, or must start its own ----------------------

@pytest.mark.parametrize(
    "argument, value",
    [("env", ["OMP_NUM_THREADS=1"]), ("extra_params", "--min-worker-port=20000"), ("system_config", 5), ("conf", ["a"])],
)
def test_a_dict_valued_argument_of_another_type_is_refused_naming_it(argument, value):
    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=rf"{argument}=.* must be a dict"):
        init_orca_context(cluster_mode="local", cores=1, **{argument: value})
    assert not OrcaContext.is_active()   # refused before anything started


def test_ray_context_get_without_an_active_context_says_to_start_one():
    from zoo_lite.ray_on_spark import RayContext

    stop_orca_context()
    with pytest.raises(ContextStoppedError, match="no zoo_lite context is active.*init_orca_context"):
        RayContext.get()
    with pytest.raises(ContextStoppedError, match="no zoo_lite context is active"):
        RayContext.get(initialize=False)


def test_init_nncontext_starts_a_context_from_a_spark_conf_when_none_is_active():
    from pyspark import SparkConf

    from zoo_lite import init_nncontext

    stop_orca_context()
    try:
        sc = init_nncontext(SparkConf().setMaster("local[1]").setAppName("nncontext app"))
        assert (sc.master, sc.appName) == ("local[1]", "nncontext app")
        assert OrcaContext.get_spark_context() is sc   # a zoo_lite context, stopped by stop_orca_context
        assert sc.parallelize(range(5)).sum() == 10
    finally:
        stop_orca_context()
    assert not OrcaContext.is_active()


def test_init_nncontext_refuses_a_master_it_cannot_start_and_a_conf_of_another_type():
    from pyspark import SparkConf

    from zoo_lite import init_nncontext

    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=r"spark.master='mesos://host:5050'.*init_orca_context\(cluster_mode"):
        init_nncontext(SparkConf().setMaster("mesos://host:5050"))
    with pytest.raises(InvalidArgumentError, match=r"init_nncontext\(conf=42\): conf must be a pyspark.SparkConf"):
        init_nncontext(42)
    assert not OrcaContext.is_active()


# -- the module's context: local Spark, every dict-valued argument given as Orca's None ------------

@pytest.fixture(scope="module")
def orca_sc():
    from tests.ray_on_spark.helpers import stop_and_check_clean

    stop_orca_context()
    sc = init_orca_context(cluster_mode="local", cores=2, conf=None, env=None, extra_params=None, system_config=None)
    yield sc
    ray_context = OrcaContext.get_ray_context()
    if ray_context is None:
        stop_orca_context()
    else:
        stop_and_check_clean(ray_context)


def test_init_orca_context_takes_none_for_every_dict_valued_argument(orca_sc):
    assert OrcaContext.get_spark_context() is orca_sc
    assert orca_sc.parallelize(range(4), 2).sum() == 6


def test_init_nncontext_returns_the_active_context_as_orca_code_expects(orca_sc):
    from zoo_lite import init_nncontext

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # getting the active context is silent
        sc = init_nncontext()
    assert sc is orca_sc
    with pytest.warns(UserWarning, match=r"init_nncontext\(conf='other app'\) while a zoo_lite context is active"):
        assert init_nncontext("other app") is orca_sc


def test_ray_context_get_starts_ray_on_demand_as_orca_did(orca_sc):
    # runs before the other Ray tests of this module (file order): Ray is not started yet
    from zoo_lite.ray_on_spark import RayContext

    assert OrcaContext.get_ray_context() is None
    with pytest.raises(ContextError, match=r"initialize=False\): the active zoo_lite context has no Ray running"):
        RayContext.get(initialize=False)
    ray_ctx = RayContext.get()   # Orca: initialize=True starts Ray
    assert ray_ctx is OrcaContext.get_ray_context() is RayContext.get(initialize=False)
    batch_size = 32
    global_batch_size = batch_size * ray_ctx.num_ray_nodes
    assert (ray_ctx.num_ray_nodes, ray_ctx.ray_node_cpu_cores, global_batch_size) == (1, 2, 32)
    import ray

    assert ray.cluster_resources()["CPU"] == ray_ctx.num_ray_nodes * ray_ctx.ray_node_cpu_cores


# -- SharedValue (Orca's test_transform_broadcast) -------------------------------------------------

def test_shared_value_reaches_the_shard_functions(orca_sc):
    from zoo_lite.data import SharedValue, SparkXShards

    frames = [pd.DataFrame({"value": [index * 10 + 1, index * 10 + 2]}) for index in range(2)]

    def negative(df, column_name, minus_val):
        df[column_name] = df[column_name] * (-1)
        df[column_name] = df[column_name] - minus_val.value
        return df

    data_shard = SparkXShards(orca_sc.parallelize(frames, 2))   # Orca's test read two JSON files
    minus_val_shared_value = SharedValue(2)
    trans_shard = data_shard.transform_shard(negative, "value", minus_val_shared_value)
    before = pd.concat(data_shard.collect()).sort_values("value")["value"].tolist()
    after = pd.concat(trans_shard.collect()).sort_values("value", ascending=False)["value"].tolist()
    assert before == [1, 2, 11, 12] and after == [-3, -4, -13, -14]
    assert minus_val_shared_value.value == 2
    # unpersist drops the executors' copies only: a later job ships the value again
    minus_val_shared_value.unpersist()
    assert sorted(pd.concat(trans_shard.collect())["value"].tolist()) == [-14, -13, -4, -3]


def test_shared_value_is_one_spark_broadcast(orca_sc):
    from pyspark import Broadcast

    from zoo_lite.data import SharedValue

    table = {i: str(i) for i in range(1000)}
    shared = SharedValue(table)
    assert isinstance(shared.broadcast_data, Broadcast)
    looked_up = orca_sc.parallelize([3, 999], 2).map(lambda key: shared.value[key]).collect()
    assert looked_up == ["3", "999"]


# -- RayXShards: Orca's test_ray_xshards.py, in Orca's call style -----------------------------------

def get_ray_xshards(num_shards=None):
    from zoo_lite.data import XShards
    from zoo_lite.data.ray_xshards import RayXShards

    ndarray_dict = {"x": np.random.randn(10, 4), "y": np.random.randn(10, 4)}
    spark_xshards = XShards.partition(ndarray_dict, num_shards=num_shards)
    ray_xshards = RayXShards.from_spark_xshards(spark_xshards)
    return ray_xshards, ndarray_dict


def verify_collect_results(data_parts, ndarray_dict):
    for k, array in ndarray_dict.items():
        reconstructed = np.concatenate([part[k] for part in data_parts])
        assert np.allclose(array, reconstructed)


@pytest.fixture(scope="module")
def add1_actors(orca_sc):
    """Six of Orca's test actors, shared by the tests (each actor is a process: slow to start)."""
    import ray

    from zoo_lite.ray_on_spark import RayContext

    RayContext.get()   # Ray up before the class is declared

    @ray.remote(num_cpus=0)
    class Add1Actor:
        def get_node_ip(self):
            return ray.util.get_node_ip_address()

        def add_one(self, partition):
            return [{k: (value + 1) for k, value in shards.items()} for shards in partition]

    return [Add1Actor.remote() for _ in range(6)]


def test_from_spark_xshards_and_back(orca_sc):
    ray_xshards, ndarray_dict = get_ray_xshards()
    assert ray_xshards.num_partitions() == 2   # XShards.partition's default: nodes x cores
    verify_collect_results(ray_xshards.collect(), ndarray_dict)
    verify_collect_results(ray_xshards.to_spark_xshards().collect(), ndarray_dict)


def test_from_spark_xshards_refuses_what_is_not_a_spark_xshards(orca_sc):
    from zoo_lite.data.ray_xshards import RayXShards

    with pytest.raises(InvalidArgumentError, match=r"from_spark_xshards\(spark_xshards=list object\) needs a SparkXShards"):
        RayXShards.from_spark_xshards([np.zeros(3)])


def test_assign_partitions_to_actors(orca_sc, add1_actors):
    import ray

    ray_xshards, _ = get_ray_xshards(num_shards=5)
    part_num = ray_xshards.num_partitions()

    actor_num = 3
    actors = add1_actors[:actor_num]
    parts_list, actor_ips, assigned_actors = ray_xshards.assign_partitions_to_actors(actors)

    assert len(parts_list) == actor_num
    div, mod = divmod(part_num, actor_num)
    for counter in range(actor_num):
        if counter < mod:
            assert len(parts_list[counter]) == div + 1
        else:
            assert len(parts_list[counter]) == div
    assert sorted(part for parts in parts_list for part in parts) == list(range(part_num))
    assert assigned_actors == actors
    assert actor_ips == ray.get([actor.get_node_ip.remote() for actor in actors])


def test_less_partition_than_actors(orca_sc, add1_actors):
    ray_xshards, _ = get_ray_xshards(num_shards=5)
    part_num = ray_xshards.num_partitions()

    actor_num = 6
    actors = add1_actors[:actor_num]
    parts_list, _, assigned_actors = ray_xshards.assign_partitions_to_actors(actors)

    assert len(parts_list) == len(assigned_actors) == part_num
    for counter in range(len(assigned_actors)):
        assert len(parts_list[counter]) == 1
    assert assigned_actors == actors[:part_num]


def test_transform_shards_with_actors(orca_sc, add1_actors):
    ray_xshards, ndarray_dict = get_ray_xshards(num_shards=5)
    ndarray_dict_mapped = {k: value + 1 for k, value in ndarray_dict.items()}
    num_partitions = ray_xshards.num_partitions()

    for num_actors in (1, 2, num_partitions):   # Orca drew one at random in 1..num_partitions
        actors = add1_actors[:num_actors]
        map_func = lambda actor, part_ref: actor.add_one.remote(part_ref)  # noqa: E731 - Orca's test style
        result_xshards = ray_xshards.transform_shards_with_actors(actors, map_func)
        assert result_xshards.num_partitions() == num_partitions
        assert result_xshards.partition_rows() == ray_xshards.partition_rows()
        verify_collect_results(result_xshards.collect(), ndarray_dict_mapped)
    verify_collect_results(result_xshards.to_spark_xshards().collect(), ndarray_dict_mapped)


# -- backend names and the Orca module path of the Keras Estimator ----------------------------------

def test_from_torch_takes_orcas_backend_names_and_refuses_horovod(orca_sc):
    import torch

    from zoo_lite.learn.pytorch import Estimator, TorchEstimator

    def model_creator(config):
        return torch.nn.Linear(2, 1)

    def optimizer_creator(model, config):
        return torch.optim.SGD(model.parameters(), lr=0.1)

    # every accepted name builds the same Estimator (the worker group starts at the first call)
    for backend in ("torch_distributed", "ray", "spark"):
        est = Estimator.from_torch(model=model_creator, optimizer=optimizer_creator, loss=torch.nn.MSELoss(), backend=backend)
        assert isinstance(est, TorchEstimator)
        est.shutdown()
    with pytest.raises(InvalidArgumentError, match=r"backend='horovod' is not supported: zoo_lite does not provide Horovod.*"
                                                   r"use backend='ray'"):
        Estimator.from_torch(model=model_creator, optimizer=optimizer_creator, loss=torch.nn.MSELoss(), backend="horovod")
    with pytest.raises(InvalidArgumentError, match=r"backend='bigdl' is not supported; use one of \['ray', 'spark', 'tf2', "
                                                   r"'torch_distributed'\]"):
        Estimator.from_torch(model=model_creator, optimizer=optimizer_creator, loss=torch.nn.MSELoss(), backend="bigdl")


def test_the_orca_tf_estimator_path_gives_the_keras_estimator_with_backend_tf2(orca_sc):
    import keras

    from zoo_lite.learn.tf.estimator import Estimator
    from zoo_lite.learn.tf2 import Estimator as Tf2Estimator
    from zoo_lite.learn.tf2 import KerasEstimator

    assert Estimator is Tf2Estimator

    def model_creator(config):
        model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    est = Estimator.from_keras(model_creator=model_creator, backend="tf2")
    try:
        assert isinstance(est, KerasEstimator)
    finally:
        est.shutdown()
    with pytest.raises(InvalidArgumentError, match=r"backend='horovod' is not supported: zoo_lite does not provide Horovod"):
        Estimator.from_keras(model_creator=model_creator, backend="horovod")
