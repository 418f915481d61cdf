"""Data-parallel pandas and NumPy with XShards, as docs/guides/xshards.md shows it: readers,
transform_shard, partition_by, reductions, group_by, to and from Spark DataFrames, and Ray."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from zoo_lite import OrcaContext, init_orca_context

# three CSV files of trips, as an upstream job would leave them
workdir = Path(tempfile.mkdtemp(prefix="zoo_lite-xshards-"))
(workdir / "trips").mkdir()
trips = pd.DataFrame({"city": ["paris", "lyon", "nice", "lyon", "paris", "brest"] * 10,
                      "km": np.arange(60, dtype=float) % 17,
                      "fare": np.arange(60, dtype=float) % 23 + 5})
for index in range(3):
    part = trips.iloc[index * 20:(index + 1) * 20]
    part.to_csv(workdir / "trips" / f"trips-{index}.csv", index=False)

# --8<-- [start:read]
from zoo_lite import init_orca_context
from zoo_lite.data.pandas import read_csv

init_orca_context(cluster_mode="local", cores=2)
shards = read_csv(f"{workdir}/trips/*.csv")  # a file, a folder, a glob or a list
print(shards.num_partitions(), len(shards))  # partitions; rows in all
print(shards.get_schema())  # the columns and their dtypes
# --8<-- [end:read]
assert len(shards) == 60

# --8<-- [start:transform]
def add_price_per_km(df, minimum_km):
    df = df[df["km"] >= minimum_km].copy()
    df["per_km"] = df["fare"] / df["km"]
    return df


priced = shards.transform_shard(add_price_per_km, 1.0)  # lazy: runs at the next action
priced = priced.cache()  # kept in memory once computed, for reuse
print(priced.head(3))  # the first rows, as one pandas frame
# --8<-- [end:transform]
assert len(priced) == len(trips[trips["km"] >= 1.0])

# --8<-- [start:partition_by]
by_city = priced.partition_by("city", num_partitions=2)  # a city's rows in one shard
for shard in by_city.collect():
    print(sorted(shard["city"].unique()))
# --8<-- [end:partition_by]
homes = [set(shard["city"]) for shard in by_city.collect()]
assert all(sum(city in home for home in homes) == 1 for city in trips["city"].unique())

# --8<-- [start:reductions]
print(priced["city"].unique())  # distinct values, in order of first appearance
print(priced["fare"].max(), priced["per_km"].mean(), priced["city"].nunique())
print(priced.max())  # on DataFrame shards: a Series by column
per_city = priced.group_by("city", {"fare": "sum", "km": "mean"}).concat_to_pdf()
# --8<-- [end:reductions]
expected = trips[trips["km"] >= 1.0]
assert float(priced["fare"].max()) == expected["fare"].max()
assert (per_city.set_index("city")["fare"].sort_index().tolist()
        == expected.groupby("city")["fare"].sum().sort_index().tolist())

# --8<-- [start:numpy]
from zoo_lite.data import XShards

data = {"x": np.random.rand(1000, 8), "y": np.arange(1000) % 2}
arrays = XShards.partition(data, num_shards=4)  # cut along the first axis
scaled = arrays.transform_shard(lambda shard: {"x": shard["x"] * 2.0, "y": shard["y"]})
print(len(scaled), scaled.get_schema())  # rows; leaf dtypes and shapes
# --8<-- [end:numpy]
assert len(scaled) == 1000 and scaled.num_partitions() == 4

# --8<-- [start:spark]
df = by_city.to_spark_df()  # built on the executors, through Arrow
df.groupBy("city").count().show()
df.write.mode("overwrite").parquet(f"{workdir}/trips.parquet")

from zoo_lite.data import SparkXShards

spark = OrcaContext.get_spark_session()
table = spark.read.parquet(f"{workdir}/trips.parquet")
back = SparkXShards.from_spark_df(table)  # one pandas shard per partition
# --8<-- [end:spark]
assert df.count() == len(expected) and len(back) == len(expected)

# --8<-- [start:ray]
import ray

# each partition goes into Ray from the executor that holds it
in_ray = arrays.to_ray()
print(in_ray.partition_rows())


@ray.remote(num_cpus=0)
class Summer:
    def total(self, shards):
        return np.array([sum(int(shard["y"].sum()) for shard in shards)])


actors = [Summer.remote(), Summer.remote()]
# equal rows for each actor, local partitions first; one result partition per actor
totals = in_ray.transform_rows_with_actors(actors, lambda actor, rows: actor.total(rows))
print([int(total[0]) for total in totals.collect()])
in_ray.release()  # frees the objects
# --8<-- [end:ray]
assert sum(int(total[0]) for total in totals.collect()) == 500
totals.release()
for actor in actors:
    ray.kill(actor)
priced.uncache()
