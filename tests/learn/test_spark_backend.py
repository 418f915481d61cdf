"""backend="spark": both Estimators train in the tasks of a Spark barrier stage, with no Ray, on
real Spark (local-cluster, two executor JVMs): the same weights as the Ray backend, every input
kind, a task killed or stopped mid-fit, too few task slots, and nothing left running after."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pandas as pd
import psutil
import pytest
import torch

from zoo_lite import OrcaContext
from zoo_lite.data import XShards
from zoo_lite.errors import InvalidArgumentError, WorkerError
from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.pytorch import Estimator as TorchEstimators
from zoo_lite.learn.tf2 import Estimator as KerasEstimators
from tests.conftest import SESSION_MARK
from tests.learn import keras_models, models
from tests.learn.faults import TorchKiller
from tests.learn.shards import shards_with_sizes


@pytest.fixture(scope="module")
def cluster(local_cluster):
    """Two executors and no Ray (the module's first tests check that none starts)."""
    return OrcaContext.get_spark_context()


def _commands_of_this_session() -> list[str]:
    """The command lines of the processes this test session started (another session's are not ours)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(SESSION_MARK) == os.environ[SESSION_MARK]:
                found.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return found


def _ray_processes() -> list[str]:
    return [command[:120] for command in _commands_of_this_session() if "raylet" in command or "gcs_server" in command]


def _no_spark_job_left(sc) -> bool:
    return not sc.statusTracker().getActiveJobsIds()


def _classes(rows: int = 300, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    return {"x": x, "y": (x @ np.arange(4) > 0).astype(np.int64)}


def _mlp(config: dict) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _sgd(model: torch.nn.Module, config: dict) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)


def _cross_entropy_refusing_ray(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The loss, run by every worker at every step: it fails the fit if Ray was imported there."""
    if "ray" in sys.modules:
        raise RuntimeError("ray was imported in a backend='spark' worker")
    return torch.nn.functional.cross_entropy(output, target)


def _torch(backend: str, loss=torch.nn.CrossEntropyLoss(), **options):
    return TorchEstimators.from_torch(model=_mlp, optimizer=_sgd, loss=loss, backend=backend, num_workers=2, seed=1,
                                      **options)


def _weights(est) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in est.get_model().parameters()]


def test_a_torch_fit_runs_in_spark_tasks_without_ray_and_gives_the_ray_backends_weights(cluster):
    shards = shards_with_sizes(_classes(), [170, 30, 100])   # uneven partitions: rows are cut across them
    est = _torch("spark", loss=_cross_entropy_refusing_ray)
    history = est.fit(shards, epochs=3, batch_size=32, validation_data=shards)
    assert not _ray_processes(), _ray_processes()
    assert "ray" not in sys.modules or not __import__("ray").is_initialized()
    assert _no_spark_job_left(cluster), "the fit's barrier stage is still running"
    evaluated = est.evaluate(shards, batch_size=32)
    spark_weights = _weights(est)
    # the two tasks share this host: their gradients are summed in shared memory, as Ray workers' are
    assert est._call(lambda runner: runner.exchange_kind()) == ["shared_memory", "shared_memory"]
    est.shutdown()
    assert _no_spark_job_left(cluster), "shutdown() left the stage running"

    on_ray = _torch("ray")
    ray_history = on_ray.fit(shards, epochs=3, batch_size=32, validation_data=shards)
    for mine, theirs in zip(spark_weights, _weights(on_ray)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    assert [h["num_samples"] for h in history] == [300] * 3
    for mine, theirs in zip(history, ray_history):
        assert mine["train_loss"] == pytest.approx(theirs["train_loss"], abs=1e-6)
        assert mine["val_loss"] == pytest.approx(theirs["val_loss"], abs=1e-6)
    assert evaluated["val_loss"] == pytest.approx(history[-1]["val_loss"], abs=1e-6)
    on_ray.shutdown()


def test_a_keras_fit_on_a_dataframe_in_spark_tasks_gives_the_ray_backends_weights(cluster):
    rows = _classes(240, seed=3)
    frame = pd.DataFrame({"features": list(rows["x"]), "label": rows["y"]})
    # a deterministic frame (a repartition's rows would come in another order each time it is computed)
    df = OrcaContext.get_spark_session().createDataFrame(frame)

    def fitted(backend: str):
        est = KerasEstimators.from_keras(model_creator=_keras_classifier, backend=backend, num_workers=2, seed=1)
        history = est.fit(df, epochs=2, batch_size=24, feature_cols=["features"], label_cols=["label"], verbose=0,
                          validation_data=df)
        return est, history

    on_spark, history = fitted("spark")
    assert _no_spark_job_left(cluster)
    on_ray, ray_history = fitted("ray")
    for mine, theirs in zip(on_spark.get_model().get_weights(), on_ray.get_model().get_weights()):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    assert history["loss"] == pytest.approx(ray_history["loss"], abs=1e-6)
    assert history["val_accuracy"] == pytest.approx(ray_history["val_accuracy"], abs=1e-6)
    predicted = on_spark.predict(df, feature_cols=["features"]).toPandas()
    assert len(predicted) == 240
    on_ray.shutdown()


def _keras_classifier(config: dict):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def test_creator_inputs_train_on_the_spark_backend_as_on_ray(cluster):
    est = TorchEstimators.from_torch(model=lambda config: torch.nn.Linear(2, 1), optimizer=models.sgd_creator,
                                     loss=torch.nn.MSELoss(), backend="spark", num_workers=2, seed=0)
    history = est.fit(models.loader_creator, epochs=20, batch_size=16)
    assert history[-1]["train_loss"] < 0.05 * history[0]["train_loss"]
    assert est.evaluate(models.loader_creator, batch_size=16)["val_loss"] < 0.05

    keras_est = KerasEstimators.from_keras(model_creator=keras_models.linear_model, backend="spark", num_workers=2, seed=0)
    keras_history = keras_est.fit(keras_models.dataset_creator, epochs=10, batch_size=16, verbose=0,
                                  validation_data=keras_models.dataset_creator)
    assert keras_history["val_loss"][-1] < 0.1 * keras_history["val_loss"][0]
    # a framework input and rows in one fit: the rows are bound, the creator sent to the stage
    x, y = keras_models.regression_rows(48)
    rows = XShards.partition({"x": x, "y": y}, num_shards=2)
    mixed = keras_est.fit(keras_models.dataset_creator, epochs=1, batch_size=16, verbose=0, validation_data=rows)
    assert mixed["val_loss"][-1] < keras_history["val_loss"][0]
    assert _no_spark_job_left(cluster)


def test_framework_objects_train_on_the_spark_backend_to_the_ray_backends_weights(cluster):
    """A DataLoader and a tf.data.Dataset object (not creators): shipped to the tasks, each worker
    takes its share of every global batch, as on Ray."""
    import tensorflow as tf

    loader = torch.utils.data.DataLoader(models.regression_dataset(), batch_size=16)
    x, y = keras_models.regression_rows()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    got = {}
    for backend in ("spark", "ray"):
        est = TorchEstimators.from_torch(model=lambda config: torch.nn.Linear(2, 1), optimizer=models.sgd_creator,
                                         loss=torch.nn.MSELoss(), backend=backend, num_workers=2, seed=0)
        est.fit(loader, epochs=2, batch_size=16)
        keras_est = KerasEstimators.from_keras(model_creator=keras_models.linear_model, backend=backend, num_workers=2,
                                               seed=0)
        keras_est.fit(dataset, epochs=2, verbose=0)
        got[backend] = (_weights(est), keras_est.get_model().get_weights())
        est.shutdown()
        keras_est.shutdown()
    for mine, theirs in zip([*got["spark"][0], *got["spark"][1]], [*got["ray"][0], *got["ray"][1]]):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)


def test_the_trained_model_saves_loads_predicts_and_serves_as_a_udf_after_a_spark_backend_fit(cluster, tmp_path):
    data = _classes(120)
    shards = XShards.partition(data, num_shards=2)
    est = _torch("spark")
    est.fit(shards, epochs=2, batch_size=24)
    predicted = np.concatenate([shard["prediction"] for shard in est.predict(shards, batch_size=24).collect()])
    expected = est.get_model()(torch.from_numpy(data["x"])).detach().numpy()
    np.testing.assert_allclose(predicted, expected, rtol=0, atol=1e-5)

    path = est.save(str(tmp_path / "model.pt"))
    again = _torch("spark")
    again.load(path)
    for mine, theirs in zip(_weights(again), _weights(est)):
        np.testing.assert_array_equal(mine, theirs)
    df = OrcaContext.get_spark_session().createDataFrame(pd.DataFrame({"features": list(data["x"][:5])}))
    served = df.select(again.spark_udf(input_shapes=[(4,)])("features").alias("p")).toPandas()["p"]
    np.testing.assert_allclose(np.stack(served), expected[:5], rtol=0, atol=1e-5)


def _resumed_fit(cluster, tmp_path, sig: int, **options):
    shards = XShards.partition(_classes(), num_shards=3)
    marker = str(tmp_path / "killed")
    est = _torch("spark", **options)
    history = est.fit(shards, epochs=4, batch_size=32, callbacks=[TorchKiller(rank=1, epochs_done=2, marker=marker, sig=sig)])
    untouched = _torch("spark")
    untouched.fit(shards, epochs=4, batch_size=32)
    return history, est, untouched, marker


def test_a_task_killed_mid_fit_runs_the_stage_again_and_resumes_from_the_last_epoch(cluster, tmp_path, caplog):
    history, est, untouched, marker = _resumed_fit(cluster, tmp_path, signal.SIGKILL)
    assert psutil.pid_exists(int(open(marker).read())) is False
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    assert "resuming from epoch 2 on 2 workers (failure 1 of at most 3)" in caplog.text
    for mine, theirs in zip(_weights(est), _weights(untouched)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6)
    assert _no_spark_job_left(cluster)


def test_a_stopped_task_is_lost_after_its_heartbeat_timeout_and_the_fit_resumes(cluster, tmp_path, caplog):
    history, est, untouched, marker = _resumed_fit(cluster, tmp_path, signal.SIGSTOP,
                                                   worker_config=WorkerConfig(heartbeat_timeout_s=3))
    stopped = int(open(marker).read())
    assert not psutil.pid_exists(stopped) or psutil.Process(stopped).status() == psutil.STATUS_ZOMBIE, \
        "the stopped task's process was left behind"
    assert "sent no heartbeat for" in caplog.text
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    for mine, theirs in zip(_weights(est), _weights(untouched)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6)


def test_a_fit_gives_up_after_max_failures_lost_tasks(cluster, tmp_path):
    shards = XShards.partition(_classes(60), num_shards=2)
    est = _torch("spark", max_failures=0)
    with pytest.raises(WorkerError, match=r"fit gave up after 1 lost worker\(s\), more than max_failures=0"):
        est.fit(shards, epochs=2, batch_size=20, callbacks=[TorchKiller(rank=0, epochs_done=0, marker=str(tmp_path / "k"))])
    assert _no_spark_job_left(cluster)


def test_an_error_in_the_model_ends_the_stage_with_the_workers_traceback(cluster):
    rows = {"x": np.array([[1.0, 2.0], [999.0, 0.0]] * 10, dtype=np.float32), "y": np.zeros(20, dtype=np.float32)}
    est = TorchEstimators.from_torch(model=lambda config: models.FailsOnMarker(), optimizer=models.sgd_creator,
                                     loss=torch.nn.MSELoss(), backend="spark", num_workers=2)
    with pytest.raises(WorkerError, match=r"train_epoch failed: RuntimeError: marker row reached the model") as caught:
        est.fit(XShards.partition(rows, num_shards=2), epochs=1, batch_size=4)
    assert not caught.value.lost and "forward" in caught.value.remote_traceback
    assert _no_spark_job_left(cluster)


def test_standby_workers_are_refused_on_the_spark_backend(cluster):
    with pytest.raises(InvalidArgumentError, match=r"WorkerConfig\(standby_workers=True\) keeps idle Ray workers .* "
                                                   r"drop standby_workers, or use backend='ray'"):
        _torch("spark", worker_config=WorkerConfig(standby_workers=True))


def test_more_workers_than_task_slots_is_refused_at_once(cluster):
    est = TorchEstimators.from_torch(model=_mlp, optimizer=_sgd, loss=torch.nn.CrossEntropyLoss(), backend="spark",
                                     num_workers=3)
    started = time.monotonic()
    with pytest.raises(InvalidArgumentError, match=r"3 workers need 3 task slots, and the cluster has 2 now .*ask for "
                                                   r"fewer workers \(num_workers= or workers_per_node=\)"):
        est.fit(XShards.partition(_classes(60), num_shards=2), epochs=1, batch_size=30)
    assert time.monotonic() - started < 30, "the refusal waited for task slots"
    assert _no_spark_job_left(cluster)


def _keras_children() -> dict[int, str]:
    """The Keras child processes of this session's Python workers: pid -> command line."""
    found = {}
    for process in psutil.process_iter():
        try:
            if process.environ().get(SESSION_MARK) == os.environ[SESSION_MARK] and "child_main" in " ".join(process.cmdline()):
                found[process.pid] = " ".join(process.cmdline())
        except psutil.Error:
            continue
    return found


def _serving(pid: int) -> bool:
    """Whether a child process is working for a task: it holds a connection to the driver."""
    try:
        return bool(psutil.Process(pid).net_connections(kind="tcp"))
    except psutil.Error:
        return False


def test_the_next_keras_stage_runs_in_the_child_the_last_one_started_and_no_child_serves_twice(cluster, tmp_path):
    x, y = keras_models.regression_rows()
    rows = XShards.partition({"x": x, "y": y}, num_shards=2)
    est = KerasEstimators.from_keras(model_creator=keras_models.linear_model, backend="spark", num_workers=2, seed=0)
    OrcaContext.warm_workers = False
    try:
        est.fit(rows, epochs=1, batch_size=16, verbose=0)
        assert not _keras_children(), "with warm workers off, no child waits for the next stage"
    finally:
        OrcaContext.warm_workers = True

    first, second = tmp_path / "first", tmp_path / "second"
    est.fit(rows, epochs=1, batch_size=16, verbose=0, callbacks=[keras_models.PidRecorder(str(first))])
    idle = _keras_children()
    assert len(idle) == 2 and all("KerasRunner" in command for command in idle.values()), idle
    assert not any(_serving(pid) for pid in idle), "a child still serves the ended stage"
    assert int(first.read_text()) not in idle, "a child served a second stage"

    est.fit(rows, epochs=1, batch_size=16, verbose=0, callbacks=[keras_models.PidRecorder(str(second))])
    assert int(second.read_text()) in idle, "the stage started a new child instead of taking the idle one"
    successors = _keras_children()
    assert len(successors) == 2 and not set(successors) & set(idle), "each child serves one stage only"
    est.shutdown()


def test_nothing_is_left_running_or_on_disk_after_the_spark_backend_tests(cluster):
    """Run last: no Spark job, no Keras child serving a stage, no shared-memory exchange file
    left (the idle children end with the context: the session's last check)."""
    import glob

    assert _no_spark_job_left(cluster)
    children = _keras_children()
    assert not [pid for pid in children if _serving(pid)], children
    # the exchange's files live for milliseconds (unlinked once every worker opened them): one older
    # than a few seconds was left behind; younger ones may belong to another test session running now
    def older_than_5_s(path: str) -> bool:
        try:
            return time.time() - os.stat(path).st_mtime > 5
        except FileNotFoundError:
            return False

    left = [path for path in glob.glob("/dev/shm/zoo_lite-*") if older_than_5_s(path)]
    assert not left, left
