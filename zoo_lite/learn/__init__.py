"""Estimators: data-parallel training and inference of PyTorch (``zoo_lite.learn.pytorch``) and
Keras (``zoo_lite.learn.tf2``) models on the Ray-on-Spark workers. ``learn.base`` holds what both
share and imports neither framework; see ``docs/architecture.md``. :func:`spark_udf` turns a
saved model into a Spark SQL function."""

from typing import TYPE_CHECKING

from zoo_lite.lazy_exports import lazy_exports

if TYPE_CHECKING:   # imported on first use (see zoo_lite.lazy_exports)
    from zoo_lite.errors import WorkerError, WorkerTimeoutError
    from zoo_lite.learn.base.framework import WorkerConfig
    from zoo_lite.learn.base.udf import ModelUDF
    from zoo_lite.learn.inference import spark_udf

__all__ = ["WorkerConfig", "WorkerError", "WorkerTimeoutError", "ModelUDF", "spark_udf"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
