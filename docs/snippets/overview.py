"""The picture of use on the home page (docs/index.md): pandas code over a folder of CSV files,
run by Spark, and the result written as Parquet by the executors."""

import tempfile
from pathlib import Path

import pandas as pd

data = Path(tempfile.mkdtemp(prefix="zoo_lite-overview-"))
(data / "sales").mkdir()
sales = pd.DataFrame({"city": ["paris", "lyon", "nice", "lyon", "paris", "brest"] * 4,
                      "price": [2.5, 4.0, 1.0, 3.0, 2.0, 5.0] * 4, "qty": [1, 2, 3, 4, 5, 6] * 4})
for index in range(3):
    sales.iloc[index * 8:(index + 1) * 8].to_csv(data / "sales" / f"sales-{index}.csv", index=False)

# --8<-- [start:picture]
from zoo_lite import init_orca_context
from zoo_lite.data.pandas import read_csv

init_orca_context(cluster_mode="local", cores=2)  # the one line that changes on a cluster
shards = read_csv(f"{data}/sales/*.csv")  # one pandas DataFrame per partition
shards = shards.transform_shard(lambda df: df.assign(total=df.price * df.qty))
by_city = shards.partition_by("city", num_partitions=2)  # equal keys end up in one shard
by_city.to_spark_df().write.parquet(f"{data}/totals.parquet")  # by the executors
# --8<-- [end:picture]

written = pd.read_parquet(data / "totals.parquet")
assert len(written) == len(sales)
assert sorted(written["total"]) == sorted(sales["price"] * sales["qty"])
assert sorted(by_city["city"].unique()) == ["brest", "lyon", "nice", "paris"]
