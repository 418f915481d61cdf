"""zoo_lite quickstart: distributed pandas preprocessing on Spark, offline.

1. writes a few CSV files built from scikit-learn's wine data set (178 wines, 3 cultivars);
2. reads them back with ``read_csv`` as pandas XShards;
3. adds derived columns with ``transform_shard``, partitions by cultivar, finds the unique
   cultivars and aggregates per cultivar;
4. prints a readable summary.

Run it with ``scripts/demo.sh`` (local Spark), or on a cluster by changing one argument:
``python examples/quickstart.py --cluster-mode local-cluster`` or, under spark-submit,
``spark-submit examples/quickstart.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from zoo_lite import init_orca_context, stop_orca_context
from zoo_lite.data.pandas import read_csv

CULTIVARS = np.array(["barolo", "grignolino", "barbera"])


def write_wine_csvs(folder: Path, num_files: int) -> int:
    """Write the wine data as ``num_files`` CSV files; return the number of rows written."""
    from sklearn.datasets import load_wine

    wine = load_wine(as_frame=True)
    frame = wine.frame.rename(columns={"od280/od315_of_diluted_wines": "od280_od315"})
    frame.insert(0, "cultivar", CULTIVARS[frame.pop("target").to_numpy()])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    bounds = np.linspace(0, len(frame), num_files + 1).astype(int)
    for index in range(num_files):
        frame.iloc[bounds[index]:bounds[index + 1]].to_csv(folder / f"wine-{index:02d}.csv", index=False)
    return len(frame)


def add_features(df: pd.DataFrame, strong_alcohol: float) -> pd.DataFrame:
    """Two derived columns: a phenol ratio and whether the wine is strong."""
    df["phenol_ratio"] = df["flavanoids"] / df["total_phenols"]
    df["strong"] = df["alcohol"] >= strong_alcohol
    return df


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone, spark-submit, ...")
    parser.add_argument("--cores", type=int, default=None)
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "_output")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    sc = init_orca_context(cluster_mode=args.cluster_mode, cores=args.cores, num_nodes=args.num_nodes)
    try:
        csv_folder = args.output / "wine_csv"
        rows_written = write_wine_csvs(csv_folder, args.files)

        shards = read_csv(str(csv_folder))
        shards = shards.transform_shard(add_features, 13.0)
        by_cultivar = shards.partition_by(cols="cultivar", num_partitions=3).cache()
        cultivars = sorted(by_cultivar["cultivar"].unique())
        summary = by_cultivar.group_by("cultivar", {"alcohol": "mean", "phenol_ratio": "mean", "strong": "sum"}).concat_to_pdf()
        rows_in_spark = by_cultivar.to_spark_df().count()

        print("zoo_lite quickstart")
        print(f"  Spark master          : {sc.master}")
        print(f"  CSV files read        : {args.files} ({rows_written} rows written)")
        print(f"  rows after transform  : {len(by_cultivar)} in {by_cultivar.num_partitions()} shards")
        print(f"  rows per shard        : {[len(shard) for shard in by_cultivar.collect()]}")
        print(f"  unique cultivars      : {cultivars}")
        print(f"  rows in Spark DataFrame: {rows_in_spark}")
        print("  per cultivar:")
        print(summary.sort_values("cultivar").round(3).to_string(index=False).replace("\n", "\n    ").join(["    ", ""]))
        print(f"  took {time.perf_counter() - started:.1f} s")
        if rows_in_spark != rows_written or len(cultivars) != len(CULTIVARS):
            raise SystemExit("quickstart: rows or cultivars were lost on the way")
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
