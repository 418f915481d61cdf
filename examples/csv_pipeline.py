"""A CSV pipeline: many CSV files → ``read_csv`` → per-row derived columns → a grouped aggregate.

1. writes ``--files`` CSV files of synthetic taxi trips (pickup hour, distance, duration, fare,
   payment type), generated offline with a fixed seed;
2. reads them as pandas XShards with ``zoo_lite.data.pandas.read_csv`` (one pandas frame per
   partition, read in the Spark executors);
3. adds derived columns with ``transform_shard`` (speed, fare per mile, a night flag), an ordinary
   pandas function run on every partition;
4. aggregates per payment type and night flag: the partial sums of each partition are combined
   on the driver (``group_by`` would shuffle; partial aggregates do not need to);
5. computes the same with plain pandas on one process and checks that they agree.

Run: ``python examples/csv_pipeline.py`` (local Spark), or on a cluster by changing one argument,
e.g. ``--cluster-mode local-cluster``, or under spark-submit:
``scripts/spark-submit --master local[2] examples/csv_pipeline.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from zoo_lite import init_orca_context, stop_orca_context
from zoo_lite.data.pandas import read_csv

SEED = 0
PAYMENTS = np.array(["card", "cash", "app"])
KEYS = ["payment", "night"]


def write_trips(folder: Path, files: int, rows_per_file: int) -> None:
    """``files`` CSV files of synthetic trips."""
    rng = np.random.default_rng(SEED)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for index in range(files):
        distance = rng.gamma(2.0, 1.5, rows_per_file).round(2)
        minutes = (distance * rng.uniform(2.0, 5.0, rows_per_file) + rng.uniform(1, 5, rows_per_file)).round(1)
        pd.DataFrame({
            "hour": rng.integers(0, 24, rows_per_file),
            "distance_miles": distance,
            "minutes": minutes,
            "fare": (2.5 + 2.2 * distance + 0.3 * minutes).round(2),
            "payment": PAYMENTS[rng.integers(0, len(PAYMENTS), rows_per_file)],
        }).to_csv(folder / f"trips-{index:03d}.csv", index=False)


def add_features(trips: pd.DataFrame) -> pd.DataFrame:
    """Per-row derived columns (the same function serves the distributed and the pandas runs)."""
    trips["speed_mph"] = trips["distance_miles"] / (trips["minutes"] / 60.0)
    trips["fare_per_mile"] = trips["fare"] / trips["distance_miles"].clip(lower=0.1)
    trips["night"] = (trips["hour"] >= 22) | (trips["hour"] < 6)
    return trips


def partial_sums(trips: pd.DataFrame) -> pd.DataFrame:
    """Per group: trips, and the sums the means are made of (partials combine by adding)."""
    grouped = trips.groupby(KEYS)
    return pd.DataFrame({"trips": grouped.size(), "fare": grouped["fare"].sum(), "speed_mph": grouped["speed_mph"].sum(),
                         "fare_per_mile": grouped["fare_per_mile"].sum()})


def means(sums: pd.DataFrame) -> pd.DataFrame:
    """The per-group means from combined partial sums."""
    result = sums[["trips"]].copy()
    for column in ("fare", "speed_mph", "fare_per_mile"):
        result[f"mean_{column}"] = sums[column] / sums["trips"]
    return result.sort_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="/tmp/zoo_lite_csv_pipeline", help="folder for the CSV files")
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rows-per-file", type=int, default=5000)
    args = parser.parse_args()
    folder = Path(args.output) / "trips"
    write_trips(folder, args.files, args.rows_per_file)

    init_orca_context(cluster_mode=args.cluster_mode, cores=2)
    try:
        trips = read_csv(str(folder))
        partials = trips.transform_shard(add_features).transform_shard(partial_sums).collect()
        distributed = means(pd.concat(partials).groupby(level=KEYS).sum())
    finally:
        stop_orca_context()

    one_process = means(partial_sums(add_features(pd.concat(pd.read_csv(path) for path in sorted(folder.glob("*.csv"))))))
    pd.testing.assert_frame_equal(distributed, one_process, check_exact=False, rtol=1e-9)
    print(distributed.round(3).to_string())
    print(f"trips aggregated: {int(distributed['trips'].sum())} in {args.files} files; equal to pandas: yes")


if __name__ == "__main__":
    main()
