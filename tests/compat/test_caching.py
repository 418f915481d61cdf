"""Caching as Orca documents it: ``cache()``, ``uncache()``, ``is_cached()`` and
``OrcaContext._eager_mode`` (off by default in zoo_lite, which stays lazy like Spark).

Each test counts the calls of the user's function with a Spark accumulator, so "computed now"
and "computed again" are observed, not assumed."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.errors import InvalidArgumentError, ShardFunctionError

pytestmark = pytest.mark.usefixtures("sc")


@pytest.fixture
def eager() -> Iterator[None]:
    OrcaContext._eager_mode = True
    try:
        yield
    finally:
        OrcaContext._eager_mode = False


def counted(sc, func):
    """``func`` and an accumulator of how many shards it has been called on."""
    calls = sc.accumulator(0)

    def wrapped(shard):
        calls.add(1)
        return func(shard)

    return wrapped, calls


def frames() -> XShards:
    return XShards.partition(pd.DataFrame({"k": [1, 2, 1, 3], "v": [1.0, 2.0, 3.0, 4.0]}), num_shards=2)


def test_zoo_lite_is_lazy_by_default(sc):
    double, calls = counted(sc, lambda df: df.assign(v=df.v * 2))
    shards = frames()
    doubled = shards.transform_shard(double)
    assert not shards.is_cached() and not doubled.is_cached()
    assert calls.value == 0  # nothing computed yet
    assert doubled.concat_to_pdf()["v"].tolist() == [2.0, 4.0, 6.0, 8.0]
    doubled.collect()
    assert calls.value == 4  # not cached: each action computes again


def test_cache_keeps_computed_shards_until_uncache(sc):
    double, calls = counted(sc, lambda df: df.assign(v=df.v * 2))
    doubled = frames().transform_shard(double).cache()
    assert doubled.is_cached()
    doubled.collect()
    doubled.collect()
    assert calls.value == 2
    assert doubled.uncache().is_cached() is False
    doubled.collect()
    assert calls.value == 4


def test_eager_mode_computes_and_caches_at_creation(sc, eager):
    double, calls = counted(sc, lambda df: df.assign(v=df.v * 2))
    shards = frames()
    assert shards.is_cached()
    doubled = shards.transform_shard(double)
    assert calls.value == 2 and doubled.is_cached()  # computed by transform_shard itself
    doubled.collect()
    assert len(doubled) == 4
    assert calls.value == 2  # later actions reuse the cache
    # Orca's rule: the parent's eager cache is dropped once a collection is made from it
    assert not shards.is_cached()


def test_eager_mode_keeps_what_the_user_cached(sc, eager):
    shards = frames().cache()
    shards.transform_shard(lambda df: df)
    assert shards.is_cached()
    parent = frames()
    column = parent["v"]  # a view: computed lazily, and the parent keeps its cache
    assert parent.is_cached() and not column.is_cached()
    assert sorted(np.concatenate([s.to_numpy() for s in column.collect()]).tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_eager_mode_raises_the_users_error_at_the_call(sc, eager):
    def broken(df):
        raise KeyError("no such column")

    with pytest.raises(ShardFunctionError, match="broken"):
        frames().transform_shard(broken)


def test_eager_mode_split_and_zip_give_cached_collections(sc, eager):
    pairs = XShards.partition((np.arange(4), np.arange(4) * 10), num_shards=2)
    features, labels = pairs.split()
    assert features.is_cached() and labels.is_cached() and not pairs.is_cached()
    zipped = features.zip(labels)
    assert zipped.is_cached() and not features.is_cached() and not labels.is_cached()
    assert [pair[1].tolist() for pair in zipped.collect()] == [[0, 10], [20, 30]]


def test_eager_mode_repartition_and_partition_by(sc, eager):
    shards = frames()
    by_key = shards.partition_by("k", num_partitions=3)
    assert by_key.is_cached() and not shards.is_cached()
    one = by_key.repartition(1)
    assert one.is_cached() and not by_key.is_cached()
    assert sorted(one.concat_to_pdf()["v"].tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_eager_mode_takes_only_a_bool():
    with pytest.raises(InvalidArgumentError, match=r"OrcaContext._eager_mode=1 must be True or False"):
        OrcaContext._eager_mode = 1
    assert OrcaContext._eager_mode is False
