"""Data and models in S3, as docs/reading_data.md shows it. Runs against the S3-compatible server
that the AWS_* variables of the environment name (tests/test_doc_snippets.py starts one on loopback
and sets them); needs the s3 extra (s3fs)."""

import io
import os

import numpy as np
import pandas as pd
import s3fs
from PIL import Image
from torch import nn

from zoo_lite import init_orca_context

init_orca_context(cluster_mode="local", cores=2)
KEY, SECRET = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]

# a bucket with a few files in it, as an upstream job would leave them
store = s3fs.S3FileSystem(skip_instance_cache=True)   # credentials and endpoint from the environment
store.mkdir("my-bucket")
events = pd.DataFrame({"id": range(30), "kind": ["click", "view", "buy"] * 10})
for index in range(3):
    with store.open(f"my-bucket/events/part-{index}.csv", "w") as file:
        events.iloc[index * 10:(index + 1) * 10].to_csv(file, index=False)
with store.open("my-bucket/features.parquet", "wb") as file:
    pd.DataFrame({"id": range(5), "x": np.arange(5.0), "note": list("abcde")}).to_parquet(file)
for index in range(2):
    with store.open(f"my-bucket/photos/cat/{index}.png", "wb") as file:
        encoded = io.BytesIO()
        Image.new("RGB", (32, 32), (index * 100, 0, 0)).save(encoded, format="png")
        file.write(encoded.getvalue())
model = nn.Linear(4, 2)

# --8<-- [start:s3]
from zoo_lite.data.image import read_images
from zoo_lite.data.pandas import read_csv, read_parquet
from zoo_lite.learn.pytorch import Estimator

options = {"key": KEY, "secret": SECRET}
shards = read_csv("s3://my-bucket/events/", storage_options=options)
# credentials from the environment
table = read_parquet("s3://my-bucket/features.parquet", columns=["id", "x"])
images = read_images("s3://my-bucket/photos/", size=(16, 16))

est = Estimator.from_torch(model=model, loss=nn.MSELoss())
# and load, model_dir="s3://...", spark_udf("s3://...")
est.save("s3://my-bucket/models/run-7.pt")
# --8<-- [end:s3]

assert len(shards) == 30 and list(table.concat_to_pdf().columns) == ["id", "x"]
assert len(images) == 2 and images.classes == ["cat"]
assert store.exists("my-bucket/models/run-7.pt")
