"""Models inside Spark, as docs/guides/spark-udf.md shows it: a model as a Spark SQL function in
DataFrame jobs, SQL and Structured Streaming; images read, kept in Parquet and scored."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image
from torch import nn

from zoo_lite import OrcaContext, init_orca_context

workdir = Path(tempfile.mkdtemp(prefix="zoo_lite-udf-"))
init_orca_context(cluster_mode="local", cores=2)
spark = OrcaContext.get_spark_session()
rng = np.random.default_rng(0)
df = spark.createDataFrame(pd.DataFrame({"id": np.arange(50), "features": list(rng.normal(size=(50, 4)))}))

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))   # a model trained elsewhere

# --8<-- [start:udf]
from zoo_lite.learn.pytorch import Estimator

est = Estimator.from_torch(model=net, loss=nn.CrossEntropyLoss())  # then est.fit(...)
# input_shapes: one row's shape per model input
predict = est.spark_udf(batch_size=64, input_shapes=[(4,)])

scored = df.select("id", predict("features").alias("scores"))  # scores: array<float>
# --8<-- [end:udf]
expected = net(torch.tensor(np.stack(df.orderBy("id").toPandas()["features"]), dtype=torch.float32)).detach().numpy()
got = np.stack(scored.orderBy("id").toPandas()["scores"])
np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

# --8<-- [start:sql]
df.createOrReplaceTempView("rows")
spark.udf.register("model_predict", predict)
best = spark.sql("""
    SELECT id, array_position(p, array_max(p)) - 1 AS class
    FROM (SELECT id, model_predict(features) AS p FROM rows)
""")
# --8<-- [end:sql]
assert sorted(best.toPandas().set_index("id").sort_index()["class"]) == sorted(expected.argmax(axis=1))

# --8<-- [start:from_file]
from zoo_lite.learn import spark_udf

path = est.save(f"{workdir}/model.pt")  # keeps the model's class, by value

# in another job, which needs no training code
predict = spark_udf(path, input_shapes=[(4,)])
# --8<-- [end:from_file]

for index in range(2):
    df.where(df.id % 2 == index).write.parquet(f"{workdir}/incoming/part-{index}")

# --8<-- [start:stream]
incoming = (spark.readStream.schema(df.schema)
            .option("recursiveFileLookup", "true")
            .parquet(f"{workdir}/incoming"))
query = (incoming.select("id", predict("features").alias("scores"))
         .writeStream.format("parquet")
         .option("checkpointLocation", f"{workdir}/checkpoint")
         .trigger(availableNow=True)  # ends once every file there is scored
         .start(f"{workdir}/scored"))
query.awaitTermination(300)
# --8<-- [end:stream]
streamed = spark.read.parquet(f"{workdir}/scored").orderBy("id").toPandas()
np.testing.assert_allclose(np.stack(streamed["scores"]), expected, rtol=1e-5, atol=1e-6)

# a folder per class of small images
for shape in ("dark", "light"):
    (workdir / "images" / shape).mkdir(parents=True)
    for index in range(6):
        level = int(rng.integers(0, 100)) + (150 if shape == "light" else 0)
        Image.new("RGB", (20, 16), (level, level, level)).save(workdir / "images" / shape / f"{index}.png")

# --8<-- [start:images]
from zoo_lite.data.image import read_images, read_parquet, write_parquet

# decoded and resized in the executors; the classes are the folders' names
images = read_images(f"{workdir}/images", size=(8, 8))
print(images.classes, len(images))  # ['dark', 'light'] 12
first = images.first()  # {"x": uint8 [n, 8, 8, 3], "y": int64 [n]}

# the encoded files and their labels in a Parquet table, and back to the same shards
write_parquet("image", f"{workdir}/table", f"{workdir}/images")
shards = read_parquet("image", f"{workdir}/table", size=(8, 8))
# --8<-- [end:images]
assert images.classes == ["dark", "light"] and len(images) == 12 and len(shards) == 12
assert first["x"].dtype == np.uint8 and first["x"].shape[1:] == (8, 8, 3)

# --8<-- [start:score_images]
class MeanPixel(nn.Module):
    """Any model of one image's pixels; integer pixels arrive as int64: it casts them."""

    def forward(self, x):
        return x.float().mean(dim=(1, 2, 3))


estimator = Estimator.from_torch(model=MeanPixel())
mean_pixel = estimator.spark_udf(input_shapes=[(8, 8, 3)])

pictures = shards.to_spark_df()  # x: array<array<array<smallint>>>, y: bigint
print(pictures.select("y", mean_pixel("x").alias("level")).toPandas().head())
# --8<-- [end:score_images]
levels = pictures.select("y", mean_pixel("x").alias("level")).toPandas()
assert (levels.groupby("y")["level"].max()[0] < levels.groupby("y")["level"].min()[1])
