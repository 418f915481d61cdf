"""The PyTorch Estimator on real Spark (local-cluster, two executors) and real Ray: two workers."""

from __future__ import annotations

import functools
import glob
import os
import time

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from tests.learn import models
from tests.learn.conftest import shared_estimator_fixtures
from tests.learn.shards import checked_digit_predictions, shards_with_sizes
from zoo_lite.data import XShards
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, WorkerError
from zoo_lite.learn.pytorch import Callback, Estimator, ModelCheckpoint, TensorBoard, WorkerConfig
from zoo_lite.learn.pytorch.specs import TargetRule

pytestmark = pytest.mark.timeout(600)


def regression_arrays(rows: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 2)).astype(np.float32)
    return {"x": x, "y": (x @ np.array([1.5, -2.0], dtype=np.float32)).astype(np.float32)}


def linear_estimator(**options) -> "Estimator":
    model = nn.Linear(2, 1)
    return Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                loss=nn.MSELoss(), seed=0, **options)


_shared_linear, linear = shared_estimator_fixtures(linear_estimator)


# -- exact semantics ------------------------------------------------------------------------------

def bias_free_linear_data(seed: int) -> tuple[np.ndarray, np.ndarray, nn.Linear]:
    """8 rows of (x, y) and a seeded linear model without bias, for the exact-update checks."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 1)).astype(np.float32)
    torch.manual_seed(0)
    return x, y, nn.Linear(3, 1, bias=False)


def one_process_sgd(start: torch.Tensor, x: np.ndarray, y: np.ndarray, lr: float, batches: list[np.ndarray]) -> np.ndarray:
    """The weights after plain single-process SGD from ``start`` over ``batches`` of row indices."""
    reference = nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        reference.weight.copy_(start)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    for rows in batches:
        optimizer.zero_grad()
        nn.MSELoss()(reference(torch.from_numpy(x[rows])), torch.from_numpy(y[rows])).backward()
        optimizer.step()
    return reference.weight.detach().numpy()


#: both ways of summing gradients between the two workers (on one host, shared memory is the default)
EXCHANGES = pytest.mark.parametrize("exchange", ["shared_memory", "gloo"])


@EXCHANGES
def test_two_workers_on_uneven_partitions_equal_one_process_full_batch_descent(two_workers, exchange) -> None:
    x, y, model = bias_free_linear_data(7)
    start = model.weight.detach().clone()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), loss=nn.MSELoss(), seed=1,
                               worker_config=WorkerConfig(shared_memory_exchange=exchange == "shared_memory"))
    assert est.num_workers == 2
    history = est.fit(shards_with_sizes({"x": x, "y": y}, [3, 5]), epochs=4, batch_size=8)
    assert est._group.call(lambda runner: runner.exchange_kind()) == [exchange, exchange]

    expected = one_process_sgd(start, x, y, 0.05, [np.arange(8)] * 4)
    np.testing.assert_allclose(est.get_model().weight.detach().numpy(), expected, atol=1e-5, rtol=0)
    assert [h["epoch"] for h in history] == [1, 2, 3, 4] and all(h["num_samples"] == 8 for h in history)
    est.shutdown()


@EXCHANGES
def test_two_workers_on_shuffled_mini_batches_equal_one_process_on_the_same_global_batches(two_workers, exchange) -> None:
    """Small steps on uneven partitions, where a worker's share of a step can be empty: still
    exactly one process's SGD over the global batches (which do not depend on placement)."""
    from zoo_lite.learn.base.steps import held_rows_batches

    x, y, model = bias_free_linear_data(3)
    start = model.weight.detach().clone()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss(), seed=4,
                               worker_config=WorkerConfig(shared_memory_exchange=exchange == "shared_memory"))
    est.fit(shards_with_sizes({"x": x, "y": y}, [1, 7]), epochs=3, batch_size=2)
    assert est._group.call(lambda runner: runner.exchange_kind()) == [exchange, exchange]

    batches = [rows for epoch in range(3) for rows in held_rows_batches([1, 7], [(0, 0, 1), (1, 0, 7)], 2, True, 4, epoch)]
    expected = one_process_sgd(start, x, y, 0.1, batches)
    np.testing.assert_allclose(est.get_model().weight.detach().numpy(), expected, atol=1e-5, rtol=0)
    est.shutdown()


def test_num_workers_is_the_total_spread_over_the_nodes_with_the_same_result(two_workers) -> None:
    from collections import Counter

    x, y, model = bias_free_linear_data(5)
    start = model.weight.detach().clone()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), loss=nn.MSELoss(), seed=1,
                               num_workers=3)
    assert est.num_workers == 3 and est._group is None, "the planned count, without starting a group"
    est.fit(shards_with_sizes({"x": x, "y": y}, [3, 5]), epochs=2, batch_size=8)
    assert est.num_workers == 3 and sorted(Counter(est._group.node_names).values()) == [1, 2]   # two nodes: 2 + 1
    expected = one_process_sgd(start, x, y, 0.05, [np.arange(8)] * 2)
    np.testing.assert_allclose(est.get_model().weight.detach().numpy(), expected, atol=1e-5, rtol=0)
    est.shutdown()
    single = Estimator.from_torch(model=nn.Linear(3, 1), loss=nn.MSELoss(), num_workers=1)
    assert single.num_workers == 1
    single.shutdown()
    with pytest.raises(InvalidArgumentError, match=r"workers_per_node=1 and num_workers=2 were both given; give num_workers"):
        Estimator.from_torch(model=nn.Linear(3, 1), loss=nn.MSELoss(), workers_per_node=1, num_workers=2)
    with pytest.raises(InvalidArgumentError, match=r"num_workers"):
        Estimator.from_torch(model=nn.Linear(3, 1), loss=nn.MSELoss(), num_workers=0)


def test_a_clear_error_every_worker_raises_keeps_the_group_and_the_next_fit_is_exact(two_workers) -> None:
    x, y, model = bias_free_linear_data(7)
    start = model.weight.detach().clone()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), loss=nn.MSELoss(), seed=1)
    shards = shards_with_sizes({"x": x, "y": y}, [4, 4])
    try:
        est.fit(shards, epochs=1, batch_size=8)
        pids = est._group.call(lambda runner: os.getpid())
        with pytest.raises(InvalidArgumentError, match="the data creator 'not_a_loader_creator' returned a list"):
            est.fit(models.not_a_loader_creator)   # raised by each worker as it loads, before any collective
        assert est._group is not None and est._group.call(lambda runner: os.getpid()) == pids, "the group should stay"
        est.fit(shards, epochs=1, batch_size=8)
        np.testing.assert_allclose(est.get_model().weight.detach().numpy(),
                                   one_process_sgd(start, x, y, 0.05, [np.arange(8)] * 2), atol=1e-5, rtol=0)
    finally:
        est.shutdown()


def test_a_fixed_seed_gives_the_same_model_twice(two_workers) -> None:
    shards = shards_with_sizes(regression_arrays(40), [10, 30])
    weights = []
    for _ in range(2):
        est = Estimator.from_torch(model=lambda config: nn.Linear(2, 1), optimizer=models.sgd_creator,
                                   loss=nn.MSELoss(), seed=5)
        est.fit(shards, epochs=2, batch_size=8)
        weights.append(est.get_model().weight.detach().clone())
        est.shutdown()
    assert torch.equal(weights[0], weights[1])


# -- digits, end to end ---------------------------------------------------------------------------

def test_digits_from_a_spark_dataframe_reaches_90_percent_and_predicts_every_row_in_order(digits_frames) -> None:
    import torchmetrics

    train, test = digits_frames
    est = Estimator.from_torch(model=models.digits_mlp, optimizer=models.sgd_creator, loss=nn.CrossEntropyLoss(),
                               metrics=[torchmetrics.Accuracy(task="multiclass", num_classes=10)],
                               config={"lr": 0.2, "hidden": 64}, seed=0)
    history = est.fit(train, epochs=12, batch_size=64, feature_cols=["features"], label_cols=["label"],
                      validation_data=test)
    assert {"train_loss", "val_loss", "val_MulticlassAccuracy", "epoch_time_s", "num_samples"} <= set(history[-1])
    assert history[-1]["train_loss"] < 0.3 * history[0]["train_loss"], history   # 2.19 to 0.19 when measured

    accuracy = checked_digit_predictions(est.predict(test, batch_size=128, feature_cols=["features"]), test)
    # the metric is aggregated exactly over both workers: it equals the accuracy of all predictions
    evaluated = est.evaluate(test, batch_size=64, feature_cols=["features"], label_cols=["label"])
    assert evaluated["num_samples"] == test.count()
    assert evaluated["MulticlassAccuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert history[-1]["val_MulticlassAccuracy"] == pytest.approx(accuracy, abs=1e-6)
    est.shutdown()


def test_vector_columns_and_double_columns_feed_a_float32_model(two_workers, linear) -> None:
    from pyspark.ml.feature import VectorAssembler

    arrays = regression_arrays(60)
    pdf = pd.DataFrame({"a": arrays["x"][:, 0].astype(np.float64), "b": arrays["x"][:, 1].astype(np.float64),
                        "y": arrays["y"].astype(np.float64)})
    df = VectorAssembler(inputCols=["a", "b"], outputCol="vec").transform(two_workers.createDataFrame(pdf))
    est = linear
    history = est.fit(df, epochs=30, batch_size=16, feature_cols=["vec"], label_cols=["y"])
    assert history[-1]["train_loss"] < 0.05 * history[0]["train_loss"]
    predicted = est.predict(df, feature_cols="vec")
    assert predicted.schema["prediction"].dataType.simpleString() == "float"
    assert predicted.schema["vec"].dataType == df.schema["vec"].dataType
    assert predicted.count() == 60


# -- every input kind -----------------------------------------------------------------------------

def _input_kinds(spark):
    arrays = regression_arrays(64)
    pdf = pd.DataFrame({"a": arrays["x"][:, 0], "b": arrays["x"][:, 1], "y": arrays["y"]})
    return {
        "dict xshards": (shards_with_sizes(arrays, [20, 44]), {}),
        "pandas xshards": (XShards.partition(pdf.assign(x=list(arrays["x"])), num_shards=3), {"feature_cols": ["x"], "label_cols": "y"}),
        "spark dataframe": (spark.createDataFrame(pdf.assign(x=list(arrays["x"].astype(np.float64)))), {"feature_cols": ["x"], "label_cols": ["y"]}),
        "dataloader": (torch.utils.data.DataLoader(models.regression_dataset(), batch_size=16, shuffle=True), {}),
        "creator (config, batch_size)": (models.loader_creator, {}),
        "creator (config)": (models.loader_creator_guide_form, {}),
    }


def test_every_data_input_kind_trains_and_evaluates(two_workers, linear, tmp_path) -> None:
    """Every kind trains the same model from the same start to the known solution y = 1.5 a - 2 b
    (from an already trained model, a loss of 4e-14 'falling' to 5e-14 once failed a check that
    it falls)."""
    est = linear
    start = est.save(str(tmp_path / "start.pt"))
    for name, (data, columns) in _input_kinds(two_workers).items():
        est.load(start)   # every kind trains from the same start
        history = est.fit(data, epochs=8, batch_size=16, **columns)
        assert history[-1]["num_samples"] == 64, name
        assert history[-1]["train_loss"] < 1e-3 * history[0]["train_loss"], (name, history)
        model = est.get_model()
        np.testing.assert_allclose(model.weight.detach().numpy(), [[1.5, -2.0]], atol=0.05, err_msg=name)
        np.testing.assert_allclose(model.bias.detach().numpy(), [0.0], atol=0.05, err_msg=name)
        assert est.evaluate(data, batch_size=16, **columns)["num_samples"] == 64, name


@pytest.mark.parametrize("sizes", [[30], [0, 30, 0], [29, 1]], ids=["one partition", "empty partitions", "a 1-row partition"])
def test_fewer_or_empty_partitions_than_workers_still_use_every_row_once(two_workers, linear, sizes) -> None:
    history = linear.fit(shards_with_sizes(regression_arrays(30), sizes), epochs=2, batch_size=4)
    assert [h["num_samples"] for h in history] == [30, 30]
    assert linear.evaluate(shards_with_sizes(regression_arrays(30), sizes), batch_size=4)["num_samples"] == 30


def test_multi_input_models_take_one_input_per_entry(two_workers) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 2)).astype(np.float32), rng.normal(size=(30,)).astype(np.float32)
    y = (a.sum(axis=1) + b).astype(np.float32)
    model = models.TwoInputs()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss(), seed=0)
    history = est.fit(shards_with_sizes({"x": (a, b), "y": y}, [12, 18]), epochs=20, batch_size=10)
    assert history[-1]["train_loss"] < 0.1 * history[0]["train_loss"]
    df = two_workers.createDataFrame(pd.DataFrame({"a": list(a.astype(np.float64)), "b": b.astype(np.float64), "y": y}))
    history = est.fit(df, epochs=2, batch_size=10, feature_cols=["a", "b"], label_cols=["y"])
    assert history[-1]["num_samples"] == 30
    assert est.predict(df, feature_cols=["a", "b"]).count() == 30
    est.shutdown()


# -- class labels ---------------------------------------------------------------------------------

def blob_frame(spark):
    """The blobs as a Spark ML pipeline gives them: a Vector of features, and a double label from
    StringIndexer over the class names."""
    from pyspark.ml.feature import StringIndexer, VectorAssembler

    x, y = models.blob_classes()
    names = np.array(["red", "green", "blue"])[y.numpy().astype(int)]
    pdf = pd.DataFrame({"a": x[:, 0].double().numpy(), "b": x[:, 1].double().numpy(), "colour": names})
    df = VectorAssembler(inputCols=["a", "b"], outputCol="features").transform(spark.createDataFrame(pdf))
    return StringIndexer(inputCol="colour", outputCol="label").fit(df).transform(df)


@pytest.mark.parametrize("model, loss", [
    (models.linear_classifier, nn.CrossEntropyLoss()),
    (models.log_softmax_classifier, nn.NLLLoss),   # a loss class, built on every worker
    (models.linear_classifier, functools.partial(torch.nn.functional.cross_entropy, label_smoothing=0.05)),
], ids=["CrossEntropyLoss", "NLLLoss class", "functional cross_entropy"])
def test_double_class_labels_train_and_evaluate_a_class_index_loss(two_workers, tmp_path, model, loss) -> None:
    """Labels from StringIndexer (a double column), float64 labels in XShards and in a DataLoader:
    the loss gets int64 class indices in fit, validation and evaluate."""
    import torchmetrics

    df = blob_frame(two_workers)
    assert df.schema["label"].dataType.simpleString() == "double"
    x, y = models.blob_classes()
    kinds = {
        "spark dataframe": (df, {"feature_cols": ["features"], "label_cols": ["label"]}),
        "dict xshards": (shards_with_sizes({"x": x.numpy(), "y": y.numpy()}, [50, 70]), {}),
        "data creator": (models.double_label_loader_creator, {}),
    }
    est = Estimator.from_torch(model=model, optimizer=models.sgd_creator, loss=loss, seed=0,
                               metrics={"accuracy": torchmetrics.Accuracy(task="multiclass", num_classes=3)})
    start = est.save(str(tmp_path / "start.pt"))
    try:
        for name, (data, columns) in kinds.items():
            est.load(start)   # every kind trains from the same start
            history = est.fit(data, epochs=6, batch_size=16, validation_data=data, **columns)
            assert history[-1]["num_samples"] == 120, name
            assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"], (name, history)
            assert history[-1]["val_accuracy"] >= 0.95, (name, history)
            evaluated = est.evaluate(data, batch_size=16, **columns)
            assert evaluated["num_samples"] == 120 and evaluated["accuracy"] >= 0.95, (name, evaluated)
            assert evaluated["val_loss"] == pytest.approx(history[-1]["val_loss"], rel=1e-5), name
    finally:
        est.shutdown()


def test_labels_that_are_not_whole_numbers_get_a_clear_error_and_class_probabilities_stay_floats(two_workers) -> None:
    x, y = models.blob_classes()
    half = y.numpy().copy()
    half[100] = 1.5   # in the second partition: one worker holds it
    est = Estimator.from_torch(model=models.linear_classifier, optimizer=models.sgd_creator, loss=nn.CrossEntropyLoss(), seed=0)
    message = r"label_cols: the loss CrossEntropyLoss takes class indices, but the label 1\.5 is not a whole number"
    try:
        with pytest.raises(InvalidArgumentError, match=message):
            est.fit(shards_with_sizes({"x": x.numpy(), "y": half}, [50, 70]), batch_size=16)
        with pytest.raises(InvalidArgumentError, match=message):
            est.evaluate(shards_with_sizes({"x": x.numpy(), "y": half}, [50, 70]), batch_size=16)
        with pytest.raises(InvalidArgumentError, match=message):   # checked batch by batch
            est.fit(models.half_label_loader_creator, batch_size=16)
        with pytest.raises(InvalidArgumentError, match=message):
            est.evaluate(models.half_label_loader_creator, batch_size=16)

        # a float target of the output's shape is class probabilities for CrossEntropyLoss: kept as floats
        soft = np.full((120, 3), 0.05) + 0.85 * np.eye(3)[y.numpy().astype(int)]
        history = est.fit(shards_with_sizes({"x": x.numpy(), "y": soft}, [60, 60]), epochs=6, batch_size=16)
        assert history[-1]["train_loss"] < 0.8 * history[0]["train_loss"], history
        predicted = est.get_model()(x).argmax(dim=1)
        assert float((predicted == y.long()).double().mean()) >= 0.95
    finally:
        est.shutdown()


def test_integer_labels_train_a_loss_that_takes_floats_as_orca_array_int_columns_did(two_workers) -> None:
    """Orca's ``array<int>`` label column with ``BCELoss`` (its tests' pattern): integer labels
    become the model's floats for the losses that only take floats, from a Spark DataFrame, dict
    XShards and a DataLoader alike, and evaluate's loss is BCELoss on the float labels."""
    x, y = models.blob_classes()
    binary = (y.numpy() == 0).astype(np.int64)
    frame = two_workers.createDataFrame(pd.DataFrame({"features": list(x.numpy().astype(np.float64)),
                                                      "label": [[int(v)] for v in binary]}))
    assert frame.schema["label"].dataType.simpleString() == "array<bigint>"

    def int_label_loader(config, batch_size):
        dataset = torch.utils.data.TensorDataset(x, torch.from_numpy(binary).reshape(-1, 1))
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size)

    kinds = {
        "spark dataframe": (frame, {"feature_cols": ["features"], "label_cols": ["label"]}),
        "dict xshards": (shards_with_sizes({"x": x.numpy(), "y": binary.reshape(-1, 1)}, [50, 70]), {}),
        "data creator": (int_label_loader, {}),
    }
    est = Estimator.from_torch(model=lambda config: nn.Sequential(nn.Linear(2, 1), nn.Sigmoid()),
                               optimizer=models.sgd_creator, loss=nn.BCELoss(), seed=0)
    try:
        assert est.estimator is est and est.estimator.num_workers == 2   # Orca's est.estimator.num_workers
        for name, (data, columns) in kinds.items():
            history = est.fit(data, epochs=2, batch_size=16, **columns)
            assert history[-1]["num_samples"] == 120, name
            evaluated = est.evaluate(data, batch_size=16, **columns)
            with torch.no_grad():
                expected = nn.BCELoss()(est.get_model()(x), torch.from_numpy(binary).float().reshape(-1, 1))
            assert evaluated["val_loss"] == pytest.approx(float(expected), rel=1e-4), name
    finally:
        est.shutdown()


def test_target_rule_is_decided_by_the_loss() -> None:
    """Pure: which losses take class indices, and the cast of one batch."""
    nll = torch.nn.functional.nll_loss
    assert TargetRule.of(nn.CrossEntropyLoss()) == TargetRule("CrossEntropyLoss", True)
    assert TargetRule.of(nn.NLLLoss(reduction="sum")) == TargetRule("NLLLoss", False)
    assert TargetRule.of(torch.nn.functional.cross_entropy) == TargetRule("torch.nn.functional.cross_entropy", True)
    assert TargetRule.of(functools.partial(nll, ignore_index=-1)) == TargetRule("torch.nn.functional.nll_loss", False)
    for float_loss in (nn.MSELoss(), nn.BCEWithLogitsLoss(), nn.BCELoss(reduction="sum"), torch.nn.functional.mse_loss,
                       functools.partial(torch.nn.functional.binary_cross_entropy, reduction="mean")):
        assert TargetRule.of(float_loss) == TargetRule(float_target=True), float_loss
    for other in (lambda out, y: (out - y).abs().mean(), nn.MultiMarginLoss(), nn.CTCLoss(), None):
        assert TargetRule.of(other) == TargetRule(), other

    output = torch.zeros(4, 3)
    doubles = torch.tensor([0.0, 2.0, 1.0, -100.0], dtype=torch.float64)   # -100: CrossEntropyLoss's ignore_index
    indices = TargetRule.of(nn.CrossEntropyLoss()).target(output, doubles, torch.float32)
    assert indices.dtype == torch.int64 and indices.tolist() == [0, 2, 1, -100]
    probabilities = torch.full((4, 3), 1 / 3, dtype=torch.float64)
    assert TargetRule.of(nn.CrossEntropyLoss()).target(output, probabilities, torch.float32).dtype == torch.float32
    assert TargetRule.of(nn.MSELoss()).target(output, doubles, torch.float32).dtype == torch.float32
    ints = torch.tensor([0, 1, 2, 1])
    assert TargetRule.of(lambda out, y: out.sum()).target(output, ints, torch.float32) is ints   # a custom loss decides
    as_floats = TargetRule.of(nn.MSELoss()).target(output, ints, torch.float64)
    assert as_floats.dtype == torch.float64 and as_floats.tolist() == [0.0, 1.0, 2.0, 1.0]
    with pytest.raises(InvalidArgumentError, match=r"the loss torch.nn.functional.nll_loss takes class indices, but the label nan"):
        TargetRule.of(nll).target(output, torch.tensor([0.0, float("nan"), 1.0, 2.0]), torch.float32)
    # NLLLoss never takes probabilities: a float target of the output's shape is still indices (and checked)
    with pytest.raises(InvalidArgumentError, match=r"the loss NLLLoss takes class indices, but the label 0.333"):
        TargetRule.of(nn.NLLLoss()).target(output, probabilities, torch.float32)


# -- callbacks, progress, checkpoints ------------------------------------------------------------

class RecordHooks(Callback):
    """Appends ``rank hook`` lines to a file per worker."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def _record(self, runner, hook: str) -> None:
        with open(os.path.join(self.folder, f"rank{runner.rank}.log"), "a") as log:
            log.write(f"{hook} {runner.epoch}\n")

    def before_run(self, runner): self._record(runner, "before_run")
    def after_run(self, runner): self._record(runner, "after_run")
    def before_train_epoch(self, runner): self._record(runner, "before_train_epoch")
    def after_train_epoch(self, runner): self._record(runner, "after_train_epoch")
    def before_train_iter(self, runner): self._record(runner, "before_train_iter")
    def after_train_iter(self, runner): self._record(runner, "after_train_iter")


def test_callbacks_run_on_every_worker_and_checkpoints_and_event_files_are_written(two_workers, linear, tmp_path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    est = linear
    hooks, checkpoints, events = tmp_path / "hooks", tmp_path / "ckpt", tmp_path / "tb"
    hooks.mkdir()
    data = shards_with_sizes(regression_arrays(40), [15, 25])
    est.fit(data, epochs=3, batch_size=10, validation_data=data,
            callbacks=[RecordHooks(str(hooks)), ModelCheckpoint(str(checkpoints)), TensorBoard(str(events), freq=2)])
    for rank in (0, 1):
        lines = (hooks / f"rank{rank}.log").read_text().splitlines()
        kinds = [line.split()[0] for line in lines]
        assert kinds[0] == "before_run" and kinds[-1] == "after_run"
        assert kinds.count("before_train_epoch") == kinds.count("after_train_epoch") == 3
        assert kinds.count("before_train_iter") == kinds.count("after_train_iter") == 3 * 4   # 40 rows / 10 per step
    assert sorted(os.listdir(checkpoints)) == ["epoch=1.ckpt", "epoch=2.ckpt", "epoch=3.ckpt"]
    assert Estimator.latest_checkpoint(str(checkpoints)).endswith("epoch=3.ckpt")
    accumulator = EventAccumulator(glob.glob(str(events / "events.out.tfevents*"))[0])
    accumulator.Reload()
    assert {"epoch/train_loss", "epoch/val_loss", "train/step_loss"} <= set(accumulator.Tags()["scalars"])
    assert [event.step for event in accumulator.Scalars("epoch/train_loss")] == [1, 2, 3]


def test_relative_callback_paths_are_the_drivers(two_workers, linear, tmp_path, monkeypatch) -> None:
    """The workers run elsewhere (Ray's own working directory): a relative path is the driver's."""
    monkeypatch.chdir(tmp_path)
    est = linear
    est.fit(shards_with_sizes(regression_arrays(20), [10, 10]), epochs=2, batch_size=10,
            callbacks=[ModelCheckpoint("ckpt"), TensorBoard("tb")])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["epoch=1.ckpt", "epoch=2.ckpt"]
    assert glob.glob(str(tmp_path / "tb" / "events.out.tfevents*"))


def test_tqdm_progress_shows_steps_on_the_driver(two_workers, capfd) -> None:
    est = linear_estimator(use_tqdm=True)
    est.fit(shards_with_sizes(regression_arrays(40), [20, 20]), epochs=2, batch_size=10)
    assert "8/8" in capfd.readouterr().err   # 2 epochs × 4 steps
    est.shutdown()


def test_save_and_load_give_equal_predictions(two_workers, linear, tmp_path) -> None:
    data = shards_with_sizes(regression_arrays(40), [20, 20])
    est = linear
    est.fit(data, epochs=3, batch_size=10)
    est.save(str(tmp_path / "model.pt"))
    expected = np.concatenate([s["prediction"] for s in est.predict(data).collect()])
    restored = linear_estimator()
    restored.load(str(tmp_path / "model.pt"))
    got = np.concatenate([s["prediction"] for s in restored.predict(data).collect()])
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(InvalidArgumentError, match="no checkpoint at path="):
        restored.load(str(tmp_path / "missing.pt"))


def test_a_checkpoint_saved_before_training_resets_the_optimizer_of_a_trained_estimator(two_workers, tmp_path) -> None:
    """Loaded after a fit, it takes the momentum and the scheduler's step back too (they were kept
    before), so the next fit equals a new Estimator's."""
    def momentum_estimator() -> "Estimator":
        torch.manual_seed(0)
        model = nn.Linear(2, 1)
        return Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                    loss=nn.MSELoss(), seed=1,
                                    scheduler_creator=lambda optimizer, config: torch.optim.lr_scheduler.StepLR(optimizer, 1, 0.5))
    data = shards_with_sizes(regression_arrays(40), [20, 20])
    new = momentum_estimator()
    new.fit(data, epochs=2, batch_size=40)
    expected = [p.detach().numpy().copy() for p in new.get_model().parameters()]
    new.shutdown()
    est = momentum_estimator()
    untrained = est.save_checkpoint(str(tmp_path / "untrained.ckpt"))
    est.fit(data, epochs=3, batch_size=10)
    est.load_checkpoint(untrained)
    est.fit(data, epochs=2, batch_size=40)
    for got, want in zip(est.get_model().parameters(), expected):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=0, atol=1e-6)
    est.shutdown()


def test_resuming_from_a_checkpoint_continues_at_the_next_epoch_exactly(two_workers, tmp_path) -> None:
    data = shards_with_sizes(regression_arrays(40), [10, 30])
    model = nn.Linear(2, 1)
    whole = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                 loss=nn.MSELoss(), seed=3, model_dir=str(tmp_path))
    whole.fit(data, epochs=3, batch_size=8)
    whole.shutdown()

    model = nn.Linear(2, 1)
    resumed = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   loss=nn.MSELoss(), seed=3)
    resumed.load_checkpoint(str(tmp_path / "epoch=2.ckpt"))
    history = resumed.fit(data, epochs=1, batch_size=8)
    assert history[0]["epoch"] == 3
    for name, value in whole.get_model().state_dict().items():
        torch.testing.assert_close(resumed.get_model().state_dict()[name], value, atol=1e-6, rtol=0)
    resumed.shutdown()


# -- bad input and faults -------------------------------------------------------------------------

def test_bad_inputs_get_clear_errors(two_workers, linear) -> None:
    spark = two_workers
    df = spark.createDataFrame(pd.DataFrame({"a": [1.0, 2.0, 3.0], "s": ["x", "y", "z"], "y": [0.0, 1.0, 0.0]}))
    est = linear
    with pytest.raises(ColumnNotFoundError, match=r"feature_cols=\['nope'\]: column\(s\) \['nope'\] not found"):
        est.fit(df, feature_cols=["nope"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match="feature_cols: column 's' has type string, which is not numeric"):
        est.fit(df, feature_cols=["s"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match=r"different row counts \{'x': 3, 'y': 2\}"):
        est.fit(XShards.partition({"x": np.zeros((3, 2)), "y": np.zeros(3)}, num_shards=1)
                .transform_shard(lambda s: {"x": s["x"], "y": s["y"][:2]}))
    with pytest.raises(InvalidArgumentError, match="batch_size=1 is smaller than the number of workers"):
        est.fit(shards_with_sizes(regression_arrays(10), [5, 5]), batch_size=1)
    with pytest.raises(InvalidArgumentError, match="has no rows"):
        est.fit(spark.createDataFrame(pd.DataFrame({"a": [1.0], "y": [1.0]})).limit(0), feature_cols=["a"], label_cols=["y"])
    with pytest.raises(InvalidArgumentError, match="the data creator 'not_a_loader_creator' returned a list"):
        est.fit(models.not_a_loader_creator)
    with pytest.raises(InvalidArgumentError, match="data is a str"):
        est.fit("not data")
    with pytest.raises(InvalidArgumentError, match="feature_cols was given without label_cols"):
        est.fit(XShards.partition(pd.DataFrame({"a": [1.0, 2.0]}), num_shards=1), feature_cols=["a"])
    with pytest.raises(InvalidArgumentError, match=r"model: the model creator '<lambda>' returned a str"):
        Estimator.from_torch(model=lambda config: "not a module", optimizer=models.sgd_creator, loss=nn.MSELoss())
    with pytest.raises(InvalidArgumentError, match=r"optimizer: the creator 'make' takes 1 positional argument\(s\) \(lr\)"):
        def make(lr):
            return None
        Estimator.from_torch(model=nn.Linear(2, 1), optimizer=make, loss=nn.MSELoss())
    with pytest.raises(InvalidArgumentError, match="epochs=0 must be a positive int"):
        est.fit(shards_with_sizes(regression_arrays(10), [5, 5]), epochs=0)
    # the estimator still works after all of these
    assert est.fit(shards_with_sizes(regression_arrays(10), [5, 5]), batch_size=4)[0]["num_samples"] == 10


def test_a_worker_exception_reaches_the_driver_quickly_and_the_estimator_recovers(two_workers) -> None:
    arrays = regression_arrays(40)
    bad = {"x": arrays["x"].copy(), "y": arrays["y"]}
    bad["x"][35, 0] = 999   # only in the second partition, so only one worker fails
    model = models.FailsOnMarker()
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss(), seed=0)
    est.fit(shards_with_sizes(arrays, [20, 20]), epochs=1, batch_size=8)
    started = time.monotonic()
    with pytest.raises(WorkerError, match="marker row reached the model") as caught:
        est.fit(shards_with_sizes(bad, [20, 20]), epochs=2, batch_size=8)
    assert time.monotonic() - started < 30
    assert "in forward" in caught.value.remote_traceback
    history = est.fit(shards_with_sizes(arrays, [20, 20]), epochs=1, batch_size=8)   # a fresh worker group
    assert history[0]["num_samples"] == 40
    est.shutdown()


def test_dict_shards_with_feature_cols_train_and_predict_on_those_keys(two_workers, linear) -> None:
    arrays = regression_arrays(40)
    named = {"a": arrays["x"], "noise": np.full((40, 3), 99.0, dtype=np.float32), "target": arrays["y"]}
    est = linear
    est.fit(shards_with_sizes(named, [20, 20]), epochs=2, batch_size=10, feature_cols="a", label_cols="target")
    by_key = np.concatenate([s["prediction"] for s in est.predict(shards_with_sizes(named, [20, 20]), feature_cols="a").collect()])
    by_x = np.concatenate([s["prediction"] for s in est.predict(shards_with_sizes(arrays, [20, 20])).collect()])
    np.testing.assert_array_equal(by_key, by_x)
    with pytest.raises(ColumnNotFoundError, match="'b'"):
        est.predict(shards_with_sizes(named, [20, 20]), feature_cols="b").collect()
