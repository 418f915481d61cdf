"""An image pipeline: image files → decoded in parallel → a table → distributed training → SQL.

1. draws a small image data set offline with Pillow: circles, squares and triangles of random
   sizes, positions and colours, as JPEG files in one folder per class;
2. reads them with ``zoo_lite.data.image.read_images``: Spark lists the files, and the executors
   decode and resize them with Pillow into shards of uint8 pixels and class labels (classes are
   the sorted folder names);
3. keeps them as a Parquet table (``write_parquet(format="image", ...)``, the encoded files with
   their labels) and reads the table back (``read_parquet``) as the same shards;
4. trains a small Keras CNN on the shards with ``Estimator.from_keras`` on the Ray workers;
5. registers the trained model as a SQL function and scores the test images in SQL:
   ``SELECT label, model_predict(x) FROM test_images``, then prints the accuracy.

Run: ``python examples/image_pipeline.py`` (local Spark), or on a cluster by changing one
argument, e.g. ``--cluster-mode local-cluster``, or under spark-submit:
``scripts/spark-submit --master local[2] examples/image_pipeline.py --cluster-mode spark-submit``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data.image import read_images, read_parquet, write_parquet
from zoo_lite.learn.tf2 import Estimator   # imports TensorFlow quietly, before keras

SEED = 0
SHAPES = ("circle", "square", "triangle")
SIZE = (32, 32)


def draw_images(folder: Path, per_class: int, pixels: int = 64) -> None:
    """``per_class`` JPEG files of each shape, in ``folder/<shape>/``."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(SEED)
    shutil.rmtree(folder, ignore_errors=True)
    for shape in SHAPES:
        (folder / shape).mkdir(parents=True)
        for index in range(per_class):
            image = Image.new("RGB", (pixels, pixels), tuple(int(c) for c in rng.integers(0, 80, 3)))
            draw = ImageDraw.Draw(image)
            radius = int(rng.integers(pixels // 6, pixels // 3))
            cx, cy = (int(c) for c in rng.integers(radius, pixels - radius, 2))
            colour = tuple(int(c) for c in rng.integers(150, 256, 3))
            box = [cx - radius, cy - radius, cx + radius, cy + radius]
            if shape == "circle":
                draw.ellipse(box, fill=colour)
            elif shape == "square":
                draw.rectangle(box, fill=colour)
            else:
                draw.polygon([(cx, cy - radius), (cx - radius, cy + radius), (cx + radius, cy + radius)], fill=colour)
            image.save(folder / shape / f"{index:04d}.jpg", quality=90)


def cnn(classes: int) -> Any:
    """A small CNN that takes uint8 pixels (scaled inside the model, so SQL can pass raw pixels)."""
    import keras

    keras.utils.set_random_seed(SEED)
    model = keras.Sequential([
        keras.Input(shape=(*SIZE, 3)),
        keras.layers.Rescaling(1 / 255),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),   # where a shape's corners are matters: no global pooling
        keras.layers.Dense(classes, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(0.003), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def split(shards: Any, test_share: float) -> tuple[Any, Any]:
    """Every row goes to training or test by a seeded draw, per shard."""

    def part(test: bool) -> Any:
        def rows(shard: dict) -> dict:
            chosen = np.random.default_rng([SEED, len(shard["y"]), int(shard["y"].sum())]).random(len(shard["y"])) < test_share
            keep = chosen if test else ~chosen
            return {"x": shard["x"][keep], "y": shard["y"][keep]}

        return shards.transform_shard(rows)

    return part(False), part(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="/tmp/zoo_lite_image_pipeline", help="folder for the images and the table")
    parser.add_argument("--cluster-mode", default="local", help="local, local-cluster, standalone or spark-submit")
    parser.add_argument("--per-class", type=int, default=200, help="images of each shape")
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()
    output = Path(args.output).resolve()
    draw_images(output / "images", args.per_class)

    init_orca_context(cluster_mode=args.cluster_mode, cores=2, init_ray_on_spark=True)
    try:
        images = read_images(str(output / "images"), size=SIZE, label="folder")
        print(f"classes: {images.classes}, images read: {len(images)}")
        write_parquet("image", str(output / "table"), str(output / "images"))
        shards = read_parquet("image", str(output / "table"), size=SIZE)
        train, test = split(shards, test_share=0.25)
        est = Estimator.from_keras(model=cnn(len(shards.classes)), seed=SEED)
        history = est.fit(train, epochs=args.epochs, batch_size=32, verbose=0)
        print(f"final training accuracy: {history['accuracy'][-1]:.3f}")

        spark = OrcaContext.get_spark_session()
        test.to_spark_df().createOrReplaceTempView("test_images")
        spark.udf.register("model_predict", est.spark_udf(batch_size=64))
        scored = spark.sql("SELECT y AS label, array_position(p, array_max(p)) - 1 AS predicted "
                           "FROM (SELECT y, model_predict(x) AS p FROM test_images)")
        row = scored.selectExpr("count(*) AS n", "avg(cast(label = predicted AS double)) AS accuracy").first()
        print(f"SQL test accuracy: {row['accuracy']:.3f} on {row['n']} images")
        est.shutdown()
    finally:
        stop_orca_context()


if __name__ == "__main__":
    main()
