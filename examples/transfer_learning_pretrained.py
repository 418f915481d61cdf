"""Transfer learning from pretrained weights: torchvision's ResNet-18 and Keras' MobileNetV3Small as frozen featurisers.

1. writes scikit-learn's digits (1797 8×8 images, 10 classes) as PNG files, one folder per class,
   under ``train/`` and ``test/`` (every fourth image is a test image): a stand-in for a folder of
   photos. ``read_images`` decodes and resizes them to 32×32 RGB on the executors, into XShards of
   ``{"x": uint8 pixels, "y": labels}``;
2. stands in for downloaded weights, as nothing may be downloaded here: it saves a *randomly
   initialised* network's weights to a local file. A real job downloads them once (e.g.
   torchvision's ``ResNet18_Weights.DEFAULT`` or Keras' ``weights="imagenet"``) and loads the file
   the same way. Random convolutions still give features a linear head can use, so the numbers
   below stay meaningful (pretrained weights give better ones);
3. PyTorch: the weights file is shipped to the executors with ``SparkContext.addFile``; in each
   Spark task, ``transform_shard`` builds ``torchvision.models.resnet18``, loads the file, cuts the
   classifier off, freezes the network and turns its shard's images (torchvision ``transforms.v2``)
   into 512 features. Keras: ``MobileNetV3Small(weights=None, include_top=False)`` loads its
   weights file on the driver (``load_weights``) and ``Estimator.from_keras(...).predict`` runs it
   in the Spark tasks that hold the images, 576 features per image;
4. caches the features (``cache()``): training and evaluating a head read them from memory instead
   of running the featuriser again; a Spark accumulator counts the rows each featuriser saw, and
   the program prints it: each row once;
5. trains a small head on each set of features on the Ray workers (``Estimator.from_torch`` and
   ``Estimator.from_keras``) and prints its test accuracy.

``import torchvision`` works beside a CPU-only torch once zoo_lite is imported (the ``vision`` extra:
``pip install "zoo_lite[vision]"``), in the driver and in the Spark tasks.

Run: ``python examples/transfer_learning_pretrained.py`` (local Spark), or on a cluster by changing
one argument, e.g. ``--cluster-mode local-cluster`` (``--output`` must then be a folder every host
sees), or under spark-submit: ``scripts/spark-submit --master local[2]
examples/transfer_learning_pretrained.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import SparkXShards
from zoo_lite.data.image import read_images
from zoo_lite.learn.pytorch import Estimator as TorchEstimator
from zoo_lite.learn.tf2 import Estimator as KerasEstimator   # imports TensorFlow quietly, before keras

SEED = 0
SIZE = (32, 32)   # the smallest input MobileNetV3 takes
#: what torchvision's ImageNet weights expect of their input
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def write_digit_images(folder: Path) -> dict[str, int]:
    """scikit-learn's digits as PNG files, ``folder/{train,test}/<digit>/<index>.png``; the
    number of files written into each split."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    shutil.rmtree(folder, ignore_errors=True)
    pixels = np.round(digits.images * (255 / 16)).astype(np.uint8)
    written = {"train": 0, "test": 0}
    for index, (image, label) in enumerate(zip(pixels, digits.target)):
        split = "test" if index % 4 == 0 else "train"
        (folder / split / str(label)).mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(folder / split / str(label) / f"{index:04d}.png")
        written[split] += 1
    return written


def unit_rms(features: np.ndarray) -> np.ndarray:
    """Each row scaled to a root mean square of 1, so that the head's learning rate does not
    depend on the featuriser's scale (a randomly initialised MobileNet's features are ~1e-11)."""
    features = features.astype(np.float32)
    return features / np.sqrt(np.mean(features ** 2, axis=1, keepdims=True) + np.finfo(np.float32).tiny)


# -- PyTorch: torchvision's ResNet-18 ------------------------------------------------------------

def save_resnet18_weights(folder: Path) -> str:
    """A stand-in for downloaded weights: a randomly initialised resnet18's state_dict, saved."""
    import torch
    import torchvision   # works beside a CPU-only torch: zoo_lite is imported

    torch.manual_seed(SEED)
    path = str(folder / "resnet18-random.pth")
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), path)
    return path


def resnet18_features(shard: dict, weights_file: str, counter: Any) -> dict:
    """Runs in a Spark task: the shard's images through a frozen resnet18 loaded from the file
    ``addFile`` shipped, as ``{"x": 512 features, "y": labels}``."""
    import torch
    import torchvision
    from pyspark import SparkFiles
    from torchvision.transforms import v2

    counter.add(len(shard["y"]))
    model = torchvision.models.resnet18(weights=None)
    model.load_state_dict(torch.load(SparkFiles.get(weights_file), weights_only=True))
    model.fc = torch.nn.Identity()   # the classifier cut off: the pooled 512 features come out
    model.eval().requires_grad_(False)
    preprocess = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    with torch.inference_mode():
        features = model(preprocess(torch.from_numpy(shard["x"]).permute(0, 3, 1, 2)))   # NHWC -> NCHW
    return {"x": unit_rms(features.numpy()), "y": shard["y"]}


def torch_features(images: SparkXShards, weights_file: str, counter: Any) -> SparkXShards:
    """The images' ResNet-18 features, computed in the Spark tasks once and kept; ``weights_file``
    is the name of a file given to ``SparkContext.addFile``."""
    return images.transform_shard(resnet18_features, weights_file, counter).cache()


def torch_head_accuracy(train: SparkXShards, test: SparkXShards, width: int, epochs: int) -> float:
    """A linear head trained on the features with ``Estimator.from_torch``; its test accuracy."""
    import torch
    import torchmetrics

    torch.manual_seed(SEED)
    head = torch.nn.Linear(width, 10)
    est = TorchEstimator.from_torch(model=head, optimizer=torch.optim.Adam(head.parameters(), lr=0.01),
                                    loss=torch.nn.CrossEntropyLoss(), seed=SEED, log_level=logging.WARNING,
                                    metrics={"accuracy": torchmetrics.Accuracy(task="multiclass", num_classes=10)})
    try:
        est.fit(train, epochs=epochs, batch_size=64)
        return est.evaluate(test, batch_size=128)["accuracy"]
    finally:
        est.shutdown()


# -- Keras: MobileNetV3Small ---------------------------------------------------------------------

def mobilenet(weights_path: str = "") -> Any:
    """MobileNetV3Small without its classifier (576 pooled features), with local weights if given."""
    import keras

    model = keras.applications.MobileNetV3Small(input_shape=(*SIZE, 3), include_top=False, weights=None, pooling="avg")
    if weights_path:
        model.load_weights(weights_path)
    return model


def save_mobilenet_weights(folder: Path) -> str:
    """A stand-in for downloaded weights: a randomly initialised MobileNetV3Small's, saved."""
    import keras

    keras.utils.set_random_seed(SEED)
    path = str(folder / "mobilenet_v3_small-random.weights.h5")
    mobilenet().save_weights(path)
    return path


def counted(shards: SparkXShards, counter: Any) -> SparkXShards:
    """``shards``, adding each shard's rows to ``counter`` whenever the shard is computed."""

    def count(shard: dict) -> dict:
        counter.add(len(shard["y"]))
        return shard

    return shards.transform_shard(count)


def keras_features(images: SparkXShards, featuriser: Any, counter: Any) -> SparkXShards:
    """The images' MobileNet features, computed in the Spark tasks once and kept."""

    def features(shard: dict) -> dict:
        return {"x": unit_rms(shard["prediction"]), "y": shard["y"]}

    floats = images.transform_shard(lambda shard: {"x": shard["x"].astype(np.float32), "y": shard["y"]})
    predicted = KerasEstimator.from_keras(model=featuriser).predict(counted(floats, counter), batch_size=256, verbose=0)
    return predicted.transform_shard(features).cache()


def keras_head_accuracy(train: SparkXShards, test: SparkXShards, width: int, epochs: int) -> float:
    """A softmax head trained on the features with ``Estimator.from_keras``; its test accuracy."""
    import keras

    keras.utils.set_random_seed(SEED)
    head = keras.Sequential([keras.Input(shape=(width,)), keras.layers.Dense(10, activation="softmax")])
    head.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    est = KerasEstimator.from_keras(model=head, seed=SEED)
    try:
        est.fit(train, epochs=epochs, batch_size=64, verbose=0)
        return est.evaluate(test, batch_size=128, verbose=0)["accuracy"]
    finally:
        est.shutdown()


def transfer_with_resnet18(train: SparkXShards, test: SparkXShards, output: Path, epochs: int) -> tuple[int, int, float]:
    """Steps 2-5 with PyTorch: (rows the featuriser saw, features per image, head test accuracy)."""
    sc = OrcaContext.get_spark_context()
    weights = save_resnet18_weights(output)
    sc.addFile(weights)   # to every executor, wherever it runs
    rows = sc.accumulator(0)
    train_features, test_features = (torch_features(images, os.path.basename(weights), rows) for images in (train, test))
    width = train_features.first()["x"].shape[1]
    accuracy = torch_head_accuracy(train_features, test_features, width, epochs)
    return rows.value, width, accuracy


def transfer_with_mobilenet(train: SparkXShards, test: SparkXShards, output: Path, epochs: int) -> tuple[int, int, float]:
    """Steps 2-5 with Keras: (rows the featuriser saw, features per image, head test accuracy)."""
    rows = OrcaContext.get_spark_context().accumulator(0)
    featuriser = mobilenet(save_mobilenet_weights(output))
    train_features, test_features = (keras_features(images, featuriser, rows) for images in (train, test))
    width = train_features.first()["x"].shape[1]
    accuracy = keras_head_accuracy(train_features, test_features, width, epochs)
    return rows.value, width, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="/tmp/zoo_lite_transfer_learning_pretrained",
                        help="folder for the images and the weights files")
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    output = Path(args.output).resolve()
    written = write_digit_images(output / "images")
    rows = sum(written.values())

    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        train, test = (read_images(str(output / "images" / split), size=SIZE) for split in ("train", "test"))
        print(f"images: {written['train']} train, {written['test']} test, classes {train.classes}")

        for name, transfer in (("resnet18", transfer_with_resnet18), ("mobilenet", transfer_with_mobilenet)):
            featurised, width, accuracy = transfer(train, test, output, args.epochs)
            print(f"{name} featuriser rows: {featurised} of {rows}, features per image: {width}")
            print(f"{name} head test accuracy: {accuracy:.3f}")
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
