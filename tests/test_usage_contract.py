"""The documented calls of USAGE_CONTRACT.md that this version covers, run as written
(``zoo.orca`` replaced by ``zoo_lite``). The XShards.partition snippet is in tests/data/test_shard.py."""

from __future__ import annotations

import pandas as pd


def test_data_parallel_pandas_snippet_runs_unchanged(sc, tmp_path):
    frame = pd.DataFrame({"location": ["paris", "lyon", "nice", "lyon", "paris", "brest"] * 5, "value": range(30)})
    for index in range(3):
        frame.iloc[index * 10:(index + 1) * 10].to_csv(tmp_path / f"part-{index}.csv", index=False)

    # --- documented usage, unchanged ---
    from zoo_lite.data.pandas import read_csv
    shard = read_csv(str(tmp_path))

    def negative(df, column_name):
        df[column_name] = df[column_name] * (-1)
        return df

    train_shards = shard.transform_shard(negative, 'value')
    shard.partition_by(cols="location", num_partitions=4)
    location_list = shard["location"].unique()
    # --- end of documented usage ---

    assert sorted(location_list) == ["brest", "lyon", "nice", "paris"]
    assert sorted(train_shards.concat_to_pdf()["value"]) == sorted(-frame["value"])
    partitioned = shard.partition_by(cols="location", num_partitions=4)
    assert partitioned.num_partitions() == 4
    homes = {location: [i for i, part in enumerate(partitioned.collect()) if location in set(part["location"])] for location in location_list}
    assert all(len(found) == 1 for found in homes.values())
