"""What a user's driver script does, in pieces the multi-host tests run on the driver host (through
:class:`tests.cluster.agent.Agent`) and, for the single-host reference, in a local context.

Each function is ordinary zoo_lite user code. This module exists on every simulated host (the
checkout is shared, as the software image is on a cluster), but it is not importable on the
executors (their working directory is their own), exactly like a user's project: the functions
it hands to zoo_lite must travel by value.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Optional

import numpy as np
import pandas as pd

CITIES = np.array(["Lyon", "Oslo", "Kyiv", "Lima", "Pune"])


# -- contexts -------------------------------------------------------------------------------------

def start_cluster_context(master: str, **kwargs: Any) -> dict[str, Any]:
    """The cluster run: Spark standalone on the simulated hosts, Ray on its executors."""
    from zoo_lite import OrcaContext, init_orca_context

    started = time.monotonic()
    init_orca_context(cluster_mode="standalone", master=master, num_nodes=2, cores=1, memory="1g",
                      init_ray_on_spark=True, **kwargs)
    ray_context = OrcaContext.get_ray_context()
    return {"seconds": time.monotonic() - started, "driver_hostname": socket.gethostname(),
            "ray_hostnames": sorted(node["hostname"] for node in ray_context.nodes),
            "driver_node": ray_context.driver_node}


def start_local_context() -> None:
    """The single-host run of the same jobs: local Spark and local Ray, on the driver host."""
    from zoo_lite import init_orca_context

    init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)


def stop_context() -> None:
    from zoo_lite import stop_orca_context

    stop_orca_context()


def ray_layout() -> dict[str, Any]:
    """Where the Ray nodes run: one per executor, and the driver's zero-CPU node on its own host."""
    from zoo_lite import OrcaContext

    ray_context = OrcaContext.get_ray_context()
    return {"nodes": sorted((node["hostname"], node["num_cpus"]) for node in ray_context.nodes),
            "driver_node": (ray_context.driver_node["hostname"], ray_context.driver_node["num_cpus"])}


def executor_hostnames() -> list[str]:
    """The host names the executors' tasks run on."""
    from zoo_lite import OrcaContext

    sc = OrcaContext.get_spark_context()
    return sorted(set(sc.parallelize(range(8), 8).map(lambda _: socket.gethostname()).collect()))


# -- data -----------------------------------------------------------------------------------------

def write_trips(folder: str, files: int = 6, rows_per_file: int = 300) -> None:
    """``files`` CSV files of trips (a city, a distance, minutes and a fare per row)."""
    rng = np.random.default_rng(7)
    os.makedirs(folder, exist_ok=True)
    for index in range(files):
        distance = rng.gamma(2.0, 1.5, rows_per_file).round(2)
        pd.DataFrame({
            "trip": np.arange(rows_per_file) + index * rows_per_file,
            "city": CITIES[rng.integers(0, len(CITIES), rows_per_file)],
            "distance": distance,
            "minutes": (distance * rng.uniform(2, 5, rows_per_file) + 1).round(1),
        }).to_csv(os.path.join(folder, f"trips-{index}.csv"), index=False)


def add_speed(trips: pd.DataFrame) -> pd.DataFrame:
    """A per-row derived column: the user's own function, shipped to the executors."""
    return trips.assign(speed=trips["distance"] / (trips["minutes"] / 60.0))


def trips_pipeline(folder: str) -> dict[str, Any]:
    """read_csv → transform_shard → partition_by → unique, reductions, to_spark_df; every result
    collected to the driver for the test to compare with pandas."""
    from zoo_lite.data.pandas import read_csv

    trips = read_csv(folder).transform_shard(add_speed)
    by_city = trips.partition_by("city", num_partitions=3)
    frames = by_city.collect()
    df = by_city.to_spark_df()
    return {
        "rows": len(trips),
        "cities_per_partition": [sorted(frame["city"].unique()) for frame in frames],
        "unique_cities": sorted(by_city["city"].unique()),
        "sum_distance": float(by_city["distance"].sum()),
        "max_speed": float(by_city["speed"].max()),
        "min_minutes": float(by_city["minutes"].min()),
        "frame": pd.concat(frames).sort_values("trip").reset_index(drop=True),
        "spark_rows": df.count(),
        "spark_frame": df.toPandas().sort_values("trip").reset_index(drop=True),
        "city_counts": {row["city"]: row["count"] for row in df.groupBy("city").count().collect()},
    }


def read_missing_on_executors(path: str) -> None:
    """Read a path that only the driver host has; the collection's first action must fail."""
    from zoo_lite.data.pandas import read_csv

    read_csv(path).collect()


def read_driver_only_with(path: str, backend: str) -> None:
    from zoo_lite.data.pandas import read_csv

    read_csv(path, backend=backend).collect()


def through_ray(folder: str) -> dict[str, Any]:
    """SparkXShards → RayXShards (partitions put from the executors, on their hosts' Ray nodes) → back."""
    from zoo_lite.data.pandas import read_csv

    shards = read_csv(folder).repartition(4)
    in_ray = shards.to_ray()
    back = in_ray.to_spark_xshards()
    result = {"partition_rows": in_ray.partition_rows(), "partition_nodes": in_ray.partition_nodes(),
              "frame": pd.concat(back.collect()).sort_values("trip").reset_index(drop=True)}
    in_ray.release()
    return result


def save_and_load_pickle(shards_path: str) -> list[int]:
    from zoo_lite.data import XShards

    XShards.partition({"x": np.arange(10)}, num_shards=2).save_pickle(shards_path)
    return sorted(int(v) for shard in XShards.load_pickle(shards_path).collect() for v in shard["x"])


def images(folder: str, size: tuple[int, int]) -> dict[str, Any]:
    from zoo_lite.data.image import read_images

    shards = read_images(folder, size=size)
    arrays = shards.collect()
    return {"classes": shards.classes, "x": np.concatenate([a["x"] for a in arrays]),
            "y": np.concatenate([a["y"] for a in arrays])}


def transform_with_module_of(folder: str, module_name: str) -> list[int]:
    """A function from the user's own module, which only the driver host has, applied per shard."""
    import importlib
    import sys

    from zoo_lite.data import XShards

    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module(module_name)
    shards = XShards.partition({"x": np.arange(8)}, num_shards=4)
    return [int(v) for shard in shards.transform_shard(module.scaled).collect() for v in shard["x"]]


def write_images(folder: str, per_class: int = 3) -> None:
    """PNG files in one folder per class, with pixels from a fixed seed."""
    from PIL import Image

    rng = np.random.default_rng(3)
    for label in ("cat", "dog"):
        os.makedirs(os.path.join(folder, label), exist_ok=True)
        for index in range(per_class):
            pixels = rng.integers(0, 256, (10 + index, 12, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, label, f"{index}.png"))


def images_to_parquet_and_back(folder: str, table: str, size: tuple[int, int]) -> dict[str, Any]:
    """write_parquet of an image folder, read back as shards."""
    from zoo_lite.data.image import read_parquet, write_parquet

    write_parquet("image", table, folder)
    shards = read_parquet("image", table, size=size)
    arrays = shards.collect()
    return {"classes": shards.classes, "x": np.concatenate([a["x"] for a in arrays]),
            "y": np.concatenate([a["y"] for a in arrays])}


# -- training ---------------------------------------------------------------------------------------

def _digits(rows: int = 1200) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.data[:rows] / 16.0).astype(np.float32), digits.target[:rows].astype(np.int64)


def digits_frame() -> "Any":
    """The digits as a Spark DataFrame of four partitions (features as an array column), its rows
    in the same partitions and order on every cluster (a shuffle's order depends on placement)."""
    from zoo_lite.data import XShards

    x, y = _digits()
    frame = pd.DataFrame({"id": np.arange(len(y)), "features": list(x.astype(np.float64)), "label": y})
    return XShards.partition(frame, num_shards=4).to_spark_df()


def torch_weights(est: Any) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in est.get_model().parameters()]


def keras_weights(est: Any) -> list[np.ndarray]:
    return [w.copy() for w in est.get_model().get_weights()]


def _fit_results(est: Any, history: Any, df: Any, weights_of: Any, **evaluate_options: Any) -> dict[str, Any]:
    """What a fit gave: its history, where its workers ran, evaluation, weights, predictions in row order."""
    return {
        "history": history,
        "worker_hosts": est._group.call(lambda runner: socket.gethostname()),
        "exchange": est._group.call(lambda runner: runner.exchange_kind()),
        "evaluation": est.evaluate(df, batch_size=128, feature_cols=["features"], label_cols=["label"], **evaluate_options),
        "weights": weights_of(est),
        "predictions": np.stack(est.predict(df, feature_cols=["features"]).orderBy("id").toPandas()["prediction"]),
    }


def _saved_and_loaded(est: Any, path: str, fresh: Any) -> Any:
    """``est`` saved to ``path`` on the driver's host, and loaded into ``fresh``."""
    saved = est.save(path)
    est.shutdown()
    fresh.load(saved)
    return fresh


def digits_torch_mlp(config: dict) -> "Any":
    import torch
    from torch import nn

    torch.manual_seed(config["seed"])
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def torch_adam(model: "Any", config: dict) -> "Any":
    import torch

    return torch.optim.Adam(model.parameters(), lr=0.01)


def torch_job(files: str, epochs: int = 2, with_files: bool = True) -> dict[str, Any]:
    """fit (with model_dir checkpoints and TensorBoard event files under ``files``, a folder of the
    driver's host), evaluate, predict, save and load, and a UDF in SQL; only fit, evaluate and
    predict when not ``with_files``."""
    from torch import nn

    from zoo_lite import OrcaContext
    from zoo_lite.learn.pytorch import Estimator
    from zoo_lite.learn.pytorch.callbacks import TensorBoard

    df = digits_frame()
    est = Estimator.from_torch(model=digits_torch_mlp, optimizer=torch_adam, loss=nn.CrossEntropyLoss(), seed=5,
                               config={"seed": 5}, model_dir=os.path.join(files, "checkpoints") if with_files else None)
    history = est.fit(df, epochs=epochs, batch_size=64, feature_cols=["features"], label_cols=["label"],
                      callbacks=[TensorBoard(os.path.join(files, "tensorboard"))] if with_files else None)
    result = _fit_results(est, history, df, torch_weights)
    if not with_files:
        est.shutdown()
        return result
    fresh = Estimator.from_torch(model=digits_torch_mlp, optimizer=torch_adam, loss=nn.CrossEntropyLoss(), config={"seed": 0})
    loaded = _saved_and_loaded(est, os.path.join(files, "model.pt"), fresh)
    result["loaded_weights"] = torch_weights(loaded)
    spark = OrcaContext.get_spark_session()
    spark.udf.register("digit_logits", loaded.spark_udf(input_shapes=[(64,)]))
    df.createOrReplaceTempView("digits")
    scored = spark.sql("SELECT id, digit_logits(features) AS logits FROM digits ORDER BY id").toPandas()
    result["sql_logits"] = np.stack(scored["logits"])
    return result


def small_torch_fit(seed: int = 1, epochs: int = 1, backend: str = "ray") -> list[np.ndarray]:
    """A short fit on numpy shards: the weights."""
    est, shards = _small_torch_estimator(seed, backend=backend)
    est.fit(shards, epochs=epochs, batch_size=50, feature_cols=["x"], label_cols=["y"])
    weights = torch_weights(est)
    est.shutdown()
    return weights


def _small_torch_estimator(seed: int, worker_heartbeat_timeout_s: float = 30.0, backend: str = "ray") -> tuple[Any, Any]:
    from torch import nn

    from zoo_lite.data import XShards
    from zoo_lite.learn import WorkerConfig
    from zoo_lite.learn.pytorch import Estimator

    x, y = _digits(400)
    est = Estimator.from_torch(model=digits_torch_mlp, optimizer=torch_adam, loss=nn.CrossEntropyLoss(), seed=seed,
                               config={"seed": seed}, backend=backend, num_workers=2 if backend == "spark" else None,
                               worker_config=WorkerConfig(heartbeat_timeout_s=worker_heartbeat_timeout_s))
    return est, XShards.partition({"x": x, "y": y}, num_shards=4)


def _ray_nodes() -> list[tuple[str, str]]:
    from zoo_lite import OrcaContext

    return sorted((node["hostname"], node["node_name"]) for node in OrcaContext.get_ray_context().nodes)


def small_torch_fit_through_a_pause(marker: str, epochs: int, seed: int = 1, regrow_timeout_s: float = 180.0,
                                    worker_heartbeat_timeout_s: float = 30.0, until: Optional[str] = None) -> dict[str, Any]:
    """:func:`small_torch_fit`, whose rank 0 pauses at ``marker`` in the second epoch (the test
    kills a host's processes meanwhile) for 120 s or until the file ``until`` exists; then waits,
    bounded, for Ray on Spark to be back to its nodes. Its weights and history, the Ray nodes
    before, after the fit and at the end, and the training actors alive after ``shutdown()``."""
    from tests.learn.faults import TorchPause
    from zoo_lite import OrcaContext

    ray_context = OrcaContext.get_ray_context()
    before = _ray_nodes()
    est, shards = _small_torch_estimator(seed, worker_heartbeat_timeout_s)
    started = time.monotonic()
    history = est.fit(shards, epochs=epochs, batch_size=50, feature_cols=["x"], label_cols=["y"],
                      callbacks=[TorchPause(marker, rank=0, epochs_done=1, step=1, until=until)])
    fit_s = time.monotonic() - started
    after_fit = _ray_nodes()
    weights = torch_weights(est)
    est.shutdown()
    return {"weights": weights, "epochs": [entry["epoch"] for entry in history], "fit_s": fit_s,
            "same_ray": OrcaContext.get_ray_context() is ray_context, "nodes_before": before,
            "nodes_after_fit": after_fit, "training_actors_left": _training_actors_alive(),
            "nodes_at_end": ray_nodes_once_back_to(len(before), regrow_timeout_s)}


def _training_actors_alive(settle_s: float = 15.0) -> int:
    """zoo_lite's training actors alive in Ray, once ``ray.kill``'s asynchronous ends are through
    (at most ``settle_s``)."""
    from ray._private.state import actors

    deadline = time.monotonic() + settle_s
    while True:
        alive = sum(1 for actor in actors(actor_state_name="ALIVE").values() if actor["ActorClassName"] == "_WorkerActor")
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def ray_nodes_once_back_to(count: int, timeout_s: float) -> list[tuple[str, str]]:
    """Ray on Spark's nodes (hostname, node name) once it has ``count`` again (nodes are added on
    executors Spark gives back whenever zoo_lite asks for Ray), or when ``timeout_s`` ran out."""
    from zoo_lite.context import ray_context_started_on_demand

    deadline = time.monotonic() + timeout_s
    while len(ray_context_started_on_demand(add_missing_nodes=True).nodes) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    return _ray_nodes()


def to_ray_while_an_executor_joins(started: str, joined: str, timeout_s: float) -> dict[str, Any]:
    """Put XShards of two partitions into Ray once host2's executor is lost (the test killed it and
    holds its Spark worker back, so no executor comes back before the job). The first partition's
    task, on host1's one core, writes ``started`` and holds while the job's stage is active (up to
    120 s), so the other task can only go to the executor Spark registers on host2 again
    (``joined``), a host with no Ray node: there it fails each attempt, and Spark gives the job up.
    The values read back from Ray, and the hosts of the Ray nodes and of Spark's executors."""
    import threading

    from zoo_lite import OrcaContext
    from zoo_lite.context import ray_context_started_on_demand
    from zoo_lite.data import XShards
    from zoo_lite.spark_settings import registered_executor_hosts

    spark = OrcaContext.get_spark_session()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout_s
    while (len(registered_executor_hosts(spark)) != 1 or len(ray_context_started_on_demand().nodes) != 1) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    hosts_before = registered_executor_hosts(spark)
    stage_ended = joined + ".stage-ended"

    def note_the_new_executor_and_the_stage_end() -> None:
        while len(registered_executor_hosts(spark)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        open(joined, "w").close()
        while not tracker.getActiveStageIds() and time.monotonic() < deadline:   # the first task started it
            time.sleep(0.1)
        while tracker.getActiveStageIds() and time.monotonic() < deadline:
            time.sleep(0.1)
        open(stage_ended, "w").close()

    def hold(shard: np.ndarray) -> np.ndarray:
        if not os.path.exists(started):
            open(started, "w").close()
            stop_at = time.monotonic() + 120
            while not os.path.exists(stage_ended) and time.monotonic() < stop_at:
                time.sleep(0.1)
        return shard

    watcher = threading.Thread(target=note_the_new_executor_and_the_stage_end, daemon=True)
    watcher.start()
    eager, OrcaContext._eager_mode = OrcaContext._eager_mode, False   # computed by to_ray's own job, not cached before
    try:
        in_ray = XShards.partition(np.arange(20), num_shards=2).transform_shard(hold).to_ray()
    finally:
        OrcaContext._eager_mode = eager
    values = np.concatenate(in_ray.collect()).tolist()
    in_ray.release()
    watcher.join(timeout=5)
    os.unlink(stage_ended)
    return {"values": values, "ray_hosts": sorted(node["hostname"] for node in OrcaContext.get_ray_context().nodes),
            "spark_hosts_before": hosts_before, "spark_hosts_after": registered_executor_hosts(spark)}


def digits_keras_mlp(config: dict) -> "Any":
    import keras

    keras.utils.set_random_seed(config["seed"])
    model = keras.Sequential([keras.Input(shape=(64,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def keras_job(files: str, epochs: int = 2, with_files: bool = True) -> dict[str, Any]:
    """fit with model_dir, TensorBoard and CSVLogger files under ``files`` (the driver's host),
    evaluate, predict, save and load; only fit, evaluate and predict when not ``with_files``."""
    import keras

    from zoo_lite.learn.tf2 import Estimator

    df = digits_frame()
    est = Estimator.from_keras(model_creator=digits_keras_mlp, config={"seed": 5}, seed=5,
                               model_dir=os.path.join(files, "checkpoints") if with_files else None)
    callbacks = [keras.callbacks.TensorBoard(os.path.join(files, "tensorboard")),
                 keras.callbacks.CSVLogger(os.path.join(files, "log.csv"))] if with_files else None
    history = est.fit(df, epochs=epochs, batch_size=64, feature_cols=["features"], label_cols=["label"],
                      callbacks=callbacks, verbose=0)
    result = _fit_results(est, history, df, keras_weights, verbose=0)
    if not with_files:
        est.shutdown()
        return result
    loaded = _saved_and_loaded(est, os.path.join(files, "model.keras"),
                               Estimator.from_keras(model_creator=digits_keras_mlp, config={"seed": 0}))
    result["loaded_weights"] = keras_weights(loaded)
    return result


def stream_scores(model_path: str, folder: str) -> dict[str, Any]:
    """A saved model as a UDF over a stream of parquet files in ``folder`` (every host sees it)."""
    from zoo_lite import OrcaContext
    from zoo_lite.learn import spark_udf

    spark = OrcaContext.get_spark_session()
    frame = digits_frame().toPandas()
    source = os.path.join(folder, "in")
    for index, part in enumerate(np.array_split(frame, 3)):
        spark.createDataFrame(part).write.mode("overwrite").parquet(os.path.join(source, f"part-{index}"))
    schema = spark.read.parquet(os.path.join(source, "part-0")).schema
    predict = spark_udf(model_path, input_shapes=[(64,)])
    stream = spark.readStream.schema(schema).parquet(os.path.join(source, "*"))
    query = (stream.select("id", predict("features").alias("logits")).writeStream.format("memory").queryName("scored")
             .option("checkpointLocation", os.path.join(folder, "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(240)
    scored = spark.sql("SELECT * FROM scored ORDER BY id").toPandas()
    return {"ids": scored["id"].tolist(), "logits": np.stack(scored["logits"])}
