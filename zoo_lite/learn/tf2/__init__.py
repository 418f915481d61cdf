"""The Keras 3 Estimator (Orca's ``zoo.orca.learn.tf2``): ``Estimator.from_keras(...)``."""

from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.tf2.estimator import Estimator, KerasEstimator

__all__ = ["Estimator", "KerasEstimator", "WorkerConfig"]
