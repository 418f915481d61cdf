"""Images into XShards (Orca's ``zoo.orca.data.image``).

- :func:`read_images` reads a folder tree or a glob of image files (listed by Spark's
  ``binaryFile`` source, or by Python for a local folder) and decodes and resizes them with
  Pillow on the executors, into shards
  ``{"x": uint8 [n, height, width, channels], "y": int64 [n]}``.
- :func:`write_parquet` (``format="image"``) keeps the same images, with their labels, in a
  Parquet table; :func:`read_parquet` (``format="image"``) reads that table into the same shards
  as :func:`read_images` gives for the files.

Rows are in path order: the files are sorted by their path and cut into contiguous slices, one
per partition, so the same files always give the same shards. Only file names pass through the
driver. The images are read and decoded on the executors at the first action on the shards (the
readers are lazy, as the others are):

- local files (a folder, a file, ``file://``): each decoding task reads its own slice of files, so
  nothing but the names travels; a local folder or file is also listed by Python, which is ~100x
  faster than Spark's listing and leaves out the same names;
- ``s3://`` objects are listed through fsspec (s3fs) on the driver and read the same way, each
  decoding task its own slice, with the options :mod:`zoo_lite.data.filesystems` resolves;
- local globs and other filesystems (``hdfs://``, ``s3a://``) are listed by Spark, and files on other
  filesystems are read by Spark's ``binaryFile`` scan, whose bytes are then shuffled into the
  slices (the scan packs files by size, not by name).
"""

# one name a line, in the order of the reference page (mkdocstrings lists them by line)
from zoo_lite.data.image.decoding import SkippedFiles
from zoo_lite.data.image.readers import (
    IMAGE_EXTENSIONS,
    read_images,
    write_parquet,
    read_parquet,
)
from zoo_lite.data.image.tfrecord import (
    write_tfrecord,
    read_tfrecord,
)

__all__ = ["read_images", "write_parquet", "read_parquet", "write_tfrecord", "read_tfrecord", "SkippedFiles", "IMAGE_EXTENSIONS"]
