"""Orca's metric objects (``zoo.orca.learn.metrics``) in Orca's call style: ``metrics=[Accuracy()]``
to ``Estimator.from_torch`` and ``Estimator.from_keras``. The values over data split unevenly
between two workers are checked against numpy / scikit-learn on all the rows, so a wrong
aggregation (e.g. the mean of the workers' means) fails. Real Spark and Ray, no mocks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from zoo_lite import OrcaContext
from zoo_lite.data import SparkXShards
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.metrics import (AUC, MAE, MSE, Accuracy, BinaryAccuracy, BinaryCrossEntropy, CategoricalAccuracy,
                                    CategoricalCrossEntropy, KLDivergence, Metric, Poisson, SparseCategoricalAccuracy,
                                    SparseCategoricalCrossEntropy, Top5Accuracy, with_keras_metrics)

pytestmark = pytest.mark.timeout(300)

#: the two workers' row counts: unequal, so that a mean of per-worker means is not the mean
SIZES = (9, 31)


@pytest.fixture(scope="module")
def orca_context(local_ray_spark):
    """A local Ray-on-Spark context, as an Orca script starts it (the session's shared one)."""
    return local_ray_spark


def uneven_shards(x: np.ndarray, y: np.ndarray) -> SparkXShards:
    """Dict shards of ``SIZES`` rows, one per partition (so one per worker)."""
    bounds = np.cumsum([0, *SIZES])
    pieces = [{"x": x[a:b], "y": y[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    return SparkXShards(OrcaContext.get_spark_context().parallelize(pieces, len(pieces)))


def binary_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(sum(SIZES), 4)).astype(np.float32)
    y = (x @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(scale=1.0, size=len(x)) > 0).astype(np.float32)
    return x, y.reshape(-1, 1)


def class_rows(classes: int = 6, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(sum(SIZES), 4)).astype(np.float32), rng.integers(0, classes, size=sum(SIZES))


def binned_auc(y: np.ndarray, p: np.ndarray, thresholds: np.ndarray) -> float:
    """The ROC AUC over these thresholds: each prediction moved down to the threshold below it."""
    binned = thresholds[np.searchsorted(thresholds, p.ravel(), side="right") - 1]
    return float(roc_auc_score(y.ravel(), binned))


def per_worker_mean(values: np.ndarray) -> float:
    """The wrong aggregation: the mean of each worker's mean."""
    first = SIZES[0]
    return float((values[:first].mean() + values[first:].mean()) / 2)


# -- PyTorch ------------------------------------------------------------------------------------

def test_torch_binary_metrics_over_two_workers_equal_the_whole_data_values(orca_context) -> None:
    from zoo_lite.learn.pytorch import Estimator

    x, y = binary_rows()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.BCELoss(),
                               metrics=[Accuracy(), MAE(), AUC(), BinaryCrossEntropy()], num_workers=2, seed=0)
    data = uneven_shards(x, y)
    history = est.fit(data, epochs=1, batch_size=8, validation_data=data)
    assert {"val_Accuracy", "val_MAE", "val_AUC", "val_BinaryCrossEntropy"} <= set(history[-1])

    result = est.evaluate(data, batch_size=8)
    with torch.no_grad():
        p = est.get_model()(torch.from_numpy(x)).numpy().astype(np.float64)
    hits = ((p >= 0.5) == y).astype(np.float64).ravel()
    assert result["num_samples"] == len(x)
    assert result["Accuracy"] == pytest.approx(hits.mean(), abs=1e-6)
    assert per_worker_mean(hits) != pytest.approx(hits.mean(), abs=1e-3)   # the data tells the two apart
    assert result["MAE"] == pytest.approx(np.abs(p - y).mean(), abs=1e-6)
    clipped = np.clip(p, 1e-7, 1 - 1e-7)
    assert result["BinaryCrossEntropy"] == pytest.approx(-(y * np.log(clipped) + (1 - y) * np.log(1 - clipped)).mean(), abs=1e-6)
    assert result["AUC"] == pytest.approx(binned_auc(y, p, torch.linspace(0, 1, 200).numpy()), abs=1e-6)
    assert result["AUC"] == pytest.approx(roc_auc_score(y.ravel(), p.ravel()), abs=0.02)
    assert result["val_loss"] == pytest.approx(history[-1]["val_loss"], abs=1e-6)   # nothing trained in between
    est.shutdown()


def test_torch_class_metrics_take_logits_and_class_indices(orca_context) -> None:
    from zoo_lite.learn.pytorch import Estimator

    x, y = class_rows()
    torch.manual_seed(0)
    model = nn.Linear(4, 6)
    est = Estimator.from_torch(model=model, loss=nn.CrossEntropyLoss(), num_workers=2,
                               metrics=[Accuracy(), SparseCategoricalAccuracy(), Top5Accuracy()])
    result = est.evaluate(uneven_shards(x, y), batch_size=8)
    with torch.no_grad():
        scores = model(torch.from_numpy(x)).numpy()
    top1 = scores.argmax(axis=1) == y
    top5 = (np.argsort(-scores, axis=1)[:, :5] == y[:, None]).any(axis=1)
    assert result["Accuracy"] == pytest.approx(top1.mean(), abs=1e-6)
    assert result["SparseCategoricalAccuracy"] == pytest.approx(top1.mean(), abs=1e-6)
    assert result["Top5Accuracy"] == pytest.approx(top5.mean(), abs=1e-6)
    est.shutdown()


def test_torch_metrics_reject_what_is_not_a_metric(orca_context) -> None:
    from zoo_lite.learn.pytorch import Estimator

    Estimator.from_torch(model=nn.Linear(2, 1), loss=nn.BCELoss(), metrics=Accuracy()).shutdown()   # Orca's single-metric form

    with pytest.raises(InvalidArgumentError, match=r"metrics: 3 \(int\) is not a metric; pass Orca metrics from "
                                                   r"zoo_lite.learn.metrics \(e.g. Accuracy\(\)\)"):
        Estimator.from_torch(model=nn.Linear(2, 1), loss=nn.MSELoss(), metrics=[Accuracy(), 3])
    with pytest.raises(InvalidArgumentError, match=r"metrics: .*Accuracy'> \(type\) is not a metric"):
        Estimator.from_torch(model=nn.Linear(2, 1), loss=nn.MSELoss(), metrics=[Accuracy])

    class KerasOnly(Metric):
        def get_name(self) -> str:
            return "KerasOnly"

    with pytest.raises(InvalidArgumentError, match=r"metrics: KerasOnly has no PyTorch implementation \(get_pytorch_metric\); "
                                                   r"pass a torchmetrics Metric"):
        Estimator.from_torch(model=nn.Linear(2, 1), loss=nn.MSELoss(), metrics=[KerasOnly()])


# -- Keras --------------------------------------------------------------------------------------

def keras_binary_model():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy", metrics=["mse"])
    return model


def test_keras_orca_metrics_over_two_workers_equal_the_whole_data_values(orca_context) -> None:
    import keras

    from zoo_lite.learn.tf2 import Estimator

    x, y = binary_rows()
    est = Estimator.from_keras(keras_binary_model(), [Accuracy(), MAE(), AUC()], num_workers=2, seed=0)
    data = uneven_shards(x, y)
    history = est.fit(data, epochs=1, batch_size=8, validation_data=data, verbose=0)
    assert {"loss", "mse", "Accuracy", "MAE", "AUC", "val_Accuracy", "val_MAE", "val_AUC"} <= set(history)

    result = est.evaluate(data, batch_size=8, verbose=0)
    trained = est.get_model()
    p = trained.predict(x, verbose=0).astype(np.float64)
    hits = ((p >= 0.5) == y).astype(np.float64).ravel()
    assert result["Accuracy"] == pytest.approx(hits.mean(), abs=1e-6)
    assert per_worker_mean(hits) != pytest.approx(hits.mean(), abs=1e-3)
    assert result["MAE"] == pytest.approx(np.abs(p - y).mean(), abs=1e-6)
    assert result["mse"] == pytest.approx(((p - y) ** 2).mean(), abs=1e-6)
    whole = keras.metrics.AUC(num_thresholds=200)   # Keras' interpolated AUC, in one process, on all rows
    whole.update_state(y, p)
    assert result["AUC"] == pytest.approx(float(whole.result()), abs=1e-6)
    assert result["AUC"] == pytest.approx(roc_auc_score(y.ravel(), p.ravel()), abs=0.02)
    # the metrics travel with the model: get_model()'s compile config has them
    names = [m if isinstance(m, str) else m["config"]["name"] for m in trained.get_compile_config()["metrics"]]
    assert names == ["mse", "Accuracy", "MAE", "AUC"]
    est.shutdown()


def softmax_model_creator(config: dict):
    """Orca's model_creator form: a compiled 6-class softmax model."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(6, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


def test_keras_creator_gets_the_metrics_on_every_worker(orca_context) -> None:
    from zoo_lite.learn.tf2 import Estimator

    x, y = class_rows()
    est = Estimator.from_keras(model_creator=softmax_model_creator, num_workers=2, seed=0,
                               metrics=[Accuracy(), Top5Accuracy(), SparseCategoricalCrossEntropy()])
    result = est.evaluate(uneven_shards(x, y), batch_size=8, verbose=0)
    probabilities = est.get_model().predict(x, verbose=0).astype(np.float64)
    top1 = probabilities.argmax(axis=1) == y
    top5 = (np.argsort(-probabilities, axis=1)[:, :5] == y[:, None]).any(axis=1)
    chosen = np.clip(probabilities, 1e-7, 1 - 1e-7)
    chosen = chosen[np.arange(len(y)), y] / chosen.sum(axis=1)
    assert result["Accuracy"] == pytest.approx(top1.mean(), abs=1e-6)
    assert result["Top5Accuracy"] == pytest.approx(top5.mean(), abs=1e-6)
    assert result["SparseCategoricalCrossEntropy"] == pytest.approx(-np.log(chosen).mean(), abs=1e-5)
    assert result["loss"] == pytest.approx(result["SparseCategoricalCrossEntropy"], abs=1e-5)
    est.shutdown()


def test_keras_metrics_need_a_compiled_model_and_real_metrics(orca_context) -> None:
    import keras

    from zoo_lite.learn.tf2 import Estimator

    bare = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)], name="bare")
    with pytest.raises(InvalidArgumentError, match=r"metrics: the model 'bare' is not compiled, so there is nothing to add "
                                                   r"metrics to; compile it first"):
        Estimator.from_keras(bare, [Accuracy()])
    with pytest.raises(InvalidArgumentError, match=r"metrics: the model .* is not compiled"):
        Estimator.from_keras(model_creator=lambda config: keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)]),
                             metrics=[MAE()])
    with pytest.raises(InvalidArgumentError, match=r"metrics: 3 \(int\) is not a metric; pass Orca metrics from "
                                                   r"zoo_lite.learn.metrics \(e.g. Accuracy\(\)\), keras.metrics.Metric"):
        Estimator.from_keras(keras_binary_model(), metrics=[3])
    with pytest.raises(InvalidArgumentError, match=r"metrics: two metrics are named 'MAE'"):
        Estimator.from_keras(keras_binary_model(), metrics=[MAE(), keras.metrics.MeanAbsoluteError(name="MAE")])

    class TorchOnly(Metric):
        def get_name(self) -> str:
            return "TorchOnly"

    with pytest.raises(InvalidArgumentError, match=r"metrics: TorchOnly has no Keras implementation \(get_tf_metric\)"):
        Estimator.from_keras(keras_binary_model(), metrics=TorchOnly())


# -- the metrics themselves, without a cluster --------------------------------------------------

def torch_value(metric: Metric, preds, target) -> float:
    implementation = metric.get_metric("pytorch")
    implementation.update(torch.as_tensor(preds), torch.as_tensor(target))
    return float(implementation.compute())


def keras_value(metric: Metric, preds, target) -> float:
    implementation = metric.get_metric("tf")
    implementation.update_state(np.asarray(target), np.asarray(preds))
    return float(implementation.result())


# Orca's documented values (its pytorch_metrics tests): (metric, preds, target, value)
ORCA_CASES = [
    (Accuracy(), [0, 2, 3, 4], [1, 2, 3, 4], 0.75),
    (BinaryAccuracy(), [0.98, 1.0, 0.0, 0.6], [1, 1, 0, 0], 0.75),
    (CategoricalAccuracy(), [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]], [[0, 0, 1], [0, 1, 0]], 0.5),
    (SparseCategoricalAccuracy(), [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]], [[2], [1]], 0.5),
    (SparseCategoricalAccuracy(), [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]], [2, 0], 0.0),
    (Top5Accuracy(), [[0.1, 0.9, 0.8, 0.4, 0.5, 0.2], [0.05, 0.95, 0.0, 0.4, 0.5, 0.2]], [2, 2], 0.5),
    (Top5Accuracy(), [[0.1, 0.9, 0.8, 0.4, 0.5, 0.2], [0.05, 0.95, 0.0, 0.4, 0.5, 0.2]], [[2], [1]], 1.0),
    (MAE(), [[1.0, -2.0], [1.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]], 1.25),
    (MSE(), [[1.0, -2.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], 2.25),
    (BinaryCrossEntropy(), [[0.6, 0.4], [0.4, 0.6]], [[0.0, 1.0], [0.0, 0.0]], 0.81492424),
    (BinaryCrossEntropy(), [0.6, 0.4, 0.4, 0.6], [0.0, 1.0, 0.0, 0.0], 0.81492424),
    (CategoricalCrossEntropy(), [[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]], [[0, 1, 0], [0, 0, 1]], 1.1769392),
    (SparseCategoricalCrossEntropy(), [[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]], [1, 2], 1.1769392),
    (KLDivergence(), [[0.6, 0.4], [0.4, 0.6]], [[0.0, 1.0], [0.0, 0.0]], 0.45814),
    (Poisson(), [[1.0, 1.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]], 0.49999997),
]


@pytest.mark.parametrize("metric, preds, target, value", ORCA_CASES, ids=[f"{c[0].get_name()}-{i}" for i, c in enumerate(ORCA_CASES)])
def test_the_torch_metrics_give_orcas_values(metric, preds, target, value) -> None:
    assert torch_value(metric, preds, target) == pytest.approx(value, abs=1e-5)


# the same metric gives the same number in both frameworks (AUC's algorithms differ: see AUC)
RNG = np.random.default_rng(7)
SCORES = RNG.dirichlet(np.ones(5), size=12).astype(np.float32)
LABELS = RNG.integers(0, 5, size=12)
PROBABILITIES = RNG.uniform(size=(12, 3)).astype(np.float32)
BITS = (RNG.uniform(size=(12, 3)) > 0.5).astype(np.float32)
PARITY_CASES = [
    (Accuracy(), SCORES, LABELS), (Accuracy(), SCORES, LABELS.reshape(-1, 1)), (Accuracy(), PROBABILITIES, BITS),
    (Accuracy(zero_based_label=False), SCORES, LABELS + 1), (SparseCategoricalAccuracy(), SCORES, LABELS),
    (CategoricalAccuracy(), SCORES, np.eye(5)[LABELS]), (BinaryAccuracy(), PROBABILITIES, BITS),
    (Top5Accuracy(), SCORES, LABELS), (MAE(), PROBABILITIES, BITS), (MSE(), PROBABILITIES, BITS),
    (BinaryCrossEntropy(), PROBABILITIES, BITS), (CategoricalCrossEntropy(), SCORES, np.eye(5)[LABELS]),
    (SparseCategoricalCrossEntropy(), SCORES, LABELS), (KLDivergence(), SCORES, RNG.dirichlet(np.ones(5), size=12)),
    (Poisson(), PROBABILITIES, BITS),
]


@pytest.mark.parametrize("metric, preds, target", PARITY_CASES, ids=[f"{c[0].get_name()}-{i}" for i, c in enumerate(PARITY_CASES)])
def test_torch_and_keras_agree(metric, preds, target) -> None:
    assert torch_value(metric, preds, target) == pytest.approx(keras_value(metric, preds, target), abs=1e-5)


def test_accuracy_reads_one_based_labels_only_next_to_class_scores() -> None:
    scores = [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]]
    assert torch_value(Accuracy(zero_based_label=False), scores, [2, 1]) == 1.0
    assert torch_value(Accuracy(zero_based_label=False), [[0.9], [0.2]], [[1.0], [0.0]]) == 1.0   # binary: 0/1 labels
    assert keras_value(Accuracy(zero_based_label=False), scores, [2, 1]) == 1.0


def test_results_are_keyed_by_orcas_names_and_errors_name_the_fix() -> None:
    assert [m.get_name() for m in (AUC(), MAE(), MSE(), Accuracy(), Top5Accuracy(), KLDivergence())] == \
        ["AUC", "MAE", "MSE", "Accuracy", "Top5Accuracy", "KLDivergence"]
    assert AUC(20).threshold_num == 20 and Accuracy(zero_based_label=False).zero_based_label is False
    with pytest.raises(InvalidArgumentError, match=r"threshold_num=1 must be at least 2"):
        AUC(threshold_num=1)
    with pytest.raises(InvalidArgumentError, match=r"zero_based_label='no' must be True \(labels 0..C-1\) or False"):
        Accuracy(zero_based_label="no")
    with pytest.raises(InvalidArgumentError, match=r"backend='bigdl' is not supported; use 'pytorch' .* or 'tf'"):
        Accuracy().get_metric("bigdl")
    with pytest.raises(InvalidArgumentError, match=r"metrics: Poisson compares predictions and labels element by element, "
                                                   r"but the predictions have shape \(2, 2\) and the labels \(2, 3\)"):
        torch_value(Poisson(), [[1.0, 1.0]] * 2, [[1.0, 1.0, 1.0]] * 2)
    with pytest.raises(InvalidArgumentError, match=r"metrics: SparseCategoricalAccuracy takes one class index per row; the "
                                                   r"label has shape \(2, 2\) next to class scores of shape \(2, 'C'\)"):
        torch_value(SparseCategoricalAccuracy(), [[0.1, 0.9, 0.0]] * 2, [[1, 0], [0, 1]])


def test_the_other_metric_errors_name_the_value_and_the_fix() -> None:
    import keras

    class OrcaStyle(Metric):   # Orca's own PytorchMetric objects had no state the workers could add up
        def get_pytorch_metric(self):
            return object()

    with pytest.raises(InvalidArgumentError, match=r"metrics: OrcaStyle.get_pytorch_metric\(\) returned a object; it must "
                                                   r"return a torchmetrics.Metric"):
        OrcaStyle().get_metric("pytorch")
    with pytest.raises(InvalidArgumentError, match=r"metrics: Accuracy takes one tensor of predictions and one of labels, "
                                                   r"got a tuple and a Tensor; a model with several outputs"):
        Accuracy().get_metric("pytorch").update((torch.zeros(2, 1), torch.zeros(2, 1)), torch.zeros(2, 1))
    with pytest.raises(InvalidArgumentError, match=r"metrics: Accuracy takes labels of the predictions' shape or class "
                                                   r"indices, got predictions of shape \(2, 3, 4\) and labels of shape \(2,\)"):
        keras_value(Accuracy(), np.zeros((2, 3, 4), "float32"), np.zeros(2, "float32"))
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1, name="out")], name="per_output")
    model.compile(optimizer="sgd", loss="mse", metrics={"out": ["mae"]})
    with pytest.raises(InvalidArgumentError, match=r"metrics: the model 'per_output' was compiled with metrics per output "
                                                   r"\(\['out'\]\); add the metrics to model.compile\(metrics=...\)"):
        with_keras_metrics(model, [MSE()])


def test_a_torch_metric_survives_pickling_into_a_fresh_interpreter() -> None:
    """Ray ships the torchmetrics object to the workers; they unpickle it before anything else
    of this module ran there."""
    import pickle
    import subprocess
    import sys

    blob = pickle.dumps(Accuracy().get_metric("pytorch"))
    code = ("import pickle, sys, torch; m = pickle.loads(sys.stdin.buffer.read()); "
            "m.update(torch.tensor([[0.9], [0.1]]), torch.tensor([[1.0], [1.0]])); print(float(m.compute()))")
    output = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True).stdout
    assert output.decode().strip() == "0.5"
