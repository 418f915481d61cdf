"""Estimators: data-parallel training and inference of PyTorch (``zoo_lite.learn.pytorch``) and
Keras (``zoo_lite.learn.tf2``) models on the Ray-on-Spark workers. ``learn.base`` holds what both
share and imports neither framework; see ``docs/architecture.md``."""

from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.errors import WorkerError, WorkerTimeoutError

__all__ = ["WorkerConfig", "WorkerError", "WorkerTimeoutError"]
